//! Fork and exit clean-up: the fork generation, the fork hook that lets a child
//! drop its inherited registry locks, and the `atexit` unlink of our files.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, Ordering};

use lock_api::RawMutex as _;

use crate::sys::pilock::{PiLocked, RawPiLock};

// Fork generation

pub(crate) static GENERATION: AtomicU32 = AtomicU32::new(0);

/// The descriptors (`-1`: free entry) through which this process holds the
/// `flock` of its registry files, so that a forked child can let go of its
/// inherited references: a `flock` belongs to the open file description, which
/// `fork` shares, so without this a child that outlives its parent's `exec` would
/// keep the parent's stale file looking owned; and so that `Registry::create`
/// knows this process's live registry files. (More than 64 registries in one
/// process keep working; the extra ones just lack these checks.)
pub(crate) static LOCK_FDS: [AtomicI32; 64] = [const { AtomicI32::new(-1) }; 64];

/// Serialises this process's publishing and removing of registry files: two
/// registries of a kind share the file name (and the temporary name), so two
/// threads creating one at once, or one creating while another drops one, would
/// otherwise take or remove each other's file. Priority-inheriting, and
/// forgotten in a forked child (see [`after_fork_in_child`]).
pub(crate) static FILES: PiLocked<()> = PiLocked::const_new(RawPiLock::INIT, ());

/// Forgets a holder of [`FILES`] in a forked child (async-signal-safe: one store).
fn reset_files_lock() {
    // SAFETY: in the child of a fork its only thread holds nothing; a holder
    // was another thread of the parent, which does not exist here.
    unsafe { FILES.raw() }.reset_in_child();
}

/// A descriptor of `/dev/null` (close-on-exec; -1: not opened yet), opened in
/// the parent when the first lock descriptor is tracked and kept for the
/// process's life: the fork hook points inherited lock descriptors at it, so
/// it opens nothing in the child, whose descriptor table may be full
/// (EMFILE: the lock would then stay held).
static DEV_NULL: AtomicI32 = AtomicI32::new(-1);

pub(crate) fn track_lock_fd(fd: i32) {
    if DEV_NULL.load(Ordering::Relaxed) < 0 {
        let nul = crate::sys::process::open_dev_null();
        if nul >= 0
            && DEV_NULL
                .compare_exchange(-1, nul, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            // Another thread's is kept.
            // SAFETY: `nul` was just opened here and published nowhere.
            unsafe { rustix::io::close(nul) };
        }
    }
    for entry in &LOCK_FDS {
        if entry
            .compare_exchange(-1, fd, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
    }
}

/// Stops tracking `fd` (before it is closed: its number may be reused).
pub(crate) fn untrack_lock_fd(fd: i32) {
    for entry in &LOCK_FDS {
        let _ = entry.compare_exchange(fd, -1, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// Runs in the child of every `fork`, where only async-signal-safe calls are
/// allowed (the parent may be multi-threaded): an atomic increment, and `open`,
/// `dup3` and `close`.
pub(crate) fn after_fork_in_child() {
    GENERATION.fetch_add(1, Ordering::Relaxed);
    reset_files_lock();
    for entry in &LOCK_FDS {
        let fd = entry.swap(-1, Ordering::Relaxed);
        if fd >= 0 {
            release_inherited_lock(fd);
        }
    }
}

/// Points the child's copy of a registry descriptor at `/dev/null`. `dup3`
/// replaces it atomically, dropping this process's reference to the registry's
/// open file description (and so to the parent's `flock`), while the descriptor
/// number stays open, so the `File` that owns it still closes a valid descriptor.
pub(crate) fn release_inherited_lock(fd: i32) {
    // Async-signal-safe, as a fork child handler requires: a `dup3` onto the
    // descriptor of /dev/null inherited from the parent, or (none there) one
    // opened here.
    let nul = DEV_NULL.load(Ordering::Relaxed);
    if nul < 0 || !crate::sys::process::point_fd_at(fd, nul) {
        crate::sys::process::redirect_to_dev_null(fd);
    }
}

/// A counter bumped in the child of every `fork` (once a registry was created).
///
/// A forked child inherits the parent's registry mapping and any [`SlotWriter`](super::SlotWriter)
/// kept in thread-local or static storage, but those slots belong to the parent's
/// file: writing them would change the parent's entries. Record the generation
/// with a cached writer and compare before use (one relaxed load); on a mismatch,
/// forget the writer without releasing it and create this process's own
/// [`Registry`](super::Registry).
#[inline]
pub fn generation() -> u32 {
    GENERATION.load(Ordering::Relaxed)
}

// ---------------------------------------------------------------------------
// Exit clean-up

/// A file to remove at normal exit: a node of a push-only list whose nodes are
/// never freed. Not a `Mutex<Vec<_>>`: a child forked while another thread of
/// its parent held that lock found it held for good, and its own first
/// `Registry::create` waited forever; a push here is one compare-exchange, which
/// a fork sees done or not done.
struct ExitPath {
    path: CString,
    owner: i32,
    next: *const ExitPath,
}

/// The head of the list of [`ExitPath`]s (null: empty).
static EXIT_PATHS: AtomicPtr<ExitPath> = AtomicPtr::new(std::ptr::null_mut());
/// Whether [`unlink_at_exit`] was registered with `atexit` (inherited by a
/// forked child, as the registration is).
static AT_EXIT: AtomicBool = AtomicBool::new(false);

/// The registered paths, newest first.
fn exit_paths() -> impl Iterator<Item = &'static ExitPath> {
    // SAFETY: every non-null pointer in the list came from `Box::into_raw` in
    // `register_exit_unlink`, was fully written before it was published
    // (Release, read here with Acquire), and is never freed or changed after.
    let first = unsafe { EXIT_PATHS.load(Ordering::Acquire).as_ref() };
    // SAFETY: as above, for each `next`.
    std::iter::successors(first, |n| unsafe { n.next.as_ref() })
}

extern "C" fn unlink_at_exit() {
    let pid = rustix::process::getpid().as_raw_nonzero().get();
    for n in exit_paths() {
        if n.owner == pid {
            crate::sys::process::unlink_quietly(&n.path);
        }
    }
}

/// Removes `path` at normal exit of process `pid`. Called under `FILES` (so
/// the check for a path registered already and the push do not race).
pub(crate) fn register_exit_unlink(path: &Path, pid: i32) {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return;
    };
    if exit_paths().any(|n| n.owner == pid && n.path == c) {
        return; // a registry of this kind made and dropped before
    }
    if !AT_EXIT.swap(true, Ordering::AcqRel) {
        crate::sys::process::atexit(unlink_at_exit);
    }
    let node = Box::into_raw(Box::new(ExitPath {
        path: c,
        owner: pid,
        next: std::ptr::null(),
    }));
    let mut head = EXIT_PATHS.load(Ordering::Relaxed);
    loop {
        // SAFETY: `node` is not published yet: this thread has it alone.
        unsafe { (*node).next = head };
        match EXIT_PATHS.compare_exchange_weak(head, node, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return,
            Err(h) => head = h,
        }
    }
}

/// Runs `f` as if another thread were inside [`register_exit_unlink`] (for a
/// test that forks there). A registration holds no lock, so nothing is held.
#[cfg(test)]
pub(crate) fn while_registering_exit_unlink<R>(f: impl FnOnce() -> R) -> R {
    f()
}
