//! The C interface, tested from C: the programs in `tests/c/`, compiled with
//! the system `cc`, run linked with `-lposixrt` and under
//! `LD_PRELOAD=libposixrt.so`, on both engines (the seed's listings 7.7 and
//! 7.8 and the installed library: `tests/c_listings.rs`).

use std::collections::HashMap;
use std::process::Command;

use rt::aio::capi::{Aiocb, SigEvent};

mod c_prog;
use c_prog::*;

fn semantics(link: Link, backend: &str, extra: &[&str]) {
    let mut flags = strict();
    flags.extend_from_slice(extra);
    let exe = build(&c_src("aio_semantics.c"), link, &flags);
    let o = run(
        &exe,
        link,
        &["all"],
        &[("POSIXRT_AIO_BACKEND", backend), ("POSIXRT_AIO_DEBUG", "1")],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "ok",
        "{link:?} {backend}: {:?}\n{err}",
        o.status
    );
    // The library, not glibc, ran the requests, on the engine asked for (the
    // parent's engine, then the forked child's fresh one).
    let engines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("libposixrt: engine: "))
        .collect();
    assert_eq!(
        engines.len(),
        2,
        "{link:?} {backend}: expected 2 engine lines:\n{err}"
    );
    for l in engines {
        assert!(
            l.starts_with(&format!("libposixrt: engine: {backend} ")),
            "{link:?}: wanted {backend}, got {l}"
        );
    }
}

#[test]
fn semantics_linked_uring() {
    if !uring_allowed() {
        return;
    }
    semantics(Link::Linked, "uring", &[]);
}

#[test]
fn semantics_linked_threads() {
    semantics(Link::Linked, "threads", &[]);
}

#[test]
fn semantics_preloaded_uring() {
    if !uring_allowed() {
        return;
    }
    semantics(Link::Preloaded, "uring", &[]);
}

#[test]
fn semantics_preloaded_threads() {
    semantics(Link::Preloaded, "threads", &[]);
}

/// `aio_suspend` (with and without a timeout) and `lio_listio(LIO_WAIT)` go
/// on after a signal handler installed with `SA_RESTART`, as POSIX says (glibc
/// does without a timeout); without `SA_RESTART` they return -1/EINTR. Both
/// engines, linked and preloaded.
#[test]
fn waits_restart_after_sa_restart_handlers() {
    prints_ok("aio_restart.c", engines(), &[&[]]);
}

/// A handler that runs while `aio_suspend` or `lio_listio(LIO_WAIT)` waits
/// gives EINTR every time, also while another thread's completions come all
/// the time (they used to wake the waiter, and a handler run while it was
/// awake went unseen: 6 to 38 of 50).
#[test]
fn waits_beside_other_io_see_every_handler() {
    prints_ok("aio_eintr_beside_io.c", engines(), &[&[]]);
}

/// A handler that runs at any moment of `aio_suspend`, also while the call is
/// awake before its first sleep, gives EINTR: a signal raised at the call's
/// first clock read, and one sent by another thread at a random moment once
/// the call is under way (the program interposes `clock_gettime`, hence
/// `-rdynamic`). Such a handler used to go unseen: the call slept on.
#[test]
fn aio_suspend_sees_a_handler_run_before_its_first_sleep() {
    let mut flags = strict();
    flags.push("-rdynamic");
    prints_ok_built("aio_suspend_eintr_early.c", &flags, engines(), &[&[]]);
}

/// `lio_listio(LIO_WAIT)`, unlike `aio_suspend`: a signal raised at the
/// call's first allocation, as it builds its list (the program interposes
/// `malloc`, hence `-rdynamic`; `-z now`: no lazy binding inside the call),
/// does not interrupt it (POSIX: EINTR for a signal delivered while waiting;
/// glibc alike): the call waits for the read and returns 0. (Blocking signals
/// from the call's start, for EINTR there, cost every call two system calls.)
#[test]
fn lio_listio_waits_past_a_handler_run_before_it_waits() {
    let mut flags = strict();
    flags.extend(["-rdynamic", "-Wl,-z,now"]);
    prints_ok_built("aio_lio_eintr_early.c", &flags, engines(), &[&[]]);
}

