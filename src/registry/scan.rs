//! The reader side: [`scan`] and [`cleanup`] of the registry files of a kind.

use std::fs::{File, OpenOptions};
use std::os::fd::AsFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{fence, Ordering};

use crate::{ErrorKind, Result};

use super::layout::*;
use super::map::kind_bytes;
use super::proc::*;

// Reader

/// A consistent copy of one live slot.
#[derive(Debug, Clone)]
pub struct SlotCopy {
    /// The slot index.
    pub index: u32,
    /// The owner tid (0: owned by the process).
    pub tid: i32,
    /// The owner's start time.
    pub thread_start: u64,
    /// The payload bytes.
    pub payload: Vec<u8>,
    /// The owner thread's `/proc/<pid>/task/<tid>/stat` (None for process-owned slots).
    pub task: Option<TaskStat>,
}

/// One process's registry, as read by [`scan`].
#[derive(Debug, Clone)]
pub struct ProcessEntry {
    /// The pid.
    pub pid: i32,
    /// The process start time (clock ticks since boot).
    pub starttime: u64,
    /// The executable (`/proc/<pid>/exe`), or the first word of its command line,
    /// or `"(n/a)"`, as text: each byte of it that is not UTF-8 shows as U+FFFD.
    pub exe: String,
    /// [`exe`](ProcessEntry::exe) as the bytes it is (a path need not be UTF-8).
    pub exe_bytes: Vec<u8>,
    /// The process's `/proc/<pid>/stat`.
    pub stat: TaskStat,
    /// The live slots whose owners are alive.
    pub slots: Vec<SlotCopy>,
}

/// What [`scan`] found.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// Processes with a registry of the kind, by pid.
    pub processes: Vec<ProcessEntry>,
    /// Registries that could not be opened (permissions), were owned by a user
    /// the process does not run as, or were cut short by another process (shorter
    /// than a header, or than the slots their header describes, whether truncated
    /// before or during the read, or extended again with its header still zeroed:
    /// the owner puts its file back at its next claim or mark),
    /// or that belong to a process this reader cannot see (`/proc` with `hidepid`,
    /// or a writer in another pid namespace that still holds its file's lock) or
    /// to a dead process whose file only its user or root may remove.
    pub unreadable: usize,
    /// Registries of live processes that this reader does not understand: another
    /// layout version (a different posixrt release wrote them) or a header whose
    /// fields this reader refuses (magic, kind, pid, start time, slot geometry).
    /// Not a permission problem: root cannot read them either.
    pub incompatible: usize,
    /// Files of dead processes removed during the scan (their registries, and
    /// the temporary files of processes killed while creating one).
    pub removed: usize,
    /// Slots skipped because they changed on every read for [`RETRY_BUDGET`].
    pub busy: usize,
}

#[derive(Clone, Copy)]
pub(crate) struct FileName {
    pub(crate) pid: i32,
    pub(crate) starttime: u64,
}

pub(crate) fn parse_name(kind: &str, name: &[u8]) -> Option<FileName> {
    let name = std::str::from_utf8(name).ok()?;
    let rest = name
        .strip_prefix("posixrt-")?
        .strip_prefix(kind)?
        .strip_prefix('-')?;
    let (pid, start) = rest.split_once('-')?;
    Some(FileName {
        pid: pid.parse().ok()?,
        starttime: start.parse().ok()?,
    })
}

/// The name a registry of `kind` is filled in under before it is published
/// (see `create_tmp`): `.posixrt-<kind>-<pid>-<start>.tmp`, or with a random
/// part, `.posixrt-<kind>-<pid>-<start>.<16 hex digits>.tmp`.
pub(crate) fn parse_tmp_name(kind: &str, name: &[u8]) -> Option<FileName> {
    let name = std::str::from_utf8(name).ok()?;
    let inner = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let base = match inner.split_once('.') {
        Some((base, random))
            if random.len() == 16
                && random
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) =>
        {
            base
        }
        Some(_) => return None,
        None => inner,
    };
    parse_name(kind, base.as_bytes())
}

