//! Integration test for `posixrt::sched::sporadic::blocking` on a thread that is not
//! served: it only runs the call. The server thread runs at the top `SCHED_FIFO`
//! priority, so every message to it preempts whatever runs on its CPU; a thread
//! the server does not serve must not wake it. This is the only test in its binary,
//! so no served thread of another test wakes the server meanwhile.

use posixrt::sched::sporadic;
use posixrt::ErrorKind;

#[path = "common/caps.rs"]
mod caps;
use caps::can_rt;

/// How many times the thread `tid` of this process gave up the CPU by itself (it
/// does so each time it goes back to waiting for a signal).
fn voluntary_switches(tid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .map(|v| v.trim().parse().unwrap())
        .unwrap()
}

#[test]
fn blocking_on_a_thread_that_is_not_served_never_wakes_the_server() {
    let server = match sporadic::server_tid() {
        Ok(t) => t,
        Err(e) => {
            assert!(!can_rt(), "{e}");
            assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
            assert!(e.hint().is_some_and(|h| h.contains("CAP_SYS_NICE")), "{e}");
            return;
        }
    };
    // Wait until the new server sleeps in sigwaitinfo with nothing to do: it has
    // switched out at least once and its count no longer moves across a call.
    let mut before = voluntary_switches(server.as_raw());
    for _ in 0..1000 {
        std::thread::sleep(std::time::Duration::from_millis(5));
        let now = voluntary_switches(server.as_raw());
        if now == before && now > 0 {
            break;
        }
        before = now;
    }
    let mut ran = 0;
    for _ in 0..20 {
        ran += sporadic::blocking(|| 1);
    }
    assert_eq!(ran, 20);
    let after = voluntary_switches(server.as_raw());
    assert_eq!(
        after,
        before,
        "the server woke {} times for a thread it does not serve",
        after - before
    );
}
