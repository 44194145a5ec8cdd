//! A registry file cut short (truncated by another process: an admin's
//! `truncate -s 0`, a clean-up script) is counted as unreadable, as another
//! user's registry is: the hints of `tfp` and `rtstat` must name that cause
//! too, not only "run as root or as their user", which would not help.

use std::process::{Child, Command};

mod common;
use common::{starttime, tfp};

/// A live process (`sleep`) and a registry file of `kind` under its name, cut
/// short to nothing, held locked as its owner would hold it; both gone on drop.
struct CutShort {
    owner: Child,
    path: String,
    _lock: std::fs::File,
}

impl CutShort {
    fn of(kind: &str) -> CutShort {
        use std::os::fd::AsRawFd;
        let owner = Command::new("sleep").arg("60").spawn().unwrap();
        let pid = owner.id();
        let path = format!("/dev/shm/posixrt-{kind}-{pid}-{}", starttime(pid));
        std::fs::write(&path, b"").unwrap();
        let lock = std::fs::File::open(&path).unwrap();
        // SAFETY: a plain flock on a descriptor this test owns.
        assert_eq!(
            unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
            0
        );
        CutShort {
            owner,
            path,
            _lock: lock,
        }
    }

    fn pid(&self) -> String {
        self.owner.id().to_string()
    }
}

impl Drop for CutShort {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = self.owner.kill();
        let _ = self.owner.wait();
    }
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The hint names both causes: another user's file, and a file cut short
/// that its owner repairs.
fn names_both_causes(e: &str) {
    assert!(e.contains("as root"), "{e}");
    assert!(
        e.contains("cut short") && e.contains("truncated") && e.contains("repairs"),
        "{e}"
    );
}

#[test]
fn tfp_says_an_unreadable_registry_may_be_cut_short() {
    let cut = CutShort::of("mark");
    let all = tfp(&["--no-self", "--json"]);
    let one = tfp(&["--no-self", "-p", &cut.pid()]);
    drop(cut);
    assert!(all.status.success(), "{all:?}");
    let j: serde_json::Value = serde_json::from_slice(&all.stdout).unwrap();
    assert!(j["unreadable"].as_u64() >= Some(1), "{j}");
    names_both_causes(&stderr(&all));
    assert_eq!(one.status.code(), Some(1), "{one:?}");
    names_both_causes(&stderr(&one));
}

#[test]
fn rtstat_says_an_unreadable_registry_may_be_cut_short() {
    let cut = CutShort::of("sync");
    let o = Command::new(env!("CARGO_BIN_EXE_rtstat"))
        .arg("--json")
        .output()
        .unwrap();
    drop(cut);
    assert!(o.status.success(), "{o:?}");
    let e = stderr(&o);
    assert!(e.contains("not readable"), "{e}");
    names_both_causes(&e);
}
