//! `rtrace`: read posixrt trace logs: dump, statistics, and export to Chrome trace
//! JSON (Perfetto) or CTF 1.8 (babeltrace2, Trace Compass).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, FromRawFd};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

const PROG: &str = "rtrace";
use posixrt::trace::export::{
    field_items, payload, write_chrome_json_scanned, write_ctf_scanned, Scan,
};
use posixrt::trace::{event_name_bytes, Event, EventId, TraceLog};
use posixrt_tools::{os_error, printable, printable_escaped};

/// Read posixrt trace logs: dump, statistics, export for Perfetto or babeltrace2.
///
/// The logs are those written by `Trace::create_with_log`. `dump` prints every
/// event, `stats` counts them, `export` converts them to Chrome trace JSON (for
/// Perfetto) or to CTF (for babeltrace2). LOG may be `-` (standard input) or a pipe: rtrace reads it to the end first. A
/// log cut short (a crash, a copy in progress) or damaged is read up to its last
/// good record; rtrace then says where it stopped and exits with status 4 (cut
/// short) or 3 (corrupt).
#[derive(Parser)]
#[command(
    name = "rtrace",
    version,
    after_help = "Examples:\n  rtrace dump philosophers.trace\n  rtrace stats philosophers.trace\n  rtrace export --format chrome philosophers.trace -o trace.json   # open in ui.perfetto.dev\n  rtrace export --format chrome philosophers.trace -o - | head\n  rtrace export --format ctf philosophers.trace -o ctf/ && babeltrace2 ctf/\n\nExit status:\n  0  ok, also when standard output closed by its reader (rtrace dump LOG | head) ends the output early\n  1  error: the log cannot be read (missing, a directory, no permission) or the output cannot be written\n  2  usage error (bad command line)\n  3  corrupt: not a posixrt trace log, or a record failed its checksum (records before it are shown)\n  4  cut short: the log ends inside a record or before its end record (records before the cut are shown)"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Print every event, in log order: time, pid, tid, name, and the payload
    /// (system events by field, user data as an integer, text or hex).
    ///
    /// A system event's payload is `name=value` per field, separated by
    /// spaces, then the bytes past its fields (the marker of `mark_set`), if
    /// any, as `text="..."`: UTF-8 characters as in a Rust string literal
    /// (`\"`, `\\`, `\n`, `\0`, other control characters as `\u{1b}`) and
    /// each byte that is not UTF-8 as `\xHH`, so the text reads back byte for
    /// byte whatever it holds (spaces, `=`, quotes). A key that would repeat
    /// one before it (a field named `text`) gets `_` appended (`text_="..."`).
    /// User data of 4 or 8 bytes is a little-endian integer, other data a
    /// quoted string when it is printable UTF-8, else hex. An event name shows
    /// control characters escaped and a backslash doubled, and a name the C
    /// API opened from bytes that are not UTF-8 shows `\xHH` for each such byte.
    /// The first line names the stream, its name quoted as such text is.
    ///
    /// The log order is time order within each flush; across flushes an event
    /// can come a little late (the exports sort by time). Times are since the
    /// oldest event.
    Dump {
        /// The log file.
        log: PathBuf,
        /// Print absolute CLOCK_MONOTONIC times instead of times since the oldest event.
        #[arg(long)]
        absolute: bool,
    },
    /// Counts per event type, time span, events lost and overrun flags.
    Stats {
        /// The log file.
        log: PathBuf,
    },
    /// Convert the log for a viewer.
    Export {
        /// `chrome`: trace-event JSON for Perfetto UI / chrome://tracing (one file,
        /// times since the oldest event); `ctf`: a CTF 1.8 directory (metadata +
        /// stream) for babeltrace2, with wall-clock times (logs of older posixrt
        /// versions: times since boot) and the lost events, which babeltrace2
        /// reports as discarded.
        #[arg(long, value_enum)]
        format: Format,
        /// The log file.
        log: PathBuf,
        /// Output: a .json file for chrome (`-`: standard output; its directory must
        /// exist), a directory for ctf (made, with any missing parents; one that
        /// holds other files than an earlier export's is refused).
        #[arg(short, long)]
        output: PathBuf,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// Chrome trace-event JSON (instant events, process and thread names).
    Chrome,
    /// Common Trace Format 1.8.
    Ctf,
}

