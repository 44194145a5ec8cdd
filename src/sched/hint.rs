//! The hints attached to scheduling errors: what is missing, the current values, and
//! how to fix it.
//!
//! The facts (capabilities, limits, uid, cgroup budget, CPUs) are gathered when the
//! error is built, and the text is made from them by pure functions so every branch
//! can be tested without changing the process's privileges.

use rustix::process::{getrlimit, Resource};
use rustix::thread::CapabilitySet;

use super::Policy;
use crate::Error;

/// `Some(true)` if the calling thread has `cap` in its effective set, `None` if
/// the capability sets cannot be read.
pub(crate) fn has_capability(cap: CapabilitySet) -> Option<bool> {
    rustix::thread::capabilities(None)
        .ok()
        .map(|c| c.effective.contains(cap))
}

/// Formats an rlimit value (`unlimited` for `RLIM_INFINITY`).
pub(crate) fn fmt_limit(v: Option<u64>) -> String {
    match v {
        Some(v) => v.to_string(),
        None => "unlimited".to_string(),
    }
}

/// What the permission hints are made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Facts {
    /// CAP_SYS_NICE in the effective set (`None`: unknown).
    pub cap_sys_nice: Option<bool>,
    /// The effective uid.
    pub euid: u32,
    /// RLIMIT_RTPRIO soft and hard (`None` = unlimited).
    pub rtprio: (Option<u64>, Option<u64>),
    /// RLIMIT_NICE soft and hard (`None` = unlimited).
    pub nice: (Option<u64>, Option<u64>),
    /// The running binary, for the `setcap` line.
    pub exe: String,
    /// The login name, for the limits.conf line.
    pub user: String,
    /// `cpu.rt_runtime_us` of the target thread's cgroup (the caller's without a
    /// target; the kernel checks the target's task group, which for a thread of
    /// another process may be another cgroup), if RT group scheduling exposes it.
    pub cgroup_rt_runtime: Option<(String, i64)>,
    /// `kernel.sched_rt_runtime_us`, which also sets the deadline bandwidth (0:
    /// none, -1: no limit).
    pub rt_runtime_us: Option<i64>,
    /// The effective uid of the target thread, when it is not the caller.
    pub target_uid: Option<(i32, u32)>,
    /// The target thread (the caller without one) runs `SCHED_IDLE`: leaving that
    /// policy is bounded by RLIMIT_NICE, whatever RLIMIT_RTPRIO says.
    pub target_idle: bool,
    /// The target thread when it belongs to another process: the kernel checks
    /// *its* RLIMIT_RTPRIO (`task_rlimit(p, ...)`), not this process's.
    pub target_foreign: Option<i32>,
    /// The target thread's CPU affinity and the online CPUs it leaves out, as
    /// `taskset -c` lists, when it leaves some out: the kernel refuses
    /// SCHED_DEADLINE (EPERM) to a thread whose affinity does not cover its root
    /// domain, which is every online CPU unless a cpuset partition splits them.
    pub affinity_gap: Option<(String, String)>,
}

impl Facts {
    /// The facts of this process now; `tid` is the target thread, if any.
    pub(crate) fn gather(tid: Option<i32>) -> Facts {
        let l = getrlimit(Resource::Rtprio);
        let n = getrlimit(Resource::Nice);
        let euid = rustix::process::geteuid().as_raw();
        let target_uid = tid
            .filter(|&t| t > 0 && t != rustix::thread::gettid().as_raw_nonzero().get())
            .and_then(|t| thread_euid(t).map(|u| (t, u)));
        Facts {
            cap_sys_nice: has_capability(CapabilitySet::SYS_NICE),
            euid,
            rtprio: (l.current, l.maximum),
            nice: (n.current, n.maximum),
            exe: exe_path(),
            user: login_name(),
            cgroup_rt_runtime: cgroup_rt_runtime(tid.filter(|&t| t > 0)),
            rt_runtime_us: std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us")
                .ok()
                .and_then(|v| v.trim().parse().ok()),
            target_uid,
            target_idle: crate::sys::sched::getattr(tid.filter(|&t| t > 0).unwrap_or(0))
                .is_ok_and(|a| a.sched_policy == libc::SCHED_IDLE as u32),
            target_foreign: tid
                .filter(|&t| t > 0 && t != rustix::thread::gettid().as_raw_nonzero().get())
                .filter(|t| !std::path::Path::new(&format!("/proc/self/task/{t}")).exists()),
            affinity_gap: affinity_gap(tid.filter(|&t| t > 0).unwrap_or(0)),
        }
    }

