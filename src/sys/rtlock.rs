//! [`RtLocked`]: a lock that is priority-inheriting for real-time waiters and
//! keeps the throughput of a plain futex mutex for the others (the AIO engine's
//! core lock), and [`RtCond`], a condition variable for it.
//!
//! A bare PI futex ([`super::pilock`]) is fair in the wrong way for a busy lock:
//! `FUTEX_UNLOCK_PI` hands the lock to the top kernel waiter, which must then be
//! scheduled before anyone can use it, while running threads that want it queue
//! up behind it (a lock convoy: the AIO thread engine's 100k-request stress test
//! took 6x as long). Here only real-time waiters enter that hand-off:
//!
//! - **the word** holds 0 (free) or the owner's tid, plus `FUTEX_WAITERS` while
//!   real-time threads are queued in the kernel on it. A free lock is taken with
//!   one CAS 0 -> tid and released with one CAS tid -> 0 (no system call);
//! - **a waiter** first spins a bounded number of times while nobody sleeps on
//!   the lock (as `std`'s mutex does);
//! - **a real-time waiter** (`SCHED_FIFO`, `SCHED_RR`, `SCHED_DEADLINE`) then
//!   blocks with `FUTEX_LOCK_PI`: the kernel boosts the owner (whoever it is, as
//!   its tid is in the word) and hands the lock to the highest waiter on unlock,
//!   which is what a real-time waiter wants;
//! - **any other waiter** sleeps on a separate futex word, `sleep` (0: no
//!   such sleeper; 1: there may be one), with the protocol of `std`'s futex
//!   mutex, and retries the CAS when woken, so a running thread can still take
//!   a just-released lock (stealing), as with `std`;
//! - **unlock**: CAS tid -> 0, or `FUTEX_UNLOCK_PI` if the kernel set
//!   `FUTEX_WAITERS` (the CAS fails then); then, if `sleep` is 1, set it to 0
//!   and `FUTEX_WAKE` one sleeper.
//!
//! While a real-time thread is queued, `FUTEX_WAITERS` keeps the word non-zero,
//! so no other thread steals the lock from it: the kernel hands it over.
//!
//! # Races (why no wake-up is lost)
//!
//! A non-real-time waiter loops (all `SeqCst`): (1) swap `sleep` to 1; (2) read
//! the word, and if it is 0, CAS it to its tid (done if that succeeds); (3)
//! `FUTEX_WAIT` on `sleep` while `sleep == 1`. The unlocker does: (a) release
//! the word (the CAS, or the kernel's atomic update in `FUTEX_UNLOCK_PI`,
//! followed by a `SeqCst` fence); (b) read `sleep`, and if it is 1, (c) swap it
//! to 0 and, if it was still 1, (d) `FUTEX_WAKE` one thread.
//!
//! - (1)/(2) against (a)/(b) is the store-load (Dekker) pattern, sequentially
//!   consistent: either (2) sees the release, or (b) sees the mark.
//! - If (2) sees the word 0, the waiter does not sleep (it CASes, or loops if
//!   another thread took the lock first: then it marks again before it reads).
//! - If (b) sees the mark, (c) clears it and (d) wakes one sleeper. A waiter
//!   that had not reached (3) yet finds `sleep == 0` there (the kernel checks
//!   the value atomically with queueing it, against the hash-bucket lock (d)
//!   takes) and loops, or finds it marked again by another waiter and sleeps
//!   with the mark set (the next unlock sees it); a waiter already queued is
//!   woken, or another one is.
//! - A woken thread marks again at (1) **before** it tries the word (it never
//!   takes the lock unmarked after sleeping). So while any thread sleeps,
//!   either `sleep` is 1 (the next unlock wakes one) or a woken thread has yet
//!   to run (1), after which either it holds the lock with the mark set (its
//!   unlock wakes the next) or it sleeps with the mark set. A thread that takes
//!   the lock at (2) leaves the mark set: it cannot know whether others sleep,
//!   so its unlock makes one `FUTEX_WAKE` that may find nobody (as `std` does).
//! - A release by `FUTEX_UNLOCK_PI` leaves the word owned by the real-time
//!   waiter it was handed to; a sleeper woken then marks again and sleeps, and
//!   that owner's unlock wakes it.
//! - A real-time waiter queued in the kernel never sleeps on `sleep`; it is woken
//!   by the kernel's hand-over, which needs no mark.
//!
//! A relock by the holder panics (EDEADLK, as `FUTEX_LOCK_PI` refuses it),
//! whatever the caller's class: the slow path compares the word's owner with
//! the caller before it spins or sleeps.
//!
//! # Which waiters are real-time
//!
//! The calling thread's policy is cached per thread ([`is_rt`]) and read again
//! (`sched_getscheduler`, one system call) when it is older than
//! [`CLASS_TTL`]; it is read only on the slow path, after the spin, right before
//! a futex sleep. Code that switches a thread's policy itself (the AIO pool
//! workers) calls [`class_changed`]. A stale answer costs a waiter either the
//! boost (for a few milliseconds after a switch made from outside) or the
//! stealing; mutual exclusion does not depend on it.
//!
//! # Fork
//!
//! No reset: each lock belongs to one AIO context, and a forked child never uses
//! its parent's contexts (their rings and threads are not the child's; the C
//! library makes a new engine in the child). The tid the word holds comes from
//! [`super::tid`], which the fork hook resets, so a child's own locks carry its
//! own tid.
//!
//! # References
//! - [`futex(2)`, FUTEX_LOCK_PI, FUTEX_UNLOCK_PI, FUTEX_WAIT_BITSET, FUTEX_WAKE](https://man7.org/linux/man-pages/man2/futex.2.html)
//! - [`sched_getscheduler`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_getscheduler.html)

