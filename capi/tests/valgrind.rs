//! C programs using `libposixrt.so` run under `valgrind --tool=memcheck`, the
//! memory checker C programmers use, with no error and their own result.
//! Skipped where valgrind is not installed.
//!
//! The library used to crash every such program at its first trace call:
//! rustix read the auxiliary vector with `prctl(PR_GET_AUXV)`, which valgrind
//! does not emulate, got the kernel's vDSO address (which valgrind does not
//! map) and faulted reading its ELF header (`check_elf_base`, SIGSEGV). The
//! library now takes the auxiliary vector from libc's `getauxval`, which
//! valgrind adjusts.
//!
//! The first submission of an aiocb from `malloc` (the seed's listings 7.7
//! and 7.8 make theirs so) used to be reported: the library reads its private
//! tag, `__glibc_reserved[0]`, to refuse an aiocb already in flight, and that
//! word was never written ("Conditional jump or move depends on uninitialised
//! value(s)" in `in_flight`, where glibc gives none). The library now tells
//! valgrind that word is defined before it reads it.

use std::path::Path;
use std::process::Command;

mod c_prog;
use c_prog::{build, run, strict, Link, CRATE};

fn have_valgrind() -> bool {
    let ok = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: no valgrind on this machine");
    }
    ok
}

/// Runs `exe args` (built for `link`) under memcheck (exit 9 on any
/// error) on the thread engine and asserts it exits 0 printing `want`.
fn memcheck(exe: &Path, link: Link, args: &[&str], want: &str) {
    memcheck_on("threads", exe, link, args, want);
}

/// [`memcheck`] on `engine` (`POSIXRT_AIO_BACKEND`).
fn memcheck_on(engine: &str, exe: &Path, link: Link, args: &[&str], want: &str) {
    let mut all = vec![
        "--tool=memcheck",
        "--error-exitcode=9",
        "--quiet",
        exe.to_str().expect("UTF-8 path"),
    ];
    all.extend_from_slice(args);
    let o = run(
        Path::new("valgrind"),
        link,
        &all,
        &[("POSIXRT_AIO_BACKEND", engine)],
    );
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == want,
        "{} {args:?} under memcheck: {:?}\n{}",
        exe.display(),
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A trace stream created, events recorded and read back, under memcheck.
#[test]
fn trace_calls_run_under_memcheck() {
    if !have_valgrind() {
        return;
    }
    let include = format!("-I{CRATE}/include");
    let mut flags = strict();
    flags.extend([include.as_str(), "-pthread"]);
    let exe = build(
        &Path::new(CRATE).join("tests/c/trace_functions.c"),
        Link::Linked,
        &flags,
    );
    memcheck(&exe, Link::Linked, &["getnext"], "ok getnext");
}

/// AIO reads on the thread engine, under memcheck.
#[test]
fn aio_reads_run_under_memcheck() {
    if !have_valgrind() {
        return;
    }
    let exe = build(&c_prog::c_src("aio_file_reads.c"), Link::Linked, &strict());
    memcheck(&exe, Link::Linked, &[], "ok");
}

/// The seed's listing 7.7 under `LD_PRELOAD`, whose aiocbs come from `malloc`
/// with only the public fields set: no report, the lines counted.
#[test]
fn the_seed_s_malloced_aiocbs_run_under_memcheck() {
    if !have_valgrind() {
        return;
    }
    listing_7_7_under_memcheck("threads");
}

/// Listing 7.7 under `LD_PRELOAD`, counting its own source, under memcheck
/// on `engine`.
fn listing_7_7_under_memcheck(engine: &str) {
    let src = Path::new(CRATE).join("tests/seed/listing_7_7.c");
    let exe = build(&src, Link::Preloaded, &["-std=gnu99", "-w", "-O1"]);
    let text = std::fs::read_to_string(&src).expect("read the listing");
    let lines = text.bytes().filter(|&b| b == b'\n').count().to_string();
    let arg = src.to_str().expect("UTF-8 path");
    memcheck_on(engine, &exe, Link::Preloaded, &[arg], &lines);
}

/// The same on io_uring: memcheck does not see the kernel fill the buffers
/// through the shared rings, so the reap declares the bytes each read moved
/// defined; the listing's count of the bytes read raised thousands of
/// "uninitialised value" reports before.
#[test]
fn the_seed_s_reads_on_io_uring_run_under_memcheck() {
    if !have_valgrind() {
        return;
    }
    listing_7_7_under_memcheck("uring");
}
