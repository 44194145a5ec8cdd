//! A semaphore's statistics in a forked child: the child keeps what the
//! parent counted (its copy of the record), timed-out waits included, while
//! the parent's waiters, which do not exist there, are forgotten.

#[path = "common/child.rs"]
mod child;
#[path = "common/waits.rs"]
mod waits;

use posixrt::sync::{self, Semaphore, Tracking};
use posixrt::ErrorKind;

#[test]
fn a_forked_child_keeps_a_semaphores_timeouts() {
    sync::set_tracking(Tracking::Counts);
    let s = Semaphore::new(0).unwrap();
    s.set_name("fork-sem-timeouts");
    let e = s.wait_until(waits::past()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TimedOut);
    let st = s.snapshot().expect("known").stats;
    assert_eq!((st.timed_waits, st.timeouts), (1, 1), "{st:?}");
    // SAFETY: no other thread of this test binary takes a lock the checks
    // take.
    let r = unsafe {
        child::in_child(|| {
            let st = s.snapshot().ok_or("not known in the child")?.stats;
            if (st.timed_waits, st.timeouts) != (1, 1) {
                return Err(format!("the parent's timeouts are lost: {st:?}"));
            }
            Ok(())
        })
    };
    sync::set_tracking(Tracking::Off);
    r.unwrap();
}
