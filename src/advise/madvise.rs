//! `posix_madvise` and Linux `madvise`: advice about memory the caller owns.

use super::buf::AlignedBuf;
use crate::{Error, ErrorKind, Result};

/// Advice for [`AlignedBuf::advise`] and [`madvise()`].
///
/// The first five are the POSIX kinds (`POSIX_MADV_*`); the rest are the Linux
/// `MADV_*` kinds that real-time code uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemAdvice {
    /// `POSIX_MADV_NORMAL`: no special treatment.
    Normal,
    /// `POSIX_MADV_SEQUENTIAL`: expect sequential access (aggressive read-ahead,
    /// early reclaim behind).
    Sequential,
    /// `POSIX_MADV_RANDOM`: expect random access (no read-ahead).
    Random,
    /// `POSIX_MADV_WILLNEED` / `MADV_WILLNEED`: the pages will be needed soon; the
    /// kernel may fault them in ahead of time.
    WillNeed,
    /// `POSIX_MADV_DONTNEED`, as glibc implements it on Linux: a pure hint that
    /// does nothing, because Linux's `MADV_DONTNEED` discards data. Use
    /// [`MemAdvice::DontNeed`] to actually release the pages.
    PosixDontNeed,
    /// Linux `MADV_DONTNEED`: release the pages now. On private anonymous memory
    /// (every [`AlignedBuf`]) the range reads back as **zeros** afterwards; the
    /// safe [`AlignedBuf::advise`] takes `&mut self` for that reason.
    DontNeed,
    /// Linux `MADV_HUGEPAGE`: back the range with transparent huge pages where
    /// possible (fewer TLB misses; needs THP in `madvise` or `always` mode).
    HugePage,
    /// Linux `MADV_NOHUGEPAGE`: do not use transparent huge pages for the range
    /// (avoids khugepaged collapse latency spikes).
    NoHugePage,
    /// Linux `MADV_DONTFORK`: a child created by `fork` does not get the range at
    /// all (no copy-on-write of large buffers or DMA memory). Only through the
    /// `unsafe` [`AlignedBuf::advise_dont_fork`] or [`madvise()`]: a forked child
    /// that touches the range, even by dropping its copy of the owner, crashes.
    DontFork,
    /// Linux `MADV_DOFORK`: undo [`MemAdvice::DontFork`].
    DoFork,
}

impl MemAdvice {
    /// Every kind.
    pub const ALL: [MemAdvice; 10] = [
        MemAdvice::Normal,
        MemAdvice::Sequential,
        MemAdvice::Random,
        MemAdvice::WillNeed,
        MemAdvice::PosixDontNeed,
        MemAdvice::DontNeed,
        MemAdvice::HugePage,
        MemAdvice::NoHugePage,
        MemAdvice::DontFork,
        MemAdvice::DoFork,
    ];

    /// The C name, e.g. `"MADV_HUGEPAGE"`.
    pub fn name(self) -> &'static str {
        match self {
            MemAdvice::Normal => "POSIX_MADV_NORMAL",
            MemAdvice::Sequential => "POSIX_MADV_SEQUENTIAL",
            MemAdvice::Random => "POSIX_MADV_RANDOM",
            MemAdvice::WillNeed => "POSIX_MADV_WILLNEED",
            MemAdvice::PosixDontNeed => "POSIX_MADV_DONTNEED",
            MemAdvice::DontNeed => "MADV_DONTNEED",
            MemAdvice::HugePage => "MADV_HUGEPAGE",
            MemAdvice::NoHugePage => "MADV_NOHUGEPAGE",
            MemAdvice::DontFork => "MADV_DONTFORK",
            MemAdvice::DoFork => "MADV_DOFORK",
        }
    }
}