/// Exit status 1: the log cannot be read, or the output cannot be written.
const EXIT_ERROR: u8 = 1;
/// Exit status 3: not a posixrt trace log, or a record failed its checksum.
const EXIT_CORRUPT: u8 = 3;
/// Exit status 4: the log ends inside a record or before its end record.
const EXIT_CUT: u8 = 4;

/// A failure: the message for standard error and the exit status.
struct Failure {
    msg: String,
    code: u8,
}

impl Failure {
    fn error(msg: String) -> Failure {
        Failure {
            msg,
            code: EXIT_ERROR,
        }
    }

    /// Standard output closed by its reader: stop, say nothing, exit 0.
    fn reader_gone() -> Failure {
        Failure {
            msg: String::new(),
            code: 0,
        }
    }
}

/// The exit status for a reader error.
fn code_of(e: &posixrt::Error) -> u8 {
    match e.kind() {
        posixrt::ErrorKind::Truncated => EXIT_CUT,
        posixrt::ErrorKind::Corrupt => EXIT_CORRUPT,
        _ => EXIT_ERROR,
    }
}

/// A reader error naming the log once (the library names it already when `open`
/// itself failed: its message is the path, or begins with it).
fn log_failure(path: &Path, e: &posixrt::Error) -> Failure {
    // A log is often another user's (a service's, root's): say what to do.
    let text = match e.kind() {
        posixrt::ErrorKind::PermissionDenied if e.hint().is_none() => e
            .clone()
            .with_hint(
                "this user may not read the log: run rtrace as its owner or as root, or \
                 give this user read permission on it",
            )
            .to_string(),
        _ => e.to_string(),
    };
    let shown = path.display().to_string();
    // By the message, not by the text: a log named `trace` or `log` is a word
    // of the text ("posix_trace_open", "log header cut"), not named by it. The
    // library names it in a failed `open` (the path) and for a directory.
    let named = e.message().is_some_and(|m| {
        m == shown || (e.errno() == Some(libc::EISDIR) && m.starts_with(&format!("{shown} ")))
    });
    Failure {
        msg: if named {
            text
        } else {
            format!("{shown}: {text}")
        },
        code: code_of(e),
    }
}

/// Opens a log. A pipe, a terminal or `-` (standard input) cannot be read twice, as
/// the reader needs: its bytes are copied into an anonymous memory file first.
fn open_log(path: &Path) -> Result<TraceLog, Failure> {
    let unseekable = |f: &File| {
        f.metadata().is_ok_and(|m| {
            let t = m.file_type();
            t.is_fifo() || t.is_socket() || t.is_char_device()
        })
    };
    let input = if path.as_os_str() == "-" {
        Some(File::from(
            io::stdin()
                .as_fd()
                .try_clone_to_owned()
                .map_err(|e| Failure::error(format!("standard input: {}", os_error(&e))))?,
        ))
    } else {
        match File::open(path) {
            Ok(f) if unseekable(&f) => Some(f),
            _ => None,
        }
    };
    let Some(mut input) = input else {
        return TraceLog::open(path).map_err(|e| log_failure(path, &e));
    };
    let mut copy =
        memory_file().map_err(|e| Failure::error(format!("memfd_create: {}", os_error(&e))))?;
    let read_error =
        |e: io::Error| Failure::error(format!("{}: {}", shown_path(path), os_error(&e)));
    // The magic first: a stream that is no log and does not end (`yes |`,
    // /dev/urandom, /dev/zero) would otherwise be copied into memory forever.
    // Its first bytes are enough for the reader to say what it is not.
    let magic = posixrt::trace::LOG_MAGIC;
    let mut head = Vec::with_capacity(magic.len());
    (&mut input)
        .take(magic.len() as u64)
        .read_to_end(&mut head)
        .map_err(read_error)?;
    copy.write_all(&head).map_err(read_error)?;
    if head[..] == magic[..] {
        io::copy(&mut input, &mut copy).map_err(read_error)?;
    }
    TraceLog::from_file(copy).map_err(|e| log_failure(path, &e))
}

