//! The end of a `current_thread` runtime's turn, told by one long-lived task
//! per runtime and thread instead of a task spawned per turn.
//!
//! A task spawned now runs after every task that is ready now (the run queue is
//! first in, first out); so does a waiting task woken now. Waking one that lives
//! as long as its runtime spares each turn a task's allocation, spawn and free.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use tokio::runtime::{Handle, Id};

/// The wakers due at the end of the turn, and the task that wakes them.
#[derive(Default)]
struct State {
    /// To wake when the task next runs.
    due: Vec<Waker>,
    /// The task's waker while it waits (None while it is queued to run).
    task: Option<Waker>,
    /// True once the task is gone (its runtime shut down, or never ran it).
    gone: bool,
    /// True once this thread no longer asks it (see [`Mine`]): it finishes.
    retired: bool,
}

#[derive(Default)]
struct TurnEnd(Mutex<State>);

impl TurnEnd {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Has the task finish, when its runtime next runs it.
    fn retire(&self) {
        let task = {
            let mut s = self.state();
            s.retired = true;
            s.task.take()
        };
        if let Some(t) = task {
            t.wake();
        }
    }
}

/// The task: wakes what is due each time it runs, until retired.
struct Task(Arc<TurnEnd>, Vec<Waker>);

impl Future for Task {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Task(te, due) = self.get_mut();
        let retired = {
            let mut s = te.state();
            if !s.retired {
                s.task = Some(cx.waker().clone());
            }
            // (The two lists trade places: neither is allocated again.)
            std::mem::swap(&mut s.due, due);
            s.retired
        };
        due.drain(..).for_each(Waker::wake);
        if retired {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Drop for Task {
    /// The runtime drops its tasks when it shuts down (also one spawned while
    /// it does, never run): what is due is woken now, and the next turn's end
    /// asked for on this thread starts a task anew.
    fn drop(&mut self) {
        let due = {
            let mut s = self.0.state();
            s.gone = true;
            s.task = None;
            std::mem::take(&mut s.due)
        };
        due.into_iter().for_each(Waker::wake);
    }
}

/// The tasks this thread asks, by runtime: a few, for a thread that takes
/// turns driving several runtimes (or one runtime's `block_on` after another's).
/// One pushed out, and every one when the thread exits, is retired, so that a
/// runtime keeps no task for a thread that no longer asks it.
#[derive(Default)]
struct Mine(Vec<(Id, Arc<TurnEnd>)>);

/// How many runtimes' tasks a thread keeps.
const KEEP: usize = 4;

impl Mine {
    /// The task of runtime `h` (`id`), started if there is none (or it is gone).
    fn get(&mut self, h: &Handle, id: Id) -> Arc<TurnEnd> {
        if let Some(i) = self.0.iter().position(|(m, _)| *m == id) {
            if !self.0[i].1.state().gone {
                return Arc::clone(&self.0[i].1);
            }
            self.0.remove(i);
        }
        if self.0.len() >= KEEP {
            self.0.remove(0).1.retire();
        }
        let te = Arc::new(TurnEnd::default());
        self.0.push((id, Arc::clone(&te)));
        drop(h.spawn(Task(Arc::clone(&te), Vec::new())));
        te
    }
}

impl Drop for Mine {
    fn drop(&mut self) {
        self.0.iter().for_each(|(_, te)| te.retire());
    }
}

thread_local! {
    /// The tasks of the `current_thread` runtimes this thread asked.
    static MINE: RefCell<Mine> = RefCell::new(Mine::default());
}

/// Has `w` woken at the end of the turn of `h`, a `current_thread` runtime
/// whose thread this is.
pub(crate) fn wake_at_turn_end(h: &Handle, w: &Waker) {
    let id = h.id();
    let te = MINE.try_with(|m| Some(m.try_borrow_mut().ok()?.get(h, id)));
    let Some(te) = te.ok().flatten() else {
        // (This thread is exiting, or re-entered: a task of its own.)
        let w = w.clone();
        drop(h.spawn(async move { w.wake() }));
        return;
    };
    let mut s = te.state();
    if s.gone {
        // Its runtime dropped it just now.
        drop(s);
        w.wake_by_ref();
        return;
    }
    s.due.push(w.clone());
    let task = s.task.take();
    drop(s);
    if let Some(t) = task {
        t.wake();
    }
}
