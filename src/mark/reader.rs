//! The reader side: every marked thread of every process, with scheduling facts.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::layout::{self, MARKER_MAX, RAW_LEN};
use crate::registry::{self, TaskStat};
use crate::sched::Policy;
use crate::Result;

/// Scheduling facts of a thread, read from `/proc/<pid>/task/<tid>/stat`
/// while taking the snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedFacts {
    /// The policy; `None` if the kernel reports one this crate does not know (see
    /// [`policy_raw`](SchedFacts::policy_raw)).
    pub policy: Option<Policy>,
    /// The kernel's `SCHED_*` number.
    pub policy_raw: u32,
    /// The real-time priority (1..=99 for FIFO/RR, 0 otherwise).
    pub rt_priority: u32,
    /// The nice value (meaningful for OTHER and BATCH).
    pub nice: i32,
    /// The CPU the thread last ran on.
    pub last_cpu: i32,
    /// CPU time in user mode.
    pub user_time: Duration,
    /// CPU time in kernel mode.
    pub system_time: Duration,
    /// The state letter (`R` running, `S` sleeping, `D` disk wait, ...).
    pub state: char,
    /// The kernel thread name (`comm`).
    pub kernel_name: String,
}

impl SchedFacts {
    /// A short policy name for columns: `OTHER`, `FIFO`, `RR`, `BATCH`, `IDLE`,
    /// `DL`, `EXT`, or `?`.
    pub fn policy_short(&self) -> &'static str {
        match self.policy {
            Some(Policy::Other) => "OTHER",
            Some(Policy::Fifo) => "FIFO",
            Some(Policy::RoundRobin) => "RR",
            Some(Policy::Batch) => "BATCH",
            Some(Policy::Idle) => "IDLE",
            Some(Policy::Deadline) => "DL",
            Some(Policy::Ext) => "EXT",
            None => "?",
        }
    }

    fn from_stat(st: &TaskStat) -> SchedFacts {
        SchedFacts {
            policy: i32::try_from(st.policy).ok().and_then(Policy::from_raw),
            policy_raw: st.policy,
            rt_priority: st.rt_priority,
            nice: st.nice,
            last_cpu: st.processor,
            user_time: st.user_time(),
            system_time: st.system_time(),
            state: st.state,
            kernel_name: st.comm.clone(),
        }
    }
}

/// One marked thread, as a consistent copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadMark {
    /// The thread id.
    pub tid: i32,
    /// The marker (empty if only the raw block was written).
    pub marker: String,
    /// The 64-byte raw block.
    pub raw: [u8; RAW_LEN],
    /// Whether the raw block was ever written.
    pub raw_written: bool,
    /// When the marker or the raw block last changed (coarse wall clock).
    pub updated: SystemTime,
    /// The thread's scheduling facts.
    pub sched: SchedFacts,
}

/// The marked threads of one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessMarks {
    /// The process id.
    pub pid: i32,
    /// The executable path (`/proc/<pid>/exe`), or its command name, or `"(n/a)"`,
    /// as text: each byte of it that is not UTF-8 shows as U+FFFD.
    pub exe: String,
    /// [`exe`](ProcessMarks::exe) as the bytes it is (a path need not be UTF-8):
    /// what to show or match when two paths must not look the same.
    pub exe_bytes: Vec<u8>,
    /// The marked threads, by tid.
    pub threads: Vec<ThreadMark>,
}

/// What [`snapshot`] saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Processes with at least one live marked thread, by pid.
    pub processes: Vec<ProcessMarks>,
    /// Processes whose registry could not be read: another user's (mode 0600:
    /// read it as root or as that user), one of a live process in another pid
    /// namespace sharing `/dev/shm` (a container's, or the host's when the
    /// reader runs in a container: its pid means nothing here), or a file cut
    /// short (truncated by another process, e.g. an admin's `truncate -s 0`;
    /// its owner repairs it at its next mark or claim, or when a thread of it
    /// exits).
    pub unreadable: usize,
    /// Processes whose registry has another layout version (a different posixrt
    /// release) or a malformed header.
    pub incompatible: usize,
    /// Threads skipped because their marker changed during every retry.
    pub busy: usize,
    /// Marked threads skipped because their slot holds a malformed payload (a
    /// marker length over [`MARKER_MAX`], a payload shorter than the layout):
    /// a damaged file, or bytes another writer put there. Their process is
    /// listed without them (not at all if no thread of it is left).
    pub malformed: usize,
}

