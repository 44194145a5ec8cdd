//! The `SCHED_SPORADIC` rules as a state machine fed with times (no system call).

use std::time::Duration;

use super::params::SporadicParams;
use crate::Result;

/// The priority a served thread should run at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    /// `sched_priority`: budget left and fewer than `max_repl` replenishments pending.
    Normal,
    /// `sched_ss_low_priority`.
    Low,
}

/// A scheduled replenishment: `amount` of budget comes back at `at` (on the
/// `CLOCK_MONOTONIC` time line the state machine is fed with).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Replenishment {
    /// When it is carried out.
    pub at: Duration,
    /// How much budget it gives back.
    pub amount: Duration,
}

/// What a step of [`SporadicState`] did, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transition {
    /// The budget ran out at the normal priority. `consumed` is the CPU time since
    /// activation, `overrun` how far past the budget the thread got before the step
    /// saw it.
    Exhausted {
        /// CPU time consumed since the activation.
        consumed: Duration,
        /// CPU time consumed past the budget.
        overrun: Duration,
    },
    /// A replenishment was scheduled.
    Scheduled(Replenishment),
    /// A replenishment was carried out; `budget` is the available budget after it.
    Replenished {
        /// The amount added (before the cap at `init_budget`).
        amount: Duration,
        /// The budget after it.
        budget: Duration,
    },
    /// The thread must now run at this level.
    Switched(Level),
}

/// Transitions in order, each with the number of replenishments pending right
/// after it (what the server's trace events report).
pub(super) type Counted = Vec<(Transition, usize)>;

fn uncounted(c: Counted) -> Vec<Transition> {
    c.into_iter().map(|(t, _)| t).collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Activation {
    at: Duration,
    cpu: Duration,
}

/// The `SCHED_SPORADIC` rules as a state machine fed with times: `now` on
/// `CLOCK_MONOTONIC` and `cpu`, the served thread's CPU-time clock, both as
/// [`Duration`]s since the clocks' origins. It performs no system call; the server
/// feeds it, and tests drive it with made-up times.
///
/// A thread placed under the server is taken to be ready at the normal priority:
/// its activation is the time of [`new`](Self::new). Every step first catches up
/// with what is due at `now` (replenishments whose time has come and an
/// exhaustion, in time order: a late step dates an exhaustion at `now` minus the
/// overrun), and returns the [`Transition`]s in the order they happened.
///
/// ```
/// use std::time::Duration;
/// use posixrt::sched::sporadic::{Level, Replenishment, SporadicParams, SporadicState};
///
/// let ms = Duration::from_millis;
/// let p = SporadicParams::new(10, ms(10), ms(2), 4);
/// let mut s = SporadicState::new(p, 50, ms(0), ms(0))?;
/// s.advance(ms(3), ms(2)); // ran 2 ms of CPU: exhausted
/// assert_eq!(s.level(), Level::Low);
/// assert_eq!(s.pending(), [Replenishment { at: ms(10), amount: ms(2) }]);
/// s.advance(ms(10), ms(2)); // replenished: back to the normal priority
/// assert_eq!((s.level(), s.remaining(ms(2))), (Level::Normal, ms(2)));
/// # Ok::<(), posixrt::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SporadicState {
    pub(super) params: SporadicParams,
    /// Available budget as of `cpu_mark`.
    pub(super) capacity: Duration,
    /// The CPU clock when `capacity` was last brought up to date.
    pub(super) cpu_mark: Duration,
    /// Some while the thread is ready or running at the normal priority.
    pub(super) activation: Option<Activation>,
    pub(super) level: Level,
    blocked: bool,
    /// Sorted by time.
    pub(super) pending: Vec<Replenishment>,
    /// The times (`now`, `cpu`) of the last step: the CPU clock read no less
    /// after it.
    seen: (Duration, Duration),
}

impl SporadicState {
    /// A thread placed under the rules at `now` with CPU clock `cpu`: full budget, the
    /// normal priority, activated now. The parameters are [validated](SporadicParams::validate).
    pub fn new(
        params: SporadicParams,
        normal_priority: i32,
        now: Duration,
        cpu: Duration,
    ) -> Result<SporadicState> {
        params.validate(normal_priority)?;
        Ok(SporadicState {
            params,
            capacity: params.init_budget,
            cpu_mark: cpu,
            activation: Some(Activation { at: now, cpu }),
            level: Level::Normal,
            blocked: false,
            pending: Vec::with_capacity(params.max_repl),
            seen: (now, cpu),
        })
    }

