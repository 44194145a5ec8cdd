//! The `rtstat` command line: `--json` is valid JSON whatever an object's name holds,
//! and a bad pid is reported plainly.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use posixrt::sync::{self, NormalMutex, Tracking};

mod common;

/// Tracking is one switch for the whole process: the tests that switch it on and
/// off take turns (one switching it off would stop the publishing that another
/// waits for).
static TRACKING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn tracking() -> std::sync::MutexGuard<'static, ()> {
    TRACKING.lock().unwrap_or_else(|p| p.into_inner())
}

fn rtstat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtstat"))
        .args(args)
        .output()
        .unwrap()
}

/// A tracked mutex named `name` (not locked).
fn named_mutex(name: &str) -> NormalMutex<u32> {
    let m = NormalMutex::new(0u32);
    // SAFETY: the raw lock is only named, not locked or moved.
    unsafe { m.raw() }.set_name(name);
    m
}

/// The `pid PID: ...` header line of process `pid` in rtstat's table `text`.
fn header_of(text: &str, pid: u32) -> &str {
    text.lines()
        .find(|l| l.starts_with(&format!("pid {pid}:")))
        .unwrap_or_else(|| panic!("no header: {}", &text[..text.len().min(500)]))
}

#[test]
fn json_is_valid_whatever_a_name_holds() {
    let _t = tracking();
    sync::set_tracking(Tracking::Counts);
    // Short enough for the registry's name field (names are cut to fit).
    let name = "q\"b\\s/\u{1}\u{1b}\n\t\u{7f}é";
    let m = named_mutex(name);
    *m.lock() += 1;
    let me = std::process::id().to_string();
    let t0 = Instant::now();
    loop {
        let o = rtstat(&["--json", &me]);
        // The registry is published periodically: it may not exist yet.
        if !o.status.success() {
            assert!(t0.elapsed() < Duration::from_secs(10), "{o:?}");
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        let text = String::from_utf8(o.stdout).unwrap();
        let j: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("invalid JSON ({e}): {text}"));
        assert_eq!(j["pid"].as_u64(), Some(u64::from(std::process::id())));
        let found = j["objects"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["name"].as_str() == Some(name));
        if found {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "never listed: {text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    sync::set_tracking(Tracking::Off);
}

#[test]
fn a_negative_pid_is_a_bad_pid_not_an_option() {
    let o = rtstat(&["-1"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("not a process id"), "{e}");
    assert!(!e.contains("-- -1"), "{e}");
}

#[test]
fn table_escapes_control_and_invisible_characters_in_names() {
    let _t = tracking();
    sync::set_tracking(Tracking::Counts);
    // A name that would end the table row and drive the reader's terminal, then
    // bidi and zero-width characters that would make it pass for another name.
    let name = "ev\nFAKE\x1b[2J\u{202e}kcol\u{2066}\u{200b}\u{feff}";
    let m = named_mutex(name);
    *m.lock() += 1;
    let me = std::process::id().to_string();
    let t0 = Instant::now();
    let text = loop {
        let o = rtstat(&[&me]);
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        // The object's row, escaped or not (not "ev" alone: the header line
        // says "published every 50 ms").
        if o.status.success() && text.contains("FAKE") {
            break text;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "never listed: {o:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    sync::set_tracking(Tracking::Off);
    assert!(!text.contains('\x1b'), "raw ESC in the table: {text:?}");
    assert!(
        !text.lines().any(|l| l.starts_with("FAKE")),
        "a name split a row: {text}"
    );
    assert!(
        text.contains("ev\\nFAKE\\u{1b}[2J\\u{202e}kcol\\u{2066}\\u{200b}\\u{feff}"),
        "{text}"
    );
    assert!(
        !text.contains(['\u{202e}', '\u{2066}', '\u{200b}', '\u{feff}']),
        "{text:?}"
    );
}

/// A live process (`sleep 60`) whose sync registry a newer posixrt wrote (layout
/// version 2), owned by this user and held locked as its owner would; both go
/// when dropped.
struct IncompatibleRegistry {
    owner: std::process::Child,
    path: String,
    _lock: std::fs::File,
}

impl IncompatibleRegistry {
    fn new() -> IncompatibleRegistry {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let owner = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let pid = owner.id();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let start: u64 = stat[stat.rfind(')').unwrap() + 2..]
            .split(' ')
            .nth(19)
            .unwrap()
            .parse()
            .unwrap();
        let path = format!("/dev/shm/posixrt-sync-{pid}-{start}");
        let mut hdr = Vec::new();
        hdr.extend_from_slice(b"PRTREG\0\0");
        hdr.extend_from_slice(&2u32.to_ne_bytes());
        hdr.extend_from_slice(&128u32.to_ne_bytes());
        hdr.extend_from_slice(b"sync\0\0\0\0\0\0\0\0\0\0\0\0");
        hdr.extend_from_slice(&(pid as i32).to_ne_bytes());
        hdr.extend_from_slice(&0u32.to_ne_bytes());
        hdr.extend_from_slice(&start.to_ne_bytes());
        hdr.resize(4096, 0);
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(&hdr).unwrap();
        // SAFETY: a plain flock on a descriptor this test owns.
        assert_eq!(
            unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
            0
        );
        IncompatibleRegistry {
            owner,
            path,
            _lock: f,
        }
    }

    fn pid(&self) -> u32 {
        self.owner.id()
    }
}

impl Drop for IncompatibleRegistry {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = self.owner.kill();
        let _ = self.owner.wait();
    }
}

#[test]
fn a_registry_of_another_layout_version_is_not_called_a_permission_problem() {
    let reg = IncompatibleRegistry::new();
    let o = rtstat(&[&reg.pid().to_string()]);
    drop(reg);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(!e.contains("not readable by this user"), "{e}");
    assert!(e.contains("layout"), "{e}");
}

/// Without a pid, the registries skipped (another layout version here; another
/// user's alike) are said on stderr with `--json` as without: the JSON array on
/// stdout has no room for the count, and an empty `[]` alone would read as "no
/// process tracks anything".
#[test]
fn json_without_a_pid_still_says_what_it_skipped() {
    let reg = IncompatibleRegistry::new();
    let json = rtstat(&["--json"]);
    let table = rtstat(&[]);
    drop(reg);
    for o in [&json, &table] {
        assert!(o.status.success(), "{o:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains("of another layout version"), "{o:?}");
    }
    let text = String::from_utf8(json.stdout).unwrap();
    let j: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("invalid JSON ({e}): {text}"));
    assert!(j.is_array(), "{text}");
}

/// `--help` is enough to start: it says what the process must do to be seen,
/// what --json prints with and without a pid, examples and the exit statuses.
#[test]
fn help_has_examples_and_exit_statuses() {
    let o = rtstat(&["--help"]);
    assert!(o.status.success(), "{o:?}");
    let h = String::from_utf8(o.stdout).unwrap();
    for want in [
        "set_tracking",
        "an array",
        "Examples:\n  rtstat ",
        "rtstat --json ",
        "Exit status:\n  0 ",
        "  1 ",
        "  2 ",
    ] {
        assert!(h.contains(want), "{want:?} missing from:\n{h}");
    }
}

/// Standard output that cannot be written (a full disk: /dev/full) is an error,
/// exit 1 with one line naming it, not a "failed printing to stdout" panic.
#[test]
fn an_unwritable_stdout_is_an_error_not_a_panic() {
    for args in [&[][..], &["--json"]] {
        let Some(o) = common::run_into_dev_full(env!("CARGO_BIN_EXE_rtstat"), args) else {
            return; // no /dev/full on this system: nothing to write to
        };
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert!(!e.contains("panicked"), "{args:?}: {e}");
        let last = e.lines().last().unwrap_or("");
        assert!(
            last.starts_with("rtstat: standard output: ") && last.contains("No space left"),
            "{args:?}: {e}"
        );
    }
}

/// A thread id is not taken for a pid: its process's registry is under the
/// process's pid, so "no sync registry" would send the user the wrong way.
#[test]
fn a_thread_id_is_not_taken_for_a_pid() {
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let t = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        tid_tx.send(unsafe { libc::gettid() }).unwrap();
        let _ = stop_rx.recv();
    });
    let tid = tid_rx.recv().unwrap();
    let me = std::process::id();
    assert_ne!(tid as u32, me);
    let o = rtstat(&[&tid.to_string()]);
    drop(stop_tx);
    t.join().unwrap();
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains(&format!(
            "{tid} is a thread of process {me} (use rtstat {me})"
        )),
        "{e}"
    );
}

/// Run by a user who can read no registry (uid 65534, as root; a registry of
/// another layout version makes sure one is skipped), rtstat's table must not
/// say that no process publishes sync objects while it counts the registries it
/// skipped on standard error: processes do publish.
#[test]
fn skipped_registries_are_not_called_tracking_off() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skip: needs root to run rtstat as another user");
        return;
    }
    let reg = IncompatibleRegistry::new();
    let exe = common::WorldExecutable::of(env!("CARGO_BIN_EXE_rtstat"));
    let mut cmd = Command::new(&exe.bin);
    common::as_nobody(&mut cmd);
    let o = common::output_when_free(&mut cmd);
    drop(reg);
    assert!(o.status.success(), "{o:?}");
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    // (The registry of another layout version is counted as such; root's own
    // registries, if any, as not readable.)
    assert!(err.contains("of another layout version"), "{err}");
    if !out.starts_with("pid ") {
        assert!(!out.contains("tracking off"), "{out}");
        assert!(out.contains("standard error"), "{out}");
    }
}

