//! Futures given up before they complete (dropped mid-flight, by a timeout, a
//! `select!`, or a task abort) under tokio: what they leave behind.
#![cfg(feature = "tokio")]

use std::future::Future;
use std::io::{Read, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use posixrt::aio::Backend;

mod common;
use common::both;
use common::ctx;

async fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *f).poll(cx))).await
}

/// A read of an empty pipe, polled once and dropped, does not take the bytes
/// written afterwards: they stay for the next reader.
fn dropped_pipe_read_leaves_later_data(b: Backend) {
    let aio = ctx(b);
    let rt = common::multi_rt();
    let (r, w) = rustix::pipe::pipe().unwrap();
    let r = Arc::new(std::fs::File::from(r));
    let mut w = std::fs::File::from(w);
    rt.block_on(async {
        for _ in 0..20 {
            let mut f = aio.read_async(Arc::clone(&r), 0, vec![0u8; 16]);
            assert!(poll_once(&mut f).await.is_pending());
            drop(f);
        }
    });
    w.write_all(b"after the drop").unwrap();
    drop(w);
    let mut got = Vec::new();
    (&*r).read_to_end(&mut got).unwrap();
    assert_eq!(got, b"after the drop");
}
both!(dropped_pipe_read, dropped_pipe_read_leaves_later_data);

const CHUNK: usize = 4096;
const CHUNKS: usize = 64;

fn byte(i: usize) -> u8 {
    (i * 13 % 251) as u8
}

fn data_file() -> Arc<std::fs::File> {
    let mut f = std::fs::File::from(
        rustix::fs::memfd_create("aio_drop", rustix::fs::MemfdFlags::CLOEXEC).unwrap(),
    );
    let data: Vec<u8> = (0..CHUNK * CHUNKS).map(byte).collect();
    f.write_all(&data).unwrap();
    Arc::new(f)
}