/// A temporary file younger than this may belong to a create in progress
/// whose process this reader cannot see (another pid namespace sharing
/// `/dev/shm`) and which has not locked it yet: it is left alone.
const TMP_MIN_AGE: std::time::Duration = std::time::Duration::from_secs(60);

/// Removes the temporary file at `path` (named for process `name`) if that
/// process is gone: killed between creating its registry and publishing it.
/// Its creator holds its lock from a moment after creating it; a file
/// still locked, or too recent to be sure, is kept.
fn remove_dead_tmp(path: &Path, name: &FileName) -> bool {
    let old = std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age >= TMP_MIN_AGE);
    old && process_state(name) == Liveness::Dead
        && !owner_holds_lock(path)
        && std::fs::remove_file(path).is_ok()
}

/// Removes registry files of `kind` whose process is gone (and the temporary
/// files of such processes killed while they created one); returns how many.
pub fn cleanup(kind: &str) -> Result<usize> {
    let mut removed = 0;
    let tmp = for_each_file(kind, |path, name| {
        if process_state(name) == Liveness::Dead
            && !owner_holds_lock(path)
            && std::fs::remove_file(path).is_ok()
        {
            removed += 1;
        }
    })?;
    Ok(removed + tmp)
}

#[derive(PartialEq)]
pub(crate) enum Liveness {
    Alive(TaskStat),
    Dead,
    Unknown,
}

pub(crate) fn process_state(name: &FileName) -> Liveness {
    match read_stat(&format!("/proc/{}/stat", name.pid)) {
        Ok(st) if st.starttime == name.starttime && !super::proc::process_ended(name.pid, &st) => {
            Liveness::Alive(st)
        }
        Ok(_) => Liveness::Dead,
        Err(e) if e.kind() == ErrorKind::NotFound => Liveness::Dead,
        Err(_) => Liveness::Unknown,
    }
}

/// Whether a live owner still holds the file's exclusive lock. The name's pid and
/// start time are those of the writer's pid namespace: a writer in another one
/// (a container sharing this /dev/shm) looks dead from here, or like some other
/// process, while its lock says it is alive. False when the file cannot be
/// opened (the removal that follows then fails for another user's file too).
pub(crate) fn owner_holds_lock(path: &Path) -> bool {
    let Ok(file) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    else {
        return false;
    };
    rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockShared)
        == Err(rustix::io::Errno::WOULDBLOCK)
}

/// Calls `f` for each registry file of `kind`, and removes on the way the
/// temporary files that dead processes left (see [`remove_dead_tmp`]);
/// returns how many of those it removed.
pub(crate) fn for_each_file(kind: &str, mut f: impl FnMut(&Path, &FileName)) -> Result<usize> {
    let dir = match std::fs::read_dir(DIR) {
        Ok(d) => d,
        // No /dev/shm: nobody can have a registry.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => {
            return Err(io_error("opendir", &e).with_message(format!("listing {DIR}")));
        }
    };
    let mut removed = 0;
    for ent in dir.flatten() {
        let name = ent.file_name();
        if let Some(parsed) = parse_name(kind, name.as_bytes()) {
            f(&ent.path(), &parsed);
        } else if let Some(parsed) = parse_tmp_name(kind, name.as_bytes()) {
            if remove_dead_tmp(&ent.path(), &parsed) {
                removed += 1;
            }
        }
    }
    Ok(removed)
}

