//! The writer side: [`Registry`] (create, claim) and [`SlotWriter`] (the seqlock
//! write of one slot).

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicU32, AtomicUsize, Ordering};

use crate::{Error, ErrorKind, Result};

use super::exit::*;
use super::file::*;
use super::layout::*;
use super::map::*;
use super::payload::Payload;
use super::proc::*;
use super::scan::cleanup;

mod replace;
pub use replace::DELETED_CHECK_MS;

/// This process's registry of one kind: the writer side.
///
/// Create it once per process and kind (usually kept in a `static`); threads then
/// [`claim`](Registry::claim) slots. Dropping it unmaps and removes the file.
pub struct Registry {
    map: Mapping,
    /// Held open (close-on-exec) with an exclusive `flock` for the process's life:
    /// readers that can take a shared lock know the owner is gone (killed, or
    /// replaced by `exec`, which keeps the pid and start time). A separate open
    /// file description from the one mapped (see [`Registry::create`]).
    lock_file: File,
    /// The mapped file's own description (writable), kept to reserve its pages
    /// as slots are claimed (see [`Registry::reserve_ahead`]).
    data: File,
    /// Bytes from the start of the file whose pages are reserved (`fallocate`).
    reserved: AtomicUsize,
    /// The high-water mark as this owner knows it (slots `0..claimed` have
    /// been claimed), kept out of the file: a truncation wipes the file's.
    claimed: AtomicU32,
    /// The file's device and inode (see [`Registry::repair`]): another file
    /// once the deleted file was replaced (see [`Registry::replace_deleted`]),
    /// which this lock serialises.
    id: std::sync::Mutex<(u64, u64)>,
    /// When a writer last checked whether the file was deleted (coarse
    /// monotonic milliseconds; see [`SlotWriter::wiped`]).
    checked_at: std::sync::atomic::AtomicU64,
    /// The mapping's entry in the `SIGBUS` handler's table (`None`: table
    /// full, the mapping is not protected).
    fault: Option<usize>,
    /// The epoch when the table is full (see [`Registry::epoch`]).
    own_epoch: AtomicU32,
    /// The epoch the last repair left (a different one: a fault since).
    repaired_at: AtomicU32,
    kind: [u8; 16],
    path: PathBuf,
    pid: i32,
    starttime: u64,
    slot_size: usize,
    slot_count: u32,
    payload_size: usize,
}

/// Locks a new registry file (`file`, still under its temporary name) and
/// gives it its size, `total` bytes, mode 0600. Returns the lock's open file
/// description and its fork tracking.
///
/// The lock lives on a second open file description of the same inode, one
/// that is never mapped: a `flock` lasts until the last reference to its
/// description goes, and a mapping is such a reference. If the mapped
/// description held the lock, a forked child (which inherits the mapping)
/// would keep it alive after this process exec'd. Reopening through
/// /proc/self/fd names exactly this inode, whatever happens to the path.
fn lock_and_size(file: &File, total: usize) -> Result<(File, TrackedLockFd)> {
    let lock_file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .map_err(|e| io_error("open", &e).with_message("reopening the registry to lock it"))?;
    // Tracked at once, before it is locked: a child forked from here on (by
    // another thread) lets go of it in the fork hook. Tracked only at the end,
    // a child forked meanwhile kept the lock for its whole life.
    let tracked = TrackedLockFd::new(lock_file.as_raw_fd());
    rustix::fs::flock(
        &lock_file,
        rustix::fs::FlockOperation::NonBlockingLockExclusive,
    )
    .map_err(|e| Error::from_errno("flock", e.raw_os_error()))?;
    // umask can only clear bits, but make the mode exact anyway.
    rustix::fs::fchmod(file, rustix::fs::Mode::from_raw_mode(0o600))
        .map_err(|e| Error::from_errno("fchmod", e.raw_os_error()))?;
    rustix::fs::ftruncate(file, total as u64).map_err(|e| {
        Error::from_errno("ftruncate", e.raw_os_error())
            .with_hint("/dev/shm is full or limited; free space there")
    })?;
    Ok((lock_file, tracked))
}

