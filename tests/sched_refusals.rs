//! Integration tests for `posixrt::sched`: refusals the kernel makes after the
//! crate's own checks passed, each reported with its cause and fix. Kernel
//! refusals that cannot be arranged safely on a shared machine (a changed
//! sysctl) are injected with a seccomp filter on one thread.

#[path = "common/probe.rs"]
mod probe;
#[path = "common/seccomp.rs"]
mod seccomp;

use std::time::Duration;

use posixrt::sched::deadline::{self, Deadline, DeadlineFlags};
use posixrt::sched::{self, Builder, CpuSet, Priority};
use posixrt::ErrorKind;

/// `Deadline::new` checks the period against the kernel's bounds as they are
/// then; `sched_setattr` refuses with EINVAL if they changed since (or if a flag
/// is unknown to the kernel). That EINVAL came with no hint at all; it now names
/// the bounds as they are now and the flags' kernel versions.
#[test]
fn a_deadline_the_kernel_refuses_as_invalid_names_the_bounds_and_flags() {
    let h = std::thread::spawn(|| {
        let ms = Duration::from_millis;
        let dl = Deadline::new(ms(1), ms(10), ms(10))
            .unwrap()
            .with_flags(DeadlineFlags::DL_OVERRUN);
        // Only this thread is filtered; the call is refused before any change.
        seccomp::fail_syscall(libc::SYS_sched_setattr, None, libc::EINVAL);
        deadline::set(sched::gettid(), &dl).unwrap_err()
    });
    let e = h.join().unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert_eq!(e.errno(), Some(libc::EINVAL), "{e}");
    let hint = e.hint().unwrap_or_else(|| panic!("no hint: {e}"));
    assert!(hint.contains("sched_deadline_period_max_us"), "{e}");
    assert!(hint.contains("DL_OVERRUN"), "{e}");
}

// ---------- pthread_create's EINVAL ----------

const STACK_PROBE_ENV: &str = "POSIXRT_SMALL_STACK_PROBE";

/// Runs only in the child of the test below, whose glibc reserves 1 MiB of
/// static TLS in every thread's stack: a 64 KiB stack is then refused by
/// `pthread_create` (EINVAL), with a usable affinity, a policy, or neither.
#[test]
#[ignore = "helper: run by a_stack_too_small_for_the_tls_is_blamed_on_the_stack"]
fn small_stack_probe() {
    if std::env::var_os(STACK_PROBE_ENV).is_none() {
        return;
    }
    let allowed = CpuSet::allowed().unwrap();
    let cases = [
        ("plain", Builder::new().stack_size(64 << 10)),
        (
            "affinity",
            Builder::new().stack_size(64 << 10).affinity(allowed),
        ),
        (
            "policy",
            Builder::new()
                .stack_size(64 << 10)
                .scheduling(Priority::other()),
        ),
    ];
    for (name, b) in cases {
        match b.spawn(|| ()) {
            Ok(h) => {
                h.join().unwrap();
                println!("STACKPROBE {name} | spawned");
            }
            Err(e) => println!(
                "STACKPROBE {name} | {:?} | {e} | {}",
                e.kind(),
                e.hint().unwrap_or("")
            ),
        }
    }
}

/// glibc puts the guard page and the static TLS block inside the thread's stack
/// and refuses, with EINVAL, a stack too small for them: the same errno the
/// kernel gives a CPU set with no usable CPU. With a perfectly usable affinity
/// the error blamed the affinity (its hint then listed the very CPUs asked
/// for); with a policy it said the priority had been changed by another
/// thread; with neither it had no hint. Each now names the stack size.
#[test]
fn a_stack_too_small_for_the_tls_is_blamed_on_the_stack() {
    let tunable = [("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=1048576")];
    // SAFETY: no set-up between fork and exec.
    let out = unsafe { probe::run("small_stack_probe", STACK_PROBE_ENV, &tunable, || Ok(())) };
    let lines: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_once("STACKPROBE ").map(|x| x.1))
        .collect();
    assert_eq!(lines.len(), 3, "{out}");
    if lines.iter().all(|l| l.ends_with("| spawned")) {
        println!("skip: this glibc ignores glibc.rtld.optional_static_tls");
        return;
    }
    for line in lines {
        let f: Vec<&str> = line.splitn(4, " | ").collect();
        assert_eq!(f.len(), 4, "{line}");
        let (kind, text, hint) = (f[1], f[2], f[3]);
        assert_eq!(kind, format!("{:?}", ErrorKind::InvalidInput), "{line}");
        assert!(text.contains("stack size 65536"), "{line}");
        assert!(!text.contains("affinity"), "{line}");
        assert!(hint.contains("Builder::stack_size"), "{line}");
        assert!(!hint.contains("changed it meanwhile"), "{line}");
    }
}

// ---------- rt::Setup ----------

/// The checklist's promise is that every failed step names its fix. A value
/// out of range for a step (a real-time priority limit outside 1..=99, a
/// negative wake-up latency) failed with no hint.
#[test]
fn a_setup_step_given_a_bad_value_names_the_fix() {
    use posixrt::sched::rt::Setup;
    for setup in [
        Setup::none().raise_rtprio(Some(0)),
        Setup::none().raise_rtprio(Some(100)),
        Setup::none().cpu_dma_latency(Some(-1)),
    ] {
        let report = setup.apply();
        let failures: Vec<_> = report.failures().collect();
        assert_eq!(failures.len(), 1, "{report}");
        let (what, e) = failures[0];
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{what}: {e}");
        assert!(
            e.hint().is_some_and(|h| !h.is_empty()),
            "no fix for {what}: {e}"
        );
    }
}
