//! `tfp --json` and paths or kernel names that are not UTF-8: a JSON string
//! cannot hold such bytes, and `exe` / `kernel_name` show each of them as
//! U+FFFD, so that two executables (`t\xff\xfep`, `t\xfe\xffp`) read alike and
//! the path shown names no file. The text listing shows them as `\xHH`; the
//! JSON document must carry them too.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Stdio};

use serde_json::Value as Json;

fn bytes_of(j: &Json) -> Option<Vec<u8>> {
    j.as_array()?
        .iter()
        .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
        .collect()
}

#[test]
fn json_carries_the_bytes_of_a_path_and_kernel_name_that_are_not_utf8() {
    let d = std::env::temp_dir().join(format!("posixrt-tfp-json-bytes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let bin = d.join(OsStr::from_bytes(b"t\xff\xfep"));
    std::fs::copy(env!("CARGO_BIN_EXE_tfp"), &bin).unwrap();
    // tfp lists itself: its main thread is marked, and its kernel name is the
    // executable's file name.
    // A copy just written is busy (ETXTBSY) while a child forked meanwhile by
    // the other test's thread still holds its write descriptor: try again.
    let mut tries = 0;
    let child = loop {
        match Command::new(&bin)
            .arg("--json")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
        {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 500 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            r => break r.unwrap(),
        }
    };
    let pid = child.id() as i64;
    let o = child.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&d);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let j: Json = serde_json::from_slice(&o.stdout).expect("valid JSON");
    let me = j["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"].as_i64() == Some(pid))
        .unwrap_or_else(|| panic!("tfp {pid} not in its own listing: {j}"));
    assert_eq!(
        bytes_of(&me["exe_bytes"]).as_deref(),
        Some(bin.as_os_str().as_bytes()),
        "{me}"
    );
    let t = &me["threads"][0];
    assert_eq!(
        bytes_of(&t["kernel_name_bytes"]).as_deref(),
        Some(&b"t\xff\xfep"[..]),
        "{t}"
    );
    // The text fields stay as they were (lossy text).
    assert!(
        me["exe"].as_str().unwrap().ends_with("t\u{fffd}\u{fffd}p"),
        "{me}"
    );
}

#[test]
fn json_of_utf8_names_has_no_byte_fields() {
    // Every-day paths and names are plain JSON strings, nothing more.
    let o = Command::new(env!("CARGO_BIN_EXE_tfp"))
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let j: Json = serde_json::from_slice(&o.stdout).expect("valid JSON");
    for p in j["processes"].as_array().unwrap() {
        if p["exe"].as_str().is_some_and(|e| e.ends_with("/tfp")) {
            assert!(p.get("exe_bytes").is_none(), "{p}");
            for t in p["threads"].as_array().unwrap() {
                assert!(t.get("kernel_name_bytes").is_none(), "{t}");
            }
        }
    }
}