/// An anonymous file in memory (`memfd_create`).
fn memory_file() -> io::Result<File> {
    // SAFETY: the name is a NUL-terminated string; the returned descriptor, when
    // valid, is new and owned by nobody else.
    let fd = unsafe { libc::memfd_create(c"rtrace-input".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a valid descriptor that this function owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Opens a log for an export and reads it once ([`Scan::read`]): the
/// exports read it again, in time order, never holding it whole.
fn scan(path: &Path) -> Result<(TraceLog, Scan), Failure> {
    let mut log = open_log(path)?;
    let scan = Scan::read(&mut log).map_err(|e| log_failure(path, &e))?;
    Ok((log, scan))
}

/// An event type's name for the terminal: a name is the traced program's choice
/// (only NUL is refused), so control characters in it are shown escaped, as
/// [`printable`] does for tfp and rtstat. A name of bytes that are not UTF-8
/// (the C API's, held as NUL and Latin-1 text) shows as those bytes, each
/// one not part of a UTF-8 character as `\xHH` ([`printable_bytes`]).
fn name_of(log: &TraceLog, id: EventId) -> String {
    log.name(id)
        .map(|n| printable_bytes(&event_name_bytes(n)).into_owned())
        .unwrap_or_else(|| format!("event#{}", id.raw()))
}

/// [`printable`] for bytes that need not be UTF-8 (an event name the C API
/// opened): each byte that is not part of a UTF-8 character shows as `\xHH`
/// (two lowercase hex digits), as a payload's text shows it. The text between
/// is [`printable`]'s, whose backslashes are doubled, so the byte `\xe9`
/// (shown `\xe9`) and the four characters `\xe9` (shown `\\xe9`) differ.
fn printable_bytes(b: &[u8]) -> std::borrow::Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(b) {
        return printable(s);
    }
    let mut o = String::with_capacity(b.len() + 8);
    for chunk in b.utf8_chunks() {
        o.push_str(&printable(chunk.valid()));
        for x in chunk.invalid() {
            o.push_str(&format!("\\x{x:02x}"));
        }
    }
    std::borrow::Cow::Owned(o)
}

/// A stream's name as `dump` and `stats` show it: the bytes the log holds
/// ([`TraceAttr::name_bytes`](posixrt::trace::TraceAttr::name_bytes); POSIX
/// names are byte strings, and the lossy `name()` shows each byte that is not
/// UTF-8 as U+FFFD, so two names would look one), as a quoted Rust string
/// literal: UTF-8 text as `{:?}` shows it (`\"`, `\\`, `\n`, `\u{1b}`), each
/// byte that is not part of a UTF-8 character as `\xHH`, as a payload's text
/// shows it. A byte and the four characters `\xe9` differ (`\xe9`, `\\xe9`).
fn quoted_name(b: &[u8]) -> String {
    let mut o = String::with_capacity(b.len() + 8);
    o.push('"');
    for chunk in b.utf8_chunks() {
        let text = format!("{:?}", chunk.valid());
        o.push_str(&text[1..text.len() - 1]);
        for x in chunk.invalid() {
            o.push_str(&format!("\\x{x:02x}"));
        }
    }
    o.push('"');
    o
}

/// A path for the terminal: its bytes as [`printable_bytes`] shows them (a
/// file name is bytes; `Path::display` would show each byte that is not UTF-8
/// as U+FFFD, a name of another file or of none).
fn shown_path(p: &Path) -> std::borrow::Cow<'_, str> {
    use std::os::unix::ffi::OsStrExt;
    printable_bytes(p.as_os_str().as_bytes())
}

fn fmt_ts(ns: u128) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// The symbolic name of errno `e` (the library's table, as in its error
/// messages), if it has one.
fn errno_name(e: i64) -> Option<&'static str> {
    let name = posixrt::error::errno_name(i32::try_from(e).ok()?);
    (name != "errno").then_some(name)
}

