//! Prioritized I/O (issue 16) on both engines: the effective priority of a
//! request is its submitter's policy/priority at submission minus `reqprio`,
//! clamped at the policy's minimum; queues order by it across submitters; the
//! thread engine's workers run at it (and rest at SCHED_BATCH); a SCHED_OTHER
//! caller never raises one.
//! These tests need CAP_SYS_NICE (they run as root in CI); without it they check
//! that setting SCHED_FIFO fails with EPERM and stop.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use posixrt::aio::{Aio, Backend, Op, Request};
use posixrt::trace::{Trace, TraceAttr};

mod common;
use common::blocker;
use common::both;
use common::workers::{asleep_workers, pool_threads, pool_worker, threads_where, woken_since};

/// The tests change scheduling classes and read every thread's: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `f` on a new thread with `policy`/`priority`; None without privilege.
fn on_thread<T: Send + 'static>(
    policy: i32,
    priority: i32,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    std::thread::spawn(move || {
        let p = libc::sched_param {
            sched_priority: priority,
        };
        // SAFETY: sets the calling thread's own class.
        let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), policy, &p) };
        if rc != 0 {
            assert_eq!(rc, libc::EPERM, "the documented error without CAP_SYS_NICE");
            return None;
        }
        Some(f())
    })
    .join()
    .unwrap()
}

/// A pipe holding bytes 0, 1, 2, ...: each 1-byte read gets its issue rank.
fn counter_pipe(n: u8) -> (Arc<OwnedFd>, OwnedFd) {
    let (rd, wr) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
    let bytes: Vec<u8> = (0..n).collect();
    rustix::io::write(&wr, &bytes).unwrap();
    (Arc::new(rd), wr)
}

fn ordering(b: Backend) {
    let _g = serial();
    let aio = common::one_slot(b);
    let Some(hold) = blocker(&aio) else {
        return;
    };
    let (rd, _wr) = counter_pipe(16);
    let mut reqs: Vec<(&str, Request<Vec<u8>>)> = Vec::new();
    let submit = |policy: i32, prio: i32, reqprio: i32| {
        let (aio, rd) = (aio.clone(), Arc::clone(&rd));
        if policy == libc::SCHED_OTHER {
            return Some(
                aio.submit(Op::read(&*rd, 0, vec![0u8; 1]).reqprio(reqprio))
                    .unwrap(),
            );
        }
        on_thread(policy, prio, move || {
            aio.submit(Op::read(&*rd, 0, vec![0u8; 1]).reqprio(reqprio))
                .unwrap()
        })
    };
    for (name, policy, prio, reqprio) in [
        ("A other", libc::SCHED_OTHER, 0, 0),
        ("B fifo10", libc::SCHED_FIFO, 10, 0),
        ("C fifo20-15", libc::SCHED_FIFO, 20, 15),
        ("D rr30", libc::SCHED_RR, 30, 0),
        ("E other", libc::SCHED_OTHER, 0, 0),
        ("F fifo2-10 (clamped to 1)", libc::SCHED_FIFO, 2, 10),
        ("G other reqprio 20", libc::SCHED_OTHER, 0, 20),
    ] {
        let Some(r) = submit(policy, prio, reqprio) else {
            hold.unblock();
            return;
        };
        reqs.push((name, r));
    }
    hold.unblock();
    let mut got: Vec<(u8, &str)> = reqs
        .into_iter()
        .map(|(n, mut r)| (r.wait().unwrap().data()[0], n))
        .collect();
    got.sort();
    let order: Vec<&str> = got.into_iter().map(|(_, n)| n).collect();
    assert_eq!(
        order,
        [
            "D rr30",
            "B fifo10",
            "C fifo20-15",
            "F fifo2-10 (clamped to 1)",
            "A other",
            "E other",
            "G other reqprio 20"
        ]
    );
}
both!(
    queues_order_by_effective_priority_across_submitters,
    ordering
);

