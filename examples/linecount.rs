//! Listing 7.7: count the lines of the files named on the command line (or of
//! standard input, when there are none or for `-`) with asynchronous reads.
//!
//! Like the listing it starts every read with one `lio_listio(LIO_NOWAIT)`, then
//! loops on `aio_suspend`, asks `aio_error` which requests are done, takes them
//! with `aio_return`, counts their newlines and re-issues the reads (with one
//! `lio_listio` per round). Unlike the listing (one `BUFSIZ` read per file) it
//! keeps two 64 KiB reads in flight per regular file and counts newlines with
//! AVX2, and by default it splits the files over one thread per CPU, each running
//! that loop with its own AIO context (`-j 1` runs the listing's single loop). The
//! total equals `cat FILES | wc -l`: a file that cannot be read is reported on
//! standard error, the others are still counted, and the exit status is then 1.
//!
//! ```text
//! cargo run --release --example linecount -- [-j N] [--] FILE... [-]
//! ```

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use posixrt::aio::{Aio, ListMode, Notify, Op, Request};
use posixrt::ErrorKind;

/// Bytes per read.
const BUF: usize = 64 * 1024;
/// Reads in flight per regular file.
const AHEAD: usize = 2;

#[macro_use]
#[path = "support/out.rs"]
mod out;
#[path = "support/args.rs"]
mod args;
#[path = "support/newlines.rs"]
mod newlines;
use newlines::count_newlines;

enum Src {
    Owned(OwnedFd),
    Stdin(io::Stdin),
}

impl Src {
    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Src::Owned(f) => f.as_fd(),
            Src::Stdin(s) => s.as_fd(),
        }
    }
}

struct Input {
    name: String,
    src: std::sync::Arc<Src>,
    /// Pipe, terminal, socket: one read at a time, offsets ignored.
    stream: bool,
    /// Size of a regular file when opened (a hint: reads go on until one returns 0).
    size: i64,
    next: i64,
    inflight: usize,
    eof: bool,
}

struct Pending {
    file: usize,
    offset: i64,
    req: Request<Vec<u8>>,
}

fn open_inputs(args: &[OsString]) -> (Vec<Input>, bool) {
    let mut failed = false;
    let mut inputs = Vec::new();
    let mut stdin_used = false;
    let names: Vec<OsString> = if args.is_empty() {
        vec!["-".into()]
    } else {
        args.to_vec()
    };
    for path in names {
        // For messages; the file is opened by its bytes.
        let name = path.to_string_lossy().into_owned();
        let src = if name == "-" {
            if !stdin_used {
                stdin_used = true;
                Src::Stdin(io::stdin())
            } else {
                // A second `-`: a duplicate of stdin (F_DUPFD in the listing).
                match rustix::io::fcntl_dupfd_cloexec(io::stdin(), 0) {
                    Ok(fd) => Src::Owned(fd),
                    Err(e) => {
                        errln!("linecount: -: {e}");
                        failed = true;
                        continue;
                    }
                }
            }
        } else {
            match File::open(&path) {
                Ok(f) => Src::Owned(f.into()),
                Err(e) => {
                    errln!("linecount: {name}: {}", io_reason(&e));
                    failed = true;
                    continue;
                }
            }
        };
        let (stream, size) = match rustix::fs::fstat(src.fd()) {
            Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_file() => {
                (false, st.st_size)
            }
            Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_dir() => {
                errln!("linecount: {name}: Is a directory");
                failed = true;
                continue;
            }
            _ => (true, 0),
        };
        // Like `cat`: stdin redirected from a file is read from its current
        // position, and a second `-` finds it at end of file (the first one read it
        // all), so `linecount - - < f` counts f once, as `cat - - < f | wc -l` does.
        let next = match (&src, stream) {
            (Src::Stdin(s), false) => {
                rustix::fs::seek(s, rustix::fs::SeekFrom::Current(0)).map_or(0, |p| p as i64)
            }
            (Src::Owned(_), false) if name == "-" => size,
            _ => 0,
        };
        inputs.push(Input {
            name,
            src: std::sync::Arc::new(src),
            stream,
            size,
            next,
            inflight: 0,
            eof: false,
        });
    }
    (inputs, failed)
}

