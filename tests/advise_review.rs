//! Review findings in `posixrt::advise`: the error kinds a caller matches on.

use posixrt::advise::{madvise, page_size, MemAdvice};
use posixrt::ErrorKind;

/// Three anonymous pages with the middle one unmapped again; unmapped on drop.
struct Gap {
    base: *mut u8,
}

impl Gap {
    fn new() -> Gap {
        let page = page_size();
        // SAFETY: a fresh private anonymous mapping, owned by the Gap.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                3 * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        // SAFETY: the middle page of the mapping made above.
        let rc = unsafe { libc::munmap(base.cast::<u8>().add(page).cast(), page) };
        assert_eq!(rc, 0);
        Gap { base: base.cast() }
    }
}

impl Drop for Gap {
    fn drop(&mut self) {
        let page = page_size();
        // SAFETY: the two pages of the mapping still mapped, unmapped once.
        unsafe {
            libc::munmap(self.base.cast(), page);
            libc::munmap(self.base.add(2 * page).cast(), page);
        }
    }
}

/// `madvise` over a range with a page that is not mapped says ENOMEM (POSIX:
/// "addresses ... outside the range allowed for the address space"): that is a
/// bad range, not a want of memory, so the kind a caller matches on (and the
/// `io::ErrorKind` it becomes) must not say "out of memory".
#[test]
fn madvise_over_an_unmapped_page_is_invalid_input_not_out_of_memory() {
    let gap = Gap::new();
    let page = page_size();
    for advice in [
        MemAdvice::Normal,
        MemAdvice::Random,
        MemAdvice::WillNeed,
        MemAdvice::NoHugePage,
    ] {
        // SAFETY: the range is this test's own mapping (and its hole).
        let e = unsafe { madvise(gap.base, 3 * page, advice) }.unwrap_err();
        assert_eq!(e.errno(), Some(libc::ENOMEM), "{advice:?}: {e}");
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{advice:?}: {e}");
        assert!(
            e.hint().unwrap_or_default().contains("not mapped"),
            "{advice:?}: {e}"
        );
        let io: std::io::Error = e.into();
        assert_ne!(io.kind(), std::io::ErrorKind::OutOfMemory, "{advice:?}");
    }
}
