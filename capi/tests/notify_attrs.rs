//! How a `SIGEV_THREAD` notification's thread follows its attributes
//! (`sigev_notify_attributes`) and its submitter: the programs in `tests/c/`
//! that check it, run linked with `-lposixrt` and under
//! `LD_PRELOAD=libposixrt.so`, on both engines.

mod c_prog;
use c_prog::*;

/// Attributes naming every CPU a set can hold (all 1024 of a `cpu_set_t`,
/// or all of a larger `CPU_ALLOC` set) run the function on every CPU its
/// cpuset allows, as `pthread_create` with them would; attributes without a
/// set (or whose set was cleared) on its submitter's. A full set used to be
/// copied as no set: the function ran on the submitter's CPUs.
#[test]
fn a_full_cpu_set_is_a_set_given() {
    prints_ok("aio_notify_cpus_full.c", engines(), &[&[]]);
}

/// A `SCHED_FIFO` submitter without the privilege to use `SCHED_FIFO`
/// (`RLIMIT_RTPRIO` 0, uid 65534 without capabilities) gets its function run
/// at its own class with NULL or inheriting attributes, and at the one
/// explicit attributes name at or below its priority (a lower `SCHED_FIFO`
/// priority, `SCHED_OTHER`), as glibc's notification thread, which inherits
/// from a thread the submitter made. Its function used to run at
/// `SCHED_OTHER` (the library's thread that creates it could not take the
/// class), and explicit `SCHED_FIFO` attributes lost the notification.
/// "other-first": the library's notification threads started at
/// `SCHED_OTHER`; "fork": a child forked by the program after its requests
/// makes requests too; "rr": at `SCHED_RR`; "rtprio-2": with
/// `RLIMIT_RTPRIO` 2, below its priority. Needs root (to drop the privilege): elsewhere the program
/// says so and passes.
#[test]
fn an_unprivileged_fifo_submitter_s_function_keeps_its_class() {
    prints_ok(
        "aio_notify_class_unprivileged.c",
        engines(),
        &[&[], &["other-first"], &["fork"], &["rr"], &["rtprio-2"]],
    );
}

/// Attributes that give the program's own stack (`pthread_attr_setstack`, or
/// `pthread_attr_setstackaddr` with or without a size) run the function on
/// it; with the stack's top alone, on the default size below it, as
/// `pthread_create` does. Such an object used to be refused at submission
/// (EINVAL from `aio_read` and `lio_listio`): its size read as 0.
#[test]
fn the_program_s_own_stack_is_used() {
    prints_ok("aio_notify_own_stack.c", engines(), &[&[]]);
}

/// Explicit attributes with a real-time policy and no priority run the
/// function at that policy and its submitter's priority, as `pthread_create`
/// with them on the submitter does (glibc's notification thread is made by
/// a thread at the submitter's class). The copy used to name priority 0,
/// which no real-time policy has: the notification was lost.
#[test]
fn an_explicit_policy_without_a_priority_takes_the_submitter_s() {
    prints_ok("aio_notify_explicit_policy.c", engines(), &[&[]]);
}

/// A function whose attributes make a joinable thread may detach its own
/// thread (the usual way for a glibc program not to leak it): once it ended,
/// the library leaves its handle alone, which glibc gives to the next thread
/// made on the same stack (a joinable thread of the program's, here, made
/// through the program's own `pthread_create`, hence `-rdynamic`). The
/// library detached the thread after creating it, and so detached the
/// program's thread, which could no longer be joined.
#[test]
fn a_self_detached_function_s_handle_is_left_alone() {
    let mut flags = strict();
    flags.extend(["-rdynamic", "-ldl"]);
    prints_ok_built("aio_notify_self_detach.c", &flags, engines(), &[&[]]);
}

/// A function's thread has the name its submitter had when it submitted
/// (NULL attributes and an attribute object, `aio_read` and `lio_listio`),
/// as a thread it created would (glibc's notification thread, made by a
/// helper the submitter made, has it). It used to have the name of the
/// library's thread that created it ("posixrt-aio-not...").
#[test]
fn a_function_s_thread_has_its_submitter_s_name() {
    prints_ok("aio_notify_name.c", engines(), &[&[]]);
}
