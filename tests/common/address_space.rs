//! Tests under a tight address-space limit (`RLIMIT_AS`):
//! `#[path = "common/address_space.rs"] mod address_space;`. A test binary that
//! uses it holds one such test: the limit is the whole process's.
#![allow(dead_code)]

/// The process's address space in use (`VmSize`), in bytes.
pub fn vm_size() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s.lines().find(|l| l.starts_with("VmSize:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

/// Runs `f` with `RLIMIT_AS` at the address space in use plus `room` bytes,
/// then restores the limit.
pub fn with_address_space_room<R>(room: u64, f: impl FnOnce() -> R) -> R {
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain getrlimit/setrlimit calls on valid structs.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_AS, &mut old), 0);
        let low = libc::rlimit {
            rlim_cur: vm_size() + room,
            rlim_max: old.rlim_max,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_AS, &low), 0);
    }
    let r = f();
    // SAFETY: as above; restores the limit read before.
    unsafe { assert_eq!(libc::setrlimit(libc::RLIMIT_AS, &old), 0) };
    r
}
