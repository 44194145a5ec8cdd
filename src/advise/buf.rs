//! [`AlignedBuf`]: an owned, zero-initialised byte buffer with a chosen alignment.

use std::alloc::{self, Layout};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use crate::{Error, Result};

/// An owned byte buffer whose start address is aligned to a power of two, the
/// `posix_memalign(3)` buffer of listing 7.10.
///
/// The alignment must be a power of two and a multiple of the pointer size (the
/// rules of `posix_memalign`); anything else is an [`ErrorKind::InvalidInput`]
/// error. The memory is zero-initialised, lives on the heap at a stable address
/// (moving the `AlignedBuf` does not move the bytes), and is freed on drop. It
/// dereferences to `[u8]`, so it works wherever a byte slice does, and it is what
/// O_DIRECT I/O needs: see [`DirectIoAlignment::alloc`](super::DirectIoAlignment::alloc).
///
/// A zero-length buffer allocates nothing; its (dangling, aligned) address must not
/// be handed to the kernel with a non-zero length, which the slice length prevents.
///
/// ```
/// use posixrt::advise::AlignedBuf;
///
/// let mut buf = AlignedBuf::new(8192, 4096)?;
/// assert_eq!(buf.as_ptr() as usize % 4096, 0);
/// assert!(buf.iter().all(|&b| b == 0));
/// buf[..5].copy_from_slice(b"hello");
/// assert_eq!(&buf[..5], b"hello");
///
/// let err = AlignedBuf::new(64, 3).unwrap_err();
/// assert_eq!(err.kind(), posixrt::ErrorKind::InvalidInput);
/// # Ok::<(), posixrt::Error>(())
/// ```
///
/// # References
///  - [POSIX `posix_memalign`]
///  - [Linux `posix_memalign`]
///
/// [POSIX `posix_memalign`]: https://pubs.opengroup.org/onlinepubs/9799919799/functions/posix_memalign.html
/// [Linux `posix_memalign`]: https://man7.org/linux/man-pages/man3/posix_memalign.3.html
/// [`ErrorKind::InvalidInput`]: crate::ErrorKind::InvalidInput
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    align: usize,
    /// `MADV_DONTFORK` is on the pages: drop undoes it before freeing them, so
    /// the allocator does not hand pages a forked child lacks to other owners.
    pub(super) dont_fork: bool,
    /// `MADV_SEQUENTIAL` or `MADV_RANDOM` is on the pages: drop clears it
    /// (`MADV_NORMAL`), so the advice does not outlive the buffer either.
    pub(super) read_pattern: bool,
}

// SAFETY: `AlignedBuf` owns its allocation exclusively (like `Box<[u8]>`); the raw
// pointer is never shared with another owner, so moving it to another thread is safe.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only hands out `&[u8]`; mutation needs `&mut self`.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `len` zeroed bytes aligned to `align` (`posix_memalign`).
    ///
    /// Errors: [`InvalidInput`](crate::ErrorKind::InvalidInput) if `align` is zero,
    /// not a power of two, or not a multiple of `size_of::<*const ()>()`, or if
    /// `len` rounded up to `align` overflows `isize`;
    /// [`OutOfResources`](crate::ErrorKind::OutOfResources) if the allocator refuses.
    #[doc(alias = "posix_memalign")]
    #[doc(alias = "aligned_alloc")]
    pub fn new(len: usize, align: usize) -> Result<AlignedBuf> {
        let layout = layout_for("posix_memalign", len, align)?;
        if len == 0 {
            // A dangling, correctly aligned, non-null address (align >= 8 here).
            let ptr = NonNull::new(align as *mut u8)
                .ok_or_else(|| Error::invalid("posix_memalign", "alignment is zero"))?;
            return Ok(AlignedBuf {
                ptr,
                len,
                align,
                dont_fork: false,
                read_pattern: false,
            });
        }
        let ptr = alloc_zeroed(layout).ok_or_else(|| {
            // Meeting an alignment can take up to `align` bytes more than `len`:
            // where that is most of the request, the alignment is the cause.
            let hint = if align > len {
                "the allocator refused the request: finding a block at this alignment \
                 takes up to len + alignment bytes; use a smaller alignment (a page, or \
                 the value from advise::direct_io_alignment())"
            } else {
                "the allocator refused the request; ask for less memory"
            };
            Error::from_errno("posix_memalign", libc::ENOMEM)
                .with_message(format!("{len} bytes aligned to {align}"))
                .with_hint(hint)
        })?;
        Ok(AlignedBuf {
            ptr,
            len,
            align,
            dont_fork: false,
            read_pattern: false,
        })
    }

    /// Allocates `pages` whole pages, page-aligned: the shape that
    /// [`advise`](AlignedBuf::advise) (`madvise`) and O_DIRECT on any device accept.
    pub fn with_pages(pages: usize) -> Result<AlignedBuf> {
        let page = super::range::page_size();
        let len = pages.checked_mul(page).ok_or_else(|| {
            Error::invalid("posix_memalign", format!("{pages} pages overflow usize"))
        })?;
        AlignedBuf::new(len, page)
    }

    /// Copies `data` into a new buffer aligned to `align`.
    pub fn from_slice(data: &[u8], align: usize) -> Result<AlignedBuf> {
        let mut buf = AlignedBuf::new(data.len(), align)?;
        buf.copy_from_slice(data);
        Ok(buf)
    }

    /// The length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The alignment the buffer was allocated with.
    #[inline]
    pub fn align(&self) -> usize {
        self.align
    }

    /// The start address (stable for the buffer's life).
    #[inline]
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// The start address, for writing (stable for the buffer's life).
    #[inline]
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        self
    }

    /// The bytes, for writing.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        self
    }

    /// Whether the buffer covers whole pages only (page-aligned start and a length
    /// that is a multiple of the page size), so that page-granular calls such as
    /// `madvise` touch no memory outside it.
    pub fn is_page_granular(&self) -> bool {
        let page = super::range::page_size();
        self.align >= page && self.len % page == 0
    }
}