/// A thread cancelled while it sleeps in `aio_suspend` acts on the cancel
/// when its wait ends, and the engine goes on working for the others (the
/// library's sleep used to be glibc's `ppoll`, a cancellation point: the
/// victim unwound out of it as the ring's reaper, and later waits slept to
/// their timeout).
#[test]
fn a_cancel_in_a_wait_leaves_the_engine_working() {
    prints_ok("aio_cancel_in_wait.c", engines(), &[&[]]);
}

/// A thread waiting in `aio_suspend` without a timeout for a request that
/// does not complete is woken by `pthread_cancel` and acts on it, as POSIX
/// requires of a cancellation point and as glibc does; its request completes
/// later and another thread takes its result. (The library acted on the
/// cancel only when the wait ended: never here, the join timed out.) A thread
/// that disabled cancellation waits on.
#[test]
fn a_cancel_wakes_a_thread_waiting_in_aio_suspend() {
    prints_ok("aio_suspend_cancel.c", engines(), &[&[]]);
}

/// A child forked while another thread makes the process's first request
/// reads through AIO (the library registered its fork handler, and the engine
/// its own, only in that first request: the child spun, or waited on the
/// engine's `Once`, for good).
#[test]
fn a_child_forked_during_the_first_request_can_use_aio() {
    prints_ok("aio_fork_first_use.c", engines(), &[&[]]);
}

