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
        assert!(
            !msg.contains("locked") && !msg.contains("CONFIG_"),
            "{advice:?}: {msg}"
        );
    }
    assert_eq!(buf[0], 7, "nothing was released");
}

/// The kernel checks for write access before the kind of file, so the read end
/// of a pipe, or a character device opened for reading, gives EBADF: the hint
/// must not send the caller to open it for writing (which would only trade the
/// EBADF for ESPIPE or ENODEV) but say that fallocate does not apply to it.
#[test]
fn fallocate_on_a_read_only_pipe_or_device_does_not_say_to_open_it_for_writing() {
    use posixrt::advise::{fallocate, fallocate_mode, FallocateMode};
    let (r, _w) = std::io::pipe().unwrap();
    let null = std::fs::File::open("/dev/null").unwrap();
    let cases: [(&dyn std::os::fd::AsFd, &str); 2] = [(&r, "pipe"), (&null, "character device")];
    for (fd, what) in cases {
        for e in [
            fallocate(fd.as_fd(), 0, 4096).unwrap_err(),
            fallocate_mode(fd.as_fd(), FallocateMode::PunchHole, 0, 4096).unwrap_err(),
        ] {
            assert_eq!(e.kind(), ErrorKind::BadFd, "{what}: {e}");
            let hint = e.hint().unwrap_or_else(|| panic!("no hint in {e}"));
            assert!(
                !hint.contains("open the file for writing"),
                "{what}: {hint}"
            );
            assert!(hint.contains(what), "{what}: {hint}");
        }
    }
}
