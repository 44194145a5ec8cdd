//! `lio_listio`: submit a list of requests in one call, wait for all of them
//! (`LIO_WAIT`) or be notified once when all are done (`LIO_NOWAIT`).

use std::sync::Arc;

use super::context::Aio;
use super::core::{Core, State};
use super::hook;
use super::notify::Notify;
use super::op::Op;
use super::request::{result_of, Completion, Request, RequestId};
use crate::Result;

/// `lio_listio`'s mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
        self.aio.inner.wait_until(None, |c| {
            self.entries.iter().flatten().all(|e| entry_done(c, e))
        })?;
        Ok(())
    }

    /// Waits for every request, then takes every result and buffer (each entry's
    /// `aio_return`) under one lock. `None` for empty entries.
    pub fn take_all(mut self) -> Result<Vec<Option<Completion<B>>>> {
        self.wait_all()?;
        Ok(self.take_done())
    }

    /// Takes the results of a list whose requests are all done.
    pub(crate) fn take_done(&mut self) -> Vec<Option<Completion<B>>> {
        let inner = Arc::clone(&self.aio.inner);
        let mut core = inner.lock();
        let out = self
            .entries
            .iter_mut()
            .map(|e| {
                let e = e.take()?;
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
    /// it returns at once and `notify` fires once, when all are done.
    ///
    /// # References
    /// - [`lio_listio(3)`](https://man7.org/linux/man-pages/man3/lio_listio.3.html)
    pub fn lio_listio<B, I>(&self, mode: ListMode, entries: I, notify: Notify) -> Result<List<B>>
    where
        B: Send + 'static,
        I: IntoIterator<Item = Option<Op<B>>>,
    {
        let mut ops: Vec<Option<Op<B>>> = entries
            .into_iter()
            .map(|o| o.filter(|o| !o.is_nop()))
            .collect();
        let mut raws = Vec::with_capacity(ops.len());
        let mut need_notify = false;
        for op in ops.iter_mut().flatten() {
            raws.push(op.prepare("lio_listio")?);
            need_notify |= !op.notify.is_none();
        }
        let notify = match mode {
            ListMode::Wait => Notify::None,
            ListMode::NoWait => notify,
        };
        notify.validate("lio_listio")?;
        self.inner.prepare_notify(&notify)?;
        if need_notify {
            for op in ops.iter().flatten() {
                self.inner.prepare_notify(&op.notify)?;
            }
        }
        let n = raws.len();
        let mut ids = Vec::with_capacity(n);
        {
            let mut core = self.inner.lock();
            // Every list gets a group, so its end is seen (trace hook) and its
            // notification fires once.
            let list = core.new_list(n as u32, notify);
            hook::list_start(list, n, mode == ListMode::Wait);
            if n == 0 {
                core.finish_list(list);
            }
            self.inner.release(core);
            let mut it = ops
                .iter_mut()
                .flatten()
                .zip(raws)
                .map(|(op, (raw, prio))| (raw, prio, std::mem::take(&mut op.notify)));
            self.inner.submit(&mut it, list, &mut ids)?;
        }
        let mut ids = ids.into_iter();
        let entries = ops
            .into_iter()
            .map(|o| {
                o.and_then(|mut op| {
                    let (idx, gen) = ids.next()?;
                    Some(Entry {
                        idx,
                        gen,
                        buf: op.buf.take(),
                    })
                })
            })
            .collect();
        let list = List {
            aio: self.clone(),
            entries,
        };
        if mode == ListMode::Wait {
            list.wait_all()?;
        }
        Ok(list)
    }
}
