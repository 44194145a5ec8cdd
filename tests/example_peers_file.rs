//! The test file of `aio_peers` (256 MiB by default): nothing is left in the
//! temp dir however the run ends. It stayed there under its name for the
//! whole run, so Ctrl-C or a kill left it behind.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

#[allow(dead_code)] // the example uses all of it
#[path = "../examples/support/peers_file.rs"]
mod peers_file;

/// An empty directory of its own under the temp dir, for one test.
fn fresh_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("make the test's dir");
    d
}

fn entries(d: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(d)
        .expect("read the test's dir")
        .map(|e| e.expect("dir entry").path())
        .collect()
}

/// The byte the test file holds at `offset`.
fn pattern(offset: u64) -> u8 {
    ((offset % (1 << 20)) * 31 % 253) as u8
}

/// The file is gone from its directory once made, and reads back whole, by
/// its descriptor and by the descriptor's path (what the peers open).
#[test]
fn the_test_file_is_unlinked_and_readable() {
    let d = fresh_dir("posixrt-peers-file");
    let f = peers_file::unlinked_test_file(&d, "t", 2).expect("make the test file");
    assert_eq!(entries(&d), Vec::<PathBuf>::new(), "nothing in the dir");
    let m = f.metadata().expect("fstat");
    assert_eq!((m.len(), m.nlink()), (2 << 20, 0), "{m:?}");
    let mut b = [0u8; 64];
    let at = (1 << 20) + 4093;
    f.read_exact_at(&mut b, at).expect("read by the descriptor");
    let want: Vec<u8> = (at..at + 64).map(pattern).collect();
    assert_eq!(&b[..], &want[..]);
    let mut again = File::open(peers_file::fd_path(&f)).expect("open the descriptor's path");
    let mut all = Vec::new();
    again.read_to_end(&mut all).expect("read by the path");
    assert_eq!(all.len(), 2 << 20);
    assert!(all.iter().enumerate().all(|(i, &v)| v == pattern(i as u64)));
    drop((f, again));
    std::fs::remove_dir(&d).expect("the dir is empty");
}

/// A file that cannot be made is named with its errno as posixrt names it,
/// not Rust's "(os error N)" (/proc takes no new file, even from root).
#[test]
fn a_test_file_error_names_the_errno() {
    let e = peers_file::unlinked_test_file(Path::new("/proc"), "posixrt-peers-x", 1)
        .expect_err("no file in /proc");
    assert!(e.starts_with("/proc/posixrt-peers-x: "), "{e}");
    assert!(!e.contains("(os error"), "{e}");
    assert!(e.contains("(ENOENT 2)") || e.contains("(EACCES 13)"), "{e}");
}

/// `aio_peers` killed while it runs leaves its temp dir empty (the run is a
/// long one, of `pread` only, killed once its test file is open).
#[cfg(feature = "peers")]
#[test]
fn aio_peers_killed_leaves_no_file() {
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let bin = profile_dir.join("examples").join("aio_peers");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "--example", "aio_peers", "--features", "peers"])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    assert!(cmd.status().expect("run cargo build").success());
    let d = fresh_dir("posixrt-peers-kill");
    let mut child = Command::new(&bin)
        .args(["--only", "pread", "--file-size-mb", "4"])
        .args([
            "--rounds",
            "99",
            "--ops",
            "1000000",
            "--qd32-ops",
            "10000000",
        ])
        .env("TMPDIR", &d)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run aio_peers");
    let fds = PathBuf::from(format!("/proc/{}/fd", child.id()));
    // Its test file open (read to its end: the rounds run), or its end.
    let opened = (0..3000).any(|_| {
        let open = std::fs::read_dir(&fds)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| std::fs::read_link(e.path()).is_ok_and(|t| t.starts_with(&d)));
        open || {
            std::thread::sleep(std::time::Duration::from_millis(10));
            false
        }
    });
    child.kill().expect("kill aio_peers");
    let status = child.wait().expect("wait for aio_peers");
    let left = entries(&d);
    let _ = std::fs::remove_dir_all(&d);
    assert!(opened, "aio_peers opened no test file: {status:?}");
    assert_eq!(left, Vec::<PathBuf>::new(), "left behind in TMPDIR");
}
