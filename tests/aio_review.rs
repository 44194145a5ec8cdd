//! A demanding tokio user's checks of the Rust AIO futures, on both engines:
//! futures given up by `select!` and `timeout`, moved between tasks and
//! workers, outliving their runtime, context or registration, lists of empty
//! and mixed entries, and the errors of bad input.
#![cfg(feature = "tokio")]

use std::future::{Future, IntoFuture};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::Duration;

use posixrt::aio::{Backend, ListMode, Notify, Op};
use posixrt::ErrorKind;

#[allow(unused_macros, unused_imports)]
mod common;
use common::{both, ctx};

const T: Duration = Duration::from_secs(10);

/// Awaits `f` for at most [`T`] (panicking with `what` past that) and
/// unwraps what it gives.
async fn done<O, E: std::fmt::Debug>(what: &str, f: impl IntoFuture<Output = Result<O, E>>) -> O {
    tokio::time::timeout(T, f).await.expect(what).unwrap()
}

async fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *f).poll(cx))).await
}

fn pipe_files() -> (Arc<std::fs::File>, std::fs::File) {
    let (r, w) = common::pipe();
    (Arc::new(std::fs::File::from(r)), std::fs::File::from(w))
}

/// The `/proc/self/fd` path of `f`, and `f` opened there again with `O_APPEND`.
fn append_handle(f: &std::fs::File) -> (String, Arc<std::fs::File>) {
    let path = format!("/proc/self/fd/{}", f.as_raw_fd());
    let app = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    (path, Arc::new(app))
}

/// A pipe whose ends are `O_NONBLOCK`.
fn nonblocking_pipe() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK)
        .unwrap()
}

/// Tasks that never end: submissions wait for the end of the turn.
fn idle_tasks() -> Vec<tokio::task::JoinHandle<()>> {
    (0..2)
        .map(|_| tokio::spawn(std::future::pending::<()>()))
        .collect()
}

/// A read of no bytes into an empty buffer, through each way of reading,
/// completes with 0 and gives the empty buffer back.
fn zero_length_reads(b: Backend) {
    let aio = ctx(b);
    let f = Arc::new(common::temp_file(b"data"));
    for multi in [false, true] {
        let rt = common::runtime(multi);
        rt.block_on(async {
            let _idle = idle_tasks();
            let c = aio.read_async(Arc::clone(&f), 0, Vec::new()).await.unwrap();
            assert_eq!(c.result.unwrap(), 0, "{b:?} read_async");
            let c = aio.read(&*f, 0, Vec::new()).unwrap().await.unwrap();
            assert_eq!(c.result.unwrap(), 0, "{b:?} read");
            let all = aio
                .lio_listio(
                    ListMode::NoWait,
                    [Some(Op::read(&*f, 0, Vec::new()))],
                    Notify::None,
                )
                .unwrap()
                .await
                .unwrap();
            assert_eq!(all[0].as_ref().unwrap().result.as_ref().unwrap(), &0);
        });
    }
}
both!(zero_length_reads, zero_length_reads);

/// Reads and writes on a descriptor not open for them end with EBADF, each
/// way they are made, as read(2) and write(2) do.
fn wrong_direction_is_ebadf(b: Backend) {
    let aio = ctx(b);
    let rw = common::temp_file(b"data");
    let path = format!("/proc/self/fd/{}", rw.as_raw_fd());
    let ro = Arc::new(std::fs::File::open(&path).unwrap());
    let wo = Arc::new(std::fs::OpenOptions::new().write(true).open(&path).unwrap());
    let rt = common::current_rt();
    rt.block_on(async {
        let _idle = idle_tasks();
        let c = aio
            .write_async(Arc::clone(&ro), 0, b"x".to_vec())
            .await
            .unwrap();
        let e = c.result.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadFd, "{b:?} write_async: {e}");
        let c = aio
            .read_async(Arc::clone(&wo), 0, vec![0u8; 4])
            .await
            .unwrap();
        let e = c.result.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadFd, "{b:?} read_async: {e}");
        let c = aio.write(&*ro, 0, b"x".to_vec()).unwrap().await.unwrap();
        assert_eq!(c.result.unwrap_err().kind(), ErrorKind::BadFd, "{b:?}");
        let c = aio.read(&*wo, 0, vec![0u8; 4]).unwrap().await.unwrap();
        assert_eq!(c.result.unwrap_err().kind(), ErrorKind::BadFd, "{b:?}");
    });
}
both!(wrong_direction_is_ebadf, wrong_direction_is_ebadf);

/// Offsets: negative and past `i64::MAX - len` are EINVAL when polled; the
/// last valid offset is accepted and reads nothing from a small file.
fn offsets(b: Backend) {
    let aio = ctx(b);
    let f = Arc::new(common::temp_file(b"data"));
    let rt = common::current_rt();
    rt.block_on(async {
        for off in [-1, i64::MIN, i64::MAX - 3, i64::MAX] {
            let e = aio
                .read_async(Arc::clone(&f), off, vec![0u8; 4])
                .await
                .err()
                .unwrap_or_else(|| panic!("{b:?} offset {off} accepted"));
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{b:?} {off}: {e}");
        }
        let c = aio
            .read_async(Arc::clone(&f), i64::MAX - 4, vec![0u8; 4])
            .await
            .unwrap();
        assert_eq!(c.result.unwrap(), 0, "{b:?}");
    });
}
both!(offsets, offsets);

