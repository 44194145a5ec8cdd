//! What the server shares with a served thread's handles: counters and a snapshot
//! of the state under a sequence lock.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use super::params::{SporadicParams, SS_REPL_MAX};
use super::state::{Level, Replenishment, SporadicState};
use crate::sched::cputime::CpuClock;
use crate::sched::{Priority, Tid};

/// Counters of a served thread, kept by the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SporadicStats {
    /// Times the budget ran out.
    pub exhaustions: u64,
    /// Replenishments carried out.
    pub replenishments: u64,
    /// Priority switches made.
    pub switches: u64,
    /// The largest overrun seen at an exhaustion (CPU time past the budget before
    /// the server demoted the thread).
    pub max_overrun: Duration,
    /// The sum of those overruns.
    pub total_overrun: Duration,
}

/// What the server publishes for readers, under a sequence lock (the server is the
/// only writer and never waits for a reader).
pub(super) struct Snapshot {
    seq: AtomicU64,
    /// The level the thread runs at: the last switch that held (`serve` put it
    /// at the normal one). Outside the sequence lock: one flag, written by the
    /// server only; it differs from the state's level while a switch is refused.
    applied_normal: AtomicBool,
    active: AtomicBool,
    capacity: AtomicU64,
    cpu_mark: AtomicU64,
    npending: AtomicUsize,
    at: [AtomicU64; SS_REPL_MAX],
    amount: [AtomicU64; SS_REPL_MAX],
}

#[derive(Debug, Clone)]
pub(super) struct View {
    pub(super) active: bool,
    pub(super) capacity: Duration,
    pub(super) cpu_mark: Duration,
    pub(super) pending: Vec<Replenishment>,
}

pub(super) fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Snapshot {
    pub(super) fn new() -> Snapshot {
        Snapshot {
            seq: AtomicU64::new(0),
            applied_normal: AtomicBool::new(true),
            active: AtomicBool::new(false),
            capacity: AtomicU64::new(0),
            cpu_mark: AtomicU64::new(0),
            npending: AtomicUsize::new(0),
            at: std::array::from_fn(|_| AtomicU64::new(0)),
            amount: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    pub(super) fn publish(&self, s: &SporadicState) {
        let r = Ordering::Relaxed;
        let seq = self.seq.load(r);
        self.seq.store(seq.wrapping_add(1), r);
        std::sync::atomic::fence(Ordering::Release);
        self.active.store(s.activation.is_some(), r);
        self.capacity.store(ns(s.capacity), r);
        self.cpu_mark.store(ns(s.cpu_mark), r);
        let n = s.pending.len().min(SS_REPL_MAX);
        for (i, p) in s.pending.iter().take(n).enumerate() {
            self.at[i].store(ns(p.at), r);
            self.amount[i].store(ns(p.amount), r);
        }
        self.npending.store(n, r);
        self.seq.store(seq.wrapping_add(2), Ordering::Release);
    }

    /// Records the level a switch put the thread at.
    pub(super) fn set_applied(&self, level: Level) {
        self.applied_normal
            .store(level == Level::Normal, Ordering::Relaxed);
    }

    /// The level the thread runs at (see [`set_applied`](Self::set_applied)).
    pub(super) fn applied(&self) -> Level {
        if self.applied_normal.load(Ordering::Relaxed) {
            Level::Normal
        } else {
            Level::Low
        }
    }

    /// The last copy the server wrote; `writer_gone` tells (asked only while
    /// the copy is being written) that no server runs in this process.
    pub(super) fn read(&self, writer_gone: impl Fn() -> bool) -> View {
        let r = Ordering::Relaxed;
        loop {
            let s0 = self.seq.load(Ordering::Acquire);
            // Odd: the server is writing. In a forked child that inherited the
            // handle, the server (the only writer) stayed in the parent and may
            // have been stopped mid-write by the fork: the count stays odd for
            // good, so the copy is read as it is (stale there in any case).
            let orphaned = s0 % 2 == 1 && writer_gone();
            if s0 % 2 == 1 && !orphaned {
                std::hint::spin_loop();
                continue;
            }
            let n = self.npending.load(r).min(SS_REPL_MAX);
            let v = View {
                active: self.active.load(r),
                capacity: Duration::from_nanos(self.capacity.load(r)),
                cpu_mark: Duration::from_nanos(self.cpu_mark.load(r)),
                pending: (0..n)
                    .map(|i| Replenishment {
                        at: Duration::from_nanos(self.at[i].load(r)),
                        amount: Duration::from_nanos(self.amount[i].load(r)),
                    })
                    .collect(),
            };
            std::sync::atomic::fence(Ordering::Acquire);
            if orphaned || self.seq.load(r) == s0 {
                return v;
            }
        }
    }
}

/// What a served thread shares between the server and its handles.
pub(super) struct Shared {
    pub(super) tid: Tid,
    pub(super) clock: CpuClock,
    pub(super) params: SporadicParams,
    pub(super) normal_priority: i32,
    /// The thread's policy and priority before it was served: given back when
    /// the server cannot take it.
    pub(super) prior: Priority,
    pub(super) snap: Snapshot,
    /// The server no longer serves it (removed, or the thread ended).
    pub(super) gone: AtomicBool,
    /// The errno of the last failed priority switch (0: none).
    pub(super) last_errno: AtomicI32,
    /// The errno with which the server could not create its timers (0: none).
    pub(super) timer_errno: AtomicI32,
    pub(super) exhaustions: AtomicU64,
    pub(super) replenishments: AtomicU64,
    pub(super) switches: AtomicU64,
    pub(super) max_overrun: AtomicU64,
    pub(super) total_overrun: AtomicU64,
}
