//! The `SCHED_SPORADIC` parameters and POSIX's rules for them.

use std::time::Duration;

use crate::sched::Policy;
use crate::{Error, Result};

/// The most pending replenishments this implementation allows (`SS_REPL_MAX`);
/// POSIX requires at least [`POSIX_SS_REPL_MAX`].
pub const SS_REPL_MAX: usize = 16;

/// POSIX's minimum for `SS_REPL_MAX` (`_POSIX_SS_REPL_MAX`, 4).
pub const POSIX_SS_REPL_MAX: usize = 4;

/// The shortest replenishment period accepted: a user-space server wakes a few
/// times per period, so periods below this would keep it busy rather than bound a
/// thread.
pub const MIN_REPL_PERIOD: Duration = Duration::from_micros(200);

pub(super) const CALL: &str = "sched_setparam";

/// The `SCHED_SPORADIC` members of POSIX `struct sched_param`.
///
/// The normal priority (`sched_priority`) is given separately
/// ([`Builder::sporadic`](crate::sched::Builder::sporadic), [`serve`](super::serve)). Both priorities are
/// `SCHED_FIFO` priorities. [`validate`](Self::validate) applies POSIX's rules (EINVAL
/// from `sched_setparam` / `pthread_setschedparam`).
///
/// # References
///  - [`sched.h`](https://pubs.opengroup.org/onlinepubs/9799919799/basedefs/sched.h.html)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SporadicParams {
    /// `sched_ss_low_priority`: the priority once the budget is spent.
    pub low_priority: i32,
    /// `sched_ss_repl_period`: consumed budget comes back this long after the
    /// activation that consumed it.
    pub repl_period: Duration,
    /// `sched_ss_init_budget`: the budget, and the most it can ever hold.
    pub init_budget: Duration,
    /// `sched_ss_max_repl`: the most replenishments pending at once
    /// (1..=[`SS_REPL_MAX`]).
    pub max_repl: usize,
}

impl SporadicParams {
    /// The four members in POSIX order of the fields (not checked until
    /// [`validate`](Self::validate), which every user of them calls).
    pub const fn new(
        low_priority: i32,
        repl_period: Duration,
        init_budget: Duration,
        max_repl: usize,
    ) -> SporadicParams {
        SporadicParams {
            low_priority,
            repl_period,
            init_budget,
            max_repl,
        }
    }

    /// Checks POSIX's validity rules against the normal priority `normal_priority`
    /// (`sched_priority`): a positive budget no longer than the period, `max_repl`
    /// in 1..=[`SS_REPL_MAX`], both priorities in the `SCHED_FIFO` range and the
    /// low one below the normal one; and this implementation's own limits: the floor
    /// on the period, [`MIN_REPL_PERIOD`], and a normal priority below the top
    /// `SCHED_FIFO` priority, which the server thread itself runs at (a served thread
    /// at its level would never be preempted by it). Each refusal is `InvalidInput`
    /// (EINVAL) with a hint.
    ///
    /// # References
    ///  - [`sched_setparam`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_setparam.html)
    #[doc(alias = "sched_setparam")]
    pub fn validate(&self, normal_priority: i32) -> Result<()> {
        if self.init_budget.is_zero() {
            return Err(Error::invalid(CALL, "sched_ss_init_budget is zero").with_hint(
                "give the budget a positive length (the CPU time the thread may use per period)",
            ));
        }
        if self.repl_period < MIN_REPL_PERIOD {
            return Err(Error::invalid(
                CALL,
                format!(
                    "sched_ss_repl_period {:?} is below {:?}",
                    self.repl_period, MIN_REPL_PERIOD
                ),
            )
            .with_hint(
                "the user-space server wakes a few times per period; use a period of at \
                 least MIN_REPL_PERIOD (for shorter ones use SCHED_DEADLINE)",
            ));
        }
        if self.init_budget > self.repl_period {
            return Err(Error::invalid(
                CALL,
                format!(
                    "sched_ss_init_budget {:?} exceeds sched_ss_repl_period {:?}",
                    self.init_budget, self.repl_period
                ),
            )
            .with_hint(
                "POSIX requires init_budget <= repl_period: the budget is what the thread \
                 may use per period; shorten the budget or lengthen the period",
            ));
        }
        if self.max_repl == 0 || self.max_repl > SS_REPL_MAX {
            return Err(Error::invalid(
                CALL,
                format!(
                    "sched_ss_max_repl {} is outside 1..={SS_REPL_MAX}",
                    self.max_repl
                ),
            )
            .with_hint(format!(
                "use 1..=SS_REPL_MAX ({SS_REPL_MAX}); POSIX guarantees at least \
                 _POSIX_SS_REPL_MAX ({POSIX_SS_REPL_MAX})"
            )));
        }
        let fifo = Policy::Fifo.priority_range()?;
        for (what, v) in [
            ("sched_priority", normal_priority),
            ("sched_ss_low_priority", self.low_priority),
        ] {
            if !fifo.contains(&v) {
                return Err(Error::invalid(
                    CALL,
                    format!(
                        "{what} {v} is outside SCHED_FIFO's range {}..={}",
                        fifo.start(),
                        fifo.end()
                    ),
                )
                .with_hint(format!(
                    "both priorities of a sporadic server are SCHED_FIFO priorities: pick \
                     values in {}..={}",
                    fifo.start(),
                    fifo.end()
                )));
            }
        }
        if normal_priority >= *fifo.end() {
            return Err(Error::invalid(
                CALL,
                format!(
                    "sched_priority {normal_priority} is not below the sporadic server's own \
                     priority {}",
                    fifo.end()
                ),
            )
            .with_hint(format!(
                "the server thread runs SCHED_FIFO at {}; a served thread at that priority \
                 is never preempted by it, so its budget could not be enforced: use a normal \
                 priority of at most {}",
                fifo.end(),
                fifo.end() - 1
            )));
        }
        if self.low_priority >= normal_priority {
            return Err(Error::invalid(
                CALL,
                format!(
                    "sched_ss_low_priority {} is not below sched_priority {normal_priority}",
                    self.low_priority
                ),
            )
            .with_hint(
                "POSIX leaves the priority undefined when sched_priority <= \
                 sched_ss_low_priority; choose a low priority below the normal one",
            ));
        }
        Ok(())
    }
}
