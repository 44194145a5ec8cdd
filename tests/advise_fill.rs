//! `posixrt::advise::fallocate_or_fill` on a filesystem without `fallocate`
//! (ramfs, mounted in a mount namespace of a child's own, so nothing outlives
//! the test): the range is allocated by writing zeros, the file's data is left
//! alone, and the file grows to `offset + len`, as with glibc's
//! `posix_fallocate`.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

use posixrt::advise::{fallocate, fallocate_or_fill, page_size, Allocation};
use posixrt::ErrorKind;

#[path = "common/probe.rs"]
mod probe;

const PROBE_ENV: &str = "POSIXRT_FILL_PROBE";
const DIR_ENV: &str = "POSIXRT_FILL_DIR";

/// Which of the first `n` pages of `f` are in the page cache (`mincore`): on
/// ramfs, the pages that exist; a hole has none.
fn resident(f: &File, n: usize) -> Vec<bool> {
    let page = page_size();
    // SAFETY: a fresh read-only shared mapping of the file, unmapped below;
    // it is never read, only asked about.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            n * page,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    assert_ne!(
        base,
        libc::MAP_FAILED,
        "{}",
        std::io::Error::last_os_error()
    );
    let mut vec = vec![0u8; n];
    // SAFETY: `base..base + n pages` is the mapping; `vec` has one byte per page.
    let rc = unsafe { libc::mincore(base, n * page, vec.as_mut_ptr()) };
    assert_eq!(rc, 0, "mincore: {}", std::io::Error::last_os_error());
    // SAFETY: the mapping made above, unmapped once.
    unsafe { libc::munmap(base, n * page) };
    vec.iter().map(|&v| v & 1 == 1).collect()
}

/// The spacing of the fallback's writes on `f`'s filesystem (its block size,
/// at most 4096).
fn step(f: &File) -> u64 {
    #[allow(clippy::unnecessary_cast)]
    let b = rustix::fs::fstatfs(f).unwrap().f_bsize as u64;
    b.clamp(1, 4096)
}

#[test]
fn zero_fill_on_a_filesystem_without_fallocate() {
    let admin = rustix::thread::capabilities(None).is_ok_and(|c| {
        c.effective
            .contains(rustix::thread::CapabilitySet::SYS_ADMIN)
    });
    if !admin {
        // No ramfs to mount: the filesystem's own fallocate is all there is.
        let p = std::env::temp_dir().join(format!("posixrt-fill-{}", std::process::id()));
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&p)
            .unwrap();
        std::fs::remove_file(&p).unwrap();
        assert_eq!(
            fallocate_or_fill(&f, 0, 8192).unwrap(),
            Allocation::Filesystem
        );
        assert_eq!(f.metadata().unwrap().len(), 8192);
        println!("skip: no CAP_SYS_ADMIN to mount ramfs; checked the direct path only");
        return;
    }
    let dir = std::env::temp_dir().join(format!("posixrt-fill-ramfs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c_dir = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
    let setup = move || {
        // SAFETY: plain system calls on NUL-terminated strings that live in
        // the closure; between fork and exec, in a single-threaded child.
        let ok = unsafe {
            libc::unshare(libc::CLONE_NEWNS) == 0
                && libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ) == 0
                && libc::mount(
                    c"posixrt-test".as_ptr(),
                    c_dir.as_ptr(),
                    c"ramfs".as_ptr(),
                    0,
                    std::ptr::null(),
                ) == 0
        };
        if ok {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    };
    // SAFETY: `setup` makes system calls only.
    let out = unsafe {
        probe::run(
            "fill_probe",
            PROBE_ENV,
            &[(DIR_ENV, dir.to_str().unwrap())],
            setup,
        )
    };
    let _ = std::fs::remove_dir(&dir);
    assert_eq!(probe::line(&out, "FILL"), "checked");
}

/// Runs in the child, in its own mount namespace with ramfs at `$POSIXRT_FILL_DIR`.
#[test]
#[ignore = "run by zero_fill_on_a_filesystem_without_fallocate"]
fn fill_probe() {
    if std::env::var_os(PROBE_ENV).is_none() {
        return;
    }
    let dir = std::path::PathBuf::from(std::env::var_os(DIR_ENV).unwrap());
    let path = dir.join("file");
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    let page = page_size();
    let p = page as u64;
    // The filesystem refuses fallocate, and says what to do instead.
    let e = fallocate(&f, 0, 4096).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(
        e.hint().unwrap_or_default().contains("fallocate_or_fill"),
        "{e}"
    );
    assert_eq!(f.metadata().unwrap().len(), 0);

    // Page 0 full of data, a hole of two pages, a byte of data at page 3.
    let head = vec![0xAAu8; page];
    f.write_all_at(&head, 0).unwrap();
    f.write_all_at(b"x", 3 * p).unwrap();
    assert_eq!(resident(&f, 4), [true, false, false, true]);

    let step = step(&f);
    let got = fallocate_or_fill(&f, 0, 8 * p as i64).unwrap();
    // One write into every block but those of page 0 (data): the byte
    // sampled in page 3's last block is a zero of the range.
    assert_eq!(
        got,
        Allocation::ZeroFilled {
            writes: 7 * p / step
        }
    );
    assert_eq!(f.metadata().unwrap().len(), 8 * p);
    assert_eq!(resident(&f, 8), [true; 8], "every page is allocated");
    let mut all = vec![0xEEu8; 8 * page];
    f.read_exact_at(&mut all, 0).unwrap();
    assert_eq!(&all[..page], &head[..], "the data is untouched");
    assert_eq!(all[3 * page], b'x');
    for (i, &b) in all.iter().enumerate().skip(page) {
        assert!(b == 0 || i == 3 * page, "byte {i} is {b:#x}");
    }

    // A range of data only: nothing to write.
    let got = fallocate_or_fill(&f, 0, p as i64).unwrap();
    assert_eq!(got, Allocation::ZeroFilled { writes: 0 });
    // Two bytes across a block boundary past the end: both blocks.
    let got = fallocate_or_fill(&f, 8 * p as i64 + step as i64 - 1, 2).unwrap();
    assert_eq!(got, Allocation::ZeroFilled { writes: 2 });
    assert_eq!(f.metadata().unwrap().len(), 8 * p + step + 1);

    // An O_APPEND descriptor would append instead: refused, nothing written.
    let app = OpenOptions::new().append(true).open(&path).unwrap();
    let e = fallocate_or_fill(&app, 0, 16 * p as i64).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadFd, "{e}");
    assert!(e.hint().unwrap_or_default().contains("O_APPEND"), "{e}");
    assert_eq!(f.metadata().unwrap().len(), 8 * p + step + 1);

    // Bad input is still refused before anything is tried.
    let e = fallocate_or_fill(&f, -1, 10).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    let e = fallocate_or_fill(&f, 0, 0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    println!("FILL checked");
}