/// 32 tasks on two workers read chunks and give some of them up on the way
/// (a zero timeout, a `select!` against a yield, a drop after one poll, an
/// abort), while another thread cancels everything on the file now and then:
/// every read that completes holds its chunk, every one is accounted for, and
/// the context then shuts down.
fn given_up_futures_under_load(b: Backend) {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let aio = ctx(b);
    let f = data_file();
    let rt = common::multi_rt();
    let stop = Arc::new(AtomicBool::new(false));
    let (done, gave_up, cancelled) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let canceller = {
        let (aio, f, stop) = (aio.clone(), Arc::clone(&f), Arc::clone(&stop));
        std::thread::spawn(move || {
            use std::os::fd::AsRawFd;
            while !stop.load(Ordering::Relaxed) {
                aio.cancel_fd(f.as_raw_fd()).unwrap();
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        })
    };
    rt.block_on(async {
        let tasks: Vec<_> = (0..32usize)
            .map(|t| {
                let (aio, f) = (aio.clone(), Arc::clone(&f));
                let (done, gave_up, cancelled) = (
                    Arc::clone(&done),
                    Arc::clone(&gave_up),
                    Arc::clone(&cancelled),
                );
                tokio::spawn(async move {
                    for k in 0..200usize {
                        let i = (t * 31 + k * 17) % CHUNKS;
                        let fut =
                            aio.read_async(Arc::clone(&f), (i * CHUNK) as i64, vec![0u8; CHUNK]);
                        let r = match (t + k) % 5 {
                            0 => tokio::time::timeout(std::time::Duration::ZERO, fut)
                                .await
                                .ok(),
                            1 => tokio::select! {
                                r = fut => Some(r),
                                _ = tokio::task::yield_now() => None,
                            },
                            2 => {
                                let mut fut = fut;
                                match poll_once(&mut fut).await {
                                    Poll::Ready(r) => Some(r),
                                    Poll::Pending => None,
                                }
                            }
                            _ => Some(fut.await),
                        };
                        let Some(r) = r else {
                            gave_up.fetch_add(1, Ordering::Relaxed);
                            continue;
                        };
                        let c = r.unwrap();
                        match c.result {
                            Ok(n) => {
                                assert_eq!(n, CHUNK);
                                let want: Vec<u8> =
                                    (i * CHUNK..(i + 1) * CHUNK).map(byte).collect();
                                assert!(c.data() == &want[..], "chunk {i} read wrong bytes");
                                done.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(e) => {
                                assert_eq!(e.errno(), Some(libc::ECANCELED), "{e}");
                                cancelled.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                })
            })
            .collect();
        // One more task, aborted while it reads.
        let doomed = {
            let (aio, f) = (aio.clone(), Arc::clone(&f));
            tokio::spawn(async move {
                loop {
                    let _ = aio.read_async(Arc::clone(&f), 0, vec![0u8; CHUNK]).await;
                }
            })
        };
        for t in tasks {
            t.await.unwrap();
        }
        doomed.abort();
        assert!(doomed.await.unwrap_err().is_cancelled());
    });
    stop.store(true, Ordering::Relaxed);
    canceller.join().unwrap();
    let (d, g, c) = (
        done.load(Ordering::Relaxed),
        gave_up.load(Ordering::Relaxed),
        cancelled.load(Ordering::Relaxed),
    );
    assert_eq!(d + g + c, 32 * 200, "done {d}, given up {g}, cancelled {c}");
    assert!(d > 0, "no read completed");
    drop(rt);
    // The context still works, and shuts down.
    let c = aio.read(&*f, 0, vec![0u8; CHUNK]).unwrap().wait().unwrap();
    assert_eq!(c.result.unwrap(), CHUNK);
    drop(aio);
}
both!(given_up_futures, given_up_futures_under_load);

/// Appends of whole records, some given up on the way: the file is a run of
/// whole records, each at most once, and holds every append that completed.
fn given_up_appends_land_whole_or_not_at_all(b: Backend) {
    use std::os::unix::fs::OpenOptionsExt;
    const REC: usize = 512;
    let aio = ctx(b);
    let dir = std::env::temp_dir().join(format!("posixrt-drop-{}-{b:?}", std::process::id()));
    let f = std::fs::OpenOptions::new()
        .create_new(true)
        .append(true)
        .read(true)
        .mode(0o600)
        .open(&dir)
        .unwrap();
    std::fs::remove_file(&dir).unwrap();
    let f = Arc::new(f);
    let rt = common::multi_rt();
    let landed: Vec<usize> = rt.block_on(async {
        let tasks: Vec<_> = (0..8usize)
            .map(|t| {
                let (aio, f) = (aio.clone(), Arc::clone(&f));
                tokio::spawn(async move {
                    let mut landed = Vec::new();
                    for k in 0..30usize {
                        let id = t * 30 + k;
                        let rec = vec![id as u8; REC];
                        let fut = aio.write_async(Arc::clone(&f), 0, rec);
                        if k % 3 == 0 {
                            let mut fut = fut;
                            if let Poll::Ready(r) = poll_once(&mut fut).await {
                                assert_eq!(r.unwrap().result.unwrap(), REC);
                                landed.push(id);
                            }
                        } else {
                            assert_eq!(fut.await.unwrap().result.unwrap(), REC);
                            landed.push(id);
                        }
                    }
                    landed
                })
            })
            .collect();
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        all
    });
    drop(rt);
    drop(aio);
    // (The file offset after an append is unspecified: read from 0.)
    let mut data = vec![0u8; f.metadata().unwrap().len() as usize];
    std::os::unix::fs::FileExt::read_exact_at(&*f, &mut data, 0).unwrap();
    assert_eq!(data.len() % REC, 0, "a torn record: {} bytes", data.len());
    let mut seen = vec![false; 240];
    for rec in data.chunks(REC) {
        let id = rec[0] as usize;
        assert!(rec.iter().all(|&x| x as usize == id), "a mixed record");
        assert!(!seen[id], "record {id} twice");
        seen[id] = true;
    }
    for id in landed {
        assert!(seen[id], "completed append {id} missing");
    }
}
both!(given_up_appends, given_up_appends_land_whole_or_not_at_all);

/// A buffer that counts its drops.
struct Counted {
    v: Vec<u8>,
    drops: Arc<std::sync::atomic::AtomicUsize>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

// SAFETY: the Vec's heap block does not move when the value moves.
unsafe impl posixrt::aio::IoBuf for Counted {
    fn stable_ptr(&self) -> *const u8 {
        self.v.as_ptr()
    }
    fn bytes_len(&self) -> usize {
        self.v.len()
    }
}

// SAFETY: as above; the pointer covers `len()` initialised bytes.
unsafe impl posixrt::aio::IoBufMut for Counted {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.v.as_mut_ptr()
    }
}

/// A write future dropped while its write waits in the kernel (on a full
/// pipe) leaves its buffer to the request, which drops it once the write is
/// over: on io_uring, not before the write's own completion (cancelled) is
/// reaped, which the drop does not do; in all, once. The write is polled
/// once beside another task (so that on io_uring it waits for the turn's end,
/// its buffer still in the future), and dropped after a turn (so that it is
/// in the kernel).
fn dropped_waiting_write_keeps_its_buffer(b: Backend) {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    let rt = common::current_rt();
    let (_r, w) = rustix::pipe::pipe().unwrap();
    let size = rustix::pipe::fcntl_getpipe_size(&w).unwrap();
    let mut w = std::fs::File::from(w);
    w.write_all(&vec![1u8; size]).unwrap();
    let w = Arc::new(w);
    for round in 0..3 {
        let aio = ctx(b);
        let drops = Arc::new(AtomicUsize::new(0));
        let now = rt.block_on(async {
            let other = tokio::spawn(async {
                for _ in 0..4 {
                    tokio::task::yield_now().await;
                }
            });
            let (aio, w, drops) = (aio.clone(), Arc::clone(&w), Arc::clone(&drops));
            let now = tokio::spawn(async move {
                let buf = Counted {
                    v: vec![2u8; 16],
                    drops: Arc::clone(&drops),
                };
                let mut f = aio.write_async(w, 0, buf);
                assert!(poll_once(&mut f).await.is_pending());
                tokio::task::yield_now().await;
                drop(f);
                // (Before the runtime's next turn, which may reap.)
                drops.load(SeqCst)
            })
            .await
            .unwrap();
            other.await.unwrap();
            now
        });
        if b == Backend::Uring {
            assert_eq!(
                now, 0,
                "round {round}: the buffer went with the future, the write in the kernel"
            );
        }
        assert!(now <= 1, "round {round}: dropped {now} times");
        drop(aio);
        assert_eq!(
            drops.load(SeqCst),
            1,
            "round {round}: dropped once, when the write is over"
        );
    }
}
both!(
    dropped_waiting_write,
    dropped_waiting_write_keeps_its_buffer
);

/// A write future dropped while its entry waits for the turn's end, in a
/// submission queue that is full, enters the ring before its fd goes: the
/// number, closed and reused by another file at once, does not take the
/// write. (Other tests of this binary open files meanwhile: a round where
/// one of them took the number first says nothing, and another is run.)
#[test]
fn a_dropped_write_in_a_full_queue_enters_before_its_fd_goes() {
    use std::os::fd::AsRawFd;
    if common::uring::uring_refused() {
        return; // (No queue on the thread engine.)
    }
    // 8 entries, one ring: 8 deferred writes fill the queue.
    let aio = posixrt::aio::Aio::builder()
        .backend(Backend::Uring)
        .entries(8)
        .rings(1)
        .build()
        .unwrap();
    let rt = common::current_rt();
    let mut rounds = 0;
    for _ in 0..50 {
        let target = common::temp_file(b"");
        let victim = rt.block_on(async {
            // (Other tasks ready: the writes wait for the turn's end.)
            for _ in 0..2 {
                drop(tokio::spawn(std::future::pending::<()>()));
            }
            let mut fds = Vec::new();
            let mut futs: Vec<_> = (0..8u8)
                .map(|i| {
                    let fd = target.try_clone().unwrap();
                    fds.push(fd.as_raw_fd());
                    aio.write_async(fd, i as i64 * 16, vec![b'a' + i; 16])
                })
                .collect();
            for f in futs.iter_mut() {
                assert!(poll_once(f).await.is_pending(), "the write waits");
            }
            // Its fd closes with it; a new file takes its number if no other
            // thread took it first (the lowest free number at or above it).
            drop(futs.remove(0));
            let file = common::temp_file(b"");
            let victim = if file.as_raw_fd() == fds[0] {
                Some(file)
            } else {
                let copy = rustix::io::fcntl_dupfd_cloexec(&file, fds[0]).unwrap();
                (copy.as_raw_fd() == fds[0]).then(|| std::fs::File::from(copy))
            };
            for f in futs {
                f.await.unwrap();
            }
            victim
        });
        let Some(victim) = victim else { continue };
        rounds += 1;
        let mut got = Vec::new();
        (&victim).read_to_end(&mut got).unwrap();
        assert!(
            got.is_empty(),
            "the dropped write went to another file: {got:?}"
        );
        let mut first = vec![0u8; 16];
        rustix::io::pread(&target, &mut first, 0).unwrap();
        assert!(
            first == [0u8; 16] || first == [b'a'; 16],
            "the dropped write landed whole in its own file or not at all: {first:?}"
        );
        if rounds == 5 {
            return;
        }
    }
    assert!(
        rounds > 0,
        "no round got the number back: nothing was checked"
    );
}

/// A waker that counts its clones still alive (the `Arc`'s count).
struct Held;
impl std::task::Wake for Held {
    fn wake(self: Arc<Self>) {}
}

/// A request future and a list future polled once (each leaves its task's waker
/// in the slots of its unfinished reads) and dropped while the reads wait on an
/// empty pipe: each lets go of that waker at once, not when the given-up reads
/// are reaped (they may never complete: nothing is written here).
fn dropped_pending_futures_let_go_of_their_waker(b: Backend) {
    use std::task::{Context, Waker};
    let aio = ctx(b);
    let (r, _w) = rustix::pipe::pipe().unwrap();
    let r = Arc::new(std::fs::File::from(r));
    let held = Arc::new(Held);
    let waker = Waker::from(Arc::clone(&held));
    let mut cx = Context::from_waker(&waker);

    let mut one = std::future::IntoFuture::into_future(aio.read(&*r, 0, vec![0u8; 8]).unwrap());
    assert!(Pin::new(&mut one).poll(&mut cx).is_pending());
    let mut list = std::future::IntoFuture::into_future(
        aio.lio_listio(
            posixrt::aio::ListMode::NoWait,
            (0..2).map(|_| Some(posixrt::aio::Op::read(&*r, 0, vec![0u8; 8]))),
            posixrt::aio::Notify::None,
        )
        .unwrap(),
    );
    assert!(Pin::new(&mut list).poll(&mut cx).is_pending());
    assert!(Arc::strong_count(&held) > 2, "the slots hold the waker");

    drop(one);
    drop(list);
    assert_eq!(
        Arc::strong_count(&held),
        2,
        "a dropped future's waker is still held by its slots"
    );
}
both!(
    dropped_futures_let_go,
    dropped_pending_futures_let_go_of_their_waker
);
