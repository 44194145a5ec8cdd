//! Integration test for the `sched_change` trace event of `posixrt::sched`:
//! its policy fields are `SCHED_*` values.

use posixrt::sched::{self, Priority};
use posixrt::trace::system_events::{self as sys, Value};
use posixrt::trace::{Trace, TraceAttr};

/// `(old_policy, new_policy)` of every `sched_change` event of thread `tid`.
fn policy_changes(t: &Trace, tid: i32) -> Vec<(i64, i64)> {
    let types: std::collections::BTreeMap<u16, _> =
        t.event_types().map(|ty| (ty.id.raw(), ty)).collect();
    t.events()
        .filter_map(|e| {
            let ty = types.get(&e.id.raw())?;
            if ty.name != "sched_change" {
                return None;
            }
            let vals = sys::decode(&ty.fields, &e.data).expect("sched_change payload");
            let get = |k: &str| {
                vals.iter()
                    .find(|(n, _)| *n == k)
                    .and_then(|(_, v)| match v {
                        Value::I(v) => Some(*v),
                        _ => None,
                    })
            };
            (get("tid")? == i64::from(tid)).then_some(())?;
            Some((get("old_policy")?, get("new_policy")?))
        })
        .collect()
}

/// A thread with `SCHED_RESET_ON_FORK` (which `sched` keeps across its changes)
/// gets `sched_getscheduler` values with the flag ORed in (0x40000000). The
/// event carried those raw values as its "policy" fields, so a trace reader
/// matching `new_policy == SCHED_BATCH` missed the change. They are now the
/// policy alone.
#[test]
fn sched_change_policies_leave_out_the_reset_on_fork_flag() {
    let mut a = TraceAttr::new();
    a.set_stream_size(1 << 20).unwrap();
    let t = Trace::create(&a).unwrap();
    t.start().unwrap();
    let tid = std::thread::spawn(|| {
        let p = libc::sched_param { sched_priority: 0 };
        // SAFETY: `p` is a valid sched_param; 0 is the calling thread. Any thread
        // may set the flag on itself.
        let r = unsafe {
            libc::sched_setscheduler(0, libc::SCHED_OTHER | libc::SCHED_RESET_ON_FORK, &p)
        };
        assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
        sched::set_current_scheduling(Priority::batch()).unwrap();
        sched::gettid().as_raw()
    })
    .join()
    .unwrap();
    t.stop().unwrap();
    let changes = policy_changes(&t, tid);
    assert_eq!(
        changes,
        [(i64::from(libc::SCHED_OTHER), i64::from(libc::SCHED_BATCH))],
        "{changes:x?}"
    );
}
