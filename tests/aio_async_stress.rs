//! Request futures from many tasks, in random mixes: reads through an owned
//! fd and a registered one, writes read back, lists, futures dropped after
//! their first poll or at a timeout, several futures in one task, reads from
//! `spawn_blocking` and `block_in_place`, io_uring contexts of one and more
//! rings beside a thread-engine one, on `multi_thread` runtimes and on
//! `current_thread` runtimes of several threads. Every read's bytes are
//! checked, and every task must finish: a request that no thread ever enters
//! or reaps shows as a run that never ends, which the watchdog reports.
//! `POSIXRT_STRESS_ROUNDS` (default 4) sets the rounds of each test.
#![cfg(feature = "tokio")]

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::task::Poll;
use std::time::Duration;

use posixrt::aio::{Aio, Backend, ListMode, Notify, Op};

#[allow(unused_macros, unused_imports)]
mod common;
use common::{disk_temp_file, pattern, pattern_block};

/// Blocks of 4 KiB in the file read.
const BLOCKS: usize = 64;

/// How long a run may take before it is called stuck (a run takes well
/// under a second).
const WATCHDOG: Duration = Duration::from_secs(60);

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// What every task of a run shares.
struct World {
    aios: Vec<Aio>,
    /// [`pattern`], `BLOCKS` blocks.
    file: Arc<std::fs::File>,
    /// A block per task, which it writes and reads back.
    own: Arc<std::fs::File>,
    steps: usize,
    done: AtomicUsize,
}

impl World {
    /// A context per entry of `rings`: an io_uring one of that many rings,
    /// or (0) one on the thread engine; `tasks` tasks of `steps` steps.
    fn new(rings: &[usize], tasks: usize, steps: usize) -> Arc<World> {
        let aios = rings
            .iter()
            .map(|&n| match n {
                0 => Aio::builder().backend(Backend::Threads).build().unwrap(),
                n => common::uring(n),
            })
            .collect();
        Arc::new(World {
            aios,
            file: Arc::new(disk_temp_file(&pattern(BLOCKS * 4096))),
            own: Arc::new(disk_temp_file(&vec![0u8; tasks * 4096])),
            steps,
            done: AtomicUsize::new(0),
        })
    }

    /// Waits for `n` runners to report: panics with the progress made if
    /// one does not within the watchdog's bound.
    fn wait(&self, rx: &mpsc::Receiver<()>, n: usize, tasks: usize, seed: u64) {
        for _ in 0..n {
            if rx.recv_timeout(WATCHDOG).is_err() {
                panic!(
                    "seed {seed}: {} of {} steps done after {WATCHDOG:?}: a request was stranded",
                    self.done.load(Ordering::Relaxed),
                    tasks * self.steps
                );
            }
        }
    }
}

async fn check_read(aio: &Aio, f: &Arc<std::fs::File>, block: usize, registered: bool) {
    let off = (block * 4096) as i64;
    let c = if registered {
        let reg = aio.register_fd(&**f).unwrap();
        aio.read_async(&reg, off, vec![0u8; 4096]).await.unwrap()
    } else {
        aio.read_async(Arc::clone(f), off, vec![0u8; 4096])
            .await
            .unwrap()
    };
    assert_eq!(*c.result.as_ref().unwrap(), 4096, "block {block}");
    assert_eq!(c.data(), &pattern_block(block)[..], "block {block}");
}

/// Polls `f` once: true if it finished then.
async fn poll_once<F: Future>(mut f: Pin<&mut F>) -> bool {
    std::future::poll_fn(|cx| Poll::Ready(f.as_mut().poll(cx).is_ready())).await
}

