//! Writes that only a blocking `write(2)` can make, run off the workers.
//!
//! A terminal (or another character device) refuses `RWF_NOWAIT`, and the
//! `O_NONBLOCK` of its open file description is the program's: once it polled
//! writable, the rest of a write to a blocking one is a plain `write(2)`, which
//! returns when the terminal took every byte. A terminal's `POLLOUT` promises
//! room for some bytes only (n_tty: fewer than 256 queued and a write room
//! above 0; with `OPOST`, a newline may need two), so no piece larger than one
//! byte is sure not to block, and nothing stops the call but the reader. On a
//! worker it held the worker as long as nobody read the terminal: as many such
//! writes as workers stalled the pool.
//!
//! Such a write runs instead on a thread of its own (`posixrt-aio-tty`),
//! taken from the pool's idle ones or started for it; the worker goes back to
//! the queue. A thread left without work waits [`IDLE`] for another one, then
//! ends: as many exist as such writes are blocked at once, plus the idle
//! ones. The request stays issued meanwhile, so later writes on its
//! descriptor still wait for it (the table's order gate), and a cancel
//! reports it running (`AIO_NOTCANCELED`), as for any transfer begun. The
//! thread runs the write at the request's class, as a worker would, and rests
//! at the workers' class between writes. It holds the context until the
//! write ends: a context dropped meanwhile waits for it as for any transfer
//! begun (a bounded time), and lets it go on. Unlike the workers, such a
//! thread starts while the program runs, when a write needs it. If none can
//! be started (EAGAIN), the worker makes the write itself, as before, after
//! handing the queue on.

use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::super::table::Core;
use super::{cancelled, hand_on, switch, Host, Pool, REST};
use crate::sys::io::{self as sio, Mode};
use crate::sys::prio::{self, SchedClass};

/// How long a thread without work waits for another write before it ends.
const IDLE: Duration = Duration::from_secs(2);

/// Work for a thread; given the thread's class, which it may change.
type Task = Box<dyn FnOnce(&mut SchedClass) + Send>;

/// The idle threads of a pool, each by the sender of its own channel.
#[derive(Default)]
pub(super) struct Spares {
    idle: Mutex<Vec<(u64, Sender<Task>)>>,
    next: std::sync::atomic::AtomicU64,
}

impl Spares {
    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Sender<Task>)>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Gives `task` to an idle thread, or starts one for it; gives it back if
    /// no thread could be started.
    fn run(self: &Arc<Self>, mut task: Task) -> Result<(), Task> {
        loop {
            let Some((_, tx)) = self.idle().pop() else {
                break;
            };
            match tx.send(task) {
                Ok(()) => return Ok(()),
                // (Ended meanwhile: not possible while listed, but harmless.)
                Err(e) => task = e.0,
            }
        }
        let spares = Arc::clone(self);
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let slot = Arc::new(Mutex::new(Some(task)));
        let mine = Arc::clone(&slot);
        let started = crate::sys::signal::spawn_all_blocked("posixrt-aio-tty".into(), move || {
            let first = mine.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(t) = first {
                spare(&spares, id, t);
            }
        });
        match started {
            Ok(()) => Ok(()),
            Err(_) => {
                let t = slot.lock().unwrap_or_else(|p| p.into_inner()).take();
                // (The thread did not start, so the task is still there.)
                t.map_or(Ok(()), Err)
            }
        }
    }
}

/// A thread of [`Spares`]: runs `task`, then others given to it, until it has
/// waited [`IDLE`] for one in vain.
fn spare(spares: &Spares, id: u64, mut task: Task) {
    let (tx, rx) = channel::<Task>();
    let mut cur = prio::current();
    loop {
        task(&mut cur);
        spares.idle().push((id, tx.clone()));
        task = match rx.recv_timeout(IDLE) {
            Ok(t) => t,
            Err(RecvTimeoutError::Timeout) => {
                let mut idle = spares.idle();
                if let Some(i) = idle.iter().position(|e| e.0 == id) {
                    idle.remove(i);
                    return;
                }
                drop(idle);
                // Taken off the list by a hand-off: its task comes.
                match rx.recv() {
                    Ok(t) => t,
                    Err(_) => return,
                }
            }
            Err(RecvTimeoutError::Disconnected) => return,
        };
    }
}

