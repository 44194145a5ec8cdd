//! Deeper edges of `posixrt::advise`: what a dropped buffer leaves behind in the
//! address space.

use posixrt::advise::{AlignedBuf, MemAdvice};

/// The `VmFlags` of the mapping that holds `addr`, from `/proc/self/smaps`, or
/// `None` if no mapping holds it.
fn vm_flags_at(addr: usize) -> Option<Vec<String>> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut inside = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((lo, hi)) = first.split_once('-') {
            if let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                inside = lo <= addr && addr < hi;
                continue;
            }
        }
        if inside {
            if let Some(flags) = line.strip_prefix("VmFlags:") {
                return Some(flags.split_whitespace().map(str::to_string).collect());
            }
        }
    }
    None
}

/// `MADV_DONTFORK` applied through `advise_dont_fork` stays on the pages after
/// the buffer is dropped: the allocator (here glibc's heap, which keeps small
/// blocks mapped) hands them to other allocations, which a forked child then
/// does not have, and it crashes touching them. Dropping the buffer must give
/// the pages back as it found them (`MADV_DOFORK`).
#[test]
fn a_dropped_dont_fork_buffer_leaves_no_dont_fork_pages_behind() {
    // Small page-granular blocks come from the heap, which stays mapped.
    let keep: Vec<AlignedBuf> = (0..4).map(|_| AlignedBuf::with_pages(1).unwrap()).collect();
    let mut buf = AlignedBuf::with_pages(1).unwrap();
    let addr = buf.as_ptr() as usize;
    // SAFETY: this test process never forks.
    unsafe { buf.advise_dont_fork() }.unwrap();
    let flags = vm_flags_at(addr).expect("the buffer is mapped");
    assert!(flags.iter().any(|f| f == "dc"), "{flags:?}");
    drop(buf);
    if let Some(flags) = vm_flags_at(addr) {
        assert!(
            !flags.iter().any(|f| f == "dc"),
            "freed pages still MADV_DONTFORK: {flags:?}"
        );
    }
    // DoFork through the safe API undoes it too, and the buffer's drop then has
    // nothing left to undo.
    let mut buf = AlignedBuf::with_pages(1).unwrap();
    // SAFETY: as above.
    unsafe { buf.advise_dont_fork() }.unwrap();
    buf.advise(MemAdvice::DoFork).unwrap();
    let addr = buf.as_ptr() as usize;
    assert!(!vm_flags_at(addr).unwrap().iter().any(|f| f == "dc"));
    drop(buf);
    drop(keep);
}

/// A loop device over a scratch file, detached on drop.
struct Loop {
    dev: String,
    img: std::path::PathBuf,
}

impl Loop {
    /// The device, open for reading and writing.
    fn open(&self) -> std::fs::File {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.dev)
            .unwrap()
    }

    /// `None` (the test then skips) without root or a loop driver.
    fn new(tag: &str) -> Option<Loop> {
        if !rustix::process::geteuid().is_root() {
            println!("skip: loop devices need root");
            return None;
        }
        let img = std::env::temp_dir().join(format!("posixrt-{tag}-{}", std::process::id()));
        std::fs::File::create(&img)
            .unwrap()
            .set_len(4 << 20)
            .unwrap();
        let out = std::process::Command::new("losetup")
            .args(["-f", "--show"])
            .arg(&img)
            .output();
        match out {
            Ok(o) if o.status.success() => {
                let dev = String::from_utf8_lossy(&o.stdout).trim().to_string();
                Some(Loop { dev, img })
            }
            other => {
                println!("skip: no loop device: {other:?}");
                let _ = std::fs::remove_file(&img);
                None
            }
        }
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("losetup")
            .args(["-d", &self.dev])
            .status();
        let _ = std::fs::remove_file(&self.img);
    }
}

/// A block device has no filesystem and all its blocks are allocated: Linux
/// takes only hole punching (and zeroing) on one, and says EOPNOTSUPP for
/// `Allocate` and `KeepSize`. The hint must say so, not blame "this
/// filesystem" and list filesystems that do support the mode.
#[test]
fn fallocate_modes_on_a_block_device_say_what_a_block_device_takes() {
    use posixrt::advise::{fallocate_mode, FallocateMode};
    use posixrt::ErrorKind;
    let Some(lo) = Loop::new("deep-blk") else {
        return;
    };
    let dev = lo.open();
    fallocate_mode(&dev, FallocateMode::PunchHole, 0, 4096).unwrap();
    for mode in [FallocateMode::Allocate, FallocateMode::KeepSize] {
        let e = fallocate_mode(&dev, mode, 0, 4096).unwrap_err();
        assert_eq!(e.errno(), Some(libc::EOPNOTSUPP), "{e}");
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        let hint = e.hint().unwrap();
        assert!(
            hint.contains("block device") && hint.contains("PunchHole"),
            "{hint}"
        );
        assert!(!hint.contains("filesystem does not support"), "{hint}");
    }
}

/// An alignment the allocator cannot meet (far past the address space) is
/// refused as OutOfResources, not an abort; the hint must not tell someone who
/// asked for one byte to "ask for less memory": the alignment is what it
/// cannot meet.
#[test]
fn an_alignment_the_allocator_cannot_meet_is_an_error_naming_the_alignment() {
    use posixrt::ErrorKind;
    let e = AlignedBuf::new(1, 1 << 62).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfResources, "{e}");
    assert!(e.hint().unwrap().contains("alignment"), "{e}");
    // a length the allocator cannot give still says to ask for less
    let e = AlignedBuf::new(isize::MAX as usize - 4096, 4096).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfResources, "{e}");
    assert!(e.hint().unwrap().contains("less memory"), "{e}");
}