/// `(policy, rt_priority)` of every `posixrt-aio-<n>` worker thread and
/// kernel io_uring worker now.
fn worker_classes() -> Vec<(i32, i32)> {
    classes_of(|comm| pool_worker(comm) || comm.starts_with("iou-wrk"))
}

/// `(policy, rt_priority)` of every `posixrt-aio-<n>` thread (the thread
/// engine's pool) now.
fn pool_classes() -> Vec<(i32, i32)> {
    classes_of(pool_worker)
}

/// `(policy, rt_priority)` of every thread of this process whose name `pick`s.
fn classes_of(pick: impl Fn(&str) -> bool) -> Vec<(i32, i32)> {
    let mut out = Vec::new();
    for (_, p) in threads_where(pick) {
        let stat = std::fs::read_to_string(p.join("stat")).unwrap_or_default();
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        // Fields 40 (rt_priority) and 41 (policy) of proc(5); `rest` starts at 3.
        if let (Some(rp), Some(pol)) = (f.get(37), f.get(38)) {
            out.push((pol.parse().unwrap_or(-1), rp.parse().unwrap_or(-1)));
        }
    }
    out
}

/// Submits a long read (32 MiB from /dev/urandom) from a thread of the given class
/// and samples the workers' classes while it runs. Returns the classes seen
/// and the effective priority the request's `aio_submit` trace event carries.
fn run_sampled(aio: &Aio, policy: i32, prio: i32, reqprio: i32) -> Option<(Vec<(i32, i32)>, i32)> {
    let t = Trace::create(&TraceAttr::new()).unwrap();
    t.start().unwrap();
    let zero = Arc::new(std::fs::File::open("/dev/urandom").unwrap());
    let fd = zero.as_raw_fd();
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sampler = {
        let (stop, seen) = (Arc::clone(&stop), Arc::clone(&seen));
        std::thread::spawn(move || {
            // Above every worker, so a busy real-time worker cannot starve it.
            let p = libc::sched_param { sched_priority: 90 };
            // SAFETY: sets the calling thread's own class (failure is harmless).
            unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &p) };
            for _ in 0..20_000 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                seen.lock().unwrap().extend(worker_classes());
                std::thread::sleep(Duration::from_micros(200));
            }
        })
    };
    let aio2 = aio.clone();
    let job = move || {
        let mut r = aio2
            .submit(Op::read(&*zero, 0, vec![0u8; 32 << 20]).reqprio(reqprio))
            .unwrap();
        let c = r.wait().unwrap();
        assert!(c.result.unwrap() > 0);
    };
    let ran = if policy == libc::SCHED_OTHER {
        std::thread::spawn(job).join().unwrap();
        Some(())
    } else {
        on_thread(policy, prio, job)
    };
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    t.stop().unwrap();
    ran?;
    let mut prios = t.events().filter_map(|e| {
        let name = t.eventid_name(e.id).ok()?;
        let d = &e.data;
        // aio_submit: req u64, fd i32, op u32, offset i64, len u64, prio i32.
        let efd = i32::from_le_bytes(d.get(8..12)?.try_into().ok()?);
        if name != "aio_submit" || efd != fd {
            return None;
        }
        Some(i32::from_le_bytes(d.get(32..36)?.try_into().ok()?))
    });
    let eff = prios.next().expect("no aio_submit event for the request");
    let seen = seen.lock().unwrap().clone();
    Some((seen, eff))
}

/// [`run_sampled`] until the samples show a worker in class `want`, at most 3
/// times: the sampler, a thread of its own, may miss a whole request on a
/// loaded machine. Every run's samples are returned, so a test can check that
/// no run went above the request's class.
fn sampled_until(
    aio: &Aio,
    (policy, prio, reqprio): (i32, i32, i32),
    want: Option<(i32, i32)>,
) -> Option<(Vec<(i32, i32)>, i32)> {
    let mut all = Vec::new();
    let mut eff = 0;
    for _ in 0..3 {
        let (seen, e) = run_sampled(aio, policy, prio, reqprio)?;
        (all, eff) = ([all, seen].concat(), e);
        if want.map_or(true, |w| all.contains(&w)) {
            break;
        }
    }
    Some((all, eff))
}