    /// The parameters.
    pub fn params(&self) -> SporadicParams {
        self.params
    }

    /// The level the thread must run at now.
    pub fn level(&self) -> Level {
        self.level
    }

    /// Whether the thread is blocked (between [`block`](Self::block) and
    /// [`wake`](Self::wake)).
    pub fn is_blocked(&self) -> bool {
        self.blocked
    }

    /// The activation time, while the thread is ready or running at the normal
    /// priority.
    pub fn activation(&self) -> Option<Duration> {
        self.activation.map(|a| a.at)
    }

    /// The pending replenishments, earliest first.
    pub fn pending(&self) -> &[Replenishment] {
        &self.pending
    }

    /// The available budget when the thread's CPU clock reads `cpu` (what it consumed
    /// at the normal priority since the last step is subtracted).
    pub fn remaining(&self, cpu: Duration) -> Duration {
        match self.activation {
            Some(_) => self
                .capacity
                .saturating_sub(cpu.saturating_sub(self.cpu_mark)),
            None => self.capacity,
        }
    }

    /// The CPU-clock value at which the budget runs out, while the thread is active at
    /// the normal priority (what the CPU-time timer is armed at).
    pub fn cpu_deadline(&self) -> Option<Duration> {
        self.activation
            .map(|_| self.cpu_mark.saturating_add(self.capacity))
    }

