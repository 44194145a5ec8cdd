//! The [`CpuSet`] type: the C `cpu_set_t` (1024 CPUs), so the same value can go to
//! `sched_setaffinity` and to `pthread_attr_setaffinity_np`. The calls that read and
//! set affinity are in [`super::affinity`].

use std::fmt;

use crate::{Error, Result};

/// A set of CPUs (`cpu_set_t`), CPUs `0..CpuSet::CAPACITY`. `Display` writes it
/// as a `taskset -c` list (`0-3,6`), and [`str::parse`] reads one
/// ([`FromStr`](std::str::FromStr)).
///
/// # References
///  - [`CPU_SET(3)`](https://man7.org/linux/man-pages/man3/CPU_SET.3.html)
#[derive(Clone, Copy)]
#[doc(alias = "cpu_set_t")]
pub struct CpuSet {
    pub(super) raw: libc::cpu_set_t,
}

impl CpuSet {
    /// How many CPUs a set can name (`CPU_SETSIZE`, 1024).
    pub const CAPACITY: usize = libc::CPU_SETSIZE as usize;

    /// The empty set (`CPU_ZERO`).
    #[doc(alias = "CPU_ZERO")]
    pub fn new() -> CpuSet {
        // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set (CPU_ZERO).
        let raw = unsafe { std::mem::zeroed() };
        CpuSet { raw }
    }

    /// The set holding only `cpu`.
    pub fn single(cpu: usize) -> Result<CpuSet> {
        let mut s = CpuSet::new();
        s.insert(cpu)?;
        Ok(s)
    }

    /// The set of the CPUs in `cpus`; a CPU `>= CAPACITY` is `InvalidInput`.
    pub fn from_cpus(cpus: impl IntoIterator<Item = usize>) -> Result<CpuSet> {
        let mut s = CpuSet::new();
        for c in cpus {
            s.insert(c)?;
        }
        Ok(s)
    }

    /// Adds `cpu` (`CPU_SET`); `cpu >= CAPACITY` is `InvalidInput`.
    #[doc(alias = "CPU_SET")]
    pub fn insert(&mut self, cpu: usize) -> Result<()> {
        if cpu >= Self::CAPACITY {
            return Err(Error::invalid(
                "CPU_SET",
                format!("CPU {cpu} is beyond CPU_SETSIZE ({})", Self::CAPACITY),
            )
            .with_hint(format!(
                "CpuSet is the C cpu_set_t and names CPUs 0..={}; this machine's CPUs are {}",
                Self::CAPACITY - 1,
                std::fs::read_to_string("/sys/devices/system/cpu/possible")
                    .map(|s| s.trim().to_string())
                    .unwrap_or_else(|_| "unknown".into())
            )));
        }
        let word = std::mem::size_of::<u64>() * 8;
        let words = self.words_mut();
        words[cpu / word] |= 1u64 << (cpu % word);
        Ok(())
    }

    /// Removes `cpu` (`CPU_CLR`); a CPU beyond the capacity is never in the set.
    #[doc(alias = "CPU_CLR")]
    pub fn remove(&mut self, cpu: usize) {
        if cpu < Self::CAPACITY {
            let words = self.words_mut();
            words[cpu / 64] &= !(1u64 << (cpu % 64));
        }
    }

    /// Whether `cpu` is in the set (`CPU_ISSET`).
    #[doc(alias = "CPU_ISSET")]
    pub fn contains(&self, cpu: usize) -> bool {
        cpu < Self::CAPACITY && self.words()[cpu / 64] & (1u64 << (cpu % 64)) != 0
    }

    /// How many CPUs are in the set (`CPU_COUNT`).
    #[doc(alias = "CPU_COUNT")]
    pub fn count(&self) -> usize {
        self.words().iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// The CPUs in the set, ascending.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..Self::CAPACITY).filter(move |&c| self.contains(c))
    }

    /// The raw `cpu_set_t`.
    #[inline]
    pub fn as_raw(&self) -> &libc::cpu_set_t {
        &self.raw
    }

    /// A set from a raw `cpu_set_t`.
    #[inline]
    pub fn from_raw(raw: libc::cpu_set_t) -> CpuSet {
        CpuSet { raw }
    }

    fn words(&self) -> &[u64; 16] {
        const _: () = assert!(std::mem::size_of::<libc::cpu_set_t>() == 128);
        const _: () = assert!(std::mem::align_of::<libc::cpu_set_t>() >= 8);
        // SAFETY: cpu_set_t is 128 bytes of plain bits aligned to at least 8 (both
        // asserted above at compile time); [u64; 16] has the same size, alignment 8 and
        // no invalid bit patterns, and the borrow lives as long as `self`'s.
        unsafe { &*(&self.raw as *const libc::cpu_set_t as *const [u64; 16]) }
    }

    fn words_mut(&mut self) -> &mut [u64; 16] {
        // SAFETY: as in `words`; the borrow is unique.
        unsafe { &mut *(&mut self.raw as *mut libc::cpu_set_t as *mut [u64; 16]) }
    }
}

