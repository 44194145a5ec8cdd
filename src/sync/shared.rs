//! The tracked objects in shared memory, for other processes: a publisher that
//! copies every known object's record into this process's `"sync"` registry
//! ([`crate::registry`], the seqlock slot registry also used by `mark`), and the
//! reader used by the `rtstat` tool.
//!
//! The lock paths never touch shared memory: they write the in-process records (see
//! [`set_tracking`](super::set_tracking)). While tracking is on, a publisher thread
//! copies each record (a consistent copy, under the record's sequence counter) into
//! a registry slot every [`PUBLISH_PERIOD`], and [`publish`] does it at once. So a
//! reader in another process sees a consistent snapshot of each object that is at
//! most one period old. The file is `/dev/shm/posixrt-sync-<pid>-<starttime>`, mode
//! 0600, removed at exit.
//!
//! `fork`: the child keeps the tracking level and its copies of the records, but
//! neither the publisher thread nor the right to write the parent's registry. It
//! publishes into a registry of its own, made by its first [`publish`]; its
//! [`set_tracking`](super::set_tracking) starts its own publisher, as `mark` makes
//! a child's own registry at its first mark.
//!
//! Payload of a slot (64-bit words): the record's words, except word 0, which
//! holds the picoseconds per timing tick (so the reader converts times). Words
//! are only added at the end: a reader reads those a slot lacks as 0 and skips
//! those it does not know, so readers and writers of releases that differ in
//! that only read each other's registries.
//!
//! # Tracking switched off
//!
//! Publishing stops while tracking is off, and the registry keeps what was
//! published last: owners and waiters that may have changed since, objects
//! dropped since. So that no reader takes that for the current state, one
//! more slot, the *status*, says whether tracking was on at the last publish,
//! when it was switched off and when that publish was ([`PublishStatus`],
//! which `rtstat` shows first). Switching tracking off publishes once more
//! (the objects as they were then), the status saying "off" written before
//! them; a publish with tracking on writes "on" after the objects. The
//! status's word 1 (an object's kind and live bit) is 0, so a reader that
//! does not know it skips it as a free record; word 2 holds the bytes
//! `SYNCSTAT`, word 3 the level, word 4 when tracking went off and
//! word 5 when it was published (nanoseconds since the Unix epoch; 0: not
//! known).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use super::track::level::level;
use super::track::level::ps_per_tick;
use super::track::level::Tracking;
use super::track::record::{Record, WORDS};
use super::track::slab::all_records;
use super::track::snapshot::{copy_live, snapshot_words, Snapshot};
use crate::registry::{self, Registry, SlotWriter};
use crate::sys::pilock::{PiLocked, RawPiLock};
use crate::{Error, Result};

/// The registry kind of the sync objects (`/dev/shm/posixrt-sync-*`).
pub const REGISTRY_KIND: &str = "sync";
/// How often the publisher refreshes the shared copies while tracking is on.
pub const PUBLISH_PERIOD: Duration = Duration::from_millis(50);
/// Objects a registry holds (and one slot more: the status).
const SLOTS: u32 = 1024;

/// Word 2 of the status slot (see the [module docs](self)).
const STATUS_MAGIC: u64 = u64::from_ne_bytes(*b"SYNCSTAT");
const ST_MAGIC: usize = 2;
const ST_LEVEL: usize = 3;
const ST_OFF_SINCE: usize = 4;
const ST_PUBLISHED: usize = 5;
/// How many tracked objects the last publish left out (the registry was full).
const ST_UNPUBLISHED: usize = 6;

/// When tracking was last switched from on to off, in nanoseconds since the
/// Unix epoch (0: never).
static OFF_SINCE: AtomicU64 = AtomicU64::new(0);

/// This process's registry, or why it could not be made, once the first
/// [`publish`] tried (kept for the process's life). Not a `OnceLock`: a fork
/// while another thread makes the registry would leave the child waiting for
/// that thread, which does not exist there; a forked child forgets this lock's
/// holder and the parent's registry (see [`after_fork_in_child`]), and makes
/// its own at its first [`publish`].
static REGISTRY: PiLocked<Option<std::result::Result<&'static Registry, Error>>> =
    PiLocked::const_new(<RawPiLock as lock_api::RawMutex>::INIT, None);