/// A pipe read given up by a timeout takes nothing: the bytes written later
/// go to the next read.
fn timeout_gives_up_a_pipe_read(b: Backend) {
    let aio = ctx(b);
    for multi in [false, true] {
        let rt = common::runtime(multi);
        let (r, mut w) = pipe_files();
        rt.block_on(async {
            let _idle = idle_tasks();
            let t = Duration::from_millis(20);
            assert!(
                tokio::time::timeout(t, aio.read_async(Arc::clone(&r), 0, vec![0u8; 3]))
                    .await
                    .is_err()
            );
            assert!(
                tokio::time::timeout(t, aio.read(&*r, 0, vec![0u8; 3]).unwrap())
                    .await
                    .is_err()
            );
            w.write_all(b"abc").unwrap();
            let c = tokio::time::timeout(T, aio.read_async(Arc::clone(&r), 0, vec![0u8; 3]))
                .await
                .expect("the next read completes")
                .unwrap();
            assert_eq!(c.data(), b"abc", "{b:?} multi {multi}");
        });
    }
}
both!(timeout_gives_up_a_pipe_read, timeout_gives_up_a_pipe_read);

/// `select!` of reads on two pipes: the loser is cancelled and its pipe's
/// bytes go to the next read.
fn select_between_pipes(b: Backend) {
    let aio = ctx(b);
    let rt = common::multi_rt();
    let (ra, mut wa) = pipe_files();
    let (rb, mut wb) = pipe_files();
    rt.block_on(async {
        let _idle = idle_tasks();
        let a = aio.read_async(Arc::clone(&ra), 0, vec![0u8; 1]);
        let bb = aio.read(&*rb, 0, vec![0u8; 1]).unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            wa.write_all(b"A").unwrap();
            wa
        });
        tokio::select! {
            c = a => assert_eq!(c.unwrap().data(), b"A"),
            _ = bb => panic!("{b:?}: pipe b had no data"),
        }
        drop(writer.join().unwrap());
        wb.write_all(b"B").unwrap();
        let c = tokio::time::timeout(T, aio.read_async(Arc::clone(&rb), 0, vec![0u8; 1]))
            .await
            .expect("read of b")
            .unwrap();
        assert_eq!(c.data(), b"B", "{b:?}");
    });
}
both!(select_between_pipes, select_between_pipes);

/// A future polled once in one task (its submission waiting for the turn's
/// end) and awaited in another task, on another worker, completes.
fn future_moved_between_tasks(b: Backend) {
    let aio = Arc::new(ctx(b));
    let rt = common::multi_rt();
    let f = Arc::new(common::temp_file(b"moved!"));
    for round in 0..50 {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let aio2 = Arc::clone(&aio);
        let f2 = Arc::clone(&f);
        rt.block_on(async move {
            let _idle = idle_tasks();
            let a = tokio::spawn(async move {
                let aio3 = Arc::clone(&aio2);
                let mut fut = Box::pin(async move {
                    let c = aio3.read_async(f2, 0, vec![0u8; 6]).await;
                    c
                });
                let first = poll_once(&mut fut).await;
                tx.send((fut, first.is_ready())).ok();
            });
            let bt = tokio::spawn(async move {
                let (mut fut, ready) = rx.await.unwrap();
                if !ready {
                    let c = done("moved future completes", &mut fut).await;
                    assert_eq!(c.data(), b"moved!", "{b:?} round {round}");
                }
            });
            a.await.unwrap();
            bt.await.unwrap();
        });
    }
}
both!(future_moved_between_tasks, future_moved_between_tasks);

