//! posixrt AIO against the Rust crates a user would pick instead, side by side.
//!
//! The method is `aio_latency`'s: 4 KiB random reads of a cached file, QD1 latency
//! (p50, p99) and QD32 throughput. Engines:
//!
//! | engine | what runs |
//! |---|---|
//! | `posixrt_suspend` | `aio.read` + `aio.suspend`; QD32: `lio_listio(Wait)` of 32 |
//! | `posixrt_await` | `aio.read_async(&reg, ..).await` (`reg` the file's `RegisteredFd`, borrowed) on a tokio `current_thread` runtime (submitted when polled; the reads of one runtime turn enter the ring together); QD32: 32 tasks in flight |
//! | `posixrt_await_request` | `aio.read(&file, ..)?.await` (submitted, and the ring entered, by the call); QD32: 32 tasks in flight |
//! | `posixrt_await_join` | as `posixrt_await`; QD32: 32 futures in flight in one task (a join that polls each and starts the next read where one completed, as `join_all` or `buffer_unordered` would) |
//! | `posixrt_await_mt` | as `posixrt_await`, on a tokio `multi_thread` runtime (one worker per CPU, as `#[tokio::main]` builds); QD1 in a spawned task; QD32: 32 tasks in flight, on every worker |
//! | `io_uring` | the raw `io-uring` crate: push, `submit_and_wait`; QD32: submit 32, wait all |
//! | `tokio_bare_uring` | the floor for `posixrt_await`: the least a tokio read future over io_uring does (`support/bare_uring.rs`: a lock, a slot, an entry, a waker; a flusher task enters the ring once per turn), with the same runtime, tasks and loop; QD32: 32 tasks in flight |
//! | `tokio_bare_uring_join` | the floor for `posixrt_await_join`: the same future; QD32: 32 in flight in one task, joined as `posixrt_await_join` joins them |
//! | `tokio_bare_uring_mt` | the floor for `posixrt_await_mt`: the same future and flusher task on the same `multi_thread` runtime |
//! | `tokio_uring` | `tokio_uring::fs::File::read_at`; QD32: 32 tasks in flight |
//! | `monoio` | `monoio::fs::File::read_at` (io_uring driver); QD32: 32 tasks in flight |
//! | `tokio_fs` | `tokio::fs::File` seek + read; QD32: 32 tasks, one file handle each |
//! | `pread` | serial `pread(2)` (QD1 only) |
//!
//! The posixrt engines register the file with their context
//! (`Aio::register_fd`), as a program with one busy file would, and so does
//! `tokio_bare_uring`; the raw `io_uring` engine does not register it (nor do
//! the peers).
//!
//! Every engine reads into buffers of 4 KiB aligned to 4 KiB (see `block`):
//! the kernel's copy into a destination that is not 64-byte aligned is a few
//! percent slower, and a `Vec<u8>` from malloc is only 16-byte aligned, so
//! with `Vec`s the engine that happened to get an aligned one (the raw engine's
//! single 128 KiB buffer, in some builds) gained up to 10% on the others.
//!
//! Engines take turns round by round, in a new (seeded) order each round, so a
//! load change on a shared machine hits all of them alike, and no engine always
//! runs after the same one; each figure is the median over the
//! rounds. `tokio_fs` runs its rounds apart, after the others: the engine that
//! followed it in a round was slowed by 15–20% (see `APART`). 21 short rounds
//! by default (45–60 s in all). At 7f4f5ef, on a 2-vCPU AMD EPYC VM, 6 runs
//! with every engine put the QD32 ratio of `posixrt_await` to raw io_uring at
//! 0.893–0.922 and `tokio_bare_uring`'s at 0.944–0.978 (at 1633c4f, 8 runs:
//! 0.880–0.908 and 0.944–0.962); on an Intel Xeon VM,
//! earlier, the first was 0.80–0.84. (Before d6d8bba the floor's QD32 loop read
//! the clock once per read, which made it about 4% slower. With `Vec` buffers,
//! earlier, the ratio spread over 0.81–1.01 from day to day and build to build:
//! see `block`.) The test file is written back to the disk before the rounds,
//! so that the kernel's flusher does not write it during them.
//!
//! ```text
//! cargo run --release --features peers --example aio_peers -- [--rounds N] [--ops N] [--qd32-ops N] [--file-size-mb N] [--only E1,E2,...] [--json]
//! ```
//!
//! `--json` prints one line: `{ENGINE: {"qd1_p50_ns": N, "qd1_p99_ns": N,
//! "qd32_ops_per_s": F|null, "qd32_ops_per_cpu_s": F|null}, ..., "ratios": {...}}`.
//! `qd32_ops_per_cpu_s` divides by the process's CPU time instead of the wall
//! time: on a loaded machine it moves less with the other processes' load.

use std::cell::RefCell;
use std::fs::File;
use std::future::Future;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use posixrt::advise::AlignedBuf;
use posixrt::aio::{Aio, Backend, ListMode, Notify, Op, RegisteredFd};

#[macro_use]
#[path = "support/out.rs"]
mod out;
#[path = "support/args.rs"]
mod args;
#[path = "support/bare_uring.rs"]
mod bare_uring;

