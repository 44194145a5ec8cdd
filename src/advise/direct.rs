//! The alignment O_DIRECT I/O needs on a given file.

use std::os::fd::AsFd;

use super::buf::AlignedBuf;
use crate::{Error, ErrorKind, Result};

/// Where a [`DirectIoAlignment`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AlignmentSource {
    /// `statx(STATX_DIOALIGN)` (Linux 6.1+, filesystems that report it): exact.
    Statx,
    /// `ioctl(BLKSSZGET)` on the block device holding the file (or the file, if it
    /// is a block device), or the same figure from sysfs: the logical block size, used for both memory and offset
    /// alignment, which is what O_DIRECT needed before Linux 6.1.
    BlockDevice,
    /// The file is on tmpfs, whose O_DIRECT (Linux 6.6+) goes through the page
    /// cache: no alignment is needed (both are 1).
    Tmpfs,
}

/// The alignment rules of O_DIRECT I/O on one file.
///
/// With O_DIRECT, the buffer address must be a multiple of
/// [`mem_align`](DirectIoAlignment::mem_align), and the file offset and the length a
/// multiple of [`offset_align`](DirectIoAlignment::offset_align); otherwise the read
/// or write fails with EINVAL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DirectIoAlignment {
    /// Required alignment of the buffer address, in bytes.
    pub mem_align: usize,
    /// Required alignment of the file offset and of the length, in bytes.
    pub offset_align: usize,
    /// How it was found.
    pub source: AlignmentSource,
}

/// Finds the alignment O_DIRECT I/O on `fd` needs.
///
/// Asks `statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN)` first (`stx_dio_mem_align`,
/// `stx_dio_offset_align`). Where the kernel or filesystem does not report it, falls
/// back to the logical block size of the underlying block device (`BLKSSZGET` on
/// the file itself if it is a block device, else on `/dev/block/MAJOR:MINOR`, or
/// `/sys/dev/block/MAJOR:MINOR/queue/logical_block_size` where there is no such
/// node).
/// A file on tmpfs, which reports none and has no block device, needs no
/// alignment where tmpfs takes O_DIRECT at all (Linux 6.6+). A directory
/// answers for the files on its filesystem; where no block device answers for
/// it (overlayfs, btrfs: an anonymous device number), it answers as an unnamed
/// file created in it (`O_TMPFILE`, which needs write permission there and
/// leaves nothing behind; on overlayfs it copies the directory up, as creating
/// any file there would).
///
/// Errors: [`Unsupported`](crate::ErrorKind::Unsupported) if the file is a pipe,
/// FIFO, socket or character device (never reopened), if statx reports that the
/// file does not support O_DIRECT at all (both alignments zero), if the file is
/// on a tmpfs that refuses O_DIRECT (before Linux 6.6), or if there is no block
/// device to ask (e.g. a network or FUSE filesystem on an old kernel; for a
/// directory, when no file can be created in it to ask either).
///
/// ```
/// use posixrt::advise::direct_io_alignment;
///
/// let f = std::fs::File::open(std::env::temp_dir())?;
/// match direct_io_alignment(&f) {
///     Ok(a) => println!("O_DIRECT here: buffers aligned to {}, offsets to {}", a.mem_align, a.offset_align),
///     Err(e) => println!("no O_DIRECT here: {e}"),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # References
///  - [Linux `statx`](https://man7.org/linux/man-pages/man2/statx.2.html) (`STATX_DIOALIGN`)
///  - [Linux `open`](https://man7.org/linux/man-pages/man2/open.2.html) (O_DIRECT)
///  - [Linux `ioctl`](https://man7.org/linux/man-pages/man2/ioctl.2.html) (`BLKSSZGET`)
pub fn direct_io_alignment<Fd: AsFd>(fd: Fd) -> Result<DirectIoAlignment> {
    use rustix::fs::{AtFlags, StatxFlags};
    let fd = fd.as_fd();
    match rustix::fs::statx(fd, "", AtFlags::EMPTY_PATH, StatxFlags::DIOALIGN) {
        Ok(st) if st.stx_mask & StatxFlags::DIOALIGN.bits() != 0 => {
            if st.stx_dio_mem_align == 0 || st.stx_dio_offset_align == 0 {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    "statx",
                    "the file does not support O_DIRECT (STATX_DIOALIGN reports 0)",
                )
                .with_hint(
                    "use buffered I/O with fadvise, or put the file on ext4, xfs or a block device",
                ));
            }
            return Ok(DirectIoAlignment {
                mem_align: st.stx_dio_mem_align as usize,
                offset_align: st.stx_dio_offset_align as usize,
                source: AlignmentSource::Statx,
            });
        }
        Ok(_) => {}
        Err(e) if e == rustix::io::Errno::BADF => {
            return Err(
                Error::from_errno("statx", e.raw_os_error()).with_hint("the descriptor is closed")
            )
        }
        Err(_) => {} // ENOSYS etc.: fall back
    }
    // Pipes, FIFOs, sockets and character devices never take O_DIRECT, and must
    // not reach the fallbacks: reopening a FIFO blocks until a writer comes, and
    // reopening a device can have effects of its own. (A directory stands for
    // the files on its filesystem.)
    let st = rustix::fs::fstat(fd).map_err(|e| Error::from_errno("fstat", e.raw_os_error()))?;
    let file_type = st.st_mode & libc::S_IFMT;
    if matches!(file_type, libc::S_IFIFO | libc::S_IFSOCK | libc::S_IFCHR) {
        return Err(Error::new(
            ErrorKind::Unsupported,
            "open(O_DIRECT)",
            "O_DIRECT applies to regular files and block devices only",
        )
        .with_hint("use buffered I/O on pipes, FIFOs, sockets and character devices"));
    }
    if file_type != libc::S_IFBLK {
        if let Some(a) = tmpfs_alignment(fd)? {
            return Ok(a);
        }
    }
    match block_device_alignment(fd) {
        Err(e) if file_type == libc::S_IFDIR && e.kind() == ErrorKind::Unsupported => {
            probe_file_alignment(fd).ok_or(e)
        }
        r => r,
    }
}

