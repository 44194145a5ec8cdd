//! A forked child gets fresh per-process state in every subsystem: its own thread
//! id everywhere (trace events, sync lock words and owners, sched, mark), its own
//! mark registry file, and a working clock.
//!
//! Each test forks, runs its checks in the child and reports through the exit
//! code (0: all good; otherwise the number of the failed check) and a pipe (the
//! failure's text). The tests are serialized: a fork while another test thread of
//! this process holds a crate lock would leave that lock held in the child.

use std::io::Read;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use posixrt::sync::{self, PiMutex, Tracking};
use posixrt::trace::{self, Trace, TraceAttr};
use posixrt::{mark, sched};

#[path = "common/child.rs"]
mod child;

static SERIAL: Mutex<()> = Mutex::new(());

/// The kernel's tid of the calling thread, uncached.
fn kernel_tid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u32 }
}

/// A failed check in the child: its number and text.
struct Fail(i32, String);

macro_rules! check {
    ($n:expr, $cond:expr, $($msg:tt)*) => {
        if !$cond {
            return Err(Fail($n, format!($($msg)*)));
        }
    };
}

/// Forks; the child runs `child` and exits with its result; the parent returns
/// the child's exit code and message.
fn in_forked_child(child: impl FnOnce() -> Result<(), Fail>) -> (i32, String) {
    match fork() {
        Side::Child(w) => child_exit(w, child()),
        Side::Parent(pid, r) => child_report(pid, r),
    }
}

/// Which side of a [`fork`] this is: the child, with the pipe's write end
/// for its message, or the parent, with the child's pid and the read end.
enum Side {
    Child(rustix::fd::OwnedFd),
    Parent(i32, rustix::fd::OwnedFd),
}

/// Waits (up to 5 s) until every other thread of this process sleeps, seen
/// twice 2 ms apart with the same threads: none is starting or ending, when
/// the thread library holds a process-wide lock (a child forked then finds
/// it held, and its first `std::thread::spawn` hangs). The kernel's io_uring
/// workers (`iou-*`) run no user code and are left out.
fn quiesce() {
    let me = kernel_tid().to_string();
    let others = || -> Option<Vec<String>> {
        let mut tids = Vec::new();
        for e in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            let tid = e.file_name().to_string_lossy().into_owned();
            if tid == me {
                continue;
            }
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // "tid (comm) S ...": the comm may hold spaces and parentheses.
            let close = stat.rfind(')')?;
            if stat[..close].contains("(iou-") {
                continue;
            }
            if stat[close + 1..].trim_start().starts_with('S') {
                tids.push(tid);
            } else {
                return None;
            }
        }
        tids.sort();
        Some(tids)
    };
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        if let Some(a) = others() {
            std::thread::sleep(Duration::from_millis(2));
            if others().is_some_and(|b| b == a) {
                return;
            }
        } else {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

fn fork() -> Side {
    let (r, w) = rustix::pipe::pipe().expect("pipe");
    quiesce();
    // SAFETY: the child only runs its checks and then `_exit`s (see
    // `child_exit`); the tests are serialized so no other test thread holds a
    // crate lock at the fork, and `quiesce` waited for no thread to be
    // starting or ending.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        drop(r);
        Side::Child(w)
    } else {
        drop(w);
        Side::Parent(pid, r)
    }
}

/// Ends the child with `result`: exit code 0, or the failed check's number
/// with its text written to `w`.
fn child_exit(w: rustix::fd::OwnedFd, result: Result<(), Fail>) -> ! {
    let code = match result {
        Ok(()) => 0,
        Err(Fail(n, msg)) => {
            let _ = rustix::io::write(&w, msg.as_bytes());
            n
        }
    };
    // SAFETY: ends the child without running the parent's atexit handlers or
    // the test harness's destructors.
    unsafe { libc::_exit(code) }
}