    fn cap_text(&self) -> String {
        match self.cap_sys_nice {
            Some(true) => "this process has CAP_SYS_NICE".into(),
            Some(false) if self.euid == 0 => "this process runs as root but lacks CAP_SYS_NICE \
                 (a container or a dropped capability bounding set)"
                .into(),
            Some(false) => format!("this process (uid {}) lacks CAP_SYS_NICE", self.euid),
            None => "CAP_SYS_NICE state unknown".into(),
        }
    }

    /// How to get CAP_SYS_NICE, worded for who we are.
    fn cap_fix(&self) -> String {
        if self.euid == 0 {
            "grant CAP_SYS_NICE to the container or service (`docker run --cap-add SYS_NICE`, \
             systemd `AmbientCapabilities=CAP_SYS_NICE`), or run it outside the restricted \
             capability set"
                .into()
        } else {
            format!("run as root, or `sudo setcap cap_sys_nice+ep {}`", self.exe)
        }
    }

    /// Another user's thread: a fact that explains EPERM whatever the policy, so it
    /// leads the hint.
    fn owner_note(&self) -> Option<String> {
        match self.target_uid {
            Some((tid, uid)) if uid != self.euid && self.cap_sys_nice != Some(true) => {
                Some(format!(
                    "thread {tid} belongs to uid {uid} and this process runs as uid {}: changing \
                     another user's thread always needs CAP_SYS_NICE, whatever the limits; ",
                    self.euid
                ))
            }
            _ => None,
        }
    }

    /// With CAP_SYS_NICE, EPERM for an RT policy comes from RT group scheduling.
    fn cgroup_note(&self) -> String {
        let where_ = match &self.cgroup_rt_runtime {
            Some((path, v)) => format!(" ({path} is {v})"),
            None => String::new(),
        };
        format!(
            "{}, so the refusal is not about privilege: with RT group scheduling \
             (CONFIG_RT_GROUP_SCHED) the thread's cgroup has no real-time budget{where_}; \
             give the cgroup one (write e.g. 950000 to its cpu.rt_runtime_us, after its parent) \
             or run the program in a cgroup that has one",
            self.cap_text()
        )
    }

    /// Without CAP_SYS_NICE but with an RLIMIT_RTPRIO that allows the priority,
    /// EPERM comes from RT group scheduling (the kernel checks the cgroup's budget
    /// after the limit) or from a security module.
    fn limit_allows_note(&self) -> String {
        const GROUP: &str = "with RT group scheduling (CONFIG_RT_GROUP_SCHED) the \
             thread's cgroup has no real-time budget";
        const FIX: &str = "give the cgroup one (write e.g. 950000 to its \
             cpu.rt_runtime_us, after its parent; cgroup v2 has no such file: run the \
             program in the root cgroup) or run the program in a cgroup that has one";
        const LSM: &str = "a security module (SELinux, AppArmor) refused the change: \
             see its audit log (ausearch -m avc, dmesg)";
        match &self.cgroup_rt_runtime {
            Some((path, 0)) => format!("{GROUP} ({path} is 0); {FIX}"),
            Some((path, v)) => {
                format!("the thread's cgroup has a real-time budget ({path} is {v}), so {LSM}")
            }
            None => format!(
                "either {GROUP} (its cpu.rt_runtime_us is 0, or absent under cgroup v2); \
                 {FIX}; or {LSM}"
            ),
        }
    }
}

