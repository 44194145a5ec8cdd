//! AIO futures take their share of tokio's task budget: a task whose reads
//! complete at their first poll (cached, inline on io_uring) still lets the
//! runtime's other tasks run, at least once per budget's worth of reads (512:
//! tokio's 128 units per task poll, a unit per 4 requests done).
#![cfg(feature = "tokio")]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use posixrt::aio::{Aio, Backend, ListMode, Notify, Op};

// (`both!` is not used: inline completions are the io_uring engine's.)
#[allow(unused_macros, unused_imports)]
mod common;
use common::{ctx, pattern};

const BLOCK: usize = 4096;
const BLOCKS: usize = 16;
/// Reads per run: past every run length the batching learns (up to 1024
/// entries at once without asking), so a future that ignored the budget shows.
const READS: usize = 3000;
/// tokio's budget per task poll is 128 units, and a unit pays for 4 requests
/// done; a little room for a change.
const MOST: usize = 600;

/// How a read is made and awaited.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// `aio.read_async(&reg, ..).await`
    Submit,
    /// `aio.read(&file, ..)?.await`
    Request,
    /// `aio.lio_listio(NoWait, [read], None)?.await`
    List,
}

/// Runs `READS` reads of a cached file in the `block_on` body beside a task
/// that counts its turns; returns the longest run of reads during which that
/// task did not run, and how many reads were done at once (the other task did
/// not run between them, at least once).
fn longest_run(shape: Shape) -> Option<(usize, usize)> {
    if common::uring::uring_refused() {
        return None;
    }
    let aio: Aio = ctx(Backend::Uring);
    let data = pattern(BLOCK * BLOCKS);
    let file = common::disk_temp_file(&data);
    let reg = aio.register_fd(&file).unwrap();
    let rt = common::current_rt();
    let turns = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (longest, together) = rt.block_on(async {
        let other = {
            let (turns, stop) = (Arc::clone(&turns), Arc::clone(&stop));
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    turns.fetch_add(1, Ordering::Relaxed);
                    tokio::task::yield_now().await;
                }
            })
        };
        let (mut run, mut longest, mut together) = (0, 0, 0);
        let mut last = turns.load(Ordering::Relaxed);
        let mut buf = vec![0u8; BLOCK];
        for i in 0..READS {
            let at = i * 7 % BLOCKS * BLOCK;
            let c = match shape {
                Shape::Submit => aio.read_async(&reg, at as i64, buf).await.unwrap(),
                Shape::Request => aio.read(&file, at as i64, buf).unwrap().await.unwrap(),
                Shape::List => {
                    let op = Op::read(&file, at as i64, buf);
                    let l = aio
                        .lio_listio(ListMode::NoWait, vec![Some(op)], Notify::None)
                        .unwrap();
                    let mut all = l.await.unwrap();
                    all.pop().flatten().unwrap()
                }
            };
            assert_eq!(c.result.as_ref().copied().unwrap(), BLOCK);
            assert_eq!(c.data(), &data[at..at + BLOCK], "read {i} at {at}");
            buf = c.buf.unwrap();
            let now = turns.load(Ordering::Relaxed);
            if now == last {
                run += 1;
                together += 1;
                longest = longest.max(run);
            } else {
                run = 0;
                last = now;
            }
        }
        stop.store(true, Ordering::Relaxed);
        other.await.unwrap();
        (longest, together)
    });
    drop(reg);
    Some((longest, together))
}

fn check(shape: Shape) {
    let Some((longest, together)) = longest_run(shape) else {
        return;
    };
    assert!(
        longest <= MOST,
        "{shape:?}: {longest} reads in a row without the other task running \
         ({together} of {READS} reads done without it in all)"
    );
    if together < READS / 2 {
        // Reads that go to the kernel's workers (tmpfs, overlayfs on some
        // kernels) wait, and the other task runs while they do.
        eprintln!(
            "{shape:?}: only {together} of {READS} reads completed at once here, \
             so the bound was hardly tested"
        );
    }
}

#[test]
fn inline_read_futures_yield_at_the_budget() {
    check(Shape::Submit);
}

#[test]
fn inline_request_futures_yield_at_the_budget() {
    check(Shape::Request);
}

#[test]
fn inline_list_futures_yield_at_the_budget() {
    check(Shape::List);
}

