//! Holding a `lio_listio(LIO_NOWAIT)` call's completions, and letting go of
//! them (see `hold.rs`, whose thread calls [`Inner::let_go`]).

use std::sync::Arc;

use super::engine::Inner;
use super::hold::{CallOut, Holder};
use super::slot::{Hold, State};

impl super::table::Core {
    /// Holds the completion of request `idx`, just placed by a holding call
    /// (under the lock it was placed with: it cannot have reached the engine
    /// yet), unless it is done already (an error at submission).
    pub(crate) fn hold(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        if s.state != State::Done {
            s.hold = Hold::Running;
        }
    }
}

impl Inner {
    /// The end of a holding call: has the holder thread let go of its
    /// requests `ids` (see [`let_go`](Inner::let_go)) once the returned
    /// guard is dropped, which the call does as its last step.
    pub(crate) fn end_hold(self: &Arc<Self>, ids: impl IntoIterator<Item = (u32, u32)>) -> CallOut {
        let h = match self.holder() {
            Ok(h) => h,
            // No thread to hand them to: let go of them now (a signal may
            // then be handled before the call returns).
            Err(_) => {
                self.let_go(ids);
                return CallOut(None);
            }
        };
        h.take(ids.into_iter().collect())
    }

    fn holder(self: &Arc<Self>) -> crate::Result<&Holder> {
        if let Some(h) = self.holder.get() {
            return Ok(h);
        }
        let _g = self.init.lock();
        if let Some(h) = self.holder.get() {
            return Ok(h);
        }
        let w = Arc::downgrade(self);
        let h = Holder::start(Box::new(move |ids| {
            if let Some(i) = w.upgrade() {
                i.let_go(ids);
            }
        }))?;
        Ok(self.holder.get_or_init(|| h))
    }

    /// Lets go of held requests `ids`: those done meanwhile complete now, the
    /// others when they are done.
    fn let_go(&self, ids: impl IntoIterator<Item = (u32, u32)>) {
        let mut core = self.lock();
        for (i, g) in ids {
            let Some(s) = core.get(i, g) else { continue };
            match s.hold {
                Hold::Running => core.slots[i as usize].hold = Hold::No,
                Hold::Done => {
                    let res = s.res;
                    core.slots[i as usize].hold = Hold::No;
                    core.complete(i, res);
                    // Done without a kernel completion: a reaper asleep in
                    // the ring must look.
                    core.nudge = true;
                }
                Hold::No => {}
            }
        }
        self.release_and_start(core);
    }
}