/// A child forked while other threads are inside trace calls uses the trace
/// functions (the id table's lock used to stay taken in the child: its first
/// trace call waited forever). Linked with `-lposixrt`.
#[test]
fn a_child_forked_during_trace_calls_can_trace() {
    let inc = format!("-I{CRATE}/include");
    let mut flags: Vec<&str> = strict();
    flags.push(&inc);
    let exe = build(&c_src("trace_fork.c"), Link::Linked, &flags);
    let o = run(&exe, Link::Linked, &[], &[]);
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "ok",
        "trace_fork.c: {:?}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A child forked while another thread makes the process's first trace calls
/// traces (the core's one-time trace set-up, and the flushers' hooks, were
/// left running for good in the child: its first `posix_trace_create` waited
/// forever). Linked with `-lposixrt`.
#[test]
fn a_child_forked_during_the_first_trace_calls_can_trace() {
    let inc = format!("-I{CRATE}/include");
    let mut flags: Vec<&str> = strict();
    flags.push(&inc);
    let exe = build(&c_src("trace_fork_first_use.c"), Link::Linked, &flags);
    let o = run(&exe, Link::Linked, &[], &[]);
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "ok",
        "trace_fork_first_use.c: {:?}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A deferred `pthread_cancel` and the trace functions (`trace_cancel.c`,
/// one run per scenario): a thread with a cancel pending flushes and shuts
/// down a stream with a log, and opens, reads the status of and closes a log,
/// and each call returns 0 with its work whole (the log complete, the fd
/// closed); the cancel is acted on at the thread's next cancellation point.
/// The library used to act on it inside its own work: the process aborted
/// (`posix_trace_open`, "panic in a function that cannot unwind") or the
/// thread ended in the middle of `posix_trace_flush`, its stream never shut
/// down and its log empty. `posix_trace_getnext_event` and
/// `_timedgetnext_event` are cancellation points at entry and while they
/// wait, and the interposed `sigwait` stays one. A thread with a cancel
/// pending that calls `exit` while a log is written exits with its status:
/// the library's exit handler, which waits for the log's flush, slept in a
/// cancellation point, and the cancel ended the thread in the middle of
/// `exit`: the process went on. Threads whose cancellation type is
/// asynchronous, cancelled while they loop on `posix_trace_flush` and
/// `aio_error`, end (the library used to abort the process as it gave the
/// cancel back at the end of a call) and leave nothing held. Linked with `-lposixrt`
/// (the trace functions are the library's alone).
#[test]
fn trace_calls_with_a_cancel_pending_finish_their_work() {
    let inc = format!("-I{CRATE}/include");
    let mut flags: Vec<&str> = strict();
    flags.push(&inc);
    let exe = build(&c_src("trace_cancel.c"), Link::Linked, &flags);
    for scenario in [
        "flush_shutdown",
        "open_close",
        "getnext_entry",
        "getnext_wait",
        "timedgetnext_wait",
        "sigwait",
        "exit_pending",
        "async",
    ] {
        let o = run(&exe, Link::Linked, &[scenario], &[]);
        assert!(
            o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "ok",
            "trace_cancel.c {scenario}: {:?}\n{}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// A read or write on a pipe or socket with an `aio_offset` that, added to
/// `aio_nbytes`, passes OFF_MAX: the offset is ignored there (POSIX; glibc's
/// requests succeed), where the library refused the request with EINVAL.
/// A regular file still refuses it, and a negative offset is refused.
#[test]
fn stream_requests_ignore_the_offset() {
    prints_ok("aio_stream_offset.c", engines(), &[&[]]);
}

/// `aio_suspend` (and `aio_suspend64`) with `nent` 0 and a NULL list
/// returns 0 at once, before and after the engine starts. The library made a
/// slice of the NULL pointer (undefined behaviour): a debug build aborted.
#[test]
fn suspend_on_an_empty_null_list_returns_at_once() {
    prints_ok("aio_suspend_empty_list.c", engines(), &[&[]]);
}

/// An aiocb submitted again after its request ended, and refused by the call
/// (a bad `aio_reqprio`, offset, sigevent or `aio_fsync` op), is no request:
/// `aio_error` and `aio_return` give -1/EINVAL. They gave the old request's
/// status (0) and result, as if the refused call had succeeded.
#[test]
fn a_refused_resubmission_is_not_a_request() {
    prints_ok("aio_refused_resubmit.c", engines(), &[&[]]);
}

/// `lio_listio(LIO_WAIT)` whose entries another thread cancels returns
/// -1/EIO, and each `aio_cancel` AIO_CANCELED: the list's waiter and the
/// canceller both free a request's slot once it is done, and the second found
/// none (the call returned 0, or the cancel AIO_ALLDONE).
#[test]
fn a_waited_list_whose_entries_are_cancelled_fails_with_eio() {
    prints_ok("aio_lio_wait_cancelled.c", engines(), &[&[]]);
}

/// Writes to a blocking pipe or stream socket that fills up go whole, in
/// order (six 48 KiB writes, read back once the pipe is full), as glibc's.
/// On io_uring a write cut short by the full pipe reported the short count,
/// the rest was never written, and the reader waited for good.
#[test]
fn stream_writes_that_fill_the_pipe_go_whole() {
    prints_ok("aio_stream_full.c", engines(), &[&[]]);
}

/// Requests queued in the library (O_APPEND writes behind one another,
/// writes beyond a 2-entry ring) run with no further call from the program,
/// as glibc's. On io_uring they waited for the program's next call.
#[test]
fn queued_requests_run_unattended() {
    prints_ok("aio_queued_unattended.c", engines(), &[&[]]);
}

/// A write to a pipe or stream socket with no reader (also `O_NONBLOCK`)
/// fails with EPIPE and the process, SIGPIPE at its default, goes on, as
/// with glibc. On io_uring the submitting thread took the SIGPIPE and died.
#[test]
fn a_write_to_a_broken_pipe_does_not_kill_the_process() {
    prints_ok("aio_broken_pipe.c", engines(), &[&[]]);
}

/// Reads of files seen before: procfs and sysfs files (which refuse
/// `RWF_NOWAIT`) on every call, a file with one page in the page cache in
/// full, and a read past the end of a file up to it.
#[test]
fn file_reads_behave_as_glibcs() {
    prints_ok("aio_file_reads.c", engines(), &[&[]]);
}

/// Six threads, half SCHED_FIFO where the process may, each submitting 1 to 8
/// cached reads one call at a time and waiting for each: every request done,
/// within 5 s, with its bytes (`aio_mixed_threads.c`). On the thread engine
/// this drives the pool's count of workers woken and not back yet: a request
/// left with every worker asleep fails it (a pool that skipped the wake-up
/// for a lone ready request failed it at once).
#[test]
fn mixed_priority_threads_are_all_served() {
    prints_ok("aio_mixed_threads.c", engines(), &[&[]]);
}

/// A read without notification that completes while `aio_read` enters the
/// ring (a cached file) does not wake the io_uring completion thread, started
/// here by a `SIGEV_THREAD` request: the call reaps it itself. The thread
/// woke once per read before (200 of 200). io_uring only; the program skips
/// itself on tmpfs and overlayfs, whose reads io_uring does not try inline.
#[test]
fn inline_completions_do_not_wake_the_completion_thread() {
    if !uring_allowed() {
        return;
    }
    prints_ok("aio_inline_quiet.c", &["uring"], &[&[]]);
}

/// A run of `aio_read`s with no look in between (a pipelined program, as
/// fio's `posixaio` at depth 32) enters the ring at the next look, not once
/// per request, also when its first read is done inside its own call (with
/// that first version of the in-call reap, every read of the run entered at
/// once: fio's QD32 fell from 1.03x to 0.89x fio's own io_uring).
/// io_uring only.
#[test]
fn a_pipelined_run_enters_the_ring_together() {
    if !uring_allowed() {
        return;
    }
    prints_ok("aio_pipelined.c", &["uring"], &[&[]]);
}

/// A `SIGEV_THREAD` callback that unmaps its aiocb while the `aio_read` that
/// submitted it is still running (the library's threads preempt the caller on
/// one CPU): `aio_read` no longer reads the aiocb once the request can
/// complete (it did, to see whether the request was still in the kernel, and
/// died of SIGSEGV here). Both engines; the program checks nothing without
/// the privilege to use SCHED_FIFO.
#[test]
fn a_callback_may_free_its_aiocb_inside_aio_read() {
    prints_ok("aio_notify_frees.c", engines(), &[&[]]);
}

/// A request outlives the thread that submitted it (`aio_read`, and
/// `lio_listio(LIO_NOWAIT)`), on both engines: io_uring cancels a task's
/// pending requests when it exits, and the library used to report that as
/// ECANCELED; also one entered by another thread that exits, and again by a
/// third.
#[test]
fn a_request_outlives_the_thread_that_submitted_it() {
    prints_ok("aio_thread_exit.c", engines(), &[&[]]);
}

/// A request's fd closed right after the submitting call and its number
/// reused at once by another file: the request goes on with the file it
/// named (256 KiB and more, which the kernel's io_uring workers look up only
/// when they start, took the number's new file before a copy was taken
/// ahead of the entry). io_uring only: the thread engine, as glibc's thread
/// pool, looks the number up when a worker takes the request (see "Closing
/// an fd" in capi/README.md).
#[test]
fn a_closed_and_reused_fd_number_does_not_take_a_request_s_data() {
    if !uring_allowed() {
        return;
    }
    prints_ok("aio_close_reuse.c", &["uring"], &[&[]]);
}

/// Pipe and socket I/O as glibc's (`pread`/`pwrite`, then `read`/`write`
/// after ESPIPE): a socket read or write at an offset ignores it, an empty
/// `O_NONBLOCK` pipe or socket gives EAGAIN to a read, a full `O_NONBLOCK`
/// pipe to a write, an `O_NONBLOCK` terminal takes a write; also while
/// another thread waits in `aio_suspend`, and with requests that wait in the
/// library's queue (`aio_init` with one request in flight). On io_uring the
/// reads failed with ESPIPE, the O_NONBLOCK ones waited, and the terminal
/// write failed with EOPNOTSUPP.
#[test]
fn stream_io_behaves_as_glibcs() {
    prints_ok("aio_streams.c", engines(), &[&[], &["queued"]]);
}

/// `aio_cancel(fd, NULL)` on the thread engine cancels the requests still
/// queued behind the running ones, instead of waiting for each running one
/// while the workers start the rest (it cancelled none of 32 queued writes).
#[test]
fn cancel_fd_cancels_the_queued_requests_threads() {
    prints_ok("aio_cancel_queued.c", &["threads"], &[&[]]);
}

/// `aio_cancel` (of the aiocb, and of the whole fd) on the thread engine of a
/// pipe write that moved bytes, parked, and waits in the queue again behind a
/// busy worker: in progress, `AIO_NOTCANCELED`, ended with the bytes it moved.
/// The library said `AIO_CANCELED` for it.
#[test]
fn cancel_leaves_a_requeued_write_that_moved_bytes_threads() {
    prints_ok("aio_cancel_requeued.c", &["threads"], &[&[], &["fd"]]);
}

/// `aio_cancel` (of the aiocb, and of the whole fd) on the thread engine
/// returns `AIO_NOTCANCELED` for a write running on a regular file without
/// waiting for it: the write is still in progress when the call returns. It
/// used to wait for the write to end (the worker marks a C request
/// interruptible while it learns the fd's kind, and nothing cleared that).
#[test]
fn cancel_does_not_wait_for_a_running_regular_file_write_threads() {
    prints_ok("aio_cancel_running.c", &["threads"], &[&[]]);
}

/// `aio_cancel` of a pipe read whose fd number named a regular file before
/// (read through it, then closed) cancels it, on both engines. The thread
/// engine counted the request not interruptible while its worker found out
/// the number no longer named a regular file, and a cancel then said
/// `AIO_NOTCANCELED` (a few rounds in 10000; `aio_semantics.c` met it once in
/// many runs, at its cancellation-point test).
#[test]
fn cancel_stops_a_pipe_read_on_a_number_that_named_a_file() {
    prints_ok("aio_cancel_reused_number.c", engines(), &[&[]]);
}

/// `aio_cancel` of writes to a full datagram socket, on both engines: the
/// write waiting for room stays in progress (`AIO_NOTCANCELED`, as glibc and
/// the Open POSIX Test Suite's `aio_cancel` 5-1 and 7-1 expect), the ones
/// behind it are cancelled, and the call does not wait for it. io_uring used
/// to cancel that write too; the thread engine waited 5 s for it.
#[test]
fn cancel_leaves_a_datagram_write_in_progress() {
    prints_ok("aio_cancel_datagram.c", engines(), &[&[]]);
}

/// A completion's `SIGEV_SIGNAL` is generated before a waiter can see the
/// request done (glibc's order: status, signal, then the waiters): when
/// `aio_suspend` returns for it, the handler has run in the one thread that
/// takes the signal. The signal used to be sent after the engine lock was
/// released, so a woken waiter often returned first: on the thread engine, and
/// on io_uring when another thread reaped the completion ("helper"). "open":
/// another thread leaves the signal unblocked; it still goes to the main
/// thread, the waiter (which sends it itself on io_uring).
#[test]
fn completion_signal_comes_before_the_waiters_wake() {
    prints_ok(
        "aio_signal_order.c",
        engines(),
        &[&["alone"], &["helper"], &["open"]],
    );
}

/// `lio_listio(LIO_NOWAIT)` returns before any notification of its list is
/// handled (as the Open POSIX Test Suite's `lio_listio/2-1` checks), and a
/// request still notifies before `aio_suspend` returns for it. Small writes
/// complete inside the call, and their signals used to be handled before it
/// returned, in about 2% of calls on io_uring and 8% on the thread engine.
#[test]
fn lio_nowait_returns_before_its_signals() {
    prints_ok("lio_nowait_signals.c", engines(), &[&[]]);
}

/// `-D_FILE_OFFSET_BITS=64` makes glibc's header call the `*64` names.
#[test]
fn semantics_large_file_names_preloaded_and_linked() {
    let flags = ["-D_FILE_OFFSET_BITS=64"];
    let exe = build(&c_src("aio_semantics.c"), Link::Preloaded, &{
        let mut f = strict();
        f.extend_from_slice(&flags);
        f
    });
    if let Ok(o) = Command::new("nm").arg("-D").arg(&exe).output() {
        let syms = String::from_utf8_lossy(&o.stdout);
        assert!(
            syms.contains("aio_read64"),
            "not built against aio_read64:\n{syms}"
        );
    }
    if uring_allowed() {
        semantics(Link::Preloaded, "uring", &flags);
    }
    semantics(Link::Linked, "threads", &flags);
}

#[test]
fn silent_without_debug() {
    for link in [Link::Linked, Link::Preloaded] {
        let exe = build(&c_src("aio_semantics.c"), link, &strict());
        let o = run(&exe, link, &["all"], &[]);
        assert!(
            o.status.success(),
            "{link:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            o.stderr.is_empty(),
            "{link:?} printed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn nothing_at_load_time() {
    for link in [Link::Linked, Link::Preloaded] {
        let exe = build(&c_src("aio_semantics.c"), link, &strict());
        let o = run(&exe, link, &["idle"], &[("POSIXRT_AIO_DEBUG", "1")]);
        assert!(
            o.status.success() && o.stderr.is_empty(),
            "{link:?}: {:?} {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn eagain_over_the_request_limit() {
    for link in [Link::Linked, Link::Preloaded] {
        for &backend in engines() {
            let exe = build(&c_src("aio_semantics.c"), link, &strict());
            let o = run(
                &exe,
                link,
                &["eagain"],
                &[("POSIXRT_AIO_MAX", "4"), ("POSIXRT_AIO_BACKEND", backend)],
            );
            assert!(
                o.status.success(),
                "{link:?} {backend}: {:?} {}",
                o.status,
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
}

/// With no engine (`POSIXRT_AIO_BACKEND` naming none) a `lio_listio` refused
/// with EAGAIN gives each entry its status (EAGAIN, EINVAL for a bad opcode),
/// as past `POSIXRT_AIO_MAX`; the entries were left as no requests.
#[test]
fn a_list_refused_for_want_of_an_engine_gives_each_entry_its_status() {
    for link in [Link::Linked, Link::Preloaded] {
        let exe = build(&c_src("aio_no_engine.c"), link, &strict());
        let o = run(&exe, link, &[], &[("POSIXRT_AIO_BACKEND", "none")]);
        assert!(
            o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "ok",
            "{link:?}: {:?}\n{}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// io_uring refused (a seccomp filter answering EPERM, as container runtimes
/// do): the library falls back to its thread engine, says why only with
/// `POSIXRT_AIO_DEBUG`, and every call works.
#[test]
fn io_uring_refused_falls_back_to_threads() {
    if !uring_allowed() {
        return;
    }
    for link in [Link::Linked, Link::Preloaded] {
        let exe = build(&c_src("aio_semantics.c"), link, &strict());
        let o = run(&exe, link, &["noring"], &[("POSIXRT_AIO_DEBUG", "1")]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "ok",
            "{link:?}: {:?}\n{err}",
            o.status
        );
        let engine = err
            .lines()
            .find(|l| l.starts_with("libposixrt: engine: "))
            .unwrap_or_default();
        assert!(
            engine.starts_with("libposixrt: engine: threads ") && engine.contains("EPERM"),
            "{link:?}: {err}"
        );
        let quiet = run(&exe, link, &["noring"], &[]);
        assert!(
            quiet.status.success() && quiet.stderr.is_empty(),
            "{link:?}: {:?} {}",
            quiet.status,
            String::from_utf8_lossy(&quiet.stderr)
        );
    }
}

#[test]
fn layout_matches_the_system_header() {
    let exe = build(&c_src("layout.c"), Link::Preloaded, &strict());
    let o = run(&exe, Link::Preloaded, &[], &[]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    let c: HashMap<&str, usize> = text
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k, v.parse().expect("number")))
        .collect();
    use std::mem::{offset_of, size_of};
    let mut want: Vec<(&str, usize)> = vec![("aiocb.size", size_of::<Aiocb>())];
    let fields = [
        ("aio_fildes", offset_of!(Aiocb, aio_fildes)),
        ("aio_lio_opcode", offset_of!(Aiocb, aio_lio_opcode)),
        ("aio_reqprio", offset_of!(Aiocb, aio_reqprio)),
        ("aio_buf", offset_of!(Aiocb, aio_buf)),
        ("aio_nbytes", offset_of!(Aiocb, aio_nbytes)),
        ("aio_sigevent", offset_of!(Aiocb, aio_sigevent)),
        ("__next_prio", offset_of!(Aiocb, __next_prio)),
        ("__abs_prio", offset_of!(Aiocb, __abs_prio)),
        ("__policy", offset_of!(Aiocb, __policy)),
        ("__error_code", offset_of!(Aiocb, __error_code)),
        ("__return_value", offset_of!(Aiocb, __return_value)),
        ("aio_offset", offset_of!(Aiocb, aio_offset)),
        ("__glibc_reserved", offset_of!(Aiocb, __glibc_reserved)),
    ];
    let names: Vec<String> = fields
        .iter()
        .flat_map(|(f, _)| [format!("aiocb.{f}"), format!("aiocb64.{f}")])
        .collect();
    for (i, (_, off)) in fields.iter().enumerate() {
        want.push((&names[2 * i], *off));
        want.push((&names[2 * i + 1], *off));
    }
    want.push(("aiocb64.size", size_of::<Aiocb>()));
    want.extend([
        ("sigevent.size", size_of::<SigEvent>()),
        ("sigevent.sigev_value", offset_of!(SigEvent, sigev_value)),
        ("sigevent.sigev_signo", offset_of!(SigEvent, sigev_signo)),
        ("sigevent.sigev_notify", offset_of!(SigEvent, sigev_notify)),
        ("sigevent._sigev_un._tid", offset_of!(SigEvent, un)),
        (
            "sigevent._sigev_un._sigev_thread._function",
            offset_of!(SigEvent, un),
        ),
        (
            "sigevent._sigev_un._sigev_thread._attribute",
            offset_of!(SigEvent, un) + 8,
        ),
        // struct aioinit: eight ints; the library reads the first two.
        ("aioinit.size", 32),
        ("aioinit.aio_threads", 0),
        ("aioinit.aio_num", 4),
    ]);
    for (k, v) in want {
        assert_eq!(c.get(k), Some(&v), "{k}: system header vs libposixrt");
    }
    assert_eq!(c.len(), 38, "every line checked");
}

#[test]
fn exports_the_glibc_names() {
    let Ok(o) = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(lib_dir().join("libposixrt.so"))
        .output()
    else {
        eprintln!("skipped: no nm (binutils) on this machine");
        return;
    };
    let syms = String::from_utf8_lossy(&o.stdout);
    let exported: Vec<&str> = syms
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace().skip(1);
            match (w.next(), w.next()) {
                (Some("T"), Some(name)) => Some(name),
                _ => None,
            }
        })
        .collect();
    for base in [
        "aio_read",
        "aio_write",
        "aio_fsync",
        "aio_error",
        "aio_return",
        "aio_suspend",
        "aio_cancel",
        "lio_listio",
    ] {
        assert!(exported.contains(&base), "{base} not exported");
        let b64 = format!("{base}64");
        assert!(exported.contains(&b64.as_str()), "{b64} not exported");
    }
    assert!(exported.contains(&"aio_init"));
}
