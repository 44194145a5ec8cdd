//! Writes to a full datagram socket on the thread engine hold no worker: they
//! park, and the poller tries them again (on `POLLOUT` and on a timer, as a
//! unix datagram socket's `POLLOUT` lags the room a write needs). A worker
//! used to wait in a blocking `write(2)`: as many such writes as workers left
//! every other request of the context (a read of a regular file too) waiting
//! until the sockets were read.

use std::os::unix::net::UnixDatagram;
use std::time::Duration;

use posixrt::aio::{Aio, Backend};

#[path = "common/caps.rs"]
mod caps;
use caps::wait_for;

/// A datagram socket pair whose first end's send buffer is full of 256-byte
/// datagrams nobody read (blocking again).
fn full_socket() -> (UnixDatagram, UnixDatagram) {
    let (a, peer) = UnixDatagram::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    while a.send(&[0u8; 256]).is_ok() {}
    a.set_nonblocking(false).unwrap();
    (a, peer)
}

/// A regular file (a memfd) holding `bytes`.
fn file_with(bytes: &[u8]) -> std::fs::File {
    let f = rustix::fs::memfd_create("dgram-full", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    assert_eq!(rustix::io::write(&f, bytes).unwrap(), bytes.len());
    std::fs::File::from(f)
}

/// A context of the thread engine with `workers` workers.
fn thread_pool(workers: usize) -> Aio {
    Aio::builder()
        .backend(Backend::Threads)
        .workers(workers)
        .build()
        .unwrap()
}

#[test]
fn full_datagram_sockets_hold_no_worker() {
    let aio = thread_pool(2);
    let socks: Vec<_> = (0..2).map(|_| full_socket()).collect();
    // As many writes as workers, queued before the read (the same priority:
    // the workers take them first).
    let mut writes: Vec<_> = socks
        .iter()
        .enumerate()
        .map(|(k, (a, _))| aio.write(a, 0, vec![k as u8 + 1; 256]).unwrap())
        .collect();
    let f = file_with(b"abcdef");
    let mut r = aio.read(&f, 2, vec![0u8; 3]).unwrap();
    assert!(
        wait_for(Duration::from_secs(10), || r.is_done()),
        "the file read waits for the datagram writes"
    );
    let c = r.wait().unwrap();
    assert_eq!(*c.result.as_ref().unwrap(), 3);
    assert_eq!(c.data(), b"cde");
    // Nobody read the sockets: the writes still wait.
    for w in &writes {
        assert!(!w.is_done(), "a write to a full socket completed");
    }
    for (k, ((_, peer), w)) in socks.iter().zip(&mut writes).enumerate() {
        // One datagram read makes room for one more. The socket's POLLOUT
        // waits for the send queue to fall below a quarter of the buffer: the
        // timed retry sends it.
        let mut b = [0u8; 512];
        assert_eq!(peer.recv(&mut b).unwrap(), 256);
        assert!(
            wait_for(Duration::from_secs(10), || w.is_done()),
            "write {k} waits after room was made"
        );
        assert_eq!(w.wait().unwrap().result.unwrap(), 256);
        // It went whole, last.
        peer.set_nonblocking(true).unwrap();
        let mut last = None;
        while let Ok(n) = peer.recv(&mut b) {
            last = Some(b[..n].to_vec());
        }
        assert_eq!(last, Some(vec![k as u8 + 1; 256]), "write {k}'s datagram");
    }
}

/// Several writes to one full socket, and a read of another socket behind
/// them on a one-worker context: the read completes, and the writes go in
/// order, each whole, once the socket is read.
#[test]
fn writes_to_a_full_socket_keep_their_order() {
    let aio = thread_pool(1);
    let (a, peer) = full_socket();
    let mut writes: Vec<_> = (1..=4u8)
        .map(|k| aio.write(&a, 0, vec![k; 100 + k as usize]).unwrap())
        .collect();
    let (x, y) = UnixDatagram::pair().unwrap();
    let mut r = aio.read(&x, 0, vec![0u8; 16]).unwrap();
    y.send(b"hello").unwrap();
    assert!(
        wait_for(Duration::from_secs(10), || r.is_done()),
        "the socket read waits for the datagram writes"
    );
    assert_eq!(r.wait().unwrap().data(), b"hello");
    assert!(writes.iter().all(|w| !w.is_done()));
    // Drain the socket until the four came.
    peer.set_nonblocking(true).unwrap();
    let mut got = Vec::new();
    let mut b = [0u8; 512];
    assert!(wait_for(Duration::from_secs(10), || {
        while let Ok(n) = peer.recv(&mut b) {
            if b[0] != 0 {
                got.push(b[..n].to_vec());
            }
        }
        got.len() == 4
    }));
    let want: Vec<Vec<u8>> = (1..=4u8).map(|k| vec![k; 100 + k as usize]).collect();
    assert_eq!(got, want, "in order, each whole");
    for (k, w) in writes.iter_mut().enumerate() {
        assert_eq!(w.wait().unwrap().result.unwrap(), 101 + k);
    }
}

/// Letting go of the handle of a write to a full socket ends it, with
/// nothing sent, without waiting for room (it waited, holding its worker,
/// until the socket was read); a write after it goes alone once there is
/// room.
#[test]
fn letting_go_of_a_write_to_a_full_socket_ends_it() {
    let aio = thread_pool(1);
    let (a, peer) = full_socket();
    let w = aio.write(&a, 0, vec![7u8; 256]).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(w);
        let _ = tx.send(());
    });
    assert!(
        rx.recv_timeout(Duration::from_secs(10)).is_ok(),
        "letting go of the handle waits for room"
    );
    let mut next = aio.write(&a, 0, vec![8u8; 200]).unwrap();
    peer.set_nonblocking(true).unwrap();
    let mut got = Vec::new();
    let mut b = [0u8; 512];
    assert!(wait_for(Duration::from_secs(10), || {
        while let Ok(n) = peer.recv(&mut b) {
            if b[0] != 0 {
                got.push(b[..n].to_vec());
            }
        }
        next.is_done() && !got.is_empty()
    }));
    assert_eq!(got, vec![vec![8u8; 200]], "only the write after it went");
    assert_eq!(next.wait().unwrap().result.unwrap(), 200);
}
