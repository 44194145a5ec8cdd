//! The engine's side of the tokio reactor registration (`tokio_reap::Host`):
//! a module of its own, above both, so that neither imports the other.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use super::engine::Inner;
use super::table::State;
use super::tokio_reap::{Host, Reactors};

impl Host for Inner {
    fn reap_now(&self) {
        let mut core = self.lock();
        self.poll_completions(&mut core);
        self.release(core);
    }

    fn completion_eventfd(&self) -> Option<&OwnedFd> {
        Inner::completion_eventfd(self).ok().flatten()
    }

    fn reactors(&self) -> &Reactors {
        &self.reactors
    }

    fn reactor_gone(self: Arc<Self>) {
        // The completion thread takes over if a request still has a waiter
        // (a task's future was dropped with its runtime: its request is
        // detached); then whatever already completed is reaped.
        let core = self.lock();
        let waited = core
            .slots
            .iter()
            .any(|s| s.waker.is_some() && !s.detached && s.state != State::Free);
        self.release(core);
        if waited {
            let _ = self.ensure_background();
        }
        Host::reap_now(&*self);
    }
}
