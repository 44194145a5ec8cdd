//! io_uring contexts with more than one ring: a second ring only when threads
//! submit at the same time, and a request in any ring is waited for, reaped,
//! cancelled and notified as in the first.

use std::os::fd::AsRawFd;
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use posixrt::aio::{Aio, Backend, CancelResult, Notify, Op, SigVal};
use posixrt::ErrorKind;

// Only some of the shared helpers are used here.
#[allow(unused_macros, unused_imports)]
mod common;
use common::{pattern, pipe, temp_file, uring};

/// Polls `f` until it holds, for at most 10 s.
fn eventually(mut f: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

#[test]
fn rings_out_of_range_is_einval_with_a_hint() {
    for n in [0, 9] {
        let e = Aio::builder()
            .backend(Backend::Uring)
            .rings(n)
            .build()
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "rings({n})");
        assert!(e.to_string().contains("1..=8"), "{e}");
    }
}

#[test]
fn thread_engine_has_no_ring() {
    let aio = Aio::builder()
        .backend(Backend::Threads)
        .rings(4)
        .build()
        .unwrap();
    assert_eq!(aio.rings(), 0);
}

/// One thread, many fds, lists and single requests: never a second ring.
#[test]
fn one_submitting_thread_uses_one_ring() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = uring(4);
    assert_eq!(aio.rings(), 1);
    let files: Vec<_> = (0..8).map(|i| temp_file(&[i as u8; 4096])).collect();
    for round in 0..20 {
        let reqs: Vec<_> = files
            .iter()
            .map(|f| aio.read(f, 0, vec![0u8; 4096]).unwrap())
            .collect();
        for (i, mut r) in reqs.into_iter().enumerate() {
            let c = r.wait().unwrap();
            assert_eq!(c.data(), &[i as u8; 4096][..], "round {round}, file {i}");
        }
    }
    let list = aio
        .lio_listio(
            posixrt::aio::ListMode::Wait,
            files.iter().map(|f| Some(Op::read(f, 0, vec![0u8; 16]))),
            Notify::None,
        )
        .unwrap();
    assert_eq!(list.len(), files.len());
    assert_eq!(aio.rings(), 1);
}

/// Threads that submit 128 KiB reads at the same time find the first ring
/// being entered by another and take a second; `rings(1)` never does. Every
/// read returns its own bytes either way.
#[test]
fn concurrent_submitters_take_a_second_ring_unless_limited_to_one() {
    if common::uring::uring_refused() {
        return;
    }
    const CHUNK: usize = 128 * 1024;
    let data = pattern(64 * CHUNK);
    let file = Arc::new(temp_file(&data));
    let data = Arc::new(data);
    for limit in [1, 2] {
        let aio = uring(limit);
        let t0 = Instant::now();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (aio, file, data) = (aio.clone(), Arc::clone(&file), Arc::clone(&data));
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; CHUNK];
                    let mut reads = 0;
                    // Until a second ring exists (or for 2 s with one allowed).
                    while t0.elapsed() < Duration::from_secs(if limit == 1 { 2 } else { 10 })
                        && !(limit > 1 && aio.rings() > 1 && reads >= 64)
                    {
                        let k = (reads * 7 + t * 13) % 64;
                        let mut r = aio.read(&*file, (k * CHUNK) as i64, buf).unwrap();
                        let c = r.wait().unwrap();
                        assert_eq!(c.result.as_ref().copied().unwrap(), CHUNK);
                        assert!(c.data() == &data[k * CHUNK..(k + 1) * CHUNK], "chunk {k}");
                        buf = c.buf.unwrap();
                        reads += 1;
                    }
                    reads
                })
            })
            .collect();
        let total: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert!(total >= 4 * 64, "{total} reads");
        assert_eq!(aio.rings(), limit, "rings({limit}) after {total} reads");
    }
}

/// A pipe read placed in ring `k` (by the calling thread).
fn read_in_ring(aio: &Aio, k: usize, fd: &std::os::fd::OwnedFd) -> posixrt::aio::Request<Vec<u8>> {
    aio.__use_ring(Some(k));
    let r = aio.read(fd, 0, vec![0u8; 8]);
    aio.__use_ring(None);
    r.unwrap()
}

