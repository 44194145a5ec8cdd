//! Integration tests for `posixrt::advise`: every call, its bad-input errors, an
//! O_DIRECT read through `AlignedBuf`, and the `bytesum` example (listing 7.10).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use posixrt::advise::{
    direct_io_alignment, fadvise, fallocate, fallocate_mode, fdatasync, fsync, madvise, page_size,
    sync, Advice, AlignedBuf, FallocateMode, MemAdvice,
};
use posixrt::ErrorKind;

#[path = "common/example_bin.rs"]
mod example_bin;
use example_bin::example_bin;

/// A scratch file on the disk filesystem (`/tmp`, or `$TMPDIR`), removed on drop.
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    fn new(tag: &str) -> Scratch {
        Scratch::new_in(&std::env::temp_dir(), tag)
    }

    /// A scratch file in `dir`.
    fn new_in(dir: &Path, tag: &str) -> Scratch {
        let path = dir.join(format!(
            "posixrt-advise-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        Scratch { path }
    }

    fn rw(&self) -> File {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&self.path)
            .expect("create scratch file")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn o_path(p: &Path) -> File {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH)
        .open(p)
        .expect("open O_PATH")
}

#[test]
fn aligned_buf_alignment_rules() {
    for align in [8usize, 16, 64, 512, 4096, 1 << 16] {
        let buf = AlignedBuf::new(1000, align).unwrap();
        assert_eq!(buf.as_ptr() as usize % align, 0, "align {align}");
        assert_eq!(buf.len(), 1000);
        assert_eq!(buf.align(), align);
        assert!(buf.iter().all(|&b| b == 0), "zeroed");
    }
    // zero, non-power-of-two, and smaller than the pointer size are refused
    for bad in [0usize, 3, 24, 100, 4097, 4, 2, 1] {
        let e = AlignedBuf::new(64, bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "align {bad}");
        assert_eq!(e.errno(), Some(libc::EINVAL));
        assert!(e.to_string().contains("power of two"), "{e}");
    }
    // an absurd length is an error, not a panic
    let e = AlignedBuf::new(usize::MAX - 10, 4096).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(
        e.hint().is_some_and(|h| h.contains("isize::MAX")),
        "the refusal says what fits: {e}"
    );
}

#[test]
fn aligned_buf_zero_length_and_ownership() {
    let empty = AlignedBuf::new(0, 4096).unwrap();
    assert!(empty.is_empty());
    assert_eq!(&empty[..], &[] as &[u8]);
    assert_eq!(empty.as_ptr() as usize % 4096, 0);

    let mut a = AlignedBuf::from_slice(b"abcdef", 64).unwrap();
    let addr = a.as_ptr();
    a[0] = b'X';
    let moved = std::thread::spawn(move || a).join().unwrap(); // Send
    assert_eq!(moved.as_ptr(), addr, "moving keeps the heap address");
    assert_eq!(&moved[..], b"Xbcdef");
    let c = moved.clone();
    assert_eq!(c, moved);
    assert_ne!(c.as_ptr(), moved.as_ptr());
    assert_eq!(c.align(), 64);

    let pages = AlignedBuf::with_pages(3).unwrap();
    assert_eq!(pages.len(), 3 * page_size());
    assert!(pages.is_page_granular());
    fn shared<T: Sync + Send>(_: &T) {}
    shared(&pages);
}

#[test]
fn fadvise_every_kind_and_errors() {
    let s = Scratch::new("fadvise");
    let mut f = s.rw();
    f.write_all(&vec![7u8; 64 * 1024]).unwrap();
    for advice in Advice::ALL {
        fadvise(&f, 0, 0, advice).unwrap_or_else(|e| panic!("{}: {e}", advice.name()));
        fadvise(&f, 4096, 8192, advice).unwrap();
    }
    let e = fadvise(&f, 0, -1, Advice::Sequential).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("negative"), "{e}");
    let e = fadvise(&f, -4096, 0, Advice::Sequential).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    // POSIX gives no error for a range past the largest offset, and Linux takes
    // it as "to the end": advice for everything from an offset on.
    fadvise(&f, i64::MAX, 1, Advice::Normal).unwrap();
    fadvise(&f, 4096, i64::MAX, Advice::DontNeed).unwrap();

    let e = fadvise(o_path(&s.path), 0, 0, Advice::Random).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadFd, "{e}");
    assert!(e.hint().is_some());

    let (r, _w) = rustix::pipe::pipe().unwrap();
    let e = fadvise(&r, 0, 0, Advice::Sequential).unwrap_err();
    assert_eq!(e.errno(), Some(libc::ESPIPE), "{e}");
    assert!(e.hint().unwrap().contains("pipe"));
}

