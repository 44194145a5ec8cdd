//! The seed examples' reports, as a user reads them: error paths go where the C
//! listings send them, and no Rust debug notation (`None`, `Some(..)`) leaks into
//! what they print.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

#[path = "common/example_bin.rs"]
mod example_bin;
use example_bin::example_bin;

/// <linux/capability.h>
const CAP_SYS_NICE: libc::c_ulong = 23;

/// Runs example `name` with `args` and no real-time privilege: RLIMIT_RTPRIO 0
/// and, for root, CAP_SYS_NICE out of the bounding set (so the exec'd program
/// lacks it).
fn without_rt(name: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(example_bin(name));
    cmd.args(args).stdin(Stdio::null());
    // SAFETY: between fork and exec the child only calls setrlimit and prctl,
    // which are async-signal-safe system calls on values of its own.
    unsafe {
        cmd.pre_exec(|| {
            let zero = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::setrlimit(libc::RLIMIT_RTPRIO, &zero) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Fails (EPERM) without CAP_SETPCAP: then the process has no
            // CAP_SYS_NICE to drop, in the usual case.
            let _ = libc::prctl(libc::PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0);
            Ok(())
        });
    }
    cmd.output().expect("run the example")
}

/// `sched_info` with the switch to SCHED_RR 50 refused, if it can be refused.
fn sched_info_refused() -> Option<std::process::Output> {
    let o = without_rt("sched_info", &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    if out.contains("Switched from") {
        // Still allowed (an ambient capability): nothing to check.
        return None;
    }
    Some(o)
}

/// Listing 6.4 reports a refused `sched_setscheduler` with `perror`, on standard
/// error, and goes on (exit 0); the report on standard output keeps its shape.
#[test]
fn sched_info_reports_a_refused_switch_on_stderr() {
    let Some(o) = sched_info_refused() else {
        return;
    };
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        err.starts_with("sched_info: ") && err.contains("SCHED_RR 50") && err.contains("EPERM"),
        "the refusal belongs on stderr: {err:?}"
    );
    assert!(
        !out.contains("refused") && !out.contains("EPERM"),
        "no error text on stdout: {out:?}"
    );
    assert!(
        out.contains("Round-robin quantum (sched_rr_get_interval): "),
        "the listing still prints the quantum: {out:?}"
    );
}

/// `sync_inspect` prints the waiters it catches with their object's owner as a
/// thread id, or says there is none, as its object lines do (`owner=TID`, `free`).
#[test]
fn sync_inspect_prints_no_debug_notation() {
    let o = Command::new(example_bin("sync_inspect"))
        .stdin(Stdio::null())
        .output()
        .expect("run sync_inspect");
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for line in out.lines() {
        assert!(
            !line.contains("None") && !line.contains("Some("),
            "Rust debug notation in the report: {line:?}"
        );
    }
}

