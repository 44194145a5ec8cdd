//! `<trace.h>` from C: a test per function (`tests/c/trace_attr.c`,
//! `tests/c/trace_functions.c`, `tests/c/trace_interpose.c`,
//! `tests/c/trace_threads.c`, `tests/c/trace_eintr.c`; `tests/c/trace_conform.c`
//! for conformance defects found in review), the interposed
//! calls' results and errno against glibc's (`tests/c/trace_interpose_glibc.c`),
//! the header under `-pedantic -Werror` in every C standard from C89 and every
//! C++ standard from C++98, and its declarations against POSIX's
//! (`tests/c/trace_header_posix.c`). Whole programs (the seed's
//! listings, the philosophers, C and Rust events in one stream, `dlopen`) are
//! in `trace_programs.rs`. Everything is compiled with the system `cc`.

use std::path::{Path, PathBuf};
use std::process::Command;

mod c_prog;
use c_prog::{lib_dir, ok_stdout, Link, CRATE, STRICT};

/// The scratch directory, removed when the test process exits.
fn scratch() -> &'static Path {
    c_prog::scratch_removed_at_exit()
}

/// Compiles `src` (once) with [`STRICT`] against trace.h and `-lposixrt`:
/// any warning fails.
fn build(src: &Path) -> PathBuf {
    c_prog::build_with_trace_h(src, STRICT)
}

// --- one test per function ---------------------------------------------------

/// The C programs holding the per-function tests.
const C_TESTS: [&str; 7] = [
    "trace_attr.c",
    "trace_functions.c",
    "trace_interpose.c",
    "trace_interpose_glibc.c",
    "trace_threads.c",
    "trace_eintr.c",
    "trace_conform.c",
];

fn function_test(name: &str) {
    if name == "conf_execl_flushes_log" && !cfg!(target_arch = "x86_64") {
        // The execl trampolines are x86_64 only (src/trace/exec_variadic.rs).
        eprintln!("{name}: not run here (execl, execle and execlp are glibc's)");
        return;
    }
    let prog = if name.starts_with("attr_") {
        C_TESTS[0]
    } else if name.ends_with("_events") {
        C_TESTS[2]
    } else if name.ends_with("_as_glibc") {
        C_TESTS[3]
    } else if name.starts_with("thread_") {
        C_TESTS[4]
    } else if name.starts_with("eintr_") {
        C_TESTS[5]
    } else if name.starts_with("conf_") {
        C_TESTS[6]
    } else {
        C_TESTS[1]
    };
    let exe = build(&Path::new(CRATE).join("tests/c").join(prog));
    let out = ok_stdout(&c_prog::run(&exe, Link::Linked, &[name], &[]), name);
    assert_eq!(out.trim(), format!("ok {name}"));
}

macro_rules! function_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                function_test(stringify!($name));
            }
        )*
    };
}

function_tests!(
    attr_init,
    attr_destroy,
    attr_getgenversion,
    attr_name,
    attr_name_bytes,
    attr_name_create,
    attr_getcreatetime,
    attr_getclockres,
    attr_inherited,
    attr_streamfullpolicy,
    attr_logfullpolicy,
    attr_maxdatasize,
    attr_getmaxsystemeventsize,
    attr_getmaxusereventsize,
    attr_streamsize,
    attr_logsize,
    attr_unnamed_user_event,
    create,
    create_withlog,
    start_stop,
    shutdown,
    flush,
    clear,
    get_attr,
    get_status,
    filter,
    eventset,
    eventid_open,
    user_event_max,
    eventid_open_null,
    eventid_open_system_name,
    trid_eventid_open,
    eventid_open_bytes,
    eventid_get_name,
    eventid_equal,
    eventtypelist,
    event,
    event_sizes,
    event_in_handler,
    getnext,
    timedgetnext,
    timedgetnext_past,
    trygetnext,
    open_rewind_close,
    mutex_events,
    signal_events,
    signal_handler_events,
    sigtimedwait_events,
    mutex_exit_events,
    mutex_fork_events,
    signal_as_glibc,
    mutex_as_glibc,
    thread_id,
    thread_mutex_owner,
    eintr_getnext,
    eintr_timedgetnext,
    eintr_restart,
    conf_truncated_read_overrides_record,
    conf_event_null_data_inline,
    conf_shutdown_unblocks_reader_einval,
    conf_child_trid_einval,
    conf_eventset_fill_initializes,
    conf_eventtypelist_no_repeat,
    conf_shutdown_frees_before_return,
    conf_loop_log_on_pipe_einval,
    conf_shutdown_records_stop,
    conf_exit_shuts_down,
    conf_exec_flushes_log,
    conf_execl_flushes_log,
    conf_open_directory_einval,
);

