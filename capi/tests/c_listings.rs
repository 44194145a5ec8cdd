//! The seed's listings 7.7 and 7.8 (`tests/seed/`) run under
//! `LD_PRELOAD=libposixrt.so` and count as `wc` does, and the library as
//! `capi/install.sh` installs it (pkg-config, the static library).

use std::path::{Path, PathBuf};
use std::process::Command;

mod c_prog;
use c_prog::*;

// --- the seed's listings ---------------------------------------------------

fn seed_src(name: &str) -> PathBuf {
    Path::new(CRATE).join("tests/seed").join(name)
}

/// Files to count, with their `wc -l` total.
fn count_inputs() -> (Vec<String>, u64) {
    let mut files: Vec<String> = Vec::new();
    for f in [
        "Cargo.toml",
        "src/aio.rs",
        "tests/c/aio_semantics.c",
        "tests/seed/listing_7_7.c",
    ] {
        files.push(Path::new(CRATE).join(f).display().to_string());
    }
    // A file larger than one BUFSIZ read, and one without a final newline.
    let big = scratch().join("big.txt");
    let mut s = String::new();
    for i in 0..5000 {
        s.push_str(&format!("line {i}\n"));
    }
    s.push_str("no newline at the end");
    std::fs::write(&big, s).expect("write input");
    files.push(big.display().to_string());
    cleanup_later();
    let o = Command::new("wc")
        .arg("-l")
        .args(&files)
        .output()
        .expect("run wc -l");
    let text = String::from_utf8_lossy(&o.stdout);
    let total = text
        .lines()
        .last()
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("wc -l total");
    (files, total)
}