impl Registry {
    /// Creates `/dev/shm/posixrt-<kind>-<pid>-<starttime>` (mode 0600) with
    /// `slot_count` slots holding `payload_size` bytes each (rounded up to 8), after
    /// removing files of dead processes of the same kind.
    ///
    /// The file is removed again when the process exits normally, or when this
    /// `Registry` is dropped.
    ///
    /// Errors: [`Busy`](crate::ErrorKind::Busy) if this process already has a live
    /// registry of this kind (the file name would be the same), or another live
    /// writer holds a file of that name (a process with the same pid and start
    /// time in another pid namespace sharing `/dev/shm`; also, for a moment, a
    /// child forked by this pid's previous program image just before its
    /// `exec`, until the child first runs); [`InvalidInput`](crate::ErrorKind::InvalidInput)
    /// for a bad kind or geometry; [`OutOfResources`](crate::ErrorKind::OutOfResources)
    /// if `/dev/shm` has no room for the whole file (every page is reserved
    /// here); [`PermissionDenied`](crate::ErrorKind::PermissionDenied) if a
    /// file of another user is at the name (planted: the name is predictable)
    /// and this process may not replace it (in the sticky `/dev/shm` only
    /// root or its owner may), naming its owner; other errors creating the
    /// file in `/dev/shm`.
    ///
    /// Whatever is at the name and not a live writer's registry is replaced
    /// (an atomic `rename` over it), never opened for writing nor followed:
    /// a symlink, a FIFO, a file left by this pid's program image before an
    /// `exec`, or a file of another user (neither this process's user nor
    /// root), which no reader would take for this process's registry, even
    /// while its owner holds its lock. A file of another user at the
    /// temporary name the registry is filled in under (`.<name>.tmp`) is
    /// avoided by taking another, random, one.
    pub fn create(kind: &str, payload_size: usize, slot_count: u32) -> Result<Registry> {
        let kind_b = kind_bytes(kind)?;
        let (payload, slot, total) = geometry(payload_size, slot_count)?;
        // `after_fork_in_child` makes only async-signal-safe calls.
        crate::sys::fork::on_child(after_fork_in_child);
        let pid = rustix::process::getpid().as_raw_nonzero().get();
        let starttime = read_stat(&format!("/proc/{pid}/stat"))
            .map_err(|e| proc_hint(e.with_message("reading this process's start time")))?
            .starttime;
        let _ = cleanup(kind);

        let name = format!("posixrt-{kind}-{pid}-{starttime}");
        let path = Path::new(DIR).join(&name);
        // Until the file is published and known as ours (see `FILES`).
        let _files = FILES.lock();
        let (file, tmp) = create_tmp(&name)?;
        let fail = |e: Error| {
            let _ = std::fs::remove_file(&tmp);
            e
        };
        let (lock_file, tracked) = lock_and_size(&file, total).map_err(fail)?;
        // `ftruncate` of a tmpfs file reserves no page: on a /dev/shm too small
        // for the registry (a container's 64 MiB default, nearly full) the
        // first store to a page it could not back would raise SIGBUS in
        // whichever thread touched it. The pages are reserved (`fallocate`)
        // ahead of use instead: the header and the first slots here, later
        // slots as claims near them (see `reserve_ahead`), so that a lack of
        // space is this call's error, or a claim's (ENOSPC: OutOfResources),
        // while a registry of a few live slots keeps a few pages, not the
        // whole file (1 MiB for `mark`'s).
        let reserved = reserve(&file, 0, reserved_for(slot, slot_count, 0), total)
            .map_err(|e| fail(e.with_message(format!("reserving room in {}", tmp.display()))))?;
        let map = Mapping::map(&file, total).map_err(fail)?;
        write_header(&map, &kind_b, pid, starttime, slot, slot_count, payload, 0);
        publish(&tmp, &path, kind).map_err(fail)?;
        register_exit_unlink(&path, pid);
        std::mem::forget(tracked); // the Registry untracks it when dropped
                                   // (The mapping keeps the inode; the lock is on `lock_file`. `file`
                                   // stays open to reserve the pages of later slots.)
        let id = rustix::fs::fstat(&file)
            .map(|st| (st.st_dev, st.st_ino))
            .map_err(|e| fail(Error::from_errno("fstat", e.raw_os_error())))?;
        let fault = super::fault::enter(map.base(), total, file.as_raw_fd(), id);
        let epoch = fault.map_or(0, |i| super::fault::MAPS[i].epoch.load(Ordering::Acquire));
        Ok(Registry {
            map,
            lock_file,
            data: file,
            reserved: AtomicUsize::new(reserved),
            claimed: AtomicU32::new(0),
            id: std::sync::Mutex::new(id),
            checked_at: std::sync::atomic::AtomicU64::new(0),
            fault,
            own_epoch: AtomicU32::new(0),
            repaired_at: AtomicU32::new(epoch),
            kind: kind_b,
            path,
            pid,
            starttime,
            slot_size: slot,
            slot_count,
            payload_size: payload,
        })
    }

