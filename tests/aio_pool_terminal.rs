//! The thread engine keeps its promise for terminals: no number of idle
//! descriptors exhausts the workers. A terminal refuses `RWF_NOWAIT`, so a
//! write to a blocking one that polled writable is a plain `write(2)`; it
//! used to run on a worker, which it held until the terminal took every
//! byte: two writes of 256 KiB to a pty nobody read stalled `workers(2)`, and
//! a cached read behind them never ran. Such a write now runs on a thread of
//! its own; these tests check that the queue moves meanwhile, that writes to
//! one terminal still land whole and in order, what a cancel of one reports,
//! and that a context dropped while one is stalled is let go.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::time::Duration;

use posixrt::aio::{Aio, Backend, CancelResult, Request};

#[allow(unused_macros, unused_imports)]
mod common;
use common::{pattern, pty, temp_file};

/// Bounds every wait: long enough that only a hang reaches it.
const HANG: Duration = Duration::from_secs(20);

fn pool(workers: usize) -> Aio {
    Aio::builder()
        .backend(Backend::Threads)
        .workers(workers)
        .build()
        .unwrap()
}

/// The slave's output, read from the master until `want` bytes came (bounded
/// by [`HANG`]).
fn drain(master: &mut std::fs::File, want: usize) -> Vec<u8> {
    rustix::fs::fcntl_setfl(&*master, rustix::fs::OFlags::NONBLOCK).unwrap();
    let end = std::time::Instant::now() + HANG;
    let mut got = Vec::with_capacity(want);
    let mut b = vec![0u8; 64 << 10];
    while got.len() < want {
        assert!(
            std::time::Instant::now() < end,
            "the terminal gave {} of {want} bytes",
            got.len()
        );
        match master.read(&mut b) {
            Ok(n) => got.extend_from_slice(&b[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(e) => panic!("reading the pty master: {e}"),
        }
    }
    got
}

/// Writes `len` bytes of `byte` to `slave` and waits until they stall there
/// (nobody reads the master): the request is still running.
fn stalled_write(aio: &Aio, slave: &OwnedFd, byte: u8, len: usize) -> Request<Vec<u8>> {
    let r = aio.write(slave, 0, vec![byte; len]).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert!(
        !r.is_done(),
        "a write of {len} bytes to an unread pty completed"
    );
    r
}

/// A cached read submitted after `n` stalled writes completes.
fn cached_read_runs(aio: &Aio) {
    let data = pattern(4096);
    let f = temp_file(&data);
    let mut r = aio.read(&f, 0, vec![0u8; 4096]).unwrap();
    assert!(
        aio.suspend([&r], Some(HANG)).is_ok(),
        "a cached read waited behind writes to terminals nobody reads"
    );
    let c = r.wait().unwrap();
    assert_eq!(*c.result.as_ref().unwrap(), 4096);
    assert!(c.data() == &data[..]);
}

/// The review's reproduction: writes of 256 KiB to two ptys nobody reads
/// (each polls writable at first, so each went to `write(2)` on a worker),
/// with two workers, then a read of a cached file: the read completes. Once
/// the masters are read, both writes complete whole.
#[test]
fn two_stalled_terminal_writes_leave_two_workers_free() {
    let aio = pool(2);
    let (mut m1, s1) = pty();
    let (mut m2, s2) = pty();
    let len = 256 << 10;
    let mut a = stalled_write(&aio, &s1, b'a', len);
    let mut b = stalled_write(&aio, &s2, b'b', len);
    cached_read_runs(&aio);
    assert!(
        !a.is_done() && !b.is_done(),
        "the terminals were read by nobody"
    );
    let got = drain(&mut m1, len);
    assert!(got.iter().all(|&c| c == b'a'));
    assert_eq!(a.wait().unwrap().result.unwrap(), len);
    let got = drain(&mut m2, len);
    assert!(got.iter().all(|&c| c == b'b'));
    assert_eq!(b.wait().unwrap().result.unwrap(), len);
}

/// Writes to one terminal through one descriptor land in the order they
/// were made, each whole, while the queue moves.
#[test]
fn writes_to_one_terminal_stay_in_order() {
    let aio = pool(2);
    let (mut master, slave) = pty();
    let len = 64 << 10;
    let mut reqs: Vec<_> = (0..4u8)
        .map(|i| aio.write(&slave, 0, vec![b'a' + i; len]).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(20));
    cached_read_runs(&aio);
    let got = drain(&mut master, 4 * len);
    for (i, r) in reqs.iter_mut().enumerate() {
        assert_eq!(r.wait().unwrap().result.unwrap(), len);
        let part = &got[i * len..(i + 1) * len];
        assert!(
            part.iter().all(|&c| c == b'a' + i as u8),
            "write {i} out of order"
        );
    }
}

/// Stalled writes to more terminals than there are workers (one worker, four
/// ptys): the queue still moves, and each write completes once its master is
/// read.
#[test]
fn more_stalled_terminals_than_workers() {
    let aio = pool(1);
    let ptys: Vec<_> = (0..4).map(|_| pty()).collect();
    let len = 128 << 10;
    let mut reqs: Vec<_> = ptys
        .iter()
        .enumerate()
        .map(|(i, (_, s))| stalled_write(&aio, s, b'0' + i as u8, len))
        .collect();
    cached_read_runs(&aio);
    for (i, ((mut m, _s), r)) in ptys.into_iter().zip(&mut reqs).enumerate() {
        let got = drain(&mut m, len);
        assert!(got.iter().all(|&c| c == b'0' + i as u8));
        assert_eq!(r.wait().unwrap().result.unwrap(), len);
    }
    cached_read_runs(&aio);
}

/// A cancel of a write the terminal holds reports it running
/// (`AIO_NOTCANCELED`, at once); a write queued behind it on the same
/// terminal is cancelled (ECANCELED). The first completes whole once read.
#[test]
fn a_stalled_terminal_write_is_not_cancelled() {
    let aio = pool(2);
    let (mut master, slave) = pty();
    let len = 256 << 10;
    let mut a = stalled_write(&aio, &slave, b'a', len);
    let mut b = aio.write(&slave, 0, vec![b'b'; 16]).unwrap();
    assert_eq!(b.cancel().unwrap(), CancelResult::Canceled);
    assert_eq!(a.cancel().unwrap(), CancelResult::NotCanceled);
    cached_read_runs(&aio);
    let got = drain(&mut master, len);
    assert!(got.iter().all(|&c| c == b'a'));
    assert_eq!(a.wait().unwrap().result.unwrap(), len);
    let e = b.wait().unwrap().result.unwrap_err();
    assert_eq!(e.errno(), Some(libc::ECANCELED));
}

/// A context dropped while a terminal write is stalled is let go (its drop
/// returns); the write goes on and ends once the terminal is read; a new
/// context serves requests meanwhile.
#[test]
fn a_context_dropped_with_a_stalled_terminal_write() {
    let (mut master, slave) = pty();
    let len = 256 << 10;
    let aio = pool(1);
    let r = stalled_write(&aio, &slave, b'z', len);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(r);
        drop(aio);
        let _ = tx.send(());
    });
    rx.recv_timeout(HANG)
        .expect("dropping the context did not return");
    cached_read_runs(&pool(1));
    let got = drain(&mut master, len);
    assert!(got.iter().all(|&c| c == b'z'));
}
