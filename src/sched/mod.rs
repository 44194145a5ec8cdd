//! Scheduling: policies and priorities, spawn with attributes applied at creation,
//! affinity, and the kernel's view of a thread's priority.
//!
//! This is the POSIX scheduling chapter (listings 6.1–6.6 of the seed) on Linux:
//!
//! | POSIX / Linux call | here |
//! |---|---|
//! | `sched_getscheduler`, `sched_setscheduler`, `sched_getparam`, `sched_setparam` | [`get_scheduler`], [`set_scheduler`], [`get_param`], [`set_param`] |
//! | `sched_get_priority_min/max` | [`Policy::priority_range`], [`Priority::new`] (validated) |
//! | `sched_rr_get_interval`, `sched_yield` | [`rr_interval`], [`yield_now`] |
//! | `pthread_setschedparam`, `pthread_setschedprio` (reads go to the kernel, not glibc's `pthread_getschedparam` cache) | [`current_scheduling`], [`set_current_scheduling`], [`set_current_priority`], and the same on a [`JoinHandle`] |
//! | `sched_*` on another thread's tid | [`thread_scheduling`], [`set_thread_scheduling`], [`set_thread_priority`] |
//! | `pthread_attr_setinheritsched(PTHREAD_EXPLICIT_SCHED)` + policy/param/affinity/stack | [`Builder`] |
//! | `sched_getaffinity`/`sched_setaffinity`, `CPU_SET` | [`CpuSet`], [`thread_affinity`], [`set_thread_affinity`], [`set_process_affinity`] |
//! | `gettid`, `/proc/self/task/TID/stat` prio | [`gettid`], [`kernel_priority`] |
//! | `sched_setattr`/`sched_getattr` (`SCHED_DEADLINE`) | [`deadline`] |
//! | `pthread_getcpuclockid`, `CLOCK_THREAD_CPUTIME_ID`, a sporadic-server budget | [`cputime`], [`cputime::Budget`] |
//! | `SCHED_SPORADIC` (`sched_ss_low_priority`, `sched_ss_repl_period`, `sched_ss_init_budget`, `sched_ss_max_repl`) | [`sporadic`], [`Builder::sporadic`] |
//! | `clock_nanosleep(TIMER_ABSTIME)` loop, cyclictest statistics | [`periodic`] |
//! | `mlockall`, prefault, `/dev/cpu_dma_latency`, `PR_SET_TIMERSLACK`, `RLIMIT_RTPRIO` | [`rt`], [`rt::setup`] |
//!
//! # The policies (POSIX rules, Linux behaviour)
//!
//! The scheduler runs the thread at the head of the highest-priority non-empty list.
//!
//! - **`SCHED_FIFO`** (1..=99): a preempted thread goes back to the *head* of its list;
//!   a thread that becomes runnable goes to the *tail*; a thread whose policy or
//!   priority is changed by `sched_setscheduler`/`sched_setparam`/`pthread_setschedparam`
//!   goes to the tail of its new list; `pthread_setschedprio` raising it puts it at
//!   the tail, lowering it at the *head*; `sched_yield` moves it to the tail. It runs
//!   until it blocks, yields or is preempted. (Linux applies the
//!   `pthread_setschedprio` rule to every priority change, `sched(7)`.)
//! - **`SCHED_RR`**: `SCHED_FIFO` plus a quantum ([`rr_interval`]); a thread that used
//!   its quantum goes to the tail of its list; a preempted thread finishes its quantum.
//! - **`SCHED_SPORADIC`** (budget, replenishment period, low priority, max pending
//!   replenishments) is not in Linux. [`sporadic`] implements it in user space: a
//!   server thread enforces the budget on the thread's CPU-time clock, replenishes
//!   by POSIX's rules and switches priorities by tid; it guarantees the rules and
//!   bounds the overrun by its wake-up latency, but sees a block only when the thread
//!   declares it ([`sporadic::blocking`]). `SCHED_DEADLINE` covers the budget part in
//!   the kernel without the low-priority phase (see [`deadline`] for the mapping and
//!   the comparison).
//! - **`SCHED_OTHER`** (priority 0): lets a portable program say it no longer needs
//!   real-time scheduling. Linux adds `SCHED_BATCH` and `SCHED_IDLE`, and (6.12+)
//!   `SCHED_EXT` ([`Policy::Ext`]), a thread run by a sched_ext BPF scheduler,
//!   which posixrt reports and can move a thread into or out of.
//!
//! On Linux, RT throttling (`/proc/sys/kernel/sched_rt_runtime_us`, 950000 of
//! 1000000 by default) leaves 5 % of each second to non-RT tasks.
//!
//! # SCHED_RESET_ON_FORK and C callers
//!
//! A thread whose launcher gave it `SCHED_RESET_ON_FORK` (rtkit, `chrt -R`) keeps
//! the flag through every policy change made here: Linux would clear it, or refuse
//! the change (EPERM) to a thread without CAP_SYS_NICE. posixrt never adds the flag.
//! While a thread has it, the kernel ORs it into the policy it reports, so C code
//! in the process reads `SCHED_FIFO | SCHED_RESET_ON_FORK` from
//! `sched_getscheduler`, and from `pthread_getschedparam` too (glibc passes on what
//! it set or read), exactly as it did before posixrt's call: compare
//! `policy & ~SCHED_RESET_ON_FORK` with `SCHED_FIFO`. posixrt's readers
//! ([`get_scheduler`], [`thread_scheduling`], [`current_scheduling`],
//! [`Policy::from_raw`]) mask it off. A thread created by one with the flag runs
//! `SCHED_OTHER` (the kernel resets it), which `sched_getscheduler` and
//! [`current_scheduling`] report; glibc's `pthread_getschedparam` in it may still
//! report the creator's class, copied at `pthread_create`.
//!
//! # Privilege
//!
//! Real-time policies need `CAP_SYS_NICE` or an `RLIMIT_RTPRIO` at least as high as
//! the priority. Every EPERM from a scheduling call is
//! [`ErrorKind::PermissionDenied`](crate::ErrorKind::PermissionDenied) with a hint
//! that names both, the current soft and hard limits, and the fixes.
//!
//! ```
//! use posixrt::sched::{self, Policy, Priority};
//!
//! for p in [Policy::Fifo, Policy::RoundRobin, Policy::Other] {
//!     let r = p.priority_range()?;
//!     println!("{p}: {} to {}", r.start(), r.end());
//! }
//! match sched::set_current_scheduling(Priority::round_robin(50)?) {
//!     Ok(()) => println!("now SCHED_RR 50, quantum {:?}", sched::rr_interval(None)?),
//!     Err(e) => println!("refused: {e}"), // names CAP_SYS_NICE and RLIMIT_RTPRIO
//! }
//! sched::set_current_scheduling(Priority::other())?;
//! # Ok::<(), posixrt::Error>(())
//! ```

mod affinity;
mod cpuset;
pub mod cputime;
pub mod deadline;
pub(crate) mod hint;
pub(crate) mod hook;
pub mod periodic;
mod policy;
mod process;
pub mod rt;
mod spawn;
pub mod sporadic;
mod thread;
mod tid;

#[cfg(test)]
mod cache_tests;

pub use affinity::{
    current_cpu, process_affinity, set_process_affinity, set_thread_affinity, thread_affinity,
};
pub use cpuset::CpuSet;
pub use policy::{Policy, Priority};
pub use process::{
    get_param, get_scheduler, priority_max, priority_min, rr_interval, set_param, set_scheduler,
    yield_now,
};
pub use spawn::{spawn, Builder, JoinHandle};
pub use thread::{
    current_name, current_scheduling, current_stack_size, kernel_priority, set_current_priority,
    set_current_scheduling, set_thread_priority, set_thread_scheduling, thread_scheduling,
    KernelPriority,
};
pub use tid::{gettid, process_threads, Tid};
