//! A registry file deleted under its owner (`rm`, systemd-logind's
//! `RemoveIPC=yes`): a new file is published in its place, mapped over the
//! old mapping (see [the module docs](super::super#a-file-deleted-under-its-owner)).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::{fence, Ordering};

use crate::{Error, Result};

use super::super::exit::*;
use super::super::file::*;
use super::super::layout::*;
use super::Registry;

/// At most one `fstat` per registry in this many milliseconds checks, for
/// [`SlotWriter::wiped`](super::SlotWriter::wiped), whether the file was
/// deleted.
pub const DELETED_CHECK_MS: u64 = 1000;

/// Tries to copy a slot consistently (as a reader would) this many times
/// before taking what the last try copied.
const COPY_TRIES: u32 = 64;

impl Registry {
    /// Whether the file is found deleted, checked (one `fstat`) by the first
    /// caller once [`DELETED_CHECK_MS`] have passed since the last check.
    #[inline]
    pub(super) fn deleted_lately(&self) -> bool {
        let now = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicCoarse);
        let now = now.tv_sec as u64 * 1000 + now.tv_nsec as u64 / 1_000_000;
        let last = self.checked_at.load(Ordering::Relaxed);
        if now.wrapping_sub(last) < DELETED_CHECK_MS
            || self
                .checked_at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return false;
        }
        rustix::fs::fstat(&self.data).is_ok_and(|st| st.st_nlink == 0) && self.is_owner()
    }

    /// Publishes a new file in place of the deleted one (found with no link
    /// left; `id` is its device and inode, under the lock that serialises
    /// this): created, locked and published as [`Registry::create`] does (a
    /// temporary name, renamed), with a copy of the mapping's header and
    /// claimed slots; then mapped over the old mapping at the same address
    /// (every reference into it stays valid), and its descriptors take the
    /// numbers of the old data and lock descriptors (the fork hook and the
    /// `SIGBUS` handler know them by number). The epoch is bumped: every slot
    /// held reads as [`wiped`](super::SlotWriter::wiped), so that writes made
    /// into the old file while it was copied are made again.
    ///
    /// On an error the old, deleted, file stays mapped (the process stays
    /// unlisted) and a later repair tries again.
    pub(super) fn replace_deleted(&self, id: &mut (u64, u64)) -> Result<()> {
        let total = self.slot_off(self.slot_count);
        let name = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let kind_len = self.kind.iter().position(|&b| b == 0).unwrap_or(16);
        let kind = std::str::from_utf8(&self.kind[..kind_len]).unwrap_or_default();
        let _files = FILES.lock();
        let (file, tmp) = create_tmp(&name)?;
        let fail = |e: Error| {
            let _ = std::fs::remove_file(&tmp);
            e.with_message(format!(
                "{} was deleted (rm, or systemd-logind's RemoveIPC) and cannot be published again",
                self.path.display()
            ))
        };
        // A child forked meanwhile lets go of the lock (see `Registry::create`).
        let (lock_file, tracked) = super::lock_and_size(&file, total).map_err(fail)?;
        let reserved = self.reserved.load(Ordering::Acquire);
        reserve(&file, 0, reserved, total).map_err(fail)?;
        let claimed = self.claimed.load(Ordering::Acquire).min(self.slot_count);
        let bytes = self.copy(claimed);
        write_all_at(&file, &bytes).map_err(fail)?;
        let new_id = rustix::fs::fstat(&file)
            .map(|st| (st.st_dev, st.st_ino))
            .map_err(|e| fail(Error::from_errno("fstat", e.raw_os_error())))?;
        // The data descriptor's number names the new file from here on (the
        // `SIGBUS` handler's, told the new identity next: until then a fault
        // maps private memory, which the mapping below replaces).
        redirect(&file, &self.data).map_err(fail)?;
        if let Some(i) = self.fault {
            super::super::fault::set_id(i, new_id);
        }
        *id = new_id;
        if let Some(i) = self.fault {
            super::super::fault::MAPS[i]
                .detached
                .store(false, Ordering::Release);
        }
        self.map.remap(&self.data).map_err(fail)?;
        // A claim racing the copy may have raised the high-water mark.
        self.rewrite_header(self.claimed.load(Ordering::Acquire).min(self.slot_count));
        // Locked (through `lock_file`) before readers can see it: a reader
        // that could lock it would take its owner for gone and remove it.
        publish(&tmp, &self.path, kind).map_err(fail)?;
        // The lock descriptor's number (tracked for the fork hook) names the
        // new file's locked description; the old one, and its lock, go.
        redirect(&lock_file, &self.lock_file).map_err(fail)?;
        drop(tracked);
        let now = self.epoch().fetch_add(1, Ordering::AcqRel).wrapping_add(1);
        self.repaired_at.store(now, Ordering::Release);
        Ok(())
    }

    /// The header and slots `0..claimed` of the mapping, each slot copied as
    /// a reader copies it (retried while its counter is odd or changes, up to
    /// [`COPY_TRIES`] times).
    fn copy(&self, claimed: u32) -> Vec<u8> {
        let end = self.slot_off(claimed);
        let mut out = vec![0u8; end];
        let words = |from: usize, to: usize, out: &mut [u8]| {
            for off in (from..to).step_by(8) {
                let w = self.map.u64_at(off).load(Ordering::Relaxed);
                out[off..off + 8].copy_from_slice(&w.to_ne_bytes());
            }
        };
        words(0, HEADER_SIZE, &mut out);
        for i in 0..claimed {
            let off = self.slot_off(i);
            let seq = self.map.u32_at(off + S_SEQ);
            for _ in 0..COPY_TRIES {
                let s = seq.load(Ordering::Acquire);
                words(off, off + self.slot_size, &mut out);
                fence(Ordering::Acquire);
                if s & 1 == 0 && seq.load(Ordering::Relaxed) == s {
                    break;
                }
                std::hint::spin_loop();
            }
        }
        out
    }
}

/// Writes all of `bytes` at the start of `file`.
fn write_all_at(file: &File, bytes: &[u8]) -> Result<()> {
    let mut at = 0;
    while at < bytes.len() {
        match rustix::io::pwrite(file, &bytes[at..], at as u64) {
            Ok(0) => return Err(Error::from_errno("pwrite", libc::ENOSPC)),
            Ok(n) => at += n,
            Err(e) if e == rustix::io::Errno::INTR => {}
            Err(e) => return Err(Error::from_errno("pwrite", e.raw_os_error())),
        }
    }
    Ok(())
}

/// Makes the descriptor number of `target` name the open file description
/// of `src` (`dup3`, close-on-exec): its old description is closed.
fn redirect(src: &File, target: &File) -> Result<()> {
    // SAFETY: `target` is a descriptor this registry owns and keeps open for
    // its life; `dup3` atomically closes its old description and makes the
    // number name `src`'s, so the `File` goes on owning an open descriptor
    // (of the new file). `src` stays open and owned by its `File`.
    let r = unsafe { libc::dup3(src.as_raw_fd(), target.as_raw_fd(), libc::O_CLOEXEC) };
    if r < 0 {
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        return Err(Error::from_errno("dup3", errno));
    }
    Ok(())
}