/// The effective uid of thread `tid` (`Uid:` line of `/proc/TID/status`).
/// Thread `tid`'s affinity (0: the caller) and the online CPUs it leaves out,
/// if it leaves out any; `None` when either cannot be read.
fn affinity_gap(tid: i32) -> Option<(String, String)> {
    let mut affinity = super::CpuSet::new();
    crate::sys::sched::getaffinity(tid, &mut affinity.raw).ok()?;
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| super::cpuset::parse_cpu_list(&s))?;
    let mut left_out = online;
    for c in affinity.iter() {
        left_out.remove(c);
    }
    (!left_out.is_empty()).then(|| (affinity.to_string(), left_out.to_string()))
}

fn thread_euid(tid: i32) -> Option<u32> {
    let s = crate::sys::proc::read_text(&format!("/proc/{tid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// `cpu.rt_runtime_us` of thread `tid`'s cgroup, or of this thread's without
/// one (v1 `cpu` controller, or v2 when the kernel exposes it), with its path.
fn cgroup_rt_runtime(tid: Option<i32>) -> Option<(String, i64)> {
    let file = tid.map_or_else(
        || "/proc/thread-self/cgroup".to_string(),
        |t| format!("/proc/{t}/cgroup"),
    );
    let cg = std::fs::read_to_string(file).ok()?;
    for line in cg.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let base = if controllers.is_empty() {
            "/sys/fs/cgroup".to_string()
        } else if controllers.split(',').any(|c| c == "cpu") {
            format!("/sys/fs/cgroup/{controllers}")
        } else {
            continue;
        };
        let file = format!("{base}{}/cpu.rt_runtime_us", path.trim_end_matches('/'));
        if let Some(v) = std::fs::read_to_string(&file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return Some((file, v));
        }
    }
    None
}

/// The running binary, for a `setcap` line.
fn exe_path() -> String {
    std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "BINARY".into())
}

/// The login name, for a limits.conf line (`USER` when unknown).
pub(crate) fn login_name() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty() && !u.contains(char::is_whitespace))
        .unwrap_or_else(|| "USER".into())
}

/// What the `RLIMIT_MEMLOCK` hints (`mlockall`, growth of locked memory) are made
/// from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemlockFacts {
    /// CAP_IPC_LOCK in the effective set (`None`: unknown).
    pub cap_ipc_lock: Option<bool>,
    /// The effective uid.
    pub euid: u32,
    /// RLIMIT_MEMLOCK soft and hard, in bytes (`None` = unlimited).
    pub limit: (Option<u64>, Option<u64>),
    /// The running binary, for the `setcap` line.
    pub exe: String,
    /// The login name, for the limits.conf line.
    pub user: String,
}

impl MemlockFacts {
    /// The facts of this process now.
    pub(crate) fn gather() -> MemlockFacts {
        let l = getrlimit(Resource::Memlock);
        MemlockFacts {
            cap_ipc_lock: has_capability(CapabilitySet::IPC_LOCK),
            euid: rustix::process::geteuid().as_raw(),
            limit: (l.current, l.maximum),
            exe: exe_path(),
            user: login_name(),
        }
    }

    /// Whether this process has CAP_IPC_LOCK, worded for who we are.
    pub(crate) fn cap_text(&self) -> String {
        match self.cap_ipc_lock {
            Some(true) => "this process has CAP_IPC_LOCK".into(),
            Some(false) if self.euid == 0 => "this process runs as root but lacks \
                 CAP_IPC_LOCK (a container or a dropped capability bounding set)"
                .into(),
            Some(false) => format!("this process (uid {}) lacks CAP_IPC_LOCK", self.euid),
            None => "CAP_IPC_LOCK state unknown".into(),
        }
    }

