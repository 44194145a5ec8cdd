//! Unit tests of the request table.

use super::*;

fn admitted(core: &mut Core, fd: i32, priority: i32) -> u32 {
    let op = RawOp {
        kind: OpKind::Read,
        fd,
        offset: 0,
        ptr: 0,
        len: 0,
        ordered: false,
    };
    let class = SchedClass {
        policy: libc::SCHED_FIFO,
        priority,
    };
    let (idx, _) = core.alloc_as(op, 0, class, &mut Notify::None, NO_LIST);
    core.admit(idx, false);
    idx
}

/// A request cancelled while it waited leaves its entry on top of the
/// ready queue: the class of the one behind it is still found (the pool
/// switches a sleeping worker to it), and `pop_ready` gives that one.
#[test]
fn first_ready_class_looks_past_a_cancelled_request() {
    let mut core = Core::new();
    let high = admitted(&mut core, 3, 60);
    let low = admitted(&mut core, 4, 50);
    assert_eq!(core.first_ready_class().map(|c| c.priority), Some(60));
    core.complete(high, -(libc::ECANCELED as i64));
    assert_eq!(core.ready_len(), 1);
    assert_eq!(
        core.first_ready_class(),
        Some(SchedClass {
            policy: libc::SCHED_FIFO,
            priority: 50
        })
    );
    assert_eq!(core.pop_ready(), Some(low));
    assert_eq!(core.first_ready_class(), None);
    assert_eq!(core.pop_ready(), None);
}