use std::cell::Cell;
use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::futex;

/// How many times a waiter polls the word before it sleeps (as `std`'s mutex).
const SPINS: u32 = 100;

/// How long the cached "is this thread real-time" answer is used.
pub(crate) const CLASS_TTL: Duration = Duration::from_millis(2);

thread_local! {
    /// The calling thread's "real-time?" and when it was read (None: never).
    static CLASS: Cell<Option<(bool, Instant)>> = const { Cell::new(None) };
    /// A signal handler ran while the thread slept for a lock.
    static HANDLED: Cell<bool> = const { Cell::new(false) };
}

/// True if a signal handler ran while the calling thread slept waiting for
/// a lock (not a real-time thread's: the kernel restarts `FUTEX_LOCK_PI`),
/// since the last call, which clears it. A call that waits interruptibly
/// clears it when it starts and asks before its first sleep: such a handler
/// ran during the call, and ends it with EINTR.
pub(crate) fn handler_ran_in_lock() -> bool {
    HANDLED.try_with(|h| h.replace(false)).unwrap_or(false)
}

/// True if the calling thread runs `SCHED_FIFO`, `SCHED_RR` or `SCHED_DEADLINE`
/// (cached for [`CLASS_TTL`]).
pub(crate) fn is_rt() -> bool {
    let now = Instant::now();
    if let Ok(Some((rt, at))) = CLASS.try_with(Cell::get) {
        if now.saturating_duration_since(at) < CLASS_TTL {
            return rt;
        }
    }
    let rt = match super::sched::getscheduler(0) {
        Ok(p) => matches!(
            p & !libc::SCHED_RESET_ON_FORK,
            libc::SCHED_FIFO | libc::SCHED_RR | SCHED_DEADLINE
        ),
        Err(_) => false,
    };
    let _ = CLASS.try_with(|c| c.set(Some((rt, now))));
    rt
}

/// `SCHED_DEADLINE` (not in every `libc` target's constants).
const SCHED_DEADLINE: i32 = 6;

/// Forgets the calling thread's cached class: call after switching its policy.
pub(crate) fn class_changed() {
    let _ = CLASS.try_with(|c| c.set(None));
}

/// The raw lock for [`lock_api`] (see the module docs).
pub(crate) struct RawRtLock {
    /// 0, or the owner's tid (| `FUTEX_WAITERS`): a PI futex word.
    word: AtomicU32,
    /// 1 while non-real-time waiters may sleep on it (see "Races").
    sleep: AtomicU32,
}

/// A value behind a [`RawRtLock`].
pub(crate) type RtLocked<T> = lock_api::Mutex<RawRtLock, T>;
/// A held [`RtLocked`].
pub(crate) type RtGuard<'a, T> = lock_api::MutexGuard<'a, RawRtLock, T>;

