//! Command-line behaviour of the `linecount` and `linecount_notify` examples
//! (listing 7.7): the count of what could be read (failures reported, exit 1),
//! unknown options refused, `-` and `--`.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

#[path = "common/example_bin.rs"]
mod example_bin;
use example_bin::example_bin;

fn run(bin: &PathBuf, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn linecount_counts_what_it_can_read_and_reports_the_rest() {
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

        // a missing file, a directory: as `cat FILE... | wc -l`, the readable
        // file is counted, each failure is one plain line on stderr, exit 1
        let dir_s = dir.to_str().unwrap();
        for (bad, why) in [
            ("/nonexistent/posixrt", "No such file or directory"),
            (dir_s, "Is a directory"),
        ] {
            let out = run(&bin, &[file_s, bad]);
            assert_eq!(out.status.code(), Some(1), "{name} {bad}: {out:?}");
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "3", "{name}");
            assert_eq!(
                String::from_utf8_lossy(&out.stderr).trim(),
                format!("{name}: {bad}: {why}"),
                "{name} {bad}"
            );
        }

        // an unknown option is not taken for a file name
        let out = run(&bin, &["--bogus"]);
        assert_eq!(out.status.code(), Some(2), "{name}: {out:?}");
        assert!(out.stdout.is_empty(), "{name}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("unknown option"), "{name}: {out:?}");
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `-j` given twice: the last one counts, as every other example takes the last
/// value of a repeated option (the second `-j` was called an unknown option).
#[test]
fn linecount_takes_the_last_of_repeated_j() {
    let bin = example_bin("linecount");
    let out = run(
        &bin,
        &["-j", "2", "-j", "1", "/etc/hostname", "/etc/hostname"],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let one = run(&bin, &["/etc/hostname"]);
    let n: u64 = String::from_utf8_lossy(&one.stdout).trim().parse().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        (2 * n).to_string()
    );
    // a bad value is still refused, wherever it is
    let out = run(&bin, &["-j", "2", "-j", "0", "/etc/hostname"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("-j needs a number from 1 to 64"),
        "{out:?}"
    );
}