/// A payload for `dump`: [`payload`]'s, with a nonzero `result` of a sync or
/// sched event shown with its errno name (`result=16(EBUSY)`).
fn describe(ty: Option<&posixrt::trace::EventType>, e: &Event) -> String {
    use posixrt::trace::system_events::Value;
    let Some(t) = ty else {
        return payload(ty, e);
    };
    let named = t.name.starts_with("sync_") || t.name.starts_with("sched_");
    let items = field_items(t, &e.data, |n, v| match (named && n == "result", v) {
        (true, Value::I(c)) if *c != 0 => match errno_name(*c) {
            Some(name) => format!("{c}({name})"),
            None => format!("{c}"),
        },
        _ => format!("{v}"),
    });
    items.map_or_else(|| payload(ty, e), |items| items.join(" "))
}

/// Reads the events of `log` to its end, into `f`: `None` at the end of a
/// complete log, else the error that stopped the reading (a cut or a corrupt
/// record: what came before it was read).
fn each_event(log: &mut TraceLog, mut f: impl FnMut(Event)) -> Option<posixrt::Error> {
    loop {
        match log.next_event() {
            Ok(Some(e)) => f(e),
            Ok(None) => return None,
            Err(e) => return Some(e),
        }
    }
}

/// Two passes over the log, holding one event at a time (a log can be far
/// larger than memory): the first counts the events and finds the oldest, the
/// second prints them. (A piped log is read from its copy in memory, which
/// can go back.)
fn dump(path: &Path, absolute: bool) -> Result<Option<posixrt::Error>, Failure> {
    let mut log = open_log(path)?;
    let (mut count, mut oldest) = (0u64, None::<u128>);
    let cut = each_event(&mut log, |e| {
        count += 1;
        let t = e.timestamp.as_nanos();
        oldest = Some(oldest.map_or(t, |o| o.min(t)));
    });
    log.rewind().map_err(|e| log_failure(path, &e))?;
    // The oldest event, wherever it is in the log: events of different threads
    // can interleave across flushes, so the first one need not be the oldest.
    let base = if absolute { 0 } else { oldest.unwrap_or(0) };
    to_stdout(|out| write_dump(out, &mut log, count, base))?;
    Ok(cut)
}

/// Runs `f` on a buffered standard output and flushes it. A write error (a full
/// disk) is a failure, exit 1, not a panic as in `println!`; see
/// [`stdout_failure`] for a closed pipe.
fn to_stdout(f: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<(), Failure> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    f(&mut out)
        .and_then(|()| out.flush())
        .map_err(|e| stdout_failure(&e))
}

/// A failed write to standard output. Closed by its reader (`rtrace dump LOG |
/// head`: EPIPE, SIGPIPE being ignored), it is [`Failure::reader_gone`]: rtrace
/// stops quietly with status 0, as tfp and rtstat do. Otherwise (a full disk)
/// exit 1 with one line.
fn stdout_failure(e: &io::Error) -> Failure {
    if e.kind() == io::ErrorKind::BrokenPipe {
        return Failure::reader_gone();
    }
    Failure::error(format!("standard output: {}", os_error(e)))
}

