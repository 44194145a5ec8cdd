//! The text listing: a `PID` line per process, a `TID` line per marked
//! thread, and with -v and -b their details.

use std::io::{self, Write};
use std::time::UNIX_EPOCH;

use posixrt::mark::{ProcessMarks, Snapshot, ThreadMark};
use posixrt_tools::{printable_marker, printable_quoted_bytes};

/// The local time of `t` as the listings show it: `yyyy mm dd hh:mm:ss`.
pub fn local_time(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as libc::time_t)
        .unwrap_or(0);
    // SAFETY: `tm` is plain data, fully written by localtime_r on success.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call; localtime_r is thread-safe.
    if unsafe { libc::localtime_r(&secs, &mut tm) }.is_null() {
        return "0000 00 00 00:00:00".to_string();
    }
    format!(
        "{:04} {:02} {:02} {:02}:{:02}:{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

fn cpu_secs(t: &ThreadMark) -> f64 {
    (t.sched.user_time + t.sched.system_time).as_secs_f64()
}

/// The text listing of `snap`; `verbose` (-v) and `block` (-b) add details.
pub fn print_text(
    out: &mut impl Write,
    snap: &Snapshot,
    verbose: bool,
    block: bool,
) -> io::Result<()> {
    if verbose {
        writeln!(
            out,
            "# TID  yyyy mm dd hh:mm:ss  POLICY RTPRIO NICE CPU(s)  MARKER"
        )?;
    }
    for p in &snap.processes {
        print_process(out, p, verbose, block)?;
    }
    if verbose {
        let threads: usize = snap.processes.iter().map(|p| p.threads.len()).sum();
        writeln!(
            out,
            "# {} process(es), {} marked thread(s), {} unreadable, {} incompatible, {} busy, {} malformed",
            snap.processes.len(),
            threads,
            snap.unreadable,
            snap.incompatible,
            snap.busy,
            snap.malformed
        )?;
    }
    Ok(())
}

fn print_process(
    out: &mut impl Write,
    p: &ProcessMarks,
    verbose: bool,
    block: bool,
) -> io::Result<()> {
    writeln!(
        out,
        "PID {:>9} \"{}\"",
        p.pid,
        printable_quoted_bytes(&p.exe_bytes)
    )?;
    for t in &p.threads {
        writeln!(
            out,
            "TID {:>9} {} {:<5} {:>3} {:>3} {:>8.2} {}",
            t.tid,
            local_time(t.updated),
            t.sched.policy_short(),
            t.sched.rt_priority,
            t.sched.nice,
            cpu_secs(t),
            printable_marker(&t.marker)
        )?;
        if verbose {
            writeln!(
                out,
                "          state {} cpu {} user {:.2}s sys {:.2}s kernel name \"{}\"",
                t.sched.state,
                t.sched.last_cpu,
                t.sched.user_time.as_secs_f64(),
                t.sched.system_time.as_secs_f64(),
                printable_quoted_bytes(&kernel_name_bytes(p.pid, t))
            )?;
        }
        if block {
            for line in t.raw.chunks(16) {
                write!(out, "          ")?;
                for b in line {
                    write!(out, "{b:02X} ")?;
                }
                writeln!(out)?;
            }
        }
    }
    Ok(())
}

/// The kernel name (comm) of marked thread `t` of process `pid` as the bytes it
/// is: a name need not be UTF-8 (`prctl(PR_SET_NAME)` takes any bytes, and std
/// cuts a thread's name at 15 bytes, inside a character too), and the library's
/// `kernel_name` shows such bytes as U+FFFD, which shows two names alike. Read
/// again from `/proc/<pid>/task/<tid>/comm` only when the text holds U+FFFD, and
/// kept only if it is the name the listing read (not one the thread took since).
pub fn kernel_name_bytes(pid: i32, t: &ThreadMark) -> std::borrow::Cow<'_, [u8]> {
    let text = &t.sched.kernel_name;
    if !text.contains('\u{fffd}') {
        return std::borrow::Cow::Borrowed(text.as_bytes());
    }
    match std::fs::read(format!("/proc/{pid}/task/{}/comm", t.tid)) {
        Ok(mut b) => {
            if b.last() == Some(&b'\n') {
                b.pop();
            }
            if String::from_utf8_lossy(&b) == *text {
                return std::borrow::Cow::Owned(b);
            }
            std::borrow::Cow::Borrowed(text.as_bytes())
        }
        Err(_) => std::borrow::Cow::Borrowed(text.as_bytes()),
    }
}
