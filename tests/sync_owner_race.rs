//! The owner a waiter notes in a tracked record while the owner is unlocking.
//!
//! A waiter that finds a record without an owner (tracking switched on while the
//! lock was held) writes the owner it read from the lock word into the record.
//! If the owner is unlocking at that moment, between clearing the record and
//! releasing the word, the waiter writes a stale owner. The test stops the owner
//! exactly there, deterministically: a `PiMutex` with a kernel waiter is
//! released inside `FUTEX_UNLOCK_PI`, and a seccomp user-notification filter on
//! the owner thread holds that system call until a second waiter has noted the
//! owner. All threads share one CPU under SCHED_FIFO, below the owner, so the
//! waiter the kernel hands the mutex to cannot run and record itself before the
//! owner looks at the record.

#![cfg(target_arch = "x86_64")]

#[path = "common/tracking.rs"]
mod tracking;
use tracking::{poll, serial};

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc;

use posixrt::sched::{Builder, CpuSet, Priority};
use posixrt::sync::{current_tid, objects, PiMutex, Tracking};
use posixrt::ErrorKind;

const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
const FUTEX_UNLOCK_PI_PRIVATE: u32 = 7 | 128;

/// A BPF statement or jump of a seccomp filter.
fn insn(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// Installs, on the calling thread only, a filter that hands each private
/// `FUTEX_UNLOCK_PI` to a supervisor; returns the listener.
fn trap_unlock_pi() -> OwnedFd {
    const LD_ABS_W: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    let prog = [
        insn(LD_ABS_W, 0, 0, 4), // arch
        insn(JEQ_K, 0, 5, AUDIT_ARCH_X86_64),
        insn(LD_ABS_W, 0, 0, 0), // nr
        insn(JEQ_K, 0, 3, libc::SYS_futex as u32),
        insn(LD_ABS_W, 0, 0, 24), // low half of args[1], the futex op
        insn(JEQ_K, 0, 1, FUTEX_UNLOCK_PI_PRIVATE),
        insn(RET_K, 0, 0, libc::SECCOMP_RET_USER_NOTIF),
        insn(RET_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ];
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: PR_SET_NO_NEW_PRIVS takes plain integers (needed to install a filter
    // without CAP_SYS_ADMIN; it applies to this thread only).
    assert_eq!(
        unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) },
        0
    );
    // SAFETY: `fprog` points to `prog`, both alive for the call; the flags ask for
    // a listener fd, which the kernel returns.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &fprog as *const libc::sock_fprog,
        )
    };
    assert!(fd >= 0, "seccomp: {}", std::io::Error::last_os_error());
    // SAFETY: the kernel just returned this fd; nothing else owns it.
    unsafe { OwnedFd::from_raw_fd(fd as i32) }
}

/// Receives one trapped system call; its id.
fn receive(listener: &OwnedFd) -> u64 {
    // SAFETY: seccomp_notif is plain data; all zeroes is what RECV expects.
    let mut n: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: RECV writes one seccomp_notif into `n`, which is large enough.
    let r = unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_RECV, &mut n) };
    assert_eq!(r, 0, "NOTIF_RECV: {}", std::io::Error::last_os_error());
    n.id
}

/// Lets the trapped system call `id` run as if no filter were there.
fn resume(listener: &OwnedFd, id: u64) {
    let mut resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: 0,
        flags: libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
    };
    // SAFETY: SEND reads one seccomp_notif_resp from `resp`.
    let r = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND,
            &mut resp,
        )
    };
    assert_eq!(r, 0, "NOTIF_SEND: {}", std::io::Error::last_os_error());
}

fn fifo(cpu: usize, prio: i32) -> Builder {
    Builder::new()
        .scheduling(Priority::fifo(prio).expect("priority"))
        .affinity(CpuSet::single(cpu).expect("cpu"))
}

/// The owner the record names once the owner's unlock returned (before the
/// thread the kernel handed the mutex to could run).
#[test]
fn a_waiter_noting_the_owner_during_its_unlock_leaves_no_stale_owner() {
    let _g = serial(Tracking::Off);
    let cpu = CpuSet::allowed()
        .expect("affinity")
        .iter()
        .last()
        .expect("a CPU");
    if let Err(e) = fifo(cpu, 10).spawn(|| ()).map(|h| h.join()) {
        assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
        return;
    }
    static M: PiMutex<()> = PiMutex::const_new(posixrt::sync::RawPiMutex::new(), ());
    static OWNER: AtomicU32 = AtomicU32::new(0);
    static UNLOCK_RETURNED: AtomicBool = AtomicBool::new(false);
    let addr = unsafe { M.raw() } as *const _ as usize;
    let (listener_tx, listener_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    // The owner: locks with tracking off (so its record, made later by a waiter,
    // names nobody), then unlocks with a filter that traps FUTEX_UNLOCK_PI.
    let owner = fifo(cpu, 50)
        .spawn(move || {
            let g = M.lock();
            OWNER.store(current_tid(), Ordering::SeqCst);
            listener_tx.send(trap_unlock_pi()).expect("send");
            go_rx.recv().expect("go");
            drop(g); // FUTEX_UNLOCK_PI: a waiter is queued in the kernel
            UNLOCK_RETURNED.store(true, Ordering::SeqCst);
            // Still on the CPU ahead of the FIFO-20 waiter the kernel handed the
            // mutex to, which has not recorded itself yet.
            objects()
                .into_iter()
                .find(|o| o.info.address == addr)
                .and_then(|o| o.info.owner)
        })
        .expect("owner");
    let listener = listener_rx.recv().expect("listener");
    posixrt::sync::set_tracking(Tracking::Counts);
    // The first waiter makes the record (naming the owner it finds in the word)
    // and is queued in the kernel, so the unlock is a system call.
    let first = fifo(cpu, 10)
        .spawn(|| drop(M.lock()))
        .expect("first waiter");
    assert!(poll(|| unsafe { M.raw() }.has_waiters()));
    go_tx.send(()).expect("go");
    let id = receive(&listener);
    // The owner is inside its unlock: record cleared, word not released yet. The
    // second waiter finds no owner in the record and notes the one in the word.
    let second = fifo(cpu, 20)
        .spawn(|| drop(M.lock()))
        .expect("second waiter");
    assert!(poll(|| unsafe { M.raw() }
        .snapshot()
        .is_some_and(|s| s.info.waiters == 2)));
    assert!(!UNLOCK_RETURNED.load(Ordering::SeqCst));
    resume(&listener, id);
    let seen = owner.join().expect("owner");
    first.join().expect("first waiter");
    second.join().expect("second waiter");
    posixrt::sync::set_tracking(Tracking::Off);
    let o = OWNER.load(Ordering::SeqCst);
    assert_ne!(seen, Some(o), "the record names the owner that unlocked");
}
