//! AIO futures under tokio: woken by the runtime's reactor, with no helper thread.
//!
//! This file holds only tokio tests, so that no test in this process starts the
//! io_uring completion thread through another path (a notification, or a future
//! polled outside tokio): the thread-count assertions depend on it.
#![cfg(feature = "tokio")]

use std::fs::File;
use std::sync::Arc;

use posixrt::aio::{Aio, Backend, ListMode, Notify, Op};

mod common;
use common::both;
use common::ctx;

const CHUNK: usize = 4096;
const CHUNKS: usize = 64;

fn byte(i: usize) -> u8 {
    (i * 7 % 251) as u8
}

/// A memory file with `CHUNKS` chunks of a known pattern.
fn data_file() -> Arc<File> {
    use std::io::Write;
    let fd = rustix::fs::memfd_create("aio_async", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    let mut f = File::from(fd);
    let data: Vec<u8> = (0..CHUNK * CHUNKS).map(byte).collect();
    f.write_all(&data).unwrap();
    Arc::new(f)
}

/// Threads of this process whose name starts with `prefix`.
fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .filter(|c| c.trim_end().starts_with(prefix))
        .count()
}

/// The io_uring completion thread (`posixrt-aio-complete`, cut to 15 bytes).
const COMPLETION_THREAD: &str = "posixrt-aio-com";

/// Reads chunk `i` with `.await` and checks its bytes.
async fn read_chunk(aio: Aio, f: Arc<File>, i: usize) -> usize {
    let c = aio
        .read(&*f, (i * CHUNK) as i64, vec![0u8; CHUNK])
        .unwrap()
        .await
        .unwrap();
    assert_eq!(c.result.as_ref().copied().unwrap(), CHUNK);
    for (k, b) in c.data().iter().enumerate() {
        assert_eq!(*b, byte(i * CHUNK + k), "chunk {i} byte {k}");
    }
    i
}

fn current_thread_reads(b: Backend) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let aio = ctx(b);
    let f = data_file();
    // One at a time, then all at once.
    rt.block_on(async {
        for i in 0..CHUNKS {
            assert_eq!(read_chunk(aio.clone(), Arc::clone(&f), i).await, i);
        }
        let tasks: Vec<_> = (0..CHUNKS)
            .map(|i| tokio::spawn(read_chunk(aio.clone(), Arc::clone(&f), i)))
            .collect();
        let mut seen = [false; CHUNKS];
        for t in tasks {
            seen[t.await.unwrap()] = true;
        }
        assert!(seen.iter().all(|s| *s));
    });
    if b == Backend::Uring {
        assert_eq!(
            threads_named(COMPLETION_THREAD),
            0,
            "a future under tokio must be woken by the runtime's reactor, not a completion thread"
        );
    }
}
both!(
    current_thread_reads_need_no_helper_thread,
    current_thread_reads
);

fn multi_thread_reads(b: Backend) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let aio = ctx(b);
    let f = data_file();
    rt.block_on(async {
        // 32 tasks, each with its own read in flight, four rounds.
        for _ in 0..4 {
            let tasks: Vec<_> = (0..32)
                .map(|i| tokio::spawn(read_chunk(aio.clone(), Arc::clone(&f), i * 2)))
                .collect();
            for (k, t) in tasks.into_iter().enumerate() {
                assert_eq!(t.await.unwrap(), k * 2);
            }
        }
    });
    if b == Backend::Uring {
        assert_eq!(threads_named(COMPLETION_THREAD), 0);
    }
}
both!(multi_thread_reads_need_no_helper_thread, multi_thread_reads);

fn list_future(b: Backend) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let aio = ctx(b);
    let f = data_file();
    rt.block_on(async {
        let ops = (0..CHUNKS).map(|i| Some(Op::read(&*f, (i * CHUNK) as i64, vec![0u8; CHUNK])));
        let done = aio
            .lio_listio(ListMode::NoWait, ops, Notify::None)
            .unwrap()
            .await
            .unwrap();
        assert_eq!(done.len(), CHUNKS);
        for (i, c) in done.iter().enumerate() {
            let c = c.as_ref().unwrap();
            assert_eq!(c.data().len(), CHUNK);
            assert_eq!(c.data()[0], byte(i * CHUNK));
        }
    });
    if b == Backend::Uring {
        assert_eq!(threads_named(COMPLETION_THREAD), 0);
    }
}
both!(list_future_needs_no_helper_thread, list_future);

/// One context used from a runtime, that runtime dropped, then a new runtime (whose
/// id may be the old one's): the futures of the second still complete.
fn context_outlives_runtimes(b: Backend) {
    let aio = ctx(b);
    let f = data_file();
    for round in 0..3 {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            for i in 0..8 {
                assert_eq!(
                    read_chunk(aio.clone(), Arc::clone(&f), round * 8 + i).await,
                    round * 8 + i
                );
            }
        });
    }
}
both!(context_outlives_runtimes, context_outlives_runtimes);

/// Two runtimes alive at once, on two threads, share one context: each is woken by
/// its own reactor.
fn two_runtimes_at_once(b: Backend) {
    let aio = ctx(b);
    let f = data_file();
    let barrier = Arc::new(std::sync::Barrier::new(2));
    let handles: Vec<_> = (0..2)
        .map(|t| {
            let (aio, f, barrier) = (aio.clone(), Arc::clone(&f), Arc::clone(&barrier));
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                barrier.wait();
                rt.block_on(async {
                    for i in 0..CHUNKS / 2 {
                        let k = t * CHUNKS / 2 + i;
                        assert_eq!(read_chunk(aio.clone(), Arc::clone(&f), k).await, k);
                    }
                });
                // Keep this runtime alive until the other is done too.
                barrier.wait();
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}
both!(two_runtimes_at_once, two_runtimes_at_once);
