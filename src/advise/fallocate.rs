//! `posix_fallocate` and Linux `fallocate` modes: reserve or release file space.

use std::os::fd::AsFd;

use super::range::check_range;
use crate::{Error, ErrorKind, Result};

/// What [`fallocate()`] does with the range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FallocateMode {
    /// `posix_fallocate`: allocate the blocks, and grow the file if the range ends
    /// beyond it. (glibc emulates it by writing zeros where the filesystem has no
    /// `fallocate`; here that is [`fallocate_or_fill`](super::fallocate_or_fill):
    /// this mode reports the filesystem's refusal.)
    Allocate,
    /// Linux `FALLOC_FL_KEEP_SIZE`: allocate the blocks but leave the file size as
    /// it is (preallocation past the end, e.g. for a log that will grow).
    KeepSize,
    /// Linux `FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`: free the blocks of the
    /// range; it reads back as zeros and the size does not change.
    PunchHole,
}

impl FallocateMode {
    fn flags(self) -> rustix::fs::FallocateFlags {
        use rustix::fs::FallocateFlags as F;
        match self {
            FallocateMode::Allocate => F::empty(),
            FallocateMode::KeepSize => F::KEEP_SIZE,
            FallocateMode::PunchHole => F::PUNCH_HOLE | F::KEEP_SIZE,
        }
    }

    fn name(self) -> &'static str {
        match self {
            FallocateMode::Allocate => "allocate",
            FallocateMode::KeepSize => "FALLOC_FL_KEEP_SIZE",
            FallocateMode::PunchHole => "FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE",
        }
    }
}

/// `posix_fallocate(fd, offset, len)`: makes sure the blocks for `offset..offset+len`
/// are allocated, growing the file if needed, so later writes cannot fail with
/// ENOSPC.
///
/// Negative `offset` or a `len` that is not positive are
/// [`InvalidInput`](crate::ErrorKind::InvalidInput), as POSIX requires. See
/// [`fallocate_mode`] for the Linux modes. Where the filesystem has no
/// `fallocate` this is [`Unsupported`](crate::ErrorKind::Unsupported), unlike
/// glibc's `posix_fallocate`, which then writes zeros: for that, call
/// [`fallocate_or_fill`](super::fallocate_or_fill).
///
/// ```
/// use posixrt::advise::fallocate;
///
/// let f = tempfile_in_tmp()?;
/// fallocate(&f, 0, 1 << 20)?;
/// assert_eq!(f.metadata()?.len(), 1 << 20);
/// # fn tempfile_in_tmp() -> std::io::Result<std::fs::File> {
/// #     let p = std::env::temp_dir().join(format!("posixrt-doc-fallocate-{}", std::process::id()));
/// #     let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p)?;
/// #     std::fs::remove_file(&p)?;
/// #     Ok(f)
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # References
///  - [POSIX]
///  - [Linux `fallocate`]
///
/// [POSIX]: https://pubs.opengroup.org/onlinepubs/9799919799/functions/posix_fallocate.html
/// [Linux `fallocate`]: https://man7.org/linux/man-pages/man2/fallocate.2.html
#[doc(alias = "posix_fallocate")]
pub fn fallocate<Fd: AsFd>(fd: Fd, offset: i64, len: i64) -> Result<()> {
    fallocate_mode(fd, FallocateMode::Allocate, offset, len)
}

