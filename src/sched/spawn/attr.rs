//! `pthread_attr_t`: the attributes a thread is created with, and `pthread_create`.

use super::start::{thread_start, Start};
use crate::sched::hint::sched_error;
use crate::sched::{CpuSet, Priority};
use crate::{Error, Result};

/// An initialised `pthread_attr_t`, destroyed on drop.
pub(super) struct Attr(Box<libc::pthread_attr_t>);

impl Attr {
    pub(super) fn new() -> Result<Attr> {
        // SAFETY: zeroed storage is only used after pthread_attr_init initialises it.
        let mut a: Box<libc::pthread_attr_t> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: `a` points to writable storage for a pthread_attr_t.
        let r = unsafe { libc::pthread_attr_init(&mut *a) };
        crate::error::check_pthread("pthread_attr_init", r)?;
        Ok(Attr(a))
    }

    /// For the setters, which write the attributes: from `&mut self`, so
    /// nothing else reads them meanwhile.
    fn ptr(&mut self) -> *mut libc::pthread_attr_t {
        &mut *self.0
    }

    pub(super) fn stack_size(&mut self, size: usize) -> Result<()> {
        // SAFETY: the attr is initialised.
        let r = unsafe { libc::pthread_attr_setstacksize(self.ptr(), size) };
        crate::error::check_pthread("pthread_attr_setstacksize", r)
    }

    pub(super) fn explicit_sched(&mut self, p: Priority) -> Result<()> {
        let param = p.param();
        // SAFETY: the attr is initialised; `param` is only read.
        let r =
            unsafe { libc::pthread_attr_setinheritsched(self.ptr(), libc::PTHREAD_EXPLICIT_SCHED) };
        crate::error::check_pthread("pthread_attr_setinheritsched", r)?;
        // SAFETY: as above.
        let r = unsafe { libc::pthread_attr_setschedpolicy(self.ptr(), p.policy().as_raw()) };
        if r != 0 {
            return Err(sched_error(
                "pthread_attr_setschedpolicy",
                r,
                None,
                Some(p.policy()),
                Some(p.value()),
            ));
        }
        // SAFETY: as above.
        let r = unsafe { libc::pthread_attr_setschedparam(self.ptr(), &param) };
        if r != 0 {
            return Err(sched_error(
                "pthread_attr_setschedparam",
                r,
                None,
                Some(p.policy()),
                Some(p.value()),
            ));
        }
        Ok(())
    }

    pub(super) fn affinity(&mut self, cpus: &CpuSet) -> Result<()> {
        crate::sched::cpuset::check_not_empty(
            "pthread_attr_setaffinity_np",
            cpus,
            ", or leave Builder::affinity out to inherit the creator's",
        )?;
        crate::sched::cpuset::check_cpus_exist("pthread_attr_setaffinity_np", cpus)?;
        // SAFETY: the attr is initialised; the set is only read (glibc copies it).
        let r = unsafe {
            libc::pthread_attr_setaffinity_np(
                self.ptr(),
                std::mem::size_of::<libc::cpu_set_t>(),
                cpus.as_raw(),
            )
        };
        crate::error::check_pthread("pthread_attr_setaffinity_np", r)
    }