/// The child's exit code and message, once it exited (see
/// [`child::wait_child`]: a hung child fails the test).
fn child_report(pid: i32, r: rustix::fd::OwnedFd) -> (i32, String) {
    let status = child::wait_child(pid);
    assert!(libc::WIFEXITED(status), "child died: status {status:#x}");
    let mut msg = String::new();
    let _ = std::fs::File::from(r).read_to_string(&mut msg);
    (libc::WEXITSTATUS(status), msg)
}

/// Records one event on a fresh stream and returns the events of that id.
fn record_one(name: &str, payload: u32) -> posixrt::Result<Vec<trace::Event>> {
    let t = Trace::create(&TraceAttr::new())?;
    let id = trace::eventid_open(name)?;
    t.start()?;
    trace::event(id, &payload.to_le_bytes());
    t.stop()?;
    Ok(t.events().filter(|e| e.id == id).collect())
}

#[test]
fn forked_child_trace_events_carry_the_child_tid() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // A thread that has already recorded events (its tid is cached) forks.
    let (code, msg) = std::thread::spawn(|| {
        let before = record_one("fork test parent", 1).expect("parent trace");
        assert_eq!(before.len(), 1);
        assert_eq!(before[0].tid, kernel_tid());
        in_forked_child(|| {
            let me = kernel_tid();
            let ev = record_one("fork test child", 2)
                .map_err(|e| Fail(10, format!("trace in the child: {e}")))?;
            check!(
                11,
                ev.len() == 1,
                "child recorded {} events, not 1",
                ev.len()
            );
            check!(
                12,
                ev[0].tid == me,
                "child's event has tid {}, the child's is {me} (the parent thread's)",
                ev[0].tid
            );
            check!(
                13,
                ev[0].pid == std::process::id(),
                "child's event has pid {}, not {}",
                ev[0].pid,
                std::process::id()
            );
            Ok(())
        })
    })
    .join()
    .expect("forking thread");
    assert_eq!(code, 0, "check {code} failed in the child: {msg}");
}

