//! AIO latency and throughput, side by side: posixrt on io_uring (with the file
//! registered, `Aio::register_fd`, and without), posixrt on the thread pool,
//! glibc POSIX AIO (`aio_read` + `aio_suspend`), the raw `io-uring` crate, and
//! plain `pread`.
//!
//! It creates a test file, warms the page cache, then measures in one process:
//! - QD1: 4 KiB random reads, submit to completion, one at a time (p50/p99/p99.9
//!   latency and ops/s);
//! - QD32: 4 KiB random reads in batches of 32 (submit 32, wait for all), ops/s.
//!
//! The engines of each table take turns in 10 slices (rotating who goes first), so
//! a load change on a shared machine hits all of them alike; QD32 ops/s is the
//! median over an engine's slices.
//!
//! ```text
//! cargo run --release --example aio_latency -- [--ops N] [--qd32-ops N] [--file-size-mb N] [--json]
//! ```
//!
//! `--json` prints one object:
//! `{"qd1": {ENGINE: {"p50_ns": N, "p99_ns": N, "p999_ns": N, "ops_per_s": F}, ...},
//! "qd32": {ENGINE: {"ops_per_s": F}, ...}}`.

use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::time::Instant;

use posixrt::aio::{Aio, Backend, ListMode, Notify, Op};

#[macro_use]
#[path = "support/out.rs"]
mod out;
#[path = "support/args.rs"]
mod args;

const BLOCK: usize = 4096;
const QD: usize = 32;
const ENGINES: [&str; 6] = [
    "posixrt_uring",
    "posixrt_uring_plain",
    "posixrt_threads",
    "glibc",
    "io_uring",
    "pread",
];

struct Args {
    ops: usize,
    qd32_ops: usize,
    size_mb: usize,
    json: bool,
    only: Option<String>,
}

const USAGE: &str =
    "usage: aio_latency [--ops N] [--qd32-ops N] [--file-size-mb N] [--only E1,E2,...] [--json]

  --ops N            QD1 reads per engine (1 to 10000000, default 20000)
  --qd32-ops N       QD32 reads per engine (32 to 100000000, default 200000)
  --file-size-mb N   size of the test file in MiB (1 to 65536, default 64; it must
                     fit in the free space of the temp dir, $TMPDIR or /tmp)
  --only E1,E2,...   measure only these engines (comma-separated): posixrt_uring,
                     posixrt_uring_plain, posixrt_threads, glibc, io_uring, pread
                     (ratios that need another engine print n/a)
  --json             one JSON object instead of the tables

posixrt_uring registers the file with its context (Aio::register_fd), as a
program with one busy fd would; posixrt_uring_plain does not, nor does raw
io_uring.

The test file is unlinked as soon as it is created: an interrupted run leaves nothing.";

fn parse() -> Args {
    let mut a = Args {
        ops: 20_000,
        qd32_ops: 200_000,
        size_mb: 64,
        json: false,
        only: None,
    };
    let mut it = args::Args::new("aio_latency", USAGE);
    while let Some(s) = it.next() {
        match s.as_str() {
            "--ops" => a.ops = it.value_in("--ops", 1..=10_000_000),
            "--qd32-ops" => a.qd32_ops = it.value_in("--qd32-ops", 32..=100_000_000),
            "--file-size-mb" => a.size_mb = it.value_in("--file-size-mb", 1..=65_536),
            "--json" => a.json = true,
            "--only" => a.only = Some(it.engines("--only", &ENGINES)),
            other => it.unknown(other),
        }
    }
    // The file must fit, with room to spare, where it is written.
    it.check_temp_space("--file-size-mb", a.size_mb);
    a
}

/// `a / b` with two decimals, or `n/a` when a figure is missing (an engine left
/// out with --only) or zero.
fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 && a.is_finite() && b.is_finite() => format!("{:.2}", a / b),
        _ => "n/a".to_string(),
    }
}

struct Offsets {
    list: Vec<i64>,
    i: usize,
}

impl Offsets {
    fn new(n: usize, size: usize) -> Offsets {
        let blocks = (size / BLOCK) as u64;
        let mut x = 0x2545f4914f6cdd1du64;
        let list = (0..n.max(1))
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ((x % blocks) * BLOCK as u64) as i64
            })
            .collect();
        Offsets { list, i: 0 }
    }
    #[inline]
    fn next(&mut self) -> i64 {
        let o = self.list[self.i];
        self.i = (self.i + 1) % self.list.len();
        o
    }
}

struct Qd1 {
    p50: u64,
    p99: u64,
    p999: u64,
    ops_per_s: f64,
}