/// The rest of a write that only a blocking `write(2)` can make, copied out
/// of request `idx`'s slot (issued, not interruptible).
pub(super) struct Blocked {
    pub(super) idx: u32,
    /// The request's own descriptor copy (or a C request's fd), open until it
    /// completes.
    pub(super) fd: i32,
    pub(super) ptr: usize,
    pub(super) len: usize,
    /// Bytes written by earlier rounds.
    pub(super) done: i64,
    pub(super) class: SchedClass,
}

/// What is left of request `idx`, whose round moved `moved` more bytes
/// before the write that would block (call with the engine lock held): the
/// rest to write off the worker; or `None`, the request ended, if a cancel or
/// the shutdown came first (nothing of the rest began).
pub(super) fn rest(core: &mut Core, idx: u32, moved: usize) -> Option<Blocked> {
    let shutdown = core.shutdown;
    let s = &mut core.slots[idx as usize];
    s.res += moved as i64;
    s.op.ptr += moved;
    s.op.len -= moved;
    if s.cancel_req || shutdown {
        let res = cancelled(s.res);
        core.complete(idx, res);
        return None;
    }
    // The write may go on until the terminal is read: a cancel reports it
    // running.
    s.interruptible = false;
    Some(Blocked {
        idx,
        fd: s.io_fd(),
        ptr: s.op.ptr,
        len: s.op.len,
        done: s.res,
        class: s.class,
    })
}

/// Writes the rest of `b` with blocking `write(2)` calls until every byte
/// went (or an error, or a write of 0): the request's result.
fn write_rest(b: &Blocked) -> i64 {
    let mut moved = 0usize;
    while moved < b.len {
        let len = (b.len - moved).min(super::super::table::MAX_RW);
        // SAFETY: (ptr + moved, len) lies in the request's buffer, owned by
        // the runtime until the request completes, which only this call's
        // caller does.
        let r = unsafe { sio::write(b.fd, (b.ptr + moved) as *const u8, len, Mode::Stream) };
        match r {
            Ok(0) => break,
            Ok(n) => moved += n,
            Err(libc::EINTR) => {}
            Err(e) => {
                if moved == 0 && b.done == 0 {
                    return -(e as i64);
                }
                break;
            }
        }
    }
    b.done + moved as i64
}

/// Runs the write of `b` on a thread of the pool's spares (or, none could be
/// started, on this worker, at class `cur`, after handing the queue on).
/// Call without the engine lock.
pub(super) fn start<H: Host>(host: &Arc<H>, pool: &Pool, b: Blocked, cur: &mut SchedClass) {
    let idx = b.idx;
    let h = Arc::clone(host);
    let task: Task = Box::new(move |cur: &mut SchedClass| {
        let Some(pool) = h.pool() else { return };
        let want = if b.class == SchedClass::OTHER {
            REST
        } else {
            b.class
        };
        if want != *cur && switch(want, pool) {
            *cur = want;
        }
        let res = write_rest(&b);
        finish(&*h, pool, b.idx, res);
        if *cur != REST && switch(REST, pool) {
            *cur = REST;
        }
    });
    if let Err(task) = pool.spares.run(task) {
        // No thread: this worker makes the write, as it did before.
        hand_on(&**host, pool, idx, true);
        task(cur);
        let c = host.table();
        pool.awake(true);
        drop(c);
    }
}

/// Completes request `idx` with `res`, and wakes workers for what that made
/// ready (the next request on its descriptor), as the poller does; at
/// shutdown, makes the poller look again (it stops once nothing is in
/// flight).
fn finish<H: Host>(host: &H, pool: &Pool, idx: u32, res: i64) {
    let mut c = host.table();
    c.complete(idx, res);
    let shutdown = c.shutdown;
    let ready = c.ready_len();
    let boosted = if ready > 0 {
        pool.boost_first(&mut c)
    } else {
        None
    };
    let wake = pool.to_wake(ready);
    host.release(c);
    pool.wake_for(wake, boosted);
    if shutdown {
        pool.interrupt(0);
    }
}
