//! `lio_listio`: submit a list of requests in one call, wait for all of them
//! (`LIO_WAIT`) or be notified once when all are done (`LIO_NOWAIT`).

use std::sync::Arc;

use super::context::Aio;
use super::engine::{Engine, Inner};
use super::hook;
use super::notify::Notify;
use super::op::Op;
use super::request::{result_of, Completion, Request, RequestId};
use super::table::{Core, Hold, State};
use crate::{Error, ErrorKind, Result};

/// `lio_listio`'s mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[doc(alias = "LIO_WAIT")]
#[doc(alias = "LIO_NOWAIT")]
pub enum ListMode {
    /// `LIO_WAIT`: return when every request is done (the list notification is
    /// ignored; per-request notifications still fire).
    Wait,
    /// `LIO_NOWAIT`: return once queued; the list notification fires once, when
    /// the last request is done.
    NoWait,
}

pub(crate) struct Entry<B> {
    pub idx: u32,
    pub gen: u32,
    pub buf: Option<B>,
}

/// The requests of one `lio_listio` call, by entry, in the order given (an empty
/// or `LIO_NOP` entry has no request).
///
/// Take every result at once with [`List::take_all`] (one lock for the whole
/// list), or turn the list into one [`Request`] handle per entry with
/// [`List::into_requests`]. Dropping a list with unfinished requests cancels them,
/// like dropping their handles.
pub struct List<B: Send + 'static> {
    pub(crate) aio: Aio,
    pub(crate) entries: Vec<Option<Entry<B>>>,
}

pub(crate) fn entry_done(core: &Core, e: &Entry<impl Sized>) -> bool {
    core.get(e.idx, e.gen)
        .map_or(true, |s| s.state == State::Done)
}