/// The next read to issue for `f`, if any: (offset, length).
fn next_read(f: &mut Input) -> Option<i64> {
    if f.eof {
        return None;
    }
    if f.stream {
        if f.inflight > 0 {
            return None;
        }
    } else if f.next >= f.size {
        // Past the size seen at open: one probe read at a time until it returns 0.
        if f.inflight > 0 {
            return None;
        }
    } else if f.inflight >= AHEAD {
        return None;
    }
    let off = f.next;
    f.next += BUF as i64;
    f.inflight += 1;
    Some(off)
}

fn main() {
    // A closed pipe (`linecount | head`) or a full disk on standard output ends
    // the example cleanly, not in a panic (support/out.rs).
    out::init("linecount");
    // File names are bytes, as in the listing's argv: they need not be UTF-8.
    let mut args = args::Args::files(HELP);
    // Options come first; `--` ends them (so a file may be called `-j`).
    let mut files_from = args.iter().position(|a| a == "--");
    // -j N: split the files over N threads, each running the listing's loop with
    // its own AIO context (default: one per CPU; -j 1 is the listing exactly).
    // Given twice, the last one counts, as a repeated option of every example.
    let mut jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    while let Some(i) = args[..files_from.unwrap_or(args.len())]
        .iter()
        .position(|a| a == "-j")
    {
        match args
            .get(i + 1)
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<usize>().ok())
        {
            Some(n) if (1..=64).contains(&n) => jobs = n,
            _ => args::usage_error("linecount", "-j needs a number from 1 to 64"),
        }
        args.drain(i..i + 2);
        files_from = files_from.map(|f| f - 2);
    }
    // Anything else that looks like an option before `--` is a mistake, not a file
    // name (`-` alone is standard input; `-- -x` counts a file called `-x`).
    let files_from = args.iter().position(|a| a == "--");
    if let Some(bad) = args[..files_from.unwrap_or(args.len())]
        .iter()
        .find(|a| a.len() > 1 && a.as_bytes().starts_with(b"-"))
    {
        args::usage_error(
            "linecount",
            format!(
                "unknown option {bad:?} (a file of that name: linecount -- {})",
                bad.to_string_lossy()
            ),
        );
    }
    if let Some(i) = files_from {
        args.remove(i);
    }
    match run(&args, jobs) {
        // As `cat FILE... | wc -l`: the lines of what could be read; a file that
        // could not be read was reported on stderr and makes the exit status 1.
        Ok((n, ok)) => {
            outln!("{n}");
            let _ = io::stdout().flush();
            if !ok {
                std::process::exit(1);
            }
        }
        Err(e) => {
            errln!("linecount: {e}");
            std::process::exit(1);
        }
    }
}

const HELP: &str = "usage: linecount [-j N] [--] [FILE...]  (no FILE, or `-`: standard input)
prints the total number of lines, like `cat FILE... | wc -l`: a file that cannot be
read (missing, a directory) is reported on stderr and the others are still counted;
the exit status is then 1.
  -j N  split the files over N threads (1 to 64; default: one per CPU)";

/// An error as `cat` says it: the system's text for its errno, else the whole error.
fn reason(e: &posixrt::Error) -> String {
    match e.errno() {
        Some(n) => io_reason(&io::Error::from_raw_os_error(n)),
        None => e.to_string(),
    }
}

/// An I/O error's text without Rust's " (os error N)".
fn io_reason(e: &io::Error) -> String {
    let t = e.to_string();
    t.split(" (os error").next().unwrap_or(&t).to_string()
}

