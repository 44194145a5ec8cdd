//! Who gets a [`RwLock`] when it becomes free while real-time threads wait.
//!
//! `pthread_rwlock_unlock`: "If there are threads blocked on the lock when it
//! becomes available, the scheduling policy shall determine which thread(s)
//! shall acquire the lock"; under SCHED_FIFO that is the highest-priority
//! waiter. `pthread_rwlock_rdlock`: a real-time reader does not get the lock
//! while a writer of higher or equal priority waits (posixrt: otherwise it does).
//!
//! Each round: a holder thread takes the lock, the waiters (SCHED_FIFO threads,
//! pinned) are started and known to sleep in `futex` on the lock's memory
//! (`/proc/self/task/TID/syscall`), then the holder lets go. Each waiter notes
//! itself in the order list while it holds the lock, so the list is the order
//! in which they got it. Nothing is timed. The waiters are either all on one
//! CPU (priority alone decides who runs) or, with 2 CPUs, spread so that a
//! lower-priority waiter wakes beside the holder and a higher-priority one on
//! the other CPU (a race the lock must not lose). Needs SCHED_FIFO; without it
//! each test checks the documented refusal (EPERM) and returns.

#[path = "common/self_sched.rs"]
#[allow(dead_code)]
mod self_sched;
use self_sched::{have_rt, set_self};

use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use posixrt::sync::RwLock;

const ROUNDS: usize = 200;

/// Serializes the tests of this file (they pin FIFO threads to the same CPUs).
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether SCHED_FIFO may be used here; if not, the refusal must be EPERM.
fn rt_or_skip() -> bool {
    if have_rt() {
        return true;
    }
    let e = std::thread::spawn(|| set_self(libc::SCHED_FIFO, 20))
        .join()
        .expect("probe thread");
    assert_eq!(e, Err(libc::EPERM), "the documented refusal");
    eprintln!("skipped: no SCHED_FIFO here");
    false
}

/// The CPUs this process may use.
fn cpus() -> Vec<usize> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set, which the call fills.
    let set = unsafe {
        let mut s: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut s),
            0
        );
        s
    };
    // SAFETY: CPU_ISSET reads the set within its size.
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Pins the calling thread to `cpu`.
fn pin_self(cpu: usize) {
    // SAFETY: an all-zero cpu_set_t is a valid empty set; CPU_SET stays in range;
    // the call only reads the set.
    unsafe {
        let mut s: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut s);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &s),
            0,
            "sched_setaffinity"
        );
    }
}

fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// Whether thread `tid` sleeps in `futex` on an address inside `range`.
fn sleeps_in_futex_on(tid: i32, range: (usize, usize)) -> bool {
    let Ok(s) = std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall")) else {
        return false;
    };
    let mut f = s.split_whitespace();
    let nr = f.next().and_then(|n| n.parse::<i64>().ok());
    let addr = f
        .next()
        .and_then(|a| usize::from_str_radix(a.trim_start_matches("0x"), 16).ok());
    matches!((nr, addr), (Some(n), Some(a)) if n == libc::SYS_futex && a >= range.0 && a < range.1)
}

/// The addresses `lock` spans (its futex words are inside).
fn memory_of(lock: &RwLock<u32>) -> (usize, usize) {
    let a = lock as *const RwLock<u32> as usize;
    (a, a + std::mem::size_of::<RwLock<u32>>())
}

/// Waits (bounded) until thread `tid`, `who`, sleeps in `futex` inside `range`.
#[track_caller]
fn wait_asleep_on(tid: i32, range: (usize, usize), who: &str) {
    let end = Instant::now() + Duration::from_secs(5);
    while !sleeps_in_futex_on(tid, range) {
        assert!(Instant::now() < end, "{who} never slept on the lock");
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// Takes `lock` as `op` says and runs `f` while holding it.
fn holding(lock: &RwLock<u32>, op: Op, f: impl FnOnce()) {
    match op {
        Op::Read => {
            let _g = lock.read();
            f();
        }
        Op::Write => {
            let _g = lock.write();
            f();
        }
    }
}

/// What a thread of a round does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Read,
    Write,
}

/// A waiter: its name in the order list, what it takes, its FIFO priority, CPU.
#[derive(Clone, Copy)]
struct Waiter {
    name: &'static str,
    op: Op,
    prio: i32,
    cpu: usize,
}

/// One round: a holder (FIFO `holder.1` on CPU `holder.2`) takes the lock as
/// `holder.0`; the `waiters` start one after the other, each known asleep on the
/// lock before the next starts; then the holder lets go. Returns the order in
/// which the waiters held the lock.
fn round(holder: (Op, i32, usize), waiters: &[Waiter]) -> Vec<&'static str> {
    round_with(holder, waiters, false)
}