/// Whether [`after_fork_in_child`] is registered (not a `Once`, for the same
/// reason).
static FORK_HOOKED: AtomicBool = AtomicBool::new(false);
/// The slots this process writes: record address -> its slot, and the
/// status slot.
struct Slots {
    objects: Vec<(usize, SlotWriter<'static>)>,
    status: Option<SlotWriter<'static>>,
}

impl Slots {
    const fn new() -> Slots {
        Slots {
            objects: Vec::new(),
            status: None,
        }
    }
}

/// The slots written. Taken by the publisher thread, by [`publish`] and by
/// [`tracking_stopped`] only (never by a sync object's operation);
/// priority-inheriting, so a real-time caller of `publish` boosts the
/// publisher instead of waiting behind it.
static SLOTS_OF: PiLocked<Slots> = PiLocked::new(Slots::new());
/// Whether this process's publisher thread was started. Cleared in a forked
/// child, which does not have the thread (see [`after_fork_in_child`]).
static STARTED: AtomicBool = AtomicBool::new(false);

/// Registers [`after_fork_in_child`], before this module's locks are first
/// taken and before [`STARTED`] is first set.
fn hook_fork() {
    if !FORK_HOOKED.load(Ordering::Acquire) {
        crate::sys::fork::on_child(after_fork_in_child);
        FORK_HOOKED.store(true, Ordering::Release);
    }
}

fn registry() -> Result<&'static Registry> {
    // Before the lock is first taken: a child forked while a thread held it
    // forgets the holder.
    hook_fork();
    REGISTRY
        .lock()
        .get_or_insert_with(|| {
            let r = Registry::create(REGISTRY_KIND, WORDS * 8, SLOTS + 1)?;
            // Kept for the process's life, as in a `static`.
            Ok(&*Box::leak(Box::new(r)))
        })
        .clone()
}

/// In a forked child, which has one thread: forgets what belongs to the parent.
///
/// - The holders of [`REGISTRY`] and [`SLOTS_OF`]: threads of the parent (one
///   making the registry, or the publisher), absent here.
/// - The parent's registry and its slot writers: writing them would change the
///   parent's published objects (the mapping is shared). They are leaked, not
///   dropped: releasing a slot writes it. The child's first [`publish`] makes the
///   child's own registry.
/// - [`STARTED`]: the publisher thread stayed in the parent, so the child's
///   [`set_tracking`](super::set_tracking) starts the child's own. (Left set, no
///   publisher ran in the child and `rtstat CHILD` found no registry.)
///
/// Async-signal-safe: stores only (`Slots::new` does not allocate).
fn after_fork_in_child() {
    // SAFETY: the child has one thread, which holds nothing; nothing reads these
    // values before the child goes on, and the old ones are overwritten without
    // being read or dropped.
    unsafe {
        REGISTRY.raw().reset_in_child();
        std::ptr::write(REGISTRY.data_ptr(), None);
        SLOTS_OF.raw().reset_in_child();
        std::ptr::write(SLOTS_OF.data_ptr(), Slots::new());
    }
    STARTED.store(false, Ordering::Relaxed);
}

/// Nanoseconds since the Unix epoch now (0 before it: a clock set so far back
/// that "when" means nothing).
fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Tracking was just switched from on to off: notes when, and, in a process
/// that publishes, publishes once more (the objects as they are now), with
/// the status saying that tracking is off since then (see the [module
/// docs](self)). A process that never published makes no registry here.
pub(crate) fn tracking_stopped() {
    OFF_SINCE.store(now_ns().max(1), Ordering::Relaxed);
    // Before the lock is first taken (see `registry`).
    hook_fork();
    let published = matches!(*REGISTRY.lock(), Some(Ok(_)));
    if published {
        let _ = publish();
    }
}

/// Writes the status slot (see the [module docs](self)) with the tracking
/// `level` the publish read.
fn write_status(slots: &mut Slots, level: u8, unpublished: u64) {
    let off_since = if level == 0 {
        OFF_SINCE.load(Ordering::Relaxed)
    } else {
        0
    };
    let ps = ps_per_tick();
    if let Some(w) = slots.status.as_mut() {
        w.write(|p| {
            p.store_u64(0, ps);
            p.store_u64(ST_MAGIC, STATUS_MAGIC);
            p.store_u64(ST_LEVEL, u64::from(level));
            p.store_u64(ST_OFF_SINCE, off_since);
            p.store_u64(ST_PUBLISHED, now_ns());
            p.store_u64(ST_UNPUBLISHED, unpublished);
        });
    }
}