#[test]
fn fallocate_modes_and_errors() {
    let s = Scratch::new("fallocate");
    let f = s.rw();
    fallocate(&f, 0, 1 << 20).unwrap();
    assert_eq!(
        f.metadata().unwrap().len(),
        1 << 20,
        "posix_fallocate grows the file"
    );
    let blocks_before = f.metadata().unwrap().blocks();
    assert!(blocks_before * 512 >= 1 << 20, "blocks are allocated");

    // KEEP_SIZE: allocate past the end without changing the size
    fallocate_mode(&f, FallocateMode::KeepSize, 1 << 20, 1 << 20).unwrap();
    assert_eq!(f.metadata().unwrap().len(), 1 << 20);
    assert!(f.metadata().unwrap().blocks() > blocks_before);

    // PUNCH_HOLE: data reads back as zeros, size unchanged
    let mut g = f.try_clone().unwrap();
    g.seek(SeekFrom::Start(0)).unwrap();
    g.write_all(&vec![0xAB; 256 * 1024]).unwrap();
    g.sync_all().unwrap();
    let before = f.metadata().unwrap().blocks();
    match fallocate_mode(&f, FallocateMode::PunchHole, 64 * 1024, 128 * 1024) {
        Ok(()) => {
            assert_eq!(f.metadata().unwrap().len(), 1 << 20);
            assert!(f.metadata().unwrap().blocks() < before, "hole freed blocks");
            let mut back = vec![0u8; 256 * 1024];
            g.seek(SeekFrom::Start(0)).unwrap();
            g.read_exact(&mut back).unwrap();
            assert!(back[..64 * 1024].iter().all(|&b| b == 0xAB));
            assert!(back[64 * 1024..192 * 1024].iter().all(|&b| b == 0));
            assert!(back[192 * 1024..].iter().all(|&b| b == 0xAB));
        }
        Err(e) => {
            println!("skip punch-hole check: filesystem refused: {e}");
            assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        }
    }

    for (off, len) in [(0, 0), (0, -1), (-1, 10)] {
        let e = fallocate(&f, off, len).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{off}+{len}: {e}");
    }
    // POSIX: EFBIG when offset + len exceeds the largest file; an off_t
    // overflow does, whatever the filesystem (the kernel says EFBIG too).
    for (off, len) in [(i64::MAX, 2), (1, i64::MAX)] {
        let e = fallocate(&f, off, len).unwrap_err();
        assert_eq!(e.errno(), Some(libc::EFBIG), "{off}+{len}: {e}");
        assert!(e.hint().is_some(), "{e}");
    }
    let ro = File::open(&s.path).unwrap();
    // The kernel's order: a descriptor not open for writing before the range.
    let e = fallocate(&ro, i64::MAX, 2).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadFd, "{e}");
    let e = fallocate(&ro, 0, 4096).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadFd, "{e}");
    assert!(e.hint().unwrap().contains("writing"));
    let (r, _w) = rustix::pipe::pipe().unwrap();
    let e = fallocate(&_w, 0, 4096).unwrap_err();
    assert_eq!(e.errno(), Some(libc::ESPIPE), "{e}");
    drop(r);
}

/// Runs `chattr <flag> path`; false if chattr is missing or refused (a
/// filesystem without attributes, such as tmpfs, or no CAP_LINUX_IMMUTABLE).
fn chattr(flag: &str, path: &Path) -> bool {
    Command::new("chattr")
        .arg(flag)
        .arg(path)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Clears the attributes again, even if the test fails, so the file can go.
struct Attrs<'a>(&'a Path);

impl Drop for Attrs<'_> {
    fn drop(&mut self) {
        chattr("-ia", self.0);
    }
}

