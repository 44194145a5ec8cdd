//! `lio_listio`: submit a list of requests in one call, wait for all of them
//! (`LIO_WAIT`) or be notified once when all are done (`LIO_NOWAIT`).

use std::sync::Arc;

use super::context::Aio;
use super::core::{State, NO_LIST};
use super::hook;
use super::notify::Notify;
use super::op::Op;
use super::request::Request;
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

/// The requests of one `lio_listio` call, in the order given; `None` where the
/// entry was empty or `LIO_NOP`.
pub struct List<B: Send + 'static> {
    pub(crate) aio: Aio,
    pub(crate) reqs: Vec<Option<Request<B>>>,
}

impl<B: Send + 'static> List<B> {
    /// The requests, by entry.
    pub fn requests(&self) -> &[Option<Request<B>>] {
        &self.reqs
    }
    /// The requests, by entry, mutably (to take results).
    pub fn requests_mut(&mut self) -> &mut [Option<Request<B>>] {
        &mut self.reqs
    }
    /// The requests, by entry.
    pub fn into_requests(self) -> Vec<Option<Request<B>>> {
        self.reqs
    }
    /// True once every request is done.
    pub fn is_done(&self) -> bool {
        self.reqs.iter().flatten().all(Request::is_done)
    }
    /// Waits for every request (the calling thread reaps completions itself).
    pub fn wait_all(&self) -> Result<()> {
        let ids: Vec<(u32, u32)> = self.reqs.iter().flatten().map(|r| (r.idx, r.gen)).collect();
        self.aio.inner.wait_until(None, |c| {
            ids.iter()
                .all(|&(i, g)| c.get(i, g).map_or(true, |s| s.state == State::Done))
        })?;
        Ok(())
    }
}

impl Aio {
    /// `lio_listio`: submits every non-empty, non-`LIO_NOP` entry with one lock
    /// and (io_uring) one `io_uring_enter`.
    ///
    /// Every entry is checked first; if one is invalid (EINVAL: reqprio, offset,
    /// length, signal) nothing is submitted. With [`ListMode::Wait`] the call
    /// returns when all are done (check each with `error`/`aio_return`); with
    /// [`ListMode::NoWait`] it returns at once and `notify` fires once, when all
    /// are done.
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
        for op in ops.iter_mut().flatten() {
            raws.push(op.prepare("lio_listio")?);
        }
        let notify = match mode {
            ListMode::Wait => Notify::None,
            ListMode::NoWait => notify,
        };
        notify.validate("lio_listio")?;
        self.inner.prepare_notify(&notify)?;
        for op in ops.iter().flatten() {
            self.inner.prepare_notify(&op.notify)?;
        }
        let n = raws.len();
        let mut ids = Vec::with_capacity(n);
        {
            let mut core = self.inner.lock();
            let list = if notify.is_none() {
                NO_LIST
            } else {
                core.new_list(n as u32, notify)
            };
            hook::list_start(list, n, mode == ListMode::Wait);
            if list != NO_LIST && n == 0 {
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
        let reqs = ops
            .into_iter()
            .map(|o| {
                o.and_then(|mut op| {
                    let (idx, gen) = ids.next()?;
                    Some(Request::new(
                        Arc::clone(&self.inner),
                        idx,
                        gen,
                        op.buf.take(),
                    ))
                })
            })
            .collect();
        let list = List {
            aio: self.clone(),
            reqs,
        };
        if mode == ListMode::Wait {
            list.wait_all()?;
        }
        Ok(list)
    }
}