/// Starts the publisher thread (once), when tracking is switched on.
pub(crate) fn start_publisher() {
    // Before the flag is first set: a forked child clears it.
    hook_fork();
    if STARTED.swap(true, Ordering::AcqRel) {
        return;
    }
    let _ = std::thread::Builder::new()
        .name("posixrt-syncpub".into())
        .spawn(|| loop {
            std::thread::sleep(PUBLISH_PERIOD);
            if level() != 0 {
                let _ = publish();
            }
        });
}

/// Copies every known object's record into the shared registry now, and frees the
/// slots of objects that were dropped. Returns how many objects were published.
///
/// In a child created by `fork`, the first `publish` makes the child's own
/// registry (`/dev/shm/posixrt-sync-<child pid>-...`); the parent's stays the
/// parent's, untouched. The publisher thread does not survive `fork`: the
/// child's [`set_tracking`](super::set_tracking) (the level itself is inherited)
/// starts the child's own, so that `rtstat CHILD` lists the child's objects.
///
/// Errors: the registry could
/// not be created (e.g. no `/dev/shm`; the hint says how to mount it) or is full ([`OutOfResources`](crate::ErrorKind::OutOfResources),
/// after publishing every object that has a slot; slots of dropped objects are freed
/// first, so new objects get in as old ones go).
pub fn publish() -> Result<usize> {
    let reg = registry()?;
    if reg.pid() != std::process::id() as i32 {
        // Defensive: a child forked without the fork handlers (a raw `clone`)
        // still holds the parent's registry, and writing would overwrite the
        // parent's published objects with the child's.
        return Err(Error::new(
            crate::ErrorKind::Unsupported,
            "publish",
            "a forked child does not publish its sync objects (the registry belongs to the parent)",
        )
        .with_hint("in-process introspection (objects(), snapshot()) works in the child; exec a posixrt program to publish from a new process"));
    }
    let mut slots = SLOTS_OF.lock();
    // A file truncated by another process is put back before any slot is
    // written (or released): a store past its new end would raise SIGBUS.
    // The slots held then are hidden from readers until released: they are
    // given back, and claimed again below.
    if reg.check_size()? {
        for (_, w) in slots.objects.drain(..) {
            w.release();
        }
        if let Some(w) = slots.status.take() {
            w.release();
        }
    }
    // The status's slot is claimed before any object's, so that a full
    // registry still says whether what it shows is current.
    if slots.status.is_none() {
        slots.status = reg.claim(0, 0).ok();
    }
    // Tracking off: said before the objects are written, so that a reader
    // never takes them for current (on: after them, for the same reason).
    let level = level();
    if level == 0 {
        write_status(&mut slots, level, 0);
    }
    let records = all_records();
    let ps = ps_per_tick();
    let copies: Vec<(usize, [u64; WORDS])> = records
        .into_iter()
        .filter_map(|r| Some((r as *const Record as usize, copy_live(r)?)))
        .collect();
    // Free the slots of records that are no longer live first, so that a full
    // registry makes room for new objects as soon as old ones are dropped.
    let objects = &mut slots.objects;
    let mut i = 0;
    while i < objects.len() {
        if copies.iter().any(|(k, _)| *k == objects[i].0) {
            i += 1;
        } else {
            let (_, w) = objects.swap_remove(i);
            w.release();
        }
    }
    let (mut n, mut skipped, mut err) = (0, 0, None);
    for (key, words) in &copies {
        let pos = match objects.iter().position(|(k, _)| k == key) {
            Some(p) => p,
            None => match reg.claim(0, 0) {
                Ok(w) => {
                    objects.push((*key, w));
                    objects.len() - 1
                }
                Err(e) => {
                    // Full: the other objects are still published.
                    skipped += 1;
                    err.get_or_insert(e);
                    continue;
                }
            },
        };
        objects[pos].1.write(|p| {
            p.store_u64(0, ps);
            for (i, w) in words.iter().enumerate().skip(1) {
                p.store_u64(i, *w);
            }
        });
        n += 1;
    }
    // (Off: said again, now with what did not fit.)
    write_status(&mut slots, level, skipped);
    match err {
        None => Ok(n),
        Some(e) => Err(e.with_message(format!(
            "{skipped} tracked objects not published ({n} were): the registry holds {SLOTS}"
        ))),
    }
}