/// Lists every process's registry of `kind` (or only `pid`'s), with a consistent
/// copy of each live slot whose owner is alive, and removes files of dead
/// processes on the way. Processes are sorted by pid, slots by index.
pub fn scan(kind: &str, pid: Option<i32>) -> Result<Scan> {
    let kind_b = kind_bytes(kind)?;
    let mut out = Scan::default();
    let mut found = Vec::new();
    out.removed += for_each_file(kind, |path, name| {
        if pid.map_or(true, |p| p == name.pid) {
            found.push((path.to_path_buf(), *name));
        }
    })?;
    for (path, name) in found {
        match process_state(&name) {
            // A writer in another pid namespace: alive, but not one we can name.
            Liveness::Dead if owner_holds_lock(&path) => out.unreadable += 1,
            Liveness::Dead => match std::fs::remove_file(&path) {
                Ok(()) => out.removed += 1,
                // Another user's file in the sticky /dev/shm: either its process
                // is hidden from us (/proc mounted with hidepid) or it is dead and
                // only its user or root may remove it. Either way: skipped.
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => out.unreadable += 1,
                Err(_) => {} // removed meanwhile by another reader
            },
            Liveness::Unknown => out.unreadable += 1,
            Liveness::Alive(stat) => match read_file(&path, &kind_b, &name) {
                FileRead::Stale(file) => {
                    if remove_stale(&path, &file) {
                        out.removed += 1;
                    }
                }
                FileRead::Ok(slots, busy) => {
                    out.busy += busy;
                    let exe_bytes = process_exe(name.pid);
                    out.processes.push(ProcessEntry {
                        pid: name.pid,
                        starttime: name.starttime,
                        exe: String::from_utf8_lossy(&exe_bytes).into_owned(),
                        exe_bytes,
                        stat,
                        slots,
                    });
                }
                FileRead::Unreadable => out.unreadable += 1,
                FileRead::Incompatible => out.incompatible += 1,
                FileRead::Gone => {}
            },
        }
    }
    out.processes.sort_by_key(|p| p.pid);
    Ok(out)
}

/// The executable of `pid` as bytes (see [`ProcessEntry::exe`]).
pub(crate) fn process_exe(pid: i32) -> Vec<u8> {
    if let Ok(p) = std::fs::read_link(format!("/proc/{pid}/exe")) {
        return p.into_os_string().into_vec();
    }
    if let Ok(c) = std::fs::read(format!("/proc/{pid}/cmdline")) {
        if let Some(first) = c.split(|&b| b == 0).next().filter(|s| !s.is_empty()) {
            return first.to_vec();
        }
    }
    b"(n/a)".to_vec()
}

pub(crate) enum FileRead {
    Ok(Vec<SlotCopy>, usize),
    /// The owner no longer holds its lock: it exec'd (same pid and start time).
    /// The file as opened (and share-locked) by the reader.
    Stale(File),
    Unreadable,
    /// Another layout version, or a malformed header.
    Incompatible,
    /// The file went away since the directory was listed: its process exited
    /// (and removed it) while the scan ran. Nothing to show, and not a
    /// permission problem.
    Gone,
}

/// Opens one file, checks that its owner still holds it, reads (`pread`),
/// validates it, and copies its live slots.
pub(crate) fn read_file(path: &Path, kind: &[u8; 16], name: &FileName) -> FileRead {
    // O_NONBLOCK: /dev/shm is world-writable, and opening a FIFO planted under a
    // registry name would otherwise block the reader (tfp) forever. Only regular
    // files are read.
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return FileRead::Gone,
        Err(_) => return FileRead::Unreadable,
    };
    // The file must belong to root or to one of the process's user ids: another
    // user could plant a file under a live process's name (to show made-up marks
    // for it, or to make the reader walk a huge fake registry).
    match rustix::fs::fstat(&file) {
        Ok(st)
            if st.st_mode & libc::S_IFMT == libc::S_IFREG
                && (st.st_uid == 0
                    || process_uids(name.pid).is_some_and(|u| u.contains(&st.st_uid))) => {}
        _ => return FileRead::Unreadable,
    }
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockShared) {
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => {} // the owner holds it: alive
        Ok(()) => return FileRead::Stale(file),
        Err(_) => return FileRead::Unreadable,
    }
    read_and_copy(&file, kind, name)
}