#[test]
fn forked_child_has_fresh_tid_clock_and_registry_in_every_subsystem() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (code, msg) = std::thread::spawn(|| {
        // Warm every per-thread and per-process cache in the parent.
        sync::set_tracking(Tracking::Counts);
        let parent_tid = kernel_tid();
        assert_eq!(sync::current_tid(), parent_tid);
        assert_eq!(sched::gettid().as_raw() as u32, parent_tid);
        mark::update("fork test: parent").expect("mark");
        let parent_file = mark::registry_path().expect("registry file");
        let m = PiMutex::new(0u32);
        *m.lock() += 1;
        record_one("fork test parent 2", 1).expect("parent trace");

        let r = in_forked_child(move || {
            let me = kernel_tid();
            let pid = std::process::id() as i32;
            // sched and sync: the cached tid is the child's.
            check!(
                1,
                sched::gettid().as_raw() as u32 == me,
                "sched::gettid {} != {me}",
                sched::gettid()
            );
            check!(
                2,
                sync::current_tid() == me,
                "sync::current_tid {} != {me}",
                sync::current_tid()
            );
            // sync: a PiMutex locked in the child holds the child's tid, and the
            // tracking snapshot names the child as owner.
            let m2 = PiMutex::new(0u32);
            let g = m2.lock();
            // SAFETY: `raw()` only reads the lock's state here.
            let raw = unsafe { m2.raw() };
            let owner = raw.owner();
            check!(
                3,
                owner == Some(me),
                "PiMutex owner {owner:?}, child is {me}"
            );
            let snap_owner = raw.snapshot().and_then(|s| s.info.owner);
            check!(
                4,
                snap_owner == Some(me),
                "tracked owner {snap_owner:?}, child is {me}"
            );
            drop(g);
            // The parent's mutex, unlocked at the fork, works in the child.
            *m.lock() += 1;
            // mark: the child gets its own registry file and slot.
            mark::update("fork test: child").map_err(|e| Fail(5, format!("mark::update: {e}")))?;
            let file = mark::registry_path();
            check!(
                6,
                file.as_ref() != Some(&parent_file),
                "child writes the parent's file {parent_file:?}"
            );
            let named = file
                .as_ref()
                .and_then(|f| f.file_name())
                .map(|n| n.to_string_lossy().contains(&format!("-{pid}-")))
                .unwrap_or(false);
            check!(
                7,
                named,
                "child's registry file {file:?} does not name pid {pid}"
            );
            let snap =
                mark::snapshot_pid(pid).map_err(|e| Fail(8, format!("snapshot_pid: {e}")))?;
            let mine: Vec<_> = snap
                .threads()
                .filter(|(_, t)| t.marker == "fork test: child")
                .map(|(_, t)| t.tid)
                .collect();
            check!(
                9,
                mine == vec![me as i32],
                "child's mark slots {mine:?}, child tid {me}"
            );
            // trace and the clock: the child's events carry its tid, and their
            // timestamps fall between two CLOCK_MONOTONIC readings around them.
            let t0 = Instant::now();
            let ev =
                record_one("fork test child 2", 2).map_err(|e| Fail(10, format!("trace: {e}")))?;
            let t1 = Instant::now();
            check!(
                11,
                ev.len() == 1 && ev[0].tid == me,
                "child events {:?}",
                ev.iter().map(|e| e.tid).collect::<Vec<_>>()
            );
            // Instant is CLOCK_MONOTONIC on Linux; each bound is anchored on a
            // fresh reading, taken on the side that can only widen the bounds
            // (a preemption between the two readings must not narrow them).
            let now = || {
                let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
                Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
            };
            let lo = {
                let n = now();
                n.saturating_sub(t0.elapsed())
            };
            let hi = {
                let e = t1.elapsed();
                now().saturating_sub(e)
            };
            let slack = Duration::from_millis(2);
            check!(
                12,
                ev[0].timestamp + slack >= lo && ev[0].timestamp <= hi + slack,
                "child's event at {:?}, recorded between {lo:?} and {hi:?}",
                ev[0].timestamp
            );
            mark::clear();
            Ok(())
        });
        mark::clear();
        sync::set_tracking(Tracking::Off);
        r
    })
    .join()
    .expect("forking thread");
    assert_eq!(code, 0, "check {code} failed in the child: {msg}");
}

/// The child's side of the test below: the parent's context and request,
/// given to it, are refused, then dropped (which cancels nothing of the
/// parent's); a context of its own works.
fn aio_in_the_child(
    aio: posixrt::aio::Aio,
    mut parent_read: posixrt::aio::Request<Vec<u8>>,
    file: &std::fs::File,
    backend: posixrt::aio::Backend,
) -> Result<(), Fail> {
    use std::io::Write;
    let (cr, mut cw) = {
        let (r, w) = rustix::pipe::pipe().expect("pipe");
        (r, std::fs::File::from(w))
    };
    let e = aio.read(&cr, 0, vec![0u8; 8]).err();
    check!(
        1,
        e.is_some(),
        "a read through the parent's context was taken"
    );
    let text = e.map(|e| e.to_string()).unwrap_or_default();
    check!(2, text.contains("parent"), "the error says why: {text}");
    check!(
        3,
        aio.register_fd(file).is_err(),
        "an fd registration in the parent's context was taken"
    );
    let e = aio
        .lio_listio(
            posixrt::aio::ListMode::Wait,
            [Some(posixrt::aio::Op::read(&cr, 0, vec![0u8; 8]))],
            posixrt::aio::Notify::None,
        )
        .err();
    check!(
        11,
        e.is_some_and(|e| e.kind() == posixrt::ErrorKind::InvalidState),
        "a list through the parent's context was taken"
    );
    check!(
        4,
        parent_read.wait().is_err(),
        "a wait through the parent's context was taken"
    );
    drop(parent_read);
    drop(aio);
    let mine = posixrt::aio::Aio::builder()
        .backend(backend)
        .build()
        .map_err(|e| Fail(5, format!("a new context in the child: {e}")))?;
    let mut r = mine
        .read(&cr, 0, vec![0u8; 8])
        .map_err(|e| Fail(6, e.to_string()))?;
    cw.write_all(b"child!!!")
        .map_err(|e| Fail(7, e.to_string()))?;
    let c = r.wait().map_err(|e| Fail(8, e.to_string()))?;
    check!(
        9,
        c.data() == b"child!!!",
        "the child's read got {:?}",
        c.data()
    );
    let c = mine.read(file, 0, vec![0u8; 8]).and_then(|mut r| r.wait());
    check!(
        10,
        c.is_ok_and(|c| c.data() == b"childish"),
        "the child's read of the file"
    );
    Ok(())
}