/// A pipe read pending in a task of a runtime that shuts down is cancelled:
/// the bytes written afterwards go to the next read, and the context still
/// works and drops without waiting.
fn runtime_shut_down_with_reads_in_flight(b: Backend) {
    let aio = Arc::new(ctx(b));
    let (r, mut w) = pipe_files();
    for multi in [false, true] {
        let rt = common::runtime(multi);
        let (tx, rx) = std::sync::mpsc::channel();
        for _ in 0..4 {
            let (aio, r, tx) = (Arc::clone(&aio), Arc::clone(&r), tx.clone());
            rt.spawn(async move {
                let a = aio.read_async(Arc::clone(&r), 0, vec![0u8; 1]);
                let q = aio.read(&*r, 0, vec![0u8; 1]).unwrap();
                tx.send(()).unwrap();
                let _ = tokio::join!(a, q);
                panic!("a read of an empty pipe completed");
            });
        }
        rt.block_on(async {
            for _ in 0..4 {
                while rx.try_recv().is_err() {
                    tokio::task::yield_now().await;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        });
        drop(rt);
        w.write_all(b"Z").unwrap();
        let mut q = aio.read(&*r, 0, vec![0u8; 1]).unwrap();
        aio.suspend([&q], Some(T)).unwrap();
        assert_eq!(q.aio_return().unwrap().data(), b"Z", "{b:?} multi {multi}");
    }
}
both!(
    runtime_shut_down_with_reads_in_flight,
    runtime_shut_down_with_reads_in_flight
);

/// The context dropped while request and list futures wait: they complete
/// once their data comes.
fn context_dropped_under_futures(b: Backend) {
    let aio = ctx(b);
    let (r, mut w) = pipe_files();
    let req = aio.read(&*r, 0, vec![0u8; 1]).unwrap();
    let list = aio
        .lio_listio(
            ListMode::NoWait,
            [None, Some(Op::read(&*r, 0, vec![0u8; 1])), Some(Op::nop())],
            Notify::None,
        )
        .unwrap();
    drop(aio);
    let rt = common::multi_rt();
    rt.block_on(async {
        let h = tokio::spawn(async move { tokio::join!(req.into_future(), list.into_future()) });
        tokio::time::sleep(Duration::from_millis(20)).await;
        w.write_all(b"12").unwrap();
        let (a, l) = done("both complete", h).await;
        let a = a.unwrap();
        let l = l.unwrap();
        assert_eq!(l.len(), 3);
        assert!(l[0].is_none() && l[2].is_none(), "{b:?}");
        let mut got = a.data().to_vec();
        got.extend_from_slice(l[1].as_ref().unwrap().data());
        got.sort();
        assert_eq!(got, b"12", "{b:?}");
    });
}
both!(context_dropped_under_futures, context_dropped_under_futures);

/// A registration dropped before the requests made through it: they read
/// their file.
fn registration_dropped_before_its_requests(b: Backend) {
    let aio = ctx(b);
    let f = common::temp_file(b"registered");
    let (r, mut w) = pipe_files();
    let rt = common::current_rt();
    rt.block_on(async {
        let reg = aio.register_fd(&f).unwrap();
        let regp = aio.register_fd(&*r).unwrap();
        let a = aio.read(&f, 0, vec![0u8; 10]).unwrap();
        let p = aio.read(&*r, 0, vec![0u8; 2]).unwrap();
        drop(reg);
        drop(regp);
        w.write_all(b"ok").unwrap();
        let (a, p) = tokio::time::timeout(T, async { tokio::join!(a, p) })
            .await
            .expect("done");
        assert_eq!(a.unwrap().data(), b"registered", "{b:?}");
        assert_eq!(p.unwrap().data(), b"ok", "{b:?}");
    });
}
both!(
    registration_dropped_before_its_requests,
    registration_dropped_before_its_requests
);

/// A list of mixed entries: empty, NOP, a read, a failing write, a write.
fn mixed_list(b: Backend) {
    let aio = ctx(b);
    let f = common::temp_file(b"0123456789");
    let path = format!("/proc/self/fd/{}", f.as_raw_fd());
    let ro = std::fs::File::open(&path).unwrap();
    let rt = common::multi_rt();
    rt.block_on(async {
        let all = aio
            .lio_listio(
                ListMode::NoWait,
                [
                    None,
                    Some(Op::nop()),
                    Some(Op::read(&f, 2, vec![0u8; 3])),
                    Some(Op::write(&ro, 0, b"zz".to_vec())),
                    Some(Op::write(&f, 8, b"XY".to_vec())),
                ],
                Notify::None,
            )
            .unwrap()
            .await
            .unwrap();
        assert_eq!(all.len(), 5);
        assert!(all[0].is_none() && all[1].is_none(), "{b:?}");
        assert_eq!(all[2].as_ref().unwrap().data(), b"234", "{b:?}");
        let e = all[3].as_ref().unwrap().result.as_ref().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadFd, "{b:?}");
        assert_eq!(*all[4].as_ref().unwrap().result.as_ref().unwrap(), 2);
    });
    let s = std::fs::read_to_string(&path).unwrap();
    assert_eq!(s, "01234567XY");
}
both!(mixed_list, mixed_list);

/// A nested runtime: a `current_thread` runtime's `block_on` on a blocking
/// thread of a `multi_thread` runtime, reading a pipe written later.
fn nested_runtime(b: Backend) {
    let aio = Arc::new(ctx(b));
    let rt = common::multi_rt();
    let (r, w) = pipe_files();
    let w = Arc::new(std::sync::Mutex::new(w));
    rt.block_on(async {
        let (aio2, r2) = (Arc::clone(&aio), Arc::clone(&r));
        let h = tokio::task::spawn_blocking(move || {
            let inner = common::current_rt();
            inner.block_on(async {
                let _idle = idle_tasks();
                tokio::time::timeout(T, aio2.read_async(r2, 0, vec![0u8; 2]))
                    .await
                    .expect("nested read")
                    .unwrap()
            })
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        w.lock().unwrap().write_all(b"nr").unwrap();
        let c = h.await.unwrap();
        assert_eq!(c.data(), b"nr", "{b:?}");
    });
}
both!(nested_runtime, nested_runtime);

/// Writes awaited one by one on an `O_APPEND` file, then an fsync future.
fn append_then_fsync(b: Backend) {
    let aio = ctx(b);
    let f = common::temp_file(b"");
    let (path, app) = append_handle(&f);
    let rt = common::multi_rt();
    rt.block_on(async {
        let _idle = idle_tasks();
        let mut futs = Vec::new();
        for i in 0..20u8 {
            futs.push(aio.write_async(Arc::clone(&app), 0, vec![b'a' + i]));
        }
        let mut set = futures_poll(futs);
        // All submitted (in order) by one poll each, then the fsync.
        let s = aio.fsync(&*app, posixrt::aio::SyncMode::Sync).unwrap();
        for c in set.drain(..) {
            let c = done("write", c).await;
            assert_eq!(c.result.unwrap(), 1);
        }
        done("fsync", s).await.result.unwrap();
    });
    let s = std::fs::read_to_string(&path).unwrap();
    assert_eq!(s, "abcdefghijklmnopqrst", "{b:?}");
}
both!(append_then_fsync, append_then_fsync);

/// Polls each future once (in order), keeping those still pending.
fn futures_poll<F: Future + Unpin>(futs: Vec<F>) -> Vec<F> {
    let waker = noop_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    futs.into_iter()
        .filter_map(|mut f| match Pin::new(&mut f).poll(&mut cx) {
            Poll::Ready(_) => None,
            Poll::Pending => Some(f),
        })
        .collect()
}

/// `Handle::block_on` of a `multi_thread` runtime on a plain thread: a pipe
/// read written later completes.
fn handle_block_on_elsewhere(b: Backend) {
    let aio = Arc::new(ctx(b));
    let rt = common::multi_rt();
    let (r, mut w) = pipe_files();
    let h = rt.handle().clone();
    let (aio2, r2) = (Arc::clone(&aio), Arc::clone(&r));
    let t = std::thread::spawn(move || {
        h.block_on(async move {
            let a = aio2.read_async(Arc::clone(&r2), 0, vec![0u8; 1]);
            let c = done("read a", a).await;
            let q = aio2.read(&*r2, 0, vec![0u8; 1]).unwrap();
            let d = done("read q", q).await;
            [c.data()[0], d.data()[0]]
        })
    });
    std::thread::sleep(Duration::from_millis(20));
    w.write_all(b"h").unwrap();
    std::thread::sleep(Duration::from_millis(20));
    w.write_all(b"i").unwrap();
    assert_eq!(&t.join().unwrap(), b"hi", "{b:?}");
}
both!(handle_block_on_elsewhere, handle_block_on_elsewhere);

/// A list future given up by a timeout cancels its reads: the bytes written
/// later go to the next read.
fn timeout_gives_up_a_list(b: Backend) {
    let aio = ctx(b);
    let (r, mut w) = pipe_files();
    let rt = common::multi_rt();
    rt.block_on(async {
        let list = aio
            .lio_listio(
                ListMode::NoWait,
                [
                    Some(Op::read(&*r, 0, vec![0u8; 1])),
                    None,
                    Some(Op::read(&*r, 0, vec![0u8; 1])),
                ],
                Notify::None,
            )
            .unwrap();
        assert!(tokio::time::timeout(Duration::from_millis(20), list)
            .await
            .is_err());
        w.write_all(b"L").unwrap();
        let c = tokio::time::timeout(T, aio.read(&*r, 0, vec![0u8; 1]).unwrap())
            .await
            .expect("next read")
            .unwrap();
        assert_eq!(c.data(), b"L", "{b:?}");
    });
}
both!(timeout_gives_up_a_list, timeout_gives_up_a_list);

/// Tasks reading one byte each from a pipe, half of them aborted: once the
/// aborts are done, each byte written goes to exactly one live reader.
fn aborted_readers(b: Backend) {
    let aio = Arc::new(ctx(b));
    let (r, mut w) = pipe_files();
    let rt = common::multi_rt();
    rt.block_on(async {
        let mut hs = Vec::new();
        for i in 0..40 {
            let (aio, r) = (Arc::clone(&aio), Arc::clone(&r));
            hs.push(tokio::spawn(async move {
                let c = if i % 4 < 2 {
                    aio.read_async(r, 0, vec![0u8; 1]).await
                } else {
                    aio.read(&*r, 0, vec![0u8; 1]).unwrap().await
                };
                c.unwrap().data()[0]
            }));
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
        let mut live = Vec::new();
        for (i, h) in hs.into_iter().enumerate() {
            if i % 2 == 0 {
                h.abort();
                assert!(h.await.unwrap_err().is_cancelled());
            } else {
                live.push(h);
            }
        }
        let data: Vec<u8> = (0..20u8).collect();
        w.write_all(&data).unwrap();
        let mut got = Vec::new();
        for h in live {
            got.push(done("a live reader", h).await);
        }
        got.sort();
        assert_eq!(got, data, "{b:?}");
    });
}
both!(aborted_readers, aborted_readers);

/// A deferred pipe read dropped in the poll that submitted it (before the
/// turn's flush) takes nothing.
fn dropped_before_the_flush(b: Backend) {
    let aio = ctx(b);
    let (r, mut w) = pipe_files();
    let rt = common::current_rt();
    rt.block_on(async {
        let _idle = idle_tasks();
        for _ in 0..20 {
            let mut a = aio.read_async(Arc::clone(&r), 0, vec![0u8; 1]);
            assert!(poll_once(&mut a).await.is_pending());
            drop(a);
        }
        w.write_all(b"D").unwrap();
        let c = tokio::time::timeout(T, aio.read_async(Arc::clone(&r), 0, vec![0u8; 1]))
            .await
            .expect("next read")
            .unwrap();
        assert_eq!(c.data(), b"D", "{b:?}");
    });
}
both!(dropped_before_the_flush, dropped_before_the_flush);

/// Reads given up by a timeout on a terminal and on a stream socket take
/// nothing: what comes later goes to the next read.
fn timeout_on_terminal_and_socket(b: Backend) {
    let aio = ctx(b);
    let (mut master, slave) = common::pty();
    let slave = Arc::new(std::fs::File::from(slave));
    let (s1, mut s2) = std::os::unix::net::UnixStream::pair().unwrap();
    let s1 = Arc::new(s1);
    let rt = common::multi_rt();
    rt.block_on(async {
        let _idle = idle_tasks();
        let t = Duration::from_millis(20);
        for _ in 0..3 {
            assert!(
                tokio::time::timeout(t, aio.read_async(Arc::clone(&slave), 0, vec![0u8; 8]))
                    .await
                    .is_err()
            );
            assert!(
                tokio::time::timeout(t, aio.read_async(Arc::clone(&s1), 0, vec![0u8; 8]))
                    .await
                    .is_err()
            );
        }
        master.write_all(b"line\n").unwrap();
        s2.write_all(b"sock").unwrap();
        let c = tokio::time::timeout(T, aio.read_async(Arc::clone(&slave), 0, vec![0u8; 8]))
            .await
            .expect("terminal read")
            .unwrap();
        assert_eq!(c.data(), b"line\n", "{b:?}");
        let c = tokio::time::timeout(T, aio.read_async(Arc::clone(&s1), 0, vec![0u8; 8]))
            .await
            .expect("socket read")
            .unwrap();
        assert_eq!(c.data(), b"sock", "{b:?}");
    });
}
both!(
    timeout_on_terminal_and_socket,
    timeout_on_terminal_and_socket
);

/// A read and a write on a descriptor number that is closed end with EBADF
/// (awaited), and an fsync on it is refused in the call.
fn closed_fd_is_ebadf(b: Backend) {
    let aio = ctx(b);
    let rt = common::current_rt();
    // A number far above what the tests open, closed.
    let (r, _w) = common::pipe();
    let high = rustix::io::fcntl_dupfd_cloexec(&r, 3000).unwrap();
    let n = high.as_raw_fd();
    drop(high);
    // SAFETY: the number is closed, and the process opens none that high
    // meanwhile (the calls only look at it).
    let closed = unsafe { std::os::fd::BorrowedFd::borrow_raw(n) };
    rt.block_on(async {
        let c = aio.read(closed, 0, vec![0u8; 4]).unwrap().await.unwrap();
        assert_eq!(c.result.unwrap_err().kind(), ErrorKind::BadFd, "{b:?}");
        let c = aio.write(closed, 0, b"x".to_vec()).unwrap().await.unwrap();
        assert_eq!(c.result.unwrap_err().kind(), ErrorKind::BadFd, "{b:?}");
        let all = aio
            .lio_listio(
                ListMode::NoWait,
                [Some(Op::read(closed, 0, vec![0u8; 4])), None],
                Notify::None,
            )
            .unwrap()
            .await
            .unwrap();
        let e = all[0].as_ref().unwrap().result.as_ref().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadFd, "{b:?}");
        let e = aio.fsync(closed, posixrt::aio::SyncMode::Sync).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadFd, "{b:?}");
    });
}
both!(closed_fd_is_ebadf, closed_fd_is_ebadf);

/// Writes of no bytes, to a pipe, an `O_APPEND` file and a regular file,
/// through each way of writing, return 0 and write nothing.
fn zero_length_writes(b: Backend) {
    let aio = ctx(b);
    let (r, w) = pipe_files();
    let w = Arc::new(w);
    let f = common::temp_file(b"abc");
    let (path, app) = append_handle(&f);
    let f = Arc::new(f);
    let rt = common::current_rt();
    rt.block_on(async {
        let _idle = idle_tasks();
        for fd in [Arc::clone(&w), Arc::clone(&app), Arc::clone(&f)] {
            let c = done(
                "write_async",
                aio.write_async(Arc::clone(&fd), 0, Vec::new()),
            )
            .await;
            assert_eq!(c.result.unwrap(), 0, "{b:?}");
            let c = done("write", aio.write(&*fd, 0, Vec::new()).unwrap()).await;
            assert_eq!(c.result.unwrap(), 0, "{b:?}");
        }
    });
    drop(w);
    let mut rest = Vec::new();
    Arc::into_inner(r).unwrap().read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "{b:?}");
    let s = std::fs::read_to_string(&path).unwrap();
    assert_eq!(s, "abc", "{b:?}");
}
both!(zero_length_writes, zero_length_writes);

/// Lists of no entries, and of NOP entries only, awaited: done at once, and
/// a `NoWait` list's notification fires exactly once.
fn lists_with_nothing_to_do(b: Backend) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let aio = ctx(b);
    let rt = common::current_rt();
    let fired = Arc::new(AtomicUsize::new(0));
    rt.block_on(async {
        for (mode, entries) in [
            (ListMode::NoWait, vec![]),
            (ListMode::Wait, vec![]),
            (ListMode::NoWait, vec![Some(Op::<Vec<u8>>::nop()), None]),
            (ListMode::Wait, vec![None, Some(Op::nop())]),
        ] {
            let n = entries.len();
            let f = Arc::clone(&fired);
            let list = aio
                .lio_listio(
                    mode,
                    entries,
                    Notify::thread(1, move |_| {
                        f.fetch_add(1, Ordering::SeqCst);
                    }),
                )
                .unwrap();
            let all = done("done", list).await;
            assert_eq!(all.len(), n, "{b:?}");
            assert!(all.iter().all(Option::is_none), "{b:?}");
        }
    });
    let t0 = std::time::Instant::now();
    while fired.load(std::sync::atomic::Ordering::SeqCst) < 2 && t0.elapsed() < T {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(fired.load(std::sync::atomic::Ordering::SeqCst), 2, "{b:?}");
}
both!(lists_with_nothing_to_do, lists_with_nothing_to_do);

/// Runtimes without their I/O driver (time only): request, list and read
/// futures on an empty pipe are woken once it is written, and a timeout
/// around one gives it up.
fn runtimes_without_io(b: Backend) {
    let aio = ctx(b);
    for multi in [false, true] {
        let rt = if multi {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_time()
                .build()
                .unwrap()
        } else {
            tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap()
        };
        let (r, w) = pipe_files();
        let w = std::sync::Mutex::new(w);
        rt.block_on(async {
            let _idle = idle_tasks();
            let t = Duration::from_millis(20);
            assert!(
                tokio::time::timeout(t, aio.read_async(Arc::clone(&r), 0, vec![0u8; 1]))
                    .await
                    .is_err()
            );
            let a = aio.read_async(Arc::clone(&r), 0, vec![0u8; 1]);
            let q = aio.read(&*r, 0, vec![0u8; 1]).unwrap();
            let l = aio
                .lio_listio(
                    ListMode::NoWait,
                    [Some(Op::read(&*r, 0, vec![0u8; 1]))],
                    Notify::None,
                )
                .unwrap();
            let writer = async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                w.lock().unwrap().write_all(b"xyz").unwrap();
            };
            let (a, q, l, ()) = tokio::time::timeout(T, async {
                tokio::join!(a, q.into_future(), l.into_future(), writer)
            })
            .await
            .expect("woken without an I/O driver");
            let mut got = vec![a.unwrap().data()[0], q.unwrap().data()[0]];
            got.push(l.unwrap()[0].as_ref().unwrap().data()[0]);
            got.sort();
            assert_eq!(got, b"xyz", "{b:?} multi {multi}");
        });
    }
}
both!(runtimes_without_io, runtimes_without_io);