/// In a `multi_thread` runtime's `block_on` (the `main` of `#[tokio::main]`),
/// a read that has to wait while the task's budget is down to its last unit:
/// arming the reactor must not take from the spent budget (tokio would refuse
/// and wake the reactor's waker at once, which arms again: a stack overflow).
/// Every count of reads before it, over a unit's worth, is tried, each on a
/// new context (whose first wait arms the reactor).
#[test]
fn a_wait_on_the_last_unit_of_budget_arms_the_reactor() {
    if common::uring::uring_refused() {
        return;
    }
    let data = pattern(BLOCK * BLOCKS);
    let file = common::disk_temp_file(&data);
    let rt = common::multi_rt();
    for extra in 0..16 {
        let aio: Aio = ctx(Backend::Uring);
        let (r, w) = rustix::pipe::pipe().unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(5));
            rustix::io::write(&w, b"late").unwrap();
        });
        let got = rt.block_on(async {
            for i in 0..500 + extra {
                let at = i % BLOCKS * BLOCK;
                let c = aio
                    .read(&file, at as i64, vec![0u8; BLOCK])
                    .unwrap()
                    .await
                    .unwrap();
                assert_eq!(c.data(), &data[at..at + BLOCK]);
            }
            aio.read(&r, 0, vec![0u8; 4]).unwrap().await.unwrap()
        });
        writer.join().unwrap();
        assert_eq!(got.data(), b"late", "after {} reads", 500 + extra);
    }
}

/// A lone loop of reads (in `block_on`, no other task) whose reads complete
/// at their first poll: once past the first runs of the batching's learning,
/// a read waits for the end of the runtime's turn only where its future
/// yielded to the budget. Polls per read: 1 (done at once), or 3 (yielded,
/// then submitted and waited for the turn's end, then done). A read done at
/// its second poll waited once, alone: for the turn's end (a run of reads
/// that entered at once ended there), or for the driver (a yield, after which
/// the read entered at once): each a slow read of its own. (Or the kernel
/// did not complete it inline, as the page cache let go of a block: the loop
/// runs a second time before the test fails.)
#[test]
fn a_lone_loop_waits_for_the_turn_only_where_it_yields() {
    if common::uring::uring_refused() {
        return;
    }
    let aio: Aio = ctx(Backend::Uring);
    let data = pattern(BLOCK * BLOCKS);
    let file = common::disk_temp_file(&data);
    let reg = aio.register_fd(&file).unwrap();
    let rt = common::current_rt();
    let mut tries = Vec::new();
    for _ in 0..2 {
        let Some(by) = lone_loop(&rt, &aio, &reg, &data) else {
            return;
        };
        // The budget made the loop yield (at least 3 times in 1,900 reads),
        // and the batching still tried there.
        if by.iter().all(|&(_, n)| n == 3) && by.len() >= 3 {
            return;
        }
        tries.push(by);
    }
    panic!("reads not done at their first poll (index, polls), in 2 runs: {tries:?}");
}

/// `READS` reads of `reg` in the `block_on` body of `rt`: the reads past the
/// first runs of the batching's learning that were not done at their first
/// poll, with their polls (None, and a note, where most reads were not done
/// at once: nothing to check).
fn lone_loop(
    rt: &tokio::runtime::Runtime,
    aio: &Aio,
    reg: &posixrt::aio::RegisteredFd<'_>,
    data: &[u8],
) -> Option<Vec<(usize, u32)>> {
    use std::future::Future;
    use std::pin::Pin;
    /// Reads of the learning's first runs (16, 32, ... up to the first yield,
    /// after about 512), not looked at.
    const WARM: usize = 1100;
    let polls: Vec<u32> = rt.block_on(async {
        let mut polls = Vec::with_capacity(READS);
        let mut buf = vec![0u8; BLOCK];
        for i in 0..READS {
            let at = i * 7 % BLOCKS * BLOCK;
            let mut fut = aio.read_async(reg, at as i64, buf);
            let mut n = 0;
            let c = std::future::poll_fn(|cx| {
                n += 1;
                Pin::new(&mut fut).poll(cx)
            })
            .await
            .unwrap();
            assert_eq!(c.data(), &data[at..at + BLOCK], "read {i} at {at}");
            buf = c.buf.unwrap();
            polls.push(n);
        }
        polls
    });
    let late = &polls[WARM..];
    let at_once = late.iter().filter(|&&n| n == 1).count();
    if at_once < late.len() / 2 {
        eprintln!(
            "only {at_once} of {} reads completed at once here: nothing to check",
            late.len()
        );
        return None;
    }
    Some(
        (WARM..READS)
            .map(|i| (i, polls[i]))
            .filter(|&(_, n)| n != 1)
            .collect(),
    )
}
