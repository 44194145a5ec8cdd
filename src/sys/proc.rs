//! `/proc` parsing: the one parser of `/proc/<pid>/task/<tid>/stat`.
//!
//! # References
//! - [`proc_pid_stat(5)`](https://man7.org/linux/man-pages/man5/proc_pid_stat.5.html)

use std::time::Duration;

/// The text of a `/proc` file, decoded lossily: `stat` and `status` hold the
/// kernel name, cut at 15 bytes even inside a UTF-8 character (std names threads
/// that way), and a read must not fail, nor a thread look dead, because of it.
pub(crate) fn read_text(path: &str) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    Ok(String::from_utf8(bytes)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// Facts about a task (thread) or process from `/proc/.../stat` (see `proc(5)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStat {
    /// The kernel name (`comm`, field 2), at most 15 bytes.
    pub comm: String,
    /// The state letter (field 3): R, S, D, Z, T, ...
    pub state: char,
    /// User-mode CPU time in clock ticks (field 14).
    pub utime: u64,
    /// Kernel-mode CPU time in clock ticks (field 15).
    pub stime: u64,
    /// Nice value (field 19).
    pub nice: i32,
    /// Start time in clock ticks since boot (field 22).
    pub starttime: u64,
    /// CPU last run on (field 39).
    pub processor: i32,
    /// Real-time priority, 0 for non-real-time policies (field 40).
    pub rt_priority: u32,
    /// Scheduling policy, `SCHED_*` (field 41).
    pub policy: u32,
    /// The kernel's effective priority (field 18, `prio`): including a
    /// priority-inheritance boost; `-1 - rt_priority` for real-time tasks.
    pub prio: i32,
}

impl TaskStat {
    /// Parses the text of a `stat` file.
    pub fn parse(text: &str) -> Option<TaskStat> {
        let open = text.find('(')?;
        let close = text.rfind(')')?;
        let comm = text.get(open + 1..close)?.to_string();
        let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
        // rest[0] is field 3.
        let f = |n: usize| rest.get(n - 3).copied();
        Some(TaskStat {
            comm,
            state: f(3)?.chars().next()?,
            utime: f(14)?.parse().ok()?,
            stime: f(15)?.parse().ok()?,
            nice: f(19)?.parse().ok()?,
            starttime: f(22)?.parse().ok()?,
            processor: f(39)?.parse().ok()?,
            rt_priority: f(40)?.parse().ok()?,
            policy: f(41)?.parse().ok()?,
            prio: f(18)?.parse().ok()?,
        })
    }

    /// Whether the task is dead or a zombie.
    pub fn is_dead(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }

    /// User CPU time.
    pub fn user_time(&self) -> Duration {
        ticks(self.utime)
    }

    /// System CPU time.
    pub fn system_time(&self) -> Duration {
        ticks(self.stime)
    }
}

fn ticks(t: u64) -> Duration {
    let hz = rustix::param::clock_ticks_per_second().max(1);
    Duration::from_nanos(t.saturating_mul(1_000_000_000) / hz)
}