impl RawRtLock {
    #[inline]
    fn try_fast(&self, tid: u32) -> bool {
        self.word
            .compare_exchange(0, tid, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
    }

    /// Polls the word while it is held by a running owner and nobody sleeps on
    /// it, at most [`SPINS`] times (as `std`'s mutex: under contention, spinning
    /// only burns the CPU the owner may need); then one CAS if it looks free.
    /// True if the lock was taken.
    #[inline]
    fn spin(&self, tid: u32) -> bool {
        let mut n = SPINS;
        loop {
            let w = self.word.load(Ordering::Relaxed);
            if w == 0 {
                return self.try_fast(tid);
            }
            if n == 0 || w & futex::WAITERS != 0 || self.sleep.load(Ordering::Relaxed) != 0 {
                return false;
            }
            std::hint::spin_loop();
            n -= 1;
        }
    }

    #[cold]
    fn lock_slow(&self, tid: u32) {
        // A relock by the holder: refused as FUTEX_LOCK_PI refuses a real-time
        // caller's, where a non-real-time one would sleep for good.
        if self.word.load(Ordering::Relaxed) & futex::TID_MASK == tid {
            futex::lock_refused("AIO core lock", libc::EDEADLK);
        }
        if self.spin(tid) {
            return;
        }
        if is_rt() {
            self.lock_pi(tid);
        } else {
            self.lock_sleep(tid);
        }
    }

    /// A real-time waiter: `FUTEX_LOCK_PI`, which boosts the owner and returns
    /// with the lock ours (the kernel writes our tid into the word), or panics
    /// if the kernel refuses it for good (EDEADLK: a relock by the holder).
    fn lock_pi(&self, tid: u32) {
        if let Err(e) = futex::lock_pi_blocking(&self.word, || self.try_fast(tid)) {
            futex::lock_refused("AIO core lock", e);
        }
    }

    /// Any other waiter: sleep on `sleep`, retry the CAS when woken (see
    /// "Races" in the module docs for the steps).
    fn lock_sleep(&self, tid: u32) {
        loop {
            // (1), (2)
            self.sleep.swap(1, Ordering::SeqCst);
            if self.word.load(Ordering::SeqCst) == 0 && self.try_fast(tid) {
                return;
            }
            // (3): EAGAIN (the mark was cleared), EINTR or a wake: mark again,
            // look again.
            if futex::wait(&self.sleep, 1, None) == Err(libc::EINTR) {
                let _ = HANDLED.try_with(|h| h.set(true));
            }
        }
    }

    #[cold]
    fn wake_sleeper(&self) {
        // (c), (d)
        if self.sleep.swap(0, Ordering::SeqCst) != 0 {
            futex::wake(&self.sleep, 1);
        }
    }
}

// SAFETY: the lock is exclusive (the word names one owner: taken only by a CAS
// from 0 or by the kernel's FUTEX_LOCK_PI hand-over), and the guard is not Send:
// only the thread that locked may unlock (its tid is in the word, and
// FUTEX_UNLOCK_PI must be called by the owner).
unsafe impl lock_api::RawMutex for RawRtLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawRtLock = RawRtLock {
        word: AtomicU32::new(0),
        sleep: AtomicU32::new(0),
    };
    type GuardMarker = lock_api::GuardNoSend;

    /// One CAS when free; otherwise spin, then `FUTEX_LOCK_PI` (real-time
    /// caller) or a plain futex sleep (others).
    #[inline]
    fn lock(&self) {
        let tid = super::tid::current();
        if !self.try_fast(tid) {
            self.lock_slow(tid);
        }
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.try_fast(super::tid::current())
    }

    /// One CAS and one load when nobody waits.
    #[inline]
    unsafe fn unlock(&self) {
        let tid = super::tid::current();
        // (a)
        if self
            .word
            .compare_exchange(tid, 0, Ordering::SeqCst, Ordering::Relaxed)
            .is_err()
        {
            // FUTEX_WAITERS is set: real-time waiters are queued in the kernel;
            // hand the lock to the highest. Cannot fail for the owner of a
            // private PI futex.
            let _ = futex::unlock_pi(&self.word);
            fence(Ordering::SeqCst);
        }
        // (b)
        if self.sleep.load(Ordering::SeqCst) != 0 {
            self.wake_sleeper();
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.word.load(Ordering::Relaxed) != 0
    }
}

/// A waiter's or a notify's tag as futex bits (0, which no bit set could
/// match, taken as every bit).
fn tag_bits(tag: u32) -> std::num::NonZeroU32 {
    std::num::NonZeroU32::new(tag).unwrap_or(std::num::NonZeroU32::MAX)
}

/// A condition variable for [`RtLocked`]: an event count on a plain futex. A
/// waiter reads the count with the lock held, releases the lock, and sleeps while
/// the count is unchanged; a notifier bumps the count and wakes. A notify that
/// lands between the read and the sleep changes the count, so the sleep returns
/// at once: no wake-up is lost. The woken waiter re-takes the lock as any locker
/// does (`FUTEX_LOCK_PI` if it is real-time).
///
/// `waiters` lets a notify skip the system call when nobody waits: a waiter
/// counts itself (`SeqCst`) before it reads the count; a notifier bumps the
/// count (`SeqCst`) before it reads `waiters`. Either the notifier sees the
/// waiter, or the waiter's read of the count comes after the bump, and then the
/// state change the notifier made before notifying (under the lock, which the
/// waiter held when it read the count) is one the waiter already saw.
///
/// A tagged notify ([`notify_tagged`](RtCond::notify_tagged)) wakes only a
/// sleeper whose tag shares a bit with it: a waiter of another tag sleeps on
/// (one that has yet to sleep still sees the bump and looks again), so its
/// caller answers for waking whoever else the change concerns.
pub(crate) struct RtCond {
    seq: AtomicU32,
    waiters: AtomicU32,
}

impl RtCond {
    pub(crate) const fn new() -> RtCond {
        RtCond {
            seq: AtomicU32::new(0),
            waiters: AtomicU32::new(0),
        }
    }

