//! Test seams: points of the trace code where a unit test runs its own code,
//! on the thread that reaches them, to make two threads race in one chosen
//! order without timing. Outside `cfg(test)` a seam is an empty function.

/// A point a test can stop a thread at.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Point {
    /// A writer found no room for its event and is about to apply the stream
    /// full policy ([`Stream::full`](super::stream::Stream::full)).
    WriterFull,
    /// Such a writer looked at the tail again and is dropping its event
    /// (before counting it: [`Ring::begin_drop`](super::ring::Ring::begin_drop)).
    WriterDropping,
    /// `start()` is about to take the stream's control lock.
    StartLocking,
    /// `clear()` has emptied every sub-buffer and is not done yet.
    ClearRingsDone,
    /// `clear()` has emptied a sub-buffer whose writer is dropping an event,
    /// and waits for it to count the drop.
    ClearWaitsForDrop,
    /// `status()` has looked at whether the stream suspended itself by
    /// fullness, and not yet at whether it runs.
    StatusLooking,
}

/// Runs the test's code for `p` if this thread has some (once).
#[inline(always)]
pub(crate) fn at(p: Point) {
    #[cfg(test)]
    hook::run(p);
    #[cfg(not(test))]
    let _ = p;
}

#[cfg(test)]
pub(crate) use hook::once_at;

#[cfg(test)]
mod hook {
    use super::Point;
    use std::cell::RefCell;

    type Hook = (Point, Box<dyn FnOnce()>);

    thread_local! {
        static HOOK: RefCell<Option<Hook>> = const { RefCell::new(None) };
    }

    /// Runs `f` the first time this thread reaches `p` after this call.
    pub(crate) fn once_at(p: Point, f: impl FnOnce() + 'static) {
        HOOK.with(|h| *h.borrow_mut() = Some((p, Box::new(f))));
    }

    pub(super) fn run(p: Point) {
        let f = HOOK
            .try_with(|h| {
                let mut h = h.borrow_mut();
                match h.take() {
                    Some((q, f)) if q == p => Some(f),
                    other => {
                        *h = other;
                        None
                    }
                }
            })
            .ok()
            .flatten();
        if let Some(f) = f {
            f();
        }
    }
}
