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
//! [`serve_handle`]; the returned [`Served`] stops serving when dropped. A
//! `SCHED_DEADLINE` thread is refused (`InvalidInput`): the server switches
//! priorities with `sched_setscheduler`, which would drop its runtime, deadline
//! and period for good, and the kernel already enforces its budget.
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
//! - see a served thread's policy or priority **changed behind its back** (by the
//!   thread itself or through [`set_thread_scheduling`](crate::sched::set_thread_scheduling),
//!   [`JoinHandle::set_scheduling`](crate::sched::JoinHandle::set_scheduling)): the server
//!   does not re-read it. The change holds until the server's next switch, which
//!   puts the thread back at its normal or low priority; the budget is charged by
//!   the rules all along. To give a served thread other parameters or another normal
//!   priority, drop its [`Served`] and [`serve`] it again (a thread spawned with
//!   [`Builder::sporadic`](crate::sched::Builder::sporadic) keeps its parameters
//!   until its closure returns);
//! - keep the rules across `fork` and `exec`, and for threads of other processes.
//!   A forked child does not have its parent's server thread: once the parent has
//!   started it, [`serve`] in the child is `Unsupported`, [`blocking`] there just
//!   runs its call, and a [`Served`] the child inherited reports its thread not
//!   served (its `last_error` and `remaining_budget` are that `Unsupported`). A child forked before that starts a server of its own on first
//!   use, also when a thread of the parent was inside [`serve`] or starting the
//!   server at the fork.
//!
//! **Threads a served thread creates are not served.** POSIX's default
//! `PTHREAD_INHERIT_SCHED` would give them `SCHED_SPORADIC` with the same
//! parameters (a budget of their own). Here a thread created by a served thread
//! ([`Builder`](crate::sched::Builder) without a policy, `std::thread::spawn`)
//! inherits what the kernel has: `SCHED_FIFO` at the priority the served thread
//! runs at that moment (its normal one, usually), with no budget enforced at all.
//! Give such a thread [`Builder::sporadic`](crate::sched::Builder::sporadic) for a
//! budget of its own, or [`Builder::scheduling`](crate::sched::Builder::scheduling)
//! with the priority it should have.
//!
//! # References
//!  - [Scheduling policies, SCHED_SPORADIC (XSH 2.8.4)](https://pubs.opengroup.org/onlinepubs/9799919799/functions/V2_chap02.html#tag_16_08_04_03)
//!  - [`sched_setparam`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_setparam.html)
//!  - [`timer_create(2)`](https://man7.org/linux/man-pages/man2/timer_create.2.html)
//!  - [`clock_getcpuclockid(3)`](https://man7.org/linux/man-pages/man3/clock_getcpuclockid.3.html)
//!
//! # Layout
//!
//! [`SporadicParams`] and its checks (`params`), the rules as a clock-free state
//! machine (`state`), what the server publishes for readers (`shared`), the server
//! thread (`server`) and the calls that place threads under it (`served`).

mod params;
mod served;
mod server;
mod shared;
mod state;

pub use params::{SporadicParams, MIN_REPL_PERIOD, POSIX_SS_REPL_MAX, SS_REPL_MAX};
pub use served::{blocking, serve, serve_handle, Served};
pub(crate) use served::{leave_current, serve_spawned};
pub use server::{server_tid, set_server_affinity};
pub use shared::SporadicStats;
pub use state::{Level, Replenishment, SporadicState, Transition};

/// The highest `SCHED_FIFO` priority this process must be allowed for a thread
/// to be served at `normal_priority`: the server's own, the top one, until the
/// server runs (the first served thread starts it), then the normal priority.
pub(crate) fn needed_priority(normal_priority: i32) -> crate::Result<i32> {
    if server::current().is_some() {
        return Ok(normal_priority);
    }
    crate::sched::Policy::Fifo.priority_max()
}