/// `fallocate(fd, mode, offset, len)`: [`fallocate()`] with a Linux mode (keep size,
/// punch hole).
///
/// Errors: [`InvalidInput`](crate::ErrorKind::InvalidInput) for a negative offset
/// or a non-positive length, and on a block device for a range not aligned to
/// its logical block size or starting past its end (with a hint giving both); [`OutOfResources`](crate::ErrorKind::OutOfResources)
/// (ENOSPC) when the filesystem has no room for the range; EFBIG
/// ([`Other`](crate::ErrorKind::Other)) if `offset + len` exceeds the maximum
/// file size (or overflows `off_t`), as POSIX says, or the process's
/// `RLIMIT_FSIZE` (with a hint naming the limit; the kernel also raises
/// SIGXFSZ, which kills the process unless it is ignored or caught);
/// [`Unsupported`](crate::ErrorKind::Unsupported) (EOPNOTSUPP) where the
/// filesystem lacks the mode (a block device takes only
/// [`FallocateMode::PunchHole`]), and (ENODEV) for a descriptor that is neither a
/// regular file nor a block device (a character device, a socket), as POSIX
/// says; [`BadFd`](crate::ErrorKind::BadFd) if the descriptor is not open for
/// writing (a directory's never is: Linux says EBADF for one, and for the read
/// end of a pipe or a device opened for reading, with a hint naming the kind of
/// file); ESPIPE for the write end of a pipe; [`PermissionDenied`](crate::ErrorKind::PermissionDenied) (EPERM) for an
/// immutable file (`chattr +i`), a hole punched in an append-only one
/// (`chattr +a`) or a sealed memfd, with a hint naming which;
/// [`Interrupted`](crate::ErrorKind::Interrupted) (EINTR) when a signal arrived
/// during a long allocation (tmpfs checks for one between pages), as POSIX
/// says and glibc's `posix_fallocate` returns too: not retried, so a signal can
/// stop the call; the hint says it can be called again with the same range.
///
/// # References
///  - [Linux]
///
/// [Linux]: https://man7.org/linux/man-pages/man2/fallocate.2.html
#[doc(alias = "fallocate")]
pub fn fallocate_mode<Fd: AsFd>(fd: Fd, mode: FallocateMode, offset: i64, len: i64) -> Result<()> {
    let call = match mode {
        FallocateMode::Allocate => "posix_fallocate",
        _ => "fallocate",
    };
    // No "0 means to the end of the file" here, unlike fadvise: the hint says so.
    if len <= 0 {
        let what = match len {
            0 => "length is zero".to_string(),
            _ => format!("length {len} is negative"),
        };
        return Err(Error::invalid(call, what).with_hint(
            "POSIX requires a positive length (the number of bytes from offset); \
             skip the call for an empty range",
        ));
    }
    // POSIX: EFBIG when offset + len exceeds the maximum file size, which an off_t
    // overflow does on every filesystem: the kernel says so, after its own checks
    // (a descriptor not open for writing is EBADF first).
    let overflows = offset >= 0 && len > 0 && offset.checked_add(len).is_none();
    let (offset, len) = if overflows {
        (offset as u64, len as u64)
    } else {
        check_range(call, offset, len)?
    };
    let fd = fd.as_fd();
    rustix::fs::fallocate(fd, mode.flags(), offset, len).map_err(|e| {
        let err = Error::from_errno(call, e.raw_os_error())
            .with_message(format!("{} on {offset}+{len}", mode.name()));
        match err.kind() {
            // POSIX's ENODEV: "does not refer to a regular file"; nothing is
            // missing, the call does not apply to this kind of file.
            _ if e == rustix::io::Errno::NODEV => err.with_kind(ErrorKind::Unsupported).with_hint(
                "fallocate applies to regular files and block devices, not to character \
                     devices or sockets",
            ),
            // A block device has every block allocated and no size to keep:
            // Linux takes only hole punching (and zeroing) on one.
            ErrorKind::Unsupported if file_type(fd) == Some(libc::S_IFBLK) => err.with_hint(
                "a block device takes only FallocateMode::PunchHole (its blocks are all \
                 allocated already, and its size is fixed)",
            ),
            ErrorKind::Unsupported if mode == FallocateMode::Allocate => err.with_hint(
                "this filesystem has no fallocate (ext4, xfs, btrfs and tmpfs have it); \
                 advise::fallocate_or_fill writes zeros into the range instead, as glibc's \
                 posix_fallocate does",
            ),
            ErrorKind::Unsupported => err.with_hint(
                "this filesystem does not support the mode; ext4, xfs, btrfs and tmpfs do",
            ),
            // The kernel checks for write access before the file type: opening
            // a directory for writing is impossible, and for any other kind
            // of file but a regular file or a block device it only trades the
            // EBADF for ESPIPE or ENODEV.
            ErrorKind::BadFd => err.with_hint(match file_type(fd) {
                Some(libc::S_IFDIR) => {
                    "fallocate applies to regular files and block devices, not to directories"
                }
                Some(libc::S_IFIFO) => {
                    "fallocate applies to regular files and block devices, not to a pipe or FIFO"
                }
                Some(libc::S_IFCHR) => {
                    "fallocate applies to regular files and block devices, not to a character \
                     device"
                }
                Some(libc::S_IFSOCK) => {
                    "fallocate applies to regular files and block devices, not to a socket"
                }
                _ => "open the file for writing (O_WRONLY or O_RDWR)",
            }),
            _ if e == rustix::io::Errno::SPIPE => {
                err.with_hint("fallocate applies to regular files, not pipes or FIFOs")
            }
            _ if e == rustix::io::Errno::FBIG => err.with_hint(efbig_hint(fd, offset, len)),
            _ if e == rustix::io::Errno::INVAL && file_type(fd) == Some(libc::S_IFBLK) => {
                err.with_hint(block_device_einval_hint(fd))
            }
            _ if e == rustix::io::Errno::PERM => err.with_hint(eperm_hint(fd)),
            // POSIX: "a signal was caught during execution". Not retried here:
            // the caller's handler may want to act (stop a long allocation).
            _ if e == rustix::io::Errno::INTR => err.with_hint(
                "a signal arrived while the filesystem was allocating the range (tmpfs checks \
                 between pages and gives back what the call allocated); nothing is lost: call \
                 it again with the same range (loop while ErrorKind::Interrupted), or block \
                 the signal around the call. posixrt does not retry by itself, since POSIX \
                 has posix_fallocate fail with EINTR so that a signal can stop it",
            ),
            _ if e == rustix::io::Errno::NOSPC => err.with_hint(
                "the filesystem has no room for the range (see df; on tmpfs, its size= mount \
                 option): free space, or allocate less",
            ),
            _ => err,
        }
    })
}