/// A pipe read placed in ring `k`, whose completion sends `v` on `tx` from
/// the notification thread.
fn notified_read_in_ring(
    aio: &Aio,
    k: usize,
    fd: &std::os::fd::OwnedFd,
    v: usize,
    tx: mpsc::Sender<SigVal>,
) -> posixrt::aio::Request<Vec<u8>> {
    let tx = Mutex::new(tx);
    aio.__use_ring(Some(k));
    let r = aio.submit(
        Op::read(fd, 0, vec![0u8; 8]).notify(Notify::thread(v, move |v| {
            let _ = tx.lock().unwrap().send(v);
        })),
    );
    aio.__use_ring(None);
    r.unwrap()
}

#[test]
fn a_request_in_the_second_ring_is_waited_for_and_reaped() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = uring(2);
    let (rd, wr) = pipe();
    let mut r = read_in_ring(&aio, 1, &rd);
    assert_eq!(aio.rings(), 2);
    // Not done: the wait times out.
    let e = aio
        .suspend([&r], Some(Duration::from_millis(30)))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TimedOut);
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        rustix::io::write(&wr, b"ring one").unwrap();
        wr
    });
    aio.suspend([&r], Some(Duration::from_secs(10))).unwrap();
    assert_eq!(r.aio_return().unwrap().data(), b"ring one");
    drop(writer.join().unwrap());
    // A request in each ring, waited for together: the one that completes
    // (in the second ring) ends the wait, the other is still in progress.
    let (rd0, _wr0) = pipe();
    let (rd1, wr1) = pipe();
    let r0 = read_in_ring(&aio, 0, &rd0);
    let mut r1 = read_in_ring(&aio, 1, &rd1);
    rustix::io::write(&wr1, b"second").unwrap();
    aio.suspend([&r0, &r1], Some(Duration::from_secs(10)))
        .unwrap();
    assert_eq!(r1.aio_return().unwrap().data(), b"second");
    assert_eq!(r0.error().unwrap_err().kind(), ErrorKind::InProgress);
    assert_eq!(r0.cancel().unwrap(), CancelResult::Canceled);
}

/// A thread sleeps in the first ring's wait (the only ring then); another
/// creates the second ring and waits for a request in it. The sleeper must
/// be woken to watch the new ring, or the second waiter is never woken.
#[test]
fn a_waiter_asleep_on_the_first_ring_sees_the_second_ring_created() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = uring(2);
    let (rd0, wr0) = pipe();
    let r0 = Arc::new(Mutex::new(read_in_ring(&aio, 0, &rd0)));
    let id0 = r0.lock().unwrap().id();
    let aio0 = aio.clone();
    let sleeper = std::thread::spawn(move || aio0.suspend([id0], None));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(aio.rings(), 1);
    let (rd1, wr1) = pipe();
    let aio1 = aio.clone();
    let second = std::thread::spawn(move || {
        let mut r = read_in_ring(&aio1, 1, &rd1);
        r.wait().map(|c| c.data().to_vec())
    });
    assert!(eventually(|| aio.rings() == 2));
    std::thread::sleep(Duration::from_millis(20));
    rustix::io::write(&wr1, b"woken").unwrap();
    assert!(
        eventually(|| second.is_finished()),
        "the waiter for the second ring was never woken"
    );
    assert_eq!(second.join().unwrap().unwrap(), b"woken");
    rustix::io::write(&wr0, b"first").unwrap();
    sleeper.join().unwrap().unwrap();
    assert_eq!(r0.lock().unwrap().aio_return().unwrap().data(), b"first");
}

#[test]
fn a_request_in_the_second_ring_is_cancelled_and_notifies() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = uring(2);
    let (rd, _wr) = pipe();
    let (tx, rx) = mpsc::channel();
    let mut r = notified_read_in_ring(&aio, 1, &rd, 5, tx);
    assert_eq!(aio.rings(), 2);
    std::thread::sleep(Duration::from_millis(10));
    assert_eq!(r.cancel().unwrap(), CancelResult::Canceled);
    let c = r.aio_return().unwrap();
    assert_eq!(c.result.unwrap_err().errno(), Some(libc::ECANCELED));
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), SigVal(5));
    // cancel_fd finds the requests of every ring.
    let reqs: Vec<_> = (0..4).map(|k| read_in_ring(&aio, k % 2, &rd)).collect();
    std::thread::sleep(Duration::from_millis(10));
    assert_eq!(
        aio.cancel_fd(rd.as_raw_fd()).unwrap(),
        CancelResult::Canceled
    );
    for r in &reqs {
        assert_eq!(r.error().unwrap_err().kind(), ErrorKind::Canceled);
    }
}

