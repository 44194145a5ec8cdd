//! `<trace.h>` from C: a test per function (`tests/c/trace_attr.c`,
//! `tests/c/trace_functions.c`, `tests/c/trace_interpose.c`,
//! `tests/c/trace_threads.c`, `tests/c/trace_eintr.c`; `tests/c/trace_conform.c`
//! for conformance defects found in review), the interposed
//! calls' results and errno against glibc's (`tests/c/trace_interpose_glibc.c`), the
//! header under strict C99 and C++, the seed's listings 8.17 and 8.24
//! (`tests/c/trace/`), listing 8.22 completed (`examples/philosophers.c`) with its
//! log read by `rtrace dump`, and C and Rust events in one stream
//! (`tests/c/trace_mixed.c`), and `posix_trace_event` from a library loaded with
//! `dlopen` (`tests/c/trace_dlopen.c`). Everything is compiled with the system `cc`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

mod common;
use common::{cargo_build, lib_dir, target_dir, CRATE};

fn rtrace() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        cargo_build(&["-p", "posixrt-tools", "--bin", "rtrace"]);
        target_dir().join("rtrace")
    })
}

static SCRATCH: OnceLock<PathBuf> = OnceLock::new();

/// Removes the scratch dir when the test process exits (tests run in threads of
/// one process, so no single test can own it).
extern "C" fn remove_scratch() {
    if let Some(d) = SCRATCH.get() {
        let _ = std::fs::remove_dir_all(d);
    }
}

fn scratch() -> &'static Path {
    SCRATCH.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("posixrt-trace-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("create scratch dir");
        // SAFETY: atexit only records the address of a plain extern "C" function.
        unsafe { libc::atexit(remove_scratch) };
        d
    })
}

/// Compiles `src` (once per flag set) against trace.h and `-lposixrt`; with
/// `strict`, any warning fails.
fn build(src: &Path, flags: &[&str], strict: bool) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let key = format!("{}|{}", src.display(), flags.join(" "));
    let mut map = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(p) = map.get(&key) {
        return p.clone();
    }
    let stem = src.file_stem().map(|s| s.to_string_lossy().into_owned());
    let out = scratch().join(format!("{}-{}", stem.unwrap_or_default(), map.len()));
    let d = lib_dir();
    let o = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(flags)
        .arg(format!("-I{CRATE}/include"))
        .arg("-o")
        .arg(&out)
        .arg(src)
        .arg(format!("-L{}", d.display()))
        .arg("-lposixrt")
        .arg(format!("-Wl,-rpath,{}", d.display()))
        .arg("-pthread")
        .arg("-ldl")
        .output()
        .expect("run the C compiler (cc)");
    assert!(
        o.status.success() && (!strict || o.stderr.is_empty()),
        "cc failed{} for {}:\n{}",
        if strict { " or warned" } else { "" },
        src.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    map.insert(key, out.clone());
    out
}

const STRICT: &[&str] = &[
    "-std=c99",
    "-Wall",
    "-Wextra",
    "-pedantic",
    "-Werror",
    "-O1",
];

/// Runs a program (killed after 60 s), optionally with libposixrt preloaded.
fn run(exe: &Path, args: &[&str], preload: bool) -> Output {
    let out = run_for(exe, args, preload, Duration::from_secs(60));
    out.unwrap_or_else(|| panic!("{} {args:?} did not finish in 60 s", exe.display()))
}