/// Why `fallocate` says EFBIG: the range ends past this process's file size
/// limit (`RLIMIT_FSIZE`, for which the kernel also raises SIGXFSZ), or past the
/// filesystem's maximum file size. The kernel checks the latter first (and
/// raises no signal for it), so a range past both is put down to the
/// filesystem: raising the limit would not help.
fn efbig_hint(fd: std::os::fd::BorrowedFd<'_>, offset: u64, len: u64) -> String {
    let fs = "offset + len exceeds the filesystem's maximum file size";
    let end = match offset.checked_add(len) {
        Some(end) if end <= i64::MAX as u64 => end,
        _ => return fs.to_string(),
    };
    if past_filesystem_max(fd, end) {
        return fs.to_string();
    }
    match rustix::process::getrlimit(rustix::process::Resource::Fsize).current {
        Some(limit) if end > limit => format!(
            "offset + len ({end}) exceeds this process's file size limit RLIMIT_FSIZE \
             ({limit} bytes, see ulimit -f; the kernel also sent SIGXFSZ, which kills the \
             process unless ignored or caught): raise it with setrlimit, or allocate less \
             (it may exceed the filesystem's maximum file size too)"
        ),
        _ => fs.to_string(),
    }
}

/// Whether `end` lies past the largest size the filesystem allows `fd`'s
/// regular file (`s_maxbytes`, the limit `fallocate` checks first): `lseek`
/// refuses to go there (EINVAL). Asked of the file opened again for reading
/// through `/proc/self/fd`, so the caller's file position does not move, even
/// for a moment; `false` where it cannot be asked (another kind of file, or no
/// permission to read it).
fn past_filesystem_max(fd: std::os::fd::BorrowedFd<'_>, end: u64) -> bool {
    use rustix::fs::{Mode, OFlags, SeekFrom};
    use std::os::fd::AsRawFd;
    if file_type(fd) != Some(libc::S_IFREG) {
        return false;
    }
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY;
    match rustix::fs::open(path.as_str(), flags, Mode::empty()) {
        Ok(probe) => rustix::fs::seek(&probe, SeekFrom::Start(end))
            .is_err_and(|e| e == rustix::io::Errno::INVAL),
        Err(_) => false,
    }
}

/// Why `fallocate` on a block device says EINVAL to arguments POSIX accepts:
/// Linux wants the range aligned to the device's logical block size and
/// starting inside the device. The figures come from `BLKSSZGET` and sysfs.
fn block_device_einval_hint(fd: std::os::fd::BorrowedFd<'_>) -> String {
    let block = rustix::fs::ioctl_blksszget(fd)
        .map(|b| format!(" ({b} bytes here)"))
        .unwrap_or_default();
    let size = rustix::fs::fstat(fd)
        .ok()
        .and_then(|st| {
            let (major, minor) = (rustix::fs::major(st.st_rdev), rustix::fs::minor(st.st_rdev));
            std::fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/size")).ok()
        })
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map(|sectors| format!(" ({} bytes here)", sectors.saturating_mul(512)))
        .unwrap_or_default();
    format!(
        "on a block device, offset and len must be multiples of its logical block size{block}, \
         and offset must lie inside the device{size}"
    )
}

/// The kind of file `fd` is (`S_IFMT` bits), if `fstat` answers.
fn file_type(fd: std::os::fd::BorrowedFd<'_>) -> Option<libc::mode_t> {
    rustix::fs::fstat(fd)
        .ok()
        .map(|st| st.st_mode & libc::S_IFMT)
}

/// Why `fallocate` says EPERM: the inode attribute that forbids it (an immutable
/// file takes no change at all; an append-only one takes only `Allocate` and
/// `KeepSize`), or, when the file has neither, a seal (memfd `F_SEAL_*`).
fn eperm_hint(fd: std::os::fd::BorrowedFd<'_>) -> &'static str {
    use rustix::fs::IFlags;
    match rustix::fs::ioctl_getflags(fd) {
        Ok(f) if f.contains(IFlags::IMMUTABLE) => {
            "the file is immutable (the 'i' attribute, see lsattr): nothing may change it; \
             clear the attribute with chattr -i (needs CAP_LINUX_IMMUTABLE)"
        }
        Ok(f) if f.contains(IFlags::APPEND) => {
            "the file is append-only (the 'a' attribute, see lsattr): only \
             FallocateMode::Allocate and KeepSize apply to it; clear the attribute with \
             chattr -a (needs CAP_LINUX_IMMUTABLE)"
        }
        Ok(_) => {
            "the file is neither immutable nor append-only (lsattr): a seal refuses the \
             change (memfd F_SEAL_WRITE, F_SEAL_GROW; see fcntl F_GET_SEALS), or a security \
             module does"
        }
        Err(_) => {
            "the file is immutable or append-only (check with lsattr; chattr -i or chattr -a \
             clears it), or sealed (memfd F_SEAL_WRITE, F_SEAL_GROW)"
        }
    }
}