/// Removes the stale registry file at `path`, which the reader opened as
/// `file`, if `path` still names that file; true if removed.
///
/// Between the open and the removal, the process's new program image (same
/// pid and start time, after an `exec`) may have published its own registry
/// of the kind at the same path (a rename over the stale file): removing
/// whatever the path names then would remove the live registry, and hide its
/// slots from every reader for the process's life. The check leaves a window
/// of two adjacent system calls (the `stat` and the `unlink`), not the whole
/// read of the file.
pub(crate) fn remove_stale(path: &Path, file: &File) -> bool {
    let same = match (rustix::fs::lstat(path), rustix::fs::fstat(file.as_fd())) {
        (Ok(now), Ok(opened)) => (now.st_dev, now.st_ino) == (opened.st_dev, opened.st_ino),
        _ => false,
    };
    same && std::fs::remove_file(path).is_ok()
}

/// The real, effective, saved and filesystem user ids of a process
/// (`/proc/<pid>/status`, line `Uid:`).
pub(crate) fn process_uids(pid: i32) -> Option<[u32; 4]> {
    // Lossy: the `Name:` line is the kernel name, which need not be UTF-8.
    let text = crate::sys::proc::read_text(&format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    let mut ids = line.split_whitespace().map(|w| w.parse::<u32>().ok());
    Some([ids.next()??, ids.next()??, ids.next()??, ids.next()??])
}

/// The reader's view of a registry file: positioned reads (`pread`), not a
/// mapping. The file's user may shrink it at any time (`ftruncate`; any user's
/// file when root reads), and a load from a mapped page past the new end raises
/// `SIGBUS`, which would kill the reader (`tfp` run by root, or any program
/// calling [`scan`]); a read past the end just comes back short.
pub(crate) struct Source<'f>(&'f File);

impl Source<'_> {
    /// Fills `out` from offset `off`; None if the file is shorter now.
    fn bytes(&self, off: usize, out: &mut [u8]) -> Option<()> {
        use std::os::unix::fs::FileExt;
        self.0.read_exact_at(out, off as u64).ok()
    }

    fn u32(&self, off: usize) -> Option<u32> {
        let mut b = [0u8; 4];
        self.bytes(off, &mut b)?;
        Some(u32::from_ne_bytes(b))
    }
}