    /// Releases `guard`'s lock, sleeps until notified (or spuriously, or past
    /// `deadline`), and takes the lock again. Callers re-check their condition.
    pub(crate) fn wait_until<T>(&self, guard: &mut RtGuard<'_, T>, deadline: Option<Instant>) {
        self.wait_tagged(guard, deadline, u32::MAX);
    }

    /// [`wait_until`](RtCond::wait_until) as a waiter that a
    /// [`notify_tagged`](RtCond::notify_tagged) wakes only if the two tags
    /// (bit sets, not 0) share a bit. Other notifies wake it as any waiter.
    pub(crate) fn wait_tagged<T>(
        &self,
        guard: &mut RtGuard<'_, T>,
        deadline: Option<Instant>,
        tag: u32,
    ) {
        let bits = tag_bits(tag);
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let seen = self.seq.load(Ordering::SeqCst);
        lock_api::MutexGuard::unlocked(guard, || {
            // EAGAIN (the count moved), EINTR, ETIMEDOUT: all mean "look again".
            let _ = futex::wait_bits(&self.seq, seen, deadline, bits);
            // Awake: a notify from now on need not wake anyone for us.
            self.waiters.fetch_sub(1, Ordering::Relaxed);
        });
    }

    /// Wakes the first waiter whose tag shares a bit with `tag` (see
    /// [`wait_tagged`](RtCond::wait_tagged)); true if one woke.
    #[inline]
    pub(crate) fn notify_tagged(&self, tag: u32) -> bool {
        let bits = tag_bits(tag);
        self.seq.fetch_add(1, Ordering::SeqCst);
        self.waiters.load(Ordering::SeqCst) != 0 && futex::wake_bits(&self.seq, 1, bits) > 0
    }

    /// Wakes up to `n` waiters.
    #[inline]
    pub(crate) fn notify_n(&self, n: u32) {
        self.seq.fetch_add(1, Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) != 0 {
            futex::wake(&self.seq, n);
        }
    }