/// Slices per engine: the engines of one table take turns (rotating who goes
/// first), so a load change on a shared machine hits every engine alike instead of
/// whichever happened to run during it.
const SLICES: usize = 10;

type Step<'a> = Box<dyn FnMut() -> Result<(), String> + 'a>;

/// QD1: every engine does `ops` submit-to-completion reads, interleaved in
/// [`SLICES`] slices; latency percentiles over all of them, ops/s from the time
/// spent in the engine's own slices.
fn qd1_all(
    ops: usize,
    engines: &mut [(&'static str, Step<'_>)],
) -> Result<Vec<(&'static str, Qd1)>, String> {
    let warm = (ops / 10).clamp(100, 2000);
    for (_, one) in engines.iter_mut() {
        for _ in 0..warm {
            one()?;
        }
    }
    let per = ops.div_ceil(SLICES);
    let n = engines.len();
    let mut lat: Vec<Vec<u64>> = (0..n).map(|_| Vec::with_capacity(per * SLICES)).collect();
    let mut secs = vec![0f64; n];
    for slice in 0..SLICES {
        for k in 0..n {
            let e = (slice + k) % n;
            let one = &mut engines[e].1;
            let t0 = Instant::now();
            for _ in 0..per {
                let t = Instant::now();
                one()?;
                lat[e].push(t.elapsed().as_nanos() as u64);
            }
            secs[e] += t0.elapsed().as_secs_f64();
        }
    }
    Ok(engines
        .iter()
        .zip(lat)
        .zip(secs)
        .map(|(((name, _), mut l), s)| {
            l.sort_unstable();
            let pct = |p: f64| l[((l.len() as f64 * p) as usize).min(l.len() - 1)];
            (
                *name,
                Qd1 {
                    p50: pct(0.50),
                    p99: pct(0.99),
                    p999: pct(0.999),
                    ops_per_s: l.len() as f64 / s,
                },
            )
        })
        .collect())
}

/// QD32: every engine does `ops / 32` batches (submit 32, wait for all),
/// interleaved in [`SLICES`] slices; ops/s is the median over its slices (robust
/// to a slice that another process's burst landed on).
fn qd32_all(
    ops: usize,
    engines: &mut [(&'static str, Step<'_>)],
) -> Result<Vec<(&'static str, f64)>, String> {
    let rounds = ops.div_ceil(QD);
    let warm = (rounds / 10).clamp(10, 200);
    for (_, batch) in engines.iter_mut() {
        for _ in 0..warm {
            batch()?;
        }
    }
    let per = rounds.div_ceil(SLICES);
    let n = engines.len();
    let mut rates: Vec<Vec<f64>> = (0..n).map(|_| Vec::with_capacity(SLICES)).collect();
    for slice in 0..SLICES {
        for k in 0..n {
            let e = (slice + k) % n;
            let batch = &mut engines[e].1;
            let t0 = Instant::now();
            for _ in 0..per {
                batch()?;
            }
            rates[e].push((per * QD) as f64 / t0.elapsed().as_secs_f64());
        }
    }
    Ok(engines
        .iter()
        .zip(rates)
        .map(|((name, _), mut r)| {
            r.sort_by(f64::total_cmp);
            (*name, r[r.len() / 2])
        })
        .collect())
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// A failure to make or write the test file: it is the program's own file in
/// the temp dir, so the message says so and how to choose another.
fn test_file(path: &std::path::Path, e: &std::io::Error) -> String {
    format!(
        "the test file {} (in the temp dir: set TMPDIR to choose another): {}",
        path.display(),
        out::os_error(e)
    )
}

// ------------------------------------------------------------------ engines

fn posixrt_qd1<'a>(f: &'a File, aio: &'a Aio, ops: usize, size: usize) -> Result<Step<'a>, String> {
    let mut offs = Offsets::new(ops, size);
    let mut buf = Some(vec![0u8; BLOCK]);
    Ok(Box::new(move || {
        let b = buf
            .take()
            .ok_or("the buffer was lost by an earlier error")?;
        let mut r = aio.read(f, offs.next(), b).map_err(err)?;
        aio.suspend([&r], None).map_err(err)?;
        let c = r.aio_return().map_err(err)?;
        if c.result.map_err(err)? != BLOCK {
            return Err("short read".into());
        }
        buf = c.buf;
        Ok(())
    }))
}

fn posixrt_qd32<'a>(
    f: &'a File,
    aio: &'a Aio,
    ops: usize,
    size: usize,
) -> Result<Step<'a>, String> {
    let mut offs = Offsets::new(ops, size);
    let mut bufs: Vec<Vec<u8>> = (0..QD).map(|_| vec![0u8; BLOCK]).collect();
    Ok(Box::new(move || {
        let list = aio
            .lio_listio(
                ListMode::Wait,
                bufs.drain(..).map(|b| Some(Op::read(f, offs.next(), b))),
                Notify::None,
            )
            .map_err(err)?;
        for c in list.take_all().map_err(err)?.into_iter().flatten() {
            if c.result.map_err(err)? != BLOCK {
                return Err("short read".into());
            }
            bufs.extend(c.buf);
        }
        Ok(())
    }))
}

