//! A long sequential write that keeps the page cache in check: the pattern of
//! `sync_file_range` (see `posixrt::advise::SyncRangeFlags`).
//!
//! ```text
//! streaming_write [--mib N] [--chunk-kib K] [--out FILE]
//! ```
//!
//! Reserves the space first (`posix_fallocate`, with glibc's zero-filling where
//! the filesystem has no `fallocate`), then writes N MiB (default 64) in chunks
//! of K KiB (default 1024). After each chunk it starts that chunk's write-back
//! (`SYNC_FILE_RANGE_WRITE`, which does not wait), waits for the chunk before
//! it (`WAIT_BEFORE | WRITE | WAIT_AFTER`) and drops that one from the page
//! cache (`POSIX_FADV_DONTNEED`): at most two chunks are ever dirty, where a
//! plain writer leaves the whole file dirty for the kernel's flusher and then
//! pays for all of it at once. `sync_file_range` makes nothing durable (no
//! metadata, no disk cache flush): a final `fdatasync` does that.
//!
//! Chunk `i` is filled with the byte `i % 251 + 1`. Without `--out` the file is
//! created in the temp dir (`$TMPDIR` or `/tmp`) and removed at once.
//! Exit status 0, 1 with one line on standard error if a call fails, 2 for a
//! usage error.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::process::ExitCode;

use posixrt::advise::{
    fadvise, fallocate_or_fill, fdatasync, sync_file_range, Advice, Allocation, SyncRangeFlags,
};

#[macro_use]
#[path = "support/out.rs"]
mod out;
#[path = "support/args.rs"]
mod args;

const HELP: &str = "\
Usage: streaming_write [--mib N] [--chunk-kib K] [--out FILE]

Writes N MiB (1..=4096, default 64) in chunks of K KiB (4..=65536, default 1024),
starting each chunk's write-back with sync_file_range and waiting for the one
before, so that at most two chunks are dirty; fdatasync at the end.
Without --out, the file is an unnamed one in the temp dir.";

fn main() -> ExitCode {
    out::init("streaming_write");
    let mut a = args::Args::new("streaming_write", HELP);
    let (mut mib, mut chunk_kib, mut path) = (64usize, 1024usize, None::<String>);
    while let Some(x) = a.next() {
        match x.as_str() {
            "--mib" => mib = a.value_in("--mib", 1..=4096),
            "--chunk-kib" => chunk_kib = a.value_in("--chunk-kib", 4..=65536),
            "--out" => path = Some(a.value("--out")),
            _ => a.unknown(&x),
        }
    }
    if path.is_none() {
        a.check_temp_space("--mib", mib);
    }
    match run(mib, chunk_kib, path.as_deref()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            errln!("streaming_write: {e}");
            ExitCode::from(1)
        }
    }
}

fn open(path: Option<&str>) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(true).create(true).truncate(true);
    match path {
        Some(p) => o.open(p),
        None => {
            let p = std::env::temp_dir()
                .join(format!("posixrt-streaming-write-{}", std::process::id()));
            let f = o.open(&p)?;
            std::fs::remove_file(&p)?;
            Ok(f)
        }
    }
}

fn run(mib: usize, chunk_kib: usize, path: Option<&str>) -> Result<(), Box<dyn std::error::Error>> {
    let f = open(path).map_err(|e| format!("open: {}", out::os_error(&e)))?;
    let total = (mib << 20) as i64;
    let chunk = chunk_kib << 10;
    match fallocate_or_fill(&f, 0, total)? {
        Allocation::Filesystem => outln!("space: {mib} MiB reserved by the filesystem"),
        Allocation::ZeroFilled { writes } => outln!(
            "space: {mib} MiB reserved by writing zeros ({writes} writes: the filesystem has no fallocate)"
        ),
    }
    let chunks = (mib << 20).div_ceil(chunk);
    let mut buf = vec![0u8; chunk];
    for i in 0..chunks {
        let at = (i * chunk) as i64;
        let len = chunk.min((mib << 20) - i * chunk);
        buf[..len].fill((i % 251) as u8 + 1);
        f.write_all_at(&buf[..len], at as u64)
            .map_err(|e| format!("write at {at}: {}", out::os_error(&e)))?;
        // Start this chunk's write-back; do not wait for it.
        sync_file_range(&f, at, len as i64, SyncRangeFlags::WRITE)?;
        if i > 0 {
            let prev = at - chunk as i64;
            // Wait for the chunk before (written out by now, or nearly), then
            // drop its clean pages from the cache.
            sync_file_range(&f, prev, chunk as i64, SyncRangeFlags::WRITE_AND_WAIT)?;
            fadvise(&f, prev, chunk as i64, Advice::DontNeed)?;
        }
    }
    let last = ((chunks - 1) * chunk) as i64;
    sync_file_range(&f, last, 0, SyncRangeFlags::WRITE_AND_WAIT)?;
    fadvise(&f, last, 0, Advice::DontNeed)?;
    outln!(
        "wrote {mib} MiB in {chunks} chunks of {chunk_kib} KiB, at most two of them dirty at a time"
    );
    // The durability sync_file_range does not give.
    fdatasync(&f)?;
    outln!("fdatasync: the data is on stable storage");
    Ok(())
}