    /// The registry file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The pid that created the registry.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The creating process's start time (clock ticks since boot).
    pub fn starttime(&self) -> u64 {
        self.starttime
    }

    /// The number of slots.
    pub fn slot_count(&self) -> u32 {
        self.slot_count
    }

    /// The payload size of each slot, in bytes (a multiple of 8).
    pub fn payload_size(&self) -> usize {
        self.payload_size
    }

    /// The number of live (claimed and published) slots.
    ///
    /// Like [`claim`](Registry::claim), it first puts back a file that another
    /// process truncated (see [the module docs](super#a-file-truncated-under-its-owner));
    /// 0 if that fails.
    pub fn live_slots(&self) -> usize {
        if self.repair().is_err() {
            return 0;
        }
        let hw = self.high_water();
        (0..hw)
            .filter(|&i| self.state(i).load(Ordering::Acquire) == STATE_LIVE)
            .count()
    }

    /// Puts the file back to its size if another process truncated it, or
    /// publishes it again if it was deleted (see
    /// [the module docs](super#a-file-deleted-under-its-owner)), as
    /// [`claim`](Registry::claim) does first (one `fstat` when it is whole and
    /// no fault was caught in the mapping since the last check): for an owner
    /// that writes the slots it holds on its own schedule (a periodic
    /// publisher). True if it did put the file back: the slots the owner holds
    /// are then hidden from readers until released (see
    /// [`claim`](Registry::claim)), so an owner that wants them listed
    /// releases and claims them again (or [`reclaim`](SlotWriter::reclaim)s
    /// them).
    ///
    /// # Errors
    /// Those of `fstat`, `fallocate` or `ftruncate` (ENOSPC:
    /// `OutOfResources`), with a message saying the file was truncated.
    pub fn check_size(&self) -> Result<bool> {
        self.repair()
    }

    fn high_water(&self) -> u32 {
        self.map
            .u32_at(H_HIGH_WATER)
            .load(Ordering::Acquire)
            .min(self.slot_count)
    }

    /// Reserves the pages of the slots a claim may take now (up to
    /// [`AHEAD`] past the high-water mark) if they are not yet: a claim
    /// touches the slots it scans, up to the free one it takes.
    fn reserve_ahead(&self) -> Result<()> {
        let from = self.reserved.load(Ordering::Acquire);
        let need = reserved_for(self.slot_size, self.slot_count, self.high_water());
        if need <= from {
            return Ok(());
        }
        let total = self.slot_off(self.slot_count);
        let got = reserve(&self.data, from, need, total)?;
        self.reserved.fetch_max(got, Ordering::AcqRel);
        Ok(())
    }