impl<B: Send + 'static> List<B> {
    /// Number of entries (including empty ones).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True for a list of no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The request of entry `i`, or `None` for an empty or `LIO_NOP` entry (or
    /// `i` out of range). Usable in [`Aio::suspend`](super::Aio::suspend) lists.
    pub fn id(&self, i: usize) -> Option<RequestId> {
        let e = self.entries.get(i)?.as_ref()?;
        Some(RequestId {
            ctx: Arc::as_ptr(&self.aio.inner) as usize,
            idx: e.idx,
            gen: e.gen,
        })
    }

    /// Every entry's request (`None` for empty ones), for [`Aio::suspend`](super::Aio::suspend).
    pub fn ids(&self) -> impl Iterator<Item = Option<RequestId>> + '_ {
        (0..self.entries.len()).map(move |i| self.id(i))
    }

    /// `aio_error` of entry `i`: `Ok(())` if it succeeded, [`ErrorKind::InProgress`]
    /// while it runs, otherwise its error (ECANCELED if cancelled). EINVAL for an
    /// empty or `LIO_NOP` entry, an index out of range, or an entry whose result was
    /// already taken.
    ///
    /// # References
    /// - [`aio_error(3)`](https://man7.org/linux/man-pages/man3/aio_error.3.html)
    ///
    /// [`ErrorKind::InProgress`]: crate::ErrorKind::InProgress
    pub fn error(&self, i: usize) -> Result<()> {
        let Some(e) = self.entries.get(i).and_then(Option::as_ref) else {
            return Err(Error::invalid(
                "aio_error",
                format!("entry {i} of the list has no request"),
            )
            .with_hint(
                "empty (None) and LIO_NOP entries are not requests; a taken entry has no status",
            ));
        };
        match self.raw_result(e) {
            None => Err(Error::from_errno("aio_error", libc::EINPROGRESS)),
            Some(r) => result_of("aio_error", r).map(drop),
        }
    }

    /// What `lio_listio` itself reports about the list, checked at any time:
    /// `Ok(())` when every request succeeded, [`ErrorKind::InProgress`] while one
    /// still runs, and EIO when all are done and at least one failed (or was
    /// cancelled): then check each entry with [`List::error`].
    ///
    /// [`Aio::lio_listio`] in [`ListMode::Wait`] returns the list (which owns the
    /// buffers) even when an entry failed; `status()` gives C's `-1`/EIO.
    ///
    /// # References
    /// - [`lio_listio(3)`](https://man7.org/linux/man-pages/man3/lio_listio.3.html)
    ///
    /// [`ErrorKind::InProgress`]: crate::ErrorKind::InProgress
    pub fn status(&self) -> Result<()> {
        let inner = &self.aio.inner;
        let mut core = inner.lock();
        inner.poll_completions(&mut core);
        let mut failed = 0usize;
        let mut running = false;
        for e in self.entries.iter().flatten() {
            match core.get(e.idx, e.gen) {
                Some(s) if s.state == State::Done => failed += (s.res < 0) as usize,
                Some(_) => running = true,
                None => {}
            }
        }
        inner.release(core);
        if running {
            Err(Error::from_errno("lio_listio", libc::EINPROGRESS))
        } else if failed > 0 {
            Err(Error::from_errno("lio_listio", libc::EIO)
                .with_message(format!("{failed} of the list's requests failed"))
                .with_hint("check each entry with List::error(i) (aio_error)"))
        } else {
            Ok(())
        }
    }

    fn raw_result(&self, e: &Entry<B>) -> Option<i64> {
        let inner = &self.aio.inner;
        let mut core = inner.lock();
        inner.poll_completions(&mut core);
        let r = match core.get(e.idx, e.gen) {
            Some(s) if s.state == State::Done => Some(s.res),
            Some(_) => None,
            None => Some(-(libc::ECANCELED as i64)),
        };
        inner.release(core);
        r
    }

    /// True once every request is done.
    pub fn is_done(&self) -> bool {
        let inner = &self.aio.inner;
        let mut core = inner.lock();
        inner.poll_completions(&mut core);
        let done = self.entries.iter().flatten().all(|e| entry_done(&core, e));
        inner.release(core);
        done
    }

    /// Waits for every request (the calling thread reaps completions itself).
    pub fn wait_all(&self) -> Result<()> {
        self.aio.inner.wait_until(None, None, |c| {
            self.entries.iter().flatten().all(|e| entry_done(c, e))
        })?;
        Ok(())
    }

    /// Lets the requests run on without this list: each frees its slot (and its
    /// buffer) when done; nothing is cancelled.
    fn detach(&mut self) {
        let inner = &self.aio.inner;
        // The wakers a list future left: let go of now (after the lock), not
        // when each request is done.
        let mut wakers = Vec::new();
        let mut core = inner.lock();
        for e in std::mem::take(&mut self.entries).into_iter().flatten() {
            match core.get(e.idx, e.gen).map(|s| s.state) {
                Some(State::Done) => core.free_slot(e.idx),
                Some(_) => {
                    let s = &mut core.slots[e.idx as usize];
                    (s.detached, s.kept) = (true, true);
                    wakers.extend(s.waker.take());
                    if let Some(b) = e.buf {
                        s.orphan = Some(Box::new(b));
                    }
                }
                None => {}
            }
        }
        inner.release(core);
        drop(wakers);
    }

    /// Waits for every request, then takes every result and buffer (each entry's
    /// `aio_return`) under one lock. `None` for empty entries.
    pub fn take_all(mut self) -> Result<Vec<Option<Completion<B>>>> {
        if let Some(all) = self.try_take_done() {
            return Ok(all);
        }
        self.wait_all()?;
        Ok(self.take_done())
    }

    /// Takes every result under one lock if every request is done (the usual case
    /// after `LIO_WAIT`), without a separate wait pass.
    fn try_take_done(&mut self) -> Option<Vec<Option<Completion<B>>>> {
        let inner = Arc::clone(&self.aio.inner);
        let mut core = inner.lock();
        inner.poll_completions(&mut core);
        if !self.entries.iter().flatten().all(|e| entry_done(&core, e)) {
            inner.release(core);
            return None;
        }
        Some(self.take_locked(&inner, core))
    }

    /// Takes the results of a list whose requests are all done.
    pub(crate) fn take_done(&mut self) -> Vec<Option<Completion<B>>> {
        let inner = Arc::clone(&self.aio.inner);
        let core = inner.lock();
        self.take_locked(&inner, core)
    }

    fn take_locked(
        &mut self,
        inner: &Inner,
        mut core: super::engine::CoreGuard<'_>,
    ) -> Vec<Option<Completion<B>>> {
        // The entries go (so dropping the list has nothing to look at).
        let out = std::mem::take(&mut self.entries)
            .into_iter()
            .map(|e| {
                let e = e?;
                let res = match core.get(e.idx, e.gen) {
                    Some(s) if s.state == State::Done => {
                        let r = s.res;
                        core.free_slot(e.idx);
                        r
                    }
                    _ => -(libc::ECANCELED as i64),
                };
                Some(Completion {
                    result: result_of("aio_return", res),
                    buf: e.buf,
                })
            })
            .collect();
        inner.release(core);
        out
    }

    /// One [`Request`] handle per entry (`None` for empty ones).
    pub fn into_requests(mut self) -> Vec<Option<Request<B>>> {
        let inner = &self.aio.inner;
        std::mem::take(&mut self.entries)
            .into_iter()
            .map(|e| e.map(|e| Request::new(Arc::clone(inner), e.idx, e.gen, e.buf)))
            .collect()
    }
}