/// The answer for an unnamed file created in directory `dir` (`O_TMPFILE`, gone
/// when closed), for a directory no device answers for: overlayfs and btrfs
/// give their directories an anonymous `st_dev`, while statx answers for the
/// files in them. `None` if no such file can be created (no write permission, a
/// read-only or `O_TMPFILE`-less filesystem) or it has no answer either.
fn probe_file_alignment(dir: std::os::fd::BorrowedFd<'_>) -> Option<DirectIoAlignment> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC;
    let probe = rustix::fs::openat(dir, ".", flags, Mode::from_raw_mode(0o600)).ok()?;
    // A regular file: this does not come back here.
    direct_io_alignment(&probe).ok()
}

/// `Some` for a file on tmpfs that takes O_DIRECT (asked by opening it again
/// with O_DIRECT through `/proc/self/fd`, for reading, or for writing where
/// reading is not allowed); `None` for a file elsewhere. Where that open fails
/// for another reason than EINVAL (no permission either way), the kernel
/// version answers, as for a directory. A directory never
/// opens with O_DIRECT, whatever its filesystem: for one on tmpfs, which stands
/// for the files in it, the answer is the kernel's (tmpfs files take O_DIRECT
/// since Linux 6.6).
fn tmpfs_alignment(fd: std::os::fd::BorrowedFd<'_>) -> Result<Option<DirectIoAlignment>> {
    /// `TMPFS_MAGIC` of `<linux/magic.h>`.
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    // (`f_type` is an i64 on x86_64, narrower on some other targets.)
    #[allow(clippy::unnecessary_cast)]
    match rustix::fs::fstatfs(fd) {
        Ok(st) if st.f_type as i64 == TMPFS_MAGIC => {}
        _ => return Ok(None),
    }
    let tmpfs = Ok(Some(DirectIoAlignment {
        mem_align: 1,
        offset_align: 1,
        source: AlignmentSource::Tmpfs,
    }));
    // Where the kernel cannot be asked by opening the file, its version answers.
    let by_version = || match kernel_version() {
        Some(v) if v >= (6, 6) => tmpfs.clone(),
        Some(_) => Err(tmpfs_refuses()),
        None => Ok(None),
    };
    let is_dir = rustix::fs::fstat(fd).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR);
    if is_dir {
        return by_version();
    }
    use rustix::fs::OFlags;
    use std::os::fd::AsRawFd;
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    let open = |access: OFlags| {
        let flags = access | OFlags::DIRECT | OFlags::CLOEXEC;
        rustix::fs::open(path.as_str(), flags, rustix::fs::Mode::empty())
    };
    // For reading first, which opens a file without effects of its own; a file
    // the caller may write but not read (mode 0200, or a descriptor opened
    // write-only) is opened for writing, as the caller opened it (nothing is
    // written; an inotify watcher sees an open and a close-after-write).
    let reopened = match open(OFlags::RDONLY) {
        Err(e) if e == rustix::io::Errno::ACCESS => open(OFlags::WRONLY),
        r => r,
    };
    // A file the caller may neither read nor write (held through O_PATH) is
    // still on tmpfs: no block device answers for it.
    match reopened {
        Ok(_) => tmpfs,
        Err(e) if e == rustix::io::Errno::INVAL => Err(tmpfs_refuses()),
        Err(_) => by_version(),
    }
}

/// A tmpfs that refuses O_DIRECT (before Linux 6.6).
fn tmpfs_refuses() -> Error {
    Error::new(
        ErrorKind::Unsupported,
        "open(O_DIRECT)",
        "the file is on tmpfs, which takes O_DIRECT only since Linux 6.6",
    )
    .with_hint("use buffered I/O, or put the file on ext4, xfs or a block device")
}

