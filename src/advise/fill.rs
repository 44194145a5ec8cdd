//! [`fallocate_or_fill`]: `posix_fallocate` as glibc gives it, which writes zeros
//! where the filesystem has no `fallocate` (NFS before 4.2, many FUSE
//! filesystems, ramfs, ext4 files without extents).

use std::os::fd::{AsFd, BorrowedFd};

use rustix::fs::OFlags;
use rustix::io::Errno;

use super::fallocate::{fallocate_mode, FallocateMode};
use crate::{Error, Result};

/// How [`fallocate_or_fill`] made sure the range is allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Allocation {
    /// The filesystem allocated the blocks itself (`fallocate(2)`): no data was
    /// written.
    Filesystem,
    /// The filesystem has no `fallocate`, so a zero byte was written into each
    /// block of the range that read as zero (a hole, or past the end of the
    /// file), as glibc's `posix_fallocate` does; `writes` is how many such
    /// one-byte writes were made (0 when every block already held data).
    ZeroFilled {
        /// The number of one-byte writes.
        writes: u64,
    },
}

/// `posix_fallocate(fd, offset, len)` with glibc's fallback: [`fallocate()`],
/// and where the filesystem has no `fallocate` (EOPNOTSUPP) on a regular file,
/// the blocks are allocated by writing a zero byte into each block of the range
/// that reads as zero, so that POSIX's promise holds on any filesystem: the
/// space is allocated and the file is at least `offset + len` bytes long.
///
/// The fallback never changes what the file reads as: inside the file it reads
/// one byte of each block first and writes a zero only where that byte is zero
/// already (a block with data is allocated), past the end of the file it writes
/// zeros, which is what the range reads as there. It is slower than the
/// filesystem's `fallocate` (two small system calls per block of up to 4 KiB),
/// and, as glibc's, **racy**: another process writing into the range, or
/// extending the file, at the same time may have a byte it wrote replaced by a
/// zero. Call it before others write to the range. The result says which way
/// the space was reserved.
///
/// Errors: those of [`fallocate()`] (bad input, ENOSPC, EFBIG, a descriptor not
/// open for writing, ...), with EOPNOTSUPP left only for a file that is not a
/// regular file; for the fallback,
/// [`BadFd`](crate::ErrorKind::BadFd) for a descriptor opened with `O_APPEND`
/// (a positioned write would append) or write-only where the range starts
/// inside the file (its bytes must be read first), EFBIG
/// ([`Other`](crate::ErrorKind::Other)) if `offset + len` exceeds
/// `RLIMIT_FSIZE`; each is reported before anything is written, with a hint.
/// An error from a write (ENOSPC, EDQUOT, EIO) can leave part of the range
/// allocated and the file grown to the last block written, as with glibc;
/// through an `O_DIRECT` descriptor the fallback's one-byte I/O is EINVAL
/// where the filesystem holds O_DIRECT to an alignment (the hint says so).
///
/// ```
/// use posixrt::advise::{fallocate_or_fill, Allocation};
///
/// let f = tempfile_in_tmp()?;
/// match fallocate_or_fill(&f, 0, 1 << 20)? {
///     Allocation::Filesystem => {}
///     Allocation::ZeroFilled { writes } => println!("no fallocate here: {writes} writes"),
/// }
/// assert_eq!(f.metadata()?.len(), 1 << 20);
/// # fn tempfile_in_tmp() -> std::io::Result<std::fs::File> {
/// #     let p = std::env::temp_dir().join(format!("posixrt-doc-fill-{}", std::process::id()));
/// #     let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p)?;
/// #     std::fs::remove_file(&p)?;
/// #     Ok(f)
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # References
///  - [POSIX]
///  - [Linux `posix_fallocate`]
///
/// [`fallocate()`]: super::fallocate()
/// [POSIX]: https://pubs.opengroup.org/onlinepubs/9799919799/functions/posix_fallocate.html
/// [Linux `posix_fallocate`]: https://man7.org/linux/man-pages/man3/posix_fallocate.3.html
#[doc(alias = "posix_fallocate")]
pub fn fallocate_or_fill<Fd: AsFd>(fd: Fd, offset: i64, len: i64) -> Result<Allocation> {
    let fd = fd.as_fd();
    match fallocate_mode(fd, FallocateMode::Allocate, offset, len) {
        Ok(()) => Ok(Allocation::Filesystem),
        // EOPNOTSUPP comes after the kernel's checks of the range, the access
        // mode and the maximum file size: what is left is the filesystem's
        // want of fallocate.
        Err(e)
            if e.errno() == Some(libc::EOPNOTSUPP)
                && offset >= 0
                && len > 0
                && offset.checked_add(len).is_some()
                && is_regular(fd) =>
        {
            fill(fd, offset as u64, len as u64).map(|writes| Allocation::ZeroFilled { writes })
        }
        Err(e) => Err(e),
    }
}

