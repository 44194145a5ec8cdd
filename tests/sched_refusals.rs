//! Integration tests for `posixrt::sched`: refusals the kernel makes after the
//! crate's own checks passed, each reported with its cause and fix. Kernel
//! refusals that cannot be arranged safely on a shared machine (a changed
//! sysctl) are injected with a seccomp filter on one thread.

#[path = "common/seccomp.rs"]
mod seccomp;

use std::time::Duration;

use posixrt::sched::deadline::{self, Deadline, DeadlineFlags};
use posixrt::sched::{self};
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
