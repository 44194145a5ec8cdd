//! Contexts made and dropped one after another under one long-lived tokio
//! runtime: each context's registration with the runtime's reactor goes with
//! it. (A file of its own: it counts the process's open descriptors.)
#![cfg(feature = "tokio")]

use std::io::Write;
use std::sync::Arc;

use posixrt::aio::{Aio, Backend};

#[allow(unused_macros, unused_imports)]
mod common;

/// The tests count the process's descriptors: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// One context: a read of an empty pipe waits (the runtime's reactor watches
/// the context's completion eventfd), is completed by a write, and the
/// context is dropped.
fn one_context(rt: &tokio::runtime::Runtime) {
    let aio = Aio::builder()
        .backend(Backend::Uring)
        .build()
        .expect("context");
    let (r, w) = common::pipe();
    let r = Arc::new(std::fs::File::from(r));
    let mut w = std::fs::File::from(w);
    rt.block_on(async {
        let aio = aio.clone();
        let task = tokio::spawn(async move {
            let c = aio.read_async(r, 0, vec![0u8; 5]).await.unwrap();
            assert_eq!(c.data(), b"hello");
        });
        // (Written once the read waits, or before: either way it completes.)
        tokio::task::yield_now().await;
        w.write_all(b"hello").unwrap();
        task.await.unwrap();
    });
    drop(aio);
}

#[test]
fn uring_contexts_dropped_under_a_live_runtime_leave_no_descriptor() {
    if common::uring::uring_refused() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    for rt in [common::multi_rt(), common::current_rt()] {
        // (The first one opens what stays: the runtime's own descriptors.)
        one_context(&rt);
        let before = open_fds();
        for _ in 0..16 {
            one_context(&rt);
        }
        assert_eq!(open_fds(), before, "descriptors left by 16 contexts");
    }
}

/// A context whose deferred read was given up in a `block_on` body that
/// returned before the runtime's turn ended: dropping the context closes its
/// descriptors at once, although the runtime stays idle and alive.
#[test]
fn uring_context_dropped_after_a_block_on_that_left_early_leaves_no_descriptor() {
    if common::uring::uring_refused() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let rt = common::current_rt();
    one_context(&rt);
    let before = open_fds();
    let aio = Aio::builder()
        .backend(Backend::Uring)
        .build()
        .expect("context");
    let f = Arc::new(common::temp_file(b"abcd"));
    rt.block_on(async {
        let idle: Vec<_> = (0..2)
            .map(|_| tokio::spawn(std::future::pending::<()>()))
            .collect();
        tokio::task::yield_now().await;
        for _ in 0..4 {
            let mut fut = std::pin::pin!(aio.read_async(Arc::clone(&f), 0, vec![0u8; 4]));
            let _ = std::future::poll_fn(|cx| {
                std::task::Poll::Ready(std::future::Future::poll(fut.as_mut(), cx))
            })
            .await;
        }
        idle.into_iter().for_each(|t| t.abort());
    });
    drop((aio, f));
    assert_eq!(open_fds(), before, "descriptors left by the context");
}