/// Every test the C program has is run by one of the tests above.
#[test]
fn every_c_test_is_run() {
    let src: String = C_TESTS
        .iter()
        .map(|f| std::fs::read_to_string(Path::new(CRATE).join("tests/c").join(f)).expect("read"))
        .collect();
    let this =
        std::fs::read_to_string(Path::new(CRATE).join("tests/trace.rs")).expect("read trace.rs");
    let listed = this
        .split("function_tests!(")
        .nth(1)
        .expect("the function_tests! list");
    for line in src.lines().filter(|l| l.trim_start().starts_with("{\"")) {
        let name = line.split('"').nth(1).expect("a test name");
        assert!(
            listed.contains(&format!("    {name},")),
            "C test {name} is not run"
        );
    }
}

/// Every function trace.h declares is exported by the library.
#[test]
fn every_declared_function_is_exported() {
    let h = std::fs::read_to_string(Path::new(CRATE).join("include/trace.h")).expect("trace.h");
    let nm = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(lib_dir().join("libposixrt.so"))
        .output()
        .expect("run nm");
    let syms = String::from_utf8_lossy(&nm.stdout);
    let mut n = 0;
    for w in h.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        if w.starts_with("posix_trace_") && !w.ends_with("_info") {
            assert!(
                syms.lines().any(|l| l.ends_with(&format!(" {w}"))),
                "{w} is not exported"
            );
            n += 1;
        }
    }
    assert!(n >= 50, "only {n} declarations found");
}