/// A process with a second sync registry file under its pid (a writer in
/// another pid namespace sharing /dev/shm, with the same pid and another
/// start time, holding its lock): rtstat without a pid lists the process
/// once, and counts the other file as not readable, as the scan of every
/// registry (and `tfp`) counts it, instead of losing it behind the pid it
/// shares.
#[test]
fn a_second_registry_file_under_a_listed_pid_is_counted_not_lost() {
    use std::os::fd::AsRawFd;
    let _t = tracking();
    sync::set_tracking(Tracking::Counts);
    let m = named_mutex("two files");
    *m.lock() += 1;
    let me = std::process::id();
    let t0 = Instant::now();
    while !rtstat(&[&me.to_string()]).status.success() {
        assert!(t0.elapsed() < Duration::from_secs(10), "never published");
        std::thread::sleep(Duration::from_millis(20));
    }
    let other = format!("/dev/shm/posixrt-sync-{me}-{}", common::starttime(me) + 1);
    let f = std::fs::File::create(&other).unwrap();
    // SAFETY: a plain flock on a descriptor this test owns.
    assert_eq!(
        unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    let o = rtstat(&["--json"]);
    drop(f);
    let _ = std::fs::remove_file(&other);
    sync::set_tracking(Tracking::Off);
    assert!(o.status.success(), "{o:?}");
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mine = j
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["pid"].as_u64() == Some(u64::from(me)))
        .count();
    assert_eq!(mine, 1, "{j}");
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("not readable"), "{e}");
}