    /// How to get CAP_IPC_LOCK: root that lacks it cannot get it by running as root.
    pub(crate) fn cap_fix(&self) -> String {
        if self.euid == 0 {
            "grant CAP_IPC_LOCK to the container or service (`docker run --cap-add IPC_LOCK`, \
             systemd `AmbientCapabilities=CAP_IPC_LOCK`)"
                .into()
        } else {
            format!("run as root, or `sudo setcap cap_ipc_lock+ep {}`", self.exe)
        }
    }

    /// The fixes for locking `need` bytes (`None`: unknown), cheapest first: the
    /// soft limit when the hard one already allows it, then the capability, then
    /// limits.conf.
    pub(crate) fn fixes(&self, need: Option<u64>) -> String {
        let (soft, hard) = self.limit;
        let mut fixes = Vec::new();
        if let Some(n) = need {
            if soft.is_some_and(|s| s < n) && hard.map_or(true, |h| h >= n) {
                let to = hard.map_or("unlimited".to_string(), |h| (h / 1024).to_string());
                fixes.push(format!(
                    "the hard limit allows it: raise the soft limit (`ulimit -l {to}` before \
                     starting the program, or setrlimit(RLIMIT_MEMLOCK) in it)"
                ));
            }
        }
        fixes.push(self.cap_fix());
        fixes.push(format!(
            "add `{} - memlock unlimited` to /etc/security/limits.conf and log in again \
             (`LimitMEMLOCK=infinity` for a systemd service)",
            self.user
        ));
        fixes.join("; or ")
    }
}

/// The hint for `mlockall` refused by `RLIMIT_MEMLOCK`: the limits, the size of
/// the address space (`vm`, what `MCL_CURRENT` locks) and the fixes.
pub(crate) fn mlockall_hint(f: &MemlockFacts, vm: Option<u64>) -> String {
    format!(
        "RLIMIT_MEMLOCK is soft {}, hard {} bytes, the address space is {} bytes, and {}; \
         fix: {}",
        fmt_limit(f.limit.0),
        fmt_limit(f.limit.1),
        vm.map_or("?".into(), |v| v.to_string()),
        f.cap_text(),
        f.fixes(vm)
    )
}

