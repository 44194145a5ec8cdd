//! `--watch`: the refresh header, the stop signals and the sleep between
//! refreshes, and what each refresh says of a -p process.

use std::ffi::OsString;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use posixrt::mark::Snapshot;

use super::filter::{kept, not_named};

/// The line that starts each --watch refresh of the text listing, after a screen
/// clear on a terminal.
pub fn refresh_header(out: &mut impl Write, secs: f64, refresh: u64, tty: bool) -> io::Result<()> {
    if tty {
        write!(out, "\x1b[H\x1b[2J")?;
    }
    writeln!(out, "tfp: every {secs}s, refresh {refresh}")
}

/// Set by SIGINT, SIGTERM or SIGHUP during --watch: leave the loop and exit
/// normally, so tfp's own registry file is removed (a signal's default action
/// would leave it for the next reader to clean up). A signal ignored when tfp
/// starts (SIGHUP under `nohup`, SIGINT in a script's background job) stays
/// ignored, as a shell would leave it.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

pub fn install_stop_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: `old` and `sa` are zero-initialised plain data; the query
        // fills `old`; `sa` is then filled in, and its handler only stores to an
        // atomic, which is async-signal-safe; a null action pointer queries,
        // and a null old-action pointer is allowed.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_stop_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Sleeps `d` in short steps; false if a stop signal arrived.
pub fn sleep_unless_stopped(d: Duration) -> bool {
    let step = Duration::from_millis(20);
    let end = std::time::Instant::now() + d;
    loop {
        if STOP.load(Ordering::Relaxed) {
            return false;
        }
        let now = std::time::Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep(step.min(end - now));
    }
}

/// The start time of process `pid` if it is running (not gone, not a zombie).
pub fn running_since(pid: i32) -> Option<u64> {
    let text = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    posixrt::registry::TaskStat::parse(&String::from_utf8_lossy(&text))
        .filter(|st| !posixrt::registry::process_ended(pid, st))
        .map(|st| st.starttime)
}

/// A -p process still running, and what the last refreshes showed of it.
pub struct Watched {
    pub pid: i32,
    pub start: u64,
    pub seen: Seen,
}

#[derive(Clone, Copy, PartialEq)]
pub enum Seen {
    /// Listed by the last refresh (or skipped and counted: unreadable, busy).
    Listed,
    /// Not listed by the last refresh, which said nothing of it: a process
    /// that exits removes its registry a moment before it ends, and is said to
    /// have exited at the next refresh instead.
    Missing,
    /// Not listed, and said so.
    Said,
}

impl Watched {
    /// Takes in `snap`, this process's snapshot; returns what to say once the
    /// process is missing from two refreshes in a row (it cleared its marks,
    /// or ran another program, which has no marked thread or whose path the
    /// NAMEs `names` do not keep); a process listed again is said again
    /// when it goes missing again.
    pub fn refresh(&mut self, snap: &Snapshot, names: &[OsString]) -> Option<String> {
        let why = match snap.process(self.pid) {
            Some(p) if kept(p, names) => None,
            Some(p) => Some(not_named(p, names)),
            None if snap.unreadable + snap.incompatible + snap.busy + snap.malformed > 0 => None,
            None => Some(format!(
                "process {} has no marked thread now (its marked threads cleared their marks or exited, or it runs another program); tfp lists it again once a thread of it marks itself",
                self.pid
            )),
        };
        let Some(why) = why else {
            self.seen = Seen::Listed;
            return None;
        };
        match self.seen {
            Seen::Listed => {
                self.seen = Seen::Missing;
                None
            }
            Seen::Missing => {
                self.seen = Seen::Said;
                Some(why)
            }
            Seen::Said => None,
        }
    }
}