/// [`round`]; with `relock`, the holder write-locks again at once after it lets
/// go, and notes itself as "holder" while it holds that lock.
fn round_with(holder: (Op, i32, usize), waiters: &[Waiter], relock: bool) -> Vec<&'static str> {
    let lock = RwLock::new(0u32);
    let range = memory_of(&lock);
    let order = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        let (held_tx, held_rx) = mpsc::channel::<()>();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let lock = &lock;
        let order = &order;
        s.spawn(move || {
            pin_self(holder.2);
            set_self(libc::SCHED_FIFO, holder.1).expect("sched_setscheduler");
            holding(lock, holder.0, || {
                held_tx.send(()).expect("send");
                go_rx.recv().expect("go");
            });
            if relock {
                let _g = lock.write();
                order.lock().expect("order").push("holder");
            }
        });
        held_rx.recv().expect("the holder holds the lock");
        for w in waiters.iter().copied() {
            let (tid_tx, tid_rx) = mpsc::channel::<i32>();
            s.spawn(move || {
                pin_self(w.cpu);
                set_self(libc::SCHED_FIFO, w.prio).expect("sched_setscheduler");
                tid_tx.send(gettid()).expect("send");
                holding(lock, w.op, || order.lock().expect("order").push(w.name));
            });
            let tid = tid_rx.recv().expect("the waiter's tid");
            wait_asleep_on(tid, range, w.name);
        }
        assert!(
            order.lock().expect("order").is_empty(),
            "a waiter got in early"
        );
        go_tx.send(()).expect("go");
    });
    order.into_inner().expect("order")
}

/// Runs `ROUNDS` rounds and asserts `want` in each.
#[track_caller]
fn rounds(holder: (Op, i32, usize), waiters: &[Waiter], want: &[&str]) {
    rounds_with(holder, waiters, false, want);
}

/// [`rounds`] of [`round_with`] `relock`.
#[track_caller]
fn rounds_with(holder: (Op, i32, usize), waiters: &[Waiter], relock: bool, want: &[&str]) {
    for i in 0..ROUNDS {
        let got = round_with(holder, waiters, relock);
        assert_eq!(
            got, want,
            "round {i}: the order in which the waiters got the lock"
        );
    }
}

/// [`rounds`] with waiter `a` arriving first, then with `b` first.
#[track_caller]
fn rounds_either_first(holder: (Op, i32, usize), a: Waiter, b: Waiter, want: &[&str]) {
    rounds(holder, &[a, b], want);
    rounds(holder, &[b, a], want);
}

/// Serializes the test; `None` (after checking the refusal) without SCHED_FIFO.
fn serial_rt() -> Option<std::sync::MutexGuard<'static, ()>> {
    let s = serial();
    rt_or_skip().then_some(s)
}

/// The CPU for one-CPU tests and, with 2 CPUs, another one.
fn two_cpus() -> (usize, Option<usize>) {
    let c = cpus();
    let last = *c.last().expect("some CPU");
    (last, (c.len() >= 2).then(|| c[0]))
}

fn w(name: &'static str, op: Op, prio: i32, cpu: usize) -> Waiter {
    Waiter {
        name,
        op,
        prio,
        cpu,
    }
}

#[test]
fn the_higher_priority_writer_gets_the_lock_first_on_one_cpu() {
    let Some(_s) = serial_rt() else {
        return;
    };
    let (c, _) = two_cpus();
    // The holder above the waiters, then below them.
    for hp in [30, 5] {
        // The low writer waits first, the high one arrives later, and the reverse.
        rounds_either_first(
            (Op::Write, hp, c),
            w("low", Op::Write, 10, c),
            w("high", Op::Write, 20, c),
            &["high", "low"],
        );
        // Behind readers as well.
        rounds(
            (Op::Read, hp, c),
            &[w("low", Op::Write, 10, c), w("high", Op::Write, 20, c)],
            &["high", "low"],
        );
    }
}

#[test]
fn the_higher_priority_writer_gets_the_lock_first_across_cpus() {
    let Some(_s) = serial_rt() else {
        return;
    };
    let (c, Some(other)) = two_cpus() else {
        eprintln!("skipped: one CPU");
        return;
    };
    // The low writer shares the holder's CPU (it runs as soon as the holder
    // wakes it), the high one wakes on the other CPU.
    for holder in [Op::Write, Op::Read] {
        rounds_either_first(
            (holder, 5, c),
            w("low", Op::Write, 10, c),
            w("high", Op::Write, 20, other),
            &["high", "low"],
        );
    }
}

