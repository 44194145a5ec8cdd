//! The registry file as a file: its header, the reservation of its pages,
//! and its publication under its name (used by [`Registry`](super::Registry)).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use crate::{Error, ErrorKind, Result};

use super::exit::*;
use super::layout::*;
use super::map::*;
use super::proc::*;

/// Writes the header of a registry (see the [module docs](super)); the
/// high-water mark last, with release ordering, never lowered.
#[allow(clippy::too_many_arguments)]
pub(super) fn write_header(
    map: &Mapping,
    kind: &[u8; 16],
    pid: i32,
    starttime: u64,
    slot_size: usize,
    slot_count: u32,
    payload: usize,
    high_water: u32,
) {
    let words = |at: usize, bytes: &[u8]| {
        for (i, chunk) in bytes.chunks(4).enumerate() {
            map.u32_at(at + i * 4).store(
                u32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]),
                Ordering::Relaxed,
            );
        }
    };
    words(0, &MAGIC);
    map.u32_at(H_VERSION).store(VERSION, Ordering::Relaxed);
    map.u32_at(H_HEADER_SIZE)
        .store(HEADER_SIZE as u32, Ordering::Relaxed);
    words(H_KIND, kind);
    map.u32_at(H_PID).store(pid as u32, Ordering::Relaxed);
    map.u64_at(H_START).store(starttime, Ordering::Relaxed);
    map.u32_at(H_SLOT_SIZE)
        .store(slot_size as u32, Ordering::Relaxed);
    map.u32_at(H_SLOT_COUNT)
        .store(slot_count, Ordering::Relaxed);
    map.u32_at(H_PAYLOAD)
        .store(payload as u32, Ordering::Relaxed);
    // A claim may have raised it meanwhile (after a repair's load).
    map.u32_at(H_HIGH_WATER)
        .fetch_max(high_water, Ordering::Release);
}

/// A lock descriptor tracked in `LOCK_FDS` for a registry being created:
/// untracked again if the create fails (before its `File` closes it).
pub(super) struct TrackedLockFd(i32);

impl TrackedLockFd {
    pub(super) fn new(fd: i32) -> TrackedLockFd {
        track_lock_fd(fd);
        TrackedLockFd(fd)
    }
}

impl Drop for TrackedLockFd {
    fn drop(&mut self) {
        untrack_lock_fd(self.0);
    }
}

/// Creates the file a registry named `name` is filled in under before it is
/// published: `.<name>.tmp` in [`DIR`], or, when a file that this process
/// may not remove is there (another user's, planted in the sticky
/// `/dev/shm`), `.<name>.<random>.tmp`. An existing file is never opened
/// (`O_EXCL`, `O_NOFOLLOW`). Called under `FILES`.
pub(super) fn create_tmp(name: &str) -> Result<(File, PathBuf)> {
    use std::hash::BuildHasher;
    let fixed = Path::new(DIR).join(format!(".{name}.tmp"));
    // Left by an earlier program image of this pid (an `exec` between its
    // create and its publish), or planted.
    let _ = std::fs::remove_file(&fixed);
    let mut tmp = fixed;
    let mut tries = 0;
    loop {
        let r = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
            .open(&tmp);
        match r {
            Ok(file) => return Ok((file, tmp)),
            // Readers never look at temporary names: any other will do, and
            // a random one cannot be planted ahead.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 8 => {
                tries += 1;
                let r = std::collections::hash_map::RandomState::new().hash_one(tries);
                tmp = Path::new(DIR).join(format!(".{name}.{r:016x}.tmp"));
            }
            Err(e) => {
                return Err(io_error("open", &e)
                    .with_message(format!("creating {}", tmp.display()))
                    .with_hint(create_hint(e.raw_os_error())))
            }
        }
    }
}

/// The hint for a file that could not be created in [`DIR`] (errno `errno`):
/// a directory that is there but not writable by this process is not fixed
/// by mounting a tmpfs over it.
fn create_hint(errno: Option<i32>) -> &'static str {
    match errno {
        Some(libc::EROFS) => {
            "/dev/shm is not writable: it is mounted read-only; remount it read-write (mount -o remount,rw /dev/shm) or mount a writable tmpfs there"
        }
        Some(libc::EACCES | libc::EPERM) => {
            "/dev/shm is not writable by this user: give it the usual permissions (chmod 1777 /dev/shm, owned by root) or mount a writable tmpfs there (mount -t tmpfs -o mode=1777 tmpfs /dev/shm)"
        }
        Some(libc::ENOSPC | libc::EDQUOT) => {
            "/dev/shm is full (or out of inodes, or over quota): free space there"
        }
        Some(libc::EMFILE) => NOFILE_HINT,
        _ => "posixrt registries live in /dev/shm: mount a tmpfs there (mount -t tmpfs tmpfs /dev/shm)",
    }
}

