//! A `SIGEV_THREAD` callback may hold the last handle of its context: the
//! context then ends on the notification thread, once the callback is done,
//! and the process goes on: no thread of the context waits for itself, and
//! new contexts work. `both!(name, f)` makes `name::uring` and `name::threads`.

use std::sync::mpsc;
use std::time::Duration;

use posixrt::aio::{Backend, Notify, Op};

mod common;
use common::both;
use common::ctx;

fn last_handle_in_callback(b: Backend) {
    let f = common::temp_file(&[5u8; 16]);
    for round in 0..5 {
        let aio = ctx(b);
        let (tx, rx) = mpsc::channel();
        let held = aio.clone();
        let n = Notify::thread(round, move |v| {
            // The callback owns a handle; it is dropped with the callback.
            let _ = &held;
            let _ = tx.send(v.int());
        });
        let r = aio.submit(Op::read(&f, 0, vec![0u8; 4]).notify(n)).unwrap();
        // Give up the request and every other handle: the callback's is the
        // last one once the request is done.
        drop(r);
        drop(aio);
        let v = rx
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("round {round}: the callback did not run"));
        assert_eq!(v, round);
    }
    // A new context works after the others ended on their threads.
    let aio = ctx(b);
    let (tx, rx) = mpsc::channel();
    let mut r = aio
        .submit(
            Op::read(&f, 0, vec![0u8; 4]).notify(Notify::thread(9, move |v| {
                let _ = tx.send(v.int());
            })),
        )
        .unwrap();
    assert_eq!(r.wait().unwrap().data(), &[5u8; 4]);
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 9);
}
both!(the_last_handle_may_be_a_callback_s, last_handle_in_callback);
