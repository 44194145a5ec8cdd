//! Completion notification through the C interface (`struct sigevent`): the
//! programs in `tests/c/` that check it, run linked with `-lposixrt` and
//! under `LD_PRELOAD=libposixrt.so`, on both engines.

mod c_prog;
use c_prog::*;

/// A `SIGEV_THREAD` callback runs at the class of the thread that submitted
/// its request (NULL or inheriting attributes), or at the attributes'
/// explicit one; it used to take the class of the library thread that
/// noticed the completion (`SCHED_BATCH` on the thread engine). It runs at
/// the submitter's nice value too, with any attributes (a submitter at nice
/// 7, SCHED_OTHER and SCHED_BATCH); it used to run at the library thread's.
#[test]
fn sigev_thread_runs_at_the_submitter_s_class() {
    prints_ok("aio_notify_class.c", engines(), &[&[]]);
}

/// A sigevent naming a signal reserved by the C library (between SIGSYS and
/// SIGRTMIN: glibc's 32 and 33, which a program cannot handle and whose
/// default action ends the process) is EINVAL at submission: `aio_read`,
/// `aio_fsync`, `SIGEV_THREAD_ID`, and a `lio_listio` list's sigevent. It
/// used to be accepted, and the completion killed the program.
#[test]
fn reserved_signals_are_refused() {
    prints_ok("aio_notify_reserved.c", engines(), &[&[]]);
}

/// Delivery of many notifications and of a cancelled request's: one queued
/// signal per request with its value, `SI_ASYNCIO`, `si_pid` and `si_uid`;
/// blocking notification functions do not hold up another one; a cancelled
/// request and a partly cancelled `LIO_NOWAIT` list notify once, with the
/// final statuses visible; a notification function may submit the next
/// request and end its thread with `pthread_exit`.
#[test]
fn notifications_are_delivered_once_each() {
    prints_ok("aio_notify_delivery.c", engines(), &[&[]]);
}

/// A completion's `SIGEV_THREAD_ID` signal is generated before a waiter can
/// see the request done, as a `SIGEV_SIGNAL` one is: when the thread it names
/// waits for the request (`aio_suspend`, `aio_error`, `lio_listio` with
/// `LIO_WAIT`) and sees it done, its handler has run there. It used to be
/// sent by a notification thread after the waiters were woken, so the wait
/// often returned first.
#[test]
fn thread_id_signal_comes_before_the_waiters_wake() {
    prints_ok(
        "aio_thread_id_order.c",
        engines(),
        &[&["suspend"], &["error"], &["lio"]],
    );
}

/// `aio_error`, `aio_return` and `aio_suspend` (zero timeout) called by a
/// `SIGEV_SIGNAL` handler on requests still in progress, while other
/// requests that notify by `SIGEV_SIGNAL` and `SIGEV_THREAD` complete,
/// allocate nothing, free nothing and start no thread in the handler (the
/// program counts its own `malloc`, `free` and `pthread_create` calls there,
/// hence `-rdynamic`). Their reap used to grow the notifications' list, free
/// it, and start the `SIGEV_THREAD` functions' threads from the handler.
/// The main thread, where the handler runs, submitted requests ("used") or
/// never did ("fresh"). Also with a POSIX trace stream running ("trace"),
/// where the handler runs too on `SIGEV_THREAD` functions' threads, which
/// never recorded an event: there the reaps' `aio_complete` is counted lost
/// rather than set the thread up in the trace facility (without that, about
/// one allocation per handler run on io_uring).
#[test]
fn polls_from_a_signal_handler_do_not_allocate() {
    let include = format!("-I{CRATE}/include");
    let mut flags = strict();
    flags.extend(["-rdynamic", "-ldl", include.as_str()]);
    prints_ok_built(
        "aio_handler_no_alloc.c",
        &flags,
        engines(),
        &[
            &["used"],
            &["fresh"],
            &["used", "trace"],
            &["fresh", "trace"],
        ],
    );
}

/// A `SIGEV_THREAD` notification whose thread cannot be created for the
/// moment (`pthread_create` fails with EAGAIN, injected by the program's own
/// `pthread_create`, hence `-rdynamic`) is tried again until the thread is
/// created, and its function runs once. It used to be lost, as glibc loses
/// it. With "fork": a child forked while the library's retry thread held its
/// queue gets its own notifications (it used to wait for that queue's lock
/// forever).
#[test]
fn sigev_thread_creation_is_retried() {
    let mut flags = strict();
    flags.extend(["-rdynamic", "-ldl"]);
    prints_ok_built("aio_notify_retry.c", &flags, engines(), &[&[], &["fork"]]);
}

/// A `SIGEV_THREAD` notification's attributes are read at submission: the
/// program may destroy and free the object once `aio_read` or `lio_listio`
/// returned, and the function's thread still gets the stack size, guard size
/// and CPU set asked for. They used to be read after the waiters were woken,
/// from an object a program (correct under glibc, which creates the thread
/// before `aio_suspend` returns) may have destroyed by then.
#[test]
fn sigev_thread_attributes_are_read_at_submission() {
    prints_ok("aio_notify_attr_copy.c", engines(), &[&[]]);
}

/// `aio_suspend` called by a `SIGEV_SIGNAL` handler on a request that
/// completes later sleeps (a NULL timeout and a 10 s one, alone and beside
/// another thread that waits), and allocates nothing, frees nothing and starts
/// no thread in the handler, on a thread that never called the library
/// before and on one that did (the program counts its own `malloc`, `free`
/// and `pthread_create` calls there, hence `-rdynamic`). Also with a POSIX
/// trace stream running: the reaps' `aio_complete` on a thread that never
/// recorded an event used to set the thread up in the trace facility from
/// the handler (5 allocations and a lock, on io_uring); it is counted lost
/// there instead.
#[test]
fn a_handler_s_aio_suspend_sleeps_without_allocating() {
    let include = format!("-I{CRATE}/include");
    let mut flags = strict();
    flags.extend(["-rdynamic", "-ldl", include.as_str()]);
    prints_ok_built(
        "aio_handler_sleeps.c",
        &flags,
        engines(),
        &[
            &["fresh"],
            &["used"],
            &["fresh", "trace"],
            &["used", "trace"],
        ],
    );
}

/// A `SIGEV_THREAD` function runs on the CPU set its submitter had when it
/// submitted (NULL attributes, attributes without a CPU set, `lio_listio`),
/// or on the one its attributes name; a submitter that moved runs the next
/// on its new set. It used to run on the CPU set of the library thread that
/// created its thread (that of the first thread that asked for
/// `SIGEV_THREAD`).
#[test]
fn sigev_thread_runs_on_the_submitter_s_cpus() {
    prints_ok("aio_notify_cpus.c", engines(), &[&[]]);
}
