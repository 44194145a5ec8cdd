//! AIO futures under tokio: woken by the runtime's reactor, with no helper thread.
//!
//! This file holds only tokio tests, so that no test in this process starts the
//! io_uring completion thread through another path (a notification, or a future
//! polled outside tokio): the thread-count assertions depend on it.
#![cfg(feature = "tokio")]

use std::fs::File;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use posixrt::aio::{Aio, Backend, ListMode, Notify, Op};

mod common;
use common::ctx;
use common::current_rt;
use common::{both, threads_named};

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

/// The io_uring completion thread (`posixrt-aio-complete`, cut to 15 bytes).
const COMPLETION_THREAD: &str = "posixrt-aio-com";

/// On io_uring, no completion thread was started: the futures under tokio
/// were woken by the runtime's reactor.
#[track_caller]
fn assert_no_completion_thread(b: Backend) {
    if b == Backend::Uring {
        assert_eq!(
            threads_named(COMPLETION_THREAD),
            0,
            "a future under tokio must be woken by the runtime's reactor, not a completion thread"
        );
    }
}

/// Awaits the tasks in order; task `k` must give `want(k)`.
async fn await_in_order(tasks: Vec<tokio::task::JoinHandle<usize>>, want: impl Fn(usize) -> usize) {
    for (k, t) in tasks.into_iter().enumerate() {
        assert_eq!(t.await.unwrap(), want(k), "task {k}");
    }
}

/// Reads chunks `0..n` with `read_async`, one task each, and checks them.
async fn read_chunks_in_tasks(aio: &Aio, f: &Arc<File>, n: usize) {
    let tasks: Vec<_> = (0..n)
        .map(|i| tokio::spawn(read_chunk_async(aio.clone(), Arc::clone(f), i)))
        .collect();
    await_in_order(tasks, |k| k).await;
}

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
    let rt = current_rt();
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
    assert_no_completion_thread(b);
}
both!(
    current_thread_reads_need_no_helper_thread,
    current_thread_reads
);

fn multi_thread_reads(b: Backend) {
    let rt = common::multi_rt();
    let aio = ctx(b);
    let f = data_file();
    rt.block_on(async {
        // 32 tasks, each with its own read in flight, four rounds.
        for _ in 0..4 {
            let tasks: Vec<_> = (0..32)
                .map(|i| tokio::spawn(read_chunk(aio.clone(), Arc::clone(&f), i * 2)))
                .collect();
            await_in_order(tasks, |k| k * 2).await;
        }
    });
    assert_no_completion_thread(b);
}
both!(multi_thread_reads_need_no_helper_thread, multi_thread_reads);

fn list_future(b: Backend) {
    let rt = current_rt();
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
    assert_no_completion_thread(b);
}
both!(list_future_needs_no_helper_thread, list_future);

/// One context used from a runtime, that runtime dropped, then a new runtime (whose
/// id may be the old one's): the futures of the second still complete.
fn context_outlives_runtimes(b: Backend) {
    let aio = ctx(b);
    let f = data_file();
    for round in 0..3 {
        let rt = current_rt();
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
                let rt = current_rt();
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

/// Reads chunk `i` with `read_async` (submitted when first polled) and checks
/// its bytes.
async fn read_chunk_async(aio: Aio, f: Arc<File>, i: usize) -> usize {
    let c = aio
        .read_async(f, (i * CHUNK) as i64, vec![0u8; CHUNK])
        .await
        .unwrap();
    assert_eq!(c.result.as_ref().copied().unwrap(), CHUNK);
    for (k, b) in c.data().iter().enumerate() {
        assert_eq!(*b, byte(i * CHUNK + k), "chunk {i} byte {k}");
    }
    i
}

/// Polls `f` once, from inside the task that awaits this.
async fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *f).poll(cx))).await
}

/// Two tasks that never finish, so the runtime has other tasks (the condition
/// for a submission to wait for the end of the turn).
fn idle_tasks() -> Vec<tokio::task::JoinHandle<()>> {
    (0..2)
        .map(|_| tokio::spawn(std::future::pending::<()>()))
        .collect()
}