/// `madvise(addr, len, advice)` on memory the caller vouches for.
///
/// `addr` must be page-aligned ([`InvalidInput`](crate::ErrorKind::InvalidInput)
/// otherwise); the kernel rounds `len` up to whole pages. `len == 0` succeeds
/// without a call; a range whose pages run past the end of the address space
/// is [`InvalidInput`](crate::ErrorKind::InvalidInput), whatever the advice. ENOMEM
/// where part of the range is not mapped is [`InvalidInput`](crate::ErrorKind::InvalidInput)
/// too (POSIX's meaning of it), and [`OutOfResources`](crate::ErrorKind::OutOfResources)
/// only where the range is mapped (the kernel short of memory, or the mapping
/// split past `vm.max_map_count`); EINVAL for
/// `HugePage` means the kernel has no transparent huge pages, and for
/// `DontNeed` that the range holds locked pages (`mlock`, `mlockall`), which
/// are not released.
///
/// # Safety
///
/// The whole pages covering `addr..addr + len` must be memory the caller owns
/// exclusively and may have changed under it:
/// - [`MemAdvice::DontNeed`] replaces the contents of private anonymous pages with
///   zeros (and re-reads file-backed ones), so no live reference may rely on them;
/// - [`MemAdvice::DontFork`] removes the pages from any child created by `fork`, so
///   no code in such a child may touch them (including destructors or the
///   allocator);
/// - the other kinds only change performance, but still apply to whole pages, so
///   the range must not share a page with memory whose advice you do not control.
///
/// # References
///  - [POSIX `posix_madvise`]
///  - [Linux `madvise`]
///
/// [POSIX `posix_madvise`]: https://pubs.opengroup.org/onlinepubs/9799919799/functions/posix_madvise.html
/// [Linux `madvise`]: https://man7.org/linux/man-pages/man2/madvise.2.html
#[doc(alias = "posix_madvise")]
pub unsafe fn madvise(addr: *mut u8, len: usize, advice: MemAdvice) -> Result<()> {
    let call = match advice {
        MemAdvice::Normal
        | MemAdvice::Sequential
        | MemAdvice::Random
        | MemAdvice::WillNeed
        | MemAdvice::PosixDontNeed => "posix_madvise",
        _ => "madvise",
    };
    let page = super::range::page_size();
    if addr as usize % page != 0 {
        return Err(Error::invalid(
            call,
            format!("address {addr:p} is not aligned to the page size ({page})"),
        )
        .with_hint("allocate the memory with AlignedBuf::with_pages or mmap"));
    }
    if len == 0 {
        return Ok(());
    }
    // The kernel says EINVAL for a range whose whole pages run past the top of
    // the address space, which the hints below would put down to locked pages
    // or a kernel without huge pages; POSIX (ENOMEM) and glibc's no-op
    // POSIX_MADV_DONTNEED differ again. Refuse it here, for every advice.
    if (addr as usize)
        .checked_add(len)
        .and_then(|end| end.checked_next_multiple_of(page))
        .is_none()
    {
        return Err(Error::invalid(
            call,
            format!("{len} bytes at {addr:p} run past the end of the address space"),
        )
        .with_hint("pass the length of the memory to advise, not a bound"));
    }
    use rustix::mm::Advice as A;
    let raw = match advice {
        MemAdvice::Normal => A::Normal,
        MemAdvice::Sequential => A::Sequential,
        MemAdvice::Random => A::Random,
        MemAdvice::WillNeed => A::WillNeed,
        MemAdvice::PosixDontNeed => {
            // glibc's posix_madvise ignores POSIX_MADV_DONTNEED on Linux (the kernel's
            // MADV_DONTNEED would discard data); call it so the behaviour is glibc's.
            // SAFETY: the caller guarantees the range (see the contract); with this
            // advice glibc makes no system call at all.
            let rc = unsafe { crate::sys::mm::posix_madvise_dontneed(addr, len) };
            return crate::error::check_pthread(call, rc);
        }
        MemAdvice::DontNeed => A::LinuxDontNeed,
        MemAdvice::HugePage => A::LinuxHugepage,
        MemAdvice::NoHugePage => A::LinuxNoHugepage,
        MemAdvice::DontFork => A::LinuxDontFork,
        MemAdvice::DoFork => A::LinuxDoFork,
    };
    // SAFETY: the caller guarantees the range is theirs to advise (see the contract).
    unsafe { rustix::mm::madvise(addr.cast(), len, raw) }.map_err(|e| {
        let err = Error::from_errno(call, e.raw_os_error())
            .with_message(format!("{} on {len} bytes at {addr:p}", advice.name()));
        match (e, advice) {
            (rustix::io::Errno::INVAL, MemAdvice::HugePage | MemAdvice::NoHugePage) => err
                .with_hint(
                "the kernel was built without transparent huge pages (CONFIG_TRANSPARENT_HUGEPAGE)",
            ),
            (rustix::io::Errno::INVAL, MemAdvice::DontNeed) => err.with_hint(
                "the range holds locked pages (mlock, mlockall, sched::rt::lock_memory; or \
                 hugetlbfs or device memory), which are not released: munlock them first, or \
                 clear the data with fill(0)",
            ),
            // POSIX's ENOMEM: the range is not all mapped, a bad argument. Linux
            // also says ENOMEM when splitting the mapping would pass
            // vm.max_map_count, or paging in for WillNeed failed.
            (rustix::io::Errno::NOMEM, _) if !all_mapped(addr, len) => err
                .with_kind(ErrorKind::InvalidInput)
                .with_hint("part of the range is not mapped: advise memory that is mapped"),
            (rustix::io::Errno::NOMEM, _) => err.with_hint(
                "the range is mapped, but the kernel is short of memory, or advising part of \
                 a mapping would split it into more mappings than vm.max_map_count allows",
            ),
            _ => err,
        }
    })
}