/// The CPUs of a kernel CPU list such as `0-3,6` (`/sys/devices/system/cpu/*`);
/// `None` if it is malformed, empty or names a CPU beyond the capacity.
pub(crate) fn parse_cpu_list(list: &str) -> Option<CpuSet> {
    parse_list(list).ok().filter(|s| !s.is_empty())
}

/// The set a CPU list names, or what is wrong with it: the entry, and why.
fn parse_list(list: &str) -> std::result::Result<CpuSet, String> {
    let mut set = CpuSet::new();
    let list = list.trim();
    if list.is_empty() {
        return Ok(set);
    }
    for part in list.split(',').map(str::trim) {
        if part.is_empty() {
            return Err("an empty entry (two commas, or one at an end)".into());
        }
        let cpu = |v: &str| {
            v.parse::<usize>()
                .map_err(|_| format!("entry {part:?} is not a CPU number or a range N-M"))
        };
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (cpu(a)?, cpu(b)?),
            None => {
                let c = cpu(part)?;
                (c, c)
            }
        };
        if a > b {
            return Err(format!("range {part:?} ends before it starts"));
        }
        if b >= CpuSet::CAPACITY {
            return Err(format!(
                "entry {part:?} names CPU {b}, beyond CPU_SETSIZE ({})",
                CpuSet::CAPACITY
            ));
        }
        for c in a..=b {
            // Below the capacity: checked above.
            let _ = set.insert(c);
        }
    }
    Ok(set)
}

impl std::str::FromStr for CpuSet {
    type Err = Error;

    /// A CPU list as `taskset -c`, `isolcpus=` and `/sys/devices/system/cpu/*`
    /// write it, the inverse of `Display`: CPU numbers and ranges `N-M`
    /// separated by commas (`0-3,6`), spaces around entries and a trailing
    /// newline allowed. The empty list is the empty set. Anything else (an empty
    /// entry, a reversed range, a stride such as `0-7:2`, a CPU beyond
    /// [`CAPACITY`](CpuSet::CAPACITY)) is [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput)
    /// naming the entry, never a set of fewer CPUs.
    ///
    /// ```
    /// use posixrt::sched::CpuSet;
    ///
    /// let s: CpuSet = "0-3,6".parse()?;
    /// assert_eq!(s, CpuSet::from_cpus([0, 1, 2, 3, 6])?);
    /// assert_eq!(s.to_string(), "0-3,6");
    /// assert!("3-1".parse::<CpuSet>().is_err());
    /// # Ok::<(), posixrt::Error>(())
    /// ```
    fn from_str(list: &str) -> Result<CpuSet> {
        parse_list(list).map_err(|why| {
            Error::invalid("CpuSet::from_str", format!("CPU list {list:?}: {why}")).with_hint(
                format!(
                    "write CPU numbers and ranges N-M (N <= M) separated by commas, as \
                     `taskset -c` does, e.g. \"0-3,6\"; CPUs 0..={} (no strides such as \
                     0-7:2: list the CPUs)",
                    CpuSet::CAPACITY - 1
                ),
            )
        })
    }
}

/// Refuses an empty set (`call` names the refusing function; `also` ends the
/// hint with another way out, or is empty).
pub(crate) fn check_not_empty(call: &'static str, cpus: &CpuSet, also: &str) -> Result<()> {
    if !cpus.is_empty() {
        return Ok(());
    }
    Err(Error::invalid(call, "empty CPU set").with_hint(format!(
        "a thread must be allowed at least one CPU: add one to the set{}{also}",
        usable_note()
    )))
}

/// Refuses a set that names a CPU this machine cannot have (not in
/// `/sys/devices/system/cpu/possible`): the kernel would drop it silently and
/// apply the rest. Offline CPUs that exist are accepted: in the top cpuset the
/// kernel keeps them in the thread's mask; in another cpuset it drops them
/// silently (and [`narrowed`] does not report them: it looks at online CPUs).
pub(crate) fn check_cpus_exist(call: &'static str, cpus: &CpuSet) -> Result<()> {
    let Some(possible) = std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|s| parse_cpu_list(&s))
    else {
        return Ok(()); // unknown: let the kernel decide
    };
    let mut absent = CpuSet::new();
    for c in cpus.iter().filter(|&c| !possible.contains(c)) {
        absent.insert(c)?;
    }
    if absent.is_empty() {
        return Ok(());
    }
    Err(Error::invalid(
        call,
        format!("the affinity {cpus} names CPUs {absent}, which this machine does not have"),
    )
    .with_hint(format!(
        "this machine's CPUs are {possible}; the kernel would drop the others silently \
         and run the thread elsewhere than asked. Name only CPUs that exist{}",
        usable_note()
    )))
}

