//! Ranges at the edges of what `posixrt::advise` takes: a `madvise` length that
//! runs past the end of the address space, and `fallocate` on the read end of a
//! pipe.

use posixrt::advise::{madvise, AlignedBuf, MemAdvice};
use posixrt::ErrorKind;

/// A length that carries the range past the top of the address space is a bad
/// argument, whatever the advice: it is refused as such before the call, not
/// passed on to come back as the kernel's EINVAL with the hint for locked pages
/// (`DontNeed`) or a kernel without transparent huge pages (`HugePage`), when
/// neither is the case.
#[test]
fn a_madvise_range_past_the_address_space_is_invalid_input_without_a_wrong_hint() {
    let mut buf = AlignedBuf::with_pages(2).unwrap();
    buf[0] = 7;
    let p = buf.as_mut_ptr();
    for advice in MemAdvice::ALL {
        if advice == MemAdvice::DontFork {
            continue;
        }
        // SAFETY: the kernel (or posixrt) refuses the range before touching any
        // page; the pages at `p` are the buffer's own.
        let e = unsafe { madvise(p, usize::MAX - 10, advice) }.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{advice:?}: {e}");
        assert_eq!(e.errno(), Some(libc::EINVAL), "{advice:?}: {e}");
        let msg = e.to_string();
        assert!(msg.contains("address space"), "{advice:?}: {msg}");
        assert!(!msg.contains("locked") && !msg.contains("CONFIG_"), "{advice:?}: {msg}");
    }
    assert_eq!(buf[0], 7, "nothing was released");
}