/// Task `id`'s random steps (`multi`: on a `multi_thread` runtime, where a
/// worker may block in place).
async fn task(w: Arc<World>, id: usize, seed: u64, multi: bool) {
    let mut r = Rng(seed | 1);
    let f = &w.file;
    for _ in 0..w.steps {
        let aio = &w.aios[r.below(w.aios.len() as u64) as usize];
        let block = r.below(BLOCKS as u64) as usize;
        match r.below(9) {
            0 | 1 => check_read(aio, f, block, false).await,
            2 => check_read(aio, f, block, true).await,
            3 => {
                // Dropped after its first poll (submitted, maybe not yet in
                // the kernel), or at a timeout: either way the next request
                // of this task must go through.
                let fut = check_read(aio, f, block, r.below(2) == 0);
                if r.below(2) == 0 {
                    tokio::pin!(fut);
                    let _ = poll_once(fut.as_mut()).await;
                } else {
                    let t = Duration::from_micros(r.below(1500));
                    let _ = tokio::time::timeout(t, fut).await;
                }
            }
            4 => {
                tokio::join!(
                    check_read(aio, f, block, false),
                    check_read(aio, f, (block + 1) % BLOCKS, true),
                    check_read(aio, f, (block + 7) % BLOCKS, false),
                );
            }
            5 => {
                // This task's own block, written and read back.
                let off = (id * 4096) as i64;
                let byte = r.below(256) as u8;
                let c = aio
                    .write_async(Arc::clone(&w.own), off, vec![byte; 4096])
                    .await
                    .unwrap();
                assert_eq!(*c.result.as_ref().unwrap(), 4096);
                let c = aio
                    .read_async(Arc::clone(&w.own), off, vec![0u8; 4096])
                    .await
                    .unwrap();
                assert!(
                    c.data().iter().all(|&x| x == byte),
                    "task {id}: write read back"
                );
            }
            6 => {
                let (aio, f) = (aio.clone(), Arc::clone(f));
                tokio::task::spawn_blocking(move || {
                    let mut c = aio
                        .read(&*f, (block * 4096) as i64, vec![0u8; 4096])
                        .unwrap();
                    assert_eq!(c.wait().unwrap().data(), &pattern_block(block)[..]);
                })
                .await
                .unwrap();
            }
            7 => {
                // A list of three reads, awaited, or dropped after its first poll.
                let bs = [block, (block + 3) % BLOCKS, (block + 11) % BLOCKS];
                let ops = bs
                    .iter()
                    .map(|&b| Some(Op::read(&**f, (b * 4096) as i64, vec![0u8; 4096])));
                let list = aio.lio_listio(ListMode::NoWait, ops, Notify::None).unwrap();
                if r.below(4) == 0 {
                    let fut = list.into_future();
                    tokio::pin!(fut);
                    let _ = poll_once(fut.as_mut()).await;
                } else {
                    let done = list.await.unwrap();
                    for (c, &b) in done.iter().zip(&bs) {
                        assert_eq!(c.as_ref().unwrap().data(), &pattern_block(b)[..]);
                    }
                }
            }
            _ if multi => {
                // A future polled once, then its worker blocks in place.
                let fut = check_read(aio, f, block, false);
                tokio::pin!(fut);
                if !poll_once(fut.as_mut()).await {
                    tokio::task::block_in_place(std::thread::yield_now);
                    fut.await;
                }
            }
            _ => check_read(aio, f, block, true).await,
        }
        w.done.fetch_add(1, Ordering::Relaxed);
    }
}

/// The seed of task `id` of a run seeded `seed`.
fn task_seed(seed: u64, id: usize) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(id as u64)
}

/// `tasks` tasks on a `multi_thread` runtime of `workers` workers.
fn run_multi(workers: usize, rings: &[usize], tasks: usize, steps: usize, seed: u64) {
    let w = World::new(rings, tasks, steps);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let world = Arc::clone(&w);
    rt.spawn(async move {
        let hs: Vec<_> = (0..tasks)
            .map(|id| tokio::spawn(task(Arc::clone(&world), id, task_seed(seed, id), true)))
            .collect();
        for h in hs {
            h.await.unwrap();
        }
        let _ = tx.send(());
    });
    w.wait(&rx, 1, tasks, seed);
}

/// `threads` threads, each driving a `current_thread` runtime of its own
/// with `tasks` tasks.
fn run_current(threads: usize, rings: &[usize], tasks: usize, steps: usize, seed: u64) {
    let w = World::new(rings, threads * tasks, steps);
    let (tx, rx) = mpsc::channel();
    for th in 0..threads {
        let (world, tx) = (Arc::clone(&w), tx.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let hs: Vec<_> = (0..tasks)
                    .map(|t| {
                        let id = th * tasks + t;
                        tokio::spawn(task(Arc::clone(&world), id, task_seed(seed, id), false))
                    })
                    .collect();
                for h in hs {
                    h.await.unwrap();
                }
            });
            let _ = tx.send(());
        });
    }
    w.wait(&rx, threads, threads * tasks, seed);
}

fn rounds() -> u64 {
    std::env::var("POSIXRT_STRESS_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4)
}

#[test]
fn random_mixes_on_multi_thread_runtimes_all_finish_with_the_right_bytes() {
    // (Where io_uring is refused, the thread engine alone.)
    let uring = !common::uring::uring_refused();
    for seed in 1..=rounds() {
        if uring {
            run_multi(2, &[1, 4], 24, 40, seed);
            run_multi(4, &[2], 24, 40, seed + 1000);
            run_multi(8, &[1, 0, 4], 48, 25, seed + 2000);
        } else {
            run_multi(4, &[0], 24, 40, seed);
        }
    }
}

#[test]
fn random_mixes_on_current_thread_runtimes_of_several_threads_all_finish() {
    let uring = !common::uring::uring_refused();
    for seed in 1..=rounds() {
        if uring {
            run_current(3, &[1, 4], 8, 40, seed + 3000);
            run_current(2, &[2, 0], 8, 40, seed + 4000);
        } else {
            run_current(2, &[0], 8, 40, seed + 3000);
        }
    }
}
