//! Tests of the `tfp` binary: output layout, `-b`, `--json`, NAME filters,
//! `--watch`, unreadable processes, and the time to list 1000 marked threads.
//!
//! The marked process is this test process itself (tests filter by the tids they
//! created, so they can run in parallel).

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::time::Instant;

use posixrt::mark;
use serde_json::Value as Json;

mod common;
use common::{me, starttime, stdout, tfp, wait_registry, IncompatibleRegistry, WorldExecutable};

#[path = "../../tests/common/signals.rs"]
mod signals;

/// A marked worker that stays alive until the returned sender is dropped.
fn parked_worker(marker: &str, raw: &[u8]) -> (mark::MarkedThread<()>, mpsc::Sender<()>) {
    let (tx, rx) = mpsc::channel::<()>();
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let raw = raw.to_vec();
    let t = mark::spawn_named(marker, move || {
        mark::write_raw(0, &raw).unwrap();
        ready_tx.send(()).unwrap();
        let _ = rx.recv();
    })
    .unwrap();
    ready_rx.recv().unwrap();
    (t, tx)
}

/// One parsed `TID` line.
#[derive(Debug)]
struct TidLine {
    tid: i32,
    date: String,
    policy: String,
    rt: u32,
    nice: i32,
    cpu: f64,
    marker: String,
}

fn parse_tid(line: &str) -> TidLine {
    // TID <tid> yyyy mm dd hh:mm:ss POLICY RT NICE CPU marker...
    let mut it = line.split_whitespace();
    assert_eq!(it.next(), Some("TID"), "{line}");
    let tid = it.next().unwrap().parse().unwrap();
    let (y, mo, d, hms) = (
        it.next().unwrap(),
        it.next().unwrap(),
        it.next().unwrap(),
        it.next().unwrap(),
    );
    assert_eq!(
        (y.len(), mo.len(), d.len(), hms.len()),
        (4, 2, 2, 8),
        "{line}"
    );
    assert!(y.parse::<u32>().unwrap() >= 2000);
    assert!((1..=12).contains(&mo.parse::<u32>().unwrap()));
    assert_eq!(hms.matches(':').count(), 2);
    let policy = it.next().unwrap().to_string();
    let rt = it.next().unwrap().parse().unwrap();
    let nice = it.next().unwrap().parse().unwrap();
    let cpu = it.next().unwrap().parse().unwrap();
    // The marker is the rest of the line after the CPU column, spaces included.
    let cpu_end = {
        let mut pos = 0;
        for _ in 0..10 {
            let s = line[pos..].find(|c: char| !c.is_whitespace()).unwrap() + pos;
            pos = line[s..]
                .find(char::is_whitespace)
                .map_or(line.len(), |e| s + e);
        }
        pos
    };
    let marker = line[cpu_end..].strip_prefix(' ').unwrap_or("").to_string();
    TidLine {
        tid,
        date: format!("{y} {mo} {d} {hms}"),
        policy,
        rt,
        nice,
        cpu,
        marker,
    }
}

/// The lines of our own process's block in a text listing.
fn own_block(out: &str) -> Vec<String> {
    let header = format!("PID {:>9} ", me());
    let mut lines = out.lines().skip_while(|l| !l.starts_with(&header));
    let mut block = Vec::new();
    if let Some(h) = lines.next() {
        block.push(h.to_string());
        block.extend(
            lines
                .take_while(|l| !l.starts_with("PID "))
                .map(str::to_string),
        );
    }
    block
}

/// Whether `line` is the TID line of thread `tid`.
fn is_tid_line(line: &str, tid: i32) -> bool {
    line.starts_with("TID") && parse_tid(line).tid == tid
}

/// The index in `block` of the TID line of thread `tid`.
#[track_caller]
fn tid_line(block: &[String], tid: i32) -> usize {
    block
        .iter()
        .position(|l| is_tid_line(l, tid))
        .expect("worker listed")
}

/// The nice value of thread `tid` of this process, from /proc (field 19 of its
/// stat line).
fn nice_of(tid: i32) -> i32 {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
    let after = &s[s.rfind(')').unwrap() + 2..];
    after.split(' ').nth(16).unwrap().parse().unwrap()
}