/// Runs a program, optionally with libposixrt preloaded; `None` if it had not
/// finished after `limit` (it is then killed).
fn run_for(exe: &Path, args: &[&str], preload: bool, limit: Duration) -> Option<Output> {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .env_remove("LD_PRELOAD")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if preload {
        cmd.env("LD_PRELOAD", lib_dir().join("libposixrt.so"));
    }
    let child = cmd.spawn().expect("run the C program");
    // A hung program fails the test instead of hanging it; the output is read
    // while it runs (listing 8.24 prints more than a pipe holds).
    let pid = child.id() as libc::pid_t;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d2 = std::sync::Arc::clone(&done);
    let watchdog = std::thread::spawn(move || {
        let t0 = Instant::now();
        while !d2.load(std::sync::atomic::Ordering::Relaxed) {
            if t0.elapsed() > limit {
                // SAFETY: kill has no memory preconditions; the child is not
                // reaped until wait_with_output returns.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    });
    let out = child.wait_with_output().expect("collect output");
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let killed = watchdog.join().unwrap_or(false);
    (!killed).then_some(out)
}

fn ok_stdout(o: &Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what}: {:?}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
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
    let exe = build(&Path::new(CRATE).join("tests/c").join(prog), STRICT, true);
    let out = ok_stdout(&run(&exe, &[name], false), name);
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

/// The header in GCC's C89 modes (`-std=gnu89`, GCC's default before GCC 5,
/// and `-std=c89`): `posix_trace_event`'s inline fast path is declared with
/// `__inline__` there (C99's `inline` was a syntax error), and a call through
/// it compiles, warning-free.
#[test]
fn header_compiles_in_c89_modes() {
    let tu = scratch().join("hdr89.c");
    std::fs::write(
        &tu,
        "#include <trace.h>\nint f(trace_event_id_t id);\nint f(trace_event_id_t id) { \
         int v = 1; trace_event_set_t s; posix_trace_event(id, &v, sizeof v); \
         return posix_trace_eventset_empty(&s); }\n",
    )
    .expect("write");
    for std in ["-std=gnu89", "-std=c89"] {
        let o = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
            .args([std, "-Wall", "-Wextra", "-Werror", "-O2"])
            .arg(format!("-I{CRATE}/include"))
            .arg("-c")
            .arg(&tu)
            .arg("-o")
            .arg(scratch().join("hdr89.o"))
            .output()
            .expect("run the C compiler (cc)");
        assert!(
            o.status.success() && o.stderr.is_empty(),
            "cc {std}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

// --- the seed's listings -------------------------------------------------------

fn listing(name: &str) -> PathBuf {
    Path::new(CRATE).join("tests/c/trace").join(name)
}

/// Listing 8.17 prints the defaults of a stream.
#[test]
fn listing_8_17_prints_stream_defaults() {
    let exe = build(&listing("listing_8_17.c"), &["-w"], false);
    let out = ok_stdout(&run(&exe, &[], false), "listing 8.17");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 10, "{out}");
    let want = [
        "Версия системы трассировки: posixrt-trace 1.0",
        "Имя потока трассировки: trace",
        "Время создания потока трассировки: ",
        "Разрешающая способность часов потока трассировки: ",
        " Правило обработки ситуации заполнения потока: POSIX_TRACE_LOOP",
        "Правило обработки ситуации заполнения журнала трассировки: POSIX_TRACE_LOOP",
        "Максимальный размер данных в пользовательском событии: 256",
        "Максимальный размер пользовательского события: 272",
        "Максимальный размер системного события: 272",
        "Размер потока трассировки: 1048576",
    ];
    for (l, w) in lines.iter().zip(want) {
        assert!(l.starts_with(w), "{l:?} should start with {w:?}");
    }
    let res: u64 = lines[3]
        .trim_start_matches(want[3])
        .trim_end_matches(" нсек")
        .parse()
        .expect("a resolution in ns");
    assert!((1..1_000_000).contains(&res), "{res}");
    // The creation time is now: the year of the local clock.
    let year = String::from_utf8_lossy(
        &Command::new("date")
            .arg("+%Y")
            .output()
            .expect("date")
            .stdout,
    )
    .trim()
    .to_string();
    assert!(lines[2].ends_with(&year), "{}", lines[2]);
}

/// One event of listing 8.24's report: kind ('l' lock, 't' trylock, 'u' unlock),
/// error code, thread, owner.
type MutexLine = (char, i64, String, Option<String>);

/// Listing 8.24's header line and events.
fn mutex_report(out: &str) -> (String, Vec<MutexLine>) {
    let mut lines = out.lines();
    let head = lines.next().unwrap_or_default().to_string();
    let mut ev = Vec::new();
    let mut kind = ' ';
    for l in lines {
        if l.contains("Попытка захвата без ожидания") {
            kind = 't';
        } else if l.contains("Попытка захвата мьютекса") {
            kind = 'l';
        } else if l.contains("Освобождение мьютекса") {
            kind = 'u';
        } else if let Some(rest) = l.strip_prefix("код ошибки ") {
            let parts: Vec<&str> = rest.split(", ").collect();
            let err: i64 = parts[0].parse().expect("an error code");
            let th = parts[1].trim_start_matches("поток ").to_string();
            let owner = parts
                .get(2)
                .map(|p| p.trim_start_matches("владелец ").to_string());
            ev.push((kind, err, th, owner));
        } else {
            panic!("unexpected line {l:?}");
        }
    }
    (head, ev)
}

/// Listing 8.24, run unchanged under LD_PRELOAD: the monopolising thread's lock
/// and unlock events and the other thread's failed trylocks (EBUSY).
#[test]
fn listing_8_24_traces_mutex_events_under_preload() {
    let exe = build(&listing("listing_8_24.c"), &["-w"], false);
    // The listing can deadlock by its own design: it cancels the trylock thread
    // first, at a `nanosleep` that may be inside its critical section, so the
    // thread dies holding the mutex while the other waits for it in
    // `pthread_mutex_lock` (no cancellation point), and `pthread_join` never
    // returns (seen under gdb: the waiter sits in glibc's own lock wait; the
    // interposer only records around it). On Linux the clock resolution it scales its
    // sleeps by is 1 ns, so the window is hit about once in 12 runs here. A run
    // that hangs is retried: three in a row would be a defect of ours.
    let out = (0..3)
        .find_map(|_| run_for(&exe, &[], true, Duration::from_secs(20)))
        .expect("listing 8.24 hung three times in a row");
    let out = ok_stdout(&out, "listing 8.24");
    let (head, ev) = mutex_report(&out);
    assert!(
        head.starts_with("Помещенные в поток трассировки события с мьютексом 0x"),
        "{head}"
    );
    let locks: Vec<_> = ev.iter().filter(|e| e.0 == 'l').collect();
    let unlocks: Vec<_> = ev.iter().filter(|e| e.0 == 'u').collect();
    let busy: Vec<_> = ev.iter().filter(|e| e.0 == 't' && e.1 != 0).collect();
    assert!(locks.len() >= 10, "{} locks", locks.len());
    assert!(!busy.is_empty(), "no failed trylock");
    // lock: success, the caller owns it.
    for l in &locks {
        assert_eq!(l.1, 0);
        assert_eq!(l.3.as_deref(), Some(l.2.as_str()));
    }
    // A failed trylock: EBUSY, owned by the other thread.
    for b in &busy {
        assert_eq!(b.1, libc::EBUSY as i64);
        assert_ne!(b.3.as_deref(), Some(b.2.as_str()));
    }
    for u in &unlocks {
        assert_eq!(u.1, 0);
    }
    // Per thread, the mutex is taken (lock or successful trylock) and released
    // in turn (from the thread's first take: the default LOOP stream may have
    // overwritten the oldest events of a busy thread).
    let mut held: HashMap<&str, bool> = HashMap::new();
    for e in ev.iter().filter(|e| e.1 == 0) {
        if !held.contains_key(e.2.as_str()) && e.0 == 'u' {
            continue;
        }
        let h = held.entry(e.2.as_str()).or_default();
        match e.0 {
            'l' | 't' => assert!(!*h, "{} took the mutex twice", e.2),
            _ => assert!(*h, "{} released a mutex it did not hold", e.2),
        }
        *h = e.0 != 'u';
    }
}

/// The listings are the seed's text once whitespace is ignored (the only fixes:
/// the split #include lines and `&mamp;y_mutex`). Checked where the seed
/// documents are present (`POSIXRT_SEEDS`, or `shared/seeds` beside the checkout).
#[test]
fn listings_are_the_seed_text() {
    let dir = std::env::var_os("POSIXRT_SEEDS")
        .map(PathBuf::from)
        .or_else(|| {
            Path::new(CRATE)
                .ancestors()
                .map(|a| a.join("shared/seeds"))
                .find(|d| d.is_dir())
        });
    let Some(text) =
        dir.and_then(|d| std::fs::read_to_string(d.join("001_418bc3431c88a558.txt")).ok())
    else {
        eprintln!("skipped: the seed documents are not next to this checkout");
        return;
    };
    let squash = |s: &str| -> String {
        s.replace("&mamp;y_mutex", "&my_mutex")
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect()
    };
    let seed = squash(&text);
    for name in ["listing_8_17.c", "listing_8_24.c"] {
        let ours = squash(&std::fs::read_to_string(listing(name)).expect("read listing"));
        assert!(seed.contains(&ours), "{name} differs from the seed text");
    }
}

// --- listing 8.22: the philosophers ----------------------------------------------

/// The fork events as (kind, philosopher), kind 'r' request, 'g' grab, 'f' free.
fn fork_events<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<(char, u32)> {
    let kinds = [
        ("Заявка на вилки философа ", 'r'),
        ("Захват вилок философа ", 'g'),
        ("Освобождение вилок философа ", 'f'),
    ];
    lines
        .filter_map(|l| {
            kinds.iter().find_map(|(p, k)| {
                let i = l.find(p)?;
                let n = l[i + p.len()..].trim().parse().ok()?;
                Some((*k, n))
            })
        })
        .collect()
}

/// A signal line of the philosophers' report: ('g' generated / 'd' delivered,
/// signal number, value).
fn signal_event(l: &str) -> Option<(char, i32, i32)> {
    let num = |s: &str, after: &str| -> Option<i32> {
        let i = s.find(after)? + after.len();
        s[i..].split_whitespace().next()?.parse().ok()
    };
    let kind = if l.contains(" порожден сигнал ") {
        'g'
    } else if l.contains(" доставлен сигнал ") {
        'd'
    } else {
        return None;
    };
    Some((kind, num(l, "с номером ")?, num(l, "и значением ")?))
}

#[test]
fn philosophers_trace_and_its_log() {
    let exe = build(
        &Path::new(CRATE).join("examples/philosophers.c"),
        STRICT,
        true,
    );
    let log = scratch().join("philosophers.trace");
    let log_s = log.to_string_lossy().into_owned();
    let out = ok_stdout(&run(&exe, &[&log_s], false), "philosophers");
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some("Помещенные в поток трассировки события с вилками:")
    );
    let printed: Vec<&str> = lines.collect();
    let ev = fork_events(printed.iter().copied());
    let sigs: Vec<_> = printed.iter().filter_map(|l| signal_event(l)).collect();
    assert_eq!(
        ev.len() + sigs.len(),
        printed.len(),
        "only fork and signal events are printed"
    );
    // Per philosopher: request, grab, free, in turn; every one ate.
    let mut state = [0u8; 5];
    let mut ate = [0u32; 5];
    let mut holding = [false; 5];
    for (k, n) in &ev {
        let i = (*n as usize).checked_sub(1).expect("philosophers 1..=5");
        let want = match k {
            'r' => 0,
            'g' => 1,
            _ => 2,
        };
        assert_eq!(state[i], want, "philosopher {n}: {k} out of turn");
        state[i] = (want + 1) % 3;
        if *k == 'g' {
            ate[i] += 1;
            // Neighbours share a fork: they never eat together.
            assert!(
                !holding[(i + 4) % 5] && !holding[(i + 1) % 5],
                "{n} and a neighbour ate together"
            );
        }
        holding[i] = *k == 'g';
    }
    assert!(ate.iter().all(|a| *a > 0), "{ate:?}");
    // Signals, in causal order: each request signal (SIGRTMIN, value n) is
    // generated, then delivered to the waiter, then logged as a request (n > 0)
    // or a release (n < 0); the dinner's timer (SIGRTMIN + 1) is delivered once.
    let rtmin = libc::SIGRTMIN();
    let mut generated: HashMap<i32, i32> = HashMap::new();
    let mut delivered: HashMap<i32, i32> = HashMap::new();
    let mut timer = 0;
    for l in &printed {
        if let Some((k, sig, v)) = signal_event(l) {
            match (k, sig) {
                ('g', s) if s == rtmin => *generated.entry(v).or_default() += 1,
                ('d', s) if s == rtmin => {
                    let g = generated.entry(v).or_default();
                    assert!(*g > 0, "value {v} delivered before it was generated");
                    *g -= 1;
                    *delivered.entry(v).or_default() += 1;
                }
                ('d', s) if s == rtmin + 1 => timer += 1,
                _ => panic!("unexpected signal line {l:?}"),
            }
        } else if let Some(&(k, n)) = fork_events(std::iter::once(*l)).first() {
            if k != 'g' {
                let v = if k == 'r' { n as i32 } else { -(n as i32) };
                let d = delivered.entry(v).or_default();
                assert!(*d > 0, "{l:?} before its signal was delivered");
                *d -= 1;
            }
        }
    }
    assert_eq!(timer, 1, "the timer's signal");
    assert_eq!(delivered.get(&0), Some(&1), "the end-of-dinner request");
    // The log holds the same events, in the same order, as rtrace dumps them.
    let dump = Command::new(rtrace())
        .arg("dump")
        .arg(&log)
        .output()
        .expect("run rtrace");
    let text = ok_stdout(&dump, "rtrace dump");
    assert!(text.contains("posix_trace_start"), "{text}");
    assert_eq!(fork_events(text.lines()), ev);
    let gens = text
        .lines()
        .filter(|l| l.contains("traceSigGeneration "))
        .count();
    assert_eq!(gens, sigs.iter().filter(|s| s.0 == 'g').count());
}

// --- C and Rust events in one stream ----------------------------------------------

#[test]
fn c_and_rust_events_come_out_of_one_stream_in_time_order() {
    let exe = build(
        &Path::new(CRATE).join("tests/c/trace_mixed.c"),
        STRICT,
        true,
    );
    let out = ok_stdout(&run(&exe, &[], false), "trace_mixed");
    let ev: Vec<(u64, &str, &str, i64)> = out
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            assert_eq!(f.len(), 4, "{l}");
            (
                f[0].parse().expect("ns"),
                f[1],
                f[2],
                f[3].parse().expect("data"),
            )
        })
        .collect();
    assert_eq!(ev.first().map(|e| e.2), Some("posix_trace_start"));
    assert_eq!(ev.last().map(|e| e.2), Some("posix_trace_stop"));
    for w in ev.windows(2) {
        assert!(w[0].0 <= w[1].0, "out of time order: {w:?}");
    }
    let count = |n: &str| ev.iter().filter(|e| e.2 == n).count();
    // C user events, and Rust-recorded system events of the AIO engine and of
    // the mutex interposer.
    for (name, n) in [
        ("c_before", 40),
        ("c_after", 40),
        ("aio_submit", 40),
        ("aio_complete", 40),
        ("traceMutexLock", 40),
        ("traceMutexUnlock", 40),
    ] {
        assert_eq!(count(name), n, "{name}");
    }
    // Per C thread, each round: before, lock, unlock, submit, after (the
    // completion may be recorded by an engine thread).
    let mut tids: Vec<&str> = ev
        .iter()
        .filter(|e| e.2 == "c_before")
        .map(|e| e.1)
        .collect();
    tids.sort_unstable();
    tids.dedup();
    assert_eq!(tids.len(), 2);
    for t in tids {
        let seq: Vec<&str> = ev
            .iter()
            .filter(|e| e.1 == t && e.2 != "aio_complete")
            .map(|e| e.2)
            .collect();
        let round = [
            "c_before",
            "traceMutexLock",
            "traceMutexUnlock",
            "aio_submit",
            "c_after",
        ];
        assert_eq!(seq.len(), 20 * round.len(), "{seq:?}");
        for (i, c) in seq.chunks(round.len()).enumerate() {
            assert_eq!(c, round, "thread {t} round {i}");
        }
        let tags: Vec<i64> = ev
            .iter()
            .filter(|e| e.1 == t && e.2 == "c_before")
            .map(|e| e.3)
            .collect();
        assert!(tags.windows(2).all(|w| w[1] == w[0] + 1), "{tags:?}");
    }
}

// --- a library loaded with dlopen ----------------------------------------------

/// The per-thread state `posix_trace_event` keeps in an initial-exec TLS word
/// works in a library loaded with `dlopen` (not linked): for a thread that ran
/// before the `dlopen`, the main thread and a thread made after, each event
/// lands once, from its own thread, with its own data, in order.
#[test]
fn posix_trace_event_from_a_dlopened_library() {
    let src = Path::new(CRATE).join("tests/c/trace_dlopen.c");
    let exe = scratch().join("trace_dlopen");
    let o = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(STRICT)
        .arg(format!("-I{CRATE}/include"))
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .args(["-ldl", "-pthread"])
        .output()
        .expect("run the C compiler (cc)");
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "cc failed or warned:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let lib = lib_dir().join("libposixrt.so");
    let lib = lib.to_str().expect("UTF-8 library path");
    let out = ok_stdout(&run(&exe, &[lib], false), "trace_dlopen");
    assert_eq!(out.lines().last(), Some("end"), "{out}");
    let mut per: [Vec<i64>; 3] = Default::default();
    let mut thread_of: [Option<u64>; 3] = [None; 3];
    for l in out.lines().filter(|l| *l != "end") {
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(f.len(), 3, "{l}");
        let who: usize = f[0].parse().expect("thread index");
        assert!(who < 3, "an event from an unknown thread: {l}");
        let thread: u64 = f[1].parse().expect("pthread_t");
        assert_eq!(*thread_of[who].get_or_insert(thread), thread, "{l}");
        let data: i64 = f[2].parse().expect("data");
        assert_eq!(
            data >> 16,
            who as i64,
            "thread {who} recorded another's data: {l}"
        );
        per[who].push(data & 0xffff);
    }
    for (who, seq) in per.iter().enumerate() {
        assert_eq!(*seq, (0..100).collect::<Vec<i64>>(), "thread {who}");
    }
}
