//! A future polled outside the tasks of a runtime built without its I/O
//! driver tries the registration with tokio's panic caught and kept quiet
//! (`aio/tokio_reap.rs`). The panic hook that does so must hand every other
//! panic to the hook the program set. A file of its own: it sets the
//! process's panic hook.
#![cfg(feature = "tokio")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use posixrt::aio::{Aio, Backend};

static SEEN: AtomicUsize = AtomicUsize::new(0);

#[test]
fn other_panics_still_reach_the_programs_hook() {
    std::panic::set_hook(Box::new(|_| {
        SEEN.fetch_add(1, Ordering::SeqCst);
    }));
    let aio = Aio::builder().backend(Backend::Uring).build().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    // A read that waits (a pipe written to 100 ms later), so it is armed.
    let (r, w) = rustix::pipe::pipe().unwrap();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        rustix::io::write(&w, b"abc").unwrap();
    });
    let r = Arc::new(std::fs::File::from(r));
    let c = rt.block_on(aio.read_async(r, 0, vec![0u8; 3])).unwrap();
    writer.join().unwrap();
    assert_eq!(c.data(), b"abc");
    assert_eq!(SEEN.load(Ordering::SeqCst), 0, "the caught panic is quiet");
    let r = std::thread::spawn(|| panic!("a panic of the program")).join();
    assert!(r.is_err());
    assert_eq!(SEEN.load(Ordering::SeqCst), 1, "the program's hook saw it");
    let _ = std::panic::take_hook();
}