/// A completion in the second ring reaches a notification callback with
/// nobody waiting (through the completion eventfd, registered on every ring,
/// also on one created after it was).
#[test]
fn a_completion_in_the_second_ring_runs_its_callback() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = uring(2);
    let (tx, rx) = mpsc::channel();
    // The eventfd exists before the second ring does.
    let (rd0, wr0) = pipe();
    let _r0 = notified_read_in_ring(&aio, 0, &rd0, 0, tx.clone());
    let (rd, wr) = pipe();
    let mut r = notified_read_in_ring(&aio, 1, &rd, 1, tx);
    assert_eq!(aio.rings(), 2);
    let barrier = Arc::new(Barrier::new(2));
    let b2 = Arc::clone(&barrier);
    let writer = std::thread::spawn(move || {
        b2.wait();
        rustix::io::write(&wr, b"notified").unwrap();
        wr
    });
    barrier.wait();
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), SigVal(1));
    assert_eq!(r.aio_return().unwrap().data(), b"notified");
    rustix::io::write(&wr0, b"x").unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), SigVal(0));
    drop(writer.join().unwrap());
}

/// Four threads at once, each with its own pipe and the shared file: pipe
/// reads that wait for a write, reads of the file, cancels and waits on
/// several requests, on a context with up to 4 rings. Every request ends with
/// its own data (or as cancelled), and no wait hangs. The threads end
/// together: one that exits while a read of another, submitted by its
/// `io_uring_enter`, still waits may take it along when that read has no fd
/// copy (see the README's limits; the requests of an exiting submitter are
/// tested in `tests/aio.rs`).
#[test]
fn threads_mixing_pipes_files_and_cancels_all_finish() {
    if common::uring::uring_refused() {
        return;
    }
    const ROUNDS: usize = 2000;
    let data = pattern(1 << 20);
    let file = Arc::new(temp_file(&data));
    let data = Arc::new(data);
    let aio = uring(4);
    let (done_tx, done_rx) = mpsc::channel();
    let end = Arc::new(Barrier::new(4));
    for t in 0..4u8 {
        let (aio, file, data, done_tx, end) = (
            aio.clone(),
            Arc::clone(&file),
            Arc::clone(&data),
            done_tx.clone(),
            Arc::clone(&end),
        );
        std::thread::spawn(move || {
            let (rd, wr) = pipe();
            for round in 0..ROUNDS {
                let tag = [t, (round % 251) as u8, 7, 9];
                let mut p = aio.read(&rd, 0, vec![0u8; 4]).unwrap();
                let off = (round * 4096 + t as usize * 977) % (data.len() - 8192);
                let mut f = aio.read(&*file, off as i64, vec![0u8; 8192]).unwrap();
                // A read that is cancelled while it waits.
                let (crd, _cwr) = pipe();
                let c = aio.read(&crd, 0, vec![0u8; 1]).unwrap();
                rustix::io::write(&wr, &tag).unwrap();
                aio.suspend([&p, &f], Some(Duration::from_secs(30)))
                    .unwrap();
                let pc = p.wait().unwrap();
                assert_eq!(pc.data(), &tag, "thread {t} round {round}: {:?}", pc.result);
                assert!(f.wait().unwrap().data() == &data[off..off + 8192]);
                assert_eq!(c.cancel().unwrap(), CancelResult::Canceled);
            }
            end.wait();
            done_tx.send(t).unwrap();
        });
    }
    for _ in 0..4 {
        done_rx
            .recv_timeout(Duration::from_secs(120))
            .expect("a thread did not finish (a lost wake-up?)");
    }
    assert!((1..=4).contains(&aio.rings()));
}
