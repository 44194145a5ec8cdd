//! The thread engine's workers serve a queue without a wake-up per request:
//! a buffered transfer is tried with `RWF_NOWAIT` first, and a worker hands
//! the queue on (waking a sleeper) only before a call that waits for a device.
//! These tests check what that path returns (whole transfers where the page
//! cache held only part of a read, the end of a file, `O_DIRECT`, writes on a
//! file that refuses the flag), and that the count of awake workers came
//! back to where it was after a mixed load from several threads: a lone
//! request is still served.

use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::Arc;
use std::time::Duration;

use posixrt::aio::{Aio, Backend, Op, SyncMode};

#[allow(unused_macros, unused_imports)]
mod common;
use common::{disk_temp_file, pattern};

fn pool() -> Aio {
    Aio::builder().backend(Backend::Threads).build().unwrap()
}

/// Reads `len` bytes at `off` of `f` and returns them.
fn read(aio: &Aio, f: &std::fs::File, off: i64, len: usize) -> Vec<u8> {
    let mut r = aio.submit(Op::read(f, off, vec![0u8; len])).unwrap();
    let c = r.wait().unwrap();
    let n = c.result.unwrap();
    let mut b = c.buf.unwrap();
    b.truncate(n);
    b
}

/// A read of 1 MiB of which the page cache holds only the first 64 KiB (the
/// file dropped from it with `POSIX_FADV_DONTNEED`, read ahead no further
/// with `POSIX_FADV_RANDOM`): the `RWF_NOWAIT` attempt gives those, the rest
/// is read after, and the caller gets all of it, in order.
#[test]
fn a_read_partly_in_the_page_cache_comes_back_whole() {
    use std::os::unix::fs::FileExt;
    let aio = pool();
    let data = pattern(1 << 20);
    let f = disk_temp_file(&data);
    f.sync_all().unwrap();
    let advise = |a| rustix::fs::fadvise(f.as_fd(), 0, None, a).unwrap();
    for round in 0..3 {
        advise(rustix::fs::Advice::DontNeed);
        advise(rustix::fs::Advice::Random);
        let mut head = vec![0u8; 1 << 16];
        f.read_exact_at(&mut head, 0).unwrap();
        let got = read(&aio, &f, 0, 1 << 20);
        assert_eq!(got.len(), 1 << 20, "round {round}: a short read");
        assert!(got == data, "round {round}: the bytes differ");
    }
}

/// At the end of the file a read returns what is there, and past it 0.
#[test]
fn a_read_at_the_end_of_the_file_stops_there() {
    let aio = pool();
    let data = pattern(6000);
    let f = disk_temp_file(&data);
    assert_eq!(read(&aio, &f, 4096, 8192), data[4096..]);
    assert_eq!(read(&aio, &f, 6000, 4096), Vec::<u8>::new());
    assert_eq!(read(&aio, &f, 1 << 20, 4096), Vec::<u8>::new());
}

/// Buffered writes (which most file systems refuse to do with `RWF_NOWAIT`,
/// EOPNOTSUPP) and an fsync between them: every byte lands where it was
/// written, the second round of writes going without the flag.
#[test]
fn writes_on_a_file_that_refuses_nowait_land() {
    let aio = pool();
    let f = disk_temp_file(&[]);
    for round in 0..2u8 {
        let mut reqs: Vec<_> = (0..16u8)
            .map(|i| {
                let block = vec![i ^ round; 4096];
                aio.submit(Op::write(&f, i64::from(i) * 4096, block))
                    .unwrap()
            })
            .collect();
        for r in &mut reqs {
            assert_eq!(r.wait().unwrap().result.unwrap(), 4096);
        }
        let mut s = aio
            .submit(Op::<Vec<u8>>::fsync(&f, SyncMode::DataSync))
            .unwrap();
        assert_eq!(s.wait().unwrap().result.unwrap(), 0);
        let got = read(&aio, &f, 0, 16 * 4096);
        for i in 0..16u8 {
            let b = &got[usize::from(i) * 4096..usize::from(i + 1) * 4096];
            assert!(b.iter().all(|&x| x == i ^ round), "round {round} block {i}");
        }
    }
}

/// An `O_DIRECT` file (where the temp dir's file system takes the flag):
/// a read of an aligned block, which waits for the device, goes whole.
#[test]
fn direct_io_goes_whole() {
    let aio = pool();
    let f = disk_temp_file(&pattern(1 << 16));
    f.sync_all().unwrap();
    let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&f));
    let Ok(d) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
    else {
        eprintln!("skipped: the temp dir's file system refuses O_DIRECT");
        return;
    };
    let buf = posixrt::advise::AlignedBuf::new(4096, 4096).unwrap();
    let mut r = aio.submit(Op::read(&d, 8192, buf)).unwrap();
    let c = r.wait().unwrap();
    assert_eq!(c.result.unwrap(), 4096);
    assert_eq!(c.buf.unwrap().as_slice(), &pattern(1 << 16)[8192..12288]);
}

/// Four threads submit reads, writes and fsyncs at once, some waiting for
/// the device (fsync), most not; once every request is done and the workers
/// went back to sleep, a lone read is still served: the count of awake
/// workers came back to what it was (an extra count would leave it queued,
/// with nobody woken for it).
#[test]
fn after_a_mixed_load_a_lone_request_is_served() {
    let aio = pool();
    let data = pattern(1 << 18);
    let f = Arc::new(disk_temp_file(&data));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (aio, f) = (aio.clone(), Arc::clone(&f));
            std::thread::spawn(move || {
                for i in 0..50usize {
                    let off = (((t * 50 + i) * 4096) % (1 << 18)) as i64;
                    let mut r = match i % 5 {
                        0 => aio
                            .submit(Op::<Vec<u8>>::fsync(&*f, SyncMode::DataSync))
                            .unwrap(),
                        1 => aio.submit(Op::write(&*f, off, data_at(off, 4096))).unwrap(),
                        _ => aio.submit(Op::read(&*f, off, vec![0u8; 4096])).unwrap(),
                    };
                    r.wait().unwrap().result.unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    std::thread::sleep(Duration::from_millis(50));
    for _ in 0..3 {
        let mut r = aio.submit(Op::read(&*f, 4096, vec![0u8; 4096])).unwrap();
        aio.suspend([&r], Some(Duration::from_secs(10))).unwrap();
        let c = r.aio_return().unwrap();
        assert_eq!(c.result.unwrap(), 4096);
        assert_eq!(c.buf.unwrap(), data[4096..8192]);
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The bytes of [`pattern`] at `off` (the writes above rewrite what is there).
fn data_at(off: i64, len: usize) -> Vec<u8> {
    pattern(off as usize + len)[off as usize..].to_vec()
}
