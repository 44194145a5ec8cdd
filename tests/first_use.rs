//! What a new user meets first: messages of the library for common mistakes, and the
//! command lines of the examples (bad arguments, bad input, interrupted runs).

#[path = "common/signals.rs"]
mod signals;
#[path = "common/unprivileged.rs"]
mod unprivileged;
#[path = "common/uring.rs"]
mod uring;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use posixrt::sched::rt::{self, LockFlags};
use posixrt::sched::Priority;
use posixrt::ErrorKind;

/// Builds the example with this test's profile and features and returns its path.
fn example_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let bin = profile_dir.join("examples").join(name);
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "--quiet", "--example", name])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    if cfg!(feature = "peers") {
        cmd.args(["--features", "peers"]);
    } else if cfg!(feature = "tokio") {
        cmd.args(["--features", "tokio"]);
    }
    let status = cmd.status().expect("run cargo build --example");
    assert!(status.success(), "cargo build --example {name}");
    bin
}

fn run(bin: &Path, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A scratch directory, removed with its contents when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let d =
            std::env::temp_dir().join(format!("posixrt-first-use-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ---- library messages ----

/// A priority outside the range is the caller's mistake: the error names the range
/// and does not blame a system call that did not fail.
#[test]
fn an_out_of_range_priority_blames_no_system_call() {
    let e = Priority::fifo(0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let text = e.to_string();
    assert!(!text.contains("sched_get_priority_max failed"), "{text}");
    assert!(!e.call().starts_with("sched_"), "{text}");
    assert!(text.contains("1..=99"), "{text}");
}

const CHILD: &str = "POSIXRT_FIRST_USE_CHILD";

/// The child half of the test below (does nothing in a normal run): locks future
/// mappings and prefaults more heap than RLIMIT_MEMLOCK allows, then prints the error.
#[test]
fn heap_prefault_child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let only_future = LockFlags {
        current: false,
        future: true,
        on_fault: false,
    };
    rt::lock_memory(only_future).expect("mlockall(MCL_FUTURE)");
    // More than a thread arena can hold (64 MiB): the block must come from the
    // main heap, whose growth counts against the limit.
    let e = rt::prefault_heap(128 << 20).expect_err("128 MiB must not fit in 8 MiB locked");
    println!("ERROR: {e}");
}

/// Without CAP_IPC_LOCK, after `mlockall(MCL_FUTURE)` a heap prefault larger than
/// RLIMIT_MEMLOCK fails with ENOMEM; the error names RLIMIT_MEMLOCK and the fix.
#[test]
fn heap_prefault_beyond_memlock_names_the_limit() {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "heap_prefault_child",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD, "1");
    // SAFETY: between fork and exec the child only makes async-signal-safe syscalls.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 8 << 20,
                rlim_max: 8 << 20,
            };
            if libc::setrlimit(libc::RLIMIT_MEMLOCK, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Drop CAP_IPC_LOCK (14) from the bounding set, so the exec'd test
            // binary lacks it even as root (best effort: needs CAP_SETPCAP; an
            // unprivileged run lacks CAP_IPC_LOCK anyway).
            libc::prctl(libc::PR_CAPBSET_DROP, 14, 0, 0, 0);
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let line = text
        .lines()
        .find_map(|l| l.split_once("ERROR: ").map(|x| x.1))
        .unwrap_or_else(|| panic!("no error line: {text}"));
    assert!(line.contains("ENOMEM"), "{line}");
    assert!(line.contains("RLIMIT_MEMLOCK"), "{line}");
    assert!(
        line.contains("memlock") && line.contains("ulimit -l"),
        "{line}"
    );
}

// ---- examples ----

/// `bytesum DIR`: the directory named, no sum on stdout, exit 2.
#[test]
fn bytesum_of_a_directory_says_so_and_prints_no_sum() {
    let bin = example_bin("bytesum");
    let d = Scratch::new("bytesum");
    let ds = d.0.to_str().unwrap();
    let o = run(&bin, &[ds]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
    assert_eq!(stderr(&o).trim(), format!("READ: {ds}: Is a directory"));
}

/// Size arguments are bounded; `--only` prints n/a for the ratios it cannot form.
#[test]
fn aio_latency_bounds_sizes_and_prints_na() {
    let bin = example_bin("aio_latency");
    for bad in [
        &["--file-size-mb", "999999999"][..],
        &["--file-size-mb", "0"],
        &["--ops", "99999999999"],
        &["--qd32-ops", "-1"],
        &["--only", "nosuch"],
    ] {
        let o = run(&bin, bad);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {o:?}");
        assert_eq!(stderr(&o).lines().count(), 1, "{bad:?}: {}", stderr(&o));
    }
    // More than the temp dir's free space: refused before anything is written.
    let d = Scratch::new("aio-full");
    let st = rustix::fs::statvfs(&d.0).unwrap();
    let free_mb = st.f_bavail * st.f_frsize / (1 << 20);
    if free_mb < 65_536 {
        let o = Command::new(&bin)
            .args(["--file-size-mb", &free_mb.max(1).to_string()])
            .env("TMPDIR", &d.0)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{o:?}");
        assert!(stderr(&o).contains("MiB free"), "{}", stderr(&o));
    }
    // The example measures an io_uring context (it refuses to run without).
    if uring::uring_refused() {
        return;
    }

    let o = run(
        &bin,
        &[
            "--only",
            "glibc",
            "--ops",
            "200",
            "--qd32-ops",
            "320",
            "--file-size-mb",
            "1",
        ],
    );
    assert!(o.status.success(), "{o:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("NaN"), "{out}");
    assert!(out.contains("= n/a"), "{out}");
}

/// SIGINT or SIGTERM while the test file is being written leaves no file behind.
#[test]
fn aio_latency_interrupted_leaves_no_file() {
    let bin = example_bin("aio_latency");
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let d = Scratch::new("aio-signal");
        let mut cmd = Command::new(&bin);
        cmd.args(["--file-size-mb", "1024"])
            .env("TMPDIR", &d.0)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // Ended by the signal also where this test runs with it ignored.
        signals::default_action(&mut cmd, &[libc::SIGTERM, libc::SIGINT]);
        let mut c = cmd.spawn().unwrap();
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: signals the child we spawned and have not reaped.
        unsafe { libc::kill(c.id() as i32, sig) };
        let st = c.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&st),
            Some(sig),
            "{st:?}"
        );
        let left: Vec<_> = std::fs::read_dir(&d.0).unwrap().flatten().collect();
        assert!(left.is_empty(), "signal {sig}: left {left:?}");
    }
}

/// A value out of range says which and why, in one line, exit 2.
#[test]
fn bad_values_are_one_line_usage_errors() {
    for (name, args, says) in [
        ("philosophers", &["--rounds", "0"][..], "--rounds"),
        ("trace_overhead", &["--events", "5"], "--events"),
        ("trace_overhead", &["--bogus"], "unknown argument"),
        (
            "trace_overhead",
            &["--flush-dir", "/nonexistent-posixrt-dir"],
            "--flush-dir /nonexistent-posixrt-dir",
        ),
        ("sched_info", &["--bogus"], "unknown argument"),
        // Values whose nanoseconds overflow the schedule's arithmetic.
        (
            "mutex_starvation",
            &["--period-ms", "18446744073710"],
            "--period-ms",
        ),
        (
            "mutex_starvation",
            &["--multiple", "4000000000000"],
            "--multiple",
        ),
        ("mutex_starvation", &["--cycles", "2.5"], "--cycles"),
        ("tfp_hello", &["--bogus"], "unknown argument"),
        ("tfp_hello", &["-5"], "not a number of seconds"),
        ("cyclic", &["-a", "4000"], "may run on CPUs"),
        ("sporadic", &["--seconds", "100"], "--seconds"),
        ("sporadic", &["--seconds"], "--seconds"),
        ("sporadic", &["-c", "4000"], "4000"),
        ("sporadic", &["--server-cpu", "x"], "--server-cpu"),
        ("sporadic", &["--bogus"], "unknown argument"),
    ] {
        let o = run(&example_bin(name), args);
        assert_eq!(o.status.code(), Some(2), "{name} {args:?}: {o:?}");
        let e = stderr(&o);
        assert_eq!(e.lines().count(), 1, "{name} {args:?}: {e}");
        assert!(
            e.starts_with(&format!("{name}: ")) && e.contains(says),
            "{e}"
        );
        assert!(
            e.trim_end().ends_with(&format!("(see {name} --help)")),
            "{name} {args:?}: {e}"
        );
        assert!(o.stdout.is_empty(), "{name} {args:?}: {o:?}");
    }
}

/// A number out of an option's range, or no number, is refused with the range
/// the option accepts: `--period-ms 1e400` said "needs a positive number" where
/// the limit is 60000.
#[test]
fn numeric_options_name_their_range() {
    for (name, args, says) in [
        (
            "mutex_starvation",
            &["--period-ms", "1e400"][..],
            "at most 60000",
        ),
        ("mutex_starvation", &["--period-ms", "0"], "at most 60000"),
        ("mutex_starvation", &["--hold-ms", "-1"], "at most 60000"),
        ("mutex_starvation", &["--offset-ms"], "at most 60000"),
        ("mutex_starvation", &["--cycles", "0"], "from 1 to 10000"),
        (
            "mutex_starvation",
            &["--multiple", "1e400"],
            "from 1 to 1000",
        ),
        ("priority_inversion", &["--cs-ms", "1e400"], "at most 400"),
        ("priority_inversion", &["--cs-ms"], "at most 400"),
        ("priority_inversion", &["--medium-ms", "0"], "at most 800"),
        ("cyclic", &["-p", "1e9"], "from 0 to 99"),
        (
            "cyclic",
            &["-i", "99999999999999999999"],
            "from 1 to 10000000",
        ),
        ("cyclic", &["-l", "x"], "from 1 to"),
    ] {
        let o = run(&example_bin(name), args);
        assert_eq!(o.status.code(), Some(2), "{name} {args:?}: {o:?}");
        let e = stderr(&o);
        assert_eq!(e.lines().count(), 1, "{name} {args:?}: {e}");
        assert!(
            e.starts_with(&format!("{name}: {}", args[0])) && e.contains(says),
            "{name} {args:?}: wanted {says:?}: {e}"
        );
    }
}

/// Every example this build has: `examples/NAME.rs` and `examples/NAME/main.rs`,
/// less those whose feature is off.
fn all_examples() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            let name = if p.is_dir() && p.join("main.rs").is_file() {
                p.file_name()?.to_str()?.to_string()
            } else if p.extension().is_some_and(|x| x == "rs") {
                p.file_stem()?.to_str()?.to_string()
            } else {
                return None;
            };
            Some(name)
        })
        // (Examples built only with a feature are left out without it.)
        .filter(|n| n != "aio_tokio" || cfg!(feature = "tokio"))
        .filter(|n| n != "aio_peers" || cfg!(feature = "peers"))
        .collect();
    names.sort();
    names
}