/// A forked child cannot use an AIO context its parent made (its rings and
/// requests are the parent's): submitting, registering an fd and waiting
/// fail with the hint to make a new one, which works; and nothing the child
/// does, nor its dropping the inherited handles, touches the parent's
/// request in flight, which completes in the parent with its own data.
#[test]
fn forked_child_refuses_the_parent_s_aio_context_and_leaves_its_requests_alone() {
    use posixrt::aio::{Aio, Backend};
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for backend in [Backend::Uring, Backend::Threads] {
        let Ok(aio) = Aio::builder().backend(backend).build() else {
            continue; // (io_uring refused here: the thread engine still runs.)
        };
        // The parent's read waits on an empty pipe through the fork.
        let (pr, pw) = rustix::pipe::pipe().expect("pipe");
        let mut parent_read = aio.read(&pr, 0, vec![0u8; 8]).expect("parent read");
        let file = std::fs::File::from(
            rustix::fs::memfd_create("fork-aio", rustix::fs::MemfdFlags::empty()).expect("memfd"),
        );
        rustix::io::pwrite(&file, b"childish", 0).expect("pwrite");
        // (The child takes the parent's handles: it drops them.)
        let (code, msg) = match fork() {
            Side::Child(w) => child_exit(w, aio_in_the_child(aio, parent_read, &file, backend)),
            Side::Parent(pid, r) => child_report(pid, r),
        };
        assert_eq!(
            code, 0,
            "{backend:?}: check {code} failed in the child: {msg}"
        );
        // The parent's read is still there, and gets the parent's bytes.
        rustix::io::write(&pw, b"PARENT!!").expect("write");
        let c = parent_read.wait().expect("the parent's read");
        assert_eq!(c.data(), b"PARENT!!", "{backend:?}");
    }
}

/// The sporadic server thread is the parent's: it does not exist in a forked
/// child. Serving a thread there is refused (`Unsupported`, with a hint) instead
/// of returning a `Served` that nothing enforces, and `blocking` just runs its call.
#[test]
fn forked_child_refuses_to_serve_with_the_parent_s_sporadic_server() {
    use posixrt::sched::sporadic::{self, SporadicParams};
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Err(e) = sporadic::server_tid() {
        // No privilege for the server's SCHED_FIFO: tests/sporadic.rs checks that
        // refusal; nothing to inherit here.
        assert_eq!(e.kind(), posixrt::ErrorKind::PermissionDenied, "{e}");
        return;
    }
    let (code, msg) = in_forked_child(|| {
        let ms = Duration::from_millis;
        let p = SporadicParams::new(10, ms(50), ms(2), 4);
        let r = sporadic::serve(sched::gettid(), p, 50);
        check!(1, r.is_err(), "serve in the child succeeded: {r:?}");
        let e = r.unwrap_err();
        check!(
            2,
            e.kind() == posixrt::ErrorKind::Unsupported,
            "kind {:?}: {e}",
            e.kind()
        );
        check!(3, e.hint().is_some_and(|h| h.contains("fork")), "{e}");
        check!(4, sporadic::blocking(|| 7) == 7, "blocking");
        Ok(())
    });
    assert_eq!(code, 0, "check {code}: {msg}");
}
