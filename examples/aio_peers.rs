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
//! so that the kernel's flusher does not write it during them. It is made in
//! the temp dir (`$TMPDIR` or /tmp) and unlinked at once: nothing is left
//! there however the run ends (Ctrl-C, a kill).
//!
//! ```text
//! cargo run --release --features peers --example aio_peers -- [--rounds N] [--ops N] [--qd32-ops N] [--file-size-mb N] [--only E1,E2,...] [--json]
//! ```
//!
//! `--json` prints one line: `{ENGINE: {"qd1_p50_ns": N, "qd1_p99_ns": N,
//! "qd32_ops_per_s": F|null, "qd32_ops_per_cpu_s": F|null}, ..., "ratios": {...}}`.
//! `qd32_ops_per_cpu_s` divides by the process's CPU time instead of the wall
//! time: on a loaded machine it moves less with the other processes' load.

use std::fs::File;
use std::sync::Arc;

#[macro_use]
#[path = "support/out.rs"]
mod out;
#[path = "support/args.rs"]
mod args;
#[path = "support/bare_uring.rs"]
mod bare_uring;
#[path = "support/peers_cli.rs"]
mod cli;
#[path = "support/peers_common.rs"]
mod common;
#[path = "support/peers_other.rs"]
mod peer_engines;
#[path = "support/peers_posixrt.rs"]
mod posixrt_engines;
#[path = "support/peers_report.rs"]
mod report;
#[path = "support/peers_file.rs"]
mod test_file;

use cli::{parse, Args, ENGINES};
use common::{Engine, Offsets, QD};
use report::{qd1_round, qd32_round, Figures};

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

/// The engine `name`, reading `file` (of `size` bytes; `path` opens it again).
fn build(
    name: &str,
    file: &Arc<File>,
    path: &std::path::Path,
    size: usize,
) -> Result<Box<dyn Engine>, String> {
    if name.starts_with("posixrt_") {
        posixrt_engines::build(name, file, size)
    } else {
        peer_engines::build(name, file, path, size)
    }
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
    // Unlinked as soon as it is made: nothing is left in the temp dir however
    // the run ends (the peers that open a path open its descriptor's).
    let file = Arc::new(test_file::unlinked_test_file(
        &std::env::temp_dir(),
        &format!("posixrt-aio-peers-{}", std::process::id()),
        a.size_mb,
    )?);
    let path = test_file::fd_path(&file);
    {
        use std::io::Read;
        let mut r = &*file;
        let mut b = vec![0u8; 1 << 20];
        while r
            .read(&mut b)
            .map_err(|e| test_file::file_error("test file", &e))?
            > 0
        {}
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
    report::print(a, &names, &mut figs);
    Ok(())
}
