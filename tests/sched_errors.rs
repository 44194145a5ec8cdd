//! Integration tests for `posixrt::sched`: errors that name their real cause.
//!
//! They run as root in CI; what needs CAP_SYS_NICE checks for it and, without it,
//! asserts the documented refusal instead.

use std::sync::{Mutex, MutexGuard};

use posixrt::sched::rt::{self, LockFlags};
use posixrt::ErrorKind;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// `MCL_ONFAULT` alone is not a valid `mlockall` request (the kernel answers
/// EINVAL): it is refused before the call, as bad input, with no talk of
/// RLIMIT_MEMLOCK or CAP_IPC_LOCK, which could not fix it.
#[test]
fn mlockall_with_only_on_fault_is_invalid_input_not_a_limit_problem() {
    let _g = serial();
    let e = rt::lock_memory(LockFlags {
        current: false,
        future: false,
        on_fault: true,
    })
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    let text = e.to_string();
    assert!(text.contains("MCL_ONFAULT"), "{text}");
    assert!(!text.contains("RLIMIT_MEMLOCK"), "{text}");
    assert!(!text.contains("CAP_IPC_LOCK"), "{text}");
    assert_eq!(rt::locked_bytes(), 0, "nothing was locked");
}