/// The fix for EPERM when asking for a real-time policy (or raising a priority),
/// from the gathered facts.
pub(crate) fn rt_hint(f: &Facts, policy: Option<Policy>, priority: Option<i32>) -> String {
    let (soft, hard) = f.rtprio;
    let limits = format!(
        "soft limit {}, hard limit {}",
        fmt_limit(soft),
        fmt_limit(hard)
    );
    let owner = f.owner_note().unwrap_or_default();
    if policy == Some(Policy::Deadline) {
        if let (Some(true), Some((affinity, left_out))) = (f.cap_sys_nice, &f.affinity_gap) {
            // The affinity shows the cause: say it, not every possible one.
            return format!(
                "{owner}{}, so the refusal comes from the thread's CPU affinity: its \
                 affinity is {affinity}, which leaves out CPUs {left_out} (online), and the kernel admits a \
                 SCHED_DEADLINE thread only if its affinity covers every CPU of its root \
                 domain (every online CPU, unless a cpuset partition splits them); fix: widen \
                 the thread's affinity first (posixrt::sched::set_thread_affinity with every \
                 online CPU), then set SCHED_DEADLINE; or run it in a cpuset partition \
                 (cpuset.cpus.partition = root) of the CPUs it should use",
                f.cap_text()
            );
        }
        if f.cap_sys_nice == Some(true) {
            let runtime = f
                .rt_runtime_us
                .map_or("unreadable".to_string(), |v| v.to_string());
            return format!(
                "{owner}{}: SCHED_DEADLINE is refused with EPERM when the thread's CPU affinity does \
                 not cover every CPU of its root domain (do not restrict the affinity of a \
                 DEADLINE thread, or give it an exclusive cpuset), or when the root domain has \
                 no deadline bandwidth (kernel.sched_rt_runtime_us is {runtime}; 0 leaves none: \
                 raise it, e.g. to 950000)",
                f.cap_text()
            );
        }
        return format!(
            "{owner}SCHED_DEADLINE needs CAP_SYS_NICE ({}; RLIMIT_RTPRIO does not grant it, {limits}); \
             fix: {}; the thread's CPU affinity must also cover every CPU of its root domain",
            f.cap_text(),
            f.cap_fix()
        );
    }
    if f.cap_sys_nice == Some(true) {
        return format!("{owner}{}", f.cgroup_note());
    }
    let want = match (policy, priority) {
        (Some(p), Some(v)) => format!("{p} priority {v} needs"),
        (Some(p), None) => format!("{p} needs"),
        _ => "real-time scheduling needs".to_string(),
    };
    let need = priority.map_or("N".to_string(), |v| v.to_string());
    let need_n = priority.and_then(|v| u64::try_from(v).ok());
    if let Some(t) = f.target_foreign {
        // Raising this process's limits cannot help: the target's are checked.
        let idle = if f.target_idle {
            "; the thread is SCHED_IDLE, and leaving SCHED_IDLE also needs that process's \
             RLIMIT_NICE >= 20 (nice 0; `Max nice priority` there)"
        } else {
            ""
        };
        return format!(
            "{owner}{want} CAP_SYS_NICE or RLIMIT_RTPRIO >= {need} in the process of thread \
             {t}: the kernel checks its own RLIMIT_RTPRIO (`Max realtime priority` in \
             /proc/{t}/limits), not this process's ({limits}){idle}; {}; fix: {}; or raise \
             that process's limit (`prlimit --pid {t} --rtprio={need}`), or add `rtprio 99` \
             to /etc/security/limits.conf for the user it runs as",
            f.cap_text(),
            f.cap_fix()
        );
    }
    if f.target_idle {
        // Without CAP_SYS_NICE the kernel lets a thread leave SCHED_IDLE only as far
        // as RLIMIT_NICE allows nice 0 (a limit of 20), before RLIMIT_RTPRIO counts.
        let (nsoft, nhard) = f.nice;
        let note = format!(
            "the thread is SCHED_IDLE, and leaving SCHED_IDLE without CAP_SYS_NICE needs \
             RLIMIT_NICE >= 20 (nice 0; soft {}, hard {})",
            fmt_limit(nsoft),
            fmt_limit(nhard)
        );
        let nice_fix = format!("add `{} - nice 0` to /etc/security/limits.conf", f.user);
        if need_n.is_some_and(|n| soft.map_or(true, |s| s >= n)) {
            return format!(
                "{owner}RLIMIT_RTPRIO ({limits}) allows {}, but {note}; {}; fix: {}; or {nice_fix}",
                want.trim_end_matches(" needs"),
                f.cap_text(),
                f.cap_fix()
            );
        }
        return format!(
            "{owner}{want} CAP_SYS_NICE or RLIMIT_RTPRIO >= {need}, and {note}; {}, \
             RLIMIT_RTPRIO is {limits}; fix: {}; or {nice_fix} and raise rtprio there too",
            f.cap_text(),
            f.cap_fix()
        );
    }
    if f.owner_note().is_none() && need_n.is_some_and(|n| soft.map_or(true, |s| s >= n)) {
        // The limit is not the cause: the kernel checks it first, then the
        // cgroup's real-time budget.
        return format!(
            "RLIMIT_RTPRIO ({limits}) allows {}, so the limit is not why it was refused; {}: {}",
            want.trim_end_matches(" needs"),
            f.cap_text(),
            f.limit_allows_note()
        );
    }
    let mut fixes = Vec::new();
    // The cheapest fix first: the hard limit already allows it.
    if let Some(n) = need_n {
        let hard_ok = hard.map_or(true, |h| h >= n);
        let soft_low = soft.is_some_and(|s| s < n);
        if hard_ok && soft_low {
            fixes.push(format!(
                "the hard limit allows it: call posixrt::sched::rt::raise_rtprio_limit({n}) \
                 first, or start the program under `prlimit --rtprio={n}`"
            ));
        }
    }
    fixes.push(f.cap_fix());
    fixes.push(format!(
        "add `{} - rtprio 99` to /etc/security/limits.conf and log in again \
         (`LimitRTPRIO=99` for a systemd service)",
        f.user
    ));
    format!(
        "{owner}{want} CAP_SYS_NICE or RLIMIT_RTPRIO >= {need}; {}, RLIMIT_RTPRIO is \
         {limits}; fix: {}",
        f.cap_text(),
        fixes.join("; or ")
    )
}

