//! Calls that reach only this process's threads, given the tid of a live thread
//! of another process: the refusal must say whose thread it is and what to use,
//! not that the thread has exited.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use posixrt::sched::cputime::CpuClock;
use posixrt::sched::sporadic::{self, SporadicParams};
use posixrt::sched::{self, Tid};
use posixrt::ErrorKind;

/// A child process that lives until killed (at most 60 s).
struct Sleeper(Child);

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sleeper() -> (Sleeper, Tid) {
    let child = Command::new("sleep")
        .arg("60")
        .stdin(Stdio::null())
        .spawn()
        .expect("sleep(1) is installed");
    let tid = Tid::from_raw(child.id() as i32).expect("a positive pid");
    // The parent may resume before exec has renamed the child.
    let comm = format!("/proc/{tid}/comm");
    for _ in 0..10_000 {
        if std::fs::read_to_string(&comm).is_ok_and(|c| c.trim_end() == "sleep") {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    (Sleeper(child), tid)
}

/// `kernel_priority`, `CpuClock::of_thread` and `sporadic::serve` on the main
/// thread of a running `sleep` said "the thread has exited (tids are reused...),
/// or it is in another PID namespace": a user checking the priority of a thread
/// of another program (an audio server's) was sent hunting for a stale tid.
#[test]
fn a_live_thread_of_another_process_is_named_as_such_not_as_exited() {
    let (_child, tid) = sleeper();
    let ms = Duration::from_millis;
    let errors = [
        (
            "kernel_priority",
            sched::kernel_priority(tid).map(|_| ()).unwrap_err(),
        ),
        (
            "CpuClock::of_thread",
            CpuClock::of_thread(tid).map(|_| ()).unwrap_err(),
        ),
        (
            "sporadic::serve",
            sporadic::serve(tid, SporadicParams::new(10, ms(10), ms(2), 4), 50)
                .map(|_| ())
                .unwrap_err(),
        ),
    ];
    for (what, e) in errors {
        assert_eq!(e.kind(), ErrorKind::NotFound, "{what}: {e}");
        let hint = e.hint().unwrap_or_default();
        assert!(!hint.contains("exited"), "{what}: {e}");
        assert!(
            hint.contains(&format!("process {tid}")) && hint.contains("sleep"),
            "{what}: the hint names no owner: {e}"
        );
    }
    // What the hints point to works on that thread.
    assert!(CpuClock::of_process(tid).unwrap().now().is_ok());
    assert!(sched::thread_scheduling(tid).is_ok());
}
