//! Integration test for `posixrt::sched::rt::Setup`'s report once future
//! mappings are locked under `RLIMIT_MEMLOCK`: what it means for new threads.

#[path = "common/caps.rs"]
mod caps;
#[path = "common/memlock.rs"]
mod memlock;
#[path = "common/probe.rs"]
mod probe;

use posixrt::sched::rt::{self, Setup};
use posixrt::sched::Builder;
use posixrt::ErrorKind;

const PROBE_ENV: &str = "POSIXRT_SETUP_THREADS_PROBE";

/// Runs only in the child of the test below, without CAP_IPC_LOCK: locks
/// future mappings with 1 MiB of RLIMIT_MEMLOCK to spare, then prints the
/// report's lines about threads and what a default spawn does.
#[test]
#[ignore = "helper: run by a_setup_that_leaves_no_room_for_a_thread_stack_says_so"]
fn setup_threads_probe() {
    if !memlock::probe_applies(PROBE_ENV, "THREADS") || !memlock::lock_future_mappings("THREADS") {
        return;
    }
    memlock::set_soft_memlock(rt::locked_bytes() + (1 << 20));
    let report = Setup::none().apply();
    let spawned = Builder::new().spawn(|| ()).map(|h| h.join().is_ok());
    let text = report.to_string();
    let line = text
        .lines()
        .find(|l| l.contains("new threads"))
        .unwrap_or("no thread line");
    println!("THREADS {line} | spawn {:?}", spawned.map_err(|e| e.kind()));
}

/// After `mlockall(MCL_FUTURE)` without CAP_IPC_LOCK every new thread's stack
/// is locked as it is mapped, and must fit in what RLIMIT_MEMLOCK leaves; the
/// default stack (RLIMIT_STACK, 8 MiB) of an unprivileged process under the
/// default 8 MiB limit never does, so every later spawn fails with EAGAIN. The
/// setup report, whose lines are all [x], did not say so; it now does, with the
/// fix.
#[test]
fn a_setup_that_leaves_no_room_for_a_thread_stack_says_so() {
    let Some(line) = memlock::run_without_ipc_lock("setup_threads_probe", PROBE_ENV, "THREADS")
    else {
        return;
    };
    // The situation the report must describe: a default spawn is refused.
    assert!(
        line.ends_with(&format!("spawn Err({:?})", ErrorKind::WouldBlock)),
        "{line}"
    );
    assert!(line.contains("Builder::stack_size"), "{line}");
    assert!(line.contains("RLIMIT_MEMLOCK"), "{line}");
}
