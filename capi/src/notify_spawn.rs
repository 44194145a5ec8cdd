//! Creators of `SIGEV_THREAD` notification threads for a submitter whose
//! real-time class another thread could not take: one thread per class
//! (policy, priority and nice value), started by such a submitter at
//! submission, so that it runs at that class, and the notification threads it
//! creates start at it.
//!
//! Linux lets a thread without the privilege to use a real-time policy
//! (CAP_SYS_NICE, or an `RLIMIT_RTPRIO` at least as high as the priority) keep
//! the real-time class it inherited, lower its priority within that policy,
//! or leave it, but not enter it from another class. A notification thread
//! made by one of the library's threads (at another class) could not take its
//! submitter's: it ran at `SCHED_OTHER`, and explicit real-time attributes
//! were refused at its creation. glibc's notification thread inherits the
//! class from its AIO helper thread, made by the submitter.
//!
//! A creator exits after [`IDLE_EXIT`] without work once no pending
//! notification holds it; the next submission at its class starts another.
//! A forked child does not use its parent's creators (they are not there): it
//! starts its own. A leaf over `debug`: `notify` hands it the creation to run,
//! so that the two import nothing from each other both ways.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, TryLockError};
use std::time::Duration;

use crate::debug::debug;
use crate::notify_retry::{block_all, set_mask};

/// How long a creator stays without work before it looks whether it can
/// exit.
const IDLE_EXIT: Duration = Duration::from_secs(10);

/// Creates the notification thread for `arg` on the calling thread; the
/// errno if refused (and `arg` is still the caller's).
pub(crate) type Create = unsafe fn(arg: usize) -> Result<(), i32>;

/// What a creator is for: the class and nice value its threads start at.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Key {
    pub(crate) policy: i32,
    pub(crate) priority: i32,
    pub(crate) nice: Option<i32>,
}

/// A creator thread (see the module's documentation).
pub(crate) struct Creator {
    st: Mutex<Slot>,
    /// Wakes the creator thread: a job is there.
    work: Condvar,
    /// Wakes the thread that asked: its result is there.
    done: Condvar,
    /// Lets one asker at a time use the slot.
    turn: Mutex<()>,
    /// The process whose thread it is.
    pid: u32,
}

#[derive(Default)]
struct Slot {
    job: Option<(usize, Create)>,
    result: Option<Result<(), i32>>,
}

struct Cache {
    /// The process the creators belong to: a forked child drops its parent's.
    owner: u32,
    creators: Vec<(Key, Arc<Creator>)>,
}

static CACHE: Mutex<Cache> = Mutex::new(Cache {
    owner: 0,
    creators: Vec::new(),
});