/// On a block device Linux wants the range aligned to the logical block size
/// and starting inside the device, and says a bare EINVAL otherwise; the
/// arguments are fine by POSIX's rules, so the error must say which rule the
/// device has (with its figures), not leave an unexplained "Invalid argument".
#[test]
fn a_misaligned_or_outside_hole_on_a_block_device_names_the_rule() {
    use posixrt::advise::{fallocate_mode, FallocateMode};
    use posixrt::ErrorKind;
    let Some(lo) = Loop::new("deep-blk-einval") else {
        return;
    };
    let dev = lo.open();
    let e = fallocate_mode(&dev, FallocateMode::PunchHole, 100, 4096).unwrap_err();
    assert_eq!(e.errno(), Some(libc::EINVAL), "{e}");
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let hint = e.hint().expect("a hint");
    assert!(
        hint.contains("logical block size") && hint.contains("512"),
        "{hint}"
    );
    let e = fallocate_mode(&dev, FallocateMode::PunchHole, 8 << 20, 4096).unwrap_err();
    assert_eq!(e.errno(), Some(libc::EINVAL), "{e}");
    let hint = e.hint().expect("a hint");
    assert!(hint.contains(&(4u64 << 20).to_string()), "{hint}");
}

/// An alignment of 2^63 rounds even one byte past `isize::MAX`: refused as
/// InvalidInput before any allocation, with a hint about the alignment, not
/// one telling a caller who asked for one byte to "ask for fewer bytes".
#[test]
fn an_alignment_past_isize_names_the_alignment() {
    use posixrt::ErrorKind;
    let e = AlignedBuf::new(1, 1 << 63).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(e.hint().unwrap().contains("smaller alignment"), "{e}");
    let e = AlignedBuf::new(usize::MAX - 8, 8).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(e.hint().unwrap().contains("fewer bytes"), "{e}");
    // an empty buffer at that alignment allocates nothing and is fine
    let b = AlignedBuf::new(0, 1 << 63).unwrap();
    assert_eq!(b.as_ptr() as usize % (1 << 63), 0);
    assert!(b.is_empty());
}

/// A file on tmpfs that the caller may neither read nor write (held through an
/// O_PATH descriptor) is still on tmpfs: the answer is tmpfs's, as for a
/// directory there, not "not on a local block device (network, FUSE,
/// overlay?)", which names three filesystems it is not on. The caller's
/// permissions are dropped with a per-thread fsuid (which also drops root's
/// CAP_DAC_OVERRIDE for that thread).
#[test]
fn a_tmpfs_file_the_caller_cannot_open_gets_the_tmpfs_answer() {
    use posixrt::advise::{direct_io_alignment, AlignmentSource};
    use std::os::unix::fs::PermissionsExt;
    let shm = std::path::Path::new("/dev/shm");
    // (`f_type` is an i64 on x86_64, narrower on some other targets.)
    #[allow(clippy::unnecessary_cast)]
    let on_tmpfs = rustix::fs::statfs(shm).is_ok_and(|s| s.f_type as i64 == 0x0102_1994);
    if !on_tmpfs {
        println!("skip: /dev/shm is not tmpfs");
        return;
    }
    let p = shm.join(format!("posixrt-deep-noperm-{}", std::process::id()));
    std::fs::File::create(&p).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).unwrap();
    let opath = rustix::fs::open(&p, rustix::fs::OFlags::PATH, rustix::fs::Mode::empty()).unwrap();
    let path = p.clone();
    let fsuid_dropped = std::thread::spawn(move || {
        // SAFETY: setfsuid changes only this thread's filesystem uid (the
        // thread ends here); glibc makes the plain system call.
        unsafe { libc::setfsuid(65534) };
        let denied = std::fs::File::open(&p).is_err();
        (denied, direct_io_alignment(&opath))
    })
    .join()
    .unwrap();
    std::fs::remove_file(&path).unwrap();
    let (denied, r) = fsuid_dropped;
    if !denied {
        println!("skip: the file opened anyway (CAP_DAC_OVERRIDE kept?)");
        return;
    }
    match r {
        Ok(a) => assert!(
            matches!(a.source, AlignmentSource::Tmpfs | AlignmentSource::Statx),
            "{a:?}"
        ),
        Err(e) => {
            let hint = e.hint().unwrap_or("");
            assert!(
                !hint.contains("not on a local block device") && e.to_string().contains("tmpfs"),
                "{e}"
            );
        }
    }
}

/// `Sequential` and `Random` set a flag on the pages (VM_SEQ_READ, VM_RAND_READ:
/// "sr", "rr" in smaps) that outlived the buffer: the pages went back to the
/// allocator with the advice on, for other allocations to inherit, though the
/// README promises advice through `AlignedBuf::advise` never reaches other
/// memory. Dropping the buffer must clear it (`MADV_NORMAL`).
#[test]
fn a_dropped_buffer_leaves_no_access_pattern_advice_behind() {
    let keep: Vec<AlignedBuf> = (0..4).map(|_| AlignedBuf::with_pages(1).unwrap()).collect();
    for (advice, flag) in [(MemAdvice::Sequential, "sr"), (MemAdvice::Random, "rr")] {
        let mut buf = AlignedBuf::with_pages(1).unwrap();
        let addr = buf.as_ptr() as usize;
        buf.advise(advice).unwrap();
        let flags = vm_flags_at(addr).expect("the buffer is mapped");
        assert!(flags.iter().any(|f| f == flag), "{flags:?}");
        drop(buf);
        if let Some(flags) = vm_flags_at(addr) {
            assert!(
                !flags.iter().any(|f| f == flag),
                "freed pages still {flag}: {flags:?}"
            );
        }
    }
    drop(keep);
}