    /// Wakes every waiter.
    #[inline]
    pub(crate) fn notify_all(&self) {
        self.notify_n(i32::MAX as u32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Contended increments of a plain integer: none is lost (mutual exclusion
    /// on the sleeping path, and every sleeper woken: a lost wake-up hangs).
    #[test]
    fn contended_counter() {
        const THREADS: u64 = 4;
        const EACH: u64 = 20_000;
        let l = Arc::new(RtLocked::new(0u64));
        let hs: Vec<_> = (0..THREADS)
            .map(|_| {
                let l = Arc::clone(&l);
                std::thread::spawn(move || {
                    for _ in 0..EACH {
                        let mut g = l.lock();
                        let v = *g;
                        std::hint::black_box(v);
                        *g = v + 1;
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(*l.lock(), THREADS * EACH);
        assert!(!l.is_locked());
    }

    /// A value handed back and forth through the condition variable, in order.
    #[test]
    fn cond_ping_pong() {
        const ROUNDS: u32 = 2_000;
        let s = Arc::new((RtLocked::new(0u32), RtCond::new()));
        let s2 = Arc::clone(&s);
        let odd = std::thread::spawn(move || {
            let (l, c) = &*s2;
            let mut g = l.lock();
            while *g < ROUNDS {
                if *g % 2 == 1 {
                    *g += 1;
                    c.notify_all();
                } else {
                    c.wait_until(&mut g, None);
                }
            }
        });
        let (l, c) = &*s;
        let mut g = l.lock();
        while *g < ROUNDS {
            if *g % 2 == 0 {
                *g += 1;
                c.notify_all();
            } else {
                c.wait_until(&mut g, None);
            }
        }
        drop(g);
        odd.join().unwrap();
        assert!(*l.lock() >= ROUNDS);
    }

    /// `notify_n(k)` with `k` threads asleep wakes all `k` (each waits for a flag
    /// that is set before the notify: a thread left asleep never reports).
    #[test]
    fn notify_n_wakes_that_many_sleepers() {
        const SLEEPERS: u32 = 3;
        let s = Arc::new((RtLocked::new(false), RtCond::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        for _ in 0..SLEEPERS {
            let (s, tx) = (Arc::clone(&s), tx.clone());
            std::thread::spawn(move || {
                let (l, c) = &*s;
                let mut g = l.lock();
                while !*g {
                    c.wait_until(&mut g, None);
                }
                let _ = tx.send(());
            });
        }
        let (l, c) = &*s;
        // All of them asleep (counted as waiters before they sleep, and the
        // lock taken after: each has released it in its wait).
        while c.waiters.load(Ordering::SeqCst) < SLEEPERS {
            std::thread::sleep(Duration::from_millis(1));
        }
        *l.lock() = true;
        c.notify_n(SLEEPERS);
        for i in 0..SLEEPERS {
            assert!(
                rx.recv_timeout(Duration::from_secs(10)).is_ok(),
                "{i} of {SLEEPERS} sleepers woke"
            );
        }
    }

    /// The panic of a relock by the holder (as `FUTEX_LOCK_PI` refuses it).
    const RELOCK: &str = "posixrt AIO core lock: FUTEX_LOCK_PI refused with EDEADLK";

    /// Relocks a lock the calling thread holds and returns the panic's
    /// message; checks that the first guard still unlocks.
    fn relock_message() -> String {
        let lock = RtLocked::new(7u32);
        let held = lock.lock();
        let r = crate::test_panics::quietly(|| *lock.lock());
        let msg = crate::test_panics::message(&*r.expect_err("a relock returned"));
        drop(held);
        assert!(!lock.is_locked(), "the first guard still unlocks");
        assert_eq!(*lock.lock(), 7);
        msg
    }

    /// A non-real-time holder's relock panics as a real-time one's does,
    /// instead of sleeping for good on a lock only it could release.
    #[test]
    fn a_relock_by_a_non_real_time_holder_panics_with_edeadlk() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            class_changed();
            assert!(!is_rt(), "the test thread runs SCHED_OTHER");
            let _ = tx.send(relock_message());
        });
        let msg = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the relock panicked (it slept, waiting for itself)");
        assert!(msg.starts_with(RELOCK), "{msg}");
    }

    /// A real-time holder's relock: `FUTEX_LOCK_PI` refuses it (EDEADLK) and
    /// `lock` panics. Needs SCHED_FIFO (CAP_SYS_NICE or RLIMIT_RTPRIO); the
    /// thread spins at most `SPINS` polls, pinned to one CPU.
    #[test]
    fn a_relock_by_a_real_time_holder_panics_with_edeadlk() {
        let cpu = crate::sched::CpuSet::single(crate::sched::current_cpu()).expect("this CPU");
        let fifo = crate::sched::Priority::fifo(5).expect("SCHED_FIFO 5");
        let spawned = crate::sched::Builder::new()
            .scheduling(fifo)
            .affinity(cpu)
            .spawn(|| {
                class_changed();
                assert!(is_rt(), "the test thread runs SCHED_FIFO");
                relock_message()
            });
        match spawned {
            Ok(h) => {
                let msg = h.join().expect("the test thread");
                assert!(msg.starts_with(RELOCK), "{msg}");
            }
            Err(e) => {
                // No privilege for SCHED_FIFO: the documented refusal.
                use rustix::thread::{capabilities, CapabilitySet};
                let rtprio = rustix::process::getrlimit(rustix::process::Resource::Rtprio);
                let nice =
                    capabilities(None).is_ok_and(|c| c.effective.contains(CapabilitySet::SYS_NICE));
                assert!(!nice && !rtprio.current.is_some_and(|l| l >= 5), "{e}");
                assert_eq!(e.kind(), crate::ErrorKind::PermissionDenied, "{e}");
            }
        }
    }

    /// A deadline in the past returns with the lock held again.
    #[test]
    fn cond_deadline_passes() {
        let l = RtLocked::new(1u8);
        let c = RtCond::new();
        let mut g = l.lock();
        c.wait_until(&mut g, Some(Instant::now()));
        assert_eq!(*g, 1);
        assert!(l.is_locked());
    }
}
