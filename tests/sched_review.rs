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

/// Whether the calling thread has SCHED_FLAG_RESET_ON_FORK (`sched_getattr`).
fn resets_on_fork() -> bool {
    posixrt::sched::deadline::get(posixrt::sched::gettid())
        .unwrap()
        .flags
        & libc::SCHED_FLAG_RESET_ON_FORK as u64
        != 0
}

/// A thread whose launcher gave it SCHED_RESET_ON_FORK (rtkit, `chrt -R`) keeps
/// the flag through every policy change posixrt makes (the module docs), and
/// `deadline::set` is one. It cleared it: the thread then also could not create a
/// thread any more (a SCHED_DEADLINE thread without the flag cannot clone:
/// EAGAIN), though it could before the switch.
#[test]
fn deadline_set_keeps_sched_reset_on_fork() {
    use posixrt::sched::deadline::{self, Deadline};
    use posixrt::sched::{self, Priority};
    use std::time::Duration;
    let ms = Duration::from_millis;
    let r = Builder::new()
        .spawn(move || {
            let p = libc::sched_param { sched_priority: 0 };
            let policy = libc::SCHED_OTHER | libc::SCHED_RESET_ON_FORK;
            // SAFETY: `p` is a valid sched_param the call only reads; this thread only.
            assert_eq!(unsafe { libc::sched_setscheduler(0, policy, &p) }, 0);
            assert!(resets_on_fork());
            let dl = Deadline::new(ms(2), ms(100), ms(100)).unwrap();
            let mut tries = 0;
            let set = loop {
                match deadline::set(sched::gettid(), &dl) {
                    Err(e) if e.kind() == ErrorKind::Busy && tries < 50 => {
                        tries += 1;
                        std::thread::sleep(ms(20));
                    }
                    r => break r,
                }
            };
            let kept = resets_on_fork();
            let spawned = Builder::new().spawn(|| ()).map(|h| h.join().is_ok());
            // Back to a fair policy before the thread ends.
            let _ = sched::set_current_scheduling(Priority::other());
            (set, kept, spawned)
        })
        .unwrap()
        .join()
        .unwrap();
    let (set, kept, spawned) = r;
    if let Err(e) = set {
        let privileged = rustix::thread::capabilities(None).is_ok_and(|c| {
            c.effective
                .contains(rustix::thread::CapabilitySet::SYS_NICE)
        });
        assert!(!privileged, "{e}");
        assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
        return;
    }
    assert!(kept, "deadline::set cleared SCHED_RESET_ON_FORK");
    assert_eq!(spawned.map_err(|e| e.to_string()), Ok(true));
}

/// A kernel thread bound to its CPU (`PF_NO_SETAFFINITY`: ksoftirqd/N,
/// migration/N), the first visible one, with its tid and name.
fn bound_kernel_thread() -> Option<(i32, String)> {
    const PF_NO_SETAFFINITY: u64 = 0x0400_0000;
    std::fs::read_dir("/proc").ok()?.find_map(|e| {
        let tid: i32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{tid}/stat")).ok()?;
        let (head, rest) = stat.rsplit_once(')')?;
        let comm = head.split_once('(')?.1.to_string();
        // Field 9 (flags) is the 7th after the name.
        let flags: u64 = rest.split_whitespace().nth(6)?.parse().ok()?;
        (flags & PF_NO_SETAFFINITY != 0).then_some((tid, comm))
    })
}

/// Moving a kernel thread bound to its CPU fails with EINVAL, whatever the set;
/// the hint blamed the set ("no CPU of the set is both online (0-1) and allowed
/// by this process's cpuset (0-1)") for a set of CPUs that are all online and
/// allowed. It now says the thread itself refuses, and names it.
#[test]
fn a_thread_that_refuses_any_affinity_is_named_not_the_set() {
    use posixrt::sched::{self, CpuSet, Tid};
    let Some((tid, comm)) = bound_kernel_thread() else {
        // A PID namespace shows no kernel thread: nothing to move.
        println!("no bound kernel thread visible; skipped");
        return;
    };
    let set = CpuSet::allowed().unwrap();
    let before = sched::thread_affinity(Tid::from_raw(tid).unwrap()).unwrap();
    let e = sched::set_thread_affinity(Tid::from_raw(tid).unwrap(), &set).unwrap_err();
    let privileged = rustix::thread::capabilities(None).is_ok_and(|c| {
        c.effective
            .contains(rustix::thread::CapabilitySet::SYS_NICE)
    });
    if !privileged {
        assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
        return;
    }
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    let hint = e.hint().unwrap_or_default();
    assert!(!hint.contains("no CPU of the set"), "{e}");
    assert!(hint.contains(&comm), "{e}");
    assert!(hint.contains("kernel thread"), "{e}");
    assert_eq!(
        sched::thread_affinity(Tid::from_raw(tid).unwrap()).unwrap(),
        before
    );
}

/// `sched_setattr` takes a zero period as "period = deadline", and C code ported
/// from it passes 0. `Deadline::new` asks for the period explicitly; its refusal
/// said only "all > 0", not that the kernel's 0 is the deadline, which is the
/// value to pass.
#[test]
fn a_zero_deadline_period_is_refused_with_the_kernels_meaning_of_zero() {
    use posixrt::sched::deadline::Deadline;
    use std::time::Duration;
    let ms = Duration::from_millis;
    let e = Deadline::new(ms(2), ms(10), Duration::ZERO).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    let hint = e.hint().unwrap_or_default();
    assert!(hint.contains("period = deadline"), "{e}");
    assert!(hint.contains("10ms"), "{e}");
}

/// A tid that names no thread of this process (one that has exited) is
/// NotFound with a hint, for the effective priority and the thread CPU clock
/// as for the other calls by tid.
#[test]
fn an_exited_thread_is_not_found_with_a_hint() {
    let h = Builder::new().spawn(|| ()).unwrap();
    let tid = h.tid();
    h.join().unwrap();
    let errors = [
        (
            "kernel_priority",
            posixrt::sched::kernel_priority(tid).map(drop).unwrap_err(),
        ),
        (
            "CpuClock::of_thread",
            posixrt::sched::cputime::CpuClock::of_thread(tid)
                .map(drop)
                .unwrap_err(),
        ),
    ];
    for (what, e) in errors {
        assert_eq!(e.kind(), ErrorKind::NotFound, "{what}: {e}");
        let hint = e.hint().unwrap_or_else(|| panic!("{what}: no hint: {e}"));
        assert!(hint.contains("exited"), "{what}: {hint}");
    }
}