fn glibc_qd1<'a>(f: &'a File, ops: usize, size: usize) -> Result<Step<'a>, String> {
    let mut offs = Offsets::new(ops, size);
    let mut buf = vec![0u8; BLOCK];
    // glibc's worker thread still reads the aiocb (its sigevent, in `__aio_notify`)
    // for a moment after `aio_error` reports the request done, so the control block
    // is leaked: freeing it when this engine is dropped would be a use-after-free.
    // SAFETY: aiocb is plain data; all-zero is a valid initial state (SIGEV_NONE = 1
    // is set below).
    let cb: &'static mut libc::aiocb = Box::leak(Box::new(unsafe { std::mem::zeroed() }));
    cb.aio_fildes = f.as_raw_fd();
    cb.aio_nbytes = BLOCK;
    cb.aio_sigevent.sigev_notify = libc::SIGEV_NONE;
    Ok(Box::new(move || {
        cb.aio_offset = offs.next();
        cb.aio_buf = buf.as_mut_ptr().cast();
        // SAFETY: cb and buf outlive the request: we wait for it before returning.
        unsafe {
            if libc::aio_read(cb) != 0 {
                return Err(format!("aio_read: {}", std::io::Error::last_os_error()));
            }
            let list = [&*cb as *const libc::aiocb];
            while libc::aio_error(cb) == libc::EINPROGRESS {
                libc::aio_suspend(list.as_ptr(), 1, std::ptr::null());
            }
            if libc::aio_return(cb) != BLOCK as isize {
                return Err("glibc: short read".into());
            }
        }
        Ok(())
    }))
}

fn glibc_qd32<'a>(f: &'a File, ops: usize, size: usize) -> Result<Step<'a>, String> {
    let mut offs = Offsets::new(ops, size);
    // The closure below never names `bufs` (the aiocbs point into it), so it would
    // not capture it: leak it, like the aiocbs, so it lives as long as they do.
    let bufs: &'static mut [u8] = vec![0u8; BLOCK * QD].leak();
    // Leaked for the same reason as in `glibc_qd1`.
    // SAFETY: as above.
    let cbs: &'static mut [libc::aiocb] = (0..QD)
        .map(|_| unsafe { std::mem::zeroed() })
        .collect::<Vec<libc::aiocb>>()
        .leak();
    for (i, cb) in cbs.iter_mut().enumerate() {
        cb.aio_fildes = f.as_raw_fd();
        cb.aio_nbytes = BLOCK;
        cb.aio_lio_opcode = libc::LIO_READ;
        cb.aio_sigevent.sigev_notify = libc::SIGEV_NONE;
        cb.aio_buf = bufs[i * BLOCK..].as_mut_ptr().cast();
    }
    Ok(Box::new(move || {
        for cb in cbs.iter_mut() {
            cb.aio_offset = offs.next();
        }
        let mut list: Vec<*mut libc::aiocb> = cbs.iter_mut().map(|c| c as *mut _).collect();
        // SAFETY: the aiocbs and buffers outlive LIO_WAIT.
        unsafe {
            if libc::lio_listio(
                libc::LIO_WAIT,
                list.as_mut_ptr(),
                QD as i32,
                std::ptr::null_mut(),
            ) != 0
            {
                return Err(format!("lio_listio: {}", std::io::Error::last_os_error()));
            }
            for cb in cbs.iter_mut() {
                if libc::aio_return(cb) != BLOCK as isize {
                    return Err("glibc: short read".into());
                }
            }
        }
        Ok(())
    }))
}