fn submit_on_poll_reads(b: Backend) {
    let aio = ctx(b);
    let f = data_file();
    let rt = current_rt();
    rt.block_on(async {
        for i in 0..CHUNKS {
            assert_eq!(read_chunk_async(aio.clone(), Arc::clone(&f), i).await, i);
        }
        for _ in 0..4 {
            read_chunks_in_tasks(&aio, &f, CHUNKS).await;
        }
    });
    drop(rt);
    let rt = common::multi_rt();
    rt.block_on(async {
        for _ in 0..4 {
            let tasks: Vec<_> = (0..32)
                .map(|i| {
                    let (aio, f) = (aio.clone(), Arc::clone(&f));
                    tokio::spawn(async move {
                        // Several reads per task, so that tasks submit again
                        // while others' reads wait for a flush.
                        for k in 0..4 {
                            let c = (i * 2 + k) % CHUNKS;
                            assert_eq!(read_chunk_async(aio.clone(), Arc::clone(&f), c).await, c);
                        }
                        i
                    })
                })
                .collect();
            await_in_order(tasks, |k| k).await;
        }
    });
    assert_no_completion_thread(b);
}
both!(
    submit_on_poll_reads_need_no_helper_thread,
    submit_on_poll_reads
);

/// 32 tasks that each read once in one runtime turn: their requests reach the
/// kernel together, at the end of the turn (every `aio_submit` of the file comes
/// before its first `aio_complete`). Entering the ring per request would
/// complete each read (a memory file's, done inline) before the next is submitted.
#[test]
fn uring_one_turn_enters_once() {
    if common::uring::uring_refused() {
        return;
    }
    use std::os::fd::AsRawFd;
    let aio = ctx(Backend::Uring);
    let f = data_file();
    let fd = f.as_raw_fd();
    let me = rustix::thread::gettid().as_raw_nonzero().get() as u32;
    let rt = current_rt();
    // The first read of an fd number a context has not seen is a probe, entered
    // at once (it learns whether the fd is a pipe or a socket): read once first,
    // so the turn below is the 32 reads alone. (A memfd's reads go to the kernel's
    // workers, so the probe's completion could be reaped before the next task
    // submitted: the test failed about 1 run in 10.) A synchronous read: a lone
    // future's would teach this thread that batching does not pay here.
    let mut r = aio.read(&*f, 0, vec![0u8; CHUNK]).unwrap();
    aio.suspend([&r], None).unwrap();
    assert_eq!(r.aio_return().unwrap().result.unwrap(), CHUNK);
    let t = posixrt::trace::Trace::create(&posixrt::trace::TraceAttr::new()).unwrap();
    t.start().unwrap();
    rt.block_on(read_chunks_in_tasks(&aio, &f, 32));
    assert_eq!(
        common::submit_complete_order(t, me, fd),
        format!("{}{}", "s".repeat(32), "c".repeat(32))
    );
}

