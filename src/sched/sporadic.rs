//! POSIX `SCHED_SPORADIC` in user space: a sporadic server that gives a thread a CPU
//! budget at its normal priority, drops it to a low priority when the budget is spent,
//! and gives each consumed chunk back one replenishment period after the activation
//! that consumed it.
//!
//! Linux has no `SCHED_SPORADIC` (glibc's `sched_setscheduler` refuses it). This
//! module builds it from three kernel facilities:
//!
//! - the served thread's **CPU-time clock** (`CLOCK_THREAD_CPUTIME_ID` of its tid):
//!   what it really consumed, preemptions excluded;
//! - **POSIX timers** (`timer_create` with `SIGEV_THREAD_ID`) that signal one server
//!   thread: one on the served thread's CPU clock, armed at the CPU time where the
//!   budget runs out, and one on `CLOCK_MONOTONIC` (absolute), armed at the next
//!   replenishment and at the earliest wall time the budget could run out;
//! - **priority switches by tid** (`sched_setscheduler(tid, SCHED_FIFO, ...)`).
//!
//! One server thread per process, at the top `SCHED_FIFO` priority, is created on
//! first use. It sleeps in `sigwaitinfo` and never spins.
//!
//! ```no_run
//! use std::time::Duration;
//! use posixrt::sched::{sporadic::{self, SporadicParams}, Builder};
//!
//! let ms = Duration::from_millis;
//! // 2 ms at priority 50 every 10 ms; background at priority 10 beyond that.
//! let params = SporadicParams::new(10, ms(10), ms(2), 4);
//! let h = Builder::new().sporadic(params, 50).spawn(move || {
//!     let t0 = std::time::Instant::now();
//!     while t0.elapsed() < ms(100) { std::hint::spin_loop(); } // bounded work
//!     // A blocking call the server must account for (POSIX "blocks"):
//!     sporadic::blocking(|| std::thread::sleep(ms(5)));
//! })?;
//! println!("remaining {:?}, pending {:?}", h.remaining_budget(), h.pending_replenishments());
//! h.join().unwrap();
//! # Ok::<(), posixrt::Error>(())
//! ```
//!
//! An existing thread is placed under the server with [`serve`] (by tid) or
//! [`serve_handle`]; the returned [`Served`] stops serving when dropped.
//!
//! # The rules (POSIX, XSH 2.8.4 "SCHED_SPORADIC")
//!
//! The state machine is [`SporadicState`], fed with times so it can be tested
//! without a clock:
//!
//! - The thread runs at its normal priority while its available budget is positive
//!   **and** fewer than `max_repl` replenishments are pending; otherwise at
//!   `low_priority`.
//! - The **activation time** is the moment it joins the tail of the normal-priority
//!   list: when it wakes from a block, or when a replenishment lifts it from the low
//!   priority (then the replenishment's scheduled time, where a kernel would have
//!   done it).
//! - A **preemption** at the normal priority charges nothing extra: the CPU-time clock
//!   stops while the thread does not run.
//! - When it **blocks** or **exhausts** its budget at the normal priority, the CPU time
//!   consumed since activation is subtracted from the budget (not below zero) and a
//!   replenishment of that amount is scheduled at activation + `repl_period` (carried
//!   out at once if that time has passed). Exhaustion also drops it to the low
//!   priority.
//! - A **replenishment** adds its amount to the budget, capped at `init_budget`; a thread
//!   that was ready at the low priority goes back to the normal one.
//! - Time consumed at the low priority is not charged.
//!
//! # What the user-space server guarantees, and what only a kernel could
//!
//! Guaranteed:
//! - the budget is counted on the thread's own CPU clock, so preemptions, page faults
//!   in other threads and interrupts handled elsewhere are not charged;
//! - replenishment amounts, times and the `max_repl` limit follow POSIX exactly
//!   ([`SporadicState`] is tested against the rules with an injected clock);
//! - enforcement is bounded by the server's wake-up latency: the monotonic timer fires
//!   no earlier than the budget could run out, the server reads the CPU clock and
//!   either demotes the thread or re-arms for what is left (a thread that was
//!   preempted meanwhile has budget left). With the server on the served thread's CPU
//!   the thread stops running the instant the server wakes. The CPU-time timer is a
//!   second line: the kernel checks CPU timers at the scheduler tick only.
//!
//! Only a kernel could:
//! - see a **block** by itself: the server knows a thread blocked when the thread says
//!   so ([`blocking`]). A thread that sleeps without saying so is treated as still
//!   active (its consumption is charged when it exhausts, and the replenishment is
//!   dated from the older activation), and the server probes it once per remaining
//!   budget while it sleeps;
//! - enforce with **zero overrun**: between the budget running out and the
//!   demotion there are the timer interrupt, a signal delivery and a
//!   `sched_setscheduler` (tens of microseconds on a loaded machine; see the README
//!   figures);
//! - put an exhausted thread at the **tail** of the low-priority list: Linux puts a
//!   thread whose priority is lowered at the head of its new list;
//! - keep the rules across `fork` and `exec`, and for threads of other processes.
//!
//! # References
//!  - [Scheduling policies, SCHED_SPORADIC (XSH 2.8.4)](https://pubs.opengroup.org/onlinepubs/9799919799/functions/V2_chap02.html#tag_16_08_04_03)
//!  - [`sched_setparam`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_setparam.html)
//!  - [`timer_create(2)`](https://man7.org/linux/man-pages/man2/timer_create.2.html)
//!  - [`clock_getcpuclockid(3)`](https://man7.org/linux/man-pages/man3/clock_getcpuclockid.3.html)

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use super::cputime::CpuClock;
use super::{Builder, CpuSet, JoinHandle, Policy, Priority, Tid};
use crate::sys::timer as st;
use crate::trace::catalog as tc;
use crate::{Error, ErrorKind, Result};

