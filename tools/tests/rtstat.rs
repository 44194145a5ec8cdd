//! The `rtstat` command line: `--json` is valid JSON whatever an object's name holds,
//! and a bad pid is reported plainly.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use posixrt::sync::{self, NormalMutex, Tracking};

fn rtstat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtstat"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn json_is_valid_whatever_a_name_holds() {
    sync::set_tracking(Tracking::Counts);
    // Short enough for the registry's name field (names are cut to fit).
    let name = "q\"b\\s/\u{1}\u{1b}\n\t\u{7f}é";
    let m = NormalMutex::new(0u32);
    // SAFETY: the raw lock is only named, not locked or moved.
    unsafe { m.raw() }.set_name(name);
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
fn table_escapes_control_characters_in_names() {
    sync::set_tracking(Tracking::Counts);
    // A name that would end the table row and drive the reader's terminal.
    let name = "ev\nFAKE\x1b[2J";
    let m = NormalMutex::new(0u32);
    // SAFETY: the raw lock is only named, not locked or moved.
    unsafe { m.raw() }.set_name(name);
    *m.lock() += 1;
    let me = std::process::id().to_string();
    let t0 = Instant::now();
    let text = loop {
        let o = rtstat(&[&me]);
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        if o.status.success() && text.contains("ev") {
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
    assert!(text.contains("ev\\nFAKE\\u{1b}[2J"), "{text}");
}