/// `EXAMPLE --help | head -0`: the reader of standard output is gone. Every
/// example ends quietly (by SIGPIPE, as a filter does, or with its exit status),
/// never with a "failed printing to stdout" panic.
#[test]
fn help_into_a_closed_pipe_does_not_panic() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let names = all_examples();
    assert!(names.len() >= 15, "{names:?}");
    for name in names {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: pipe2 just made both descriptors, owned by nobody else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        drop(read);
        let o = Command::new(example_bin(&name))
            .arg("--help")
            .stdin(Stdio::null())
            .stdout(write)
            .output()
            .unwrap();
        let e = stderr(&o);
        assert!(!e.contains("panicked"), "{name} --help: {e}");
        assert_ne!(o.status.code(), Some(101), "{name} --help: {o:?}");
    }
}

/// `EXAMPLE --help` is enough to run it: after the usage line, at least a line
/// saying what the program does, and each option the program reads (each
/// `"--name" =>` arm of its argument loop, in its file or in a file it includes
/// with `#[path]`) is named in the text.
#[test]
fn help_says_what_each_example_does_and_names_its_options() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    for name in all_examples() {
        let (file, main) = match std::fs::read_to_string(dir.join(format!("{name}.rs"))) {
            Ok(src) => (dir.join(format!("{name}.rs")), src),
            Err(_) => {
                let file = dir.join(&name).join("main.rs");
                let src = std::fs::read_to_string(&file).unwrap();
                (file, src)
            }
        };
        // (aio_peers reads its options in support/peers_cli.rs.)
        let mut src = main.clone();
        for line in main.lines() {
            if let Some(path) = line
                .trim()
                .strip_prefix("#[path = \"")
                .and_then(|p| p.strip_suffix("\"]"))
            {
                src += &std::fs::read_to_string(file.parent().unwrap().join(path)).unwrap();
            }
        }
        let o = run(&example_bin(&name), &["--help"]);
        assert!(o.status.success(), "{name}: {o:?}");
        let help = String::from_utf8_lossy(&o.stdout).into_owned();
        let lines = help.lines().filter(|l| !l.trim().is_empty()).count();
        assert!(lines >= 2, "{name} --help is a usage line alone:\n{help}");
        for line in src.lines() {
            let Some((arms, _)) = line.trim().split_once("=>") else {
                continue;
            };
            for opt in arms.split('|').map(str::trim) {
                let Some(opt) = opt.strip_prefix('"').and_then(|o| o.strip_suffix('"')) else {
                    continue;
                };
                if opt.len() < 2 || !opt.starts_with('-') || matches!(opt, "-h" | "--help" | "--") {
                    continue;
                }
                assert!(
                    help.split(|c: char| c.is_whitespace() || "[],".contains(c))
                        .any(|w| w == opt),
                    "{name} reads {opt} but --help does not name it:\n{help}"
                );
            }
        }
    }
}