/// Runs `linecount`-like `name` on `files` with RLIMIT_NOFILE at `nofile`.
fn count_with_few_fds(
    name: &str,
    files: &[std::path::PathBuf],
    nofile: u64,
) -> std::process::Output {
    let mut cmd = Command::new(example_bin(name));
    cmd.args(files).stdin(Stdio::null());
    // SAFETY: between fork and exec the child only calls getrlimit and
    // setrlimit, async-signal-safe system calls, on a value of its own.
    unsafe {
        cmd.pre_exec(move || {
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Lowered only: a hard limit below `nofile` stays.
            lim.rlim_cur = lim.rlim_max.min(nofile);
            lim.rlim_max = lim.rlim_cur;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().expect("run the line counter")
}

/// Listings 7.7 and 7.8 count the files they could open when others fail to open;
/// the examples promise the same ("the others are still counted"), also when the
/// files that fail are refused for want of descriptors (EMFILE): the AIO context
/// must not be the last thing to need one.
#[test]
fn line_counters_count_the_files_they_opened_when_descriptors_run_out() {
    let dir = std::env::temp_dir().join(format!("posixrt-examples-review-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files: Vec<_> = (0..60)
        .map(|i| {
            let p = dir.join(format!("f{i}"));
            std::fs::write(&p, "one\ntwo\n").unwrap();
            p
        })
        .collect();
    for name in ["linecount", "linecount_notify"] {
        let o = count_with_few_fds(name, &files, 32);
        let out = String::from_utf8_lossy(&o.stdout);
        let err = String::from_utf8_lossy(&o.stderr);
        let refused = err
            .lines()
            .filter(|l| l.ends_with(": Too many open files"))
            .count();
        // (linecount_notify closes a file once read, so later opens may succeed.)
        assert!(refused < files.len(), "{name}: some files opened: {err}");
        assert_eq!(
            err.lines().count(),
            refused,
            "{name}: only the refused files are reported: {err}"
        );
        assert_eq!(
            out.trim().parse::<usize>().ok(),
            Some(2 * (files.len() - refused)),
            "{name}: the lines of the files it opened; stdout {out:?}, stderr {err}"
        );
        let status = if refused > 0 { 1 } else { 0 };
        assert_eq!(o.status.code(), Some(status), "{name}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Listing 6.7 asserts its `pthread_setschedparam` before printing anything; the
/// example's header promises the same for a refused privilege: the error and the
/// fix on stderr, nothing on stdout, exit 1.
#[test]
fn priority_inversion_without_privilege_prints_nothing_on_stdout() {
    let o = without_rt(
        "priority_inversion",
        &["--runs", "1", "--iterations", "1000"],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    if o.status.success() {
        // Still allowed (an ambient capability): nothing to check.
        return;
    }
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot run the demonstration") && err.contains("hint:"),
        "{err}"
    );
    assert_eq!(out, "", "stdout of a run that could not start");
}

/// An example whose standard error cannot be written (`2>/dev/full`) keeps
/// the exit status it documents (2 for a usage error; for a file it cannot
/// open, 1, or bytesum's errno as listing 7.10's) instead of panicking in
/// `eprintln!` (status 101).
#[test]
fn an_unwritable_stderr_keeps_the_documented_exit_status() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return;
    };
    let cases: [(&str, &[&str], i32); 3] = [
        ("linecount", &["--no-such-option"], 2),
        ("linecount", &["/nonexistent/posixrt-file"], 1),
        // (Listing 7.10 returns the errno: ENOENT.)
        ("bytesum", &["/nonexistent/posixrt-file"], libc::ENOENT),
    ];
    for (name, args, want) in cases {
        let out = Command::new(example_bin(name))
            .args(args)
            .stdout(Stdio::null())
            .stderr(full.try_clone().expect("dup /dev/full"))
            .output()
            .expect("run the example");
        assert_eq!(
            out.status.code(),
            Some(want),
            "{name} {args:?}: {:?}",
            out.status
        );
    }
}

/// The tour's advise section makes a file in the temp dir; where it cannot (a
/// `TMPDIR` that does not exist), the section's error names the file and says
/// what to set, instead of a bare "No such file or directory", and the other
/// sections still run.
#[test]
fn tour_names_the_temp_file_it_cannot_create() {
    let o = Command::new(example_bin("tour"))
        .env("TMPDIR", "/nonexistent-posixrt-tmpdir")
        .stdin(Stdio::null())
        .output()
        .expect("run the tour");
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let line = out
        .lines()
        .find(|l| l.contains("section advise failed"))
        .unwrap_or_else(|| panic!("no advise failure in:\n{out}"));
    assert!(
        line.contains("/nonexistent-posixrt-tmpdir/posixrt-tour-advise-")
            && line.contains("TMPDIR"),
        "{line}"
    );
    assert!(out.contains("== posixrt::mark"), "{out}");
}

/// `aio_priority` refused SCHED_FIFO names the errno as every other message
/// does (`Operation not permitted (EPERM 1)`) and the priority it needs, not
/// "failed with errno 1". Exit 1, nothing on stdout.
#[test]
fn aio_priority_without_privilege_names_the_errno() {
    let o = without_rt("aio_priority", &["--other", "100"]);
    let err = String::from_utf8_lossy(&o.stderr);
    if o.status.success() {
        // Still allowed (an ambient capability): nothing to check.
        return;
    }
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("(EPERM 1)"), "{err}");
    assert!(!err.contains("errno 1"), "{err}");
    assert!(err.contains("RLIMIT_RTPRIO"), "{err}");
    assert!(o.stdout.is_empty(), "{o:?}");
}

/// Runs example `name` with `args` and RLIMIT_NOFILE at 4 (the standard
/// streams and one more): the first registry or ring it makes fails (EMFILE).
fn with_four_fds(name: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(example_bin(name));
    cmd.args(args).stdin(Stdio::null());
    // SAFETY: between fork and exec the child only calls setrlimit, an
    // async-signal-safe system call, on a value of its own.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 4,
                rlim_max: 4,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().expect("run the example")
}

/// A failure of `tfp_hello` (and of `aio_tokio`, below) is one line in plain
/// words, `PROG: ...`, exit 1, as every other example says it, not Rust's
/// `Error: Error { kind: OutOfResources, errno: Some((24, "EMFILE")), ... }`
/// from a `main` that returns the error.
#[test]
fn tfp_hello_says_a_failure_in_plain_words() {
    let o = with_four_fds("tfp_hello", &["0", "0"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("tfp_hello: "), "{err}");
    assert!(
        !err.contains(" { ") && !err.contains("Some("),
        "debug notation: {err}"
    );
}

#[cfg(feature = "tokio")]
#[test]
fn aio_tokio_says_a_failure_in_plain_words() {
    let o = with_four_fds("aio_tokio", &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("aio_tokio: "), "{err}");
    assert!(
        !err.contains(" { ") && !err.contains("Some("),
        "debug notation: {err}"
    );
}

/// `sporadic` run under `taskset -c N` (a one-CPU affinity inherited from the
/// shell, not a cpuset): the deadline run, which the kernel refuses to a
/// thread pinned to one CPU, takes every online CPU as it does without taskset,
/// and both runs are reported. Before, the unpinned retry kept the inherited
/// one-CPU affinity, was refused again, and the example exited 1 printing
/// nothing, the sporadic run's figures included.
#[test]
fn sporadic_under_a_one_cpu_affinity_reports_both_runs() {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    if online.trim() == "0" {
        println!("skip: one CPU online, nothing to narrow");
        return;
    }
    let mut cmd = Command::new(example_bin("sporadic"));
    cmd.args(["--seconds", "0.1", "--json"])
        .stdin(Stdio::null());
    // SAFETY: between fork and exec the child only calls sched_getcpu and
    // sched_setaffinity, async-signal-safe system calls, on values of its own.
    unsafe {
        cmd.pre_exec(|| {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            let cpu = libc::sched_getcpu();
            libc::CPU_SET(cpu.max(0) as usize, &mut set);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = cmd.output().expect("run sporadic");
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    if err.contains("CAP_SYS_NICE") && err.contains("sporadic run failed") {
        println!("skip: no real-time privilege: {err}");
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        out.contains("\"sporadic\": {") && out.contains("\"deadline\": {"),
        "{out}{err}"
    );
}

/// `sync_inspect --json`'s `waiters_seen` is how many of the service's threads
/// it caught waiting: at most its 6 threads (2 producers, 2 consumers, a
/// writer, a condition waiter). Before, it counted every poll (every 1 ms for
/// 150 ms) that found an object with waiters: 255 "waiters" in a 6-thread
/// service.
#[test]
fn sync_inspect_counts_the_threads_it_caught_waiting() {
    let o = Command::new(example_bin("sync_inspect"))
        .arg("--json")
        .stdin(Stdio::null())
        .output()
        .expect("run sync_inspect");
    assert!(o.status.success(), "{o:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    let seen: u64 = out
        .split("\"waiters_seen\": ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no waiters_seen: {out}"));
    assert!(seen <= 6, "{seen} waiters seen among 6 threads: {out}");
}