/// On an `O_NONBLOCK` empty pipe, a read awaited each way ends with EAGAIN,
/// also as the second and later read of the fd (batched in one turn).
fn nonblocking_pipe_reads(b: Backend) {
    let aio = ctx(b);
    let (r, w) = nonblocking_pipe();
    let r = Arc::new(std::fs::File::from(r));
    let rt = common::multi_rt();
    rt.block_on(async {
        let _idle = idle_tasks();
        for _ in 0..3 {
            let (a, q, a2) = tokio::time::timeout(T, async {
                tokio::join!(
                    aio.read_async(Arc::clone(&r), 0, vec![0u8; 1]),
                    aio.read(&*r, 0, vec![0u8; 1]).unwrap().into_future(),
                    aio.read_async(Arc::clone(&r), 0, vec![0u8; 1]),
                )
            })
            .await
            .expect("non-blocking reads end");
            for c in [a.unwrap(), q.unwrap(), a2.unwrap()] {
                let e = c.result.unwrap_err();
                assert_eq!(e.errno(), Some(libc::EAGAIN), "{b:?}: {e}");
            }
        }
    });
    drop(w);
}
both!(nonblocking_pipe_reads, nonblocking_pipe_reads);

/// As [`nonblocking_pipe_reads`], through a registered fd (and a terminal
/// read of no bytes, which returns 0 at once).
fn nonblocking_registered_reads(b: Backend) {
    let aio = ctx(b);
    let (r, w) = nonblocking_pipe();
    let (_master, slave) = common::pty();
    let reg = aio.register_fd(&r).unwrap();
    let treg = aio.register_fd(&slave).unwrap();
    let rt = common::current_rt();
    rt.block_on(async {
        let _idle = idle_tasks();
        for round in 0..3 {
            let (a, a2, z) = tokio::time::timeout(T, async {
                tokio::join!(
                    aio.read_async(&reg, 0, vec![0u8; 1]),
                    aio.read_async(&reg, 0, vec![0u8; 1]),
                    aio.read_async(&treg, 0, Vec::new()),
                )
            })
            .await
            .unwrap_or_else(|_| panic!("{b:?} round {round}: reads through a guard end"));
            for c in [a.unwrap(), a2.unwrap()] {
                let e = c.result.unwrap_err();
                assert_eq!(e.errno(), Some(libc::EAGAIN), "{b:?}: {e}");
            }
            assert_eq!(z.unwrap().result.unwrap(), 0, "{b:?}");
        }
    });
    drop(w);
}
both!(nonblocking_registered_reads, nonblocking_registered_reads);