/// `aio_peers --help` names every engine `--only` accepts (the names its
/// `--only` error lists), so a user need not make a mistake to learn them.
#[cfg(feature = "peers")]
#[test]
fn aio_peers_help_names_the_engines_only_takes() {
    let bin = example_bin("aio_peers");
    let o = run(&bin, &["--only", "no-such-engine"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let e = stderr(&o);
    let engines: Vec<&str> = e
        .split_once("engines from ")
        .and_then(|(_, r)| r.split_once(" (comma-separated)"))
        .map(|(list, _)| list.split(", ").collect())
        .unwrap_or_default();
    assert!(engines.len() >= 10, "{e}");
    let o = run(&bin, &["--help"]);
    assert!(o.status.success(), "{o:?}");
    let help = String::from_utf8_lossy(&o.stdout);
    let words: Vec<&str> = help
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    for name in engines {
        assert!(
            words.contains(&name),
            "--help does not name {name}:\n{help}"
        );
    }
}

/// An argument that is not valid UTF-8 is a usage error (one line, exit 2), not a
/// panic in `std::env::args`; `bytesum`, `linecount` and `linecount_notify` take such
/// a file name, as the listings do.
#[test]
fn non_utf8_arguments_are_usage_errors_or_file_names() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let bad = OsStr::from_bytes(b"caf\xe9");
    for name in ["sched_info", "cyclic", "sporadic", "philosophers"] {
        let o = Command::new(example_bin(name))
            .arg(bad)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {o:?}");
        assert_eq!(e.lines().count(), 1, "{name}: {e}");
        assert!(
            e.starts_with(&format!("{name}: ")) && e.contains("not valid UTF-8"),
            "{e}"
        );
    }
    let d = Scratch::new("non-utf8");
    let file = d.0.join(bad);
    std::fs::write(&file, [1u8, 2, 0xff]).unwrap();
    let o = Command::new(example_bin("bytesum"))
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "2\n");
    std::fs::write(&file, "one\ntwo\n").unwrap();
    for name in ["linecount", "linecount_notify"] {
        let o = Command::new(example_bin(name))
            .arg(&file)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(o.status.success(), "{name}: {o:?}");
        assert_eq!(String::from_utf8_lossy(&o.stdout), "2\n", "{name}");
    }
}