/// Renames the filled-in `tmp` to `path`, unless `path` is a live registry of
/// this process (a second registry of a kind gets the same name): replacing it
/// would hide its slots from every reader, and dropping either would remove the
/// other's file; nor if another live writer holds the file's lock (see
/// [`held_by_another_writer`]). Anything else there is replaced, never opened
/// for writing nor followed: a file left by an earlier program image of this
/// pid (before an `exec`), or one planted by another user (a symlink, a FIFO,
/// a file), which only root may replace in the sticky `/dev/shm` (for others,
/// the error names its owner). Our registries are recognised by the
/// descriptors their locks are held through. Called under `FILES`.
pub(super) fn publish(tmp: &Path, path: &Path, kind: &str) -> Result<()> {
    // Not `stat`: a symlink planted at the name must not be followed.
    let found = rustix::fs::lstat(path).ok();
    if let Some(st) = &found {
        let ours = LOCK_FDS.iter().any(|entry| {
            let fd = entry.load(Ordering::Relaxed);
            fd >= 0 && raw_fstat(fd).is_some_and(|id| id == (st.st_dev, st.st_ino))
        });
        if ours {
            return Err(Error::new(
                ErrorKind::Busy,
                "registry",
                format!(
                    "this process already has a registry of kind {kind:?} ({})",
                    path.display()
                ),
            )
            .with_hint("create one Registry per process and kind, and share it"));
        }
        if held_by_another_writer(path) {
            return Err(Error::new(
                ErrorKind::Busy,
                "registry",
                format!(
                    "{} is held by another live writer: a process with the same pid and start time in another pid namespace that shares /dev/shm",
                    path.display()
                ),
            )
            .with_hint("give each container its own /dev/shm (IPC namespace), or start the processes in different clock ticks"));
        }
    }
    std::fs::rename(tmp, path).map_err(|e| {
        let me = rustix::process::geteuid().as_raw();
        match &found {
            // Not ours to replace (the sticky /dev/shm, or a directory).
            Some(st) if st.st_uid != me || st.st_mode & libc::S_IFMT != libc::S_IFREG => {
                let what = match st.st_mode & libc::S_IFMT {
                    libc::S_IFREG => "a file",
                    libc::S_IFLNK => "a symlink",
                    libc::S_IFDIR => "a directory",
                    _ => "a special file",
                };
                io_error("rename", &e)
                    .with_message(format!(
                        "{} is in the way: {what} of uid {} that this process did not create and may not replace (planted by another user?)",
                        path.display(),
                        st.st_uid
                    ))
                    .with_hint(format!(
                        "remove it as root (rm -r {}), then start the program again; no reader takes it for this process's registry",
                        path.display()
                    ))
            }
            _ => io_error("rename", &e),
        }
    })
}

/// Whether the file at `path` (not one of ours) is a registry whose owner
/// still holds its exclusive `flock`. A file left by an earlier program
/// image of this pid (before an `exec`) is not held and may be replaced;
/// one held by a live writer elsewhere (another pid namespace sharing
/// `/dev/shm`, whose names can collide with ours) must not be: its marks
/// would vanish from every reader, and its exit, which removes the file
/// by name, would remove ours. Only a regular file of this process's user
/// or of root counts (those readers accept as its registry): another user
/// could plant a file at the name and hold its lock to keep this process
/// from publishing.
fn held_by_another_writer(path: &Path) -> bool {
    // O_NONBLOCK: a FIFO planted at the name must not block the create.
    let Ok(f) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    else {
        return false;
    };
    // Checked on what was opened, not on the name (which may change).
    let me = rustix::process::geteuid().as_raw();
    let writers = rustix::fs::fstat(&f).is_ok_and(|st| {
        st.st_mode & libc::S_IFMT == libc::S_IFREG && (st.st_uid == me || st.st_uid == 0)
    });
    writers
        && matches!(
            rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockShared),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK
        )
}

/// The device and inode of descriptor `fd`, if it is open. A plain `fstat` on
/// a number: a tracked descriptor closed meanwhile (its registry dropped by
/// another thread) only makes it fail, or name another file.
fn raw_fstat(fd: i32) -> Option<(u64, u64)> {
    // SAFETY: `st` is plain data, fully written by fstat on success; fstat on any
    // descriptor number touches nothing else.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above; `st` is valid for writing.
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some((st.st_dev, st.st_ino))
}

/// Slots past the high-water mark whose pages are reserved before a claim: as
/// many claims at once as that stay on reserved pages.
pub(super) const AHEAD: u32 = 16;
/// The least a reservation grows by, in bytes (fewer `fallocate` calls).
const RESERVE_STEP: usize = 16 * 1024;

/// The bytes from the file's start that must be reserved while the high-water
/// mark is `high_water`: the header and the slots up to [`AHEAD`] past it.
pub(super) fn reserved_for(slot_size: usize, slot_count: u32, high_water: u32) -> usize {
    HEADER_SIZE + high_water.saturating_add(AHEAD).min(slot_count) as usize * slot_size
}

/// Reserves the pages of `file` (a registry of `total` bytes) in `from..need`,
/// grown to at least [`RESERVE_STEP`], and returns the end reserved. A file
/// system without `fallocate` (not tmpfs) keeps a sparse file: the whole file
/// counts as reserved then.
pub(super) fn reserve(file: &File, from: usize, need: usize, total: usize) -> Result<usize> {
    let end = need.max(from + RESERVE_STEP).min(total);
    if end <= from {
        return Ok(from);
    }
    let len = (end - from) as u64;
    match rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), from as u64, len) {
        Ok(()) => Ok(end),
        Err(e) if e == rustix::io::Errno::OPNOTSUPP || e == rustix::io::Errno::NOSYS => Ok(total),
        Err(e) => Err(Error::from_errno("fallocate", e.raw_os_error())
            .with_hint("/dev/shm is full or limited; free space there")),
    }
}
