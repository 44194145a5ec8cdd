//! A request outlives the thread that submitted it: reads of a file whose pages
//! are not cached, submitted by a thread that exits at once, complete with the
//! file's data. (The kernel ends what an exiting thread left in flight: such a
//! read used to end with EFAULT.)

use std::io::Write;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use posixrt::aio::Backend;

#[allow(unused_macros, unused_imports)]
mod common;
use common::{both, ctx};

const MIB: usize = 1 << 20;
const FILE_MIB: usize = 32;

/// A file of `FILE_MIB` MiB in the temp dir, each MiB filled with its index;
/// unlinked (open only).
fn file() -> std::fs::File {
    // Tests of this file run at once: a name each.
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("posixrt-exit-{}-{n}", std::process::id()));
    let mut f = std::fs::File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    for i in 0..FILE_MIB {
        f.write_all(&vec![i as u8; MIB]).unwrap();
    }
    f.sync_all().unwrap();
    f
}

/// Drops the file's pages from the page cache; false if the file system keeps
/// them (tmpfs), when there is nothing to test.
fn evict(f: &std::fs::File) -> bool {
    // SAFETY: advice on an open fd; no memory is involved.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    // SAFETY: a private read-only mapping of an open file of FILE_MIB MiB,
    // unmapped below; mincore fills one byte per page of `vec`.
    unsafe {
        let len = FILE_MIB * MIB;
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        let mut vec = vec![0u8; len / 4096];
        let r = libc::mincore(p, len, vec.as_mut_ptr());
        libc::munmap(p, len);
        assert_eq!(r, 0);
        vec.iter().all(|&b| b & 1 == 0)
    }
}

fn survive_exit(b: Backend) {
    let aio = ctx(b);
    let f = Arc::new(file());
    for round in 0..4 {
        if !evict(&f) {
            eprintln!("the temp dir's file system keeps pages cached: nothing to test");
            return;
        }
        let (a, g) = (aio.clone(), Arc::clone(&f));
        // The thread submits eight reads and exits (join) before they end. On
        // an fd number new to the engine, the first read is a probe, which gets
        // an fd copy of its own when it outlives its call (issued again when the
        // kernel ends it at the exit); the others are waited for by the exit.
        let reqs = std::thread::spawn(move || {
            let fresh = g.try_clone().unwrap();
            (0..8)
                .map(|k| {
                    let mib = (round * 8 + k) % FILE_MIB;
                    let r = a.read(&fresh, (mib * MIB + 4096) as i64, vec![0u8; 4096]);
                    (mib, r.unwrap())
                })
                .collect::<Vec<_>>()
        })
        .join()
        .unwrap();
        for (mib, mut r) in reqs {
            aio.suspend([&r], Some(Duration::from_secs(20))).unwrap();
            let c = r.aio_return().unwrap();
            assert_eq!(
                c.result.as_ref().ok(),
                Some(&4096),
                "round {round}, MiB {mib}: {:?}",
                c.result
            );
            assert!(c.data().iter().all(|&x| x == mib as u8), "MiB {mib}");
        }
    }
}
both!(reads_outlive_their_thread, survive_exit);

/// A forked child's exit leaves its parent's rings alone. The child inherits
/// the forking thread's list of contexts to wait in at exit; waiting there
/// would reap completions from the rings' memory, which parent and child
/// share, and the parent's request would never be seen to complete.
#[test]
fn a_forked_childs_exit_leaves_the_parents_rings() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = ctx(Backend::Uring);
    let (r, w) = common::pipe();
    let mut req = aio.read(&r, 0, vec![0u8; 4]).unwrap();
    let (a, f) = (aio.clone(), Arc::new(file()));
    let pid = std::thread::spawn(move || {
        // This thread submits (so its exit, and a forked child's, would wait
        // in `a`), then forks a child that sleeps and calls exit(3).
        let mut x = a.read(&*f, 0, vec![0u8; 16]).unwrap();
        a.suspend([&x], Some(Duration::from_secs(10))).unwrap();
        assert_eq!(x.aio_return().unwrap().result.unwrap(), 16);
        // SAFETY: the child only sleeps and exits.
        match unsafe { libc::fork() } {
            0 => {
                std::thread::sleep(Duration::from_millis(300));
                // SAFETY: ends the child (its thread-locals' destructors run).
                unsafe { libc::exit(0) }
            }
            pid => pid,
        }
    })
    .join()
    .unwrap();
    assert!(pid > 0);
    // Completes the parent's read before the child exits.
    rustix::io::write(&w, b"data").unwrap();
    let status = common::child::wait_child(pid);
    assert!(libc::WIFEXITED(status), "child status {status:#x}");
    aio.suspend([&req], Some(Duration::from_secs(3))).unwrap();
    let c = req.aio_return().unwrap();
    assert_eq!(c.result.unwrap(), 4);
    assert_eq!(c.buf.as_deref(), Some(&b"data"[..]));
}