/// Once the process switches tracking off, rtstat says so before its objects,
/// in the table and in the JSON, with how long ago: the registry keeps the
/// state of the switch-off (a lock shown held may have been released since,
/// an object listed dropped), and a user hunting a missed deadline must not
/// take it for the current state. Before, the listing looked as current as
/// any other, the dropped object included.
#[test]
fn stale_state_after_tracking_went_off_is_marked_as_such() {
    let _t = tracking();
    sync::set_tracking(Tracking::Counts);
    let name = "rtstat-off-marked";
    let m = named_mutex(name);
    let held = m.lock();
    sync::publish().expect("publish");
    sync::set_tracking(Tracking::Off);
    drop(held);
    drop(m);
    let me = std::process::id().to_string();
    let table = rtstat(&[&me]);
    let json = rtstat(&["--json", &me]);
    let text = String::from_utf8_lossy(&table.stdout).into_owned();
    assert!(table.status.success(), "{table:?}");
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("TRACKING OFF") && first.contains(" ago"),
        "no warning first: {text}"
    );
    assert!(
        text.contains("not the current state"),
        "the warning does not say what it means: {text}"
    );
    let j: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(j["tracking"].as_str(), Some("off"), "{j}");
    assert_eq!(j["stale"].as_bool(), Some(true), "{j}");
    assert!(j["tracking_off_since"].as_f64().is_some(), "{j}");
    // The mutex shown is the state of the switch-off, held.
    let obj = j["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .find(|o| o["name"].as_str() == Some(name))
        .cloned();
    assert_eq!(
        obj.map(|o| o["locked"].clone()),
        Some(serde_json::json!(true)),
        "{j}"
    );
    // Back on: the next publish says so, and no warning is left.
    sync::set_tracking(Tracking::Counts);
    sync::publish().expect("publish");
    let again = rtstat(&["--json", &me]);
    sync::set_tracking(Tracking::Off);
    let j: serde_json::Value = serde_json::from_slice(&again.stdout).expect("JSON");
    assert_eq!(
        (j["tracking"].as_str(), j["stale"].as_bool()),
        (Some("counts"), Some(false)),
        "{j}"
    );
    assert!(
        !j["objects"]
            .as_array()
            .expect("objects")
            .iter()
            .any(|o| o["name"].as_str() == Some(name)),
        "the dropped mutex is still listed: {j}"
    );
}

