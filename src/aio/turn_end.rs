//! The end of a `current_thread` runtime's turn, told by one long-lived task
//! per runtime and thread instead of a task spawned per turn.
//!
//! A task spawned now runs after every task that is ready now (the run queue is
//! first in, first out); so does a waiting task woken now. Waking one that lives
//! as long as its runtime spares each turn a task's allocation, spawn and free.
//! (One already woken in this turn and not run yet, for another context's
//! flush, would run too early: a task is spawned then, as before.)

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
    /// The task of runtime `h` (`id`), started if there is none (or it is
    /// gone). The list is kept least recently asked first.
    fn get(&mut self, h: &Handle, id: Id) -> Arc<TurnEnd> {
        if let Some(i) = self.0.iter().position(|(m, _)| *m == id) {
            let e = self.0.remove(i);
            if !e.1.state().gone {
                let te = Arc::clone(&e.1);
                self.0.push(e);
                return te;
            }
        }
        self.0.retain(|(_, te)| !te.state().gone);
        if self.0.len() >= KEEP {
            self.0.remove(0).1.retire();
        }
        let te = Arc::new(TurnEnd::default());
        self.0.push((id, Arc::clone(&te)));
        drop(h.spawn(Task(Arc::clone(&te), Vec::new())));
        te
    }

    /// 1 if this thread keeps a live task in runtime `id`, else 0.
    fn count(&self, id: Id) -> usize {
        self.0
            .iter()
            .filter(|(m, te)| *m == id && !te.state().gone)
            .count()
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
        // (This thread is exiting, or re-entered.)
        return spawn_one(h, w);
    };
    let mut s = te.state();
    if s.gone {
        // Its runtime dropped it just now.
        drop(s);
        w.wake_by_ref();
        return;
    }
    if s.task.is_none() && !s.due.is_empty() {
        // Woken earlier in this turn (for another context's flush) and not
        // run yet: it would run before the tasks that are ready now.
        drop(s);
        return spawn_one(h, w);
    }
    s.due.push(w.clone());
    let task = s.task.take();
    drop(s);
    if let Some(t) = task {
        t.wake();
    }
}

/// Has `w` woken by a task of its own, spawned now.
fn spawn_one(h: &Handle, w: &Waker) {
    let w = w.clone();
    drop(h.spawn(async move { w.wake() }));
}

/// The tasks of this module alive in runtime `h` that this thread keeps (0
/// or 1): not the program's tasks, when tokio counts the runtime's.
pub(crate) fn tasks_here(h: &Handle) -> usize {
    let id = h.id();
    MINE.try_with(|m| m.try_borrow().map_or(0, |m| m.count(id)))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Wake;

    /// A waker that logs its name.
    struct Log(&'static str, Arc<Mutex<Vec<&'static str>>>);
    impl Wake for Log {
        fn wake(self: Arc<Self>) {
            self.1.lock().unwrap().push(self.0);
        }
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn what_is_due_is_woken_as_the_runtime_drops_the_task() {
        let rt = rt();
        let log = Arc::new(Mutex::new(Vec::new()));
        let w = Waker::from(Arc::new(Log("due", Arc::clone(&log))));
        // Asked in the `block_on` body, which returns before any task runs.
        rt.block_on(async { wake_at_turn_end(&Handle::current(), &w) });
        assert!(log.lock().unwrap().is_empty());
        drop(rt);
        assert_eq!(*log.lock().unwrap(), ["due"]);
    }

    #[test]
    fn a_turn_s_end_comes_after_the_tasks_ready_when_asked() {
        let rt = rt();
        let log = Arc::new(Mutex::new(Vec::new()));
        let order = rt.block_on(async {
            let h = Handle::current();
            let task = |name: &'static str| {
                let log = Arc::clone(&log);
                drop(tokio::spawn(async move { log.lock().unwrap().push(name) }));
            };
            let end = |name: &'static str| {
                let w = Waker::from(Arc::new(Log(name, Arc::clone(&log))));
                wake_at_turn_end(&h, &w);
            };
            // The first turn starts the task; the second wakes it. Each time,
            // the second end is asked while the first is still to come.
            for [a, b, e1, c, e2] in [
                ["A", "B", "end1", "C", "end2"],
                ["D", "E", "end3", "F", "end4"],
            ] {
                task(a);
                task(b);
                end(e1);
                task(c);
                end(e2);
                for _ in 0..8 {
                    tokio::task::yield_now().await;
                }
            }
            log.lock().unwrap().clone()
        });
        assert_eq!(
            order,
            ["A", "B", "end1", "C", "end2", "D", "E", "end3", "F", "end4"]
        );
    }
}