    pub(super) fn create<F, T>(
        &self,
        start: Box<Start<F, T>>,
        prio: Option<Priority>,
        affinity: Option<&CpuSet>,
        stack_size: Option<usize>,
    ) -> Result<libc::pthread_t>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let arg = Box::into_raw(start);
        let mut native: libc::pthread_t = 0;
        // SAFETY: the attr is initialised; `thread_start::<F, T>` takes ownership of
        // `arg` (a leaked Box<Start<F, T>>) if and only if creation succeeds.
        let r = unsafe {
            libc::pthread_create(&mut native, &*self.0, thread_start::<F, T>, arg.cast())
        };
        if r != 0 {
            // SAFETY: creation failed, so no thread took `arg`; reclaim it once.
            drop(unsafe { Box::from_raw(arg) });
            if r == libc::EINVAL {
                return Err(create_einval(affinity, stack_size));
            }
            let e = sched_error(
                "pthread_create",
                r,
                None,
                prio.map(|p| p.policy()),
                prio.map(|p| p.value()),
            );
            return Err(match r {
                libc::EAGAIN if creator_is_deadline_without_reset_on_fork() => e
                    .with_message(
                        "the creating thread is SCHED_DEADLINE without SCHED_FLAG_RESET_ON_FORK, \
                         and the kernel refuses to clone such a thread",
                    )
                    .with_hint(
                        "give the creator's Deadline DeadlineFlags::RESET_ON_FORK (the new \
                         thread then starts SCHED_OTHER, or with its Builder::scheduling), or \
                         create the threads before switching to SCHED_DEADLINE",
                    ),
                libc::EAGAIN => {
                    let e = e.with_message(
                        "thread limit reached (RLIMIT_NPROC, threads-max) or no memory for the stack",
                    );
                    if crate::sched::rt::memlock_limits_new_mappings() {
                        let locked = crate::sched::rt::locked_bytes();
                        e.with_hint(format!(
                            "memory is locked ({} KiB, mlockall MCL_FUTURE): the new stack must \
                             fit in RLIMIT_MEMLOCK ({}); give the thread a smaller \
                             Builder::stack_size, raise memlock in /etc/security/limits.conf, \
                             or run with CAP_IPC_LOCK",
                            locked / 1024,
                            crate::sched::rt::memlock_limit()
                        ))
                    } else {
                        e
                    }
                }
                _ => e,
            });
        }
        Ok(native)
    }
}

/// EINVAL from `pthread_create`, whose two causes share the errno: glibc refuses
/// a stack too small for the guard page and the static TLS block it places in
/// it, and the kernel refuses an affinity with no online CPU of the cpuset. The
/// affinity is blamed when it is given and no stack size is, or when it names
/// no usable CPU; otherwise the stack size is. (The priority is not a cause: it
/// was checked against its policy when the `Priority` was built.)
fn create_einval(affinity: Option<&CpuSet>, stack_size: Option<usize>) -> Error {
    let e = Error::from_errno("pthread_create", libc::EINVAL);
    let blame_affinity = match (affinity, stack_size) {
        (Some(_), None) => true,
        (Some(cpus), Some(_)) => crate::sched::hint::affinity_usable(cpus) == Some(false),
        (None, _) => false,
    };
    match (affinity, stack_size) {
        (Some(cpus), _) if blame_affinity => e
            .with_message(format!(
                "the affinity {cpus} names no CPU the thread may use"
            ))
            .with_hint(crate::sched::hint::affinity_einval_hint("pthread_create")),
        (_, Some(size)) => e
            .with_message(format!("the stack size {size} was refused"))
            .with_hint(
                "glibc places the guard page and the static TLS block (larger with \
                 GLIBC_TUNABLES glibc.rtld.optional_static_tls, or with libraries that use \
                 initial-exec TLS) inside the stack, and refuses a stack with too little \
                 room left: give Builder::stack_size more, or leave it out for the default",
            ),
        _ => e.with_message("glibc or the kernel refused the thread's attributes"),
    }
}

/// Whether the calling thread is `SCHED_DEADLINE` without `SCHED_FLAG_RESET_ON_FORK`:
/// the kernel then fails every clone with EAGAIN (`sched_fork`).
fn creator_is_deadline_without_reset_on_fork() -> bool {
    crate::sys::sched::getattr(0)
        .is_ok_and(|a| a.sched_policy == libc::SCHED_DEADLINE as u32 && a.sched_flags & 0x01 == 0)
}

impl Drop for Attr {
    fn drop(&mut self) {
        // SAFETY: the attr was initialised by pthread_attr_init and is destroyed once.
        unsafe { libc::pthread_attr_destroy(&mut *self.0) };
    }
}