const CALL: &str = "posix_fallocate";

fn is_regular(fd: BorrowedFd<'_>) -> bool {
    rustix::fs::fstat(fd).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFREG)
}

/// The emulation: a zero byte into each block of `offset..offset + len` whose
/// sampled byte reads as zero (or lies past the end of the file). Returns the
/// number of bytes written. `offset + len` must not overflow `off_t` (the
/// caller's checks ensure it).
fn fill(fd: BorrowedFd<'_>, offset: u64, len: u64) -> Result<u64> {
    let end = offset + len;
    let what = || format!("writing zeros (the filesystem has no fallocate) on {offset}+{len}");
    let flags = rustix::fs::fcntl_getfl(fd)
        .map_err(|e| Error::from_errno(CALL, e.raw_os_error()).with_message(what()))?;
    if flags.contains(OFlags::APPEND) {
        return Err(Error::from_errno(CALL, libc::EBADF)
            .with_message(what())
            .with_hint(
                "the filesystem has no fallocate, and the zero-fill fallback cannot write at \
                 an offset through an O_APPEND descriptor (each write would append): open the \
                 file without O_APPEND for this call",
            ));
    }
    let size = rustix::fs::fstat(fd)
        .map_err(|e| Error::from_errno(CALL, e.raw_os_error()).with_message(what()))?
        .st_size as u64;
    if flags & OFlags::RWMODE == OFlags::WRONLY && offset < size {
        return Err(Error::from_errno(CALL, libc::EBADF)
            .with_message(what())
            .with_hint(
                "the filesystem has no fallocate, and the zero-fill fallback must read the \
                 range inside the file to leave its data alone: open the file read-write \
                 (O_RDWR)",
            ));
    }
    if let Some(limit) = rustix::process::getrlimit(rustix::process::Resource::Fsize).current {
        if end > limit {
            return Err(Error::from_errno(CALL, libc::EFBIG)
                .with_message(what())
                .with_hint(format!(
                    "offset + len ({end}) exceeds this process's file size limit RLIMIT_FSIZE \
                     ({limit} bytes, see ulimit -f); nothing was written: raise it with \
                     setrlimit, or allocate less"
                )));
        }
    }
    let step = block_step(fd);
    let mut writes = 0;
    let mut block = offset / step;
    loop {
        let block_end = ((block + 1) * step).min(end);
        // The last byte of the block inside the range: the last block's is
        // `end - 1`, so the file ends up at least `end` bytes long.
        let pos = block_end - 1;
        if pos < size && !reads_as_zero(fd, pos).map_err(|e| io_error(e, pos, flags, &what))? {
            // A byte of data: the block is allocated.
        } else {
            write_zero(fd, pos).map_err(|e| io_error(e, pos, flags, &what))?;
            writes += 1;
        }
        if block_end == end {
            return Ok(writes);
        }
        block += 1;
    }
}

/// The spacing of the writes: the filesystem's block size, at most 4096 (NFS
/// reports the server's much larger transfer size, which would leave holes),
/// 512 if it says nothing. A smaller step than the real block size only costs
/// more writes.
fn block_step(fd: BorrowedFd<'_>) -> u64 {
    let bsize = rustix::fs::fstatfs(fd).map_or(0, |st| st.f_bsize);
    match u64::try_from(bsize) {
        Ok(0) | Err(_) => 512,
        Ok(b) => b.min(4096),
    }
}