fn listing(name: &str) {
    let exe = build(
        &seed_src(name),
        Link::Preloaded,
        &["-std=gnu99", "-w", "-O1"],
    );
    let (files, total) = count_inputs();
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    for &backend in engines() {
        let o = run(
            &exe,
            Link::Preloaded,
            &args,
            &[("POSIXRT_AIO_BACKEND", backend), ("POSIXRT_AIO_DEBUG", "1")],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{name} {backend}: {:?} {err}", o.status);
        assert!(
            err.contains(&format!("libposixrt: engine: {backend} ")),
            "{name} did not run on libposixrt/{backend}: {err}"
        );
        let got: u64 = String::from_utf8_lossy(&o.stdout)
            .trim()
            .parse()
            .expect("a count");
        assert_eq!(got, total, "{name} {backend} vs wc -l");
    }
}

#[test]
fn listing_7_7_preloaded_counts_like_wc() {
    listing("listing_7_7.c");
}

#[test]
fn listing_7_8_preloaded_counts_like_wc() {
    listing("listing_7_8.c");
}

/// The listings are the seed's text: equal to it once whitespace is ignored and
/// the en dash the extraction made of `-` is undone. Checked where the seed
/// documents are present (`POSIXRT_SEEDS`, or a `shared/seeds` directory next
/// to the checkout).
#[test]
fn listings_are_the_seed_text() {
    let seed = std::env::var_os("POSIXRT_SEEDS")
        .map(PathBuf::from)
        .into_iter()
        .chain(
            Path::new(CRATE)
                .ancestors()
                .skip(1)
                .take(4)
                .map(|a| a.join("shared/seeds")),
        )
        .map(|d| d.join("001_418bc3431c88a558.txt"))
        .find(|p| p.exists());
    let Some(seed) = seed else {
        eprintln!("skipped: the seed documents are not next to this checkout (set POSIXRT_SEEDS)");
        return;
    };
    let text = std::fs::read_to_string(&seed).expect("read the seed");
    let squash = |s: &str| -> String {
        s.replace(" – ", " - ")
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect()
    };
    let seed_all = squash(&text);
    for name in ["listing_7_7.c", "listing_7_8.c"] {
        let ours = squash(&std::fs::read_to_string(seed_src(name)).expect("read listing"));
        assert!(ours.len() > 1000);
        assert!(
            seed_all.contains(&ours),
            "{name} differs from the seed text beyond whitespace"
        );
    }
}

// --- install, pkg-config, static library -------------------------------------

/// `capi/install.sh` into a scratch prefix, run from a copy of the sources
/// whose own `target/` is empty, so that it must find the build through
/// `CARGO_TARGET_DIR`; a program built with `pkg-config --cflags --libs
/// posixrt` runs on libposixrt, a `<trace.h>` program compiles with those
/// flags alone, and a program linked with `libposixrt.a` and `pkg-config
/// --static --libs`' private libs runs too.
#[test]
fn install_pkg_config_and_static_library() {
    let prefix = scratch().join("prefix");
    cleanup_later();
    let profile = lib_dir()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let profile = if profile == "release" {
        "release"
    } else {
        "debug"
    };
    let copy = scratch().join("install-root/capi");
    std::fs::create_dir_all(copy.join("include")).expect("scratch source copy");
    for f in [
        "install.sh",
        "Cargo.toml",
        "posixrt.pc.in",
        "include/trace.h",
    ] {
        std::fs::copy(Path::new(CRATE).join(f), copy.join(f)).expect("copy for install.sh");
    }
    let target = lib_dir().parent().expect("target/<profile>");
    let st = Command::new(copy.join("install.sh"))
        .env("CARGO_TARGET_DIR", target)
        .arg("--prefix")
        .arg(&prefix)
        .args(["--profile", profile])
        .output()
        .expect("run install.sh");
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let pc_dir = prefix.join("lib/pkgconfig");
    let pc = std::fs::read_to_string(pc_dir.join("posixrt.pc")).expect("posixrt.pc installed");
    assert!(pc.contains("-lposixrt") && !pc.contains('@'), "{pc}");
    let Ok(o) = Command::new("pkg-config")
        .env("PKG_CONFIG_PATH", &pc_dir)
        .args(["--cflags", "--libs", "posixrt"])
        .output()
    else {
        eprintln!("pkg-config not installed: the .pc file was checked by hand only");
        return;
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let flags = String::from_utf8_lossy(&o.stdout).into_owned();
    let libdir = prefix.join("lib");
    assert!(
        flags.contains(&format!("-L{}", libdir.display())) && flags.contains("-lposixrt"),
        "{flags}"
    );
    let src = c_src("aio_semantics.c");
    let exe = scratch().join("sem-pkgconfig");
    let o = Command::new("cc")
        .args(strict())
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .args(flags.split_whitespace())
        .arg(format!("-Wl,-rpath,{}", libdir.display()))
        .output()
        .expect("cc");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = run(&exe, Link::Linked, &["all"], &[("POSIXRT_AIO_DEBUG", "1")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let engine = if uring_allowed() { "uring" } else { "threads" };
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("libposixrt: engine: {engine} "))
    );

    // <trace.h> comes from the prefix, with no other -I.
    assert!(prefix.join("include/trace.h").is_file());
    let exe = scratch().join("trace-pkgconfig");
    let o = Command::new("cc")
        .args(strict())
        .arg("-o")
        .arg(&exe)
        .arg(c_src("trace_attr.c"))
        .args(flags.split_whitespace())
        .arg(format!("-Wl,-rpath,{}", libdir.display()))
        .output()
        .expect("cc");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = run(&exe, Link::Linked, &["attr_init"], &[]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok attr_init");

    // Static: the archive plus the private libraries.
    let o = Command::new("pkg-config")
        .env("PKG_CONFIG_PATH", &pc_dir)
        .args(["--static", "--libs-only-l", "posixrt"])
        .output()
        .expect("pkg-config --static");
    let private: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .filter(|f| *f != "-lposixrt")
        .map(str::to_owned)
        .collect();
    let exe = scratch().join("sem-static");
    let o = Command::new("cc")
        .args(strict())
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .arg(libdir.join("libposixrt.a"))
        .args(&private)
        .output()
        .expect("cc");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = run(
        &exe,
        Link::Linked,
        &["all"],
        &[
            ("POSIXRT_AIO_DEBUG", "1"),
            ("POSIXRT_AIO_BACKEND", "threads"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("libposixrt: engine: threads "));
}