#[test]
fn text_layout_matches_the_seed() {
    let (w, _stop) = parked_worker("tfp text worker: step 3", b"");
    let out = tfp(&["-p", &me().to_string()]);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    let block = own_block(&text);
    assert!(!block.is_empty(), "our process is listed:\n{text}");
    let exe = std::env::current_exe().unwrap();
    assert_eq!(block[0], format!("PID {:>9} \"{}\"", me(), exe.display()));
    let lines: Vec<TidLine> = block[1..].iter().map(|l| parse_tid(l)).collect();
    let t = lines
        .iter()
        .find(|t| t.tid == w.tid())
        .expect("worker listed");
    assert_eq!(t.marker, "tfp text worker: step 3");
    assert_eq!(t.policy, "OTHER");
    // The worker's own nice value: a test run under `nice -n 10` lists 10.
    assert_eq!((t.rt, t.nice), (0, nice_of(w.tid())));
    assert!(t.cpu >= 0.0);
    assert_eq!(t.date.len(), 19);
    // no -b: no dump lines
    assert!(
        block[1..].iter().all(|l| l.starts_with("TID ")),
        "{block:?}"
    );
}

#[test]
fn block_dump_16_bytes_a_line() {
    let raw: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37)).collect();
    let (w, _stop) = parked_worker("tfp dump worker", &raw);
    let out = tfp(&["-b", "-p", &me().to_string()]);
    assert!(out.status.success());
    let text = stdout(&out);
    let block = own_block(&text);
    let at = tid_line(&block, w.tid());
    let dump = &block[at + 1..at + 5];
    for (k, line) in dump.iter().enumerate() {
        assert!(line.starts_with("          "), "{line:?}");
        let bytes: Vec<u8> = line
            .split_whitespace()
            .map(|h| {
                assert_eq!(h.len(), 2);
                assert_eq!(h, h.to_uppercase());
                u8::from_str_radix(h, 16).unwrap()
            })
            .collect();
        assert_eq!(bytes, raw[k * 16..k * 16 + 16]);
    }
    assert!(block.get(at + 5).map_or(true, |l| l.starts_with("TID")));
}

#[test]
fn verbose_adds_details() {
    let (w, _stop) = parked_worker("tfp verbose worker", b"");
    let out = tfp(&["-v", "-p", &me().to_string()]);
    let text = stdout(&out);
    assert!(text.lines().next().unwrap().starts_with("# TID"), "{text}");
    let block = own_block(&text);
    let at = tid_line(&block, w.tid());
    let detail = &block[at + 1];
    assert!(
        detail.contains("state ") && detail.contains("kernel name \"tfp verbose wor\""),
        "{detail}"
    );
    assert!(text.lines().last().unwrap().contains("marked thread(s)"));
}

/// Parses one JSON document strictly (serde_json): anything malformed fails the test.
fn parse_json(s: &str) -> Json {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("invalid JSON ({e}): {s}"))
}

fn num(j: &Json) -> f64 {
    j.as_f64().unwrap_or_else(|| panic!("not a number: {j}"))
}

fn string(j: &Json) -> &str {
    j.as_str().unwrap_or_else(|| panic!("not a string: {j}"))
}

fn arr(j: &Json) -> &[Json] {
    j.as_array().unwrap_or_else(|| panic!("not an array: {j}"))
}

/// Thread `tid` of the first process in tfp's JSON document `j`.
#[track_caller]
fn json_thread(j: &Json, tid: i32) -> Json {
    arr(&arr(&j["processes"])[0]["threads"])
        .iter()
        .find(|t| num(&t["tid"]) as i32 == tid)
        .cloned()
        .expect("worker listed")
}

/// `tfp --json` of this process carries thread `tid`'s `marker` exactly.
#[track_caller]
fn assert_json_marker(tid: i32, marker: &str) {
    let j = parse_json(&stdout(&tfp(&["--json", "-p", &me().to_string()])));
    assert_eq!(string(&json_thread(&j, tid)["marker"]), marker);
}

