//! Contexts made and dropped one after another under one long-lived tokio
//! runtime, on both engines, with futures of every kind: each context's
//! descriptors and threads go with it. (A file of its own: it counts the
//! process's open descriptors and threads.)
#![cfg(feature = "tokio")]

use std::future::IntoFuture;
use std::io::Write;
use std::sync::Arc;

use posixrt::aio::{Backend, ListMode, Notify, Op};

#[allow(unused_macros, unused_imports)]
mod common;
use common::both;

/// The tests count the process's descriptors: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

/// One context: a read future, a request future and a list future wait on
/// an empty pipe, a write completes them, and the context is dropped.
fn one_context(b: Backend, rt: &tokio::runtime::Runtime) {
    let aio = common::ctx(b);
    let (r, w) = common::pipe();
    let r = Arc::new(std::fs::File::from(r));
    let mut w = std::fs::File::from(w);
    rt.block_on(async {
        let aio = aio.clone();
        let task = tokio::spawn(async move {
            let a = aio.read_async(Arc::clone(&r), 0, vec![0u8; 1]);
            let q = aio.read(&*r, 0, vec![0u8; 1]).unwrap().into_future();
            let l = aio
                .lio_listio(
                    ListMode::NoWait,
                    [Some(Op::read(&*r, 0, vec![0u8; 1]))],
                    Notify::None,
                )
                .unwrap()
                .into_future();
            let (a, q, l) = tokio::join!(a, q, l);
            assert!(a.is_ok() && q.is_ok() && l.is_ok());
        });
        tokio::task::yield_now().await;
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        w.write_all(b"abc").unwrap();
        task.await.unwrap();
    });
    drop(aio);
}

fn contexts_leave_nothing(b: Backend) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    for (multi, rt) in [(true, common::multi_rt()), (false, common::current_rt())] {
        one_context(b, &rt);
        let (fds, ths) = (open_fds(), threads());
        for _ in 0..8 {
            one_context(b, &rt);
        }
        // (A context's threads leave as it drops, and the last of them lets go
        // of its descriptors (the pool's epoll and eventfd) as it ends: wait
        // for both, bounded.)
        let t0 = std::time::Instant::now();
        while (threads() > ths || open_fds() > fds)
            && t0.elapsed() < std::time::Duration::from_secs(5)
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // (At most: the first context's may still have been leaving when the
        // counts were taken.)
        assert!(
            open_fds() <= fds,
            "{b:?} multi {multi}: descriptors left by 8 contexts: {} > {fds}",
            open_fds()
        );
        assert!(
            threads() <= ths,
            "{b:?} multi {multi}: threads left by 8 contexts: {} > {ths}",
            threads()
        );
    }
}
both!(contexts_leave_nothing, contexts_leave_nothing);
