//! `tfp -p PID` of a process whose marks cannot be listed (its registry another
//! user's, of another posixrt release, or absent) is an error, exit 1 with the
//! reason and a hint on standard error, as `rtstat PID` is: an empty listing with
//! exit 0 would read as "that process has no marked thread" when tfp could not see.

use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;

use posixrt::mark;

mod common;
use common::{me, stdout, tfp, wait_registry, IncompatibleRegistry, WorldExecutable};

/// Exit 1, nothing on stdout, and one line on stderr that holds `says` and a hint.
fn assert_pid_error(o: &Output, says: &str) {
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.starts_with("tfp: ") && e.contains(says), "{e}");
    assert!(e.contains("; hint: "), "{e}");
}

#[test]
fn a_process_without_marks_is_an_error() {
    let mut owner = Command::new("sleep").arg("60").spawn().unwrap();
    let p = owner.id().to_string();
    let o = tfp(&["--no-self", "-p", &p]);
    let j = tfp(&["--json", "-p", &p]);
    let _ = owner.kill();
    let _ = owner.wait();
    assert_pid_error(&o, &format!("process {p} has no marked thread"));
    assert_pid_error(&j, &format!("process {p} has no marked thread"));
}

#[test]
fn a_pid_given_twice_is_reported_once() {
    let mut owner = Command::new("sleep").arg("60").spawn().unwrap();
    let p = owner.id().to_string();
    let o = tfp(&["--no-self", "-p", &p, "-p", &p]);
    let _ = owner.kill();
    let _ = owner.wait();
    assert_pid_error(&o, &format!("process {p} has no marked thread"));
}

#[test]
fn a_registry_of_another_layout_is_an_error() {
    let mut owner = Command::new("sleep").arg("60").spawn().unwrap();
    let p = owner.id().to_string();
    let reg = IncompatibleRegistry::of(owner.id());
    let o = tfp(&["--no-self", "-p", &p]);
    drop(reg);
    let _ = owner.kill();
    let _ = owner.wait();
    assert_pid_error(&o, &format!("mark registry of process {p} has a layout"));
}

#[test]
fn an_unreadable_registry_is_an_error() {
    // SAFETY: geteuid has no preconditions.
    let o = if unsafe { libc::geteuid() } == 0 {
        // As `nobody`, this process's root-owned 0600 registry cannot be opened.
        let (tx, rx) = mpsc::channel::<()>();
        let (ready_tx, ready_rx) = mpsc::channel::<()>();
        let w = mark::spawn_named("tfp -p unreadable worker", move || {
            ready_tx.send(()).unwrap();
            let _ = rx.recv();
        })
        .unwrap();
        ready_rx.recv().unwrap();
        let copy = WorldExecutable::of(env!("CARGO_BIN_EXE_tfp"));
        let o = common::output_when_free(
            Command::new(&copy.bin)
                .args(["--no-self", "-p", &me().to_string()])
                .uid(65534)
                .gid(65534),
        );
        drop(tx);
        w.join().unwrap();
        (o, me())
    } else {
        // Without root: a helper tfp's own registry, mode 0000.
        use std::os::unix::fs::PermissionsExt;
        let mut helper = Command::new(env!("CARGO_BIN_EXE_tfp"))
            .args(["--watch", "30", common::NO_MATCH])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = helper.id() as i32;
        let file = wait_registry(pid);
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
        let o = tfp(&["--no-self", "-p", &pid.to_string()]);
        let _ = helper.kill();
        let _ = helper.wait();
        let _ = std::fs::remove_file(&file);
        (o, pid)
    };
    let (o, pid) = o;
    assert_pid_error(
        &o,
        &format!("mark registry of process {pid} is not readable"),
    );
}

#[test]
fn a_readable_pid_next_to_an_unlisted_one_is_still_an_error() {
    // Every -p must be listed: one that cannot be is not hidden by one that can.
    let (tx, rx) = mpsc::channel::<()>();
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let w = mark::spawn_named("tfp -p pair worker", move || {
        ready_tx.send(()).unwrap();
        let _ = rx.recv();
    })
    .unwrap();
    ready_rx.recv().unwrap();
    let mut owner = Command::new("sleep").arg("60").spawn().unwrap();
    let p = owner.id().to_string();
    let o = tfp(&["--no-self", "-p", &me().to_string(), "-p", &p]);
    let alone = tfp(&["--no-self", "-p", &me().to_string()]);
    let _ = owner.kill();
    let _ = owner.wait();
    drop(tx);
    w.join().unwrap();
    assert_pid_error(&o, &format!("process {p} has no marked thread"));
    assert!(alone.status.success(), "{alone:?}");
    assert!(stdout(&alone).contains("tfp -p pair worker"), "{alone:?}");
}

#[test]
fn help_says_an_unlisted_pid_is_an_error() {
    let h = stdout(&tfp(&["--help"]));
    let exit1 = h
        .lines()
        .find(|l| l.trim_start().starts_with("1  error:"))
        .unwrap_or_else(|| panic!("no exit status 1 in:\n{h}"));
    assert!(
        exit1.contains("registry cannot be read") && exit1.contains("no marked thread"),
        "{exit1}"
    );
}

/// With several -p, as with one, the skipped counts are those of the -p processes,
/// not of every registry in /dev/shm (here another process's, of another layout).
#[test]
fn skipped_counts_with_several_pids_are_theirs_alone() {
    use serde_json::Value;
    let mut other = Command::new("sleep").arg("60").spawn().unwrap();
    let reg = IncompatibleRegistry::of(other.id());
    // A second marked process: a tfp --watch marks its own main thread.
    let mut helper = Command::new(env!("CARGO_BIN_EXE_tfp"))
        .args(["--watch", "30", common::NO_MATCH])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let hp = helper.id() as i32;
    wait_registry(hp);
    let t0 = std::time::Instant::now();
    while mark::snapshot_pid(hp).unwrap().process(hp).is_none() {
        assert!(t0.elapsed().as_secs() < 20, "tfp {hp} never marked itself");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (tx, rx) = mpsc::channel::<()>();
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let w = mark::spawn_named("tfp -p counts worker", move || {
        ready_tx.send(()).unwrap();
        let _ = rx.recv();
    })
    .unwrap();
    ready_rx.recv().unwrap();
    let (me, hp) = (me().to_string(), hp.to_string());
    let one = tfp(&["--no-self", "--json", "-p", &me]);
    let two = tfp(&["--no-self", "--json", "-p", &me, "-p", &hp]);
    drop(tx);
    w.join().unwrap();
    let _ = helper.kill();
    let _ = helper.wait();
    drop(reg);
    let _ = other.kill();
    let _ = other.wait();
    for (o, pids) in [(one, vec![me.clone()]), (two, vec![me, hp])] {
        assert!(o.status.success(), "{o:?}");
        let j: Value = serde_json::from_str(&stdout(&o)).unwrap();
        let mut listed: Vec<String> = j["processes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["pid"].to_string())
            .collect();
        listed.sort();
        let mut pids = pids;
        pids.sort();
        assert_eq!(listed, pids, "{j}");
        assert_eq!(j["incompatible"], 0, "{pids:?}: {j}");
        assert_eq!(j["unreadable"], 0, "{pids:?}: {j}");
    }
}