/// The most pending replenishments this implementation allows (`SS_REPL_MAX`);
/// POSIX requires at least [`POSIX_SS_REPL_MAX`].
pub const SS_REPL_MAX: usize = 16;

/// POSIX's minimum for `SS_REPL_MAX` (`_POSIX_SS_REPL_MAX`, 4).
pub const POSIX_SS_REPL_MAX: usize = 4;

/// The shortest replenishment period accepted: a user-space server wakes a few
/// times per period, so periods below this would keep it busy rather than bound a
/// thread.
pub const MIN_REPL_PERIOD: Duration = Duration::from_micros(200);

const CALL: &str = "sched_setparam";

/// The `SCHED_SPORADIC` members of POSIX `struct sched_param`.
///
/// The normal priority (`sched_priority`) is given separately
/// ([`Builder::sporadic`](super::Builder::sporadic), [`serve`]). Both priorities are
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
    /// low one below the normal one; and this implementation's floor on the period,
    /// [`MIN_REPL_PERIOD`]. Each refusal is `InvalidInput` (EINVAL) with a hint.
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Activation {
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
/// with what is due at `now` (exhaustion, then replenishments whose time has come),
/// and returns the [`Transition`]s in the order they happened.
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
    params: SporadicParams,
    /// Available budget as of `cpu_mark`.
    capacity: Duration,
    /// The CPU clock when `capacity` was last brought up to date.
    cpu_mark: Duration,
    /// Some while the thread is ready or running at the normal priority.
    activation: Option<Activation>,
    level: Level,
    blocked: bool,
    /// Sorted by time.
    pending: Vec<Replenishment>,
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
        self.activation.map(|_| self.cpu_mark + self.capacity)
    }

    /// The next time the server must look (`CLOCK_MONOTONIC`): the earliest pending
    /// replenishment, or the earliest wall time the budget could run out (the CPU clock
    /// advances at most one second per second), whichever comes first.
    pub fn next_wakeup(&self, now: Duration, cpu: Duration) -> Option<Duration> {
        let repl = self.pending.first().map(|r| r.at);
        let exhaust = self.activation.map(|_| now + self.remaining(cpu));
        match (repl, exhaust) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn eligible(&self, cpu: Duration) -> bool {
        self.remaining(cpu) > Duration::ZERO && self.pending.len() < self.params.max_repl
    }

    /// Brings the state up to `now`: an exhausted budget demotes the thread, then
    /// every replenishment due by `now` is carried out (in time order).
    pub fn advance(&mut self, now: Duration, cpu: Duration) -> Vec<Transition> {
        let mut out = Vec::new();
        self.catch_up(now, cpu, &mut out);
        out
    }

    /// The thread blocks (at `now`, its CPU clock reading `cpu`). At the normal
    /// priority, what it consumed since activation is charged and a replenishment of
    /// it is scheduled at activation + period. The level it will wake at is decided
    /// now (a [`Transition::Switched`] if it changes).
    pub fn block(&mut self, now: Duration, cpu: Duration) -> Vec<Transition> {
        let mut out = Vec::new();
        self.catch_up(now, cpu, &mut out);
        if self.blocked {
            return out;
        }
        self.blocked = true;
        if let Some(act) = self.activation {
            self.charge(cpu);
            self.activation = None;
            self.schedule(act.at, cpu.saturating_sub(act.cpu), now, cpu, &mut out);
        }
        self.relevel(cpu, &mut out);
        out
    }

    /// The thread woke up (it was made ready at `now`). At the normal priority this is
    /// its new activation.
    pub fn wake(&mut self, now: Duration, cpu: Duration) -> Vec<Transition> {
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

    fn set_level(&mut self, level: Level, out: &mut Vec<Transition>) {
        if self.level != level {
            self.level = level;
            out.push(Transition::Switched(level));
        }
    }

    /// The level of a thread that is not active at the normal priority.
    fn relevel(&mut self, cpu: Duration, out: &mut Vec<Transition>) {
        let l = if self.eligible(cpu) {
            Level::Normal
        } else {
            Level::Low
        };
        self.set_level(l, out);
    }

    fn catch_up(&mut self, now: Duration, cpu: Duration, out: &mut Vec<Transition>) {
        self.check_exhausted(now, cpu, out);
        while let Some(r) = self.pending.first().copied() {
            if r.at > now {
                break;
            }
            self.pending.remove(0);
            // Carried out late (the server's wake-up latency): the thread is
            // activated when a kernel would have done it.
            self.apply(r, r.at, cpu, out);
            self.check_exhausted(now, cpu, out);
        }
    }

    fn check_exhausted(&mut self, now: Duration, cpu: Duration, out: &mut Vec<Transition>) {
        let Some(act) = self.activation else {
            return;
        };
        let used = cpu.saturating_sub(self.cpu_mark);
        if used < self.capacity {
            return;
        }
        let overrun = used - self.capacity;
        let consumed = cpu.saturating_sub(act.cpu);
        self.capacity = Duration::ZERO;
        self.cpu_mark = cpu;
        self.activation = None;
        out.push(Transition::Exhausted { consumed, overrun });
        self.set_level(Level::Low, out);
        self.schedule(act.at, consumed, now, cpu, out);
    }

    /// Schedules `amount` at `activation + period`; carried out at once if that time
    /// has passed. A zero amount is not scheduled (it would only take a slot).
    fn schedule(
        &mut self,
        activation: Duration,
        amount: Duration,
        now: Duration,
        cpu: Duration,
        out: &mut Vec<Transition>,
    ) {
        if amount.is_zero() {
            return;
        }
        let r = Replenishment {
            at: activation + self.params.repl_period,
            amount,
        };
        out.push(Transition::Scheduled(r));
        if r.at <= now {
            self.apply(r, now, cpu, out);
        } else {
            let i = self.pending.partition_point(|p| p.at <= r.at);
            self.pending.insert(i, r);
        }
    }

    /// Carries out `r`; a thread it lifts from the low priority is activated at
    /// `activation`.
    fn apply(
        &mut self,
        r: Replenishment,
        activation: Duration,
        cpu: Duration,
        out: &mut Vec<Transition>,
    ) {
        self.charge(cpu);
        self.capacity = (self.capacity + r.amount).min(self.params.init_budget);
        out.push(Transition::Replenished {
            amount: r.amount,
            budget: self.capacity,
        });
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

// ---------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------

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
struct Snapshot {
    seq: AtomicU64,
    normal: AtomicBool,
    active: AtomicBool,
    capacity: AtomicU64,
    cpu_mark: AtomicU64,
    npending: AtomicUsize,
    at: [AtomicU64; SS_REPL_MAX],
    amount: [AtomicU64; SS_REPL_MAX],
}

#[derive(Debug, Clone)]
struct View {
    normal: bool,
    active: bool,
    capacity: Duration,
    cpu_mark: Duration,
    pending: Vec<Replenishment>,
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Snapshot {
    fn new() -> Snapshot {
        Snapshot {
            seq: AtomicU64::new(0),
            normal: AtomicBool::new(true),
            active: AtomicBool::new(false),
            capacity: AtomicU64::new(0),
            cpu_mark: AtomicU64::new(0),
            npending: AtomicUsize::new(0),
            at: std::array::from_fn(|_| AtomicU64::new(0)),
            amount: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    fn publish(&self, s: &SporadicState) {
        let r = Ordering::Relaxed;
        let seq = self.seq.load(r);
        self.seq.store(seq.wrapping_add(1), r);
        std::sync::atomic::fence(Ordering::Release);
        self.normal.store(s.level == Level::Normal, r);
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

    fn read(&self) -> View {
        let r = Ordering::Relaxed;
        loop {
            let s0 = self.seq.load(Ordering::Acquire);
            if s0 % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let n = self.npending.load(r).min(SS_REPL_MAX);
            let v = View {
                normal: self.normal.load(r),
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
            if self.seq.load(r) == s0 {
                return v;
            }
        }
    }
}

/// What a served thread shares between the server and its handles.
struct Shared {
    tid: Tid,
    clock: CpuClock,
    params: SporadicParams,
    normal_priority: i32,
    snap: Snapshot,
    /// The server no longer serves it (removed, or the thread ended).
    gone: AtomicBool,
    /// The errno of the last failed priority switch (0: none).
    last_errno: AtomicI32,
    /// The errno with which the server could not create its timers (0: none).
    timer_errno: AtomicI32,
    exhaustions: AtomicU64,
    replenishments: AtomicU64,
    switches: AtomicU64,
    max_overrun: AtomicU64,
    total_overrun: AtomicU64,
}

/// A thread placed under the sporadic server (by [`serve`], [`serve_handle`] or
/// [`Builder::sporadic`](super::Builder::sporadic)).
///
/// Dropping one that [`serve`] or [`serve_handle`] returned stops serving: the thread
/// keeps the priority it has at that moment. Drop it before the thread ends: the
/// server only notices an ended thread at its next step, and the kernel may give the
/// tid to a new thread. A thread spawned with `Builder::sporadic` is served until its
/// closure returns, whether its `JoinHandle` is kept or not.
pub struct Served {
    shared: Arc<Shared>,
    /// Whether dropping the handle ends the service (not for `Builder::sporadic`,
    /// whose thread leaves the server itself when its closure ends).
    owned: bool,
}

impl std::fmt::Debug for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Served")
            .field("tid", &self.shared.tid)
            .field("params", &self.shared.params)
            .field("normal_priority", &self.shared.normal_priority)
            .finish_non_exhaustive()
    }
}

impl Served {
    /// The served thread.
    pub fn tid(&self) -> Tid {
        self.shared.tid
    }

    /// Its sporadic parameters.
    pub fn params(&self) -> SporadicParams {
        self.shared.params
    }

    /// Its normal priority (`sched_priority`).
    pub fn normal_priority(&self) -> i32 {
        self.shared.normal_priority
    }

    /// Whether the server still serves it (false once the thread ended).
    pub fn is_served(&self) -> bool {
        !self.shared.gone.load(Ordering::Acquire)
    }

    /// The level the server has put it at.
    pub fn level(&self) -> Level {
        if self.shared.snap.read().normal {
            Level::Normal
        } else {
            Level::Low
        }
    }

    /// The available budget now: the budget as of the server's last step minus what
    /// the thread consumed at the normal priority since (read from its CPU clock).
    /// `NotFound` once the thread has ended.
    pub fn remaining_budget(&self) -> Result<Duration> {
        let v = self.shared.snap.read();
        if !v.active {
            return Ok(v.capacity);
        }
        let cpu = self.shared.clock.now()?;
        Ok(v.capacity.saturating_sub(cpu.saturating_sub(v.cpu_mark)))
    }

    /// The pending replenishments, earliest first (times on `CLOCK_MONOTONIC`).
    pub fn pending_replenishments(&self) -> Vec<Replenishment> {
        self.shared.snap.read().pending
    }

    /// The server's counters for this thread.
    pub fn stats(&self) -> SporadicStats {
        let s = &self.shared;
        let r = Ordering::Relaxed;
        SporadicStats {
            exhaustions: s.exhaustions.load(r),
            replenishments: s.replenishments.load(r),
            switches: s.switches.load(r),
            max_overrun: Duration::from_nanos(s.max_overrun.load(r)),
            total_overrun: Duration::from_nanos(s.total_overrun.load(r)),
        }
    }

    /// The error of the server's last failed priority switch of this thread, or of
    /// the creation of its timers (then [`is_served`](Self::is_served) is false).
    pub fn last_error(&self) -> Option<Error> {
        match self.shared.timer_errno.load(Ordering::Relaxed) {
            0 => match self.shared.last_errno.load(Ordering::Relaxed) {
                0 => None,
                e => Some(Error::from_errno("sched_setscheduler", e)),
            },
            e => Some(Error::from_errno("timer_create", e)),
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if self.owned {
            unserve(self.shared.tid);
        }
    }
}

/// Takes `tid` off the server.
fn unserve(tid: Tid) {
    served_set().remove(&tid.as_raw());
    if let Some(s) = SERVER.get() {
        s.send(Command::Remove(tid));
    }
}

enum Command {
    Add(Arc<Shared>, SporadicState),
    Remove(Tid),
    Block(Tid, Duration, Duration),
    Wake(Tid, Duration, Duration),
}

struct Server {
    tid: Tid,
    signo: i32,
    tx: crossbeam_channel::Sender<Command>,
}

impl Server {
    fn send(&self, c: Command) {
        if self.tx.send(c).is_ok() {
            // The server blocks the signal from its first instruction on: it is
            // never delivered as a default action. A failure means the server is
            // gone; the command is then moot.
            let _ = st::signal_thread(self.tid.as_raw(), self.signo);
        }
    }
}

static SERVER: OnceLock<Server> = OnceLock::new();
static SERVER_START: Mutex<()> = Mutex::new(());
static SERVED: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

struct ServedSet(std::sync::MutexGuard<'static, Option<HashSet<i32>>>);

impl ServedSet {
    fn remove(&mut self, tid: &i32) {
        if let Some(s) = self.0.as_mut() {
            s.remove(tid);
        }
    }
}

fn served_set() -> ServedSet {
    ServedSet(SERVED.lock().unwrap_or_else(|e| e.into_inner()))
}

/// The process's server, started on first use (`SCHED_FIFO` at the top priority).
fn server() -> Result<&'static Server> {
    if let Some(s) = SERVER.get() {
        return Ok(s);
    }
    let _one = SERVER_START.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = SERVER.get() {
        return Ok(s);
    }
    let top = Policy::Fifo.priority_max()?;
    let signo = st::server_signal();
    let (tx, rx) = crossbeam_channel::unbounded();
    let (ready_tx, ready_rx) = crossbeam_channel::bounded::<Result<()>>(1);
    let h = Builder::new()
        .name("posixrt-ss")
        .scheduling(Priority::fifo(top)?)
        .stack_size(256 * 1024)
        .spawn(move || {
            // Block the signal before anyone learns this thread's tid.
            let r = st::block_signal(signo);
            let ok = r.is_ok();
            let _ = ready_tx.send(r);
            if ok {
                run(rx, signo);
            }
        })
        .map_err(|e| {
            let hint = format!(
                "the sporadic server thread runs SCHED_FIFO at priority {top}; {}",
                e.hint().unwrap_or("it needs CAP_SYS_NICE or RLIMIT_RTPRIO")
            );
            e.with_hint(hint)
        })?;
    let tid = h.tid();
    match ready_rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e),
        Err(_) => {
            return Err(Error::new(
                ErrorKind::Other,
                "pthread_sigmask",
                "the sporadic server thread ended before it was ready",
            ))
        }
    }
    drop(h); // detached: it serves for the life of the process
    Ok(SERVER.get_or_init(|| Server { tid, signo, tx }))
}

/// The server thread's tid, starting it if needed.
pub fn server_tid() -> Result<Tid> {
    server().map(|s| s.tid)
}

/// Pins the server thread to `cpus` (`sched_setaffinity` on its tid), starting it if
/// needed.
///
/// Where it runs matters for overrun: a top-priority thread preempts whatever runs
/// on the CPU it wakes on, so on the served thread's CPU the served thread stops the
/// moment the server wakes; on another CPU it keeps running until the server's
/// `sched_setscheduler` reaches its CPU (an inter-processor interrupt), and its own
/// wake-up waits for whatever kernel work that CPU is doing. Measured with the
/// `sporadic` example: about 20 us of overrun on the served thread's CPU, up to about
/// 1 ms on a CPU busy with compilers. With several served threads on different CPUs,
/// pin it to the CPU whose thread needs the tightest budget. By default the server
/// inherits the affinity of the thread that started it.
///
/// # References
///  - [`sched_setaffinity(2)`](https://man7.org/linux/man-pages/man2/sched_setaffinity.2.html)
#[doc(alias = "sched_setaffinity")]
pub fn set_server_affinity(cpus: &CpuSet) -> Result<()> {
    super::set_thread_affinity(server()?.tid, cpus)
}

/// Places thread `tid` of this process under the sporadic server: sets it to
/// `SCHED_FIFO` at `normal_priority` with a full budget (its activation is now) and
/// lets the server enforce `params` from then on.
///
/// Errors: parameters that break POSIX's rules are `InvalidInput` with a hint
/// ([`SporadicParams::validate`]); a tid that is not a thread of this process is
/// `NotFound`; a thread already served is `Busy`; no privilege for `SCHED_FIFO` is
/// `PermissionDenied` (CAP_SYS_NICE, RLIMIT_RTPRIO).
///
/// # References
///  - [`sched_setscheduler`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_setscheduler.html)
#[doc(alias = "sched_setscheduler")]
#[doc(alias = "SCHED_SPORADIC")]
pub fn serve(tid: Tid, params: SporadicParams, normal_priority: i32) -> Result<Served> {
    params.validate(normal_priority)?;
    let clock = CpuClock::of_thread(tid)?;
    {
        let mut set = served_set();
        let set = set.0.get_or_insert_with(HashSet::new);
        if !set.insert(tid.as_raw()) {
            return Err(Error::new(
                ErrorKind::Busy,
                CALL,
                format!("thread {tid} is already under the sporadic server"),
            )
            .with_hint("drop its Served handle first to change its parameters"));
        }
    }
    let undo = |e: Error| {
        served_set().remove(&tid.as_raw());
        e
    };
    let srv = server().map_err(undo)?;
    let normal = Priority::fifo(normal_priority).map_err(undo)?;
    super::set_thread_scheduling(tid, normal).map_err(undo)?;
    let state = SporadicState::new(
        params,
        normal_priority,
        st::monotonic_now(),
        clock.now().map_err(undo)?,
    )
    .map_err(undo)?;
    let shared = Arc::new(Shared {
        tid,
        clock,
        params,
        normal_priority,
        snap: Snapshot::new(),
        gone: AtomicBool::new(false),
        last_errno: AtomicI32::new(0),
        timer_errno: AtomicI32::new(0),
        exhaustions: AtomicU64::new(0),
        replenishments: AtomicU64::new(0),
        switches: AtomicU64::new(0),
        max_overrun: AtomicU64::new(0),
        total_overrun: AtomicU64::new(0),
    });
    shared.snap.publish(&state);
    srv.send(Command::Add(Arc::clone(&shared), state));
    Ok(Served {
        shared,
        owned: true,
    })
}

/// [`serve`] for a thread spawned with `Builder::sporadic`: it leaves the server when
/// its closure ends, not when the handle is dropped.
pub(crate) fn serve_spawned(
    tid: Tid,
    params: SporadicParams,
    normal_priority: i32,
) -> Result<Served> {
    let mut s = serve(tid, params, normal_priority)?;
    s.owned = false;
    Ok(s)
}

/// [`serve`] for a thread spawned by [`Builder`].
pub fn serve_handle<T>(
    handle: &JoinHandle<T>,
    params: SporadicParams,
    normal_priority: i32,
) -> Result<Served> {
    if handle.is_finished() {
        return Err(Error::new(
            ErrorKind::NotFound,
            CALL,
            format!("thread {} has ended", handle.tid()),
        ));
    }
    serve(handle.tid(), params, normal_priority)
}

/// Runs `f`, a call that may block, telling the server that the calling thread
/// blocks before it and woke after it, so that POSIX's block rules apply (what it
/// consumed since activation is charged and scheduled for replenishment; waking is a
/// new activation). On a thread that is not served it just runs `f`.
///
/// The server cannot see a block by itself; see the [module docs](self).
pub fn blocking<R>(f: impl FnOnce() -> R) -> R {
    let Some(srv) = SERVER.get() else {
        return f();
    };
    let tid = super::gettid();
    let me = CpuClock::current_thread();
    let stamp = || (st::monotonic_now(), me.now().unwrap_or_default());
    let (now, cpu) = stamp();
    srv.send(Command::Block(tid, now, cpu));
    let r = f();
    let (now, cpu) = stamp();
    srv.send(Command::Wake(tid, now, cpu));
    r
}

/// Stops serving the calling thread if it is served (used when a thread spawned with
/// [`Builder::sporadic`](super::Builder::sporadic) returns, so the server never acts
/// on a tid the kernel may reuse).
pub(crate) fn leave_current() {
    unserve(super::gettid());
}

struct Entry {
    shared: Arc<Shared>,
    state: SporadicState,
    normal: Priority,
    low: Priority,
    cpu_timer: st::ThreadTimer,
    mono_timer: st::ThreadTimer,
    armed_cpu: Option<Duration>,
    armed_mono: Option<Duration>,
    /// The shortest wait before the next look at the CPU clock (see [`step`]).
    floor: Duration,
    /// The CPU clock at the previous step.
    last_cpu: Duration,
}

/// The shortest wait between two looks at a served thread's CPU clock. The server
/// may share the thread's CPU: re-arming for the last few microseconds of budget
/// would wake it before the thread could run again, a loop that starves the very
/// thread it waits for. This floor bounds the overrun it adds.
const PROBE_FLOOR: Duration = Duration::from_micros(10);

/// The longest that floor grows to while the thread makes no progress (preempted,
/// or blocked without saying so), so the server does not wake needlessly.
const PROBE_FLOOR_MAX: Duration = Duration::from_millis(1);

fn run(rx: crossbeam_channel::Receiver<Command>, signo: i32) {
    let me = super::gettid().as_raw();
    let mut entries: HashMap<i32, Entry> = HashMap::new();
    loop {
        while let Ok(cmd) = rx.try_recv() {
            match cmd {
                Command::Add(shared, state) => {
                    let tid = shared.tid.as_raw();
                    match new_entry(Arc::clone(&shared), state, signo, me) {
                        Ok(e) => {
                            entries.insert(tid, e);
                        }
                        Err(e) => {
                            // Timers refused: the thread stays at its normal priority,
                            // unserved; its handle reports it.
                            let errno = e.errno().unwrap_or(libc::EAGAIN);
                            shared.timer_errno.store(errno, Ordering::Relaxed);
                            shared.gone.store(true, Ordering::Release);
                        }
                    }
                }
                Command::Remove(tid) => {
                    if let Some(e) = entries.remove(&tid.as_raw()) {
                        e.shared.gone.store(true, Ordering::Release);
                    }
                }
                Command::Block(tid, now, cpu) => {
                    if let Some(e) = entries.get_mut(&tid.as_raw()) {
                        let t = e.state.block(now, cpu);
                        apply(e, &t);
                    }
                }
                Command::Wake(tid, now, cpu) => {
                    if let Some(e) = entries.get_mut(&tid.as_raw()) {
                        let t = e.state.wake(now, cpu);
                        apply(e, &t);
                    }
                }
            }
        }
        entries.retain(|_, e| {
            let alive = step(e);
            if !alive {
                e.shared.gone.store(true, Ordering::Release);
            }
            alive
        });
        match st::wait_signal(signo) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => {
                // sigwaitinfo cannot fail otherwise with a valid set; never spin.
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

fn new_entry(shared: Arc<Shared>, state: SporadicState, signo: i32, me: i32) -> Result<Entry> {
    let cpu_timer = st::ThreadTimer::new(shared.clock.as_raw(), signo, me)?;
    let mono_timer = st::ThreadTimer::new(libc::CLOCK_MONOTONIC, signo, me)?;
    Ok(Entry {
        normal: Priority::fifo(shared.normal_priority)?,
        low: Priority::fifo(shared.params.low_priority)?,
        shared,
        state,
        cpu_timer,
        mono_timer,
        armed_cpu: None,
        armed_mono: None,
        floor: PROBE_FLOOR,
        last_cpu: Duration::ZERO,
    })
}

/// Brings one entry up to date and re-arms its timers; false if its thread is gone.
fn step(e: &mut Entry) -> bool {
    let now = st::monotonic_now();
    let Ok(cpu) = e.shared.clock.now() else {
        return false;
    };
    let t = e.state.advance(now, cpu);
    if !apply(e, &t) {
        return false;
    }
    let want_cpu = e.state.cpu_deadline();
    if want_cpu != e.armed_cpu && e.cpu_timer.set_abs(want_cpu).is_ok() {
        e.armed_cpu = want_cpu;
    }
    // The monotonic timer: the next replenishment, or the earliest time the budget
    // can run out (CPU time advances at most one second per second), but no sooner
    // than the floor, which doubles while the thread makes no progress.
    e.floor = if cpu == e.last_cpu {
        (e.floor * 2).min(PROBE_FLOOR_MAX)
    } else {
        PROBE_FLOOR
    };
    e.last_cpu = cpu;
    let probe = e
        .state
        .cpu_deadline()
        .map(|_| now + e.state.remaining(cpu).max(e.floor));
    let want_mono = match (e.state.pending().first().map(|r| r.at), probe) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    if want_mono != e.armed_mono && e.mono_timer.set_abs(want_mono).is_ok() {
        e.armed_mono = want_mono;
    }
    true
}

/// The id of a system event if tracing is on and a stream records it.
#[inline]
fn rec(ev: &crate::trace::sys::SysEvent) -> Option<crate::trace::EventId> {
    crate::trace::sys::enabled()
        .then(|| tc::recorded(ev))
        .flatten()
}

/// Carries out transitions (priority switches, counters, trace events) and publishes
/// the new state; false if the thread is gone.
fn apply(e: &mut Entry, t: &[Transition]) -> bool {
    let tid = e.shared.tid;
    let mut alive = true;
    for tr in t {
        match *tr {
            Transition::Switched(level) => {
                let p = match level {
                    Level::Normal => e.normal,
                    Level::Low => e.low,
                };
                let r = super::set_thread_scheduling(tid, p);
                let code = match &r {
                    Ok(()) => 0,
                    Err(err) => err.errno().unwrap_or(libc::EINVAL),
                };
                if code == libc::ESRCH {
                    alive = false;
                } else if code != 0 {
                    e.shared.last_errno.store(code, Ordering::Relaxed);
                }
                e.shared.switches.fetch_add(1, Ordering::Relaxed);
                if let Some(id) = rec(&tc::SCHED_SS_SWITCH) {
                    tc::Packer::<16>::new()
                        .i32(tid.as_raw())
                        .i32(p.value())
                        .u32((level == Level::Normal) as u32)
                        .i32(code)
                        .emit_id(id);
                }
            }
            Transition::Exhausted { consumed, overrun } => {
                let s = &e.shared;
                s.exhaustions.fetch_add(1, Ordering::Relaxed);
                s.max_overrun.fetch_max(ns(overrun), Ordering::Relaxed);
                s.total_overrun.fetch_add(ns(overrun), Ordering::Relaxed);
                if let Some(id) = rec(&tc::SCHED_SS_EXHAUSTED) {
                    tc::Packer::<24>::new()
                        .i32(tid.as_raw())
                        .u64(ns(consumed))
                        .u64(ns(overrun))
                        .u32(e.state.pending().len() as u32)
                        .emit_id(id);
                }
            }
            Transition::Replenished { amount, budget } => {
                e.shared.replenishments.fetch_add(1, Ordering::Relaxed);
                if let Some(id) = rec(&tc::SCHED_SS_REPLENISHED) {
                    tc::Packer::<24>::new()
                        .i32(tid.as_raw())
                        .u64(ns(amount))
                        .u64(ns(budget))
                        .u32(e.state.pending().len() as u32)
                        .emit_id(id);
                }
            }
            Transition::Scheduled(_) => {}
        }
    }
    e.shared.snap.publish(&e.state);
    alive
}
