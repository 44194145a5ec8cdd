//! Forcing one system call to fail: a seccomp filter on the calling thread
//! and the threads it creates from then on (no TSYNC: the rest of the process
//! is not filtered). `#[path = "common/seccomp.rs"] mod seccomp;`.
#![allow(dead_code)]

const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const RET_K: u16 = 0x06;
/// Offsets in `struct seccomp_data`: the call's number, and the low word of
/// its second argument (little-endian targets).
const NR: u32 = 0;
const ARG1_LO: u32 = 24;

fn op(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// Makes system call `nr` fail with `errno`; with `arg1`, only the calls whose
/// second argument's low word is `arg1`. Everything else is allowed.
pub fn fail_syscall(nr: libc::c_long, arg1: Option<u32>, errno: i32) {
    let mut filter = vec![op(LD_W_ABS, 0, 0, NR)];
    match arg1 {
        None => filter.push(op(JEQ_K, 0, 1, nr as u32)),
        Some(a) => {
            filter.push(op(JEQ_K, 0, 3, nr as u32));
            filter.push(op(LD_W_ABS, 0, 0, ARG1_LO));
            filter.push(op(JEQ_K, 0, 1, a));
        }
    }
    filter.push(op(RET_K, 0, 0, libc::SECCOMP_RET_ERRNO | errno as u32));
    filter.push(op(RET_K, 0, 0, libc::SECCOMP_RET_ALLOW));
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: plain prctl/seccomp calls with a valid program that outlives
    // them; no TSYNC flag, so only this thread (and its future children) is
    // filtered.
    let r = unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &prog as *const libc::sock_fprog,
        )
    };
    assert_eq!(r, 0, "seccomp: {}", std::io::Error::last_os_error());
}

/// Starts the process's sporadic server from a new thread where system call
/// `nr` fails with `errno` (as [`fail_syscall`] says): the server thread
/// inherits the filter, the rest of the process does not.
pub fn start_sporadic_server_failing(nr: libc::c_long, arg1: Option<u32>, errno: i32) {
    std::thread::spawn(move || {
        fail_syscall(nr, arg1, errno);
        posixrt::sched::sporadic::server_tid().unwrap();
    })
    .join()
    .unwrap();
}
