//! Edge cases of `posixrt::advise` and the hints their errors carry:
//! `direct_io_alignment` on tmpfs for a file the caller may write but not read,
//! `fallocate` past the free space, `MADV_DONTNEED` on locked pages.

use std::fs::OpenOptions;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use posixrt::advise::{direct_io_alignment, AlignmentSource};

/// `TMPFS_MAGIC` of `<linux/magic.h>`.
const TMPFS_MAGIC: i64 = 0x0102_1994;

#[test]
fn a_write_only_file_on_tmpfs_gets_the_tmpfs_answer() {
    let shm = Path::new("/dev/shm");
    #[allow(clippy::unnecessary_cast)]
    let on_tmpfs = rustix::fs::statfs(shm).is_ok_and(|st| st.f_type as i64 == TMPFS_MAGIC);
    if !on_tmpfs {
        println!("skip: /dev/shm is not tmpfs");
        return;
    }
    let path = shm.join(format!("posixrt-advise-wo-{}", std::process::id()));
    std::fs::write(&path, b"").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o200)).unwrap();
    let root = rustix::process::geteuid().is_root();
    if root {
        rustix::fs::chown(&path, Some(rustix::process::Uid::from_raw(65534)), None).unwrap();
    }
    let p = path.clone();
    // A thread of its own: as root it takes uid 65534 for file access (setfsuid
    // is per thread, and drops the capability to override file permissions),
    // so that it may write the file but not read it, as its owner.
    let r = std::thread::spawn(move || {
        if root {
            // SAFETY: a plain system call; it changes this thread's credentials
            // only (the raw call, not glibc's process-wide wrapper).
            unsafe { libc::syscall(libc::SYS_setfsuid, 65534) };
        }
        let f = OpenOptions::new().write(true).open(&p);
        let r = f.map(|f| direct_io_alignment(&f));
        if root {
            // SAFETY: as above; back to root for this thread.
            unsafe { libc::syscall(libc::SYS_setfsuid, 0) };
        }
        r
    })
    .join()
    .unwrap();
    let _ = std::fs::remove_file(&path);
    let r = r.expect("the owner opens its 0200 file for writing");
    match r {
        Ok(a) => assert_eq!(a.source, AlignmentSource::Tmpfs, "{a:?}"),
        // Before Linux 6.6 tmpfs refuses O_DIRECT: the answer must say that,
        // not that the file is on no local block device.
        Err(e) => assert!(e.to_string().contains("tmpfs"), "{e}"),
    }
}

#[test]
fn fallocate_past_the_free_space_says_so() {
    // tmpfs refuses a range larger than its size at once (ENOSPC), without
    // allocating any of it: the error must say what is wrong and what to do.
    // (A tmpfs without a size limit, f_blocks 0, would allocate instead.)
    let shm = Path::new("/dev/shm");
    #[allow(clippy::unnecessary_cast)]
    let limited_tmpfs =
        rustix::fs::statfs(shm).is_ok_and(|st| st.f_type as i64 == TMPFS_MAGIC && st.f_blocks > 0);
    if !limited_tmpfs {
        println!("skip: /dev/shm is not a tmpfs with a size limit");
        return;
    }
    let path = shm.join(format!("posixrt-advise-enospc-{}", std::process::id()));
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    let e = posixrt::advise::fallocate(&f, 0, 1 << 60).unwrap_err();
    assert_eq!(e.errno(), Some(libc::ENOSPC), "{e}");
    assert_eq!(e.kind(), posixrt::ErrorKind::OutOfResources, "{e}");
    let hint = e.hint().unwrap_or_else(|| panic!("no hint in {e}"));
    assert!(hint.contains("space"), "{hint}");
    assert_eq!(f.metadata().unwrap().len(), 0, "nothing was allocated");
}

/// `MADV_DONTNEED` refuses locked pages (EINVAL), and real-time programs lock
/// their memory (`sched::rt::lock_memory`, `mlockall`): the error must say so.
#[test]
fn dontneed_on_locked_pages_names_the_lock() {
    let mut buf = posixrt::advise::AlignedBuf::with_pages(2).unwrap();
    buf[0] = 7;
    // SAFETY: the range is the buffer's own memory, alive for the call.
    if unsafe { libc::mlock(buf.as_ptr().cast(), buf.len()) } != 0 {
        println!("skip: mlock refused: {}", std::io::Error::last_os_error());
        return;
    }
    let r = buf.advise(posixrt::advise::MemAdvice::DontNeed);
    // SAFETY: as above.
    unsafe { libc::munlock(buf.as_ptr().cast(), buf.len()) };
    let e = r.unwrap_err();
    assert_eq!(e.errno(), Some(libc::EINVAL), "{e}");
    let hint = e.hint().unwrap_or_else(|| panic!("no hint in {e}"));
    assert!(hint.contains("locked"), "{hint}");
    assert_eq!(buf[0], 7, "a refused DONTNEED leaves the data");
}

/// `DirectIoAlignment::check` names the rule broken, and each refusal says how
/// to meet it (the offset one too, as the address and length ones do).
#[test]
fn every_o_direct_check_refusal_carries_a_hint() {
    use posixrt::advise::{AlignmentSource, DirectIoAlignment};
    let a = DirectIoAlignment {
        mem_align: 512,
        offset_align: 512,
        source: AlignmentSource::BlockDevice,
    };
    let buf = a.alloc(1024).unwrap();
    a.check(512, &buf).unwrap();
    for (offset, data) in [(0, &buf[1..513]), (100, &buf[..512]), (0, &buf[..100])] {
        let e = a.check(offset, data).unwrap_err();
        assert_eq!(e.kind(), posixrt::ErrorKind::InvalidInput, "{e}");
        assert!(e.hint().is_some(), "no hint in {e}");
    }
}

/// An alignment of 0 (a `DirectIoAlignment` built by hand) means none, as in
/// `check` and `round_up`: `alloc` must not refuse every length with a hint to
/// use `round_up`, which leaves the length as it is.
#[test]
fn alloc_takes_an_offset_alignment_of_0_as_check_and_round_up_do() {
    use posixrt::advise::{AlignmentSource, DirectIoAlignment};
    let a = DirectIoAlignment {
        mem_align: 0,
        offset_align: 0,
        source: AlignmentSource::Tmpfs,
    };
    assert_eq!(a.round_up(100), Some(100));
    let buf = a.alloc(100).unwrap();
    assert_eq!(buf.len(), 100);
    a.check(3, &buf).unwrap();
}