fn worker_priority(b: Backend) {
    let _g = serial();
    let aio = Aio::builder().backend(b).build().unwrap();
    let want = (b == Backend::Threads).then_some((libc::SCHED_FIFO, 75));
    let Some((seen, eff)) = sampled_until(&aio, (libc::SCHED_FIFO, 80, 5), want) else {
        return;
    };
    assert_eq!(eff, 75, "effective priority of FIFO 80 with reqprio 5");
    if b == Backend::Threads {
        assert!(
            seen.contains(&(libc::SCHED_FIFO, 75)),
            "no worker ran at SCHED_FIFO 75: {seen:?}"
        );
    }
    // Nothing ever runs above the request's class.
    assert!(seen.iter().all(|&(_, p)| p <= 75), "{seen:?}");
    // A worker returns to its resting class once idle.
    if b == Backend::Threads {
        let mut back = false;
        for _ in 0..500 {
            if worker_classes().iter().all(|&(pol, p)| resting(pol, p)) {
                back = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        assert!(
            back,
            "a worker stayed real-time while idle: {:?}",
            worker_classes()
        );
    }
}
both!(worker_runs_at_the_effective_priority, worker_priority);

fn clamp(b: Backend) {
    let _g = serial();
    let aio = Aio::builder().backend(b).build().unwrap();
    let want = (b == Backend::Threads).then_some((libc::SCHED_RR, 1));
    let Some((seen, eff)) = sampled_until(&aio, (libc::SCHED_RR, 3, 10), want) else {
        return;
    };
    assert_eq!(eff, 1, "RR 3 minus reqprio 10 clamps at the minimum, 1");
    if b == Backend::Threads {
        assert!(seen.contains(&(libc::SCHED_RR, 1)), "{seen:?}");
    }
    assert!(seen.iter().all(|&(_, p)| p <= 1), "{seen:?}");
}
both!(effective_priority_clamps_at_the_policy_minimum, clamp);

/// A class a worker may have when it serves no real-time request: the thread
/// engine's rest and `SCHED_OTHER` requests at SCHED_BATCH (no wake-up
/// preemption), the kernel's io_uring workers at SCHED_OTHER; priority 0.
fn resting(policy: i32, priority: i32) -> bool {
    (policy == libc::SCHED_BATCH || policy == libc::SCHED_OTHER) && priority == 0
}

fn other_never_raises(b: Backend) {
    let _g = serial();
    // The context is made by a real-time thread: its workers must still rest
    // (SCHED_BATCH on the thread engine), and serve a SCHED_OTHER caller there.
    let Some(aio) = on_thread(libc::SCHED_FIFO, 50, move || {
        Aio::builder().backend(b).build().unwrap()
    }) else {
        return;
    };
    let (seen, eff) = run_sampled(&aio, libc::SCHED_OTHER, 0, 0).unwrap();
    assert_eq!(eff, 0);
    assert!(
        seen.iter().all(|&(pol, p)| resting(pol, p)),
        "a worker ran above SCHED_OTHER for a SCHED_OTHER caller: {seen:?}"
    );
    if b == Backend::Threads {
        // Not the creator's SCHED_FIFO 50, nor SCHED_OTHER: the pool rests at
        // SCHED_BATCH, and served the request there.
        let pool = pool_classes();
        assert!(
            !pool.is_empty()
                && pool
                    .iter()
                    .all(|&(pol, p)| pol == libc::SCHED_BATCH && p == 0),
            "the pool's workers do not rest at SCHED_BATCH: {pool:?}"
        );
    }
}
both!(sched_other_caller_never_raises_a_worker, other_never_raises);

/// A real-time thread without CAP_SYS_NICE or CAP_SYS_ADMIN (SCHED_FIFO
/// through RLIMIT_RTPRIO, the usual audio setup): the kernel refuses the
/// real-time I/O class to its requests (EPERM), so they go without it. In a
/// forked child: it drops both capabilities after switching to SCHED_FIFO.
#[test]
fn a_real_time_thread_without_the_io_class_capability_still_reads() {
    if common::uring::uring_refused() {
        return;
    }
    let _g = serial();
    let f = common::temp_file(b"hello");
    // SAFETY: the child makes system calls and small allocations (glibc's
    // malloc is fork-safe) and leaves with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let code = std::panic::catch_unwind(|| {
            let p = libc::sched_param { sched_priority: 10 };
            // SAFETY: sets the calling thread's own class.
            if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } != 0 {
                return 0; // without CAP_SYS_NICE there is nothing to test
            }
            // A read while the thread still has the capabilities: the
            // process learns it may use the real-time I/O class (as a parent
            // that forked this child may have learnt already).
            let aio = Aio::builder().backend(Backend::Uring).build().unwrap();
            let mut r = aio.read(&f, 0, vec![0u8; 5]).unwrap();
            if r.wait().map(|c| c.result.ok()) != Ok(Some(5)) {
                return 4;
            }
            if !drop_io_class_capabilities() {
                return 3;
            }
            // An fd number new to the context: its first read is a probe,
            // which the kernel now refuses the class (EPERM), and which is
            // issued again without it.
            let g = f.try_clone().unwrap();
            let mut r = aio.read(&g, 0, vec![0u8; 5]).unwrap();
            let c = r.wait().unwrap();
            match c.result {
                Ok(5) if c.data() == b"hello" => 0,
                other => {
                    eprintln!("the read gave {other:?}");
                    1
                }
            }
        })
        .unwrap_or(2);
        // SAFETY: ends the child without the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    let st = common::child::wait_child(pid);
    assert!(
        libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
        "child status {st:#x}"
    );
}