/// What a process said of its tracking when it last published (see the
/// [module docs](self)): whether the objects it published are its current
/// state, or the last state tracking recorded before it was switched off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublishStatus {
    /// The tracking level at the last publish.
    pub tracking: Tracking,
    /// When tracking was switched off, while it is off (`None` while it is
    /// on, or when the process published with tracking never on).
    pub off_since: Option<SystemTime>,
    /// When the process last published (`None` if not known).
    pub published_at: Option<SystemTime>,
    /// How many tracked objects its last publish left out because the
    /// registry was full (it holds 1024): a listing of the published objects
    /// is then not all of them (`sync::objects()` in the process has them all).
    pub unpublished: usize,
}

impl PublishStatus {
    /// Whether the objects published are not the current state: tracking is
    /// off, so owners, waiters and counts may have changed since, and objects
    /// dropped since may still be listed.
    pub fn is_stale(&self) -> bool {
        self.tracking == Tracking::Off
    }

    /// The status in a slot's words, if they are a status slot's.
    fn from_words(w: &[u64; WORDS]) -> Option<PublishStatus> {
        if w[1] != 0 || w[ST_MAGIC] != STATUS_MAGIC {
            return None;
        }
        let at = |ns: u64| (ns != 0).then(|| SystemTime::UNIX_EPOCH + Duration::from_nanos(ns));
        Some(PublishStatus {
            tracking: match w[ST_LEVEL] {
                0 => Tracking::Off,
                1 => Tracking::Counts,
                _ => Tracking::Timing,
            },
            off_since: at(w[ST_OFF_SINCE]),
            published_at: at(w[ST_PUBLISHED]),
            unpublished: w[ST_UNPUBLISHED] as usize,
        })
    }
}

/// The tracked objects another posixrt process `pid` has published (what `rtstat`
/// shows), as consistent snapshots. They may be stale: see
/// [`read_process_with_status`].
///
/// Errors: [`NotFound`](crate::ErrorKind::NotFound) if there is no such process, or
/// it has no sync registry (not a posixrt process, or tracking was never switched on
/// there); [`PermissionDenied`](crate::ErrorKind::PermissionDenied) if its registry
/// exists but this user may not read it, or another process cut the file short
/// (its owner puts it back at its next publish; for root, the message says so); [`Unsupported`](crate::ErrorKind::Unsupported)
/// if it has another layout version (another posixrt release wrote it); [`InvalidInput`](crate::ErrorKind::InvalidInput)
/// for a pid above `i32::MAX`.
pub fn read_process(pid: u32) -> Result<Vec<Snapshot>> {
    read_process_with_status(pid).map(|(objects, _)| objects)
}