#[test]
fn json_output() {
    let raw = [0xA5u8; 8];
    let (w, _stop) = parked_worker("tfp json \"quoted\" \\ worker", &raw);
    let out = tfp(&["--json", "-p", &me().to_string()]);
    assert!(out.status.success());
    let j = parse_json(&stdout(&out));
    assert_eq!(num(&j["unreadable"]), 0.0);
    let procs = arr(&j["processes"]);
    let p = procs
        .iter()
        .find(|p| num(&p["pid"]) as i32 == me())
        .expect("listed");
    assert_eq!(
        string(&p["exe"]),
        std::env::current_exe().unwrap().to_str().unwrap()
    );
    let t = arr(&p["threads"])
        .iter()
        .find(|t| num(&t["tid"]) as i32 == w.tid())
        .expect("worker listed");
    assert_eq!(string(&t["marker"]), "tfp json \"quoted\" \\ worker");
    assert_eq!(&string(&t["raw"])[..16], "a5a5a5a5a5a5a5a5");
    assert_eq!(string(&t["raw"]).len(), 128);
    assert_eq!(t["raw_written"], Json::Bool(true));
    assert_eq!(string(&t["policy"]), "OTHER");
    assert_eq!(num(&t["rt_priority"]), 0.0);
    assert!(num(&t["updated_ns"]) > 1.0e18);
    assert!(num(&t["last_cpu"]) >= 0.0);
    assert!(num(&t["user_s"]) >= 0.0 && num(&t["system_s"]) >= 0.0);
    assert_eq!(string(&t["kernel_name"]), "tfp json \"quote");
}

/// Whatever a marker holds (quotes, backslashes, every control character), `--json`
/// is one valid document that carries it exactly.
#[test]
fn json_is_valid_whatever_the_marker_holds() {
    let marker: String = "q\"b\\s/"
        .chars()
        .chain((1u8..0x20).map(char::from))
        .chain(['\u{7f}', '\u{2028}', 'é', '"'])
        .collect();
    let (w, _stop) = parked_worker(&marker, b"");
    let out = tfp(&["--json", "-p", &me().to_string()]);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1, "one line: {text:?}");
    let t = json_thread(&parse_json(&text), w.tid());
    assert_eq!(string(&t["marker"]), marker);
}

#[test]
fn control_characters_are_escaped_in_text_and_kept_in_json() {
    let marker = "evil\nTID 1 fake line \x1b[2J end";
    let (w, _stop) = parked_worker(marker, b"");
    let out = tfp(&["-v", "-p", &me().to_string()]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(
        !text.contains('\x1b'),
        "an escape sequence reached the terminal"
    );
    let block = own_block(&text);
    let line = &block[tid_line(&block, w.tid())];
    assert_eq!(
        parse_tid(line).marker,
        "evil\\nTID 1 fake line \\u{1b}[2J end",
        "one line per thread, control characters escaped"
    );
    assert!(
        !block.iter().any(|l| l.starts_with("TID 1 fake")),
        "{block:?}"
    );
    // JSON carries the marker exactly
    assert_json_marker(w.tid(), marker);
}

/// A marker cannot pass for another: a right-to-left override shows the rest of
/// the line backwards, zero-width characters and isolates show as nothing. Text
/// shows each escaped, as it shows a control character; JSON keeps the marker.
#[test]
fn bidi_and_zero_width_characters_are_escaped_in_text_and_kept_in_json() {
    let marker = "worker 1\u{202e}0 pets\u{200b}\u{2066}x\u{2069}\u{200f}\u{feff}";
    let (w, _stop) = parked_worker(marker, b"");
    let out = tfp(&["-p", &me().to_string()]);
    assert!(out.status.success(), "{out:?}");
    let block = own_block(&stdout(&out));
    let line = &block[tid_line(&block, w.tid())];
    assert_eq!(
        parse_tid(line).marker,
        "worker 1\\u{202e}0 pets\\u{200b}\\u{2066}x\\u{2069}\\u{200f}\\u{feff}"
    );
    assert_json_marker(w.tid(), marker);
}

#[test]
fn name_filter_keeps_matching_paths() {
    let (w, _stop) = parked_worker("tfp name worker", b"");
    let exe = std::env::current_exe().unwrap();
    let file = exe.file_name().unwrap().to_str().unwrap();
    let out = stdout(&tfp(&[file]));
    let block = own_block(&out);
    assert!(block.iter().any(|l| is_tid_line(l, w.tid())), "{out}");
    for l in out.lines().filter(|l| l.starts_with("PID ")) {
        assert!(
            l.trim_end_matches('"').ends_with(file),
            "only matching paths: {l}"
        );
    }
    let out = stdout(&tfp(&["no-such-program-posixrt"]));
    assert!(out.lines().all(|l| !l.starts_with("PID ")), "{out}");
    // several names: any of them
    let out = stdout(&tfp(&["no-such-program-posixrt", file]));
    assert!(!own_block(&out).is_empty());
}

#[test]
fn watch_refreshes_and_is_bounded() {
    let (_w, _stop) = parked_worker("tfp watch worker", b"");
    let out = tfp(&["--watch", "0.05", "-n", "3", "-p", &me().to_string()]);
    assert!(out.status.success());
    let text = stdout(&out);
    // stdout is a pipe here: no screen-clearing codes, a header line per refresh
    assert!(!text.contains('\x1b'), "{text:?}");
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("tfp: every 0.05s, refresh "))
            .count(),
        3,
        "{text:?}"
    );
    assert_eq!(text.matches(&format!("PID {:>9}", me())).count(), 3);

    // --json --watch: one JSON document per line and nothing else
    let out = tfp(&[
        "--json",
        "--watch",
        "0.05",
        "-n",
        "2",
        "-p",
        &me().to_string(),
    ]);
    assert!(out.status.success());
    let text = stdout(&out);
    let docs: Vec<Json> = text.lines().map(parse_json).collect();
    assert_eq!(docs.len(), 2, "{text:?}");
    for d in &docs {
        assert!(arr(&d["processes"])
            .iter()
            .any(|p| num(&p["pid"]) as i32 == me()));
    }

    for bad in [
        &["--watch", "0"][..],
        &["--watch", "-1"],
        &["--watch", "x"],
        &["--watch", "1e-9"],
        &["--watch", "inf"],
        &["-n", "2"],
    ] {
        let o = tfp(bad);
        assert_eq!(o.status.code(), Some(2), "{bad:?} is a usage error");
    }
}