const BLOCK: usize = 4096;
const QD: usize = 32;
const ENGINES: [&str; 13] = [
    "posixrt_suspend",
    "posixrt_await",
    "posixrt_await_request",
    "posixrt_await_join",
    "posixrt_await_mt",
    "io_uring",
    "tokio_bare_uring",
    "tokio_bare_uring_join",
    "tokio_bare_uring_mt",
    "tokio_uring",
    "monoio",
    "tokio_fs",
    "pread",
];
/// Engines measured apart, each in its own rounds after the interleaved ones.
/// `tokio_fs` reads 30–50 times slower than the rest, and the engine that ran
/// right after it read slower through its whole phase: in interleaved rounds
/// (21 rounds, 3 runs) the QD1 p50 of raw io_uring, `posixrt_suspend` and
/// `posixrt_await` was 15–20% higher, and their p99 25–31% higher, in the
/// rounds where they followed it, so which engine paid depended on the seeded
/// order, not on the engine. A sleep or a busy loop of 20 ms before every
/// phase slowed every engine as much, and a warm-up as long as the phase did
/// not undo it: the 256 MiB test file fits in this host's shared 480 MiB L3,
/// and a pause in fast reading seems to let it go cold.
const APART: [&str; 1] = ["tokio_fs"];

const USAGE: &str = "usage: aio_peers [--rounds N] [--ops N] [--qd32-ops N] [--file-size-mb N] [--only E1,E2,...] [--json]

Measures 4 KiB random reads of a cached file with posixrt (suspend and four .await forms),
with its Rust peers (raw io-uring, tokio-uring, monoio, tokio::fs, pread), and with the floor
for a tokio future (tokio_bare_uring; tokio_bare_uring_join for 32 futures in one task;
tokio_bare_uring_mt on a multi_thread runtime: a bare io_uring read future, no posixrt).

  --rounds N         interleaved rounds; figures are medians over them (3 to 99, default 21)
  --ops N            QD1 reads per engine per round (100 to 1000000, default 5000)
  --qd32-ops N       QD32 reads per engine per round (320 to 10000000, default 64000)
  --file-size-mb N   size of the test file in MiB (1 to 4096, default 256; it must fit
                     in the free space of the temp dir, $TMPDIR or /tmp)
  --only E1,E2,...   measure only these engines (ratios that need another print n/a)
  --json             one JSON line instead of the table

Build with `--features peers` (the peers are optional dependencies).";

struct Args {
    rounds: usize,
    ops: usize,
    qd32_ops: usize,
    size_mb: usize,
    only: Option<String>,
    json: bool,
}