/// EPERM from an immutable or append-only file came with no hint; the hint
/// now names the attribute and how to clear it.
#[test]
fn fallocate_on_an_immutable_or_append_only_file_names_the_attribute() {
    let s = Scratch::new("fallocate-attr");
    let f = s.rw(); // opened for writing before the attributes are set
    let _clear = Attrs(&s.path);
    if !chattr("+i", &s.path) {
        println!("skip: chattr +i refused on {:?}", s.path);
        return;
    }
    let e = fallocate(&f, 0, 4096).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
    assert_eq!(e.errno(), Some(libc::EPERM), "{e}");
    let hint = e.hint().unwrap_or_else(|| panic!("no hint: {e}"));
    assert!(hint.contains("immutable"), "{hint}");
    assert!(
        hint.contains("lsattr") && hint.contains("chattr -i"),
        "{hint}"
    );

    assert!(chattr("-i", &s.path) && chattr("+a", &s.path));
    // Linux allows plain allocation on an append-only file, not punching holes.
    fallocate(&f, 0, 8192).unwrap();
    let e = fallocate_mode(&f, FallocateMode::PunchHole, 0, 4096).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
    let hint = e.hint().unwrap_or_else(|| panic!("no hint: {e}"));
    assert!(hint.contains("append-only"), "{hint}");
    assert!(
        hint.contains("lsattr") && hint.contains("chattr -a"),
        "{hint}"
    );
    assert_eq!(f.metadata().unwrap().len(), 8192);
}

/// EPERM with neither attribute: a sealed memfd; the hint names the seals.
#[test]
fn fallocate_on_a_sealed_memfd_names_the_seal() {
    use rustix::fs::{MemfdFlags, SealFlags};
    let fd = rustix::fs::memfd_create("posixrt-seal", MemfdFlags::ALLOW_SEALING).unwrap();
    rustix::fs::fcntl_add_seals(&fd, SealFlags::GROW).unwrap();
    let e = fallocate(&fd, 0, 4096).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
    let hint = e.hint().unwrap_or_else(|| panic!("no hint: {e}"));
    assert!(hint.contains("F_SEAL_GROW"), "{hint}");
}

/// POSIX: ENODEV when the descriptor "does not refer to a regular file" (Linux:
/// neither a regular file nor a block device). Nothing is missing, so it is not
/// `NotFound`: the call does not apply to the file, and the hint says to which.
#[test]
fn fallocate_on_a_device_or_socket_is_unsupported_with_a_hint() {
    let null = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .unwrap();
    let (sock, _peer) = std::os::unix::net::UnixStream::pair().unwrap();
    for (what, e) in [
        ("/dev/null", fallocate(&null, 0, 4096).unwrap_err()),
        (
            "a socket",
            fallocate_mode(&sock, FallocateMode::KeepSize, 0, 4096).unwrap_err(),
        ),
    ] {
        assert_eq!(e.errno(), Some(libc::ENODEV), "{what}: {e}");
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{what}: {e}");
        let hint = e.hint().unwrap_or_else(|| panic!("{what}: no hint: {e}"));
        assert!(hint.contains("regular files"), "{what}: {hint}");
    }
}

#[test]
fn madvise_on_owned_pages() {
    let mut buf = AlignedBuf::with_pages(8).unwrap();
    buf.fill(0x5A);
    for advice in MemAdvice::ALL {
        match advice {
            MemAdvice::DontFork => {
                let e = buf.advise(advice).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::InvalidInput);
                assert!(e.hint().unwrap().contains("advise_dont_fork"));
            }
            MemAdvice::DontNeed => {}
            MemAdvice::HugePage | MemAdvice::NoHugePage => match buf.advise(advice) {
                Ok(()) => {}
                Err(e) => {
                    println!("no transparent huge pages here: {e}");
                    assert_eq!(e.errno(), Some(libc::EINVAL));
                }
            },
            _ => buf
                .advise(advice)
                .unwrap_or_else(|e| panic!("{}: {e}", advice.name())),
        }
    }
    // POSIX_MADV_DONTNEED is a hint: data stays
    assert!(buf.iter().all(|&b| b == 0x5A));
    // MADV_DONTNEED releases private anonymous pages: they read back as zeros
    buf.advise(MemAdvice::DontNeed).unwrap();
    assert!(buf.iter().all(|&b| b == 0));
    // SAFETY: this test process never forks.
    unsafe { buf.advise_dont_fork() }.unwrap();
    buf.advise(MemAdvice::DoFork).unwrap();

    // a buffer that does not cover whole pages is refused (advice would leak out)
    let mut small = AlignedBuf::new(100, 64).unwrap();
    let e = small.advise(MemAdvice::WillNeed).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.hint().unwrap().contains("with_pages"));
    let mut odd = AlignedBuf::new(page_size() + 1, page_size()).unwrap();
    assert!(odd.advise(MemAdvice::Random).is_err());
    let mut empty = AlignedBuf::new(0, 4096).unwrap();
    empty.advise(MemAdvice::DontNeed).unwrap();

    // the raw call checks the address alignment first
    let p = buf.as_mut_ptr();
    // SAFETY: the range is inside `buf`, which this test owns; advice is a hint.
    let e = unsafe { madvise(p.add(1), 10, MemAdvice::WillNeed) }.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    // SAFETY: as above.
    unsafe { madvise(p, buf.len(), MemAdvice::Sequential) }.unwrap();
    // SAFETY: the page range is unmapped address space near zero: ENOMEM, nothing touched.
    let e =
        unsafe { madvise(page_size() as *mut u8, page_size(), MemAdvice::WillNeed) }.unwrap_err();
    assert_eq!(e.errno(), Some(libc::ENOMEM), "{e}");
}

