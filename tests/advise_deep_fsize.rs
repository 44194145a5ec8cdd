//! `fallocate` past the process's file size limit (`RLIMIT_FSIZE`, `ulimit -f`).
//! In a test binary of its own: the limit and the SIGXFSZ disposition are the
//! whole process's.

use posixrt::advise::{fallocate, fallocate_mode, FallocateMode};
use posixrt::ErrorKind;

/// Past `RLIMIT_FSIZE` the kernel says EFBIG (and raises SIGXFSZ, ignored
/// here): the hint must name the process's limit, not put it down to the
/// filesystem's maximum file size, which is nowhere near.
#[test]
fn fallocate_past_rlimit_fsize_names_the_limit() {
    // SAFETY: ignoring a signal installs no handler code.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    let limit = 1 << 20;
    let lim = libc::rlimit {
        rlim_cur: limit,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: `lim` is a valid rlimit.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_FSIZE, &lim) }, 0);
    let dir = std::env::temp_dir();
    let p = dir.join(format!("posixrt-deep-fsize-{}", std::process::id()));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&p)
        .unwrap();
    std::fs::remove_file(&p).unwrap();
    fallocate(&f, 0, limit as i64).unwrap();
    let e = fallocate(&f, 0, 2 * limit as i64).unwrap_err();
    assert_eq!(e.errno(), Some(libc::EFBIG), "{e}");
    let hint = e.hint().unwrap();
    assert!(hint.contains("RLIMIT_FSIZE"), "{hint}");
    // the filesystem's own maximum is still put down to the filesystem
    let e = fallocate_mode(&f, FallocateMode::Allocate, i64::MAX - 10, 100).unwrap_err();
    assert_eq!(e.errno(), Some(libc::EFBIG), "{e}");
    assert_eq!(e.kind(), ErrorKind::Other);
    assert!(e.hint().unwrap().contains("maximum file size"), "{e}");
    // Past ext4's maximum file size (16 TiB with 4 KiB blocks) but inside off_t,
    // the kernel says EFBIG before it looks at RLIMIT_FSIZE (and raises no
    // SIGXFSZ): the hint must not send the caller to raise the limit.
    const EXT4_SUPER_MAGIC: i64 = 0xEF53;
    #[allow(clippy::unnecessary_cast)]
    let on_ext4 = rustix::fs::fstatfs(&f).is_ok_and(|st| st.f_type as i64 == EXT4_SUPER_MAGIC);
    if on_ext4 {
        let e = fallocate(&f, 1 << 50, 4096).unwrap_err();
        assert_eq!(e.errno(), Some(libc::EFBIG), "{e}");
        let hint = e.hint().unwrap();
        assert!(hint.contains("maximum file size"), "{hint}");
        assert!(!hint.contains("RLIMIT_FSIZE"), "{hint}");
    } else {
        println!("skip the ext4 case: {} is not on ext4", dir.display());
    }
}