/// True if a thread of this process at another class may not take the
/// real-time class `policy`/`priority` (no CAP_SYS_NICE, and an
/// `RLIMIT_RTPRIO` of 0 or below `priority`). False for the other policies,
/// which any thread may take (but `SCHED_DEADLINE`, which no thread
/// inherits).
pub(crate) fn needed(policy: i32, priority: i32) -> bool {
    if !matches!(policy, libc::SCHED_FIFO | libc::SCHED_RR) {
        return false;
    }
    if has_sys_nice() {
        return false;
    }
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` has room for the limit the call writes.
    if unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, &mut lim) } != 0 {
        return true;
    }
    lim.rlim_cur == 0 || lim.rlim_cur < priority as libc::rlim_t
}

/// True if the calling thread has CAP_SYS_NICE in its effective set.
fn has_sys_nice() -> bool {
    /// `_LINUX_CAPABILITY_VERSION_3`.
    const VERSION_3: u32 = 0x2008_0522;
    const CAP_SYS_NICE: u32 = 23;
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let mut h = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut d = [Data::default(); 2];
    // SAFETY: `h` and `d` are the header and the two data words of version
    // 3, which the call reads and fills; about the calling thread.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut h as *mut Header, d.as_mut_ptr()) };
    r == 0 && d[0].effective & (1 << CAP_SYS_NICE) != 0
}

/// The creator for `key`, started by the calling thread (whose class and
/// nice value `key` must be) if there is none; `None` if none can be started
/// (a debug line says so), or in a forked child whose parent's thread held
/// the cache's lock at the fork.
pub(crate) fn get(key: Key) -> Option<Arc<Creator>> {
    let me = std::process::id();
    let user = CACHE_OWNER.load(Ordering::SeqCst);
    let mut cache = if user == 0 || user == me {
        // (Seen, in a child, by any fork after the lock is taken.)
        CACHE_OWNER.store(me, Ordering::SeqCst);
        lock(&CACHE)
    } else {
        // A forked child: the lock may be held by a thread of the parent,
        // which is not here (never free).
        match CACHE.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        }
    };
    CACHE_OWNER.store(me, Ordering::Relaxed);
    if cache.owner != me {
        // A forked child's copy of its parent's creators: not here.
        cache.creators.clear();
        cache.owner = me;
    }
    if let Some((_, c)) = cache.creators.iter().find(|(k, _)| *k == key) {
        return Some(Arc::clone(c));
    }
    let c = Arc::new(Creator {
        st: Mutex::new(Slot::default()),
        work: Condvar::new(),
        done: Condvar::new(),
        turn: Mutex::new(()),
        pid: me,
    });
    let theirs = Arc::clone(&c);
    // Like the library's other threads, it takes no signal; the threads it
    // creates set their own mask. It inherits the calling thread's class,
    // nice value and CPU set.
    let old = block_all();
    let r = std::thread::Builder::new()
        .name("posixrt-aio-ncreate".into())
        .stack_size(128 << 10)
        .spawn(move || run(theirs));
    set_mask(&old);
    match r {
        Ok(_) => {
            cache.creators.push((key, Arc::clone(&c)));
            Some(c)
        }
        Err(e) => {
            debug(format_args!(
                "SIGEV_THREAD: no thread at policy {} priority {} to create the notification thread ({e}); it may run at another class",
                key.policy, key.priority
            ));
            None
        }
    }
}

/// The process that last used [`CACHE`] (0: none yet), set before it takes
/// the lock: a forked child that finds another's does not wait for the lock.
static CACHE_OWNER: AtomicU32 = AtomicU32::new(0);

impl Creator {
    /// Runs `create(arg)` on the creator thread and returns its result; on
    /// the calling thread in a forked child (the creator is the parent's).
    ///
    /// # Safety
    /// As `create`'s for `arg`.
    pub(crate) unsafe fn create(&self, arg: usize, create: Create) -> Result<(), i32> {
        if self.pid != std::process::id() {
            // SAFETY: the caller's contract.
            return unsafe { create(arg) };
        }
        let _turn = lock(&self.turn);
        let mut st = lock(&self.st);
        st.job = Some((arg, create));
        st.result = None;
        self.work.notify_one();
        loop {
            if let Some(r) = st.result.take() {
                return r;
            }
            st = self.done.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// The creator thread: runs each job; exits once idle and held by nothing
/// but the cache.
fn run(me: Arc<Creator>) {
    let mut st = lock(&me.st);
    loop {
        if let Some((arg, create)) = st.job.take() {
            drop(st);
            // SAFETY: `create` and `arg` were handed over together by
            // `Creator::create`, whose caller waits for the result.
            let r = unsafe { create(arg) };
            st = lock(&me.st);
            st.result = Some(r);
            me.done.notify_all();
            continue;
        }
        let (g, to) = me
            .work
            .wait_timeout(st, IDLE_EXIT)
            .unwrap_or_else(|p| p.into_inner());
        st = g;
        if to.timed_out() && st.job.is_none() {
            drop(st);
            let mut cache = lock(&CACHE);
            // Held by the cache and this thread alone: nobody can take it but
            // from the cache, which is locked.
            if Arc::strong_count(&me) == 2 {
                cache.creators.retain(|(_, c)| !Arc::ptr_eq(c, &me));
                return;
            }
            drop(cache);
            st = lock(&me.st);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