/// The running kernel's major and minor version (`uname -r`).
fn kernel_version() -> Option<(u32, u32)> {
    let uts = rustix::system::uname();
    let release = uts.release().to_str().ok()?;
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

fn block_device_alignment(fd: std::os::fd::BorrowedFd<'_>) -> Result<DirectIoAlignment> {
    let st = rustix::fs::fstat(fd).map_err(|e| Error::from_errno("fstat", e.raw_os_error()))?;
    let from = |size: u32| DirectIoAlignment {
        mem_align: size as usize,
        offset_align: size as usize,
        source: AlignmentSource::BlockDevice,
    };
    let file_type = st.st_mode & libc::S_IFMT;
    if file_type == libc::S_IFBLK {
        let size = rustix::fs::ioctl_blksszget(fd)
            .map_err(|e| Error::from_errno("ioctl(BLKSSZGET)", e.raw_os_error()))?;
        return Ok(from(size));
    }
    let dev = st.st_dev;
    let (major, minor) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    let path = format!("/dev/block/{major}:{minor}");
    let dev_file = match std::fs::File::open(&path) {
        Ok(f) => f,
        // No device node (a container without /dev/block): sysfs names the
        // same device and its logical block size.
        Err(e) => {
            return sysfs_logical_block_size(major, minor)
                .map(from)
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::Unsupported,
                        "ioctl(BLKSSZGET)",
                        format!(
                            "statx gives no STATX_DIOALIGN, {path} cannot be opened ({e}) and \
                             /sys/dev/block/{major}:{minor} names no block device"
                        ),
                    )
                    .with_hint(
                        "the file is not on a local block device (network, FUSE, overlay?); \
                         O_DIRECT may not work here",
                    )
                })
        }
    };
    let size = rustix::fs::ioctl_blksszget(&dev_file)
        .map_err(|e| Error::from_errno("ioctl(BLKSSZGET)", e.raw_os_error()))?;
    Ok(from(size))
}

/// The logical block size of block device `major:minor` from sysfs (what
/// `BLKSSZGET` answers): its own `queue/`, or its disk's for a partition.
fn sysfs_logical_block_size(major: u32, minor: u32) -> Option<u32> {
    let dir = format!("/sys/dev/block/{major}:{minor}");
    ["queue/logical_block_size", "../queue/logical_block_size"]
        .iter()
        .find_map(|f| {
            std::fs::read_to_string(format!("{dir}/{f}"))
                .ok()?
                .trim()
                .parse()
                .ok()
        })
        .filter(|&n: &u32| n > 0)
}

impl DirectIoAlignment {
    /// Allocates a zeroed buffer of `len` bytes aligned for O_DIRECT on this file.
    ///
    /// `len` must be a multiple of [`offset_align`](DirectIoAlignment::offset_align)
    /// ([`InvalidInput`](crate::ErrorKind::InvalidInput) otherwise; see
    /// [`round_up`](DirectIoAlignment::round_up)).
    pub fn alloc(&self, len: usize) -> Result<AlignedBuf> {
        // An alignment of 0 (only in a value built by hand) is none, as in
        // `check` and `round_up`.
        if len % self.offset_align.max(1) != 0 {
            return Err(Error::invalid(
                "posix_memalign",
                format!(
                    "length {len} is not a multiple of the O_DIRECT block size {}",
                    self.offset_align
                ),
            )
            .with_hint("round the length up with DirectIoAlignment::round_up"));
        }
        let word = std::mem::size_of::<*const ()>();
        AlignedBuf::new(len, self.mem_align.max(word))
    }

    /// `len` rounded up to a multiple of [`offset_align`](DirectIoAlignment::offset_align),
    /// or `None` on overflow.
    pub fn round_up(&self, len: usize) -> Option<usize> {
        let a = self.offset_align.max(1);
        len.checked_add(a - 1).map(|v| v / a * a)
    }

    /// Checks that a read or write of `buf` at file offset `offset` meets the rules:
    /// [`InvalidInput`](crate::ErrorKind::InvalidInput) naming the first rule broken.
    /// An empty buffer passes at any address and offset: the kernel returns 0
    /// for a 0-byte transfer before it looks at the alignment.
    pub fn check(&self, offset: u64, buf: &[u8]) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let (m, o) = (self.mem_align.max(1), self.offset_align.max(1));
        if buf.as_ptr() as usize % m != 0 {
            return Err(Error::invalid(
                "O_DIRECT",
                format!("buffer address {:p} is not aligned to {m}", buf.as_ptr()),
            )
            .with_hint("allocate it with DirectIoAlignment::alloc"));
        }
        if offset % o as u64 != 0 {
            return Err(Error::invalid(
                "O_DIRECT",
                format!("file offset {offset} is not a multiple of {o}"),
            )
            .with_hint(format!(
                "start at a multiple of {o} (here {}) and skip the leading bytes in the buffer",
                offset / o as u64 * o as u64
            )));
        }
        if buf.len() % o != 0 {
            return Err(Error::invalid(
                "O_DIRECT",
                format!("length {} is not a multiple of {o}", buf.len()),
            )
            .with_hint("round the length up with DirectIoAlignment::round_up"));
        }
        Ok(())
    }
}