/// The header and the first `count` events of `log` (those the first pass
/// read), times from `base`.
fn write_dump(out: &mut dyn Write, log: &mut TraceLog, count: u64, base: u128) -> io::Result<()> {
    if let Some(a) = log.attr() {
        writeln!(
            out,
            "# trace {} of pid {}, {} events{}",
            quoted_name(a.name_bytes()),
            log.pid(),
            count,
            if log.is_complete() {
                ""
            } else {
                " (log not closed)"
            }
        )?;
    }
    for _ in 0..count {
        // The second pass ends where the first did: a log still growing has
        // more, and a damaged one fails at the same record.
        let Ok(Some(e)) = log.next_event() else {
            break;
        };
        let e = &e;
        let ty = log.event_type(e.id);
        let p = describe(ty, e);
        // (Its text is quoted already: its backslashes begin escapes.)
        let p = printable_escaped(&p);
        writeln!(
            out,
            "{:>20} pid {:<7} tid {:<7} {}{}{}{}",
            fmt_ts(e.timestamp.as_nanos() - base),
            e.pid,
            e.tid,
            name_of(log, e.id),
            if p.is_empty() { "" } else { " " },
            p,
            if e.truncated { " [truncated]" } else { "" }
        )?;
    }
    Ok(())
}

/// One pass over the log, holding one event at a time (a log can be far larger
/// than memory).
fn stats(path: &Path) -> Result<Option<posixrt::Error>, Failure> {
    let mut log = open_log(path)?;
    let mut s = Summary::default();
    let cut = each_event(&mut log, |e| s.add(&e));
    to_stdout(|out| write_stats(out, path, &log, s))?;
    Ok(cut)
}

/// What `stats` shows of the events, gathered as they are read.
#[derive(Default)]
struct Summary {
    events: u64,
    counts: BTreeMap<u16, u64>,
    overflow_lost: u64,
    truncated: u64,
    oldest: Option<Duration>,
    newest: Option<Duration>,
    /// The pid of each tid, from its first event with a pid.
    pid_of_tid: BTreeMap<u32, u32>,
    /// The threads of the events with a pid (tid 0 is no thread).
    threads: BTreeSet<(u32, u32)>,
    /// The tids of the events without a pid (pid 0).
    tids_without_pid: BTreeSet<u32>,
}

impl Summary {
    fn add(&mut self, e: &Event) {
        self.events += 1;
        *self.counts.entry(e.id.raw()).or_default() += 1;
        if e.id == EventId::OVERFLOW && e.data.len() >= 8 {
            // Saturating: the counts of a damaged log can add up past u64::MAX.
            self.overflow_lost = self
                .overflow_lost
                .saturating_add(u64::from_le_bytes(e.data[..8].try_into().unwrap_or([0; 8])));
        }
        self.truncated += e.truncated as u64;
        self.oldest = Some(self.oldest.map_or(e.timestamp, |o| o.min(e.timestamp)));
        self.newest = Some(self.newest.map_or(e.timestamp, |n| n.max(e.timestamp)));
        match (e.pid, e.tid) {
            (_, 0) => {}
            (0, tid) => {
                self.tids_without_pid.insert(tid);
            }
            (pid, tid) => {
                self.pid_of_tid.entry(tid).or_insert(pid);
                self.threads.insert((pid, tid));
            }
        }
    }
}