/// The fix for EPERM when switching to a fair policy (`SCHED_OTHER`, `SCHED_BATCH`,
/// `SCHED_IDLE`): leaving `SCHED_IDLE` is bounded by RLIMIT_NICE, and another user's
/// thread needs CAP_SYS_NICE.
pub(crate) fn fair_hint(f: &Facts, policy: Policy) -> String {
    let (soft, hard) = f.nice;
    // RLIMIT_NICE r allows nice values down to 20 - r.
    let floor = |r: Option<u64>| match r {
        None => "any".to_string(),
        Some(r) => (20 - r.min(40) as i64).to_string(),
    };
    // The kernel bounds it by the target's RLIMIT_NICE (`is_nice_reduction(p, ..)`).
    let bound = match f.target_foreign {
        Some(t) => format!(
            "the RLIMIT_NICE of thread {t}'s own process allows (`Max nice priority` in \
             /proc/{t}/limits; this process's, soft {}, hard {}, does not count)",
            fmt_limit(soft),
            fmt_limit(hard)
        ),
        None => format!(
            "RLIMIT_NICE (soft {}, hard {}: nice down to {}) allows",
            fmt_limit(soft),
            fmt_limit(hard),
            floor(soft)
        ),
    };
    format!(
        "{}switching to {policy} was refused; {}. Without it, a thread may leave SCHED_IDLE, \
         or lower its nice value, only as far as {bound}, and may not change another user's \
         thread; fix: {}, or raise `nice` in /etc/security/limits.conf",
        f.owner_note().unwrap_or_default(),
        f.cap_text(),
        f.cap_fix()
    )
}

/// The fix for EPERM from a priority-only call (`sched_setparam`) on a thread
/// of a fair policy: it keeps the policy and the nice value, so without
/// CAP_SYS_NICE the kernel refuses it only for another user's thread.
pub(crate) fn fair_priority_hint(f: &Facts, policy: Policy) -> String {
    format!(
        "{}changing only the priority of a {policy} thread (its policy and nice value \
         stay) was refused; {}, which a thread needs to change another user's thread; \
         fix: run as that user, or {}",
        f.owner_note().unwrap_or_default(),
        f.cap_text(),
        f.cap_fix()
    )
}

/// What to say when an affinity call gets EINVAL: which CPUs are usable.
pub(crate) fn affinity_einval_hint(call: &str) -> String {
    affinity_einval_hint_for(call, None)
}

/// The cpuset that limits the affinity of thread `tid`, and how to name it:
/// this process's, or, for a thread of another process (which may live in
/// another cgroup), that thread's own (its `/proc/<tid>/cgroup`).
struct CpusetOf {
    /// "this process's cpuset" or "the cpuset of thread T (process P)".
    name: String,
    /// Its CPUs as the kernel lists them, if readable.
    cpus: Option<String>,
}