/// Reads of a socket and a pipe at a non-zero offset (ignored), through an
/// owned handle and a registered fd, batched in one turn, data there or
/// written later.
fn stream_reads_at_offsets(b: Backend) {
    let aio = ctx(b);
    let (s1, mut s2) = std::os::unix::net::UnixStream::pair().unwrap();
    let s1 = Arc::new(s1);
    let (r, mut w) = pipe_files();
    let reg_s = aio.register_fd(&*s1).unwrap();
    let reg_p = aio.register_fd(&*r).unwrap();
    let rt = common::current_rt();
    rt.block_on(async {
        let _idle = idle_tasks();
        for round in 0..3 {
            if round == 1 {
                s2.write_all(b"ab").unwrap();
                w.write_all(b"cd").unwrap();
            }
            let writer = async {
                if round != 1 {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    s2.write_all(b"ab").unwrap();
                    w.write_all(b"cd").unwrap();
                }
            };
            let (x, y, z, v, ()) = tokio::time::timeout(T, async {
                tokio::join!(
                    aio.read_async(Arc::clone(&s1), 100, vec![0u8; 1]),
                    aio.read_async(&reg_s, 4096, vec![0u8; 1]),
                    aio.read_async(Arc::clone(&r), 7, vec![0u8; 1]),
                    aio.read_async(&reg_p, 1 << 40, vec![0u8; 1]),
                    writer,
                )
            })
            .await
            .unwrap_or_else(|_| panic!("{b:?} round {round}: stream reads end"));
            let mut s = vec![x.unwrap().data()[0], y.unwrap().data()[0]];
            s.sort();
            assert_eq!(s, b"ab", "{b:?} round {round}");
            let mut p = vec![z.unwrap().data()[0], v.unwrap().data()[0]];
            p.sort();
            assert_eq!(p, b"cd", "{b:?} round {round}");
        }
    });
}
both!(stream_reads_at_offsets, stream_reads_at_offsets);

