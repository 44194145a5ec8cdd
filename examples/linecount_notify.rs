//! Listing 7.8: count the lines of the files named on the command line (or of
//! standard input, when there are none or for `-`), with `SIGEV_THREAD`
//! notification: each completed read runs a callback on the notification thread,
//! which takes the result with `aio_return`, counts the newlines and submits the
//! next read. The main thread waits on a condition variable until every file is
//! closed, then prints the total (equal to `cat FILES | wc -l`).
//!
//! ```text
//! cargo run --release --example linecount_notify -- FILE... [-]
//! ```

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use posixrt::aio::{Aio, Notify, Op, Request, SigVal};

const BUF: usize = 128 * 1024;

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

struct Slot {
    name: String,
    src: Src,
    offset: i64,
    req: Option<Request<Vec<u8>>>,
}

struct Shared {
    aio: Aio,
    /// One lock per file: a callback holds only its own file's, so the
    /// callbacks of different files (the newline count of one, the read of
    /// another) run at the same time.
    slots: Vec<Mutex<Option<Slot>>>,
    lines: AtomicU64,
    failed: AtomicBool,
    /// Files still open.
    open: Mutex<usize>,
    /// Signalled whenever a file is closed (`open_files_cond`).
    closed: Condvar,
}

/// A read buffer whose pages are already touched. A fresh `vec![0; BUF]` is
/// mapped lazily, so io_uring's inline copy into it faults page by page and the
/// kernel finishes the read on one of its worker threads (a thread to start or
/// wake, for each file's first read).
fn touched_buf() -> Vec<u8> {
    vec![1u8; BUF]
}

/// The request's sigevent: call `end_of_aio_op(i)` on the notification thread.
fn notify(shared: &Arc<Shared>, i: usize) -> Notify {
    let s = Arc::clone(shared);
    Notify::thread(i, move |v| end_of_aio_op(&s, v))
}

/// Closes file `no` (its slot is emptied) and tells the main thread.
fn close(shared: &Shared, slot: &mut Option<Slot>) {
    *slot = None;
    let mut open = shared.open.lock().unwrap();
    *open -= 1;
    shared.closed.notify_all();
}

/// `end_of_aio_op`: the callback run when read number `v` completes.
fn end_of_aio_op(shared: &Arc<Shared>, v: SigVal) {
    let no = v.0;
    // The submitter stores the handle before releasing the file's lock, so it
    // is there.
    let mut g = shared.slots[no].lock().unwrap();
    let Some(mut req) = g.as_mut().and_then(|s| s.req.take()) else {
        return;
    };
    let done = match req.aio_return() {
        Ok(d) => d,
        Err(e) => {
            errln!("linecount_notify: aio_return: {e}");
            return;
        }
    };
    let buf = done.buf.unwrap_or_default();
    match done.result {
        Ok(n) if n > 0 => {
            let lines = count_newlines(&buf[..n]) as u64;
            shared.lines.fetch_add(lines, Ordering::Relaxed);
            let slot = g.as_mut().expect("slot of a request in flight");
            slot.offset += n as i64;
            let op = Op::read(slot.src.fd(), slot.offset, buf).notify(notify(shared, no));
            match shared.aio.submit(op) {
                Ok(r) => slot.req = Some(r),
                Err(e) => {
                    errln!("linecount_notify: {}: {e}", slot.name);
                    shared.failed.store(true, Ordering::Relaxed);
                    close(shared, &mut g);
                }
            }
        }
        other => {
            if let Err(e) = other {
                let name = g.as_ref().map(|s| s.name.clone()).unwrap_or_default();
                errln!("linecount_notify: {name}: {}", reason(&e));
                shared.failed.store(true, Ordering::Relaxed);
            }
            // End of file: close it and tell the main thread.
            close(shared, &mut g);
        }
    }
}