fn cpuset_of(tid: Option<i32>) -> CpusetOf {
    let other = tid.filter(|t| !std::path::Path::new(&format!("/proc/self/task/{t}")).exists());
    match other {
        None => CpusetOf {
            name: "this process's cpuset".into(),
            cpus: super::cpuset::cpuset_cpus(),
        },
        Some(t) => {
            let pid = super::tid::thread_group(t)
                .filter(|&p| p != t)
                .map_or(String::new(), |p| format!(" (process {p})"));
            CpusetOf {
                name: format!("the cpuset of thread {t}{pid}"),
                cpus: super::cpuset::cpuset_cpus_in(&format!("/proc/{t}/cgroup")),
            }
        }
    }
}

/// [`affinity_einval_hint`] for thread `tid`: a thread of another process is
/// limited by its own cpuset, not by this process's.
pub(crate) fn affinity_einval_hint_for(call: &str, tid: Option<i32>) -> String {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    let possible = std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    if call.contains("getaffinity") {
        return format!(
            "the kernel's CPU mask is larger than CpuSet's {} CPUs (possible CPUs: {possible}); \
             posixrt's CpuSet is the C cpu_set_t and cannot describe CPUs beyond {}",
            super::CpuSet::CAPACITY,
            super::CpuSet::CAPACITY - 1
        );
    }
    // The kernel refuses a set with no CPU that is active and in the thread's
    // cpuset; any thread's own affinity (the main thread's included) is no limit.
    let c = cpuset_of(tid);
    let name = c.name;
    match c.cpus {
        Some(cpuset) => format!(
            "no CPU of the set is both online ({online}) and allowed by {name} \
             ({cpuset}); name at least one CPU from both lists"
        ),
        None => format!(
            "no CPU of the set is both online ({online}) and allowed by {name}; name at \
             least one online CPU the cpuset allows"
        ),
    }
}

/// The hint for EINVAL from `sched_setaffinity(tid)` with a set that has CPUs
/// both online and in this process's cpuset: the refusal is the target
/// thread's, a kernel thread bound to its CPU (`PF_NO_SETAFFINITY`), which no
/// one may move, or a thread whose own cpuset allows none of the CPUs.
pub(crate) fn affinity_target_refused(tid: i32, cpus: &super::CpuSet) -> String {
    let name = crate::sys::proc::read_text(&format!("/proc/{tid}/stat"))
        .ok()
        .and_then(|t| crate::sys::proc::TaskStat::parse(&t))
        .map_or(String::new(), |s| format!(" ({})", s.comm));
    let c = cpuset_of(Some(tid));
    let cpuset = c.cpus.map_or(String::new(), |l| format!(" ({l})"));
    let whose = c.name;
    format!(
        "CPUs {cpus} are online and allowed by {whose}{cpuset}, so thread {tid}{name} \
         itself refuses: a kernel thread bound to its CPU (per-CPU kernel threads such as \
         ksoftirqd/N or migration/N; the kernel lets no one change their affinity), or a \
         thread of another cgroup whose cpuset allows none of these CPUs (see \
         /proc/{tid}/cpuset); leave a bound kernel thread where it is, or name CPUs of \
         the thread's own cpuset"
    )
}

/// The refusal of an affinity the kernel narrowed: `dropped` are the online CPUs
/// of `asked` that the thread's cpuset does not allow, `applied` what it kept.
pub(crate) fn affinity_narrowed(
    call: &'static str,
    tid: i32,
    asked: &super::CpuSet,
    dropped: &super::CpuSet,
    applied: &super::CpuSet,
) -> Error {
    let c = cpuset_of(Some(tid));
    let cpuset = c.cpus.map_or(String::new(), |l| format!(" ({l})"));
    let whose = c.name;
    Error::invalid(
        call,
        format!(
            "the affinity {asked} names CPUs {dropped} that {whose} does not allow; the \
             kernel would have run the thread on {applied} only"
        ),
    )
    .with_hint(format!(
        "the kernel applies only the CPUs of the thread's cgroup cpuset{cpuset} and drops \
         the others silently; name only CPUs of the cpuset, or widen its cpuset.cpus"
    ))
}