fn write_stats(out: &mut dyn Write, path: &Path, log: &TraceLog, s: Summary) -> io::Result<()> {
    let Summary {
        events,
        counts,
        overflow_lost,
        truncated,
        oldest,
        newest,
        ..
    } = &s;
    let (overflow_lost, truncated) = (*overflow_lost, *truncated);
    writeln!(out, "log:        {}", shown_path(path))?;
    if let Some(a) = log.attr() {
        writeln!(
            out,
            "trace:      {} (pid {}, stream {:?}, log {:?})",
            quoted_name(a.name_bytes()),
            log.pid(),
            a.stream_full_policy(),
            a.log_full_policy()
        )?;
    }
    writeln!(out, "events:     {events}")?;
    if let (Some(f), Some(last)) = (*oldest, *newest) {
        writeln!(
            out,
            "time span:  {} .. {} ({:.6} s)",
            fmt_ts(f.as_nanos()),
            fmt_ts(last.as_nanos()),
            (last - f).as_secs_f64()
        )?;
    }
    writeln!(out, "threads:    {}", thread_count(&s, log.pid()))?;
    match log.status() {
        Some(s) => {
            writeln!(
                out,
                "lost:       {} in the stream, {} by the log",
                s.stream_lost, s.log_lost
            )?;
            writeln!(
                out,
                "overrun:    stream {}, log {}; log full: {}",
                yes(s.stream_overrun),
                yes(s.log_overrun),
                yes(s.log_full)
            )?;
        }
        None => writeln!(
            out,
            "lost:       unknown (no status record: the log was not shut down)"
        )?,
    }
    writeln!(
        out,
        "overflow:   {overflow_lost} events reported lost by OVERFLOW events"
    )?;
    writeln!(out, "truncated:  {truncated} events with truncated data")?;
    writeln!(out, "per type:")?;
    let mut rows: Vec<(u16, u64)> = counts.iter().map(|(&id, &n)| (id, n)).collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for (id, n) in rows {
        let eid = EventId::from_raw(id).unwrap_or(EventId::START);
        writeln!(out, "  {n:>10}  {:<5} {}", id, name_of(log, eid))?;
    }
    Ok(())
}

