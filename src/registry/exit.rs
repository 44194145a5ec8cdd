//! Fork and exit clean-up: the fork generation, the fork hook that lets a child
//! drop its inherited registry locks, and the `atexit` unlink of our files.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::sync::Mutex;

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

pub(crate) fn track_lock_fd(fd: i32) {
    for entry in &LOCK_FDS {
        if entry
            .compare_exchange(-1, fd, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
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
    // Async-signal-safe, as a fork child handler requires.
    crate::sys::process::redirect_to_dev_null(fd);
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

pub(crate) static EXIT_PATHS: Mutex<Vec<(CString, i32)>> = Mutex::new(Vec::new());

extern "C" fn unlink_at_exit() {
    let pid = rustix::process::getpid().as_raw_nonzero().get();
    if let Ok(paths) = EXIT_PATHS.try_lock() {
        for (p, owner) in paths.iter() {
            if *owner == pid {
                crate::sys::process::unlink_quietly(p);
            }
        }
    }
}

pub(crate) fn register_exit_unlink(path: &Path, pid: i32) {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return;
    };
    let Ok(mut paths) = EXIT_PATHS.lock() else {
        return;
    };
    if paths.is_empty() {
        crate::sys::process::atexit(unlink_at_exit);
    }
    paths.push((c, pid));
}