/// `philosophers` follows listing 8.22: one waiter thread serves the requests and
/// records every fork event; it grants a philosopher both forks only while neither
/// neighbour eats, and each philosopher's events go request, grab, release.
#[test]
fn philosophers_waiter_records_the_fork_events() {
    let d = Scratch::new("philosophers");
    let (n, rounds) = (5usize, 3usize);
    let o = Command::new(example_bin("philosophers"))
        .args(["--rounds", "3", "--philosophers", "5", "--log"])
        .arg(d.0.join("p.trace"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    let mut tids = std::collections::BTreeSet::new();
    let mut eating = vec![false; n];
    let mut next = vec!["request"; n];
    let mut events = 0;
    for l in out
        .lines()
        .filter(|l| l.starts_with(' ') && l.contains(" fork "))
    {
        // "    0.000541 s  tid 11619     fork request 1"
        let w: Vec<&str> = l.split_whitespace().collect();
        let (tid, what, no) = (w[3], w[5], w[6].parse::<usize>().unwrap());
        tids.insert(tid.to_string());
        assert_eq!(what, next[no - 1], "philosopher {no}: {out}");
        let (left, right) = ((no + n - 2) % n, no % n);
        next[no - 1] = match what {
            "request" => "grab",
            "grab" => {
                assert!(!eating[left] && !eating[right], "a neighbour eats: {out}");
                eating[no - 1] = true;
                "release"
            }
            _ => {
                eating[no - 1] = false;
                "request"
            }
        };
        events += 1;
    }
    assert_eq!(events, 3 * n * rounds, "{out}");
    assert_eq!(tids.len(), 1, "the waiter alone records: {tids:?}");
}

/// Without the privilege for SCHED_FIFO, `priority_inversion` (text output) fails:
/// exit 1, the error with its hint on stderr, no error text on stdout.
#[test]
fn priority_inversion_refused_privilege_is_a_failure_on_stderr() {
    use std::os::unix::fs::PermissionsExt;
    // uid 65534 may not reach the build directory (a checkout in a 0700
    // directory): run a world-executable copy.
    let d = Scratch::new("priority-inversion");
    std::fs::set_permissions(&d.0, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = d.0.join("priority_inversion");
    std::fs::copy(example_bin("priority_inversion"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = Command::new(&bin);
    cmd.args(["--runs", "1", "--cs-ms", "5", "--medium-ms", "20"])
        .current_dir(&d.0)
        .stdin(Stdio::null());
    unprivileged::without_rt_privilege(&mut cmd);
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        !out.contains("EPERM") && !out.contains("CAP_SYS_NICE"),
        "error text on stdout: {out}"
    );
    let e = stderr(&o);
    assert!(e.starts_with("priority_inversion: "), "{e}");
    assert!(e.contains("EPERM") && e.contains("CAP_SYS_NICE"), "{e}");
    assert!(e.contains("RLIMIT_RTPRIO"), "{e}");
}

// ---- documentation ----

/// Every Rust snippet of README.md runs (as a doctest through src/lib.rs), and the
/// crate docs point a new user to the tour and to the tools.
#[test]
fn readme_snippets_run_and_crate_docs_point_to_the_tour_and_tools() {
    let readme = include_str!("../README.md");
    let lib = include_str!("../src/lib.rs");
    assert!(lib.contains("#[doc = include_str!(\"../README.md\")]"));
    for fence in ["```rust,ignore", "```rust,no_run", "```ignore"] {
        assert!(
            !readme.contains(fence),
            "README has a snippet that does not run: {fence}"
        );
    }
    let docs: String = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    for needle in [
        "--example tour",
        "`tfp`",
        "`rtstat",
        "`rtrace",
        "posixrt-tools",
    ] {
        assert!(docs.contains(needle), "crate docs do not mention {needle}");
    }
    // Every example is named in the crate docs' list (a new one gets added there).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            if p.join("main.rs").is_file() {
                p.file_name().map(|n| n.to_string_lossy().into_owned())
            } else if p.extension().is_some_and(|x| x == "rs") {
                p.file_stem().map(|n| n.to_string_lossy().into_owned())
            } else {
                None
            }
        })
        .collect();
    names.sort();
    assert!(names.len() >= 10, "{names:?}");
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| !docs.contains(&format!("`{n}`")) && !docs.contains(&format!("example {n}")))
        .collect();
    assert!(
        missing.is_empty(),
        "crate docs do not name the examples {missing:?}"
    );
}
