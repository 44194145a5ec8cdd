//! Submit-on-poll futures on a borrowed `&RegisteredFd` (`read_async(&reg, ..)`):
//! they read and write like those on an owned handle, and their submission
//! waits for the end of the runtime turn only where what it names stays the
//! same file even if the future is leaked: a registration of the same context
//! (its slot, whose last guard enters the rings before freeing it). A
//! registration of another context is submitted, and the ring entered, at the
//! first poll.
#![cfg(feature = "tokio")]

use std::fs::File;
use std::future::Future;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use posixrt::aio::{Aio, Backend, RegisteredFd};

#[allow(unused_macros, unused_imports)]
mod common;
use common::{both, ctx, temp_file};

const CHUNK: usize = 4096;
const CHUNKS: usize = 32;

fn byte(i: usize) -> u8 {
    (i * 7 % 251) as u8
}

fn current_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
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

fn memfd(name: &str) -> File {
    File::from(rustix::fs::memfd_create(name, rustix::fs::MemfdFlags::CLOEXEC).unwrap())
}

/// Closes `a` and puts `b` at its number while a few turns of the runtime
/// run (what a leaked future still holds would reach `b`), then closes it.
async fn put_at_its_number(a: File, b: &File) {
    let mut num = OwnedFd::from(a);
    rustix::io::dup2(b, &mut num).unwrap();
    for _ in 0..4 {
        tokio::task::yield_now().await;
    }
    drop(num);
}

/// Waits for 512 bytes of `x` to land in `a` (a memfd write may finish in a
/// kernel worker after the turn), and checks that none went to `b`.
fn landed_in_a(a: &File, b: &File, x: u8) {
    let mut got = [0u8; 512];
    for _ in 0..200 {
        if a.read_at(&mut got, 0).unwrap() == 512 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(got.iter().all(|&y| y == x), "the write did not land in a");
    assert_eq!(b.read_at(&mut got, 0).unwrap(), 0, "the write went to b");
}

/// 32 tasks, 4 passes, each reading its chunk through the borrowed guard, on a
/// `current_thread` and on a `multi_thread` runtime: every read gets its own
/// bytes (on the thread engine the guard registers nothing and the reads go by
/// number).
fn reads_through_a_borrowed_guard(b: Backend) {
    let data: Vec<u8> = (0..CHUNK * CHUNKS).map(byte).collect();
    let f = temp_file(&data);
    let aio = ctx(b);
    let f: &'static File = Box::leak(Box::new(f));
    let reg: Arc<RegisteredFd<'static>> = Arc::new(aio.register_fd(f).unwrap());
    assert_eq!(reg.is_registered(), b == Backend::Uring);
    for rt in [current_rt(), common::multi_rt()] {
        read_chunks(&rt, &aio, &reg);
    }
}
both!(
    reads_through_a_borrowed_guard,
    reads_through_a_borrowed_guard
);

/// [`reads_through_a_borrowed_guard`] on the runtime `rt`.
fn read_chunks(rt: &tokio::runtime::Runtime, aio: &Aio, reg: &Arc<RegisteredFd<'static>>) {
    rt.block_on(async {
        for _ in 0..4 {
            let tasks: Vec<_> = (0..CHUNKS)
                .map(|i| {
                    let (aio, reg) = (aio.clone(), Arc::clone(reg));
                    tokio::spawn(async move {
                        let off = i * CHUNK;
                        let c = aio
                            .read_async(&*reg, off as i64, vec![0u8; CHUNK])
                            .await
                            .unwrap();
                        assert_eq!(*c.result.as_ref().unwrap(), CHUNK);
                        for (k, x) in c.data().iter().enumerate() {
                            assert_eq!(*x, byte(off + k), "chunk {i} byte {k}");
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
        }
    });
}

/// A write on a guard of the same context waits for the end of the turn (its
/// first poll is pending); leaked with `mem::forget`, then the guard dropped
/// and another file put at the number: the drop entered the ring first, so the
/// write lands in its own file.
#[test]
fn forgotten_write_on_a_guard_of_its_context_lands_in_its_file() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = ctx(Backend::Uring);
    let a = memfd("aio_reg_a");
    let a2 = a.try_clone().unwrap();
    let b = memfd("aio_reg_b");
    let rt = current_rt();
    rt.block_on(async {
        let _idle = idle_tasks();
        let reg = aio.register_fd(&a).unwrap();
        let mut fut = aio.write_async(&reg, 0, vec![5u8; 512]);
        assert!(
            poll_once(&mut fut).await.is_pending(),
            "the write waits for the turn's end"
        );
        std::mem::forget(fut);
        drop(reg);
        put_at_its_number(a, &b).await;
    });
    landed_in_a(&a2, &b, 5);
}

/// A guard of another context does not keep this context's submission on its
/// file (its drop enters the other context's rings): the write is submitted
/// at once, its first poll finds it done, and a leaked future cannot make it
/// reach a file put at the number later.
#[test]
fn write_on_a_guard_of_another_context_is_submitted_at_once() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = ctx(Backend::Uring);
    let other = ctx(Backend::Uring);
    let a = memfd("aio_reg_other_a");
    let a2 = a.try_clone().unwrap();
    let b = memfd("aio_reg_other_b");
    let rt = current_rt();
    rt.block_on(async {
        let _idle = idle_tasks();
        let reg = other.register_fd(&a).unwrap();
        assert!(reg.is_registered());
        let mut fut = aio.write_async(&reg, 0, vec![6u8; 512]);
        let first = poll_once(&mut fut).await;
        std::mem::forget(fut);
        drop(reg);
        put_at_its_number(a, &b).await;
        match first {
            Poll::Ready(r) => assert_eq!(r.unwrap().result.unwrap(), 512),
            Poll::Pending => {}
        }
    });
    landed_in_a(&a2, &b, 6);
}

/// The guard names the fd it registered: a read through it of a file whose
/// number now names another file reads the registered one on io_uring (the
/// slot), by number elsewhere.
#[test]
fn read_through_a_guard_uses_the_slot() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = ctx(Backend::Uring);
    let a = temp_file(b"AAAA");
    let other = temp_file(b"BBBB");
    let reg = aio.register_fd(&a).unwrap();
    common::replace(&a, &other);
    let rt = current_rt();
    let got = rt.block_on(async {
        let _idle = idle_tasks();
        aio.read_async(&reg, 0, vec![0u8; 4]).await.unwrap()
    });
    assert_eq!(got.data(), b"AAAA");
    drop(reg);
}

/// A guard of a number whose earlier guard was leaked, made after the number
/// was given another file, reads the new file (the table checks the file's
/// identity), on the same context as the leaked guard.
#[test]
fn a_guard_made_after_a_leaked_one_reads_its_own_file() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = ctx(Backend::Uring);
    let a = temp_file(b"AAAA");
    let other = temp_file(b"BBBB");
    std::mem::forget(aio.register_fd(&a).unwrap());
    common::replace(&a, &other);
    let reg = aio.register_fd(&a).unwrap();
    let rt = current_rt();
    let got = rt.block_on(aio.read_async(&reg, 0, vec![0u8; 4])).unwrap();
    assert_eq!(got.data(), b"BBBB");
    drop(reg);
}