fn parse() -> Args {
    let mut a = Args {
        rounds: 21,
        ops: 5000,
        qd32_ops: 64_000,
        size_mb: 256,
        only: None,
        json: false,
    };
    let mut it = args::Args::new("aio_peers", USAGE);
    while let Some(s) = it.next() {
        match s.as_str() {
            "--rounds" => a.rounds = it.value_in("--rounds", 3..=99),
            "--ops" => a.ops = it.value_in("--ops", 100..=1_000_000),
            "--qd32-ops" => a.qd32_ops = it.value_in("--qd32-ops", 320..=10_000_000),
            "--file-size-mb" => a.size_mb = it.value_in("--file-size-mb", 1..=4096),
            "--json" => a.json = true,
            "--only" => {
                let e: String = it.value("--only");
                if !e.split(',').all(|n| ENGINES.contains(&n)) {
                    it.fail(format!(
                        "--only needs engines from {} (comma-separated)",
                        ENGINES.join(", ")
                    ));
                }
                a.only = Some(e);
            }
            other => it.unknown(other),
        }
    }
    it.check_temp_space("--file-size-mb", a.size_mb);
    a
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Random block offsets, the same xorshift sequence as `aio_latency`.
struct Offsets {
    x: u64,
    blocks: u64,
}

impl Offsets {
    fn new(size: usize, seed: u64) -> Offsets {
        Offsets {
            x: 0x2545f4914f6cdd1d ^ seed.wrapping_mul(0x9e3779b97f4a7c15),
            blocks: (size / BLOCK).max(1) as u64,
        }
    }
    fn next(&mut self) -> u64 {
        (self.next_raw() % self.blocks) * BLOCK as u64
    }
    fn next_raw(&mut self) -> u64 {
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
fn block() -> Result<AlignedBuf, String> {
    AlignedBuf::new(BLOCK, BLOCK).map_err(err)
}

/// [`block`] for tokio-uring and monoio, whose reads take buffer types of their
/// own.
struct PeerBlock(AlignedBuf);

// SAFETY (the four impls below): the `AlignedBuf` owns its heap block, which
// does not move when the value moves, and all of it is initialised (zeroed when
// allocated), so its whole length is both initialised and writable.
unsafe impl monoio::buf::IoBuf for PeerBlock {
    fn read_ptr(&self) -> *const u8 {
        self.0.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.0.len()
    }
}
// SAFETY: see above.
unsafe impl monoio::buf::IoBufMut for PeerBlock {
    fn write_ptr(&mut self) -> *mut u8 {
        self.0.as_mut_ptr()
    }
    fn bytes_total(&mut self) -> usize {
        self.0.len()
    }
    unsafe fn set_init(&mut self, _pos: usize) {}
}
// SAFETY: see above.
unsafe impl tokio_uring::buf::IoBuf for PeerBlock {
    fn stable_ptr(&self) -> *const u8 {
        self.0.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.0.len()
    }
    fn bytes_total(&self) -> usize {
        self.0.len()
    }
}
// SAFETY: see above.
unsafe impl tokio_uring::buf::IoBufMut for PeerBlock {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.0.as_mut_ptr()
    }
    unsafe fn set_init(&mut self, _pos: usize) {}
}

fn check(n: usize) -> Result<(), String> {
    if n == BLOCK {
        Ok(())
    } else {
        Err(format!("short read: {n} bytes"))
    }
}

/// One engine: a QD1 round (latencies in ns pushed to `lat`) and a QD32 round
/// (ops/s returned), or `None` for an engine without a QD32 figure.
trait Engine {
    fn qd1(&mut self, ops: usize, lat: &mut Vec<u64>) -> Result<(), String>;
    fn qd32(&mut self, ops: usize) -> Result<Option<f64>, String>;
}

// ------------------------------------------------------------------ posixrt

struct PosixrtSuspend {
    /// The file registered with `aio` (see [`register`]).
    _reg: RegisteredFd<'static>,
    aio: Aio,
    file: Arc<File>,
    offs: Offsets,
    bufs: Vec<AlignedBuf>,
}

impl Engine for PosixrtSuspend {
    fn qd1(&mut self, ops: usize, lat: &mut Vec<u64>) -> Result<(), String> {
        let mut buf = match self.bufs.pop() {
            Some(b) => b,
            None => block()?,
        };
        for _ in 0..ops {
            let t = Instant::now();
            let mut r = self
                .aio
                .read(&*self.file, self.offs.next() as i64, buf)
                .map_err(err)?;
            self.aio.suspend([&r], None).map_err(err)?;
            let c = r.aio_return().map_err(err)?;
            check(c.result.map_err(err)?)?;
            buf = c.buf.ok_or("the buffer did not come back")?;
            lat.push(t.elapsed().as_nanos() as u64);
        }
        self.bufs.push(buf);
        Ok(())
    }

    fn qd32(&mut self, ops: usize) -> Result<Option<f64>, String> {
        while self.bufs.len() < QD {
            self.bufs.push(block()?);
        }
        let t = Instant::now();
        for _ in 0..ops / QD {
            let file = &*self.file;
            let offs = &mut self.offs;
            let list = self
                .aio
                .lio_listio(
                    ListMode::Wait,
                    self.bufs
                        .drain(..)
                        .map(|b| Some(Op::read(file, offs.next() as i64, b))),
                    Notify::None,
                )
                .map_err(err)?;
            for c in list.take_all().map_err(err)?.into_iter().flatten() {
                check(c.result.map_err(err)?)?;
                self.bufs.extend(c.buf);
            }
        }
        Ok(Some((ops / QD * QD) as f64 / t.elapsed().as_secs_f64()))
    }
}

struct PosixrtAwait {
    rt: tokio::runtime::Runtime,
    /// The file, registered with `aio`: the futures borrow the guard (no
    /// reference count per read, as an `Arc<File>` clone would take).
    reg: Arc<RegisteredFd<'static>>,
    aio: Aio,
    file: Arc<File>,
    seed: u64,
    /// `aio.read_async(..).await` (submitted when polled) rather than
    /// `aio.read(..)?.await` (submitted by the call).
    submit_on_poll: bool,
    /// QD32 in one task (see [`join_reads`]) rather than 32 tasks.
    one_task: bool,
    /// QD1 in a spawned task (on a `multi_thread` runtime's worker) rather
    /// than in `block_on`'s body.
    spawn_qd1: bool,
}

/// `n` reads of `BLOCK` bytes at `offs` with 32 futures in flight in the calling
/// task (see [`join_in_flight`]).
async fn join_reads(
    aio: &Aio,
    reg: &RegisteredFd<'_>,
    offs: &mut Offsets,
    n: usize,
) -> Result<(), String> {
    join_in_flight(
        n,
        |buf| aio.read_async(reg, offs.next() as i64, buf),
        |c| {
            let c = c.map_err(err)?;
            check(c.result.map_err(err)?)?;
            c.buf
                .ok_or_else(|| "the buffer did not come back".to_string())
        },
    )
    .await
}

/// `n` reads with 32 futures in flight in the calling task: each wake-up polls
/// every future, and one that completed is replaced by the next read (a
/// `join_all` that refills, like `buffer_unordered`). `read` starts a read into
/// a buffer; `done` checks a result and gives the buffer back.
async fn join_in_flight<F: Future + Unpin>(
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

impl Engine for PosixrtAwait {
    fn qd1(&mut self, ops: usize, lat: &mut Vec<u64>) -> Result<(), String> {
        self.seed += 1;
        let mut offs = Offsets::new(file_len(&self.file), self.seed);
        if self.spawn_qd1 {
            let (aio, reg) = (self.aio.clone(), Arc::clone(&self.reg));
            let got = self.rt.block_on(async move {
                tokio::spawn(async move {
                    let mut buf = block()?;
                    let mut lat = Vec::with_capacity(ops);
                    for _ in 0..ops {
                        let t = Instant::now();
                        let c = aio
                            .read_async(&*reg, offs.next() as i64, buf)
                            .await
                            .map_err(err)?;
                        check(c.result.map_err(err)?)?;
                        buf = c.buf.ok_or("the buffer did not come back")?;
                        lat.push(t.elapsed().as_nanos() as u64);
                    }
                    Ok::<_, String>(lat)
                })
                .await
                .map_err(err)?
            })?;
            lat.extend(got);
            return Ok(());
        }
        let (aio, file, reg) = (&self.aio, &self.file, &*self.reg);
        self.rt.block_on(async {
            let mut buf = block()?;
            for _ in 0..ops {
                let t = Instant::now();
                let c = if self.submit_on_poll {
                    aio.read_async(reg, offs.next() as i64, buf).await
                } else {
                    aio.read(&**file, offs.next() as i64, buf)
                        .map_err(err)?
                        .await
                }
                .map_err(err)?;
                check(c.result.map_err(err)?)?;
                buf = c.buf.ok_or("the buffer did not come back")?;
                lat.push(t.elapsed().as_nanos() as u64);
            }
            Ok(())
        })
    }

    fn qd32(&mut self, ops: usize) -> Result<Option<f64>, String> {
        let per = ops / QD;
        let size = file_len(&self.file);
        self.seed += 1;
        let seed = self.seed;
        let submit_on_poll = self.submit_on_poll;
        let t = Instant::now();
        if self.one_task {
            let (aio, reg) = (&self.aio, &*self.reg);
            let mut offs = Offsets::new(size, seed * 64);
            self.rt
                .block_on(join_reads(aio, reg, &mut offs, per * QD))?;
            return Ok(Some((per * QD) as f64 / t.elapsed().as_secs_f64()));
        }
        self.rt.block_on(async {
            let tasks: Vec<_> = (0..QD)
                .map(|k| {
                    let (aio, file) = (self.aio.clone(), Arc::clone(&self.file));
                    let reg = Arc::clone(&self.reg);
                    tokio::spawn(async move {
                        let mut offs = Offsets::new(size, seed * 64 + k as u64);
                        let mut buf = block()?;
                        for _ in 0..per {
                            let c = if submit_on_poll {
                                aio.read_async(&*reg, offs.next() as i64, buf).await
                            } else {
                                aio.read(&*file, offs.next() as i64, buf)
                                    .map_err(err)?
                                    .await
                            }
                            .map_err(err)?;
                            check(c.result.map_err(err)?)?;
                            buf = c.buf.ok_or("the buffer did not come back")?;
                        }
                        Ok::<_, String>(())
                    })
                })
                .collect();
            for t in tasks {
                t.await.map_err(err)??;
            }
            Ok::<_, String>(())
        })?;
        Ok(Some((per * QD) as f64 / t.elapsed().as_secs_f64()))
    }
}

// ------------------------------------------------------------------ raw io_uring

struct RawUring {
    ring: io_uring::IoUring,
    file: Arc<File>,
    offs: Offsets,
    bufs: AlignedBuf,
}

impl Engine for RawUring {
    fn qd1(&mut self, ops: usize, lat: &mut Vec<u64>) -> Result<(), String> {
        use io_uring::{opcode, types};
        let fd = types::Fd(self.file.as_raw_fd());
        for _ in 0..ops {
            let t = Instant::now();
            let e = opcode::Read::new(fd, self.bufs.as_mut_ptr(), BLOCK as u32)
                .offset(self.offs.next())
                .build()
                .user_data(1);
            // SAFETY: the buffer outlives the request: we wait for its completion below.
            unsafe { self.ring.submission().push(&e).map_err(err)? };
            self.ring.submit_and_wait(1).map_err(err)?;
            let cqe = self.ring.completion().next().ok_or("no completion")?;
            check(cqe.result().max(0) as usize)?;
            lat.push(t.elapsed().as_nanos() as u64);
        }
        Ok(())
    }

    fn qd32(&mut self, ops: usize) -> Result<Option<f64>, String> {
        use io_uring::{opcode, types};
        let fd = types::Fd(self.file.as_raw_fd());
        let t = Instant::now();
        for _ in 0..ops / QD {
            for i in 0..QD {
                let e = opcode::Read::new(fd, self.bufs[i * BLOCK..].as_mut_ptr(), BLOCK as u32)
                    .offset(self.offs.next())
                    .build()
                    .user_data(i as u64);
                // SAFETY: the buffers outlive the batch: we wait for every completion.
                unsafe { self.ring.submission().push(&e).map_err(err)? };
            }
            let mut n = 0;
            while n < QD {
                self.ring.submit_and_wait(QD - n).map_err(err)?;
                for cqe in self.ring.completion() {
                    check(cqe.result().max(0) as usize)?;
                    n += 1;
                }
            }
        }
        Ok(Some((ops / QD * QD) as f64 / t.elapsed().as_secs_f64()))
    }
}

// ------------------------------------------------------------------ the floor under tokio

/// Reads through [`bare_uring`]: what `posixrt_await` (or, with `one_task`,
/// `posixrt_await_join`) would cost if posixrt's own work cost nothing (same
/// runtime, same tasks, same loop).
struct BareUring {
    rt: tokio::runtime::Runtime,
    file: Arc<File>,
    seed: u64,
    /// QD32 as `posixrt_await_join`: 32 futures in one task.
    one_task: bool,
}

impl BareUring {
    /// Runs `tasks` reading tasks of `per` reads each beside a flusher; each
    /// task pushes its latencies (ns) to `lat` if given.
    fn run(
        &mut self,
        tasks: usize,
        per: usize,
        mut lat: Option<&mut Vec<u64>>,
    ) -> Result<(), String> {
        let ring = bare_uring::BareRing::new(256, self.file.as_raw_fd()).map_err(err)?;
        let size = file_len(&self.file);
        self.seed += 1;
        let seed = self.seed;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let timed = lat.is_some();
        let got = self.rt.block_on(async {
            let flusher = tokio::spawn(Arc::clone(&ring).flusher(Arc::clone(&stop)));
            let readers: Vec<_> = (0..tasks)
                .map(|k| {
                    let ring = Arc::clone(&ring);
                    tokio::spawn(async move {
                        let mut offs = Offsets::new(size, seed * 64 + k as u64);
                        let mut buf = block()?;
                        let mut lat = Vec::with_capacity(if timed { per } else { 0 });
                        for _ in 0..per {
                            // (The clock is read only when timed: QD32 reads it
                            // once per run, as the other engines do.)
                            let t = timed.then(Instant::now);
                            let (r, b) = ring.read(offs.next(), buf).await;
                            check(r.max(0) as usize)?;
                            buf = b;
                            if let Some(t) = t {
                                lat.push(t.elapsed().as_nanos() as u64);
                            }
                        }
                        Ok::<_, String>(lat)
                    })
                })
                .collect();
            let mut all = Vec::new();
            for r in readers {
                all.extend(r.await.map_err(err)??);
            }
            stop.store(true, std::sync::atomic::Ordering::Release);
            // (Woken by hand: nothing else would wake it now.)
            let _ = ring.read(0, block()?).await;
            flusher.await.map_err(err)?.map_err(err)?;
            Ok::<_, String>(all)
        })?;
        if let Some(l) = lat.as_mut() {
            l.extend(got);
        }
        Ok(())
    }
}

impl BareUring {
    /// `n` reads by one task that keeps 32 in flight (as [`join_reads`]),
    /// beside a flusher.
    fn run_join(&mut self, n: usize) -> Result<(), String> {
        let ring = bare_uring::BareRing::new(256, self.file.as_raw_fd()).map_err(err)?;
        let size = file_len(&self.file);
        self.seed += 1;
        let mut offs = Offsets::new(size, self.seed * 64);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        self.rt.block_on(async {
            let flusher = tokio::spawn(Arc::clone(&ring).flusher(Arc::clone(&stop)));
            join_in_flight(
                n,
                |buf| ring.read(offs.next(), buf),
                |(r, buf)| check(r.max(0) as usize).map(|()| buf),
            )
            .await?;
            stop.store(true, std::sync::atomic::Ordering::Release);
            let _ = ring.read(0, block()?).await;
            flusher.await.map_err(err)?.map_err(err)
        })
    }
}

impl Engine for BareUring {
    fn qd1(&mut self, ops: usize, lat: &mut Vec<u64>) -> Result<(), String> {
        self.run(1, ops, Some(lat))
    }

    fn qd32(&mut self, ops: usize) -> Result<Option<f64>, String> {
        let t = Instant::now();
        if self.one_task {
            self.run_join(ops / QD * QD)?;
            return Ok(Some((ops / QD * QD) as f64 / t.elapsed().as_secs_f64()));
        }
        self.run(QD, ops / QD, None)?;
        Ok(Some((ops / QD * QD) as f64 / t.elapsed().as_secs_f64()))
    }
}

// ------------------------------------------------------------------ tokio-uring, monoio

/// An engine over a completion-based runtime whose file reads take and give back
/// an owned buffer (`read_at(buf, pos) -> (Result<usize>, buf)`): tokio-uring and
/// monoio have the same shape, and differ in their runtime, file and spawn.
macro_rules! owned_buf_engine {
    ($name:ident, $rt:ty, $file:ty, $spawn:path, |$t:ident| $join:expr) => {
        struct $name {
            rt: $rt,
            file: Rc<$file>,
            size: usize,
            seed: u64,
        }

        impl Engine for $name {
            fn qd1(&mut self, ops: usize, lat: &mut Vec<u64>) -> Result<(), String> {
                self.seed += 1;
                let mut offs = Offsets::new(self.size, self.seed);
                let file = Rc::clone(&self.file);
                self.rt.block_on(async move {
                    let mut buf = PeerBlock(block()?);
                    for _ in 0..ops {
                        let t = Instant::now();
                        let (r, b) = file.read_at(buf, offs.next()).await;
                        check(r.map_err(err)?)?;
                        buf = b;
                        lat.push(t.elapsed().as_nanos() as u64);
                    }
                    Ok(())
                })
            }

            fn qd32(&mut self, ops: usize) -> Result<Option<f64>, String> {
                let per = ops / QD;
                self.seed += 1;
                let (seed, size) = (self.seed, self.size);
                let file = Rc::clone(&self.file);
                let t = Instant::now();
                self.rt.block_on(async move {
                    let tasks: Vec<_> = (0..QD)
                        .map(|k| {
                            let file = Rc::clone(&file);
                            $spawn(async move {
                                let mut offs = Offsets::new(size, seed * 64 + k as u64);
                                let mut buf = PeerBlock(block()?);
                                for _ in 0..per {
                                    let (r, b) = file.read_at(buf, offs.next()).await;
                                    check(r.map_err(err)?)?;
                                    buf = b;
                                }
                                Ok::<_, String>(())
                            })
                        })
                        .collect();
                    for $t in tasks {
                        $join?;
                    }
                    Ok::<_, String>(())
                })?;
                Ok(Some((per * QD) as f64 / t.elapsed().as_secs_f64()))
            }
        }
    };
}

owned_buf_engine!(
    TokioUring,
    tokio_uring::Runtime,
    tokio_uring::fs::File,
    tokio_uring::spawn,
    |t| t.await.map_err(err)?
);
owned_buf_engine!(
    Monoio,
    monoio::Runtime<monoio::time::TimeDriver<monoio::IoUringDriver>>,
    monoio::fs::File,
    monoio::spawn,
    |t| t.await
);

// ------------------------------------------------------------------ tokio::fs

struct TokioFs {
    rt: tokio::runtime::Runtime,
    /// One handle per task: a `tokio::fs::File` has one cursor (seek + read).
    files: Vec<Rc<RefCell<Option<tokio::fs::File>>>>,
    size: usize,
    seed: u64,
}

async fn seek_read(f: &mut tokio::fs::File, off: u64, buf: &mut [u8]) -> Result<(), String> {
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    f.seek(std::io::SeekFrom::Start(off)).await.map_err(err)?;
    f.read_exact(buf).await.map_err(err)?;
    Ok(())
}

impl Engine for TokioFs {
    fn qd1(&mut self, ops: usize, lat: &mut Vec<u64>) -> Result<(), String> {
        self.seed += 1;
        let mut offs = Offsets::new(self.size, self.seed);
        let mut f = self.files[0].borrow_mut().take().ok_or("file lost")?;
        let r = self.rt.block_on(async {
            let mut buf = block()?;
            for _ in 0..ops {
                let t = Instant::now();
                seek_read(&mut f, offs.next(), &mut buf).await?;
                lat.push(t.elapsed().as_nanos() as u64);
            }
            Ok(())
        });
        *self.files[0].borrow_mut() = Some(f);
        r
    }

    fn qd32(&mut self, ops: usize) -> Result<Option<f64>, String> {
        let per = ops / QD;
        self.seed += 1;
        let (seed, size) = (self.seed, self.size);
        let mut files = Vec::with_capacity(QD);
        for f in &self.files {
            files.push(f.borrow_mut().take().ok_or("file lost")?);
        }
        let t = Instant::now();
        let back = self.rt.block_on(async move {
            let tasks: Vec<_> = files
                .into_iter()
                .enumerate()
                .map(|(k, mut f)| {
                    tokio::spawn(async move {
                        let mut offs = Offsets::new(size, seed * 64 + k as u64);
                        let mut buf = block()?;
                        for _ in 0..per {
                            seek_read(&mut f, offs.next(), &mut buf).await?;
                        }
                        Ok::<_, String>(f)
                    })
                })
                .collect();
            let mut back = Vec::with_capacity(QD);
            for t in tasks {
                back.push(t.await.map_err(err)??);
            }
            Ok::<_, String>(back)
        })?;
        let rate = (per * QD) as f64 / t.elapsed().as_secs_f64();
        for (slot, f) in self.files.iter().zip(back) {
            *slot.borrow_mut() = Some(f);
        }
        Ok(Some(rate))
    }
}

// ------------------------------------------------------------------ pread

struct Pread {
    file: Arc<File>,
    offs: Offsets,
    buf: AlignedBuf,
}

impl Engine for Pread {
    fn qd1(&mut self, ops: usize, lat: &mut Vec<u64>) -> Result<(), String> {
        use std::os::unix::fs::FileExt;
        for _ in 0..ops {
            let t = Instant::now();
            check(
                self.file
                    .read_at(&mut self.buf, self.offs.next())
                    .map_err(err)?,
            )?;
            lat.push(t.elapsed().as_nanos() as u64);
        }
        Ok(())
    }

    fn qd32(&mut self, _ops: usize) -> Result<Option<f64>, String> {
        Ok(None)
    }
}

// ------------------------------------------------------------------ main

/// A tokio runtime with everything enabled: `current_thread`, or
/// `multi_thread` with its default worker count (one per CPU).
fn runtime(multi: bool) -> Result<tokio::runtime::Runtime, String> {
    let mut b = if multi {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    b.enable_all().build().map_err(err)
}

fn file_len(f: &File) -> usize {
    f.metadata().map_or(BLOCK, |m| m.len() as usize)
}

/// Registers the test file with `aio` (`Aio::register_fd`), as a program with
/// one busy file would. The guard borrows the file for as long as the engine
/// lives: a handle to it is leaked for that (one `Arc` for the process).
fn register(aio: &Aio, file: &Arc<File>) -> Result<RegisteredFd<'static>, String> {
    let file: &'static File = Box::leak(Box::new(Arc::clone(file)));
    aio.register_fd(file).map_err(err)
}

fn build(
    name: &str,
    file: &Arc<File>,
    path: &std::path::Path,
    size: usize,
) -> Result<Box<dyn Engine>, String> {
    Ok(match name {
        "posixrt_suspend" => {
            let aio = Aio::builder()
                .backend(Backend::Uring)
                .build()
                .map_err(err)?;
            Box::new(PosixrtSuspend {
                _reg: register(&aio, file)?,
                aio,
                file: Arc::clone(file),
                offs: Offsets::new(size, 1),
                bufs: Vec::new(),
            })
        }
        "posixrt_await" | "posixrt_await_request" | "posixrt_await_join" | "posixrt_await_mt" => {
            let aio = Aio::builder()
                .backend(Backend::Uring)
                .build()
                .map_err(err)?;
            Box::new(PosixrtAwait {
                rt: runtime(name.ends_with("_mt"))?,
                reg: Arc::new(register(&aio, file)?),
                aio,
                file: Arc::clone(file),
                seed: match name {
                    "posixrt_await" => 2,
                    "posixrt_await_request" => 8,
                    "posixrt_await_mt" => 11,
                    _ => 9,
                },
                submit_on_poll: name != "posixrt_await_request",
                one_task: name == "posixrt_await_join",
                spawn_qd1: name == "posixrt_await_mt",
            })
        }
        "io_uring" => Box::new(RawUring {
            ring: io_uring::IoUring::new(256).map_err(err)?,
            file: Arc::clone(file),
            offs: Offsets::new(size, 3),
            bufs: AlignedBuf::new(BLOCK * QD, BLOCK).map_err(err)?,
        }),
        "tokio_bare_uring" | "tokio_bare_uring_join" | "tokio_bare_uring_mt" => {
            Box::new(BareUring {
                rt: runtime(name.ends_with("_mt"))?,
                file: Arc::clone(file),
                seed: match name {
                    "tokio_bare_uring" => 0,
                    "tokio_bare_uring_mt" => 12,
                    _ => 10,
                },
                one_task: name == "tokio_bare_uring_join",
            })
        }
        "tokio_uring" => {
            let rt = tokio_uring::Runtime::new(&tokio_uring::builder()).map_err(err)?;
            let f = rt
                .block_on(tokio_uring::fs::File::open(path))
                .map_err(err)?;
            Box::new(TokioUring {
                rt,
                file: Rc::new(f),
                size,
                seed: 4,
            })
        }
        "monoio" => {
            let mut rt = monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
                .enable_timer()
                .build()
                .map_err(err)?;
            let f = rt.block_on(monoio::fs::File::open(path)).map_err(err)?;
            Box::new(Monoio {
                rt,
                file: Rc::new(f),
                size,
                seed: 5,
            })
        }
        "tokio_fs" => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(err)?;
            let files = rt.block_on(async {
                let mut v = Vec::with_capacity(QD);
                for _ in 0..QD {
                    let f = tokio::fs::File::open(path).await.map_err(err)?;
                    v.push(Rc::new(RefCell::new(Some(f))));
                }
                Ok::<_, String>(v)
            })?;
            Box::new(TokioFs {
                rt,
                files,
                size,
                seed: 6,
            })
        }
        "pread" => Box::new(Pread {
            file: Arc::clone(file),
            offs: Offsets::new(size, 7),
            buf: block()?,
        }),
        other => return Err(format!("unknown engine {other}")),
    })
}

/// Removes the test file when dropped (the peers open it by path, so it cannot be
/// unlinked before they have).
struct Unlink(std::path::PathBuf);

impl Drop for Unlink {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[derive(Default)]
struct Figures {
    p50: Vec<u64>,
    p99: Vec<u64>,
    qd32: Vec<f64>,
    qd32_cpu: Vec<f64>,
}

/// CPU time of the whole process (every thread, the peers' runtime threads and
/// the kernel's io_uring workers included), in seconds.
fn process_cpu_s() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// engine, QD1 p50 ns, QD1 p99 ns, QD32 ops/s, QD32 ops per CPU second.
type Row<'a> = (&'a str, u64, u64, Option<f64>, Option<f64>);

fn median_u(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

fn median_f(v: &mut [f64]) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// One timed QD1 phase of `e`: its p50 and p99 go into `f`.
fn qd1_round(
    a: &Args,
    e: &mut dyn Engine,
    f: &mut Figures,
    lat: &mut Vec<u64>,
) -> Result<(), String> {
    lat.clear();
    e.qd1(a.ops, lat)?;
    if lat.is_empty() {
        return Err("an engine measured no read".into());
    }
    lat.sort_unstable();
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)];
    f.p50.push(pct(0.50));
    f.p99.push(pct(0.99));
    Ok(())
}

/// One timed QD32 phase of `e` (none for an engine without QD32).
fn qd32_round(a: &Args, e: &mut dyn Engine, f: &mut Figures) -> Result<(), String> {
    let cpu = process_cpu_s();
    if let Some(r) = e.qd32(a.qd32_ops)? {
        let cpu = process_cpu_s() - cpu;
        f.qd32.push(r);
        if cpu > 0.0 {
            f.qd32_cpu.push((a.qd32_ops / QD * QD) as f64 / cpu);
        }
    }
    Ok(())
}

fn main() {
    out::init("aio_peers"); // a closed pipe or a full disk: a clean end
    let a = parse();
    if let Err(e) = run(&a) {
        errln!("aio_peers: {e}");
        std::process::exit(1);
    }
}

fn run(a: &Args) -> Result<(), String> {
    let size = a.size_mb << 20;
    let path = std::env::temp_dir().join(format!("posixrt-aio-peers-{}", std::process::id()));
    let file = {
        let w = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let _guard = Unlink(path.clone());
        let chunk: Vec<u8> = (0..1 << 20).map(|i| (i * 31 % 253) as u8).collect();
        let mut out = &w;
        for _ in 0..a.size_mb {
            out.write_all(&chunk).map_err(err)?;
        }
        // Written back now, not by the kernel's flusher in the middle of the
        // rounds (its disk writes and CPU time would land on whichever engine
        // runs then).
        w.sync_data().map_err(err)?;
        std::mem::forget(_guard);
        Arc::new(w)
    };
    let guard = Unlink(path.clone());
    {
        use std::io::Read;
        let mut r = &*file;
        let mut b = vec![0u8; 1 << 20];
        while r.read(&mut b).map_err(err)? > 0 {}
    }
    let names: Vec<&str> = ENGINES
        .iter()
        .copied()
        .filter(|n| {
            a.only
                .as_deref()
                .map_or(true, |o| o.split(',').any(|o| o == *n))
        })
        .collect();
    let mut engines = Vec::new();
    for n in &names {
        engines.push(build(n, &file, &path, size)?);
    }
    drop(guard); // every engine has the file open: unlink it now

    // Warm-up: one short round each.
    let mut scratch = Vec::new();
    for e in engines.iter_mut() {
        e.qd1(200.min(a.ops), &mut scratch)?;
        e.qd32(QD * 4)?;
    }
    let n = engines.len();
    let mut figs: Vec<Figures> = (0..n).map(|_| Figures::default()).collect();
    let mut lat = Vec::with_capacity(a.ops);
    let (mut order, apart): (Vec<usize>, Vec<usize>) =
        (0..n).partition(|&e| !APART.contains(&names[e]));
    let mut shuffle = Offsets::new(usize::MAX, 7);
    for _ in 0..a.rounds {
        // A new order each round: no engine always follows the same one (what
        // an engine leaves behind, in the caches or the kernel, is not always
        // the same engine's handicap).
        for i in (1..order.len()).rev() {
            order.swap(i, (shuffle.next_raw() % (i as u64 + 1)) as usize);
        }
        for &e in &order {
            qd1_round(a, &mut *engines[e], &mut figs[e], &mut lat)?;
        }
        for &e in &order {
            qd32_round(a, &mut *engines[e], &mut figs[e])?;
        }
    }
    for &e in &apart {
        for _ in 0..a.rounds {
            qd1_round(a, &mut *engines[e], &mut figs[e], &mut lat)?;
            qd32_round(a, &mut *engines[e], &mut figs[e])?;
        }
    }
    let rows: Vec<Row> = names
        .iter()
        .zip(figs.iter_mut())
        .map(|(n, f)| {
            (
                *n,
                median_u(&mut f.p50),
                median_u(&mut f.p99),
                median_f(&mut f.qd32),
                median_f(&mut f.qd32_cpu),
            )
        })
        .collect();
    let get = |n: &str| rows.iter().find(|r| r.0 == n);
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let p50 = |n: &str| get(n).map(|r| r.1 as f64);
    let p99 = |n: &str| get(n).map(|r| r.2 as f64);
    let q32 = |n: &str| get(n).and_then(|r| r.3);
    let q32c = |n: &str| get(n).and_then(|r| r.4);
    let ratios = [
        (
            "await_p50_vs_suspend",
            ratio(p50("posixrt_await"), p50("posixrt_suspend")),
            "<= 1.10",
        ),
        (
            "await_p99_vs_suspend",
            ratio(p99("posixrt_await"), p99("posixrt_suspend")),
            "<= 1.10",
        ),
        (
            "await_qd32_vs_io_uring",
            ratio(q32("posixrt_await"), q32("io_uring")),
            ">= 0.90",
        ),
        (
            "await_p50_vs_monoio",
            ratio(p50("posixrt_await"), p50("monoio")),
            "<= 1.00",
        ),
        (
            "await_p50_vs_tokio_uring",
            ratio(p50("posixrt_await"), p50("tokio_uring")),
            "<= 0.55",
        ),
        (
            "suspend_qd32_vs_io_uring",
            ratio(q32("posixrt_suspend"), q32("io_uring")),
            "",
        ),
        (
            "await_qd32_cpu_vs_io_uring",
            ratio(q32c("posixrt_await"), q32c("io_uring")),
            "",
        ),
        (
            "await_request_qd32_vs_io_uring",
            ratio(q32("posixrt_await_request"), q32("io_uring")),
            "",
        ),
        (
            "await_join_qd32_vs_io_uring",
            ratio(q32("posixrt_await_join"), q32("io_uring")),
            "",
        ),
        (
            "bare_qd32_vs_io_uring",
            ratio(q32("tokio_bare_uring"), q32("io_uring")),
            "",
        ),
        (
            "await_qd32_vs_bare",
            ratio(q32("posixrt_await"), q32("tokio_bare_uring")),
            "",
        ),
        (
            "await_mt_p50_vs_suspend",
            ratio(p50("posixrt_await_mt"), p50("posixrt_suspend")),
            "",
        ),
        (
            "await_mt_p99_vs_suspend",
            ratio(p99("posixrt_await_mt"), p99("posixrt_suspend")),
            "",
        ),
        (
            "await_mt_qd32_vs_bare_mt",
            ratio(q32("posixrt_await_mt"), q32("tokio_bare_uring_mt")),
            "",
        ),
        (
            "await_mt_qd32_cpu_vs_bare_mt",
            ratio(q32c("posixrt_await_mt"), q32c("tokio_bare_uring_mt")),
            "",
        ),
        (
            "bare_join_qd32_vs_io_uring",
            ratio(q32("tokio_bare_uring_join"), q32("io_uring")),
            "",
        ),
        (
            "await_join_qd32_vs_bare_join",
            ratio(q32("posixrt_await_join"), q32("tokio_bare_uring_join")),
            "",
        ),
    ];
    let num = |x: Option<f64>, d: usize| x.map_or("null".to_string(), |x| format!("{x:.d$}"));
    if a.json {
        let mut parts: Vec<String> = rows
            .iter()
            .map(|(n, p50, p99, q, qc)| {
                format!(
                    "\"{n}\": {{\"qd1_p50_ns\": {p50}, \"qd1_p99_ns\": {p99}, \"qd32_ops_per_s\": {}, \"qd32_ops_per_cpu_s\": {}}}",
                    num(*q, 1),
                    num(*qc, 1)
                )
            })
            .collect();
        let rs: Vec<String> = ratios
            .iter()
            .map(|(k, v, _)| format!("\"{k}\": {}", num(*v, 3)))
            .collect();
        parts.push(format!("\"ratios\": {{{}}}", rs.join(", ")));
        parts.push(format!(
            "\"method\": {{\"rounds\": {}, \"qd1_ops\": {}, \"qd32_ops\": {}, \"file_mb\": {}}}",
            a.rounds, a.ops, a.qd32_ops, a.size_mb
        ));
        outln!("{{{}}}", parts.join(", "));
        return Ok(());
    }
    outln!(
        "4 KiB random reads of a cached {} MiB file; medians of {} interleaved rounds ({} QD1 ops, {} QD32 ops per engine per round)",
        a.size_mb, a.rounds, a.ops, a.qd32_ops
    );
    outln!();
    outln!(
        "{:>21} {:>10} {:>10} {:>14} {:>16}",
        "engine",
        "QD1 p50",
        "QD1 p99",
        "QD32 ops/s",
        "QD32 ops/CPU-s"
    );
    for (n, p50, p99, q, qc) in &rows {
        let q = q.map_or("-".to_string(), |q| format!("{q:.0}"));
        let qc = qc.map_or("-".to_string(), |q| format!("{q:.0}"));
        outln!("{n:>21} {:>8}ns {:>8}ns {q:>14} {qc:>16}", p50, p99);
    }
    outln!();
    for (k, v, goal) in &ratios {
        let v = v.map_or("n/a".to_string(), |v| format!("{v:.2}"));
        if goal.is_empty() {
            outln!("{k:>30} = {v}");
        } else {
            outln!("{k:>30} = {v} (goal {goal})");
        }
    }
    Ok(())
}