#[test]
fn a_pid_without_a_process_is_an_error() {
    // pids are below pid_max, so pid_max itself names no process
    let pid_max = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap();
    let pid = pid_max.trim();
    let o = tfp(&["-p", pid]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&format!("no process with pid {pid}")),
        "{o:?}"
    );
    // A negative pid is a bad pid, not an option to pass after `--`.
    let o = tfp(&["-p", "-1"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains("not a process id") && !e.contains("-- -1"),
        "{e}"
    );
}

#[test]
fn unreadable_processes_are_skipped_with_a_count() {
    let (w, _stop) = parked_worker("tfp private worker", b"");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        unreadable_without_root();
        return;
    }
    // As `nobody`, our root-owned 0600 registry cannot be opened. `nobody` may not
    // reach the build's tfp (a checkout in a 0700 directory): run a copy that it can.
    let copy = WorldExecutable::of(env!("CARGO_BIN_EXE_tfp"));
    let out = common::output_when_free(
        Command::new(&copy.bin)
            .args(["--json", "--no-self"])
            .uid(65534)
            .gid(65534),
    );
    assert!(out.status.success(), "{out:?}");
    let j = parse_json(&stdout(&out));
    assert!(num(&j["unreadable"]) >= 1.0);
    assert!(arr(&j["processes"])
        .iter()
        .all(|p| num(&p["pid"]) as i32 != me()));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("skipped"),
        "{out:?}"
    );
    drop(w);
}

/// Without root: a helper `tfp --watch` (it marks its own main thread) gets its
/// registry file's mode set to 0000, which its own user cannot open either.
fn unreadable_without_root() {
    use std::os::unix::fs::PermissionsExt;
    let mut helper = Command::new(env!("CARGO_BIN_EXE_tfp"))
        .args(["--watch", "30", "-n", "2", common::NO_MATCH])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let file = wait_registry(helper.id() as i32);
    let pid = helper.id() as i32;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
    let out = tfp(&["--json", "--no-self"]);
    let _ = helper.kill();
    let _ = helper.wait();
    let _ = std::fs::remove_file(&file);
    assert!(out.status.success(), "{out:?}");
    let j = parse_json(&stdout(&out));
    assert!(num(&j["unreadable"]) >= 1.0, "{j:?}");
    assert!(arr(&j["processes"])
        .iter()
        .all(|p| num(&p["pid"]) as i32 != pid));
    assert!(String::from_utf8_lossy(&out.stderr).contains("skipped"));
}