/// [`read_process`], with what the process said of its tracking when it
/// last published: `None` from a posixrt release that did not say it.
/// While its tracking is off ([`PublishStatus::is_stale`]), the objects are
/// the last state tracking recorded, not the current one.
///
/// # Errors
/// Those of [`read_process`].
pub fn read_process_with_status(pid: u32) -> Result<(Vec<Snapshot>, Option<PublishStatus>)> {
    let pid_i = i32::try_from(pid).map_err(|_| {
        Error::invalid("rtstat", format!("{pid} is not a valid process id"))
            .with_hint("pass the pid of a running process (see `pgrep NAME`)")
    })?;
    let scan = registry::scan(REGISTRY_KIND, Some(pid_i))?;
    let unreadable = scan.unreadable;
    let Some(p) = scan.processes.into_iter().find(|p| p.pid == pid_i) else {
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            return Err(Error::new(
                crate::ErrorKind::NotFound,
                "rtstat",
                format!("no process with pid {pid}"),
            )
            .with_hint("check the pid (`pgrep NAME`); the process may have exited"));
        }
        if scan.incompatible > 0 {
            return Err(Error::new(
                crate::ErrorKind::Unsupported,
                "rtstat",
                format!(
                    "the sync registry of process {pid} has a layout this reader does not know (version {} expected)",
                    registry::VERSION
                ),
            )
            .with_hint("read it with the rtstat of the posixrt release the process uses"));
        }
        if unreadable > 0 {
            // (A scan counts a file cut short as unreadable too: root reads
            // any file, so for root that is the cause.)
            let root = rustix::process::geteuid().is_root();
            let cut = "the file was cut short (truncated by someone): its owner puts it back at its next publish";
            let (what, hint) = if root {
                (
                    format!("the sync registry of process {pid} was cut short"),
                    cut.to_string(),
                )
            } else {
                (
                    format!("the sync registry of process {pid} is not readable by this user, or was cut short"),
                    format!("the registry file is mode 0600: run rtstat as the process's user or as root; or {cut}"),
                )
            };
            return Err(
                Error::new(crate::ErrorKind::PermissionDenied, "rtstat", what).with_hint(hint),
            );
        }
        return Err(Error::new(
            crate::ErrorKind::NotFound,
            "rtstat",
            format!("process {pid} has no posixrt sync registry"),
        )
        .with_hint("the process must use posixrt::sync with set_tracking(Tracking::Counts or Timing) on, and you need to be root or its user"));
    };
    Ok(snapshots_of(pid, p))
}

/// What [`read_all`] found: every process whose sync registry it read, by
/// pid, and the registries it skipped (counted as
/// [`registry::scan`] counts them, one for each file).
#[derive(Debug, Clone, Default)]
pub struct Published {
    /// Each process's pid and its objects, by pid.
    pub processes: Vec<(u32, Vec<Snapshot>)>,
    /// What each process of [`processes`](Self::processes) said of its
    /// tracking, by pid (those that said it: see [`read_process_with_status`]).
    pub statuses: Vec<(u32, PublishStatus)>,
    /// Registries not readable by this user, or cut short by another process
    /// (see [`registry::Scan::unreadable`]).
    pub unreadable: usize,
    /// Registries of another layout version (another posixrt release).
    pub incompatible: usize,
}

/// The tracked objects every posixrt process on the machine has published
/// (what `rtstat` without a pid shows), reading each registry file once.
///
/// Every file is counted: a process with more than one file under its pid (a
/// writer in another pid namespace sharing `/dev/shm` with the same pid, or
/// another user's file left by an earlier process of that pid) is listed
/// once, with its own registry, and the other files are counted as skipped.
///
/// # Errors
/// Those of [`registry::scan`] (listing `/dev/shm`).
pub fn read_all() -> Result<Published> {
    let scan = registry::scan(REGISTRY_KIND, None)?;
    let mut all = Published {
        unreadable: scan.unreadable,
        incompatible: scan.incompatible,
        ..Published::default()
    };
    for p in scan.processes {
        let Ok(pid) = u32::try_from(p.pid) else {
            continue;
        };
        let (objects, status) = snapshots_of(pid, p);
        all.processes.push((pid, objects));
        all.statuses.extend(status.map(|s| (pid, s)));
    }
    Ok(all)
}

impl Published {
    /// What process `pid` said of its tracking, if it is listed and said it.
    pub fn status(&self, pid: u32) -> Option<PublishStatus> {
        self.statuses
            .iter()
            .find_map(|&(p, s)| (p == pid).then_some(s))
    }
}

/// The objects in the live slots of `p`, the registry of process `pid`, and
/// its status slot's status.
fn snapshots_of(pid: u32, p: registry::ProcessEntry) -> (Vec<Snapshot>, Option<PublishStatus>) {
    let mut out = Vec::new();
    let mut status = None;
    for s in p.slots {
        let mut words = [0u64; WORDS];
        for (i, w) in words.iter_mut().enumerate() {
            let mut b = [0u8; 8];
            if let Some(src) = s.payload.get(i * 8..i * 8 + 8) {
                b.copy_from_slice(src);
            }
            *w = u64::from_ne_bytes(b);
        }
        let ps = words[0];
        if let Some(mut snap) = snapshot_words(&words, ps) {
            snap.info.owner_pid = snap.info.owner.map(|_| pid);
            out.push(snap);
        } else if let Some(st) = PublishStatus::from_words(&words) {
            status = Some(st);
        }
    }
    (out, status)
}