    /// The next time the server must look (`CLOCK_MONOTONIC`): the earliest pending
    /// replenishment, or the earliest wall time the budget could run out (the CPU clock
    /// advances at most one second per second), whichever comes first.
    pub fn next_wakeup(&self, now: Duration, cpu: Duration) -> Option<Duration> {
        let repl = self.pending.first().map(|r| r.at);
        let exhaust = self
            .activation
            .map(|_| now.saturating_add(self.remaining(cpu)));
        match (repl, exhaust) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn eligible(&self, cpu: Duration) -> bool {
        self.remaining(cpu) > Duration::ZERO && self.pending.len() < self.params.max_repl
    }

    /// Brings the state up to `now`: every replenishment due by `now` is carried
    /// out and an exhausted budget demotes the thread, in time order.
    pub fn advance(&mut self, now: Duration, cpu: Duration) -> Vec<Transition> {
        uncounted(self.advance_counted(now, cpu))
    }

    /// [`advance`](Self::advance), each transition with the number of
    /// replenishments pending right after it.
    pub(super) fn advance_counted(&mut self, now: Duration, cpu: Duration) -> Counted {
        let mut out = Vec::new();
        self.catch_up(now, cpu, &mut out);
        out
    }

    /// The thread blocks (at `now`, its CPU clock reading `cpu`). At the normal
    /// priority, what it consumed since activation is charged and a replenishment of
    /// it is scheduled at activation + period. The level it will wake at is decided
    /// now (a [`Transition::Switched`] if it changes).
    pub fn block(&mut self, now: Duration, cpu: Duration) -> Vec<Transition> {
        uncounted(self.block_counted(now, cpu))
    }

    /// [`block`](Self::block), each transition with the number of replenishments
    /// pending right after it.
    pub(super) fn block_counted(&mut self, now: Duration, cpu: Duration) -> Counted {
        let mut out = Vec::new();
        self.catch_up(now, cpu, &mut out);
        if self.blocked {
            return out;
        }
        self.blocked = true;
        if let Some(act) = self.activation {
            self.charge(cpu);
            self.activation = None;
            self.schedule(act.at, cpu.saturating_sub(act.cpu), &mut out);
            // Already due (the thread was preempted past activation + period):
            // carried out now.
            self.catch_up(now, cpu, &mut out);
        }
        self.relevel(cpu, &mut out);
        out
    }

    /// The thread woke up (it was made ready at `now`). At the normal priority this is
    /// its new activation.
    pub fn wake(&mut self, now: Duration, cpu: Duration) -> Vec<Transition> {
        uncounted(self.wake_counted(now, cpu))
    }

    /// [`wake`](Self::wake), each transition with the number of replenishments
    /// pending right after it.
    pub(super) fn wake_counted(&mut self, now: Duration, cpu: Duration) -> Counted {
        let mut out = Vec::new();
        self.catch_up(now, cpu, &mut out);
        if !self.blocked {
            return out;
        }
        self.blocked = false;
        self.cpu_mark = cpu;
        self.relevel(cpu, &mut out);
        if self.level == Level::Normal {
            self.activation = Some(Activation { at: now, cpu });
        }
        out
    }

    /// Subtracts what was consumed at the normal priority since `cpu_mark`.
    fn charge(&mut self, cpu: Duration) {
        self.capacity = self.remaining(cpu);
        self.cpu_mark = cpu;
    }

    fn set_level(&mut self, level: Level, out: &mut Counted) {
        if self.level != level {
            self.level = level;
            out.push((Transition::Switched(level), self.pending.len()));
        }
    }

    /// The level of a thread that is not active at the normal priority.
    fn relevel(&mut self, cpu: Duration, out: &mut Counted) {
        let l = if self.eligible(cpu) {
            Level::Normal
        } else {
            Level::Low
        };
        self.set_level(l, out);
    }

    /// Carries out, in time order, what came due since the last step: the
    /// replenishments whose time has come, and an exhaustion of the budget.
    ///
    /// A late step (the server's wake-up latency) finds several of them due at
    /// once. A replenishment is dated at its time. An exhaustion is dated at the
    /// latest time it can have happened, the step's time minus the overrun: a
    /// thread that spent its budget at the normal priority runs on until the
    /// server demotes it, so the CPU time the step sees was consumed up to `now`
    /// (exactly so when nothing preempted it). By the same reading the CPU clock
    /// at an earlier time `t` is `cpu - (now - t)`, but no less than the last
    /// step saw: what a replenishment carried out at `t` charges first.
    fn catch_up(&mut self, now: Duration, cpu: Duration, out: &mut Counted) {
        let (seen_at, seen_cpu) = self.seen;
        // No less than the last step saw, nor than an exhaustion found in this
        // step charged: its replenishment gives back the CPU time consumed up to
        // `cpu` (the overrun included), which must not be consumed again from a
        // budget a later replenishment brings.
        let mut floor = seen_cpu;
        let cpu_at = |t: Duration, floor: Duration| {
            cpu.saturating_sub(now.saturating_sub(t))
                .max(floor)
                .min(cpu)
        };
        // The time of the last thing carried out: nothing is dated before it.
        let mut clock = seen_at.min(now);
        loop {
            let due = self.pending.first().copied().filter(|r| r.at <= now);
            let exhausted = self.exhaustion_time(now, cpu).map(|t| t.max(clock));
            match (due, exhausted) {
                (Some(r), Some(t)) if r.at < t => {
                    clock = clock.max(r.at);
                    self.pending.remove(0);
                    self.apply(r, clock, cpu_at(clock, floor), out);
                }
                (_, Some(t)) => {
                    clock = t;
                    self.exhaust(cpu, out);
                    floor = cpu;
                }
                (Some(r), None) => {
                    // Carried out late: the thread is activated when a kernel
                    // would have done it (not before an exhaustion that
                    // scheduled it, though).
                    clock = clock.max(r.at);
                    self.pending.remove(0);
                    self.apply(r, clock, cpu_at(clock, floor), out);
                }
                (None, None) => break,
            }
        }
        self.seen = (now, cpu);
    }

    /// When the budget ran out, if it has by `cpu` at `now` while the thread is
    /// active at the normal priority: `now` minus the overrun (see
    /// [`catch_up`](Self::catch_up)).
    fn exhaustion_time(&self, now: Duration, cpu: Duration) -> Option<Duration> {
        self.activation?;
        let used = cpu.saturating_sub(self.cpu_mark);
        (used >= self.capacity).then(|| now.saturating_sub(used - self.capacity))
    }

    /// The budget ran out (see [`exhaustion_time`](Self::exhaustion_time)): the
    /// thread drops to the low priority and what it consumed since its
    /// activation is scheduled for replenishment.
    fn exhaust(&mut self, cpu: Duration, out: &mut Counted) {
        let Some(act) = self.activation else {
            return;
        };
        let used = cpu.saturating_sub(self.cpu_mark);
        let overrun = used.saturating_sub(self.capacity);
        let consumed = cpu.saturating_sub(act.cpu);
        self.capacity = Duration::ZERO;
        self.cpu_mark = cpu;
        self.activation = None;
        let at = out.len();
        out.push((Transition::Exhausted { consumed, overrun }, 0));
        self.set_level(Level::Low, out);
        self.schedule(act.at, consumed, out);
        // The exhaustion's count includes the replenishment it scheduled.
        out[at].1 = self.pending.len();
    }

    /// Schedules `amount` at `activation + period`. One whose time has passed
    /// is carried out by the caller's next [`catch_up`](Self::catch_up), in time
    /// order with any other replenishment due. A zero amount is not scheduled (it
    /// would only take a slot).
    fn schedule(&mut self, activation: Duration, amount: Duration, out: &mut Counted) {
        if amount.is_zero() {
            return;
        }
        let r = Replenishment {
            at: activation.saturating_add(self.params.repl_period),
            amount,
        };
        let i = self.pending.partition_point(|p| p.at <= r.at);
        self.pending.insert(i, r);
        out.push((Transition::Scheduled(r), self.pending.len()));
    }

    /// Carries out `r`; a thread it lifts from the low priority is activated at
    /// `activation`.
    fn apply(&mut self, r: Replenishment, activation: Duration, cpu: Duration, out: &mut Counted) {
        self.charge(cpu);
        self.capacity = self
            .capacity
            .saturating_add(r.amount)
            .min(self.params.init_budget);
        out.push((
            Transition::Replenished {
                amount: r.amount,
                budget: self.capacity,
            },
            self.pending.len(),
        ));
        if self.activation.is_some() {
            // Running or ready at the normal priority: keeps its activation.
            return;
        }
        self.relevel(cpu, out);
        if !self.blocked && self.level == Level::Normal {
            // Ready at the low priority: to the tail of the normal list.
            self.activation = Some(Activation {
                at: activation,
                cpu,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Transition::{Exhausted, Replenished, Scheduled, Switched};

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn us(v: u64) -> Duration {
        Duration::from_micros(v)
    }

    fn p2of10() -> SporadicParams {
        SporadicParams::new(10, ms(10), ms(2), 4)
    }

    fn repl(at: Duration, amount: Duration) -> Replenishment {
        Replenishment { at, amount }
    }

    /// A late step that finds a replenishment due before the budget ran out carries
    /// it out first: the thread keeps running on the larger budget, and its
    /// exhaustion comes after, with the replenishment it schedules. (The old code
    /// demoted it first, then let the older replenishment lift it back to the
    /// normal priority, activated at 10 ms, with a 1 ms overrun it never had.)
    #[test]
    fn a_late_step_carries_out_a_replenishment_before_a_later_exhaustion() {
        let mut s = SporadicState::new(p2of10(), 50, ms(0), ms(0)).unwrap();
        s.block(ms(1), ms(1)); // 1 ms back at 10 ms
        s.wake(us(9_500), ms(1)); // activation 9.5 ms, 1 ms left
                                  // The server looks next at 12 ms: 2 ms of CPU since the activation. The
                                  // budget (1 ms, then 2 ms from 10 ms on) ran out at 12 ms, not before 10.
        let t = s.advance(ms(12), ms(3));
        assert_eq!(
            t,
            [
                Replenished {
                    amount: ms(1),
                    budget: ms(2)
                },
                Exhausted {
                    consumed: ms(2),
                    overrun: ms(0)
                },
                Switched(Level::Low),
                Scheduled(repl(us(19_500), ms(2))),
            ]
        );
        assert_eq!((s.level(), s.activation()), (Level::Low, None));
        assert_eq!(s.pending(), [repl(us(19_500), ms(2))]);
    }

    /// Two replenishments due in one late step, one of them scheduled by the
    /// exhaustion the step finds, are carried out in time order: the older one
    /// first. Here it comes before the budget ran out (1 ms of CPU seen at 13 ms,
    /// with 1 ms of budget until 10 ms and 2 ms from then on), so there is no
    /// exhaustion at all. (The old code demoted the thread, carried out the new
    /// replenishment at once, then the older one.)
    #[test]
    fn due_replenishments_are_carried_out_in_time_order() {
        let mut s = SporadicState::new(p2of10(), 50, ms(0), ms(0)).unwrap();
        s.block(ms(1), ms(1)); // 1 ms back at 10 ms
        s.wake(ms(2), ms(1)); // activation 2 ms, 1 ms left
        let t = s.advance(ms(13), ms(2));
        assert_eq!(
            t,
            [Replenished {
                amount: ms(1),
                budget: ms(2)
            }]
        );
        assert_eq!(s.level(), Level::Normal);
        assert_eq!(s.activation(), Some(ms(2)));
        assert_eq!(s.remaining(ms(2)), ms(1));
        assert_eq!(s.pending(), []);
    }
}