/// Builds the layout and checks `posix_memalign`'s rules.
fn layout_for(call: &'static str, len: usize, align: usize) -> Result<Layout> {
    let word = std::mem::size_of::<*const ()>();
    if align == 0 || !align.is_power_of_two() || align % word != 0 {
        return Err(Error::invalid(
            call,
            format!(
                "alignment {align} must be a power of two and a multiple of the pointer size ({word})"
            ),
        )
        .with_hint("use e.g. 512, 4096, or the value from advise::direct_io_alignment()"));
    }
    Layout::from_size_align(len, align).map_err(|_| {
        let hint = if align > len {
            "use a smaller alignment: a non-empty buffer rounded up to its alignment holds \
             at most isize::MAX bytes"
        } else {
            "ask for fewer bytes: a buffer rounded up to its alignment holds at most \
             isize::MAX bytes"
        };
        Error::invalid(
            call,
            format!("{len} bytes rounded up to alignment {align} overflow isize"),
        )
        .with_hint(hint)
    })
}

/// Allocates zeroed memory for a non-zero-size layout.
fn alloc_zeroed(layout: Layout) -> Option<NonNull<u8>> {
    debug_assert!(layout.size() != 0);
    // SAFETY: the layout has a non-zero size (checked by the caller), which is
    // `alloc_zeroed`'s only requirement.
    NonNull::new(unsafe { alloc::alloc_zeroed(layout) })
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.len == 0 {
            return;
        }
        self.undo_advice();
        // SAFETY: `ptr` came from `alloc_zeroed` with exactly this size and alignment
        // (checked valid when built) and is freed once, here.
        unsafe {
            alloc::dealloc(
                self.ptr.as_ptr(),
                Layout::from_size_align_unchecked(self.len, self.align),
            )
        }
    }
}

impl AlignedBuf {
    /// `MADV_DOFORK` and `MADV_NORMAL` over the buffer, on drop, where
    /// advice set them: the pages go back to the allocator as they came.
    /// (Nothing to do if it fails: the range is the buffer's own, mapped and
    /// page-granular, so it does not.)
    fn undo_advice(&mut self) {
        if self.dont_fork || self.read_pattern {
            // SAFETY: the flags are only set on a page-granular buffer, whose
            // pages belong to it alone; neither advice changes any data.
            unsafe {
                crate::sys::mm::undo_advice(
                    self.ptr.as_ptr(),
                    self.len,
                    self.dont_fork,
                    self.read_pattern,
                )
            };
        }
        self.dont_fork = false;
        self.read_pattern = false;
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` is valid for `len` initialised (zeroed at allocation) bytes
        // for as long as `self` lives; for `len == 0` a dangling aligned pointer is
        // valid for an empty slice.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBuf {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl AsRef<[u8]> for AlignedBuf {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl AsMut<[u8]> for AlignedBuf {
    fn as_mut(&mut self) -> &mut [u8] {
        self
    }
}

impl Clone for AlignedBuf {
    /// A new allocation with the same length, alignment and contents.
    ///
    /// # Aborts
    /// If the allocator refuses the memory: [`std::alloc::handle_alloc_error`],
    /// as `Vec::clone` does, which by default prints a message and aborts the
    /// process (no unwinding). Use [`AlignedBuf::from_slice`] for an error instead.
    fn clone(&self) -> AlignedBuf {
        match AlignedBuf::from_slice(self, self.align) {
            Ok(b) => b,
            Err(_) => alloc::handle_alloc_error(
                Layout::from_size_align(self.len, self.align).unwrap_or(Layout::new::<u8>()),
            ),
        }
    }
}

impl fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .field("align", &self.align)
            .finish()
    }
}

impl PartialEq for AlignedBuf {
    fn eq(&self, other: &AlignedBuf) -> bool {
        self[..] == other[..]
    }
}

impl Eq for AlignedBuf {}
