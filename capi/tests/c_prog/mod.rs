//! Building and running the C programs of `tests/c/` for the C-interface
//! tests (`mod c_prog;`): `libposixrt.so` built first, each program compiled
//! once per link mode and flags, run linked with `-lposixrt` or under
//! `LD_PRELOAD=libposixrt.so` with a watchdog, on the engines allowed here.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

mod hang;

pub const CRATE: &str = env!("CARGO_MANIFEST_DIR");

/// The directory holding `libposixrt.so` of this build profile
/// (`target/<profile>`, the parent of this test's `deps/`). `cargo test` does
/// not build a cdylib-only crate for its integration tests, so this runs
/// `cargo build -p posixrt-capi --lib` once per test process: a no-op when the
/// library is fresh, and never a stale library tested.
pub fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("test executable path");
        let dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile>/deps")
            .to_path_buf();
        {
            let release = dir.file_name().is_some_and(|n| n == "release");
            let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
            cmd.args(["build", "-p", "posixrt-capi", "--lib"])
                .current_dir(CRATE);
            if release {
                cmd.arg("--release");
            }
            let st = cmd.status().expect("run cargo build -p posixrt-capi");
            assert!(st.success(), "cargo build -p posixrt-capi failed");
        }
        assert!(
            dir.join("libposixrt.so").exists(),
            "no libposixrt.so in {}",
            dir.display()
        );
        dir
    })
}

/// A scratch directory for the compiled programs, removed when the process ends
/// (tests run in one process; the directory is per process).
pub fn scratch() -> &'static Path {
    static DIR: OnceLock<Scratch> = OnceLock::new();
    &DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("posixrt-capi-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("create scratch dir");
        Scratch(d)
    })
    .0
}

struct Scratch(PathBuf);
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Statics are not dropped: remove the scratch directory after the last test
/// that uses it (each test calls this at its end; the directory is recreated on
/// demand if another test still needs it).
pub fn cleanup_later() {
    extern "C" fn rm() {
        let d = std::env::temp_dir().join(format!("posixrt-capi-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(d);
    }
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        // SAFETY: `rm` is a plain function run at process exit.
        unsafe { libc::atexit(rm) };
    });
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Link {
    /// `-lposixrt`.
    Linked,
    /// Built against glibc, run with `LD_PRELOAD=libposixrt.so`.
    Preloaded,
}

/// The flags the C tests' own programs build with: any warning fails.
pub const STRICT: &[&str] = &[
    "-std=c99",
    "-Wall",
    "-Wextra",
    "-pedantic",
    "-Werror",
    "-O1",
];

/// [`scratch`], removed when the test process exits ([`cleanup_later`]).
pub fn scratch_removed_at_exit() -> &'static Path {
    cleanup_later();
    scratch()
}

/// Compiles `src` (once per flag set) with `flags` against trace.h, linked
/// with `-lposixrt`.
pub fn build_with_trace_h(src: &Path, flags: &[&str]) -> PathBuf {
    let include = format!("-I{CRATE}/include");
    let flags: Vec<&str> = flags
        .iter()
        .copied()
        .chain([include.as_str(), "-pthread", "-ldl"])
        .collect();
    build(src, Link::Linked, &flags)
}

/// The standard output of a program that must have exited with 0 (`what`
/// names it when it did not).
#[track_caller]
pub fn ok_stdout(o: &Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what}: {:?}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Compiles `src` once per (link, flags) and returns the executable.
pub fn build(src: &Path, link: Link, extra: &[&str]) -> PathBuf {
    static BUILT: OnceLock<std::sync::Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let key = format!("{}|{link:?}|{}", src.display(), extra.join(" "));
    let map = BUILT.get_or_init(Default::default);
    let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(p) = map.get(&key) {
        return p.clone();
    }
    cleanup_later();
    let name = format!(
        "{}-{}-{}",
        src.file_stem().unwrap().to_string_lossy(),
        if link == Link::Linked {
            "linked"
        } else {
            "glibc"
        },
        map.len()
    );
    let out = scratch().join(name);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut cmd = Command::new(cc);
    cmd.args(extra).arg("-o").arg(&out).arg(src);
    if link == Link::Linked {
        let d = lib_dir();
        cmd.arg(format!("-L{}", d.display()))
            .arg("-lposixrt")
            .arg(format!("-Wl,-rpath,{}", d.display()));
    }
    cmd.arg("-lpthread");
    let o = cmd.output().expect("run the C compiler (cc)");
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "cc failed or warned for {}:\n{}",
        src.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    map.insert(key, out.clone());
    out
}