fn main() {
    // A closed pipe (`linecount_notify | head`) or a full disk on standard output ends
    // the example cleanly, not in a panic (support/out.rs).
    out::init("linecount_notify");
    // File names are bytes, as in the listing's argv: they need not be UTF-8.
    let mut args = args::Args::files(HELP);
    // It takes no options: anything that looks like one before `--` is a mistake,
    // not a file name (`-` alone is standard input; `-- -x` counts a file `-x`).
    let files_from = args.iter().position(|a| a == "--");
    if let Some(bad) = args[..files_from.unwrap_or(args.len())]
        .iter()
        .find(|a| a.len() > 1 && a.as_bytes().starts_with(b"-"))
    {
        args::usage_error(
            "linecount_notify",
            format!(
                "unknown option {bad:?} (a file of that name: linecount_notify -- {})",
                bad.to_string_lossy()
            ),
        );
    }
    if let Some(i) = files_from {
        args.remove(i);
    }
    match run(args) {
        // As `cat FILE... | wc -l`: the lines of what could be read; a file that
        // could not be read was reported on stderr and makes the exit status 1.
        Ok((n, ok)) => {
            outln!("{n}");
            if !ok {
                std::process::exit(1);
            }
        }
        Err(e) => {
            errln!("linecount_notify: {e}");
            std::process::exit(1);
        }
    }
}

const HELP: &str = "usage: linecount_notify [--] [FILE...]  (no FILE, or `-`: standard input)
prints the total number of lines, like `cat FILE... | wc -l`: a file that cannot be
read (missing, a directory) is reported on stderr and the others are still counted;
the exit status is then 1.";

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

fn run(args: Vec<OsString>) -> posixrt::Result<(u64, bool)> {
    let names = if args.is_empty() {
        vec!["-".into()]
    } else {
        args
    };
    // As in the listing, each file is opened and its first read submitted in one
    // loop: the AIO context and its notification thread (they need descriptors)
    // exist before the later files are opened, so when descriptors run out, the
    // files that could not be opened are reported and the others counted.
    let shared = Arc::new(Shared {
        aio: Aio::new()?,
        open: Mutex::new(0),
        slots: names.iter().map(|_| Mutex::new(None)).collect(),
        lines: AtomicU64::new(0),
        failed: AtomicBool::new(false),
        closed: Condvar::new(),
    });
    let mut stdin_used = false;
    for (i, path) in names.into_iter().enumerate() {
        // For messages; the file is opened by its bytes.
        let name = path.to_string_lossy().into_owned();
        let src = if name == "-" {
            if !stdin_used {
                stdin_used = true;
                Src::Stdin(io::stdin())
            } else {
                match rustix::io::fcntl_dupfd_cloexec(io::stdin(), 0) {
                    Ok(fd) => Src::Owned(fd),
                    Err(e) => {
                        errln!("linecount_notify: -: {e}");
                        shared.failed.store(true, Ordering::Relaxed);
                        continue;
                    }
                }
            }
        } else {
            match File::open(&path) {
                Ok(f) => Src::Owned(f.into()),
                Err(e) => {
                    errln!("linecount_notify: {name}: {}", io_reason(&e));
                    shared.failed.store(true, Ordering::Relaxed);
                    continue;
                }
            }
        };
        if rustix::fs::fstat(src.fd())
            .is_ok_and(|m| rustix::fs::FileType::from_raw_mode(m.st_mode).is_dir())
        {
            errln!("linecount_notify: {name}: Is a directory");
            shared.failed.store(true, Ordering::Relaxed);
            continue;
        }
        // Like `cat`: stdin redirected from a file is read from its current
        // position, and a second `-` finds it at end of file.
        let offset = match (&src, rustix::fs::fstat(src.fd())) {
            (Src::Stdin(s), Ok(m)) if rustix::fs::FileType::from_raw_mode(m.st_mode).is_file() => {
                rustix::fs::seek(s, rustix::fs::SeekFrom::Current(0)).map_or(0, |p| p as i64)
            }
            (Src::Owned(_), Ok(m))
                if name == "-" && rustix::fs::FileType::from_raw_mode(m.st_mode).is_file() =>
            {
                m.st_size
            }
            _ => 0,
        };
        let mut g = shared.slots[i].lock().unwrap();
        let slot = g.insert(Slot {
            name,
            src,
            offset,
            req: None,
        });
        *shared.open.lock().unwrap() += 1;
        let op = Op::read(slot.src.fd(), slot.offset, touched_buf()).notify(notify(&shared, i));
        // The file's lock is held: a callback for this request waits until the
        // handle is stored.
        slot.req = Some(shared.aio.submit(op)?);
    }
    // Wait until every file is closed.
    let mut open = shared.open.lock().unwrap();
    while *open > 0 {
        open = shared.closed.wait(open).unwrap();
    }
    drop(open);
    Ok((
        shared.lines.load(Ordering::Relaxed),
        !shared.failed.load(Ordering::Relaxed),
    ))
}