impl Snapshot {
    /// All marked threads, with their process.
    pub fn threads(&self) -> impl Iterator<Item = (&ProcessMarks, &ThreadMark)> {
        self.processes
            .iter()
            .flat_map(|p| p.threads.iter().map(move |t| (p, t)))
    }

    /// The process with this pid, if it has marked threads.
    pub fn process(&self, pid: i32) -> Option<&ProcessMarks> {
        self.processes.iter().find(|p| p.pid == pid)
    }
}

/// Every marked thread of every process (the `tfp` listing), joined with its
/// scheduling facts. Registry files of dead processes are removed on the way.
///
/// # Errors
///
/// Only if `/dev/shm` exists but cannot be listed (the errno's kind, e.g.
/// `PermissionDenied`). A registry that cannot be read is counted in
/// [`Snapshot::unreadable`] or [`Snapshot::incompatible`], a thread whose slot
/// is malformed in [`Snapshot::malformed`], not an error.
///
/// ```
/// posixrt::mark::set("doc example")?;
/// let snap = posixrt::mark::snapshot()?;
/// let me = snap.process(std::process::id() as i32).expect("this process is marked");
/// assert!(me.threads.iter().any(|t| t.marker == "doc example"));
/// # Ok::<(), posixrt::Error>(())
/// ```
pub fn snapshot() -> Result<Snapshot> {
    read(None)
}

/// Like [`snapshot`], for one process.
///
/// # Errors
///
/// As [`snapshot`]'s. A pid with no marked thread (or no such process) is an
/// empty snapshot, not an error.
pub fn snapshot_pid(pid: i32) -> Result<Snapshot> {
    read(Some(pid))
}

fn read(pid: Option<i32>) -> Result<Snapshot> {
    let scan = registry::scan(layout::KIND, pid)?;
    let mut snap = Snapshot {
        processes: Vec::with_capacity(scan.processes.len()),
        unreadable: scan.unreadable,
        incompatible: scan.incompatible,
        busy: scan.busy,
        malformed: 0,
    };
    for p in scan.processes {
        let mut threads: Vec<ThreadMark> = Vec::with_capacity(p.slots.len());
        // A slot owned by the process (no thread) holds no mark: skipped.
        for (s, task) in p.slots.iter().filter_map(|s| Some((s, s.task.as_ref()?))) {
            match decode(s.tid, &s.payload, task) {
                Slot::Marked(t) => threads.push(t),
                Slot::NotYet => {}
                Slot::Malformed => snap.malformed += 1,
            }
        }
        if threads.is_empty() {
            continue;
        }
        threads.sort_by_key(|t| t.tid);
        snap.processes.push(ProcessMarks {
            pid: p.pid,
            exe: p.exe,
            exe_bytes: p.exe_bytes,
            threads,
        });
    }
    Ok(snap)
}

fn word(payload: &[u8], i: usize) -> u64 {
    let mut b = [0u8; 8];
    if let Some(s) = payload.get(i * 8..i * 8 + 8) {
        b.copy_from_slice(s);
    }
    u64::from_ne_bytes(b)
}

/// What a slot holds.
enum Slot {
    /// A marked thread.
    Marked(ThreadMark),
    /// Nothing yet: claimed by a thread's first mark (which zeroes the
    /// payload), its marker or raw block not stored yet.
    NotYet,
    /// A malformed payload ([`Snapshot::malformed`]).
    Malformed,
}

fn decode(tid: i32, payload: &[u8], task: &TaskStat) -> Slot {
    let len_flags = word(payload, layout::W_LEN);
    let len = (len_flags & 0xffff_ffff) as usize;
    if len > MARKER_MAX || payload.len() < layout::PAYLOAD {
        return Slot::Malformed;
    }
    // Every mark sets one of these (`set`/`update` the first, `write_raw`
    // the second); a slot without either was claimed and not written yet,
    // and would list as an empty marker updated in 1970.
    if len_flags & (layout::FLAG_MARKED | layout::FLAG_RAW) == 0 {
        return Slot::NotYet;
    }
    let marker = String::from_utf8_lossy(&payload[layout::MARKER_OFF..layout::MARKER_OFF + len])
        .into_owned();
    let mut raw = [0u8; RAW_LEN];
    raw.copy_from_slice(&payload[layout::RAW_OFF..layout::RAW_OFF + RAW_LEN]);
    Slot::Marked(ThreadMark {
        tid,
        marker,
        raw,
        raw_written: len_flags & layout::FLAG_RAW != 0,
        updated: UNIX_EPOCH + Duration::from_nanos(word(payload, layout::W_TIME)),
        sched: SchedFacts::from_stat(task),
    })
}
