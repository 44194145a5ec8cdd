//! `rtstat`: list the tracked synchronization objects of a running posixrt process
//! (mutexes, condition variables, semaphores, reader-writer locks), with their
//! state, statistics, waiters and any deadlock cycle among them.
//!
//! ```text
//! $ rtstat 12345
//! pid 12345: 4 objects (published every 50 ms while tracking is on)
//! ADDRESS            KIND            NAME            STATE                 WAITERS  LOCKS  CONT  TRY/FAIL  WAIT_MS  MAX_MS  HOLD_MS
//! 0x5581f2a3c010     mutex           queue           owner 12350           2: 12351 12352  ...
//! DEADLOCK: thread 12360 waits for [0x55.. right] held by thread 12361 waits for [0x55.. left] held by thread 12360
//! ```
//!
//! A waiter shown as `cv:ADDRESS` was moved onto the mutex by a `notify_one`
//! of the condition variable at that address, among several of its waiters
//! (which one, the kernel does not tell).
//!
//! The process must have switched tracking on (`posixrt::sync::set_tracking`); its
//! objects are published in `/dev/shm/posixrt-sync-<pid>-<starttime>` (mode 0600:
//! run as root or as its user). Once it switches tracking off, what it published
//! last is no longer current: rtstat says so first ("TRACKING OFF since ...").

use std::io::{self, Write};
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use clap::Parser;

const PROG: &str = "rtstat";
use posixrt::sync::{self, PublishStatus, Snapshot, Tracking};
use serde_json::{json, Value};

/// List a posixrt process's tracked synchronization objects (info, statistics,
/// waiters) and the deadlock cycles among them; without PID, every such process
/// (with `--json`, an array of the per-process objects).
///
/// A process is seen once it switches tracking on
/// (`posixrt::sync::set_tracking(Tracking::Counts)` or `Timing`): it then
/// publishes its objects every 50 ms in `/dev/shm/posixrt-sync-<pid>-<start>`,
/// mode 0600 (run rtstat as its user or as root). Once it switches tracking off,
/// it stops publishing: rtstat then warns first that what it shows is the state
/// of that moment, not the current one. At the `Counts` level no wait or hold
/// time is measured: those columns show `-` (`Timing` measures them).
/// Registries that cannot be read
/// (another user's; one cut short, e.g. truncated by someone, until its owner
/// repairs it when it next writes to it; another posixrt release's) are counted on
/// standard error.
#[derive(Parser, Debug)]
#[command(
    name = "rtstat",
    version,
    after_help = "Examples:\n  rtstat                 every process that publishes its sync objects\n  rtstat 12345           one process: its objects, their waiters, any deadlock\n  rtstat --json 12345    the same as one JSON object {\"pid\", \"tracking\", \"stale\", \"objects\", \"deadlocks\", ...}\n  rtstat --json          an array of such objects, one per process\n\nExit status:\n  0  ok, also when no process publishes sync objects, and when standard output closed by its reader (rtstat | head) ends the listing early\n  1  error: PID names no process (or names a thread of one, or one that has exited) or one without a readable sync registry, /dev/shm cannot be read, or the output cannot be written\n  2  usage error (bad command line)"
)]
struct Args {
    /// The process id; without it, every process that publishes sync objects.
    #[arg(allow_negative_numbers = true, value_parser = pid_arg)]
    pid: Option<u32>,
    /// Print JSON instead of the table: one object for PID, without PID an array
    /// of them.
    #[arg(long)]
    json: bool,
}

