//! The mapping of a registry file, and the geometry of its slots.

use std::fs::File;
use std::sync::atomic::{AtomicU32, AtomicU64};

use crate::{Error, Result};

use super::layout::*;

/// The owner's read-write mapping of its registry file (readers use `pread`, see
/// the [module docs](super)).
pub(crate) struct Mapping {
    base: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain shared memory accessed only through atomics; the
// pointer may move between threads.
unsafe impl Send for Mapping {}
// SAFETY: as above: every access to the mapped bytes is an atomic operation.
unsafe impl Sync for Mapping {}

impl Mapping {
    pub(crate) fn map(file: &File, len: usize) -> Result<Mapping> {
        use rustix::mm::{MapFlags, ProtFlags};
        let prot = ProtFlags::READ | ProtFlags::WRITE;
        // SAFETY: a fresh mapping chosen by the kernel (null hint) of a file we hold
        // open; it aliases no Rust object.
        let p =
            unsafe { rustix::mm::mmap(std::ptr::null_mut(), len, prot, MapFlags::SHARED, file, 0) }
                .map_err(|e| Error::from_errno("mmap", e.raw_os_error()))?;
        Ok(Mapping {
            base: p.cast(),
            len,
        })
    }

    /// The start of the mapping.
    pub(crate) fn base(&self) -> usize {
        self.base as usize
    }

    /// Maps `file` again over the whole mapping, in place (pages replaced by
    /// anonymous memory become the file's again).
    pub(crate) fn remap(&self, file: &File) -> Result<()> {
        use rustix::mm::{MapFlags, ProtFlags};
        let prot = ProtFlags::READ | ProtFlags::WRITE;
        // SAFETY: replaces our own mapping `base..base + len` in place
        // (MAP_FIXED over exactly the range `map` made) with the same file's
        // shared pages: every reference into it stays valid, and all access to
        // it is atomic, as before.
        unsafe {
            rustix::mm::mmap(
                self.base.cast(),
                self.len,
                prot,
                MapFlags::SHARED | MapFlags::FIXED,
                file,
                0,
            )
        }
        .map(|_| ())
        .map_err(|e| Error::from_errno("mmap", e.raw_os_error()))
    }

    /// The 32-bit atomic at `off`.
    #[inline]
    pub(crate) fn u32_at(&self, off: usize) -> &AtomicU32 {
        debug_assert!(off % 4 == 0 && off + 4 <= self.len);
        // SAFETY: callers pass offsets inside the mapping (from the geometry the
        // owner created it with) and 4-aligned (the layout is 8-aligned and the base
        // page-aligned); the memory lives as long as `self`; all access to it from
        // this process is atomic (no plain reads or writes), and other processes
        // only read it with `pread`, so there is no data race.
        unsafe { &*self.base.add(off).cast::<AtomicU32>() }
    }

    /// The 64-bit atomic at `off`.
    #[inline]
    pub(crate) fn u64_at(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off % 8 == 0 && off + 8 <= self.len);
        // SAFETY: as in `u32_at`, with 8-byte alignment.
        unsafe { &*self.base.add(off).cast::<AtomicU64>() }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` came from `mmap` and are unmapped once; references
        // into the mapping borrow `self`, so none outlives it.
        let _ = unsafe { rustix::mm::munmap(self.base.cast(), self.len) };
    }
}

/// Geometry of a registry: slot size and count for a payload size.
pub(crate) fn geometry(payload_size: usize, slot_count: u32) -> Result<(usize, usize, usize)> {
    // Readers refuse anything larger, so a writer must not create it.
    if payload_size > MAX_SLOT_SIZE - SLOT_HEADER_SIZE
        || slot_count == 0
        || slot_count > MAX_SLOT_COUNT
    {
        return Err(Error::invalid(
            "registry",
            format!(
                "{slot_count} slots of {payload_size} bytes: want 1 to {MAX_SLOT_COUNT} slots of at most {} bytes",
                MAX_SLOT_SIZE - SLOT_HEADER_SIZE
            ),
        ));
    }
    let payload = payload_size.div_ceil(8) * 8;
    let slot = (SLOT_HEADER_SIZE + payload).div_ceil(64) * 64;
    let total = slot_count as usize * slot + HEADER_SIZE;
    Ok((payload, slot, total))
}

pub(crate) fn kind_bytes(kind: &str) -> Result<[u8; 16]> {
    if kind.is_empty()
        || kind.len() > 15
        || !kind
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        return Err(Error::invalid(
            "registry",
            format!("kind {kind:?} must be 1 to 15 lowercase ASCII letters or digits"),
        ));
    }
    let mut k = [0u8; 16];
    k[..kind.len()].copy_from_slice(kind.as_bytes());
    Ok(k)
}
