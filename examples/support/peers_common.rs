//! What every engine of `aio_peers` shares: the block and queue depth, the
//! offsets, the aligned buffers, the [`Engine`] trait, the join of 32 reads in one
//! task, and the tokio runtime.

use std::fs::File;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use posixrt::advise::AlignedBuf;

/// The size of every read, and of its buffer.
pub const BLOCK: usize = 4096;
/// The reads in flight in a QD32 phase.
pub const QD: usize = 32;

/// An error as the engines return it: its text.
pub fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Random block offsets, the same xorshift sequence as `aio_latency`.
pub struct Offsets {
    x: u64,
    blocks: u64,
}

impl Offsets {
    pub fn new(size: usize, seed: u64) -> Offsets {
        Offsets {
            x: 0x2545f4914f6cdd1d ^ seed.wrapping_mul(0x9e3779b97f4a7c15),
            blocks: (size / BLOCK).max(1) as u64,
        }
    }
    pub fn next(&mut self) -> u64 {
        (self.next_raw() % self.blocks) * BLOCK as u64
    }
    pub fn next_raw(&mut self) -> u64 {
        self.x ^= self.x << 13;
        self.x ^= self.x >> 7;
        self.x ^= self.x << 17;
        self.x
    }
}

/// A read buffer of `BLOCK` bytes, `BLOCK`-aligned. Every engine reads into
/// buffers aligned alike: the kernel copies a cached block to a destination
/// that is not 64-byte aligned several percent slower (raw io_uring at QD32:
/// 1.29–1.31 M reads/s at offsets 0x10 and 0xff0 of a page, 1.36–1.41 M/s at
/// multiples of 64, two passes over 12 offsets), and a `Vec<u8>` from malloc
/// is only 16-byte aligned: whichever engine happened to get a 64-byte aligned
/// one gained that much.
pub fn block() -> Result<AlignedBuf, String> {
    AlignedBuf::new(BLOCK, BLOCK).map_err(err)
}

pub fn check(n: usize) -> Result<(), String> {
    if n == BLOCK {
        Ok(())
    } else {
        Err(format!("short read: {n} bytes"))
    }
}

/// One engine: a QD1 round (latencies in ns pushed to `lat`) and a QD32 round
/// (ops/s returned), or `None` for an engine without a QD32 figure.
pub trait Engine {
    fn qd1(&mut self, ops: usize, lat: &mut Vec<u64>) -> Result<(), String>;
    fn qd32(&mut self, ops: usize) -> Result<Option<f64>, String>;
}

/// `n` reads with 32 futures in flight in the calling task: each wake-up polls
/// every future, and one that completed is replaced by the next read (a
/// `join_all` that refills, like `buffer_unordered`). `read` starts a read into
/// a buffer; `done` checks a result and gives the buffer back.
pub async fn join_in_flight<F: Future + Unpin>(
    n: usize,
    mut read: impl FnMut(AlignedBuf) -> F,
    mut done: impl FnMut(F::Output) -> Result<AlignedBuf, String>,
) -> Result<(), String> {
    let mut left = n;
    let mut next = |buf: AlignedBuf, left: &mut usize| {
        (*left > 0).then(|| {
            *left -= 1;
            read(buf)
        })
    };
    let mut futs = Vec::with_capacity(QD);
    for _ in 0..QD {
        futs.push(next(block()?, &mut left));
    }
    std::future::poll_fn(|cx| {
        let mut live = false;
        for slot in futs.iter_mut() {
            while let Some(f) = slot.as_mut() {
                let Poll::Ready(c) = Pin::new(f).poll(cx) else {
                    live = true;
                    break;
                };
                *slot = next(done(c)?, &mut left);
            }
        }
        if live {
            Poll::Pending
        } else {
            Poll::Ready(Ok(()))
        }
    })
    .await
}

/// A tokio runtime with everything enabled: `current_thread`, or
/// `multi_thread` with its default worker count (one per CPU).
pub fn runtime(multi: bool) -> Result<tokio::runtime::Runtime, String> {
    let mut b = if multi {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    b.enable_all().build().map_err(err)
}

/// The length of `f` in bytes (`BLOCK` if its metadata cannot be read).
pub fn file_len(f: &File) -> usize {
    f.metadata().map_or(BLOCK, |m| m.len() as usize)
}