fn uring_qd1<'a>(f: &'a File, ops: usize, size: usize) -> Result<Step<'a>, String> {
    use io_uring::{opcode, types, IoUring};
    let mut ring = IoUring::new(256).map_err(err)?;
    let mut offs = Offsets::new(ops, size);
    let mut buf = vec![0u8; BLOCK];
    let fd = types::Fd(f.as_raw_fd());
    Ok(Box::new(move || {
        let e = opcode::Read::new(fd, buf.as_mut_ptr(), BLOCK as u32)
            .offset(offs.next() as u64)
            .build()
            .user_data(1);
        // SAFETY: buf outlives the request: we wait for its completion below.
        unsafe { ring.submission().push(&e).map_err(err)? };
        ring.submit_and_wait(1).map_err(err)?;
        let cqe = ring.completion().next().ok_or("no completion")?;
        if cqe.result() != BLOCK as i32 {
            return Err("io_uring: short read".into());
        }
        Ok(())
    }))
}

fn uring_qd32<'a>(f: &'a File, ops: usize, size: usize) -> Result<Step<'a>, String> {
    use io_uring::{opcode, types, IoUring};
    let mut ring = IoUring::new(256).map_err(err)?;
    let mut offs = Offsets::new(ops, size);
    let mut bufs = vec![0u8; BLOCK * QD];
    let fd = types::Fd(f.as_raw_fd());
    Ok(Box::new(move || {
        for i in 0..QD {
            let e = opcode::Read::new(fd, bufs[i * BLOCK..].as_mut_ptr(), BLOCK as u32)
                .offset(offs.next() as u64)
                .build()
                .user_data(i as u64);
            // SAFETY: bufs outlives the batch: we wait for every completion.
            unsafe { ring.submission().push(&e).map_err(err)? };
        }
        ring.submit_and_wait(QD).map_err(err)?;
        let mut n = 0;
        while n < QD {
            for cqe in ring.completion() {
                if cqe.result() != BLOCK as i32 {
                    return Err("io_uring: short read".into());
                }
                n += 1;
            }
            if n < QD {
                ring.submit_and_wait(QD - n).map_err(err)?;
            }
        }
        Ok(())
    }))
}

fn pread_qd1<'a>(f: &'a File, ops: usize, size: usize) -> Result<Step<'a>, String> {
    use std::os::unix::fs::FileExt;
    let mut offs = Offsets::new(ops, size);
    let mut buf = vec![0u8; BLOCK];
    Ok(Box::new(move || {
        let n = f.read_at(&mut buf, offs.next() as u64).map_err(err)?;
        if n != BLOCK {
            return Err("pread: short read".into());
        }
        Ok(())
    }))
}

fn main() {
    // A closed pipe (`aio_latency | head`) or a full disk on standard output ends
    // the example cleanly, not in a panic (support/out.rs).
    out::init("aio_latency");
    let a = parse();
    if let Err(e) = run(&a) {
        errln!("aio_latency: {e}");
        std::process::exit(1);
    }
}