/// Drops CAP_SYS_NICE and CAP_SYS_ADMIN from the calling thread's sets.
fn drop_io_class_capabilities() -> bool {
    use rustix::thread::{capabilities, set_capabilities, CapabilitySet};
    let Ok(mut c) = capabilities(None) else {
        return false;
    };
    let both = CapabilitySet::SYS_NICE | CapabilitySet::SYS_ADMIN;
    c.effective.remove(both);
    c.permitted.remove(both);
    c.inheritable.remove(both);
    set_capabilities(None, c).is_ok()
}

/// A real-time request on the thread engine, every worker asleep: the
/// submitter switches one sleeping worker to its class and wakes that one
/// alone (the others sleep on: waking them all for it made them contend for
/// the engine's lock, find nothing and sleep again).
#[test]
fn a_real_time_request_wakes_one_sleeping_worker() {
    let _g = serial();
    let before: Vec<u32> = pool_threads().iter().map(|t| t.0).collect();
    // (Every worker counted: one not running yet has no name to be seen by.)
    let aio = Aio::builder()
        .backend(Backend::Threads)
        .workers(4)
        .build()
        .unwrap();
    let file = Arc::new(common::temp_file(&[7u8; 4096]));
    let Some(mine) = asleep_workers(&before, 4) else {
        return;
    };
    let aio2 = aio.clone();
    let read = on_thread(libc::SCHED_FIFO, 50, move || {
        let mut r = aio2.submit(Op::read(&*file, 0, vec![0u8; 4096])).unwrap();
        r.wait().unwrap().result.unwrap()
    });
    let Some(n) = read else {
        return;
    };
    assert_eq!(n, 4096);
    // Time for any other woken worker to run and sleep again.
    std::thread::sleep(Duration::from_millis(100));
    let woken = woken_since(&mine);
    assert_eq!(
        woken.len(),
        1,
        "workers woken for one real-time request: {woken:?} of {}",
        mine.len()
    );
}
