//! posixrt AIO under tokio: every request and every `lio_listio` list is a
//! `Future`, so it can be `.await`ed (the futures work on any executor; tokio is
//! only what this example uses).
//!
//! It writes a file with one `lio_listio`, then checksums it with 64 concurrent
//! tasks, each awaiting its own 64 KiB read, then four reads joined in one task,
//! and prints the backend in use.
//!
//! The fast path:
//! - `aio.read_async(handle, offset, buf).await` submits when first polled; the
//!   reads that tasks submit in one runtime turn enter the kernel together, with
//!   one `io_uring_enter` at the end of the turn. It takes an owned handle to the
//!   fd (here an `Arc<File>`), kept until the request is in the kernel, or
//!   borrows the fd's `RegisteredFd` (`aio.register_fd(&file)?`), the cheapest
//!   form: no reference count per read, and the kernel looks the file up in the
//!   ring's table. The same holds for several futures in flight in one task
//!   (`tokio::join!`, `join_all`, `buffer_unordered`).
//!   (`aio.read(&file, ..)?.await` also works: it enters the ring at once, one
//!   system call per read, so tasks looping on it do not batch.)
//! - a future's poll reaps the completion queue itself: a read done inline needs
//!   no wake-up; a read that waited for the turn's end is completed by that
//!   turn's reap, which hands its result straight to the future and wakes its
//!   task, whose next poll takes the result without a lock;
//! - under the `tokio` feature the ring's eventfd is watched by tokio's own
//!   reactor, also for the futures awaited here in `block_on`'s body (the
//!   `main` of `#[tokio::main]`), so no completion thread exists (the example
//!   counts them at the end, and fails if one started).
//!
//! ```text
//! cargo run --release --features tokio --example aio_tokio
//! ```

use std::sync::Arc;

use posixrt::aio::{Aio, ListMode, Notify, Op};

#[macro_use]
#[path = "support/out.rs"]
mod out;
#[path = "support/args.rs"]
mod args;

const CHUNK: usize = 64 * 1024;
const CHUNKS: usize = 64;

fn main() {
    // A closed pipe (`aio_tokio | head`) or a full disk on standard output ends
    // the example cleanly, not in a panic (support/out.rs).
    out::init("aio_tokio");
    args::Args::new(
        "aio_tokio",
        "usage: aio_tokio\n\nWrites a 4 MiB memory file with one lio_listio, then checksums it with 64 tokio tasks,\neach awaiting its own 64 KiB read, then 4 reads joined in one task, and prints the AIO\nbackend in use.",
    )
    .none();
    // A failure in plain words, one line, exit 1 (not the Debug form a `main`
    // that returns the error prints).
    let done = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {}", out::os_error(&e)).into())
        .and_then(|rt| rt.block_on(run()));
    if let Err(e) = done {
        errln!("aio_tokio: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let aio = Aio::new()?;
    outln!("backend: {}", aio.backend());
    let file = Arc::new(std::fs::File::from(rustix::fs::memfd_create(
        "aio_tokio",
        rustix::fs::MemfdFlags::CLOEXEC,
    )?));

    // One list of writes, awaited as a whole.
    let writes = (0..CHUNKS).map(|i| {
        let data: Vec<u8> = (0..CHUNK).map(|j| ((i * 31 + j) % 251) as u8).collect();
        Some(Op::write(&*file, (i * CHUNK) as i64, data))
    });
    let written = aio
        .lio_listio(ListMode::NoWait, writes, Notify::None)?
        .await?;
    let total: usize = written
        .iter()
        .flatten()
        .map(|c| c.result.as_ref().map_or(0, |n| *n))
        .sum();
    outln!("wrote {total} bytes with one lio_listio");

    // Many tasks, each awaiting its own read.
    let mut tasks = Vec::new();
    for i in 0..CHUNKS {
        let aio = aio.clone();
        let file = Arc::clone(&file);
        tasks.push(tokio::spawn(async move {
            let done = aio
                .read_async(file, (i * CHUNK) as i64, vec![0u8; CHUNK])
                .await?;
            let sum: u64 = done.data().iter().map(|&b| b as u64).sum();
            Ok::<_, posixrt::Error>(sum)
        }));
    }
    let mut sum = 0u64;
    for t in tasks {
        sum += t.await??;
    }
    let want: u64 = (0..CHUNKS)
        .flat_map(|i| (0..CHUNK).map(move |j| ((i * 31 + j) % 251) as u64))
        .sum();
    outln!("checksum of {CHUNKS} concurrent reads: {sum} (expected {want})");
    if sum != want {
        return Err("checksum mismatch".into());
    }
    // One task, four reads in flight (`tokio::join!`, as `join_all` or
    // `buffer_unordered` keep several): they enter the kernel together too.
    // They borrow the file's registration with the context.
    let reg = aio.register_fd(&*file)?;
    let read = |i: usize| aio.read_async(&reg, (i * CHUNK) as i64, vec![0u8; CHUNK]);
    let (a, b, c, d) = tokio::join!(read(0), read(1), read(2), read(3));
    let mut sum4 = 0u64;
    for done in [a?, b?, c?, d?] {
        sum4 += done.data().iter().map(|&b| b as u64).sum::<u64>();
    }
    let want4: u64 = (0..4)
        .flat_map(|i| (0..CHUNK).map(move |j| ((i * 31 + j) % 251) as u64))
        .sum();
    outln!("checksum of 4 reads joined in one task: {sum4} (expected {want4})");
    if sum4 != want4 {
        return Err("checksum mismatch".into());
    }
    // The io_uring completion thread is named posixrt-aio-complete (15 bytes shown).
    let helpers = std::fs::read_dir("/proc/self/task")?
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .filter(|c| c.starts_with("posixrt-aio-com"))
        .count();
    outln!("AIO completion threads: {helpers} (futures are woken by tokio's reactor)");
    if helpers != 0 {
        return Err(
            "a completion thread started: futures were not woken by tokio's reactor".into(),
        );
    }
    Ok(())
}