#[test]
fn sync_family_and_errors() {
    let s = Scratch::new("sync");
    let mut f = s.rw();
    f.write_all(b"durable").unwrap();
    fsync(&f).unwrap();
    fdatasync(&f).unwrap();
    sync();
    for e in [
        fsync(o_path(&s.path)).unwrap_err(),
        fdatasync(o_path(&s.path)).unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::BadFd, "{e}");
        assert!(e.hint().is_some());
    }
    let (r, _w) = rustix::pipe::pipe().unwrap();
    let e = fsync(&r).unwrap_err();
    assert_eq!(e.errno(), Some(libc::EINVAL), "{e}");
    assert_eq!(e.call(), "fsync");
}

#[test]
fn direct_io_read_through_aligned_buf() {
    let s = Scratch::new("direct");
    let pattern: Vec<u8> = (0..256 * 1024u32).map(|i| (i * 7 % 251) as u8).collect();
    {
        let mut f = s.rw();
        f.write_all(&pattern).unwrap();
        f.sync_all().unwrap();
    }
    let f = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&s.path)
    {
        Ok(f) => f,
        Err(e) => {
            println!("skip: O_DIRECT open refused on {}: {e}", s.path.display());
            assert_eq!(
                e.raw_os_error(),
                Some(libc::EINVAL),
                "refusal must be EINVAL"
            );
            return;
        }
    };
    let a = direct_io_alignment(&f).expect("alignment of a file that opened with O_DIRECT");
    println!("O_DIRECT alignment: {a:?}");
    assert!(a.mem_align.is_power_of_two() && a.offset_align.is_power_of_two());

    let len = a.round_up(64 * 1024).unwrap();
    let mut buf = a.alloc(len).unwrap();
    a.check(0, &buf).unwrap();
    let off = a.offset_align as u64 * 3;
    a.check(off, &buf).unwrap();
    let n = rustix::io::pread(&f, &mut buf[..], off).expect("O_DIRECT pread");
    assert_eq!(n, len);
    assert_eq!(&buf[..], &pattern[off as usize..off as usize + len]);

    // the rules, checked before the kernel would say EINVAL
    if a.offset_align > 1 {
        assert_eq!(
            a.check(1, &buf).unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
    } else {
        // tmpfs: no alignment at all, as the kernel agrees
        assert_eq!(a.source, posixrt::advise::AlignmentSource::Tmpfs);
        a.check(1, &buf[1..4]).unwrap();
        let n = rustix::io::pread(&f, &mut buf[1..4], 5).expect("unaligned O_DIRECT pread");
        assert_eq!(n, 3);
        assert_eq!(&buf[1..4], &pattern[5..8]);
    }
    if a.mem_align > 1 {
        assert_eq!(
            a.check(0, &buf[1..]).unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
    }
    if a.offset_align > 1 {
        assert_eq!(
            a.alloc(len + 1).unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
        // and the kernel does refuse a misaligned offset with EINVAL
        let e = rustix::io::pread(&f, &mut buf[..], 1).unwrap_err();
        assert_eq!(e, rustix::io::Errno::INVAL);
    }
    let _ = f.as_fd();
}

/// `direct_io_alignment` of `dir` and of a file in it agree: a directory
/// answers for the files on its filesystem (the documented use, as in the doc
/// example with the temporary directory).
fn directory_answers_as_a_file_in_it(dir: &Path) {
    let s = Scratch::new_in(dir, "dioalign");
    let file = direct_io_alignment(s.rw());
    let d = direct_io_alignment(File::open(dir).unwrap());
    match (&file, &d) {
        (Ok(f), Ok(d)) => {
            // The block device's logical block size, or statx's exact figures.
            assert_eq!(d.offset_align, f.offset_align, "{dir:?}: {d:?} vs {f:?}");
            assert!(d.mem_align >= f.mem_align, "{dir:?}: {d:?} vs {f:?}");
        }
        (Err(f), Err(d)) => assert_eq!(d.kind(), f.kind(), "{dir:?}: {d} vs {f}"),
        _ => panic!("{dir:?}: the directory says {d:?}, a file in it {file:?}"),
    }
}

/// A directory never opens with O_DIRECT, so the tmpfs probe (reopen with
/// O_DIRECT) refused every tmpfs directory as "tmpfs takes O_DIRECT only since
/// Linux 6.6", on any kernel, while the files in it took O_DIRECT.
#[test]
fn a_directory_on_tmpfs_answers_as_the_files_in_it() {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        directory_answers_as_a_file_in_it(shm);
    }
}

/// statx gives no STATX_DIOALIGN for a directory, and the fallback needed a
/// `/dev/block/MAJOR:MINOR` node, which containers often lack; sysfs names the
/// same device.
#[test]
fn a_directory_on_a_disk_answers_as_the_files_in_it() {
    let dir = std::env::temp_dir();
    // Only where the directory's st_dev is a block device (not overlayfs or
    // another filesystem with an anonymous device, which no device answers for).
    let dev = std::fs::metadata(&dir).unwrap().dev();
    let (major, minor) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    if !Path::new(&format!("/sys/dev/block/{major}:{minor}")).exists() {
        println!("skip: {dir:?} is on {major}:{minor}, not a block device");
        return;
    }
    directory_answers_as_a_file_in_it(&dir);
}

/// An overlayfs mount (lower, upper, work and merged directories) under the
/// target's temporary directory, unmounted and removed on drop.
struct Overlay {
    root: PathBuf,
    merged: PathBuf,
}

impl Overlay {
    /// `None` if the mount is refused (no privilege, no overlayfs).
    fn mount(tag: &str) -> Option<Overlay> {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("posixrt-advise-{tag}-{}", std::process::id()));
        let dir = |d: &str| root.join(d);
        for d in ["lower", "upper", "work", "merged"] {
            std::fs::create_dir_all(dir(d)).unwrap();
        }
        let ov = Overlay {
            merged: dir("merged"),
            root: root.clone(),
        };
        let opts = format!(
            "lowerdir={},upperdir={},workdir={}",
            dir("lower").display(),
            dir("upper").display(),
            dir("work").display()
        );
        let mounted = Command::new("mount")
            .args(["-t", "overlay", "overlay", "-o", &opts])
            .arg(&ov.merged)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            let _ = std::fs::remove_dir_all(&ov.root);
            return None;
        }
        Some(ov)
    }
}