fn run(args: &[OsString], jobs: usize) -> posixrt::Result<(u64, bool)> {
    // The AIO contexts (their rings need descriptors) come before the files: when
    // descriptors run out, the files that could not be opened are reported and
    // the others counted, as in the listing, instead of no context at all.
    // No more contexts than files (each context is one counting thread's).
    let jobs = jobs.min(args.len()).max(1);
    let mut contexts = (0..jobs)
        .map(|_| Aio::new())
        .collect::<posixrt::Result<Vec<Aio>>>()?;
    let (inputs, failed) = open_inputs(args);
    if jobs <= 1 || inputs.len() < 2 {
        let aio = contexts.pop().expect("jobs >= 1");
        let (n, ok) = count(aio, inputs)?;
        return Ok((n, ok && !failed));
    }
    // Deal the files out by size, largest first, to the least loaded thread.
    let mut inputs = inputs;
    inputs.sort_by_key(|f| std::cmp::Reverse(f.size));
    let mut groups: Vec<(i64, Vec<Input>)> = (0..jobs).map(|_| (0, Vec::new())).collect();
    for f in inputs {
        let g = groups.iter_mut().min_by_key(|g| g.0).expect("jobs >= 1");
        g.0 += f.size.max(1);
        g.1.push(f);
    }
    let handles: Vec<_> = groups
        .into_iter()
        .zip(contexts)
        .map(|((_, g), aio)| std::thread::spawn(move || count(aio, g)))
        .collect();
    let (mut total, mut ok) = (0, !failed);
    for h in handles {
        let (n, o) = h.join().expect("counting thread")?;
        total += n;
        ok &= o;
    }
    Ok((total, ok))
}

/// Listing 7.7's loop over `inputs`, with its own AIO context.
fn count(aio: Aio, mut inputs: Vec<Input>) -> posixrt::Result<(u64, bool)> {
    // The descriptors, borrowed by the requests while `inputs` changes.
    let srcs: Vec<std::sync::Arc<Src>> = inputs
        .iter()
        .map(|f| std::sync::Arc::clone(&f.src))
        .collect();
    let mut ok = true;
    let mut spare: Vec<Vec<u8>> = Vec::new();
    let take_buf = |spare: &mut Vec<Vec<u8>>| spare.pop().unwrap_or_else(|| vec![0u8; BUF]);

    // Starts every file's first reads with one lio_listio(LIO_NOWAIT).
    let mut first = Vec::new();
    let mut meta = Vec::new();
    for (i, f) in inputs.iter_mut().enumerate() {
        while let Some(off) = next_read(f) {
            first.push(Some(Op::read(srcs[i].fd(), off, take_buf(&mut spare))));
            meta.push((i, off));
        }
    }
    let list = aio.lio_listio(ListMode::NoWait, first, Notify::None)?;
    let mut pending: Vec<Option<Pending>> = list
        .into_requests()
        .into_iter()
        .zip(meta)
        .map(|(r, (file, offset))| r.map(|req| Pending { file, offset, req }))
        .collect();

    let mut lines = 0u64;
    let mut again = Vec::new();
    let mut again_at = Vec::new();
    while pending.iter().any(Option::is_some) {
        aio.suspend(pending.iter().map(|p| p.as_ref().map(|p| &p.req)), None)?;
        for (i, slot) in pending.iter_mut().enumerate() {
            let Some(p) = slot else { continue };
            match p.req.error() {
                Err(e) if e.kind() == ErrorKind::InProgress => continue,
                _ => {}
            }
            let done = p.req.aio_return()?;
            let buf = done.buf.unwrap_or_default();
            let f = &mut inputs[p.file];
            f.inflight -= 1;
            match done.result {
                Ok(0) => f.eof = true,
                Ok(n) => {
                    lines += count_newlines(&buf[..n]) as u64;
                    if !f.stream && n < buf.len() {
                        // Short read: fetch the rest of this block next.
                        let off = p.offset + n as i64;
                        f.inflight += 1;
                        again.push(Op::read(srcs[p.file].fd(), off, buf));
                        again_at.push((i, p.file, off));
                        *slot = None;
                        continue;
                    }
                    if f.stream {
                        f.next = p.offset + n as i64;
                    }
                }
                Err(e) => {
                    errln!("linecount: {}: {}", f.name, reason(&e));
                    ok = false;
                    f.eof = true;
                }
            }
            match next_read(f) {
                Some(off) => {
                    again.push(Op::read(srcs[p.file].fd(), off, buf));
                    again_at.push((i, p.file, off));
                }
                None => spare.push(buf),
            }
            *slot = None;
        }
        // Re-issue every finished file's next read with one lio_listio.
        if !again.is_empty() {
            let list = aio.lio_listio(ListMode::NoWait, again.drain(..).map(Some), Notify::None)?;
            for (r, (i, file, offset)) in list.into_requests().into_iter().zip(again_at.drain(..)) {
                pending[i] = r.map(|req| Pending { file, offset, req });
            }
        }
    }
    drop(inputs);
    Ok((lines, ok))
}
