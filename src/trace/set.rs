//! Event sets (`trace_event_set_t`) and filters.

use super::ids::{self, EventId, ID_SPACE, USER_BASE, WOPID_BASE};

pub(crate) const WORDS: usize = ID_SPACE / 64;

/// A set of event types (`trace_event_set_t`), used as a stream filter: events whose
/// type is in the filter are not recorded.
///
/// ```
/// use posixrt::trace::{EventId, EventSet, FillWhat};
/// let mut s = EventSet::empty();
/// s.fill(FillWhat::System);
/// assert!(s.contains(EventId::START));
/// s.del(EventId::START);
/// assert!(!s.contains(EventId::START));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct EventSet(pub(crate) [u64; WORDS]);

/// What [`EventSet::fill`] adds (`posix_trace_eventset_fill`'s `what`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FillWhat {
    /// `POSIX_TRACE_WOPID_EVENTS`: system events not associated with a process.
    WithoutPid,
    /// `POSIX_TRACE_SYSTEM_EVENTS`: every system event (built-in and registered).
    System,
    /// `POSIX_TRACE_ALL_EVENTS`: every event type, system and user.
    All,
}

/// How [`Trace::set_filter`](super::Trace::set_filter) combines the set with the current filter.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FilterHow {
    /// `POSIX_TRACE_SET_EVENTSET`: the filter becomes the set.
    Set,
    /// `POSIX_TRACE_ADD_EVENTSET`: the union of filter and set.
    Add,
    /// `POSIX_TRACE_SUB_EVENTSET`: the filter minus the set.
    Sub,
}

impl EventSet {
    /// `posix_trace_eventset_empty`.
    ///
    /// # References
    /// - [`posix_trace_eventset_empty`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_eventset_add.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_eventset_empty")]
    pub const fn empty() -> EventSet {
        EventSet([0; WORDS])
    }

    /// `posix_trace_eventset_fill`: makes the set the event types `what` names
    /// (POSIX: it "shall fill in the set"; what it held before is gone, as
    /// C's `posix_trace_eventset_fill`, whose set may be uninitialised). Each
    /// kind covers its whole id range, so ids registered or opened after the
    /// fill are in the set too: system events (and those without a pid, which
    /// [`register_wopid`](super::system_events::register_wopid) gives ids of
    /// their own) and user events.
    ///
    /// # References
    /// - [`posix_trace_eventset_fill`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_eventset_add.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_eventset_fill")]
    pub fn fill(&mut self, what: FillWhat) {
        *self = EventSet::empty();
        match what {
            FillWhat::All => self.0 = [!0; WORDS],
            FillWhat::System => {
                for i in 0..USER_BASE {
                    self.add(EventId(i));
                }
            }
            FillWhat::WithoutPid => {
                // The built-in ones, then the whole range registered ones
                // take their ids from, those registered later included.
                for t in ids::all_types() {
                    if t.wopid {
                        self.add(t.id);
                    }
                }
                for i in WOPID_BASE..USER_BASE {
                    self.add(EventId(i));
                }
            }
        }
    }

    /// `posix_trace_eventset_add` (adding a member is not an error).
    ///
    /// # References
    /// - [`posix_trace_eventset_add`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_eventset_add.html) (POSIX.1-2008)
    #[inline]
    #[doc(alias = "posix_trace_eventset_add")]
    pub fn add(&mut self, id: EventId) {
        self.0[id.0 as usize / 64] |= 1 << (id.0 % 64);
    }

    /// `posix_trace_eventset_del` (deleting a non-member is not an error).
    ///
    /// # References
    /// - [`posix_trace_eventset_del`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_eventset_add.html) (POSIX.1-2008)
    #[inline]
    #[doc(alias = "posix_trace_eventset_del")]
    pub fn del(&mut self, id: EventId) {
        self.0[id.0 as usize / 64] &= !(1 << (id.0 % 64));
    }

    /// `posix_trace_eventset_ismember`.
    ///
    /// # References
    /// - [`posix_trace_eventset_ismember`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_eventset_add.html) (POSIX.1-2008)
    #[inline]
    #[doc(alias = "posix_trace_eventset_ismember")]
    pub fn contains(&self, id: EventId) -> bool {
        self.0[id.0 as usize / 64] >> (id.0 % 64) & 1 != 0
    }

    /// Whether no type is in the set.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }

    /// The members, in id order.
    pub fn iter(&self) -> impl Iterator<Item = EventId> + '_ {
        (0..ID_SPACE as u16)
            .map(EventId)
            .filter(|id| self.contains(*id))
    }

    /// Union with another set.
    pub fn union(&self, other: &EventSet) -> EventSet {
        let mut r = *self;
        for (a, b) in r.0.iter_mut().zip(other.0.iter()) {
            *a |= *b;
        }
        r
    }

    /// This set minus another.
    pub fn minus(&self, other: &EventSet) -> EventSet {
        let mut r = *self;
        for (a, b) in r.0.iter_mut().zip(other.0.iter()) {
            *a &= !*b;
        }
        r
    }

    pub(crate) fn to_bytes(self) -> [u8; WORDS * 8] {
        let mut out = [0u8; WORDS * 8];
        for (i, w) in self.0.iter().enumerate() {
            out[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        out
    }
}