impl Drop for Overlay {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.merged).status();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// overlayfs gives its directories an anonymous st_dev, which no block device
/// answers for, so a directory there was Unsupported while the files in it
/// get a statx answer.
#[test]
fn a_directory_on_overlayfs_answers_as_the_files_in_it() {
    let Some(ov) = Overlay::mount("overlay") else {
        println!("skip: mounting an overlayfs was refused");
        return;
    };
    let file = direct_io_alignment(Scratch::new_in(&ov.merged, "f").rw());
    let Ok(file) = file else {
        println!("skip: files on this overlayfs have no answer: {file:?}");
        return;
    };
    let d = direct_io_alignment(File::open(&ov.merged).unwrap()).unwrap();
    assert_eq!(
        (d.mem_align, d.offset_align),
        (file.mem_align, file.offset_align)
    );
    assert_eq!(d.source, file.source);
    directory_answers_as_a_file_in_it(&ov.merged);
    // The probe leaves nothing behind (the scratch file above is gone too).
    assert_eq!(std::fs::read_dir(&ov.merged).unwrap().count(), 0);
}

#[test]
fn direct_io_alignment_errors() {
    let s = Scratch::new("dio-bad");
    let _f = s.rw();
    let e = direct_io_alignment(o_path(&s.path));
    // O_PATH descriptors do support statx; this must answer like the real file
    let real = direct_io_alignment(File::open(&s.path).unwrap());
    assert_eq!(e.is_ok(), real.is_ok());
    // a pipe has no O_DIRECT support and no block device
    let (r, _w) = rustix::pipe::pipe().unwrap();
    let e = direct_io_alignment(&r).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.hint().is_some());
}

