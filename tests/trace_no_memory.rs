//! A thread whose sub-buffer cannot be mapped (the address space limit) loses
//! its events, and they are counted lost: the status reports an overrun and
//! readers an OVERFLOW, as for any other dropped event.

use posixrt::trace::{self, Trace, TraceAttr};

#[path = "common/trace_read.rs"]
mod trace_read;
use trace_read::user_ids_and_lost;

/// The process's address space in use (`VmSize`), in bytes.
fn vm_size() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s.lines().find(|l| l.starts_with("VmSize:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

#[test]
fn events_of_a_thread_without_a_sub_buffer_are_counted_lost() {
    let ev = trace::eventid_open("tnm.event").unwrap();
    let mut a = TraceAttr::new();
    a.set_stream_size(1 << 30).unwrap(); // sub-buffers of 2 GiB
    let t = Trace::create(&a).unwrap();
    // Room for this test's small allocations, not for a 2 GiB sub-buffer.
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain getrlimit/setrlimit calls on valid structs.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_AS, &mut old), 0);
        let low = libc::rlimit {
            rlim_cur: vm_size() + (512 << 20),
            rlim_max: old.rlim_max,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_AS, &low), 0);
    }
    // Its START cannot be recorded either.
    t.start().unwrap();
    trace::event(ev, &[1]);
    trace::event(ev, &[2]);
    // Nor its STOP.
    t.stop().unwrap();
    // SAFETY: as above; restores the limit read before.
    unsafe { assert_eq!(libc::setrlimit(libc::RLIMIT_AS, &old), 0) };
    let overrun = t.status().overrun;
    let (ids, lost) = user_ids_and_lost(&t);
    let user = ids.iter().filter(|&&i| i == ev).count();
    t.shutdown().unwrap();
    assert_eq!(user, 0, "no sub-buffer: nothing recorded");
    assert_eq!(lost, 4, "START, the two events and STOP are counted lost");
    assert!(overrun, "the status reports the loss");
}