#[test]
fn a_higher_priority_reader_gets_the_lock_before_a_waiting_writer_on_one_cpu() {
    let Some(_s) = serial_rt() else {
        return;
    };
    let (c, _) = two_cpus();
    for hp in [30, 5] {
        rounds_either_first(
            (Op::Write, hp, c),
            w("writer", Op::Write, 10, c),
            w("reader", Op::Read, 20, c),
            &["reader", "writer"],
        );
    }
}

#[test]
fn a_higher_priority_reader_gets_the_lock_before_a_waiting_writer_across_cpus() {
    let Some(_s) = serial_rt() else {
        return;
    };
    let (c, Some(other)) = two_cpus() else {
        eprintln!("skipped: one CPU");
        return;
    };
    rounds_either_first(
        (Op::Write, 5, c),
        w("writer", Op::Write, 10, c),
        w("reader", Op::Read, 20, other),
        &["reader", "writer"],
    );
}

#[test]
fn readers_of_equal_priority_wait_behind_a_waiting_writer() {
    let Some(_s) = serial_rt() else {
        return;
    };
    let (c, other) = two_cpus();
    let o = other.unwrap_or(c);
    for holder in [Op::Read, Op::Write] {
        for hp in [30, 5] {
            // One CPU.
            let got = round(
                (holder, hp, c),
                &[
                    w("writer", Op::Write, 10, c),
                    w("r1", Op::Read, 10, c),
                    w("r2", Op::Read, 10, c),
                ],
            );
            assert_eq!(got.len(), 3);
            assert_eq!(got[0], "writer", "{got:?}");
        }
        // The readers beside the holder, the writer on the other CPU.
        for _ in 0..ROUNDS {
            let got = round(
                (holder, 5, c),
                &[
                    w("writer", Op::Write, 10, o),
                    w("r1", Op::Read, 10, c),
                    w("r2", Op::Read, 10, c),
                ],
            );
            assert_eq!(got.len(), 3);
            assert_eq!(got[0], "writer", "{got:?}");
        }
    }
}

/// A real-time reader that gives up waiting (a timed read that times out)
/// holds no lower-priority writer back afterwards.
#[test]
fn a_reader_that_timed_out_does_not_hold_a_writer_back() {
    let Some(_s) = serial_rt() else {
        return;
    };
    let (c, _) = two_cpus();
    for _ in 0..20 {
        let lock = RwLock::new(0u32);
        let range = memory_of(&lock);
        let g = lock.write();
        std::thread::scope(|s| {
            let lock = &lock;
            let (tid_tx, tid_rx) = mpsc::channel::<i32>();
            let writer = s.spawn(move || {
                pin_self(c);
                set_self(libc::SCHED_FIFO, 10).expect("sched_setscheduler");
                tid_tx.send(gettid()).expect("send");
                // Bounded, so that a writer held back forever fails the test
                // instead of hanging it.
                let mut g = lock
                    .try_write_for(Duration::from_secs(5))
                    .expect("the writer gets the lock once the reader gave up");
                *g += 1;
            });
            let tid = tid_rx.recv().expect("the writer's tid");
            wait_asleep_on(tid, range, "the writer");
            let got = s
                .spawn(move || {
                    pin_self(c);
                    set_self(libc::SCHED_FIFO, 20).expect("sched_setscheduler");
                    lock.try_read_for(Duration::from_millis(2)).is_some()
                })
                .join()
                .expect("the reader");
            assert!(!got, "the write lock is still held");
            drop(g);
            writer.join().expect("the writer gets the lock");
        });
        assert_eq!(*lock.read(), 1);
    }
}

/// A thread that write-locks the lock just as it becomes free (here the holder
/// itself, at once after its unlock) does not take it from a higher-priority
/// waiter woken on another CPU: it was not the scheduling policy's choice.
#[test]
fn a_lower_priority_newcomer_does_not_take_the_lock_from_a_woken_waiter() {
    let Some(_s) = serial_rt() else {
        return;
    };
    let (c, Some(other)) = two_cpus() else {
        eprintln!("skipped: one CPU");
        return;
    };
    for holder in [Op::Write, Op::Read] {
        let high = w("high", Op::Write, 20, other);
        rounds_with((holder, 5, c), &[high], true, &["high", "holder"]);
    }
    let reader = w("reader", Op::Read, 20, other);
    rounds_with((Op::Write, 5, c), &[reader], true, &["reader", "holder"]);
    // On one CPU a holder of higher priority keeps running and takes it again.
    let high = w("high", Op::Write, 20, c);
    rounds_with((Op::Write, 30, c), &[high], true, &["holder", "high"]);
}