/// Whether the kernel could run a thread on some CPU of `cpus`: one that is
/// online and in this process's cpuset. `None` when either list cannot be read.
pub(crate) fn affinity_usable(cpus: &super::CpuSet) -> Option<bool> {
    affinity_usable_for(cpus, None)
}

/// [`affinity_usable`] for thread `tid`: the cpuset that counts is that of
/// its process (its own, for a thread of another process).
pub(crate) fn affinity_usable_for(cpus: &super::CpuSet, tid: Option<i32>) -> Option<bool> {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| super::cpuset::parse_cpu_list(&s))?;
    let cpuset = cpuset_of(tid)
        .cpus
        .and_then(|s| super::cpuset::parse_cpu_list(&s))?;
    Some(
        cpus.iter()
            .any(|c| online.contains(c) && cpuset.contains(c)),
    )
}

/// The error for a failed scheduling call, with a hint for EPERM, EINVAL, EBUSY and
/// ESRCH that names the cause and the fix with the current values.
pub(crate) fn sched_error(
    call: &'static str,
    errno: i32,
    tid: Option<i32>,
    policy: Option<Policy>,
    priority: Option<i32>,
) -> Error {
    let e = Error::from_errno(call, errno);
    let affinity = call.contains("affinity");
    match errno {
        libc::EPERM if affinity => {
            let f = Facts::gather(tid);
            e.with_hint(format!(
                "{}changing the affinity of another user's thread needs CAP_SYS_NICE ({}); \
                 fix: run as that user, or {}",
                f.owner_note().unwrap_or_default(),
                f.cap_text(),
                f.cap_fix()
            ))
        }
        libc::EPERM => {
            let f = Facts::gather(tid);
            match policy {
                // A priority-only call keeps the policy: for a fair thread
                // only the owner check can refuse it.
                Some(p @ (Policy::Other | Policy::Batch | Policy::Idle | Policy::Ext))
                    if matches!(call, "sched_setparam" | "pthread_setschedprio") =>
                {
                    e.with_hint(fair_priority_hint(&f, p))
                }
                Some(p @ (Policy::Other | Policy::Batch | Policy::Idle | Policy::Ext)) => {
                    e.with_hint(fair_hint(&f, p))
                }
                _ => e.with_hint(rt_hint(&f, policy, priority)),
            }
        }
        libc::ESRCH => {
            let e = match tid {
                Some(t) => e.with_message(format!("no thread with tid {t}")),
                None => e.with_message("the thread has ended"),
            };
            e.with_hint(super::tid::NO_THREAD_HINT)
        }
        libc::EINVAL if affinity => e.with_hint(affinity_einval_hint_for(call, tid)),
        libc::EBUSY if affinity => e.with_hint(
            "the thread is SCHED_DEADLINE: its affinity must include every CPU of its root \
             domain; switch it to another policy first, or give it an exclusive cpuset",
        ),
        libc::EINVAL => match (policy, priority) {
            (Some(Policy::Ext), _) => e.with_message("SCHED_EXT refused").with_hint(
                "this kernel has no sched_ext: SCHED_EXT needs Linux 6.12+ built with \
                 CONFIG_SCHED_CLASS_EXT; use SCHED_OTHER (or SCHED_BATCH) instead",
            ),
            (Some(p), Some(v)) => {
                let range = p
                    .priority_range()
                    .map(|r| format!("{}..={}", r.start(), r.end()))
                    .unwrap_or_else(|_| "?".into());
                e.with_message(format!("{p} priority {v} refused"))
                    .with_hint(format!(
                        "{p} takes priorities {range} (sched_get_priority_min/max); the value \
                         was checked against the policy read just before the call, so another \
                         thread or process changed it meanwhile: read it again \
                         (thread_scheduling) and retry"
                    ))
            }
            _ => e,
        },
        _ => e,
    }
}

#[cfg(test)]
#[path = "hint_tests.rs"]
mod tests;