#[test]
fn header_is_strict_c99_and_cxx() {
    let tu = scratch().join("hdr.c");
    std::fs::write(
        &tu,
        "#include <trace.h>\n#include <trace.h>\nint main(void) { trace_event_set_t s; \
         return posix_trace_eventset_empty(&s) + (int)sizeof(trace_attr_t) \
         - 128 + (int)POSIX_TRACE_START; }\n",
    )
    .expect("write");
    for (cc, flags) in [
        (
            "cc",
            &["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror"][..],
        ),
        (
            "c++",
            &["-x", "c++", "-Wall", "-Wextra", "-pedantic", "-Werror"][..],
        ),
    ] {
        let o = Command::new(cc)
            .args(flags)
            .arg(format!("-I{CRATE}/include"))
            .arg("-c")
            .arg(&tu)
            .arg("-o")
            .arg(scratch().join(format!("hdr-{cc}.o")))
            .output()
            .expect("run the compiler");
        assert!(
            o.status.success() && o.stderr.is_empty(),
            "{cc}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// The compilers the header is checked with: `$CC` (or the system `cc`) and
/// `c++`, and Clang as well where it is installed (its pedantic warnings are
/// not GCC's).
fn header_compilers(cxx: bool) -> Vec<String> {
    let mut v = vec![if cxx {
        std::env::var("CXX").unwrap_or_else(|_| "c++".into())
    } else {
        std::env::var("CC").unwrap_or_else(|_| "cc".into())
    }];
    let clang = if cxx { "clang++" } else { "clang" };
    if Command::new(clang).arg("--version").output().is_ok() {
        v.push(clang.into());
    }
    v
}

/// A translation unit that uses every type of the header and calls
/// `posix_trace_event` through its inline fast path, and checks at compile
/// time (an array of size -1 otherwise) the layouts the library's Rust side
/// has: `trace_attr_t` and `trace_event_set_t` are 128 bytes, aligned as a
/// 64-bit word (`U64_ALIGN`, given by this test).
const HEADER_TU: &str = r#"#include <trace.h>
#include <trace.h>
struct hdr_attr { char c; trace_attr_t a; };
struct hdr_set { char c; trace_event_set_t s; };
typedef char hdr_attr_size[sizeof(trace_attr_t) == 128 ? 1 : -1];
typedef char hdr_set_size[sizeof(trace_event_set_t) == 128 ? 1 : -1];
typedef char hdr_attr_align[offsetof(struct hdr_attr, a) == U64_ALIGN ? 1 : -1];
typedef char hdr_set_align[offsetof(struct hdr_set, s) == U64_ALIGN ? 1 : -1];
int hdr_use(trace_event_id_t id);
int hdr_use(trace_event_id_t id)
{
    int v = 1;
    trace_event_set_t s;
    trace_attr_t a;
    struct posix_trace_event_info ev;
    struct posix_trace_status_info st;
    posix_trace_event(id, &v, sizeof v);
    posix_trace_event(id, &ev, sizeof ev);
    (void)posix_trace_attr_init(&a);
    (void)st;
    return posix_trace_eventset_empty(&s) + (int)POSIX_TRACE_START;
}
"#;

/// The header under `-pedantic -Wall -Wextra -Werror` in every C standard
/// from C89 on and every C++ standard from C++98 on, with GCC and with Clang
/// where it is installed. C89 and C++98 have no `long long`: the 64-bit
/// fields are of a type declared with `__extension__` there, the same type
/// (the same layout, which the translation unit checks) as in C99. In C89
/// modes (`-std=gnu89`, GCC's default before GCC 5, and `-std=c89`)
/// `posix_trace_event`'s inline fast path is declared with `__inline__` (C99's
/// `inline` was a syntax error), and a call through it compiles,
/// warning-free.
#[test]
fn header_is_pedantic_in_every_standard() {
    let tu = scratch().join("hdr_std.c");
    std::fs::write(&tu, HEADER_TU).expect("write");
    let align = format!("-DU64_ALIGN={}", std::mem::align_of::<u64>());
    let include = format!("-I{CRATE}/include");
    let mut failures = Vec::new();
    let mut n = 0;
    for (cxx, stds) in [
        (false, &["c89", "gnu89", "c99", "gnu99", "c11", "c17"][..]),
        (true, &["c++98", "gnu++98", "c++11", "c++17"][..]),
    ] {
        for cc in header_compilers(cxx) {
            for std in stds {
                let mut cmd = Command::new(&cc);
                if cxx {
                    cmd.args(["-x", "c++"]);
                }
                let o = cmd
                    .arg(format!("-std={std}"))
                    .args(["-pedantic", "-Wall", "-Wextra", "-Werror", "-O2"])
                    .args([&align, &include, "-c"])
                    .arg(&tu)
                    .arg("-o")
                    .arg(scratch().join(format!("hdr-{n}.o")))
                    .output()
                    .expect("run the compiler");
                n += 1;
                if !o.status.success() || !o.stderr.is_empty() {
                    failures.push(format!(
                        "{cc} -std={std}:\n{}",
                        String::from_utf8_lossy(&o.stderr)
                    ));
                }
            }
        }
    }
    assert!(n >= 10, "only {n} compilations");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// trace.h declares POSIX's interface: `tests/c/trace_header_posix.c`
/// redeclares every function with POSIX's prototype (an incompatible one is a
/// compile error), takes every structure member into a pointer of POSIX's
/// type and checks the symbolic constants and limits; it must compile with
/// `-pedantic -Wall -Wextra -Werror` in C99 and C11, with `cc` and with Clang
/// where it is installed.
#[test]
fn header_declares_the_posix_interface() {
    let src = Path::new(CRATE).join("tests/c/trace_header_posix.c");
    let include = format!("-I{CRATE}/include");
    let mut failures = Vec::new();
    let mut n = 0;
    for cc in header_compilers(false) {
        // (Also with <unistd.h> included before <trace.h>: the option
        // macros hold in either order.)
        for (std, first) in [("c99", None), ("c11", None), ("c99", Some("unistd.h"))] {
            let pre: &[&str] = match first {
                Some(h) => &["-include", h],
                None => &[],
            };
            let o = Command::new(&cc)
                .arg(format!("-std={std}"))
                .args(["-pedantic", "-Wall", "-Wextra", "-Werror", &include, "-c"])
                .args(pre)
                .arg(&src)
                .arg("-o")
                .arg(scratch().join(format!("posix-{n}.o")))
                .output()
                .expect("run the compiler");
            n += 1;
            if !o.status.success() || !o.stderr.is_empty() {
                failures.push(format!(
                    "{cc} -std={std} {pre:?}:\n{}",
                    String::from_utf8_lossy(&o.stderr)
                ));
            }
        }
    }
    assert!(n >= 2, "only {n} compilations");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