fn pid_arg(s: &str) -> Result<u32, String> {
    posixrt_tools::parse_pid(s).map(|p| p as u32)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn state(s: &Snapshot) -> String {
    let i = &s.info;
    use posixrt::sync::Kind;
    match i.kind {
        Kind::Semaphore => format!("count {}", i.sem_count.unwrap_or(0)),
        Kind::Condvar => "-".into(),
        Kind::RwLock if i.write_locked => format!("writer {}", i.owner.unwrap_or(0)),
        Kind::RwLock if i.readers > 0 => format!("{} readers", i.readers),
        _ => match i.owner {
            Some(o) if i.recursion > 1 => format!("owner {o} x{}", i.recursion),
            Some(o) => format!("owner {o}"),
            None => "free".into(),
        },
    }
}

/// Milliseconds rounded to nanoseconds (6 decimals), as before.
fn ms6(d: Duration) -> f64 {
    (ms(d) * 1e6).round() / 1e6
}

/// Seconds since the Unix epoch (fractional), for JSON.
fn unix_secs(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `t` as `YYYY-MM-DD HH:MM:SS UTC` (the civil calendar from days since the
/// epoch: H. Hinnant's `civil_from_days`).
fn utc(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// The warning shown first for a process whose tracking is off: its objects
/// are the state of that moment, not the current one.
fn stale_warning(pid: u32, st: &PublishStatus) -> String {
    let since = match st.off_since {
        Some(t) => {
            let ago = SystemTime::now().duration_since(t).unwrap_or_default();
            format!(" since {} ({:.1} s ago)", utc(t), ago.as_secs_f64())
        }
        None => String::new(),
    };
    format!(
        "TRACKING OFF in pid {pid}{since}: the state below is the last one tracking recorded, not the current state (locks may have changed hands, objects dropped since may still be listed)"
    )
}

/// The level's name in the JSON output.
fn level_name(t: Tracking) -> &'static str {
    match t {
        Tracking::Off => "off",
        Tracking::Counts => "counts",
        _ => "timing",
    }
}

/// One process's objects and deadlocks as a JSON value (`{"pid", "tracking",
/// "stale", "tracking_off_since", "published_at", "registry_full", "unpublished",
/// "objects",
/// "deadlocks"}`);
/// serde escapes every name.
fn json(
    pid: u32,
    status: Option<PublishStatus>,
    objs: &[Snapshot],
    dl: &[sync::Deadlock],
) -> Value {
    let objects: Vec<Value> = objs
        .iter()
        .map(|s| {
            let (i, st) = (&s.info, &s.stats);
            json!({
                "address": format!("{:#x}", i.address),
                "kind": i.kind.name(),
                "name": i.name,
                "shared": i.shared,
                "locked": i.locked,
                "owner": i.owner,
                "owner_pid": i.owner_pid,
                "waiters": i.waiters,
                "waiter_tids": s.waiters,
                "waiter_from_condvar": s.waiter_from_condvar.map(|a| format!("{a:#x}")),
                "recursion": i.recursion,
                "ceiling": i.ceiling,
                "readers": i.readers,
                "write_locked": i.write_locked,
                "sem_count": i.sem_count,
                "stats": {
                    "locks": st.locks,
                    "contended": st.contended,
                    "wait_total_ms": ms6(st.wait_total),
                    "wait_max_ms": ms6(st.wait_max),
                    "hold_total_ms": ms6(st.hold_total),
                    "hold_max_ms": ms6(st.hold_max),
                    "trylocks": st.trylocks,
                    "trylock_failures": st.trylock_failures,
                    "read_locks": st.read_locks,
                    "read_contended": st.read_contended,
                    "timed_waits": st.timed_waits,
                    "timeouts": st.timeouts,
                    "signals": st.signals,
                    "broadcasts": st.broadcasts,
                    "posts": st.posts,
                    "max_count": st.max_count,
                    "min_count": st.min_count,
                },
            })
        })
        .collect();
    let deadlocks: Vec<Value> = dl
        .iter()
        .map(|d| {
            let locks: Vec<String> = d.locks.iter().map(|l| format!("{l:#x}")).collect();
            json!({ "threads": d.threads, "locks": locks })
        })
        .collect();
    json!({
        "pid": pid,
        "tracking": status.map(|s| level_name(s.tracking)),
        "stale": status.is_some_and(|s| s.is_stale()),
        "tracking_off_since": status.and_then(|s| s.off_since).map(unix_secs),
        "published_at": status.and_then(|s| s.published_at).map(unix_secs),
        "registry_full": status.is_some_and(|s| s.unpublished > 0),
        "unpublished": status.map_or(0, |s| s.unpublished),
        "objects": objects,
        "deadlocks": deadlocks,
    })
}

/// An error's text without a leading "rtstat failed: " (the program's name is
/// already the prefix of the line).
fn plain(e: &posixrt::Error) -> String {
    let s = e.to_string();
    match s.strip_prefix("rtstat failed: ") {
        Some(rest) => rest.to_string(),
        None => s,
    }
}

fn main() -> ExitCode {
    // `rtstat | head` ends quietly with status 0, as tfp and rtrace do: a write
    // to the closed pipe fails with EPIPE (see `to_stdout`) instead of a death
    // by SIGPIPE (status 141 under `set -o pipefail`).
    // SAFETY: sets the disposition of SIGPIPE to ignored; no handler is involved
    // and no other thread exists yet.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let args: Args = posixrt_tools::parse_args(PROG);
    // A thread id is not a process id: its process's registry is under the
    // process's pid, and "no sync registry" would send the user the wrong way.
    if let Some((p, t)) = args
        .pid
        .and_then(|p| Some((p, posixrt_tools::process_of_thread(p as i32)?)))
    {
        posixrt_tools::warn(
            PROG,
            format_args!(
                "no process with pid {p}: {p} is a thread of process {t} (use rtstat {t})"
            ),
        );
        return ExitCode::from(1);
    }
    // A zombie keeps its /proc entry, but not its registry: it has exited.
    if let Some(why) = args.pid.and_then(|p| posixrt_tools::exited_note(p as i32)) {
        posixrt_tools::warn(PROG, why);
        return ExitCode::from(1);
    }
    // Without a pid: one scan of /dev/shm, reading each registry once and
    // counting every file it skips, also a second file under a listed pid
    // (a writer in another pid namespace with the same pid).
    let (results, statuses, unreadable, incompatible) = match args.pid {
        Some(pid) => match sync::read_process_with_status(pid) {
            Ok((o, st)) => (vec![(pid, o)], Vec::from_iter(st.map(|s| (pid, s))), 0, 0),
            Err(e) => {
                posixrt_tools::warn(PROG, format_args!("{}", plain(&e)));
                return ExitCode::from(1);
            }
        },
        None => match sync::read_all() {
            Ok(all) => (
                all.processes,
                all.statuses,
                all.unreadable,
                all.incompatible,
            ),
            Err(e) => {
                // ("opendir failed: listing /dev/shm: ...")
                posixrt_tools::warn(PROG, format_args!("{e}"));
                return ExitCode::from(1);
            }
        },
    };
    // With --json too: the array on stdout has no room for these counts, and
    // an empty `[]` alone would read as "no process tracks anything".
    if unreadable > 0 {
        posixrt_tools::warn(PROG, format_args!(
            "{unreadable} registr{} not readable: another user's (mode 0600: run as their user or as root to see them), or a file cut short (e.g. truncated by someone: its owner repairs it when it next writes to it)",
            if unreadable == 1 { "y" } else { "ies" }
        ));
    }
    if incompatible > 0 {
        posixrt_tools::warn(PROG, format_args!(
            "{incompatible} registr{} of another layout version (another posixrt release): use its rtstat",
            if incompatible == 1 { "y" } else { "ies" }
        ));
    }
    let status_of = |pid: u32| statuses.iter().find_map(|&(p, s)| (p == pid).then_some(s));
    if args.json {
        let mut all: Vec<Value> = results
            .iter()
            .map(|(pid, objs)| json(*pid, status_of(*pid), objs, &sync::find_deadlocks_in(objs)))
            .collect();
        let doc = match args.pid {
            Some(_) => all.pop().unwrap_or_else(|| json!({})),
            None => Value::Array(all),
        };
        return to_stdout(|out| writeln!(out, "{doc}"));
    }
    to_stdout(|out| {
        // Skipped registries are processes that do publish: "tracking off
        // everywhere" would send the user the wrong way.
        if results.is_empty() && unreadable + incompatible > 0 {
            writeln!(
                out,
                "no process whose sync objects this rtstat can read (the registries skipped are counted on standard error)"
            )?;
        } else if results.is_empty() {
            writeln!(
                out,
                "no process publishes posixrt sync objects (tracking off everywhere?)"
            )?;
        }
        for (pid, objs) in &results {
            table(out, *pid, status_of(*pid), objs)?;
        }
        Ok(())
    })
}

/// Runs `f` on a buffered standard output and flushes it. A standard output
/// closed by its reader (`rtstat | head`: EPIPE, SIGPIPE being ignored) ends
/// rtstat quietly with status 0: the reader has what it wanted. Another write
/// error (a full disk) is exit 1 with one line, not a panic as in `println!`.
fn to_stdout(f: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> ExitCode {
    let mut out = io::BufWriter::new(io::stdout().lock());
    match f(&mut out).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            posixrt_tools::warn(
                PROG,
                format_args!("standard output: {}", posixrt_tools::os_error(&e)),
            );
            ExitCode::from(1)
        }
    }
}

/// The objects a process's sync registry holds (README: "holds at most 1024
/// objects"): a process with more publishes what fits, so a listing this long
/// may be cut.
const REGISTRY_OBJECTS: usize = 1024;

/// The usual width of each column of the table (a wider cell widens its column).
const COLUMN_WIDTHS: [usize; 11] = [16, 15, 16, 18, 20, 9, 7, 11, 9, 8, 9];

fn table(
    out: &mut dyn Write,
    pid: u32,
    status: Option<PublishStatus>,
    objs: &[Snapshot],
) -> io::Result<()> {
    let dl = sync::find_deadlocks_in(objs);
    if let Some(st) = status.filter(PublishStatus::is_stale) {
        writeln!(out, "{}", stale_warning(pid, &st))?;
    }
    // At the counts level no wait or hold time is measured: a time column
    // left at zero is shown as "-", not as a measured 0.000 ms, and the header
    // says why (times an earlier timing stretch measured are still shown).
    let untimed = status.is_some_and(|s| s.tracking == Tracking::Counts);
    writeln!(
        out,
        "pid {}: {} objects (published every {} ms while tracking is on){}{}",
        pid,
        objs.len(),
        sync::PUBLISH_PERIOD.as_millis(),
        if untimed {
            "; tracking at counts: wait and hold times are not measured (Tracking::Timing measures them)"
        } else {
            ""
        },
        match status.map_or(0, |s| s.unpublished) {
            0 => String::new(),
            n => format!(
                "; the registry is full: {n} more objects are not listed (it holds \
                 {REGISTRY_OBJECTS}; posixrt::sync::objects() in the process has them all)"
            ),
        }
    )?;
    let time = |d: Duration| {
        if untimed && d.is_zero() {
            "-".to_string()
        } else {
            format!("{:.3}", ms(d))
        }
    };
    let header = [
        "ADDRESS", "KIND", "NAME", "STATE", "WAITERS", "LOCKS", "CONT", "TRY/FAIL", "WAIT_MS",
        "MAX_MS", "HOLD_MS",
    ]
    .map(String::from);
    let mut rows = vec![header];
    for s in objs {
        let (i, st) = (&s.info, &s.stats);
        let waiters = if i.waiters == 0 {
            "0".to_string()
        } else {
            let mut t: Vec<String> = s.waiters.iter().map(|t| t.to_string()).collect();
            if let Some(cv) = s.waiter_from_condvar {
                // Moved by the condvar's notify_one; which one is not known.
                t.push(format!("cv:{cv:#x}"));
            }
            format!("{}: {}", i.waiters, t.join(" "))
        };
        let locks = match i.kind {
            sync::Kind::RwLock => format!("{}w/{}r", st.locks, st.read_locks),
            sync::Kind::Semaphore => format!("{}/{}p", st.locks, st.posts),
            sync::Kind::Condvar => format!("{}w/{}s/{}b", st.locks, st.signals, st.broadcasts),
            _ => st.locks.to_string(),
        };
        rows.push([
            format!("{:#x}", i.address),
            i.kind.name().to_string(),
            i.name
                .as_deref()
                .map_or("-".into(), posixrt_tools::printable)
                .into_owned(),
            state(s),
            waiters,
            locks,
            st.contended.to_string(),
            format!("{}/{}", st.trylocks, st.trylock_failures),
            time(st.wait_total),
            time(st.wait_max),
            time(st.hold_total),
        ]);
    }
    // Each column as wide as its widest cell (at least its usual width), so a
    // long name or waiter list does not push its row out from under the titles.
    let mut widths = COLUMN_WIDTHS;
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in &rows {
        let mut line = String::new();
        for (c, (cell, &w)) in row.iter().zip(&widths).enumerate() {
            if c > 0 {
                line.push(' ');
            }
            // The first five columns are text, left-aligned; the figures right.
            if c < 5 {
                line.push_str(&format!("{cell:<w$}"));
            } else {
                line.push_str(&format!("{cell:>w$}"));
            }
        }
        writeln!(out, "{line}")?;
    }
    for d in &dl {
        let mut line = String::from("DEADLOCK:");
        for (t, l) in d.threads.iter().zip(&d.locks) {
            let name = objs
                .iter()
                .find(|o| o.info.address == *l)
                .and_then(|o| o.info.name.as_deref())
                .map_or(String::new(), |n| {
                    format!(" {}", posixrt_tools::printable(n))
                });
            line.push_str(&format!(" thread {t} waits for [{l:#x}{name}] held by"));
        }
        line.push_str(&format!(" thread {}", d.threads[0]));
        writeln!(out, "{line}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formats_the_civil_date() {
        let at = |s| utc(SystemTime::UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(at(951_825_845), "2000-02-29 12:04:05 UTC");
        assert_eq!(at(4_107_542_399), "2100-02-28 23:59:59 UTC");
        assert_eq!(at(1_796_669_523), "2026-12-07 18:52:03 UTC");
    }
}