/// Futures whose requests a thread submitted (in a `current_thread`
/// runtime's turn, or at once) complete after that thread exited: moved to
/// the main thread, they get the bytes written there.
fn submitter_exits(b: Backend) {
    let aio = ctx(b);
    let (r, mut w) = pipe_files();
    for round in 0..3 {
        let (a, q) = std::thread::scope(|s| {
            s.spawn(|| {
                let rt = common::current_rt();
                rt.block_on(async {
                    let _idle = idle_tasks();
                    let mut a = aio.read_async(Arc::clone(&r), 0, vec![0u8; 1]);
                    let mut q = aio.read(&*r, 0, vec![0u8; 1]).unwrap().into_future();
                    assert!(poll_once(&mut a).await.is_pending());
                    assert!(poll_once(&mut q).await.is_pending());
                    tokio::task::yield_now().await;
                    (a, q)
                })
            })
            .join()
            .unwrap()
        });
        w.write_all(b"ex").unwrap();
        let rt = common::current_rt();
        let (a, q) = rt.block_on(async {
            tokio::time::timeout(T, async { tokio::join!(a, q) })
                .await
                .unwrap_or_else(|_| panic!("{b:?} round {round}: reads of an exited thread"))
        });
        let mut got = vec![a.unwrap().data()[0], q.unwrap().data()[0]];
        got.sort();
        assert_eq!(got, b"ex", "{b:?} round {round}");
    }
}
both!(submitter_exits, submitter_exits);