impl<B: Send + 'static> Drop for List<B> {
    fn drop(&mut self) {
        if self.entries.iter().any(Option::is_some) {
            // Dropping the handles cancels what is unfinished and keeps its buffers.
            drop(
                std::mem::take(&mut self.entries)
                    .into_iter()
                    .map(|e| {
                        e.map(|e| Request::new(Arc::clone(&self.aio.inner), e.idx, e.gen, e.buf))
                    })
                    .collect::<Vec<_>>(),
            );
        }
    }
}

impl Aio {
    /// `lio_listio`: submits every non-empty, non-`LIO_NOP` entry with one lock
    /// and (io_uring) one `io_uring_enter`.
    ///
    /// Every entry is checked first; if one is invalid (EINVAL: reqprio, offset,
    /// length, signal) nothing is submitted. With [`ListMode::Wait`] the call
    /// returns when all are done (check each result); with [`ListMode::NoWait`]
    /// it returns at once and `notify` fires once, when all are done. No
    /// notification of a `NoWait` list (`notify`, its entries') fires before
    /// the call returns: an entry done inside the call (a small write often
    /// is) shows in progress until then. The exception is a list with nothing
    /// to submit (every entry `None` or a NOP): its `notify` fires at once,
    /// inside the call, as glibc's does.
    ///
    /// Unlike C's `lio_listio`, which returns `-1`/EIO in `LIO_WAIT` mode when an
    /// entry failed, this returns the list (it owns the buffers) either way:
    /// [`List::status`] gives the EIO, [`List::error`] each entry's error.
    ///
    /// # Errors
    /// [`ErrorKind::Interrupted`](crate::ErrorKind::Interrupted) (EINTR) when a
    /// signal handler runs while [`ListMode::Wait`] waits (also with `SA_RESTART`,
    /// where POSIX restarts): the requests go on, and notify, as submitted; their buffers
    /// are freed when they are done, and their results are lost with the list
    /// (C's program keeps its `aiocb`s and asks each). To keep them whatever
    /// signal comes, submit with [`ListMode::NoWait`] and wait with
    /// [`List::wait_all`] or [`List::take_all`], which a handler does not end:
    ///
    /// ```
    /// use posixrt::aio::{Aio, ListMode, Notify, Op};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let f = std::fs::File::from(rustix::fs::memfd_create("l", rustix::fs::MemfdFlags::empty())?);
    /// rustix::io::pwrite(&f, b"abcdef", 0)?;
    /// let aio = Aio::new()?;
    /// // lio_listio(LIO_WAIT), with no EINTR to lose the list to.
    /// let list = aio.lio_listio(
    ///     ListMode::NoWait,
    ///     [Some(Op::read(&f, 0, vec![0u8; 3])), Some(Op::read(&f, 3, vec![0u8; 3]))],
    ///     Notify::None,
    /// )?;
    /// let done = list.take_all()?;
    /// assert_eq!(done[1].as_ref().unwrap().data(), b"def");
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # References
    /// - [`lio_listio(3)`](https://man7.org/linux/man-pages/man3/lio_listio.3.html)
    pub fn lio_listio<'fd, B, I>(
        &self,
        mode: ListMode,
        entries: I,
        notify: Notify,
    ) -> Result<List<B>>
    where
        B: Send + 'static,
        I: IntoIterator<Item = Option<Op<'fd, B>>>,
    {
        if self.inner.inherited() {
            // (Before the lock, which a thread of the parent may have held at
            // the fork; and before the list's group, which a failed
            // submission would leave open.)
            return Err(super::inherited::inherited_context_in("lio_listio"));
        }
        if mode == ListMode::Wait {
            // (A handler run while the call sleeps for the lock interrupts it.)
            let _ = crate::sys::rtlock::handler_ran_in_lock();
        }
        let threads = matches!(self.inner.engine, Engine::Threads(_));
        // One pass: check every entry and split it into what the engine needs and
        // the buffer the list keeps (nothing is submitted if one is invalid).
        let it = entries.into_iter();
        let mut entries: Vec<Option<Entry<B>>> = Vec::with_capacity(it.size_hint().0);
        let mut raws = Vec::with_capacity(it.size_hint().0);
        let mut need_notify = false;
        for o in it {
            match o {
                Some(mut op) if !op.is_nop() => {
                    let p = op.prepare("lio_listio", threads)?;
                    let Op { buf, notify, .. } = op;
                    need_notify |= !notify.is_none();
                    raws.push((p, notify));
                    entries.push(Some(Entry {
                        idx: u32::MAX,
                        gen: 0,
                        buf,
                    }));
                }
                _ => entries.push(None),
            }
        }
        let notify = match mode {
            ListMode::Wait => Notify::None,
            ListMode::NoWait => notify,
        };
        notify.validate("lio_listio")?;
        let hold = Hold::needed(mode == ListMode::NoWait, need_notify || !notify.is_none());
        self.inner.prepare_notify(&notify, "lio_listio")?;
        if need_notify {
            for (_, n) in &raws {
                self.inner.prepare_notify(n, "lio_listio")?;
            }
        }
        let n = raws.len();
        {
            let mut core = self.inner.lock();
            // Refused before the list gets its group: a group whose
            // submission is refused has no member to finish it, and stayed
            // open for good (an empty list's notified, for a call that
            // failed). Shutdown starts only when the last handle is gone, so
            // not before `submit_many` below looks again: this call holds one.
            if core.shutdown {
                drop(core);
                return Err(Error::new(
                    ErrorKind::InvalidState,
                    "lio_listio",
                    "the AIO context is shutting down",
                ));
            }
            // Every list gets a group, so its end is seen (trace hook) and its
            // notification fires once.
            let list = core.new_list(n as u32, notify);
            hook::list_start(list, n, mode == ListMode::Wait);
            if n == 0 {
                core.finish_list(list);
            }
            self.inner.release(core);
            // Each request's name goes straight into its entry.
            let mut names = Names(entries.iter_mut().flatten());
            self.inner
                .submit_many(raws.into_iter(), list, hold, &mut names)?;
        }

        let mut list = List {
            aio: self.clone(),
            entries,
        };
        if mode == ListMode::Wait {
            let all_done = |c: &Core| list.entries.iter().flatten().all(|e| entry_done(c, e));
            // Done already (reads of cached files complete inside the
            // submission): no signal mask. Otherwise signals are blocked from
            // here, before anything else the wait does, and come through only
            // while it sleeps: a handler due at any later moment ends the wait
            // with EINTR (the requests go on). One that ran while the call
            // built and submitted its list, before it had to wait, does not
            // (POSIX: EINTR for a signal "delivered while waiting"), as in
            // glibc; blocking them from the call's start made every call two
            // system calls longer (4% of `lio_listio` throughput in 32-read
            // lists of cached reads).
            let done = {
                let mut core = self.inner.lock();
                self.inner.poll_completions(&mut core);
                let d = all_done(&core);
                self.inner.release(core);
                d
            };
            let r = if done {
                Ok(true)
            } else {
                let masked = crate::sys::signal::block_for_wait();
                self.inner
                    .wait_until_masked(None, Some("lio_listio"), all_done, Some(masked))
            };
            if let Err(e) = r {
                list.detach();
                return Err(e);
            }
        }
        if hold {
            // The last step (see `hold.rs`).
            let ids = list.entries.iter().flatten().map(|e| (e.idx, e.gen));
            drop(self.inner.end_hold(ids));
        }
        Ok(list)
    }
}

/// Writes the names of submitted requests into the list's entries, in order.
struct Names<I>(I);

impl<'a, B: 'a, I: Iterator<Item = &'a mut Entry<B>>> Extend<(u32, u32)> for Names<I> {
    #[inline]
    fn extend<T: IntoIterator<Item = (u32, u32)>>(&mut self, it: T) {
        for (idx, gen) in it {
            if let Some(e) = self.0.next() {
                e.idx = idx;
                e.gen = gen;
            }
        }
    }
}
