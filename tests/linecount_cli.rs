//! Command-line behaviour of the `linecount` and `linecount_notify` examples
//! (listing 7.7): a count only on success, unknown options refused, `-` and `--`.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// Builds the example with this test's profile and returns its path.
fn example_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let bin = profile_dir.join("examples").join(name);
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "--example", name])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    if cfg!(feature = "tokio") {
        cmd.args(["--features", "tokio"]);
    }
    let status = cmd.status().expect("run cargo build --example");
    assert!(status.success(), "cargo build --example {name}");
    bin
}

fn run(bin: &PathBuf, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn linecount_prints_a_count_only_on_success() {
    let dir = std::env::temp_dir().join(format!("posixrt-linecount-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("three");
    std::fs::write(&file, "a\nb\nc\n").unwrap();
    let dash_x = dir.join("-x");
    std::fs::write(&dash_x, "one\n").unwrap();
    let file_s = file.to_str().unwrap();
    for name in ["linecount", "linecount_notify"] {
        let bin = example_bin(name);

        let out = run(&bin, &[file_s]);
        assert_eq!(out.status.code(), Some(0), "{name}: {out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "3", "{name}");

        // `-` is standard input (empty here), `--` ends the options
        let out = run(&bin, &["--", file_s, "-"]);
        assert_eq!(out.status.code(), Some(0), "{name}: {out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "3", "{name}");

        // a file named like an option, after `--`
        let out = Command::new(&bin)
            .args(["--", "-x"])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{name}: {out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1", "{name}");

        // a missing file, a directory: message on stderr, no count, exit 1
        for bad in ["/nonexistent/posixrt", dir.to_str().unwrap()] {
            let out = run(&bin, &[file_s, bad]);
            assert_eq!(out.status.code(), Some(1), "{name} {bad}: {out:?}");
            assert!(out.stdout.is_empty(), "{name} {bad}: {out:?}");
            assert!(
                String::from_utf8_lossy(&out.stderr).contains(bad),
                "{name} {bad}: {out:?}"
            );
        }

        // an unknown option is not taken for a file name
        let out = run(&bin, &["--bogus"]);
        assert_eq!(out.status.code(), Some(2), "{name}: {out:?}");
        assert!(out.stdout.is_empty(), "{name}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("unknown option"),
            "{name}: {out:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