fn run(a: &Args) -> Result<(), String> {
    let size = a.size_mb * 1024 * 1024;
    let path = std::env::temp_dir().join(format!("posixrt-aio-latency-{}", std::process::id()));
    // Unlinked right after it is created, before the (long) writes: a run that is
    // interrupted (SIGINT, SIGTERM, a full disk) leaves no file behind.
    let f = {
        let w = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| test_file(&path, &e))?;
        std::fs::remove_file(&path).map_err(|e| test_file(&path, &e))?;
        let chunk: Vec<u8> = (0..1 << 20).map(|i| (i * 31 % 253) as u8).collect();
        let mut out = &w;
        for _ in 0..a.size_mb {
            out.write_all(&chunk).map_err(|e| test_file(&path, &e))?;
        }
        // Written back now, not by the kernel's flusher in the middle of the
        // rounds.
        w.sync_data().map_err(|e| test_file(&path, &e))?;
        w
    };
    // Warm the page cache.
    {
        use std::io::Read;
        let mut r = &f;
        let mut b = vec![0u8; 1 << 20];
        while r.read(&mut b).map_err(err)? > 0 {}
    }
    let on = |n: &str| {
        a.only
            .as_deref()
            .map_or(true, |o| o.split(',').any(|e| e == n))
    };
    // Only the contexts of the engines asked for: `--only glibc,pread` needs
    // no io_uring, and runs where it is refused.
    let build = |b: Backend| Aio::builder().backend(b).build().map_err(err);
    let uring = on("posixrt_uring")
        .then(|| build(Backend::Uring))
        .transpose()?;
    // `posixrt_uring` registers the file with its context, as a program with
    // one busy fd would (`Aio::register_fd`); `posixrt_uring_plain` does not.
    let _registered = uring
        .as_ref()
        .map(|u| u.register_fd(&f).map_err(err))
        .transpose()?;
    let plain = on("posixrt_uring_plain")
        .then(|| build(Backend::Uring))
        .transpose()?;
    let threads = on("posixrt_threads")
        .then(|| build(Backend::Threads))
        .transpose()?;

    let mut q1_engines: Vec<(&'static str, Step<'_>)> = Vec::new();
    let mut q32_engines: Vec<(&'static str, Step<'_>)> = Vec::new();
    if let Some(uring) = &uring {
        q1_engines.push(("posixrt_uring", posixrt_qd1(&f, uring, a.ops, size)?));
        q32_engines.push(("posixrt_uring", posixrt_qd32(&f, uring, a.qd32_ops, size)?));
    }
    if let Some(plain) = &plain {
        q1_engines.push(("posixrt_uring_plain", posixrt_qd1(&f, plain, a.ops, size)?));
        q32_engines.push((
            "posixrt_uring_plain",
            posixrt_qd32(&f, plain, a.qd32_ops, size)?,
        ));
    }
    if let Some(threads) = &threads {
        q1_engines.push(("posixrt_threads", posixrt_qd1(&f, threads, a.ops, size)?));
        q32_engines.push((
            "posixrt_threads",
            posixrt_qd32(&f, threads, a.qd32_ops, size)?,
        ));
    }
    if on("glibc") {
        q1_engines.push(("glibc", glibc_qd1(&f, a.ops, size)?));
        q32_engines.push(("glibc", glibc_qd32(&f, a.qd32_ops, size)?));
    }
    if on("io_uring") {
        q1_engines.push(("io_uring", uring_qd1(&f, a.ops, size)?));
        q32_engines.push(("io_uring", uring_qd32(&f, a.qd32_ops, size)?));
    }
    if on("pread") {
        q1_engines.push(("pread", pread_qd1(&f, a.ops, size)?));
    }
    let q1 = qd1_all(a.ops, &mut q1_engines)?;
    drop(q1_engines);
    let q32 = qd32_all(a.qd32_ops, &mut q32_engines)?;
    drop(q32_engines);

    if a.json {
        let qd1s: Vec<String> = q1
            .iter()
            .map(|(n, q)| {
                format!(
                    "\"{n}\": {{\"p50_ns\": {}, \"p99_ns\": {}, \"p999_ns\": {}, \"ops_per_s\": {:.1}}}",
                    q.p50, q.p99, q.p999, q.ops_per_s
                )
            })
            .collect();
        let qd32s: Vec<String> = q32
            .iter()
            .map(|(n, o)| format!("\"{n}\": {{\"ops_per_s\": {o:.1}}}"))
            .collect();
        outln!(
            "{{\"qd1\": {{{}}}, \"qd32\": {{{}}}}}",
            qd1s.join(", "),
            qd32s.join(", ")
        );
        return Ok(());
    }
    outln!(
        "4 KiB random reads from a cached {} MiB file; QD1: {} ops, QD32: {} ops (batches of 32)",
        a.size_mb,
        a.ops,
        a.qd32_ops
    );
    if let Some(u) = uring.as_ref().or(plain.as_ref()) {
        outln!("posixrt uring backend: {}", u.backend());
    }
    outln!();
    outln!("QD1          engine     p50 ns     p99 ns   p99.9 ns        ops/s");
    for (n, q) in &q1 {
        outln!(
            "{n:>20} {:>10} {:>10} {:>10} {:>12.0}",
            q.p50,
            q.p99,
            q.p999,
            q.ops_per_s
        );
    }
    outln!();
    outln!("QD32         engine        ops/s");
    for (n, o) in &q32 {
        outln!("{n:>20} {o:>12.0}");
    }
    let p = |n: &str| q1.iter().find(|(m, _)| *m == n).map(|(_, q)| q.p50 as f64);
    let t = |n: &str| q32.iter().find(|(m, _)| *m == n).map(|(_, o)| *o);
    outln!();
    outln!(
        "ratios: posixrt_uring/io_uring p50 = {} (goal <= 1.05); posixrt_uring/glibc p50 = {} (goal <= 0.35); QD32 posixrt_uring/io_uring = {} (goal >= 1.0)",
        ratio(p("posixrt_uring"), p("io_uring")),
        ratio(p("posixrt_uring"), p("glibc")),
        ratio(t("posixrt_uring"), t("io_uring"))
    );
    outln!(
        "        unregistered: posixrt_uring_plain/io_uring p50 = {}; QD32 = {}",
        ratio(p("posixrt_uring_plain"), p("io_uring")),
        ratio(t("posixrt_uring_plain"), t("io_uring"))
    );
    Ok(())
}