/// A waker that does nothing (`Waker::noop` is newer than the crate's MSRV).
fn noop_waker() -> Waker {
    struct Noop;
    impl std::task::Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }
    Waker::from(Arc::new(Noop))
}

/// On an `O_APPEND` file, deferred writes (`write_async`), writes entered at
/// once (`write`), list writes and fsyncs, made in one turn, land in call
/// order.
fn append_mixed_ways(b: Backend) {
    let aio = ctx(b);
    let f = common::temp_file(b"");
    let (path, app) = append_handle(&f);
    let rt = common::current_rt();
    rt.block_on(async {
        let _idle = idle_tasks();
        for _ in 0..3 {
            let a = started(aio.write_async(Arc::clone(&app), 0, b"a".to_vec())).await;
            let q = aio.write(&*app, 0, b"b".to_vec()).unwrap();
            let c = started(aio.write_async(Arc::clone(&app), 0, b"c".to_vec())).await;
            let s = aio.fsync(&*app, posixrt::aio::SyncMode::DataSync).unwrap();
            let l = aio
                .lio_listio(
                    ListMode::NoWait,
                    [
                        Some(Op::write(&*app, 0, b"d".to_vec())),
                        Some(Op::write(&*app, 0, b"e".to_vec())),
                    ],
                    Notify::None,
                )
                .unwrap();
            let e = started(aio.write_async(Arc::clone(&app), 0, b"f\n".to_vec())).await;
            let (a, q, c, s, l, e) = tokio::time::timeout(T, async {
                tokio::join!(
                    a.finish(),
                    q.into_future(),
                    c.finish(),
                    s.into_future(),
                    l.into_future(),
                    e.finish()
                )
            })
            .await
            .expect("all done");
            for r in [a, q, c, e] {
                assert!(r.unwrap().result.is_ok());
            }
            s.unwrap().result.unwrap();
            assert!(l
                .unwrap()
                .iter()
                .all(|c| c.as_ref().unwrap().result.is_ok()));
        }
    });
    let s = std::fs::read_to_string(&path).unwrap();
    assert_eq!(s, "abcdef\nabcdef\nabcdef\n", "{b:?}");
}
both!(append_mixed_ways, append_mixed_ways);