#[test]
fn watch_stops_cleanly_on_sigint_and_removes_its_registry() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tfp"));
        cmd.args(["--watch", "30", common::NO_MATCH])
            .stdout(std::process::Stdio::null());
        // tfp keeps ignoring a signal ignored when it starts (see below), as in
        // a background job of a script, which ignores SIGINT.
        signals::default_action(&mut cmd, &[libc::SIGINT, libc::SIGTERM]);
        let mut w = cmd.spawn().unwrap();
        let pid = w.id() as i32;
        let file = wait_registry(pid);
        // SAFETY: signals the child we spawned and have not reaped.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
        let status = w.wait().unwrap();
        assert!(status.success(), "signal {sig}: {status:?}");
        assert!(
            !file.exists(),
            "signal {sig}: {} left behind",
            file.display()
        );
    }
}

/// Under `nohup` (SIGHUP ignored when tfp starts), a SIGHUP does not end
/// `--watch`: tfp goes on refreshing, and SIGTERM still ends it cleanly.
#[test]
fn watch_keeps_a_signal_ignored_at_start_ignored() {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tfp"));
    cmd.args(["--watch", "0.05", "--json", common::NO_MATCH])
        .stdout(std::process::Stdio::piped());
    signals::default_action(&mut cmd, &[libc::SIGTERM]);
    // SAFETY: between fork and exec the child only calls `signal`, which is
    // async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut w = cmd.spawn().unwrap();
    let pid = w.id() as i32;
    let file = wait_registry(pid);
    let out = w.stdout.take().unwrap();
    let lines = std::thread::spawn(move || {
        use std::io::BufRead;
        std::io::BufReader::new(out).lines().count()
    });
    // SAFETY: signals the child we spawned and have not reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGHUP) }, 0);
    // Still refreshing a while after the SIGHUP (a bounded wait: tfp refreshes
    // every 50 ms).
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        w.try_wait().unwrap().is_none(),
        "SIGHUP, ignored at start, ended tfp --watch"
    );
    assert!(file.exists(), "{} removed while running", file.display());
    // SAFETY: as above; the child has not been reaped (try_wait saw it running).
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = w.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(!file.exists(), "{} left behind", file.display());
    assert!(
        lines.join().unwrap() >= 2,
        "refreshes before and after the SIGHUP"
    );
}

static BIG: Mutex<()> = Mutex::new(());

