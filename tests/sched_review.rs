//! Review tests of `posixrt::sched`: refusals and what they tell the user.

use posixrt::sched::Builder;
use posixrt::ErrorKind;

/// Every attribute `Builder::spawn` refuses before creating the thread carries a
/// hint, as its other refusals do (the attribute combinations, an empty CPU
/// set, a stack larger than any address space). A name of 16 bytes, a name
/// with a NUL byte and a stack below PTHREAD_STACK_MIN came with none.
#[test]
fn a_bad_name_or_stack_size_is_refused_with_a_hint() {
    let refused = [
        ("a 16-byte name", Builder::new().name("sixteen-bytes-xx")),
        ("a name with a NUL", Builder::new().name("a\0b")),
        ("a tiny stack", Builder::new().stack_size(1024)),
        ("no stack", Builder::new().stack_size(0)),
    ];
    for (what, b) in refused {
        let e = b.spawn(|| ()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{what}: {e}");
        assert!(
            e.hint().is_some_and(|h| !h.is_empty()),
            "no hint for {what}: {e}"
        );
    }
}

/// `sched_setscheduler` returns the policy the thread had before (the seed: "returns
/// as its normal result the former policy"; POSIX); a C program keeps it to
/// restore later. `set_scheduler` returned `()`, so a port had to read the
/// policy in a separate call first. Fair policies: no privilege needed.
#[test]
fn set_scheduler_returns_the_former_policy() {
    use posixrt::sched::{self, Policy, Priority};
    let seen = Builder::new()
        .scheduling(Priority::other())
        .spawn(|| {
            let me = Some(sched::gettid());
            let a = sched::set_scheduler(None, Priority::batch()).unwrap();
            let b = sched::set_scheduler(me, Priority::other()).unwrap();
            let c = sched::set_scheduler(None, Priority::other()).unwrap();
            (a, b, c, sched::get_scheduler(None).unwrap())
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(
        seen,
        (Policy::Other, Policy::Batch, Policy::Other, Policy::Other)
    );
}