/// A future polled once: its output, or the future still pending.
enum Started<F: Future> {
    Done(F::Output),
    Pending(F),
}

/// Polls `f` once (submitting it).
async fn started<F: Future + Unpin>(mut f: F) -> Started<F> {
    match poll_once(&mut f).await {
        Poll::Ready(r) => Started::Done(r),
        Poll::Pending => Started::Pending(f),
    }
}

impl<F: Future + Unpin> Started<F> {
    async fn finish(self) -> F::Output {
        match self {
            Started::Done(r) => r,
            Started::Pending(f) => f.await,
        }
    }
}

/// `O_DIRECT` through the futures: a misaligned length ends with EINVAL
/// (with the hint), an aligned one reads the file, on both engines, whether
/// the read waits for the turn or enters at once.
fn direct_reads(b: Backend) {
    use std::os::unix::fs::OpenOptionsExt;
    let aio = ctx(b);
    let data = common::pattern(8192);
    let f = common::disk_temp_file(&data);
    f.sync_all().unwrap();
    let path = format!("/proc/self/fd/{}", f.as_raw_fd());
    let Ok(d) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
    else {
        return; // (A file system without O_DIRECT.)
    };
    let d = Arc::new(d);
    let rt = common::current_rt();
    rt.block_on(async {
        let _idle = idle_tasks();
        for _ in 0..3 {
            // A length that is no multiple of the block size.
            let mis = vec![0u8; 100];
            let c = done("done", aio.read_async(Arc::clone(&d), 0, mis)).await;
            let e = c.result.unwrap_err();
            assert_eq!(e.errno(), Some(libc::EINVAL), "{b:?}: {e}");
            let buf = posixrt::advise::AlignedBuf::new(4096, 4096).unwrap();
            let c = done("done", aio.read_async(Arc::clone(&d), 4096, buf)).await;
            assert_eq!(c.result.as_ref().unwrap(), &4096, "{b:?}");
            assert_eq!(c.buf.unwrap().as_slice(), &data[4096..], "{b:?}");
        }
    });
}
both!(direct_reads, direct_reads);

/// A `multi_thread` runtime made and dropped on a blocking thread of a
/// `current_thread` runtime, with a pipe read of a context both use pending
/// in it: the outer runtime's futures of that context go on, and the pipe's
/// bytes go to the outer read.
fn inner_runtime_dropped(b: Backend) {
    let aio = Arc::new(ctx(b));
    let (r, mut w) = pipe_files();
    let outer = common::current_rt();
    outer.block_on(async {
        let _idle = idle_tasks();
        // The outer runtime's reactor watches the context first.
        let f = Arc::new(common::temp_file(b"outer"));
        let c = aio
            .read_async(Arc::clone(&f), 0, vec![0u8; 5])
            .await
            .unwrap();
        assert_eq!(c.data(), b"outer");
        let (aio2, r2) = (Arc::clone(&aio), Arc::clone(&r));
        tokio::task::spawn_blocking(move || {
            let inner = common::multi_rt();
            let (aio3, r3) = (Arc::clone(&aio2), Arc::clone(&r2));
            let h = inner.spawn(async move {
                let _ = aio3.read_async(r3, 0, vec![0u8; 1]).await;
                panic!("an empty pipe was read");
            });
            inner.block_on(tokio::time::sleep(Duration::from_millis(20)));
            drop(inner);
            drop(h);
        })
        .await
        .unwrap();
        let read = aio.read_async(Arc::clone(&r), 0, vec![0u8; 1]);
        let writer = async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            w.write_all(b"o").unwrap();
        };
        let (c, ()) = tokio::time::timeout(T, async { tokio::join!(read, writer) })
            .await
            .expect("the outer read");
        assert_eq!(c.unwrap().data(), b"o", "{b:?}");
    });
}
both!(inner_runtime_dropped, inner_runtime_dropped);