/// The online CPUs of this process's cgroup cpuset (every online CPU when the
/// cpuset cannot be read); `None` when the online list cannot be read.
pub(crate) fn usable_cpus() -> Option<CpuSet> {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse_cpu_list(&s))?;
    let Some(cpuset) = cpuset_cpus().and_then(|s| parse_cpu_list(&s)) else {
        return Some(online);
    };
    let mut set = CpuSet::new();
    for c in online.iter().filter(|&c| cpuset.contains(c)) {
        // `c` came from a CpuSet, so it is below the capacity.
        let _ = set.insert(c);
    }
    Some(set)
}

/// The end of a hint that points to the CPUs this process may use:
/// ` (CpuSet::usable: 0-3)`, from the process's cpuset, not from the caller's
/// own (maybe pinned) mask.
pub(crate) fn usable_note() -> String {
    match super::CpuSet::usable() {
        Ok(set) => format!(
            " (CpuSet::usable lists the CPUs this process may use, those online and \
             allowed by its cpuset: {set})"
        ),
        Err(_) => " (CpuSet::usable lists the CPUs this process may use, those online and \
                   allowed by its cpuset)"
            .into(),
    }
}

/// The online CPUs of `asked` missing from `applied`, the mask the kernel reports
/// after applying `asked`: those the thread's cpuset does not allow (offline
/// CPUs are left out: the kernel reports only active ones, and drops offline
/// ones outside the top cpuset).
/// Empty when the online list cannot be read.
pub(crate) fn narrowed(asked: &CpuSet, applied: &CpuSet) -> CpuSet {
    let Some(online) = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse_cpu_list(&s))
    else {
        return CpuSet::new();
    };
    let mut dropped = CpuSet::new();
    for c in asked.iter() {
        if online.contains(c) && !applied.contains(c) {
            // `c` came from a CpuSet, so it is below the capacity.
            let _ = dropped.insert(c);
        }
    }
    dropped
}

impl Default for CpuSet {
    fn default() -> CpuSet {
        CpuSet::new()
    }
}

impl PartialEq for CpuSet {
    fn eq(&self, other: &CpuSet) -> bool {
        self.words() == other.words()
    }
}

impl Eq for CpuSet {}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl fmt::Display for CpuSet {
    /// The `taskset -c` style list, e.g. `0-3,6`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cpus: Vec<usize> = self.iter().collect();
        let mut i = 0;
        let mut first = true;
        while i < cpus.len() {
            let mut j = i;
            while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
                j += 1;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if j > i {
                write!(f, "{}-{}", cpus[i], cpus[j])?;
            } else {
                write!(f, "{}", cpus[i])?;
            }
            i = j + 1;
        }
        Ok(())
    }
}

/// The CPUs of this process's cpuset (`cpuset.cpus.effective` of its cgroup v2,
/// or of the nearest ancestor that has the controller; `cpuset.effective_cpus`
/// of cgroup v1), as the kernel lists them, if readable.
pub(crate) fn cpuset_cpus() -> Option<String> {
    cpuset_cpus_in("/proc/self/cgroup")
}

/// [`cpuset_cpus`] of the task whose `/proc/.../cgroup` file is `cgroup_file`.
pub(crate) fn cpuset_cpus_in(cgroup_file: &str) -> Option<String> {
    let read = |f: &str| {
        std::fs::read_to_string(f)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let cg = std::fs::read_to_string(cgroup_file).ok()?;
    let mut v2 = None;
    for line in cg.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if controllers.split(',').any(|c| c == "cpuset") {
            return read(&format!(
                "/sys/fs/cgroup/{controllers}{path}/cpuset.effective_cpus"
            ))
            .or_else(|| {
                read(&format!(
                    "/sys/fs/cgroup/cpuset{path}/cpuset.effective_cpus"
                ))
            });
        }
        if controllers.is_empty() {
            v2 = Some(path.to_string());
        }
    }
    let path = v2?;
    let mut dir = std::path::Path::new(&path);
    loop {
        let rel = dir.to_string_lossy();
        let rel = rel.trim_end_matches('/');
        if let Some(cpus) = read(&format!("/sys/fs/cgroup{rel}/cpuset.cpus.effective")) {
            return Some(cpus);
        }
        dir = dir.parent()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_ops_and_display() {
        let s = CpuSet::from_cpus([0, 1, 2, 5, 1023]).unwrap();
        assert_eq!(s.count(), 5);
        assert!(s.contains(5) && !s.contains(4));
        assert_eq!(s.to_string(), "0-2,5,1023");
        assert!(CpuSet::from_cpus([1024]).is_err());
        let mut t = s;
        t.remove(5);
        assert_eq!(t.iter().collect::<Vec<_>>(), vec![0, 1, 2, 1023]);
    }

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(
            parse_cpu_list("0-2,5\n"),
            CpuSet::from_cpus([0, 1, 2, 5]).ok()
        );
        assert_eq!(parse_cpu_list("7"), CpuSet::from_cpus([7]).ok());
        assert_eq!(parse_cpu_list("2-1"), None);
        assert_eq!(parse_cpu_list("0-1024"), None);
        assert_eq!(parse_cpu_list(""), None);
    }
}
