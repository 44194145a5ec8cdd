//! A condvar wait over a `PiMutex` whose relock the kernel refuses (EDEADLK: the
//! relock would close a cycle) panics out of `wait`; the guard that unwinding
//! drops holds nothing, so the trace must not show an unlock by that thread after
//! its refused lock (POSIX: nothing was acquired, nothing is released).

#[path = "common/panics.rs"]
mod panics;
#[path = "common/waits.rs"]
mod waits;
use waits::poll;

use panics::quiet_expected_panic;

use std::collections::BTreeMap;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use posixrt::sync::{current_tid, Condvar, PiCondvar, PiMutex};
use posixrt::trace::system_events::{self as sys, Value};
use posixrt::trace::{Trace, TraceAttr};

/// (event name, result or -1) of the `sync_lock` / `sync_unlock` events that
/// thread `tid` recorded about the object at `addr`, in order.
fn lock_events(t: &Trace, addr: usize, tid: u32) -> Vec<(String, i64)> {
    let types: BTreeMap<u16, _> = t.event_types().map(|ty| (ty.id.raw(), ty)).collect();
    t.events()
        .filter(|e| e.tid == tid)
        .filter_map(|e| {
            let ty = types.get(&e.id.raw())?;
            if ty.name != "sync_lock" && ty.name != "sync_unlock" {
                return None;
            }
            let f: BTreeMap<String, Value> = sys::decode(&ty.fields, &e.data)?
                .into_iter()
                .map(|(n, v)| (n.to_string(), v))
                .collect();
            (f.get("addr") == Some(&Value::Hex(addr as u64))).then_some(())?;
            let result = match f.get("result") {
                Some(Value::I(r)) if ty.name == "sync_lock" => *r,
                _ => -1,
            };
            Some((ty.name.clone(), result))
        })
        .collect()
}

/// Runs the cycle: the waiter holds `n`, waits on `m` with `wait`; a blocker takes
/// `m` and blocks on `n`; the notify makes the waiter relock `m`, which the kernel
/// refuses. Returns the waiter's lock events on `m`.
fn refused_relock_events(wait: fn(&PiMutex<u32>, &WaitOn)) -> Vec<(String, i64)> {
    let m = Arc::new(PiMutex::new(0u32));
    let n = Arc::new(PiMutex::new(()));
    let cv = Arc::new(WaitOn::new());
    let addr = unsafe { m.raw() } as *const _ as usize;
    let mut a = TraceAttr::new();
    a.set_stream_size(1 << 20).unwrap();
    let t = Trace::create(&a).unwrap();
    t.start().unwrap();
    quiet_expected_panic("posixrt lock failed: futex(FUTEX_LOCK_PI)");
    let (tx, rx) = mpsc::channel();
    let (m2, n2, cv2) = (m.clone(), n.clone(), cv.clone());
    let waiter = std::thread::spawn(move || {
        tx.send(current_tid()).unwrap();
        let _n = n2.lock();
        wait(&m2, &cv2);
    });
    let waiter_tid = rx.recv().unwrap();
    assert!(poll(|| cv.waiters() == 1 && !m.is_locked()));
    let (m3, n3) = (m.clone(), n.clone());
    let blocker = std::thread::spawn(move || {
        let mut g = m3.lock();
        *g = 1;
        drop(n3.lock()); // blocks until the waiter unwinds and drops `n`
    });
    assert!(poll(|| unsafe { n.raw() }.has_waiters()));
    cv.notify_one();
    assert!(waiter.join().is_err(), "the refused relock panics");
    blocker.join().unwrap();
    t.stop().unwrap();
    assert_eq!(*m.lock(), 1, "the blocker's write is there");
    lock_events(&t, addr, waiter_tid)
}

/// Either condvar kind, chosen per test.
enum WaitOn {
    Plain(Condvar),
    Pi(PiCondvar),
}

impl WaitOn {
    fn new() -> WaitOn {
        if PI.with(|p| p.get()) {
            WaitOn::Pi(PiCondvar::new())
        } else {
            WaitOn::Plain(Condvar::new())
        }
    }
    fn waiters(&self) -> u32 {
        match self {
            WaitOn::Plain(c) => c.waiters(),
            WaitOn::Pi(c) => c.waiters(),
        }
    }
    fn notify_one(&self) {
        match self {
            WaitOn::Plain(c) => drop(c.notify_one()),
            WaitOn::Pi(c) => drop(c.notify_one()),
        }
    }
}

thread_local! {
    static PI: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn wait_loop(m: &PiMutex<u32>, cv: &WaitOn) {
    let mut g = m.lock();
    // Bounded: the relock after the notify (or a timeout) closes the cycle.
    while *g == 0 {
        match cv {
            WaitOn::Plain(c) => drop(c.wait_for(&mut g, Duration::from_secs(2))),
            WaitOn::Pi(c) => drop(c.wait_for(&mut g, Duration::from_secs(2)).unwrap()),
        }
    }
}

fn expected() -> Vec<(String, i64)> {
    vec![
        ("sync_lock".to_string(), 0),
        // The wait's own unlock.
        ("sync_unlock".to_string(), -1),
        // The refused relock; no unlock after it.
        ("sync_lock".to_string(), i64::from(libc::EDEADLK)),
    ]
}

/// `PiCondvar`: the waiter holds another PI mutex, so it sleeps plain and
/// relocks itself; the relock is refused.
#[test]
fn pi_condvar_refused_relock_traces_no_unlock() {
    PI.with(|p| p.set(true));
    assert_eq!(refused_relock_events(wait_loop), expected());
}

/// The plain `Condvar` over a `PiMutex`: the relock through `lock_api` is refused.
#[test]
fn condvar_over_pi_mutex_refused_relock_traces_no_unlock() {
    PI.with(|p| p.set(false));
    assert_eq!(refused_relock_events(wait_loop), expected());
}
