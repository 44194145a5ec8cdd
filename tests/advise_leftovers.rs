//! Integration tests for `posixrt::advise` errors and checks: an interrupted
//! `posix_fallocate` says it can be retried; ENOSPC and EDQUOT from the fsync
//! family warn, like EIO, that the data may be lost; an empty O_DIRECT buffer
//! at any address is accepted, as the kernel accepts it.

#[path = "common/seccomp.rs"]
mod seccomp;

use std::os::unix::fs::OpenOptionsExt;

use posixrt::advise::{
    self, direct_io_alignment, fallocate, AlignmentSource, DirectIoAlignment, SyncRangeFlags,
};
use posixrt::ErrorKind;

fn scratch(name: &str, flags: i32) -> std::io::Result<std::fs::File> {
    let p = std::env::temp_dir().join(format!("posixrt-leftovers-{name}-{}", std::process::id()));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(flags)
        .open(&p);
    let _ = std::fs::remove_file(&p);
    f
}

/// Runs `f` in a thread of its own whose system call `nr` fails with `errno`
/// (the filter stays with that thread).
fn with_failing(nr: libc::c_long, errno: i32, f: impl FnOnce() + Send + 'static) {
    std::thread::spawn(move || {
        seccomp::fail_syscall(nr, None, errno);
        f();
    })
    .join()
    .unwrap();
}

#[test]
fn an_interrupted_fallocate_says_a_signal_stopped_it_and_it_can_be_retried() {
    let f = scratch("eintr", 0).unwrap();
    with_failing(libc::SYS_fallocate, libc::EINTR, move || {
        let e = fallocate(&f, 0, 1 << 20).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Interrupted, "{e}");
        let hint = e.hint().unwrap_or("");
        assert!(hint.contains("signal"), "{hint}");
        assert!(hint.contains("retr") || hint.contains("again"), "{hint}");
    });
}

#[test]
fn enospc_and_edquot_from_the_fsync_family_warn_that_data_may_be_lost() {
    for errno in [libc::ENOSPC, libc::EDQUOT] {
        for (nr, name) in [
            (libc::SYS_fsync, "fsync"),
            (libc::SYS_fdatasync, "fdatasync"),
            (libc::SYS_sync_file_range, "sync_file_range"),
        ] {
            let f = scratch("nospc", 0).unwrap();
            with_failing(nr, errno, move || {
                let r = match name {
                    "fsync" => advise::fsync(&f),
                    "fdatasync" => advise::fdatasync(&f),
                    _ => advise::sync_file_range(&f, 0, 0, SyncRangeFlags::WRITE),
                };
                let e = r.unwrap_err();
                assert_eq!(e.errno(), Some(errno), "{e}");
                assert_eq!(e.kind(), ErrorKind::OutOfResources, "{e}");
                let hint = e.hint().unwrap_or("");
                assert!(hint.contains("lost"), "{name} errno {errno}: {hint}");
                assert!(hint.contains("own copy"), "{name} errno {errno}: {hint}");
            });
        }
    }
}

#[test]
fn an_empty_buffer_at_an_unaligned_address_passes_the_check() {
    let a = DirectIoAlignment {
        mem_align: 512,
        offset_align: 512,
        source: AlignmentSource::BlockDevice,
    };
    let buf = a.alloc(1024).unwrap();
    let empty = &buf[1..1];
    assert_ne!(empty.as_ptr() as usize % 512, 0);
    a.check(0, empty).unwrap();
    a.check(512, empty).unwrap();
    // The kernel accepts it too: a 0-byte O_DIRECT read returns 0.
    let Ok(f) = scratch("dio", libc::O_DIRECT) else {
        println!(
            "skip the live read: no O_DIRECT in {}",
            std::env::temp_dir().display()
        );
        return;
    };
    let live = direct_io_alignment(&f).unwrap();
    let mut buf = live.alloc(live.round_up(1).unwrap().max(2)).unwrap();
    let empty = &mut buf[1..1];
    live.check(0, empty).unwrap();
    assert_eq!(rustix::io::pread(&f, &mut *empty, 0).unwrap(), 0);
    // At an unaligned offset as well.
    live.check(1, empty).unwrap();
    assert_eq!(rustix::io::pread(&f, empty, 1).unwrap(), 0);
}