/// The threads that recorded events: a thread is its process and its tid (the
/// same tid in another process, a forked child's or one used again, is
/// another thread). An event without a pid (pid 0: a type not associated with
/// a process) is its tid's in the process the tid's other events give, else
/// in the log's process, as the Chrome export shows it. Tid 0 is no thread:
/// an OVERFLOW for losses of no one sub-buffer.
fn thread_count(s: &Summary, log_pid: u32) -> usize {
    let mut threads = s.threads.clone();
    for &tid in &s.tids_without_pid {
        threads.insert((s.pid_of_tid.get(&tid).copied().unwrap_or(log_pid), tid));
    }
    threads.len()
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn run(cli: Cli) -> Result<Option<posixrt::Error>, Failure> {
    match cli.cmd {
        Cmd::Dump { log, absolute } => dump(&log, absolute),
        Cmd::Stats { log } => stats(&log),
        Cmd::Export {
            format,
            log,
            output,
        } => {
            let to_stdout = output.as_os_str() == "-";
            if to_stdout && matches!(format, Format::Ctf) {
                usage_error("--format ctf writes a directory: -o - (standard output) is for --format chrome only");
            }
            if !to_stdout && same_file(&log, &output) {
                usage_error(&format!(
                    "-o {} is the log itself: the export would overwrite its input",
                    shown_path(&output)
                ));
            }
            let path = log;
            let (mut log, mut scan) = scan(&path)?;
            match format {
                // Written as it goes (buffered), never whole in memory.
                Format::Chrome if to_stdout => {
                    write_chrome_json_scanned(&mut log, &scan, io::stdout().lock())
                        .map_err(|e| stdout_failure(&e))?
                }
                Format::Chrome => File::create(&output)
                    .and_then(|f| write_chrome_json_scanned(&mut log, &scan, f))
                    .map_err(|e| Failure::error(write_error(&output, &e)))?,
                Format::Ctf => write_ctf_scanned(&mut log, &scan, &output)
                    .map_err(|e| ctf_failure(&output, &e))?,
            }
            posixrt_tools::warn(
                PROG,
                format_args!(
                    "wrote {} events to {}",
                    scan.events(),
                    if to_stdout {
                        "standard output".to_string()
                    } else {
                        shown_path(&output).into_owned()
                    }
                ),
            );
            Ok(scan.take_error())
        }
    }
}

/// True if `a` and `b` name one existing file (device and inode).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// A failed CTF export in the user's terms: the directory it was writing and
/// why, with the library's hint, not the call that failed (`mkdir failed`,
/// `export::write_ctf failed`). The errno is left out where the library
/// refused the directory itself (`InvalidInput`: another file in it).
fn ctf_failure(dir: &Path, e: &posixrt::Error) -> Failure {
    let mut msg = format!("cannot write the CTF trace into {}", shown_path(dir));
    let whole = dir.display().to_string();
    match e.message() {
        // The directory, named already.
        Some(m) if m == whole => {}
        // `DIR holds "name", which babeltrace2 would read as a CTF stream`.
        Some(m) => match m.strip_prefix(&whole).and_then(|r| r.strip_prefix(' ')) {
            Some(rest) => msg.push_str(&format!(": it {rest}")),
            None => msg.push_str(&format!(": {m}")),
        },
        None => {}
    }
    if let Some(n) = e
        .errno()
        .filter(|_| e.kind() != posixrt::ErrorKind::InvalidInput)
    {
        msg.push_str(&format!(": {}", os_error(&io::Error::from_raw_os_error(n))));
    }
    if let Some(h) = e.hint() {
        msg.push_str(&format!("; hint: {h}"));
    }
    Failure {
        msg,
        code: code_of(e),
    }
}

/// The failed write of `path`, with the missing directory named, or what to do
/// about a refused permission or a directory given as the file.
fn write_error(path: &Path, e: &io::Error) -> String {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    let shown = shown_path(path);
    let e_text = os_error(e);
    match parent {
        Some(d) if e.kind() == io::ErrorKind::NotFound && !d.is_dir() => format!(
            "{shown}: {e_text} (the directory {} does not exist: create it first)",
            shown_path(d)
        ),
        _ if e.kind() == io::ErrorKind::PermissionDenied => format!(
            "{shown}: {e_text}; hint: this user may not write there: pass another -o, or run \
             rtrace as a user who may"
        ),
        _ if path.is_dir() => format!(
            "{shown}: {e_text}; hint: --format chrome writes one file: pass its path, e.g. \
             -o {}/trace.json",
            shown.trim_end_matches('/')
        ),
        _ => format!("{shown}: {e_text}"),
    }
}

/// A usage error found after parsing: one line, exit 2 (as clap's own). A path
/// in `msg` is shown by [`shown_path`] (a newline in it would start a second line).
fn usage_error(msg: &str) -> ! {
    posixrt_tools::warn(PROG, format_args!("{msg} (see rtrace --help)"));
    std::process::exit(2)
}

fn main() -> ExitCode {
    // A closed pipe (`rtrace dump LOG | head`) ends rtrace quietly with status 0,
    // as it does tfp and rtstat: the write fails with EPIPE (see `stdout_failure`)
    // instead of a death by SIGPIPE (status 141 under `set -o pipefail`).
    // SAFETY: sets the disposition of SIGPIPE to ignored; no handler is involved
    // and no other thread exists yet.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let cli: Cli = posixrt_tools::parse_args(PROG);
    match run(cli) {
        Ok(None) => ExitCode::SUCCESS,
        Ok(Some(stop)) => {
            let code = code_of(&stop);
            // A log whose writer was killed ends at a record boundary: nothing is
            // damaged, only the shutdown record is missing.
            let clean = code == EXIT_CUT && stop.to_string().contains("cut cleanly");
            let what = match code {
                EXIT_CUT if clean => "cut short, clean truncation",
                EXIT_CORRUPT => "corrupt",
                EXIT_CUT => "cut short",
                _ => "read error",
            };
            let stop = stop.to_string();
            posixrt_tools::warn(
                PROG,
                format_args!("stopped early ({what}): {}", printable_escaped(&stop)),
            );
            ExitCode::from(code)
        }
        Err(f) if f.code == 0 => ExitCode::SUCCESS,
        Err(f) => {
            // One line, whatever a path named in it holds.
            posixrt_tools::warn(PROG, format_args!("{}", printable_escaped(&f.msg)));
            ExitCode::from(f.code)
        }
    }
}