pub fn strict() -> Vec<&'static str> {
    vec!["-std=c99", "-Wall", "-Wextra", "-Werror", "-O1", "-g"]
}

pub fn run(exe: &Path, link: Link, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .env_remove("POSIXRT_AIO_BACKEND")
        .env_remove("POSIXRT_AIO_DEBUG")
        .env_remove("POSIXRT_AIO_MAX")
        .env_remove("LD_PRELOAD")
        .stdin(std::process::Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    if link == Link::Preloaded {
        cmd.env("LD_PRELOAD", lib_dir().join("libposixrt.so"));
    }
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().expect("run the C program");
    // A hung program must fail the test, not hang the CI job.
    let pid = child.id() as libc::pid_t;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d2 = std::sync::Arc::clone(&done);
    let watchdog = std::thread::spawn(move || {
        let t0 = std::time::Instant::now();
        while !d2.load(std::sync::atomic::Ordering::Relaxed) {
            if t0.elapsed() > std::time::Duration::from_secs(120) {
                // What it was doing, while it still runs.
                let report = hang::report(pid);
                // SAFETY: kill has no memory preconditions; the child is not
                // reaped yet (wait_with_output below has not returned).
                unsafe { libc::kill(pid, libc::SIGKILL) };
                return Some(report);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        None
    });
    let out = child.wait_with_output().expect("collect output");
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let hung = watchdog.join().unwrap_or(None);
    if let Some(report) = hung {
        panic!(
            "{} {args:?} ({link:?}, env {env:?}) did not finish in 120 s; stdout:\n{}\nstderr:\n{}\nits threads then:\n{report}",
            exe.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

pub fn c_src(name: &str) -> PathBuf {
    Path::new(CRATE).join("tests/c").join(name)
}

/// The engines C programs run on here: both, or the thread engine alone where
/// io_uring is refused (a seccomp profile, as Docker's default one, or
/// `kernel.io_uring_disabled`), which the library falls back to.
pub fn engines() -> &'static [&'static str] {
    static ENGINES: OnceLock<&'static [&'static str]> = OnceLock::new();
    ENGINES.get_or_init(|| {
        match rt::aio::Aio::builder()
            .backend(rt::aio::Backend::Uring)
            .build()
        {
            Ok(_) => &["uring", "threads"],
            Err(e) => {
                eprintln!("io_uring is refused here ({e}): the thread engine only");
                &["threads"]
            }
        }
    })
}

/// False where io_uring is refused here (see [`engines`]).
pub fn uring_allowed() -> bool {
    engines().contains(&"uring")
}

/// Builds `src` (strict flags) linked and preloaded, runs it on each engine of
/// `backends` once per argument list of `runs`, and asserts that every run
/// exits 0 and prints "ok".
pub fn prints_ok(src: &str, backends: &[&str], runs: &[&[&str]]) {
    prints_ok_built(src, &strict(), backends, runs);
}

/// Builds the trace program `src` (C99, pedantic, any warning fails) against
/// trace.h, linked with `-lposixrt` (the trace functions are not glibc's: no
/// preloaded build), runs it with the one argument `name`, and asserts that it
/// exits 0 and prints "ok NAME".
pub fn trace_prints_ok_named(src: &str, name: &str) {
    let include = format!("-I{CRATE}/include");
    let flags: Vec<&str> = STRICT
        .iter()
        .copied()
        .chain(["-g", include.as_str()])
        .collect();
    let exe = build(&c_src(src), Link::Linked, &flags);
    let o = run(&exe, Link::Linked, &[name], &[]);
    assert!(
        o.status.success(),
        "{name}: {:?}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        format!("ok {name}")
    );
}

/// [`prints_ok`] for a program compiled with `flags`.
pub fn prints_ok_built(src: &str, flags: &[&str], backends: &[&str], runs: &[&[&str]]) {
    for link in [Link::Linked, Link::Preloaded] {
        let exe = build(&c_src(src), link, flags);
        for backend in backends {
            for args in runs {
                let o = run(&exe, link, args, &[("POSIXRT_AIO_BACKEND", backend)]);
                assert!(
                    o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "ok",
                    "{src} {link:?} {backend} {args:?}: {:?}\n{}",
                    o.status,
                    String::from_utf8_lossy(&o.stderr)
                );
            }
        }
    }
}