pub(crate) fn read_and_copy(file: &File, kind: &[u8; 16], name: &FileName) -> FileRead {
    let Some(len) = rustix::fs::fstat(file.as_fd())
        .ok()
        .and_then(|st| usize::try_from(st.st_size).ok())
    else {
        return FileRead::Unreadable;
    };
    // Shorter than any registry: cut short by another process (a file is
    // published whole). Unreadable, as when it shrinks during the reads
    // below: the count must not depend on when the truncation came, and no
    // release of the reader reads it better (it is not another layout).
    if len < HEADER_SIZE {
        return FileRead::Unreadable;
    }
    let src = Source(file);
    let mut header = [0u8; HEADER_SIZE];
    if src.bytes(0, &mut header).is_none() {
        return FileRead::Unreadable; // shrunk meanwhile
    }
    let get =
        |o: usize| u32::from_ne_bytes([header[o], header[o + 1], header[o + 2], header[o + 3]]);
    let mut start = [0u8; 8];
    start.copy_from_slice(&header[H_START..H_START + 8]);
    // A zeroed magic: the file was cut short and extended again (its owner's
    // `SIGBUS` handler does so at the first touch after a truncation) and its
    // owner has not yet written the header again. Cut short, as above: no
    // layout has a zero magic.
    if header[..8] == [0; 8] {
        return FileRead::Unreadable;
    }
    if header[..8] != MAGIC
        || get(H_VERSION) != VERSION
        || get(H_HEADER_SIZE) as usize != HEADER_SIZE
        || &header[H_KIND..H_KIND + 16] != kind
        || get(H_PID) as i32 != name.pid
        || u64::from_ne_bytes(start) != name.starttime
    {
        return FileRead::Incompatible;
    }
    let slot_size = get(H_SLOT_SIZE) as usize;
    let slot_count = get(H_SLOT_COUNT);
    let payload = get(H_PAYLOAD) as usize;
    let Some(need) = (slot_count as usize)
        .checked_mul(slot_size)
        .and_then(|v| v.checked_add(HEADER_SIZE))
    else {
        return FileRead::Incompatible;
    };
    if slot_size % 64 != 0
        || slot_size > MAX_SLOT_SIZE
        || slot_count > MAX_SLOT_COUNT
        || payload % 8 != 0
        || SLOT_HEADER_SIZE + payload > slot_size
    {
        return FileRead::Incompatible;
    }
    if need > len {
        return FileRead::Unreadable; // cut short below its slots (see above)
    }
    // Each read is a separate system call, ordered by acquire fences, so a read
    // issued after the fence sees at least what the one before it saw: the
    // writer's release stores pair with these as with loads from a mapping.
    let hw = get(H_HIGH_WATER).min(slot_count);
    fence(Ordering::Acquire);
    let mut slots = Vec::new();
    let mut busy = 0;
    for i in 0..hw {
        let off = HEADER_SIZE + i as usize * slot_size;
        let Some(copied) = copy_slot(&src, off, payload) else {
            return FileRead::Unreadable; // shrunk meanwhile
        };
        match copied {
            Copied::Live(tid, start, bytes) => {
                let task = if tid == 0 {
                    None
                } else {
                    match read_stat(&format!("/proc/{}/task/{tid}/stat", name.pid)) {
                        Ok(st) if st.starttime == start && !st.is_dead() => Some(st),
                        _ => continue, // the owner thread is gone
                    }
                };
                slots.push(SlotCopy {
                    index: i,
                    tid,
                    thread_start: start,
                    payload: bytes,
                    task,
                });
            }
            Copied::Free => {}
            Copied::Busy => busy += 1,
        }
    }
    FileRead::Ok(slots, busy)
}

pub(crate) enum Copied {
    Live(i32, u64, Vec<u8>),
    Free,
    Busy,
}

/// A consistent copy of the slot at `off`; None if the file shrank meanwhile.
pub(crate) fn copy_slot(src: &Source<'_>, off: usize, payload: usize) -> Option<Copied> {
    // The slot after its counter: state, tid, reserved, start time, reserved, payload.
    let mut body = vec![0u8; SLOT_HEADER_SIZE - S_STATE + payload];
    let word = |b: &[u8], at: usize| {
        let at = at - S_STATE;
        u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
    };
    let mut started: Option<std::time::Instant> = None;
    for attempt in 0..MAX_RETRIES {
        if attempt > 0 && attempt % 64 == 0 {
            // A writer rewriting the slot in a tight loop can starve the copy; give
            // it the CPU now and then, and give up after a time budget.
            let t0 = *started.get_or_insert_with(std::time::Instant::now);
            if t0.elapsed() > RETRY_BUDGET {
                break;
            }
            std::thread::yield_now();
        }
        let s1 = src.u32(off + S_SEQ)?;
        fence(Ordering::Acquire);
        if s1 & 1 == 1 {
            std::hint::spin_loop();
            continue;
        }
        src.bytes(off + S_STATE, &mut body)?;
        fence(Ordering::Acquire);
        if src.u32(off + S_SEQ)? != s1 {
            continue;
        }
        if word(&body, S_STATE) != STATE_LIVE {
            return Some(Copied::Free);
        }
        let tid = word(&body, S_TID) as i32;
        let at = S_TSTART - S_STATE;
        let mut start = [0u8; 8];
        start.copy_from_slice(&body[at..at + 8]);
        let start = u64::from_ne_bytes(start);
        let bytes = body[SLOT_HEADER_SIZE - S_STATE..].to_vec();
        return Some(Copied::Live(tid, start, bytes));
    }
    Some(Copied::Busy)
}