#[test]
fn lists_1000_marked_threads() {
    let _g = BIG.lock().unwrap();
    const N: usize = 1000;
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let done_rx = Arc::new(Mutex::new(done_rx));
    let ready = Arc::new(Barrier::new(N + 1));
    let mut threads = Vec::with_capacity(N);
    for n in 0..N {
        let rx = done_rx.clone();
        let ready = ready.clone();
        threads.push(
            mark::Builder::new(format!("tfp load worker {n}"))
                .stack_size(64 * 1024)
                .spawn(move || {
                    ready.wait();
                    let _ = rx.lock().map(|r| r.recv());
                })
                .unwrap(),
        );
    }
    ready.wait();
    let mut times = Vec::new();
    let mut listed = 0;
    for _ in 0..5 {
        let t0 = Instant::now();
        let out = tfp(&["--no-self"]);
        times.push(t0.elapsed());
        assert!(out.status.success());
        let text = stdout(&out);
        listed = own_block(&text)
            .iter()
            .filter(|l| l.starts_with("TID") && parse_tid(l).marker.starts_with("tfp load worker "))
            .count();
        assert_eq!(listed, N, "every marked thread listed");
    }
    times.sort();
    println!(
        "tfp listed {listed} marked threads (whole process run, all processes): median {:?}, min {:?}, max {:?}",
        times[times.len() / 2],
        times[0],
        times[times.len() - 1]
    );
    drop(done_tx);
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn a_registry_truncated_while_read_does_not_crash_tfp() {
    use std::io::Write;
    // A process of ours (any program) and a registry file under its name, held
    // locked as its owner would: the file's user (the reader's own, here; any user
    // when root runs tfp) may shrink it at any time.
    let mut owner = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = owner.id();
    let path = format!("/dev/shm/posixrt-mark-{pid}-{}", starttime(pid));
    let (slot, count, payload) = (256u32, 4096u32, 208u32);
    let total = 128 + u64::from(slot) * u64::from(count);
    let mut hdr = Vec::new();
    hdr.extend_from_slice(b"PRTREG\0\0");
    hdr.extend_from_slice(&1u32.to_ne_bytes());
    hdr.extend_from_slice(&128u32.to_ne_bytes());
    hdr.extend_from_slice(b"mark\0\0\0\0\0\0\0\0\0\0\0\0");
    hdr.extend_from_slice(&(pid as i32).to_ne_bytes());
    hdr.extend_from_slice(&0u32.to_ne_bytes());
    hdr.extend_from_slice(&starttime(pid).to_ne_bytes());
    for v in [slot, count, payload, count] {
        hdr.extend_from_slice(&v.to_ne_bytes());
    }
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    f.write_all(&hdr).unwrap();
    f.set_len(total).unwrap();
    let lock = std::fs::File::open(&path).unwrap();
    use std::os::fd::AsRawFd;
    // SAFETY: a plain flock on a descriptor this test owns.
    assert_eq!(
        unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let shrinker = {
        let stop = stop.clone();
        let f = f.try_clone().unwrap();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                f.set_len(128).unwrap();
                f.set_len(total).unwrap();
            }
        })
    };
    let p = pid.to_string();
    let mut crashes = Vec::new();
    for _ in 0..40 {
        let o = tfp(&["--no-self", "-p", &p]);
        if o.status.code().is_none() {
            crashes.push(o.status);
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    shrinker.join().unwrap();
    let _ = std::fs::remove_file(&path);
    let _ = owner.kill();
    let _ = owner.wait();
    assert!(crashes.is_empty(), "tfp killed by a signal: {crashes:?}");
}

#[test]
fn a_thread_id_is_not_taken_for_a_pid() {
    // /proc/<tid> exists for every thread, but a thread is not a process: its
    // registry is its process's, so `-p <tid>` would list nothing, silently.
    let (w, _stop) = parked_worker("tfp tid worker", b"");
    let tid = w.tid();
    assert_ne!(tid, me());
    let o = tfp(&["-p", &tid.to_string()]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains(&format!("{tid}")) && e.contains(&format!("process {}", me())),
        "{e}"
    );
}

#[test]
fn incompatible_registries_are_counted_in_json_and_verbose() {
    // A registry of another layout version under a live process's name: skipped,
    // and the count must reach a program reading --json (stdout) and the -v
    // summary, not only stderr. (With -p that process is an error: tfp_pid.rs.)
    let mut owner = Command::new("sleep").arg("60").spawn().unwrap();
    let reg = IncompatibleRegistry::of(owner.id());
    let json = tfp(&["--no-self", "--json"]);
    let verbose = tfp(&["--no-self", "-v"]);
    drop(reg);
    let _ = owner.kill();
    let _ = owner.wait();
    assert!(json.status.success(), "{json:?}");
    let doc = parse_json(&stdout(&json));
    assert!(doc["incompatible"].as_u64() >= Some(1), "{doc}");
    let text = stdout(&verbose);
    let summary = text.lines().last().unwrap_or_default();
    let n: u64 = summary
        .split(", ")
        .find_map(|f| f.strip_suffix(" incompatible"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no incompatible count in {summary:?}"));
    assert!(n >= 1, "{text}");
}

#[test]
fn tfp_keeps_its_process_name() {
    // tfp marks its main thread "Main thread TFP"; that must not rename the
    // process, or `pgrep tfp` / `pkill tfp` no longer find a running --watch.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tfp"));
    cmd.args(["--watch", "30", common::NO_MATCH])
        .stdout(std::process::Stdio::piped());
    signals::default_action(&mut cmd, &[libc::SIGTERM]);
    let mut w = cmd.spawn().unwrap();
    let mut first = String::new();
    let mut out = std::io::BufReader::new(w.stdout.take().unwrap());
    std::io::BufRead::read_line(&mut out, &mut first).unwrap(); // marked by now
    let comm = std::fs::read_to_string(format!("/proc/{}/comm", w.id())).unwrap();
    // SAFETY: signals the child we spawned and have not reaped.
    assert_eq!(unsafe { libc::kill(w.id() as i32, libc::SIGTERM) }, 0);
    assert!(w.wait().unwrap().success(), "tfp ends cleanly on SIGTERM");
    assert!(first.starts_with("tfp: every"), "{first:?}");
    assert_eq!(comm.trim_end(), "tfp");
}