#[test]
fn bytesum_matches_independent_sum() {
    let s = Scratch::new("bytesum");
    // every byte value, odd length, more than one BUFSIZ read
    let data: Vec<u8> = (0..100_003u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    s.rw().write_all(&data).unwrap();
    let expected: i64 = data
        .iter()
        .map(|&b| if b >= 128 { b as i64 - 256 } else { b as i64 })
        .sum();
    let unsigned: i64 = data.iter().map(|&b| b as i64).sum();
    assert_ne!(expected, unsigned, "the data exercises signed char");

    let bin = example_bin("bytesum");
    assert!(bin.exists(), "{} missing", bin.display());
    let out = Command::new(&bin).arg(&s.path).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        expected.to_string()
    );

    let empty = Scratch::new("bytesum-empty");
    drop(empty.rw());
    let out = Command::new(&bin).arg(&empty.path).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0");

    // exactly three buffers, and a single 0xFF byte (C's signed char: -1)
    for (tag, bytes, want) in [
        ("bytesum-exact", vec![0x80u8; 3 * 8192], -128 * 3 * 8192),
        ("bytesum-ff", vec![0xFF], -1),
    ] {
        let f = Scratch::new(tag);
        f.rw().write_all(&bytes).unwrap();
        let out = Command::new(&bin).arg(&f.path).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            want.to_string()
        );
    }

    // /dev/stdin on a pipe: fadvise is refused (ESPIPE), reported, and the sum is
    // still computed, as in the C program
    let mut child = Command::new(&bin)
        .arg("/dev/stdin")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feed = data.clone();
    let writer = std::thread::spawn(move || stdin.write_all(&feed));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        expected.to_string()
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("POSIX_FADVISE"),
        "{out:?}"
    );

    // usage error: message and exit code 1
    for args in [&[][..], &["a", "b"][..]] {
        let out = Command::new(&bin).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("Usage"),
            "{out:?}"
        );
        assert!(out.stdout.is_empty());
    }
    // --help: usage on stdout, exit 0, not opened as a file
    for arg in ["--help", "-h"] {
        let out = Command::new(&bin).arg(arg).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Usage"),
            "{out:?}"
        );
        assert!(out.stderr.is_empty(), "{out:?}");
    }
    // a missing file: exit code 2 as in the listing
    let out = Command::new(&bin)
        .arg("/nonexistent/posixrt")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("OPEN"));
}

#[test]
fn direct_io_alignment_never_reopens_a_fifo_or_device() {
    // A FIFO on tmpfs (/dev/shm), held by its read end only: reopening it for
    // reading would wait for a writer that never comes.
    let path = PathBuf::from(format!(
        "/dev/shm/posixrt-advise-fifo-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let reader = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&path)
        .unwrap();
    let _ = std::fs::remove_file(&path);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(direct_io_alignment(&reader).map_err(|e| e.kind()));
    });
    let got = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("direct_io_alignment reopened the FIFO and blocked");
    assert_eq!(got.unwrap_err(), ErrorKind::Unsupported);
    // A character device on devtmpfs is not a tmpfs file that takes O_DIRECT.
    let e = direct_io_alignment(File::open("/dev/null").unwrap()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(!e.to_string().contains("tmpfs"), "{e}");
}

#[test]
fn a_negative_fallocate_length_is_not_told_to_use_0() {
    // fallocate has no "0 means to the end of the file" form (0 is refused too):
    // the hint for a negative length must not send the caller there.
    let s = Scratch::new("fallocate-neg");
    let f = s.rw();
    for mode in [FallocateMode::Allocate, FallocateMode::KeepSize] {
        let e = fallocate_mode(&f, mode, 0, -4096).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        let hint = e.hint().expect("a hint");
        assert!(!hint.contains("use 0"), "{hint}");
        assert!(hint.contains("positive length"), "{hint}");
    }
}

#[test]
fn fallocate_on_a_directory_does_not_say_to_open_it_for_writing() {
    // A directory cannot be opened for writing (EISDIR), so the kernel's EBADF
    // for one must not send the caller to do that.
    let dir = File::open(std::env::temp_dir()).unwrap();
    let e = fallocate(&dir, 0, 4096).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadFd, "{e}");
    let hint = e.hint().expect("a hint");
    assert!(!hint.contains("open the file for writing"), "{hint}");
    assert!(hint.contains("director"), "{hint}");
}