/// Reads chunks `0..n` with `n` futures in flight in one task (a `join_all`),
/// each submitted when first polled, and checks their bytes.
async fn join_reads(aio: &Aio, f: &Arc<File>, n: usize) {
    let mut futs: Vec<_> = (0..n)
        .map(|i| Some(aio.read_async(Arc::clone(f), (i * CHUNK) as i64, vec![0u8; CHUNK])))
        .collect();
    std::future::poll_fn(|cx| {
        let mut all = true;
        for (i, slot) in futs.iter_mut().enumerate() {
            let Some(fut) = slot.as_mut() else { continue };
            match Pin::new(fut).poll(cx) {
                Poll::Ready(c) => {
                    assert_eq!(c.unwrap().data()[1], byte(i * CHUNK + 1), "chunk {i}");
                    *slot = None;
                }
                Poll::Pending => all = false,
            }
        }
        if all {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

/// 32 futures in flight in one lone task (`block_on`, no other task): once a
/// submission that waited for the turn's end gathered the others, their
/// requests reach the kernel together, as 32 tasks' do.
#[test]
fn uring_one_task_many_futures_enter_together() {
    if common::uring::uring_refused() {
        return;
    }
    use std::os::fd::AsRawFd;
    let aio = ctx(Backend::Uring);
    let f = data_file();
    let fd = f.as_raw_fd();
    let me = rustix::thread::gettid().as_raw_nonzero().get() as u32;
    let rt = current_rt();
    rt.block_on(async {
        // The first reads of a lone task enter at once; a later one waits and
        // finds the others.
        for _ in 0..2 {
            join_reads(&aio, &f, 32).await;
        }
    });
    let t = posixrt::trace::Trace::create(&posixrt::trace::TraceAttr::new()).unwrap();
    t.start().unwrap();
    rt.block_on(join_reads(&aio, &f, 32));
    assert_eq!(
        common::submit_complete_order(t, me, fd),
        format!("{}{}", "s".repeat(32), "c".repeat(32))
    );
}

/// A cached file in the temp dir, or off tmpfs (page-cache reads complete inline on io_uring,
/// where the file system supports non-blocking reads), its name already removed.
fn cached_temp_file() -> File {
    let data: Vec<u8> = (0..CHUNK * 4).map(byte).collect();
    common::disk_temp_file(&data)
}

/// A lone task (no other task in the runtime) does not wait for the end of the
/// turn: its requests enter the kernel at once (for a run of them: see
/// `uring_one_task_many_futures_enter_together`). Seen on a cached file, whose
/// reads complete inline: every read is done at its first poll (skipped where
/// the temp dir's file system completes none inline, e.g. tmpfs).
#[test]
fn uring_lone_task_enters_at_once() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = ctx(Backend::Uring);
    let f = cached_temp_file();
    let f = Arc::new(f);
    let rt = current_rt();
    let firsts = rt.block_on(async {
        let mut firsts = Vec::new();
        for i in 0..8 {
            let off = (i % 4 * CHUNK) as i64;
            let mut fut = aio.read_async(Arc::clone(&f), off, vec![0u8; CHUNK]);
            let first = poll_once(&mut fut).await;
            firsts.push(first.is_ready());
            let c = match first {
                Poll::Ready(c) => c,
                Poll::Pending => fut.await,
            };
            assert_eq!(c.unwrap().data()[1], byte(i % 4 * CHUNK + 1));
        }
        firsts
    });
    // The first read of an fd settles its kind (and may be looked at again);
    // the later ones are the common path.
    if !firsts[1..].iter().any(|r| *r) {
        eprintln!("no read completed inline on this file system; nothing to check");
        return;
    }
    assert!(firsts[1..].iter().all(|r| *r), "{firsts:?}");
}

/// The same in a runtime whose earlier turns batched (a read that waited for
/// the turn's end beside other tasks, which then finished): what tells a
/// turn's end (a task of posixrt's, kept for the runtime) is not counted as
/// another task, so a lone task's first read of a context enters at once.
/// (The first test has its reads in the `block_on` body, not a task.)
#[test]
fn uring_lone_task_enters_at_once_after_a_batch() {
    if common::uring::uring_refused() {
        return;
    }
    // A context whose fd kind is settled by a call (no future): its futures'
    // first reads take the common path.
    let f = Arc::new(cached_temp_file());
    let settled = || {
        let aio = ctx(Backend::Uring);
        let r = aio.read(&*f, 0, vec![0u8; CHUNK]).unwrap();
        aio.suspend([&r], None).unwrap();
        aio
    };
    let aio = settled();
    let rt = current_rt();
    rt.block_on(async {
        let idle = idle_tasks();
        let mut fut = aio.read_async(Arc::clone(&f), 0, vec![0u8; CHUNK]);
        assert!(
            poll_once(&mut fut).await.is_pending(),
            "the read did not wait"
        );
        assert_eq!(fut.await.unwrap().data()[1], byte(1));
        idle.iter().for_each(|t| t.abort());
        for t in idle {
            let _ = t.await;
        }
    });
    let aio = settled();
    let lone = async move {
        let mut firsts = Vec::new();
        for i in 0..4 {
            let mut fut = aio.read_async(Arc::clone(&f), (i * CHUNK) as i64, vec![0u8; CHUNK]);
            let first = poll_once(&mut fut).await;
            firsts.push(first.is_ready());
            let c = match first {
                Poll::Ready(c) => c,
                Poll::Pending => fut.await,
            };
            assert_eq!(c.unwrap().data()[1], byte(i * CHUNK + 1));
        }
        firsts
    };
    let firsts = rt.block_on(async { tokio::spawn(lone).await.unwrap() });
    if !firsts[1..].iter().any(|r| *r) {
        eprintln!("no read completed inline on this file system; nothing to check");
        return;
    }
    assert!(firsts.iter().all(|r| *r), "{firsts:?}");
}

/// A write that waits for the end of the turn, dropped before that: it reaches
/// the kernel before the drop lets go of the descriptor, so the number naming
/// another file afterwards cannot redirect it.
#[test]
fn uring_dropped_deferred_write_never_reaches_a_reused_fd() {
    if common::uring::uring_refused() {
        return;
    }
    use std::os::fd::OwnedFd;
    use std::os::unix::fs::FileExt;
    let aio = ctx(Backend::Uring);
    let memfd =
        |name| File::from(rustix::fs::memfd_create(name, rustix::fs::MemfdFlags::CLOEXEC).unwrap());
    let a = Arc::new(memfd("aio_async_a"));
    let a2 = a.try_clone().unwrap();
    let b = memfd("aio_async_b");
    let rt = current_rt();
    rt.block_on(async {
        let _idle = idle_tasks();
        let mut fut = aio.write_async(Arc::clone(&a), 0, vec![7u8; 512]);
        assert!(poll_once(&mut fut).await.is_pending());
        drop(fut);
        // The number of `a` now names b's file (dup2 closes a's in the same step).
        let mut num = OwnedFd::from(Arc::try_unwrap(a).expect("the future let go of its handle"));
        rustix::io::dup2(&b, &mut num).unwrap();
        // Let the turn end (the flush), and a kernel worker finish the write.
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        tokio::task::yield_now().await;
        drop(num);
    });
    let mut got = [0u8; 512];
    assert_eq!(
        b.read_at(&mut got, 0).unwrap(),
        0,
        "the write went to the new file"
    );
    // The write went to a's file, or was cancelled by the drop.
    let n = a2.read_at(&mut got, 0).unwrap();
    assert!(n == 0 || (n == 512 && got.iter().all(|&x| x == 7)), "{n}");
}

/// A future leaked with `mem::forget` while its write waits for the end of the
/// turn leaks its handle too: the descriptor stays open, its number cannot name
/// another file, and the write lands in the right one.
#[test]
fn uring_forgotten_deferred_write_keeps_its_fd() {
    if common::uring::uring_refused() {
        return;
    }
    use std::os::unix::fs::FileExt;
    let aio = ctx(Backend::Uring);
    let a = Arc::new(File::from(
        rustix::fs::memfd_create("aio_async_forget", rustix::fs::MemfdFlags::CLOEXEC).unwrap(),
    ));
    let rt = current_rt();
    rt.block_on(async {
        let _idle = idle_tasks();
        let mut fut = aio.write_async(Arc::clone(&a), 0, vec![9u8; 512]);
        assert!(poll_once(&mut fut).await.is_pending());
        std::mem::forget(fut);
        assert_eq!(
            Arc::strong_count(&a),
            2,
            "the handle is leaked, not released"
        );
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
    });
    // (A hang guard of 10 s: the write lands well before on any machine.)
    let mut got = [0u8; 512];
    for _ in 0..2000 {
        if a.read_at(&mut got, 0).unwrap() == 512 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(got.iter().all(|&x| x == 9));
}

/// With other tasks, a read waits for the end of the turn (the first poll is
/// pending), then completes with its data.
#[test]
fn uring_deferred_read_completes_after_the_turn() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = ctx(Backend::Uring);
    let f = data_file();
    let rt = current_rt();
    rt.block_on(async {
        let _idle = idle_tasks();
        // The first read of an fd settles its kind at once; the later ones wait.
        read_chunk_async(aio.clone(), Arc::clone(&f), 0).await;
        let mut fut = aio.read_async(Arc::clone(&f), CHUNK as i64, vec![0u8; CHUNK]);
        assert!(poll_once(&mut fut).await.is_pending());
        let c = fut.await.unwrap();
        assert_eq!(c.data()[0], byte(CHUNK));
        assert_eq!(c.data().len(), CHUNK);
    });
    assert_eq!(threads_named(COMPLETION_THREAD), 0);
}

/// 32 tasks read turn after turn, so slots are freed and taken again all the
/// time: each read gets its own result and bytes (a completion hands its result
/// to its future and frees the slot before the task runs again).
fn many_turns_reuse_slots(b: Backend) {
    let aio = ctx(b);
    let f = data_file();
    let rt = current_rt();
    rt.block_on(async {
        let tasks: Vec<_> = (0..32)
            .map(|t| {
                let (aio, f) = (aio.clone(), Arc::clone(&f));
                tokio::spawn(async move {
                    let mut buf = vec![0u8; CHUNK];
                    for j in 0..40 {
                        let i = (t * 13 + j * 7) % CHUNKS;
                        let c = aio
                            .read_async(Arc::clone(&f), (i * CHUNK) as i64, buf)
                            .await
                            .unwrap();
                        assert_eq!(c.result.as_ref().copied().unwrap(), CHUNK);
                        for (k, v) in c.data().iter().enumerate() {
                            assert_eq!(*v, byte(i * CHUNK + k), "task {t} read {j} byte {k}");
                        }
                        buf = c.buf.unwrap();
                    }
                    t
                })
            })
            .collect();
        await_in_order(tasks, |k| k).await;
    });
    assert_no_completion_thread(b);
}
both!(many_turns_reuse_slots, many_turns_reuse_slots);

/// A future whose read completed (at the end of the turn) but that is dropped
/// without being polled again leaves nothing behind on its fd, and the context
/// goes on.
#[test]
fn uring_completed_future_dropped_unpolled() {
    if common::uring::uring_refused() {
        return;
    }
    use std::os::fd::AsRawFd;
    let aio = ctx(Backend::Uring);
    let f = data_file();
    let rt = current_rt();
    rt.block_on(async {
        let _idle = idle_tasks();
        read_chunk_async(aio.clone(), Arc::clone(&f), 0).await;
        let mut fut = aio.read_async(Arc::clone(&f), CHUNK as i64, vec![0u8; CHUNK]);
        assert!(poll_once(&mut fut).await.is_pending());
        // The turn ends: the read enters the kernel and completes.
        tokio::task::yield_now().await;
        tokio::task::yield_now().await;
        drop(fut);
        assert_eq!(
            aio.cancel_fd(f.as_raw_fd()).unwrap(),
            posixrt::aio::CancelResult::AllDone
        );
        assert_eq!(read_chunk_async(aio.clone(), Arc::clone(&f), 3).await, 3);
    });
}

/// Reads that wait for data (a pipe, written after the read is pending) are woken
/// through the runtime's reactor, again and again: the registration stays armed
/// between wake-ups, on both runtime kinds.
fn pending_reads_woken_by_the_reactor(b: Backend) {
    use std::io::Write;
    let aio = ctx(b);
    for multi in [false, true] {
        let rt = common::runtime(multi);
        let (rd, wr) = common::pipe();
        let rd = Arc::new(File::from(rd));
        let mut wr = File::from(wr);
        rt.block_on(async {
            for round in 0..16u8 {
                let (aio, rd) = (aio.clone(), Arc::clone(&rd));
                let reader =
                    tokio::spawn(
                        async move { aio.read(&*rd, 0, vec![0u8; 3]).unwrap().await.unwrap() },
                    );
                // Let the reader submit and wait, then give it data.
                for _ in 0..4 {
                    tokio::task::yield_now().await;
                }
                wr.write_all(&[round, round + 1, round + 2]).unwrap();
                let c = reader.await.unwrap();
                assert_eq!(c.data(), [round, round + 1, round + 2]);
            }
        });
    }
    assert_no_completion_thread(b);
}
both!(
    pending_reads_woken_by_the_reactor,
    pending_reads_woken_by_the_reactor
);

/// The body of a `multi_thread` runtime's `block_on` (the main function of a
/// `#[tokio::main]` program) runs on no worker, but the workers drive the
/// reactor: its futures are woken by it too, not by a completion thread. A
/// read that waits for data, a list and joined reads, awaited there directly.
fn multi_thread_block_on_body(b: Backend) {
    use std::io::Write;
    let rt = common::multi_rt();
    let aio = ctx(b);
    let f = data_file();
    let (rd, wr) = common::pipe();
    let rd = Arc::new(File::from(rd));
    let mut wr = File::from(wr);
    rt.block_on(async {
        for round in 0..8u8 {
            let writer = tokio::spawn(async move {
                // Long enough for the read below to be in the kernel, waiting.
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                wr.write_all(&[round, round + 1]).unwrap();
                wr
            });
            let c = aio.read(&*rd, 0, vec![0u8; 2]).unwrap().await.unwrap();
            assert_eq!(c.data(), [round, round + 1]);
            wr = writer.await.unwrap();
        }
        let ops = (0..4).map(|i| Some(Op::read(&*f, (i * CHUNK) as i64, vec![0u8; CHUNK])));
        let list = aio.lio_listio(ListMode::NoWait, ops, Notify::None).unwrap();
        for (i, c) in list.await.unwrap().into_iter().enumerate() {
            assert_eq!(c.unwrap().data()[0], byte(i * CHUNK));
        }
        let read = |i: usize| aio.read_async(Arc::clone(&f), (i * CHUNK) as i64, vec![0u8; CHUNK]);
        let (x, y) = tokio::join!(read(5), read(6));
        assert_eq!(x.unwrap().data()[0], byte(5 * CHUNK));
        assert_eq!(y.unwrap().data()[0], byte(6 * CHUNK));
    });
    assert_no_completion_thread(b);
}
both!(
    multi_thread_block_on_body_needs_no_helper_thread,
    multi_thread_block_on_body
);

/// Beside idle tasks, a read that waited for the end of the turn gathered no
/// other submission: the next reads enter at once (on a cached file, each is
/// done at its first poll; skipped where the file system completes none inline).
#[test]
fn uring_waits_that_gather_nothing_stop() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = ctx(Backend::Uring);
    let f = cached_temp_file();
    let f = Arc::new(f);
    let rt = current_rt();
    // Does this file system complete a cached read inline? (Another context, and
    // no other task: its reads enter at once.)
    let inline = rt.block_on(async {
        let other = ctx(Backend::Uring);
        let _ = other.read_async(Arc::clone(&f), 0, vec![0u8; 64]).await;
        let mut fut = other.read_async(Arc::clone(&f), 0, vec![0u8; 64]);
        poll_once(&mut fut).await.is_ready()
    });
    if !inline {
        eprintln!("no read completes inline on this file system; nothing to check");
        return;
    }
    let (first, later) = rt.block_on(async {
        let _idle = idle_tasks();
        // The first read of an fd settles its kind at once.
        let c = aio
            .read_async(Arc::clone(&f), 0, vec![0u8; CHUNK])
            .await
            .unwrap();
        assert_eq!(c.data()[1], byte(1));
        let poll_read = |i: usize| {
            let mut fut = aio.read_async(Arc::clone(&f), (i % 4 * CHUNK) as i64, vec![0u8; CHUNK]);
            async move {
                let first = poll_once(&mut fut).await;
                let ready = first.is_ready();
                let c = match first {
                    Poll::Ready(c) => c,
                    Poll::Pending => fut.await,
                };
                assert_eq!(c.unwrap().data()[1], byte(i % 4 * CHUNK + 1));
                ready
            }
        };
        let first = poll_read(1).await;
        let mut later = Vec::new();
        for i in 2..10 {
            later.push(poll_read(i).await);
        }
        (first, later)
    });
    assert!(
        !first,
        "beside idle tasks, the first read waits for the turn's end"
    );
    assert!(later.iter().all(|r| *r), "{later:?}");
}