/// Whether every page of `addr..addr + len` (`addr` page-aligned, the range
/// checked not to pass the end of the address space) is mapped: `msync` with
/// `MS_ASYNC`, which changes nothing on Linux, says ENOMEM otherwise.
fn all_mapped(addr: *mut u8, len: usize) -> bool {
    // SAFETY: MS_ASYNC schedules nothing and touches no memory on Linux
    // (since 2.6.19); it only walks the mappings of the range.
    let r = unsafe { rustix::mm::msync(addr.cast(), len, rustix::mm::MsyncFlags::ASYNC) };
    r != Err(rustix::io::Errno::NOMEM)
}

impl AlignedBuf {
    /// `madvise` over the whole buffer, safely: the buffer must cover whole pages
    /// ([`AlignedBuf::with_pages`], or page alignment and a page-multiple length),
    /// so the advice reaches no memory outside it.
    ///
    /// [`MemAdvice::DontNeed`] zeroes the buffer (it is private anonymous memory);
    /// that is why this takes `&mut self`. It is refused (EINVAL, the data left
    /// as it is) while the pages are locked (`mlock`, `mlockall`). [`MemAdvice::DontFork`] is refused with
    /// [`InvalidInput`](crate::ErrorKind::InvalidInput): use the `unsafe`
    /// [`advise_dont_fork`](AlignedBuf::advise_dont_fork). An empty buffer
    /// succeeds without a call. Dropping the buffer clears `Sequential` and
    /// `Random` (`MADV_NORMAL`) before the pages go back to the allocator;
    /// `HugePage` and `NoHugePage` stay on them (Linux has no advice that
    /// clears both), which only changes how later owners are backed.
    ///
    /// ```
    /// use posixrt::advise::{AlignedBuf, MemAdvice};
    ///
    /// let mut buf = AlignedBuf::with_pages(4)?;
    /// buf[0] = 7;
    /// buf.advise(MemAdvice::WillNeed)?;
    /// buf.advise(MemAdvice::DontNeed)?;
    /// assert_eq!(buf[0], 0); // the pages were released and read back as zeros
    /// # Ok::<(), posixrt::Error>(())
    /// ```
    ///
    /// # References
    ///  - [Linux `madvise`](https://man7.org/linux/man-pages/man2/madvise.2.html)
    #[doc(alias = "madvise")]
    #[doc(alias = "posix_madvise")]
    pub fn advise(&mut self, advice: MemAdvice) -> Result<()> {
        if advice == MemAdvice::DontFork {
            return Err(
                Error::invalid("madvise", "MADV_DONTFORK through the safe API").with_hint(
                    "use the unsafe AlignedBuf::advise_dont_fork and follow its contract",
                ),
            );
        }
        self.advise_checked(advice)
    }

    /// `madvise(MADV_DONTFORK)` over the whole (page-granular) buffer: a child
    /// created by `fork` does not receive these pages. Dropping the buffer (or
    /// [`advise`](AlignedBuf::advise) with [`MemAdvice::DoFork`]) undoes it, so the
    /// pages go back to the allocator without the flag.
    ///
    /// # Safety
    ///
    /// No code may touch the buffer in a child created by `fork` after this call,
    /// including dropping the child's copy of this `AlignedBuf` (which would hand
    /// the missing pages back to the child's allocator): such a child must `exec` or
    /// `_exit`, or `std::mem::forget` the buffer. `posix_spawn` and
    /// `std::process::Command` are unaffected.
    pub unsafe fn advise_dont_fork(&mut self) -> Result<()> {
        self.advise_checked(MemAdvice::DontFork)
    }

    fn advise_checked(&mut self, advice: MemAdvice) -> Result<()> {
        if self.is_empty() {
            return Ok(());
        }
        if !self.is_page_granular() {
            return Err(Error::invalid(
                "madvise",
                format!(
                    "buffer of {} bytes aligned to {} does not cover whole pages of {}",
                    self.len(),
                    self.align(),
                    super::range::page_size()
                ),
            )
            .with_hint(
                "allocate it with AlignedBuf::with_pages so advice cannot reach other memory",
            ));
        }
        let (ptr, len) = (self.as_mut_ptr(), self.len());
        // SAFETY: the buffer is page-aligned and a whole number of pages long, so the
        // advised pages belong to it alone; `&mut self` means no reference observes
        // the zeroing by DONTNEED (zero is a valid `u8`); the DONTFORK case is only
        // reached through `advise_dont_fork`, whose caller accepted its contract.
        unsafe { madvise(ptr, len, advice) }?;
        match advice {
            MemAdvice::DontFork => self.dont_fork = true,
            MemAdvice::DoFork => self.dont_fork = false,
            MemAdvice::Sequential | MemAdvice::Random => self.read_pattern = true,
            MemAdvice::Normal => self.read_pattern = false,
            _ => {}
        }
        Ok(())
    }
}