/// Whether the byte at `pos` reads as zero (a byte past the end of a file that
/// shrank meanwhile does).
fn reads_as_zero(fd: BorrowedFd<'_>, pos: u64) -> std::result::Result<bool, Errno> {
    let mut byte = [0u8; 1];
    loop {
        match rustix::io::pread(fd, &mut byte, pos) {
            Ok(0) => return Ok(true),
            Ok(_) => return Ok(byte[0] == 0),
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
        }
    }
}

fn write_zero(fd: BorrowedFd<'_>, pos: u64) -> std::result::Result<(), Errno> {
    loop {
        match rustix::io::pwrite(fd, &[0u8], pos) {
            Ok(1) => return Ok(()),
            Ok(_) | Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
        }
    }
}

fn io_error(e: Errno, pos: u64, flags: OFlags, what: &dyn Fn() -> String) -> Error {
    let err =
        Error::from_errno(CALL, e.raw_os_error()).with_message(format!("{} (at {pos})", what()));
    match e {
        Errno::NOSPC | Errno::DQUOT => err.with_hint(
            "the filesystem (or your quota) has no room for the range: part of it may be \
             allocated now and the file grown to the last block written; free space, or \
             allocate less",
        ),
        Errno::FBIG => err.with_hint(
            "offset + len exceeds the filesystem's maximum file size; part of the range may \
             be allocated now",
        ),
        Errno::INVAL if flags.contains(OFlags::DIRECT) => err.with_hint(
            "the descriptor has O_DIRECT, and the zero-fill fallback reads and writes single \
             bytes, which this filesystem's O_DIRECT refuses: call it through a descriptor \
             without O_DIRECT",
        ),
        _ => err,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::fs::{FileExt, MetadataExt};

    /// A scratch file on the disk filesystem of the test's temp dir, its name
    /// removed at once.
    fn scratch(tag: &str) -> std::fs::File {
        let p = std::env::temp_dir().join(format!("posixrt-fill-{tag}-{}", std::process::id()));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&p)
            .unwrap();
        std::fs::remove_file(&p).unwrap();
        f
    }

    fn hole_at(f: &std::fs::File, from: u64) -> u64 {
        rustix::fs::seek(f, rustix::fs::SeekFrom::Hole(from)).unwrap()
    }

    #[test]
    fn fill_keeps_data_fills_holes_and_grows_the_file() {
        let f = scratch("holes");
        let fd = f.as_fd();
        let step = block_step(fd);
        let b = 64 * 1024u64; // wider than any block step
                              // Data in block 0 (all of it non-zero), a hole, a byte of data at 3b.
        let head: Vec<u8> = (0..b).map(|i| (i % 200) as u8 + 1).collect();
        f.write_all_at(&head, 0).unwrap();
        f.write_all_at(b"x", 3 * b).unwrap();
        let blocks_before = f.metadata().unwrap().blocks();
        let writes = fill(fd, 0, 6 * b).unwrap();
        assert_eq!(f.metadata().unwrap().len(), 6 * b);
        let mut all = vec![0xEEu8; 6 * b as usize];
        f.read_exact_at(&mut all, 0).unwrap();
        assert_eq!(&all[..b as usize], &head[..], "the data is untouched");
        assert_eq!(all[3 * b as usize], b'x');
        let zeros = all
            .iter()
            .enumerate()
            .filter(|&(i, _)| i as u64 >= b && i as u64 != 3 * b)
            .all(|(_, &v)| v == 0);
        assert!(zeros, "the rest reads as zeros");
        // No write into the data of block 0; one into each block of the rest
        // (the byte sampled at 3b's block is its last one, a zero).
        assert_eq!(writes, 5 * b / step);
        // Allocated: the file has no hole left, and more blocks.
        if hole_at(&f, 0) == 6 * b {
            assert!(f.metadata().unwrap().blocks() > blocks_before);
        } else {
            panic!("a hole remains at {}", hole_at(&f, 0));
        }
    }

    #[test]
    fn an_unaligned_range_reaches_every_block_it_touches() {
        let f = scratch("unaligned");
        let fd = f.as_fd();
        let step = block_step(fd);
        // Two bytes straddling the first block boundary, past the end of an
        // empty file: both blocks are written, and the size is offset + len.
        let writes = fill(fd, step - 1, 2).unwrap();
        assert_eq!(writes, 2);
        assert_eq!(f.metadata().unwrap().len(), step + 1);
        assert_eq!(hole_at(&f, 0), step + 1, "no hole before the end");
        // One byte: one write.
        let writes = fill(fd, 10 * step + 5, 1).unwrap();
        assert_eq!(writes, 1);
        assert_eq!(f.metadata().unwrap().len(), 10 * step + 6);
    }

    #[test]
    fn an_o_direct_descriptor_the_filesystem_holds_to_alignment_is_named() {
        use std::os::unix::fs::OpenOptionsExt;
        let f = scratch("direct");
        f.write_all_at(&[0u8; 8192], 0).unwrap();
        let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&f));
        let Ok(direct) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(&path)
        else {
            return; // no O_DIRECT here (tmpfs before Linux 6.6): nothing to refuse
        };
        let strict = crate::advise::direct_io_alignment(&f).is_ok_and(|a| a.offset_align > 1);
        let r = fill(direct.as_fd(), 0, 8192);
        if strict {
            let e = r.unwrap_err();
            assert_eq!(e.errno(), Some(libc::EINVAL), "{e}");
            assert!(e.hint().unwrap_or_default().contains("O_DIRECT"), "{e}");
        } else {
            // O_DIRECT that takes any alignment (tmpfs): the fill works.
            r.unwrap();
        }
    }

    #[test]
    fn a_range_past_rlimit_fsize_is_refused_before_any_write() {
        let f = scratch("fsize");
        f.write_all_at(b"abc", 0).unwrap();
        // In a child of its own: the limit is per process, and a write past it
        // raises SIGXFSZ, which would end the child (status, not exit code 0).
        // SAFETY: the child makes system calls and formats an error, then
        // `_exit`s; glibc's malloc is usable after fork.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let lim = libc::rlimit {
                rlim_cur: 4096,
                rlim_max: libc::RLIM_INFINITY,
            };
            // SAFETY: a plain system call on a valid struct.
            let set = unsafe { libc::setrlimit(libc::RLIMIT_FSIZE, &lim) } == 0;
            let ok =
                set && fill(f.as_fd(), 0, 8192).is_err_and(|e| {
                    e.errno() == Some(libc::EFBIG)
                        && e.hint().is_some_and(|h| h.contains("RLIMIT_FSIZE"))
                }) && fill(f.as_fd(), 0, 4096) == Ok(1);
            // SAFETY: ends the child without running the parent's handlers.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: waits for the child forked above.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "child status {status:#x}"
        );
        assert_eq!(
            f.metadata().unwrap().len(),
            4096,
            "only the range within the limit"
        );
    }

    #[test]
    fn append_and_write_only_descriptors_are_refused_before_any_write() {
        let f = scratch("append");
        f.write_all_at(b"abc", 0).unwrap();
        let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&f));
        let app = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        let e = fill(app.as_fd(), 0, 8192).unwrap_err();
        assert_eq!(e.errno(), Some(libc::EBADF), "{e}");
        assert!(e.hint().unwrap_or_default().contains("O_APPEND"), "{e}");
        let wo = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let e = fill(wo.as_fd(), 0, 8192).unwrap_err();
        assert!(e.hint().unwrap_or_default().contains("O_RDWR"), "{e}");
        assert_eq!(f.metadata().unwrap().len(), 3, "nothing was written");
        // Write-only is enough for a range past the end: nothing to read.
        assert_eq!(fill(wo.as_fd(), 3, 5).unwrap(), 1);
        assert_eq!(f.metadata().unwrap().len(), 8);
    }
}