/// At the counts level no wait or hold time is measured (`Tracking::Timing`
/// measures them): rtstat's table must say so, not show a lock held for 30 ms
/// as held for 0.000 ms. Before, every time column read 0.000 and nothing in
/// the table told the level, so a user hunting a long hold was sent away.
#[test]
fn counts_level_times_are_not_shown_as_zero() {
    let _t = tracking();
    sync::set_tracking(Tracking::Counts);
    let name = "rtstat-counts-times";
    let m = named_mutex(name);
    {
        let mut g = m.lock();
        *g += 1;
        std::thread::sleep(Duration::from_millis(30));
    }
    sync::publish().expect("publish");
    let me = std::process::id();
    let o = rtstat(&[&me.to_string()]);
    sync::set_tracking(Tracking::Off);
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let row = text
        .lines()
        .find(|l| l.contains(name))
        .unwrap_or_else(|| panic!("{name} not listed: {text}"));
    assert!(
        !row.contains("0.000"),
        "unmeasured times shown as 0: {text}"
    );
    let header = header_of(&text, me);
    assert!(
        header.contains("counts") && header.contains("not measured"),
        "the header does not tell the level: {text}"
    );
}

/// A name longer than the NAME column (names keep up to 32 bytes) must not push
/// the rest of its row out from under the header: every row of the table is
/// as wide as the header, each column under its title. Before, the columns
/// had fixed widths, and a 28-character name shifted STATE, WAITERS and every
/// figure of its row 12 columns to the right.
#[test]
fn a_long_name_keeps_the_columns_under_their_titles() {
    let _t = tracking();
    sync::set_tracking(Tracking::Counts);
    let name = "rtstat-a-rather-long-name-28";
    let m = named_mutex(name);
    *m.lock() += 1;
    let short = NormalMutex::new(0u32);
    // SAFETY: as above.
    unsafe { short.raw() }.set_name("rtstat-short");
    *short.lock() += 1;
    sync::publish().expect("publish");
    let me = std::process::id();
    let o = rtstat(&[&me.to_string()]);
    sync::set_tracking(Tracking::Off);
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with(&format!("pid {me}:")));
    lines.next();
    let header = lines.next().unwrap_or_else(|| panic!("no header: {text}"));
    let state_at = header.find("STATE").expect("STATE title");
    for row in lines.take_while(|l| l.starts_with("0x")) {
        assert_eq!(
            row.chars().count(),
            header.chars().count(),
            "a row out of line with the header:\n{header}\n{row}"
        );
        if row.contains(name) {
            assert_eq!(&row[state_at..state_at + 4], "free", "\n{header}\n{row}");
        }
    }
}

/// More tracked objects than a registry holds (1024): the process publishes
/// what fits, and rtstat must say that the listing stops there (text and
/// JSON), not show 1024 objects as if they were all. Before, nothing told a
/// full registry from a complete one.
#[test]
fn a_full_registry_is_not_shown_as_complete() {
    let _t = tracking();
    sync::set_tracking(Tracking::Counts);
    let many: Vec<NormalMutex<u32>> = (0..1100).map(|_| NormalMutex::new(0)).collect();
    for m in &many {
        *m.lock() += 1;
    }
    // OutOfResources: the objects past the registry's slots are not published.
    assert!(
        sync::publish().is_err(),
        "1100 objects fit in the registry?"
    );
    let me = std::process::id();
    let table = rtstat(&[&me.to_string()]);
    let json = rtstat(&["--json", &me.to_string()]);
    sync::set_tracking(Tracking::Off);
    drop(many);
    let text = String::from_utf8_lossy(&table.stdout).into_owned();
    assert!(table.status.success(), "{table:?}");
    let header = header_of(&text, me);
    assert!(
        header.contains("registry is full"),
        "a full registry shown as complete: {header}"
    );
    let j: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(j["registry_full"].as_bool(), Some(true), "{}", j["pid"]);
    // The publisher says how many did not fit (1100 of ours, and whatever
    // other tests of this process track now, in 1024 slots): a reader counting
    // the slots it read could miss one being rewritten and call it complete.
    let left_out = j["unpublished"].as_u64().expect("unpublished");
    assert!(left_out >= 1100 - 1024, "{left_out}");
    assert!(header.contains("more objects are not listed"), "{header}");
}
