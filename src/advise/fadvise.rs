//! `posix_fadvise`: declare how a file will be read.

use std::num::NonZeroU64;
use std::os::fd::AsFd;

use super::range::check_range;
use crate::{Error, Result};

/// The access pattern declared with [`fadvise()`] (`POSIX_FADV_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Advice {
    /// `POSIX_FADV_NORMAL`: no particular pattern (the default read-ahead).
    Normal,
    /// `POSIX_FADV_SEQUENTIAL`: read from lower to higher offsets; Linux doubles the
    /// read-ahead window.
    Sequential,
    /// `POSIX_FADV_RANDOM`: random access; Linux turns read-ahead off.
    Random,
    /// `POSIX_FADV_NOREUSE`: the data is read once. Linux accepts it; since 6.3 it
    /// lets the page cache reclaim such pages first.
    NoReuse,
    /// `POSIX_FADV_WILLNEED`: start reading the range into the page cache now.
    WillNeed,
    /// `POSIX_FADV_DONTNEED`: the range will not be needed soon. Linux starts the
    /// write-back of its dirty pages without waiting for it, and drops the cached
    /// pages that are clean and wholly inside the range: pages still dirty or
    /// under write-back, and those the range only partly covers, stay cached
    /// (call [`fdatasync`](super::fdatasync) first, and advise whole pages, to
    /// drop them all).
    DontNeed,
}

impl Advice {
    /// Every advice kind, in `POSIX_FADV_*` order.
    pub const ALL: [Advice; 6] = [
        Advice::Normal,
        Advice::Sequential,
        Advice::Random,
        Advice::NoReuse,
        Advice::WillNeed,
        Advice::DontNeed,
    ];

    /// The C name, e.g. `"POSIX_FADV_SEQUENTIAL"`.
    pub fn name(self) -> &'static str {
        match self {
            Advice::Normal => "POSIX_FADV_NORMAL",
            Advice::Sequential => "POSIX_FADV_SEQUENTIAL",
            Advice::Random => "POSIX_FADV_RANDOM",
            Advice::NoReuse => "POSIX_FADV_NOREUSE",
            Advice::WillNeed => "POSIX_FADV_WILLNEED",
            Advice::DontNeed => "POSIX_FADV_DONTNEED",
        }
    }

    fn raw(self) -> rustix::fs::Advice {
        use rustix::fs::Advice as R;
        match self {
            Advice::Normal => R::Normal,
            Advice::Sequential => R::Sequential,
            Advice::Random => R::Random,
            Advice::NoReuse => R::NoReuse,
            Advice::WillNeed => R::WillNeed,
            Advice::DontNeed => R::DontNeed,
        }
    }
}

/// `posix_fadvise(fd, offset, len, advice)`: declares the access pattern for a
/// range of a file. `len == 0` means "to the end of the file", as in POSIX.
///
/// `offset` and `len` are `off_t` values as in C: negative ones are rejected with
/// [`InvalidInput`](crate::ErrorKind::InvalidInput) before the call. (For `len`
/// that is POSIX's and the kernel's EINVAL; a negative `offset` is no error in
/// POSIX and Linux takes it without complaint, but it names no byte of any
/// file, so posixrt refuses it rather than pass on advice that means nothing.) A range that runs past the largest `off_t` is advice
/// to the end of the file, as Linux takes it. A pipe or FIFO gives ESPIPE
/// ([`Other`](crate::ErrorKind::Other)); a descriptor that is not open for I/O
/// gives [`BadFd`](crate::ErrorKind::BadFd).
///
/// ```
/// use posixrt::advise::{fadvise, Advice};
///
/// let f = std::fs::File::open("/proc/self/exe")?;
/// fadvise(&f, 0, 0, Advice::Sequential)?;
/// fadvise(&f, 0, 0, Advice::NoReuse)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # References
///  - [POSIX]
///  - [Linux]
///
/// [POSIX]: https://pubs.opengroup.org/onlinepubs/9799919799/functions/posix_fadvise.html
/// [Linux]: https://man7.org/linux/man-pages/man2/posix_fadvise.2.html
#[doc(alias = "posix_fadvise")]
pub fn fadvise<Fd: AsFd>(fd: Fd, offset: i64, len: i64, advice: Advice) -> Result<()> {
    // A range that runs past the largest off_t is no error in POSIX, and Linux
    // takes it as "to the end of the file": say so with len 0.
    let len = if offset >= 0 && len > 0 && offset.checked_add(len).is_none() {
        0
    } else {
        len
    };
    let (offset, len) = check_range("posix_fadvise", offset, len)?;
    rustix::fs::fadvise(fd, offset, NonZeroU64::new(len), advice.raw()).map_err(|e| {
        let err = Error::from_errno("posix_fadvise", e.raw_os_error())
            .with_message(format!("{} on {offset}+{len}", advice.name()));
        match e {
            rustix::io::Errno::SPIPE => {
                // (Only a pipe or FIFO: Linux takes the advice on a socket or a
                // character device and does nothing with it.)
                err.with_hint("fadvise applies to files, not pipes or FIFOs")
            }
            rustix::io::Errno::BADF => err.with_hint(
                "the descriptor is closed or opened with O_PATH; open the file for reading",
            ),
            _ => err,
        }
    })
}
