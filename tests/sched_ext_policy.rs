//! Integration tests for `SCHED_EXT` (policy 7, Linux 6.12+): posixrt reads it
//! and moves a thread into and out of it; a kernel without sched_ext refuses
//! it with a hint that says so.

use posixrt::sched::{self, Policy, Priority};
use posixrt::ErrorKind;

#[test]
fn a_thread_moves_to_sched_ext_and_back_or_the_refusal_names_the_kernel_option() {
    std::thread::spawn(|| {
        let me = Some(sched::gettid());
        let ext = match Priority::new(Policy::Ext, 0) {
            Ok(p) => p,
            Err(e) => {
                // A kernel before 6.12: sched_get_priority_min(7) is EINVAL.
                assert_eq!(e.errno(), Some(libc::EINVAL), "{e}");
                return;
            }
        };
        match sched::set_scheduler(me, ext) {
            Ok(was) => {
                // CONFIG_SCHED_CLASS_EXT: the policy is taken even with no BPF
                // scheduler loaded (the thread runs as a fair one meanwhile).
                assert_eq!(was, Policy::Other);
                assert_eq!(sched::get_scheduler(me).unwrap(), Policy::Ext);
                assert_eq!(
                    sched::thread_scheduling(sched::gettid()).unwrap().policy(),
                    Policy::Ext
                );
                let was = sched::set_scheduler(me, Priority::other()).unwrap();
                assert_eq!(was, Policy::Ext);
                assert_eq!(sched::get_scheduler(me).unwrap(), Policy::Other);
            }
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
                let hint = e.hint().unwrap_or("");
                assert!(hint.contains("CONFIG_SCHED_CLASS_EXT"), "{hint}");
                assert_eq!(sched::get_scheduler(me).unwrap(), Policy::Other);
            }
        }
    })
    .join()
    .unwrap();
}

#[test]
fn sched_ext_reads_and_prints() {
    assert_eq!(Policy::from_raw(7), Some(Policy::Ext));
    assert_eq!(Policy::Ext.as_raw(), 7);
    assert_eq!(Policy::Ext.to_string(), "SCHED_EXT");
    assert!(Policy::ALL.contains(&Policy::Ext));
}