    /// Puts the file back to its size if another process truncated it (an
    /// admin's `truncate -s 0`, a clean-up script): the mapped pages past the
    /// new end would raise `SIGBUS` at the next store to them, in whichever
    /// thread of this process made it. One `fstat` when the file is whole.
    ///
    /// The reserved pages are allocated again (`fallocate`) and the file is
    /// extended to its size, so that the stores of every writer land on backed
    /// pages again; the header is written again. What the truncation wiped is
    /// lost: a wiped slot reads as free, while its writer may still hold it, so
    /// every slot below the high-water mark that reads free is reserved
    /// (invisible to readers, never handed out by a claim). A writer that still
    /// holds one writes it unseen until it releases it, which frees it; slots
    /// that were free are lost for this registry's life.
    ///
    /// Also run after the `SIGBUS` handler caught a fault in the mapping (it
    /// extends the file and backs the faulting page, or maps private memory
    /// over it: the file is mapped over such pages again here). Each repair
    /// bumps the epoch, so every slot held until then reads as
    /// [`wiped`](SlotWriter::wiped). A claim running while another repairs
    /// may take a wiped slot before it is reserved here, so that two writers
    /// share it (readers may show a mix of both; memory stays safe).
    pub(super) fn repair(&self) -> Result<bool> {
        let total = self.slot_off(self.slot_count);
        let epoch = self.epoch().load(Ordering::Acquire);
        let mut st = rustix::fs::fstat(&self.data)
            .map_err(|e| Error::from_errno("fstat", e.raw_os_error()))?;
        if (st.st_dev, st.st_ino) != self.id() || st.st_nlink == 0 {
            // Checked again under the lock: another thread may have just
            // replaced a deleted file (the descriptor names the new one).
            let mut id = self.id.lock().unwrap_or_else(|e| e.into_inner());
            st = rustix::fs::fstat(&self.data)
                .map_err(|e| Error::from_errno("fstat", e.raw_os_error()))?;
            // Not in a forked child: the file is its parent's to publish.
            if (st.st_dev, st.st_ino) == *id && st.st_nlink == 0 && self.is_owner() {
                // Failing that (a /dev/shm full or read-only by now), the
                // deleted file stays mapped: the process is not listed, its
                // writes stay safe, and a later check tries again.
                if self.replace_deleted(&mut id).is_ok() {
                    return Ok(true);
                }
                st = rustix::fs::fstat(&self.data)
                    .map_err(|e| Error::from_errno("fstat", e.raw_os_error()))?;
            }
        }
        if (st.st_dev, st.st_ino) != self.id() {
            // The program closed the registry's descriptor (one it did not
            // open) and the number names another file now: that file must
            // not be extended or filled.
            return Err(Error::new(
                ErrorKind::InvalidState,
                "registry",
                format!(
                    "the descriptor of {} was closed by the program and names another file now",
                    self.path.display()
                ),
            )
            .with_hint("do not close descriptors the program did not open (posixrt keeps its registry files open)"));
        }
        let size = st.st_size;
        if size >= total as i64 && epoch == self.repaired_at.load(Ordering::Acquire) {
            return Ok(false);
        }
        let lost = |e: Error| {
            e.with_message(format!(
                "{} was truncated by another process (to {size} bytes) and cannot be put back to its {total} bytes",
                self.path.display()
            ))
            .with_hint(
                "free space in /dev/shm, and do not truncate the registry files of running processes",
            )
        };
        // `fallocate` backs the pages and extends the file over them; the
        // rest of the file is extended as before (reserved by later claims).
        let reserved = self.reserved.load(Ordering::Acquire);
        reserve(&self.data, 0, reserved, total).map_err(lost)?;
        if size < total as i64 {
            rustix::fs::ftruncate(&self.data, total as u64)
                .map_err(|e| lost(Error::from_errno("ftruncate", e.raw_os_error())))?;
        }
        // Pages the `SIGBUS` handler could not back were replaced by
        // anonymous memory: the file is mapped over them again.
        if let Some(i) = self.fault {
            let detached = &super::fault::MAPS[i].detached;
            if detached.swap(false, Ordering::AcqRel) {
                if let Err(e) = self.map.remap(&self.data) {
                    detached.store(true, Ordering::Release);
                    return Err(lost(e));
                }
            }
        }
        let claimed = self.claimed.load(Ordering::Acquire).min(self.slot_count);
        for i in 0..claimed {
            let _ = self.state(i).compare_exchange(
                STATE_FREE,
                STATE_RESERVED,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        self.rewrite_header(claimed);
        // Every slot held until now may have been wiped (see `SlotWriter::wiped`).
        let now = self.epoch().fetch_add(1, Ordering::AcqRel).wrapping_add(1);
        self.repaired_at.store(now, Ordering::Release);
        Ok(true)
    }

    /// Writes this registry's header again, with `claimed` as its high-water
    /// mark (after a repair or a replacement of the file).
    pub(super) fn rewrite_header(&self, claimed: u32) {
        write_header(
            &self.map,
            &self.kind,
            self.pid,
            self.starttime,
            self.slot_size,
            self.slot_count,
            self.payload_size,
            claimed,
        );
    }

    /// Whether this is the process that created the registry (not a forked
    /// child with an inherited copy).
    fn is_owner(&self) -> bool {
        rustix::process::getpid().as_raw_nonzero().get() == self.pid
    }

    /// The file's device and inode.
    fn id(&self) -> (u64, u64) {
        *self.id.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bumped by the `SIGBUS` handler at each fault in this mapping and by
    /// each repair: a slot claimed at another epoch may have been wiped.
    fn epoch(&self) -> &AtomicU32 {
        match self.fault {
            Some(i) => &super::fault::MAPS[i].epoch,
            None => &self.own_epoch,
        }
    }

    fn slot_off(&self, i: u32) -> usize {
        HEADER_SIZE + i as usize * self.slot_size
    }

    fn state(&self, i: u32) -> &AtomicU32 {
        self.state_at(self.slot_off(i))
    }

    /// The state word of the slot at offset `off`.
    #[inline]
    fn state_at(&self, off: usize) -> &AtomicU32 {
        self.map.u32_at(off + S_STATE)
    }

    /// Claims a free slot for an owner: `tid` and its start time `thread_start`
    /// (see [`current_thread`]), or `tid == 0` for a slot owned by the process.
    ///
    /// The payload starts zeroed and the slot is live (visible to readers) when
    /// this returns. If every slot is taken, slots of threads that no longer exist
    /// are reclaimed; if none is, the error is
    /// [`OutOfResources`](crate::ErrorKind::OutOfResources). A slot whose owner
    /// cannot be checked (reading `/proc` fails: EMFILE, ENOMEM) is never taken;
    /// if that left no slot, the error is that read's (EMFILE, ENOMEM:
    /// `OutOfResources`), saying so.
    ///
    /// If another process truncated the file, it is put back to its size first
    /// (see [the module docs](super#a-file-truncated-under-its-owner)); if that
    /// fails, so does the claim, with the error of `fallocate` or `ftruncate`
    /// (ENOSPC: `OutOfResources`) and a message saying the file was truncated.
    pub fn claim(&self, tid: i32, thread_start: u64) -> Result<SlotWriter<'_>> {
        self.repair()?;
        // Before any store to the slot: a truncation meanwhile wipes it.
        let epoch = self.epoch().load(Ordering::Acquire);
        self.reserve_ahead()?;
        let mut unknown = None;
        let idx = self
            .reserve_free()
            .or_else(|| self.reserve_dead(&mut unknown))
            .ok_or_else(|| {
                let full = format!(
                    "all {} slots of {} are in use",
                    self.slot_count,
                    self.path.display()
                );
                match unknown {
                    // Some owners may be gone, but that could not be read.
                    Some(e) => e.with_message(format!(
                        "{full}, and whether their owner threads still run could not be read"
                    )),
                    None => Error::new(ErrorKind::OutOfResources, "registry", full),
                }
                .with_hint("release slots you no longer need (threads that exit release theirs)")
            })?;
        self.claimed.fetch_max(idx + 1, Ordering::AcqRel);
        self.map
            .u32_at(H_HIGH_WATER)
            .fetch_max(idx + 1, Ordering::AcqRel);
        let w = SlotWriter {
            reg: self,
            off: self.slot_off(idx),
            index: idx,
            epoch,
            epoch_now: self.epoch(),
            tid,
            thread_start,
        };
        w.begin();
        let base = w.off;
        self.map
            .u32_at(base + S_TID)
            .store(tid as u32, Ordering::Relaxed);
        self.map
            .u64_at(base + S_TSTART)
            .store(thread_start, Ordering::Relaxed);
        for k in 0..self.payload_size / 8 {
            self.map
                .u64_at(base + SLOT_HEADER_SIZE + k * 8)
                .store(0, Ordering::Relaxed);
        }
        // Release: a reclaimer whose compare-exchange reads this LIVE also reads
        // the owner just stored (see `reserve_dead`).
        self.map
            .u32_at(base + S_STATE)
            .store(STATE_LIVE, Ordering::Release);
        w.end();
        Ok(w)
    }

    fn reserve_free(&self) -> Option<u32> {
        (0..self.slot_count).find(|&i| {
            self.state(i)
                .compare_exchange(
                    STATE_FREE,
                    STATE_RESERVED,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok()
        })
    }

    /// Takes the slot of an owner thread that is gone. An owner whose
    /// liveness cannot be read (`/proc` refused: EMFILE, ENOMEM) counts as
    /// alive, and the first such error is left in `unknown`.
    fn reserve_dead(&self, unknown: &mut Option<Error>) -> Option<u32> {
        (0..self.slot_count).find(|&i| {
            let off = self.slot_off(i);
            let owner = || {
                (
                    self.map.u32_at(off + S_TID).load(Ordering::Relaxed) as i32,
                    self.map.u64_at(off + S_TSTART).load(Ordering::Relaxed),
                )
            };
            if self.state(i).load(Ordering::Acquire) != STATE_LIVE {
                return false;
            }
            let (tid, start) = owner();
            if tid == 0 {
                return false;
            }
            match thread_gone(self.pid, tid, start) {
                Ok(true) => {}
                Ok(false) => return false,
                Err(e) => {
                    unknown.get_or_insert(e);
                    return false;
                }
            }
            // The slot may have changed hands while /proc was read (another
            // reclaimer took it, or its owner released it and a new one claimed
            // it): take it aside, and keep it only if it still names the dead
            // owner. While it is aside its owner (if alive) can only write or
            // release it, and a release (state RESERVED, then FREE) makes the
            // give-back below fail, as it must.
            if self
                .state(i)
                .compare_exchange(
                    STATE_LIVE,
                    STATE_RECLAIM,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_err()
            {
                return false;
            }
            if owner() == (tid, start) {
                return true;
            }
            let _ = self.state(i).compare_exchange(
                STATE_RECLAIM,
                STATE_LIVE,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            false
        })
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        if let Some(i) = self.fault {
            super::fault::leave(i);
        }
        let fd = self.lock_file.as_raw_fd();
        // Not while a create of the kind looks at the file (see `FILES`).
        let _files = FILES.lock();
        untrack_lock_fd(fd);
        // A forked child's inherited copy must not remove the parent's file.
        if self.is_owner() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("path", &self.path)
            .field("slot_count", &self.slot_count)
            .field("payload_size", &self.payload_size)
            .finish()
    }
}

/// The writer of one claimed slot. Only its owner writes; [`write`](SlotWriter::write)
/// wraps a change in the sequence counter so readers never keep a torn copy.
///
/// Dropping it does **not** free the slot (a thread-local may outlive the moment the
/// owner wants to let go); call [`release`](SlotWriter::release).
pub struct SlotWriter<'r> {
    reg: &'r Registry,
    off: usize,
    index: u32,
    /// The registry's epoch when the slot was claimed.
    epoch: u32,
    /// The registry's epoch counter (`Registry::epoch`, resolved once).
    epoch_now: &'r AtomicU32,
    tid: i32,
    thread_start: u64,
}

impl<'r> SlotWriter<'r> {
    /// The slot's index in the registry.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The registry the slot belongs to.
    pub fn registry(&self) -> &'r Registry {
        self.reg
    }

    #[inline]
    fn seq(&self) -> &AtomicU32 {
        self.reg.map.u32_at(self.off + S_SEQ)
    }

    /// Makes the counter odd. `| 1` also repairs a counter left odd by an owner
    /// that died mid-write (a reclaimed slot): the result is odd and differs from
    /// the old value either way.
    #[inline]
    pub(crate) fn begin(&self) {
        let s = self.seq().load(Ordering::Relaxed);
        self.seq().store(s.wrapping_add(1) | 1, Ordering::Relaxed);
        fence(Ordering::Release);
    }

    /// Makes the (odd) counter even again, publishing the writes.
    #[inline]
    fn end(&self) {
        let s = self.seq().load(Ordering::Relaxed);
        self.seq().store(s.wrapping_add(1), Ordering::Release);
    }

    /// Changes the payload under the sequence counter: readers that overlap the
    /// change retry and see either all of it or none of it.
    ///
    /// If `f` panics, the counter is still closed (made even) while unwinding, so
    /// readers keep reading the slot (they may see the part `f` wrote).
    #[inline]
    pub fn write<R>(&mut self, f: impl FnOnce(&mut Payload<'_>) -> R) -> R {
        /// Closes the write on every exit, unwinding included.
        struct End<'w, 'r>(&'w SlotWriter<'r>);
        impl Drop for End<'_, '_> {
            #[inline]
            fn drop(&mut self) {
                self.0.end();
            }
        }
        self.begin();
        let end = End(self);
        let mut p = Payload {
            map: &end.0.reg.map,
            off: end.0.off + SLOT_HEADER_SIZE,
            len: end.0.reg.payload_size,
        };
        f(&mut p)
    }

    /// Reads the payload (the owner reads its own writes; no retry needed).
    #[inline]
    pub fn read<R>(&self, f: impl FnOnce(&Payload<'_>) -> R) -> R {
        f(&Payload {
            map: &self.reg.map,
            off: self.off + SLOT_HEADER_SIZE,
            len: self.reg.payload_size,
        })
    }

    /// Whether another process may have wiped the slot since it was claimed:
    /// the file was truncated (a store or load faulted past its end, or a
    /// repair found it short) since, or the slot no longer reads as live (a
    /// truncation inside its page, which raises no fault, zeroed it; or the
    /// file was overwritten). Readers then no longer list the slot, or show it
    /// emptied; [`reclaim`](SlotWriter::reclaim) moves the writer to a slot
    /// they list. Two relaxed loads: no clock read and no system call, so
    /// that a real-time writer's fast path stays that. A deleted file is not
    /// looked for here but by [`notice_deleted`](SlotWriter::notice_deleted)
    /// and the repair path.
    ///
    /// A truncation that cuts the slot's own payload but keeps its header
    /// (and causes no fault) is not seen here: readers count the file cut
    /// short until the next claim or [`Registry::check_size`].
    #[inline]
    pub fn wiped(&self) -> bool {
        self.epoch_now.load(Ordering::Relaxed) != self.epoch
            || self.reg.state_at(self.off).load(Ordering::Relaxed) != STATE_LIVE
    }

    /// Publishes the registry again if its file was deleted (`rm`, or
    /// systemd-logind's `RemoveIPC=yes` at the end of the user's last
    /// session), which hides the whole process from readers (see
    /// [the module docs](super#a-file-deleted-under-its-owner)): a coarse
    /// clock read, and one `fstat` at most every
    /// [`DELETED_CHECK_MS`](super::DELETED_CHECK_MS) per registry (by the
    /// first writer that asks then). For paths that make a system call
    /// anyway (a thread renamed, a slot released), or a fast path that asks
    /// rarely (`mark` asks at most every 50 ms per thread, by the timestamp
    /// it reads anyway). The slot is then [`wiped`](SlotWriter::wiped): its
    /// next write moves it.
    pub fn notice_deleted(&self) {
        if self.reg.deleted_lately() {
            let _ = self.reg.repair();
        }
    }

    /// Puts a truncated file back (as [`Registry::check_size`]) and moves
    /// the writer to a newly claimed slot of the same owner, which readers
    /// list again, with the payload this slot still has (what the
    /// truncation wiped reads as zeros); this slot is freed.
    ///
    /// # Errors
    /// Those of [`Registry::check_size`] and [`Registry::claim`]; the writer
    /// keeps its slot then.
    pub fn reclaim(&mut self) -> Result<()> {
        self.reg.repair()?;
        let epoch = self.epoch_now.load(Ordering::Acquire);
        let mut words = vec![0u64; self.reg.payload_size / 8];
        self.read(|p| {
            for (i, w) in words.iter_mut().enumerate() {
                *w = p.load_u64(i);
            }
        });
        let copy = |p: &mut Payload<'_>| {
            for (i, w) in words.iter().enumerate() {
                p.store_u64(i, *w);
            }
        };
        let mut new = match self.reg.claim(self.tid, self.thread_start) {
            Ok(new) => new,
            // No free slot (all are live: a deleted file replaced, whose
            // slots were copied, wipes none): a slot that still reads live
            // and ours is written again where it is.
            Err(e) if e.kind() == ErrorKind::OutOfResources && self.still_ours() => {
                self.epoch = epoch;
                self.write(copy);
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        new.write(copy);
        std::mem::replace(self, new).release();
        Ok(())
    }

    /// Whether the slot still reads as live and owned by this writer's owner.
    fn still_ours(&self) -> bool {
        let m = &self.reg.map;
        self.reg.state_at(self.off).load(Ordering::Acquire) == STATE_LIVE
            && m.u32_at(self.off + S_TID).load(Ordering::Relaxed) == self.tid as u32
            && m.u64_at(self.off + S_TSTART).load(Ordering::Relaxed) == self.thread_start
    }

    /// Frees the slot: readers stop showing it at once; another owner may claim it.
    pub fn release(self) {
        // A file truncated since the slot was claimed is put back first (the
        // check's load of the slot's state faults if its page is gone, which
        // the `SIGBUS` handler catches): a release may be the owner's last
        // touch of the file for a long time (a thread exiting), and readers
        // would count a file left extended with a zeroed header as another
        // layout until the next claim.
        if self.wiped() || self.reg.deleted_lately() {
            let _ = self.reg.repair();
        }
        self.begin();
        let m = &self.reg.map;
        m.u32_at(self.off + S_STATE)
            .store(STATE_RESERVED, Ordering::Relaxed);
        m.u32_at(self.off + S_TID).store(0, Ordering::Relaxed);
        m.u64_at(self.off + S_TSTART).store(0, Ordering::Relaxed);
        self.end();
        m.u32_at(self.off + S_STATE)
            .store(STATE_FREE, Ordering::Release);
    }
}
