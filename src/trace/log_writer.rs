//! The log writer: queues records, applies the log full policy (APPEND,
//! UNTIL_FULL, LOOP) and writes the file in large sequential writes. Owned by the
//! flusher (and `shutdown`).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};

use super::attr::{LogFullPolicy, TraceAttr};
use super::event::Event;
use super::ids::{self, EventId};
use super::log::{
    attr_record, encode_compact, encode_event, file_header, frame, status_record, type_record,
    LogStatus, OwnEvent, COMPACT_RECORD_FIXED, EVENT_RECORD_FIXED, K_END,
};
use super::log_block::{BlockWriter, BLOCK_EVENT_MAX};

/// Writes a log, applying the log full policy. Owned by the flusher.
pub(crate) struct LogWriter {
    file: File,
    policy: LogFullPolicy,
    size: u64,
    preamble: Vec<u8>,
    types_seen: Vec<bool>,
    names_gen: usize,
    /// Event records kept in memory for LOOP (to rewrite the newest ones): their
    /// bytes back to back from `kept_start`, and each one's length, oldest first.
    kept: Vec<u8>,
    kept_start: usize,
    kept_lens: VecDeque<u32>,
    kept_bytes: u64,
    event_bytes: u64,
    pending: Vec<u8>,
    /// APPEND and UNTIL_FULL: the event block being filled at the end of
    /// `pending`.
    block: BlockWriter,
    /// LOOP: the file holds events older than `kept` (compact it when it grows).
    rewrite: bool,
    /// A rewrite from the file's start failed part-way (a `clear` on a file
    /// system that filled up): past the cut the file holds the old records,
    /// and the file position is in their middle. The next commit rewrites
    /// the file whole (preamble, then the events since) before anything is
    /// appended; until then names go to the preamble only.
    redo: bool,
    /// The file's open file description has `O_APPEND` (the log's own could
    /// not be opened, see [`LogWriter::new`]): every write goes to the end.
    append: bool,
    /// The file can be rewritten from its start (not a pipe or socket).
    seekable: bool,
    /// Bytes written to the file so far.
    file_len: u64,
    pub(crate) full: bool,
    pub(crate) lost: u64,
    pub(crate) overrun: bool,
    pid: u32,
    /// A write that failed inside a flush ([`commit_over`](Self::commit_over)),
    /// reported by the flush's final [`commit`](Self::commit).
    failed: Option<io::Error>,
}

/// What a log's file is, for the errors of [`LogWriter::new`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    /// A pipe, FIFO or socket.
    Stream,
    /// A regular file of a kernel file system (proc, sys...), named.
    Kernel(&'static str),
    /// Anything else (a regular file, a device).
    Other,
}

impl Target {
    fn of(f: &File) -> Target {
        use std::os::unix::fs::FileTypeExt;
        let Ok(t) = f.metadata().map(|m| m.file_type()) else {
            return Target::Other;
        };
        if t.is_fifo() || t.is_socket() {
            return Target::Stream;
        }
        if !t.is_file() {
            return Target::Other;
        }
        let Ok(fs) = rustix::fs::fstatfs(f) else {
            return Target::Other;
        };
        // `f_type` and the magics differ in type between targets; the
        // magics fit in 32 bits.
        let magic = fs.f_type as u32;
        [
            (libc::PROC_SUPER_MAGIC as u32, "proc"),
            (libc::SYSFS_MAGIC as u32, "sysfs"),
            (libc::DEBUGFS_MAGIC as u32, "debugfs"),
            (libc::TRACEFS_MAGIC as u32, "tracefs"),
            (libc::CGROUP_SUPER_MAGIC as u32, "cgroup"),
            (libc::CGROUP2_SUPER_MAGIC as u32, "cgroup2"),
            (libc::SECURITYFS_MAGIC as u32, "securityfs"),
        ]
        .into_iter()
        .find(|&(m, _)| m == magic)
        .map_or(Target::Other, |(_, name)| Target::Kernel(name))
    }
}

/// The error of a log that [`LogWriter::start`] refused or could not begin
/// on a file of the type `target`, with a hint for it.
fn create_error(e: &io::Error, target: Target) -> crate::Error {
    let errno = e.raw_os_error().unwrap_or(libc::EIO);
    crate::Error::from_errno("posix_trace_create_withlog", errno).with_hint(match errno {
        libc::EINVAL => {
            "a LOOP log is rewritten from its start: give it a regular file, \
             or use the APPEND or UNTIL_FULL log policy on a pipe or socket"
        }
        libc::EBADF => "pass a log file opened for writing",
        libc::ENOSPC => "the log's file system has no space: free some, or put the log elsewhere",
        libc::EDQUOT => {
            "the user's disk quota on the log's file system is used up: free some of \
             the user's files there, raise the quota, or put the log elsewhere"
        }
        libc::EPIPE => "the log's pipe or socket has no reader: start the reader first",
        _ if target == Target::Stream => {
            "the log's header could not be written: check the log's pipe or socket \
             (a pipe needs a reader)"
        }
        _ => "the log's header could not be written: check the log file",
    })
}

impl LogWriter {
    /// The writer of a new log on `file` (`posix_trace_create_withlog`): checks
    /// the file, writes the log's header and attributes.
    ///
    /// # Errors
    /// As [`start`](Self::start), each with a hint for the log's file type;
    /// `InvalidInput` (EINVAL) for a file of a kernel file system (proc,
    /// sys), refused before anything is written to it.
    pub(crate) fn new(file: File, attr: &TraceAttr, pid: u32) -> crate::Result<LogWriter> {
        let target = Target::of(&file);
        if let Target::Kernel(fs) = target {
            return Err(
                crate::Error::from_errno("posix_trace_create_withlog", libc::EINVAL)
                    .with_kind(crate::ErrorKind::InvalidInput)
                    .with_message(format!(
                        "the log is a file of the kernel's {fs} file system, which holds no trace log"
                    ))
                    .with_hint("give a regular file (on a disk or tmpfs), a pipe or a socket"),
            );
        }
        Self::start(file, attr, pid).map_err(|e| create_error(&e, target))
    }

    /// [`new`](Self::new) proper, with the kernel's errors.
    fn start(file: File, attr: &TraceAttr, pid: u32) -> io::Result<LogWriter> {
        // POSIX: EBADF for a log not open for writing, found here rather than at
        // every flush.
        use rustix::fs::{fcntl_getfl, OFlags};
        let flags = fcntl_getfl(&file)?;
        if flags & OFlags::ACCMODE == OFlags::RDONLY {
            return Err(io::Error::from_raw_os_error(libc::EBADF));
        }
        // POSIX: EINVAL for a file whose type does not fit the log policy. A
        // LOOP log is rewritten from its start once it wraps: a pipe or socket
        // cannot be (every flush after the wrap failed with ESPIPE).
        if attr.log_full_policy() == LogFullPolicy::Loop
            && rustix::fs::seek(&file, rustix::fs::SeekFrom::Current(0))
                == Err(rustix::io::Errno::SPIPE)
        {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // The log is written from its start and a LOOP log rewritten in place:
        // with O_APPEND every write goes to the end whatever the seek (pwrite
        // too, on Linux). The flag belongs to the open file description, which
        // the caller's other descriptors share (dup, fork): clearing it there,
        // even for a while, would make their writes overwrite instead of
        // append. The log gets an open file description of its own instead.
        if !flags.contains(OFlags::APPEND) {
            return Self::with_file(file, false, attr, pid);
        }
        match own_description(&file, flags) {
            Ok(Some(own)) => Self::with_file(own, false, attr, pid),
            // Not a regular file: O_APPEND changes nothing (writes never seek).
            Ok(None) => Self::with_file(file, false, attr, pid),
            // No /proc, or the file cannot be opened again (its permissions
            // changed): write in append mode.
            Err(_) => Self::with_file(file, true, attr, pid),
        }
    }

    /// The writer proper, on `file`; `append`: its writes go to the end.
    fn with_file(
        mut file: File,
        append: bool,
        attr: &TraceAttr,
        pid: u32,
    ) -> io::Result<LogWriter> {
        let mut preamble = file_header().to_vec();
        preamble.extend_from_slice(&attr_record(attr, pid));
        // Devices and pipes cannot be truncated or sought: write from where they are.
        let _ = file.set_len(0);
        let seekable = file.seek(SeekFrom::Start(0)).is_ok();
        // POSIX: ENOSPC when the device "does not contain the space required
        // to create this trace log". The header and the attributes are
        // written now, so a log that cannot take them (a full file system,
        // `/dev/full`, a pipe without a reader) fails the creation instead of
        // its first flush; the names follow with the flusher's first write.
        file.write_all(&preamble)?;
        let file_len = preamble.len() as u64;
        let mut w = LogWriter {
            file,
            policy: attr.log_full_policy(),
            size: attr.log_size(),
            preamble,
            types_seen: vec![false; ids::ID_SPACE],
            names_gen: usize::MAX,
            kept: Vec::new(),
            kept_start: 0,
            kept_lens: VecDeque::new(),
            kept_bytes: 0,
            event_bytes: 0,
            pending: Vec::new(),
            block: BlockWriter::default(),
            rewrite: false,
            redo: false,
            append,
            seekable,
            file_len,
            full: false,
            lost: 0,
            overrun: false,
            pid,
            failed: None,
        };
        // The names are written by the flusher (a failing write from here on
        // reports through the status and an ERROR event).
        w.sync_types();
        Ok(w)
    }

    /// Adds TYPE records for names registered since the last call (before any event
    /// that could use them, so a cut log keeps its names).
    pub(crate) fn sync_types(&mut self) {
        let g = ids::NAMES_GEN.load(std::sync::atomic::Ordering::Acquire);
        if g == self.names_gen {
            return;
        }
        self.names_gen = g;
        self.block.close(&mut self.pending);
        for t in ids::all_types() {
            if !self.types_seen[t.id.0 as usize] {
                self.types_seen[t.id.0 as usize] = true;
                let r = type_record(&t);
                self.preamble.extend_from_slice(&r);
                if !self.redo {
                    self.pending.extend_from_slice(&r);
                }
            }
        }
    }

    /// Queues one event; returns whether the log kept it.
    pub(crate) fn push(&mut self, e: &Event) -> bool {
        self.push_record(
            e.id.0,
            e.truncated,
            e.pid,
            e.tid,
            e.timestamp.as_nanos() as u64,
            &e.data,
        )
    }

    /// Queues one event from its fields; returns whether the log kept it.
    pub(crate) fn push_record(
        &mut self,
        id: u16,
        truncated: bool,
        pid: u32,
        tid: u32,
        ts_ns: u64,
        data: &[u8],
    ) -> bool {
        // At most this many bytes (exact for a record, a bound in a block).
        let n = self.record_len(pid, data.len());
        let at = self.pending.len();
        match self.policy {
            LogFullPolicy::Append => {
                self.encode(id, truncated, pid, tid, ts_ns, data);
            }
            LogFullPolicy::UntilFull => {
                if self.full {
                    self.lost += 1;
                    self.overrun = true;
                    return false;
                }
                let stop_size = self.record_len(self.pid, 4);
                if self.event_bytes + n + stop_size > self.size {
                    let stop = 2u32.to_le_bytes();
                    self.encode(EventId::STOP.0, false, self.pid, tid, ts_ns, &stop);
                    self.event_bytes += (self.pending.len() - at) as u64;
                    self.full = true;
                    self.lost += 1;
                    self.overrun = true;
                    return false;
                }
                self.encode(id, truncated, pid, tid, ts_ns, data);
            }
            LogFullPolicy::Loop => {
                if n > self.size {
                    self.lost += 1;
                    self.overrun = true;
                    return false;
                }
                let at = self.pending.len();
                self.encode(id, truncated, pid, tid, ts_ns, data);
                self.kept.extend_from_slice(&self.pending[at..]);
                self.kept_lens.push_back(n as u32);
                self.kept_bytes += n;
                while self.kept_bytes > self.size {
                    let Some(old) = self.kept_lens.pop_front() else {
                        break;
                    };
                    self.kept_start += old as usize;
                    self.kept_bytes -= old as u64;
                    self.lost += 1;
                    self.overrun = true;
                    self.full = true;
                    self.rewrite = true;
                }
                if self.kept_start > self.kept.len() / 2 {
                    self.kept.drain(..self.kept_start);
                    self.kept_start = 0;
                }
            }
        }
        // The bytes queued (a block's include its head when this event opened it).
        self.event_bytes += (self.pending.len() - at) as u64;
        true
    }

    /// Whether an event of `pid` gets a compact record: this process's (the
    /// log's pid, or 0 for a type without a pid).
    #[inline]
    fn compact(&self, pid: u32) -> bool {
        pid == self.pid || pid == 0
    }

    /// Bytes of the record of an event of `pid` with `dlen` bytes of data; in
    /// an event block, the most it can take (a new block's head included).
    #[inline]
    fn record_len(&self, pid: u32, dlen: usize) -> u64 {
        let fixed = match (self.compact(pid), self.policy) {
            (false, _) => EVENT_RECORD_FIXED,
            (true, LogFullPolicy::Loop) => COMPACT_RECORD_FIXED,
            (true, _) => BLOCK_EVENT_MAX,
        };
        (fixed + dlen.min(u16::MAX as usize)) as u64
    }

    /// Queues the record of one event: this process's events (`pid` the log's,
    /// or 0 for a type without a pid) go into an event block (APPEND and
    /// UNTIL_FULL) or a compact record (LOOP, which drops the oldest events one
    /// by one), other events into a full record.
    #[inline]
    fn encode(&mut self, id: u16, truncated: bool, pid: u32, tid: u32, ts_ns: u64, data: &[u8]) {
        let compact = self.compact(pid);
        let own = OwnEvent::new(id, truncated, pid == 0, tid, ts_ns, data);
        if compact && self.policy != LogFullPolicy::Loop {
            return self.block.push(&mut self.pending, &own);
        }
        self.block.close(&mut self.pending);
        if compact {
            encode_compact(&mut self.pending, &own);
        } else {
            encode_event(&mut self.pending, id, truncated, pid, tid, ts_ns, 0, data);
        }
    }

    /// Whether bytes wait to be written (names, the header of a new log).
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Bytes queued and not written yet (those of failed writes included).
    pub(crate) fn backlog(&self) -> usize {
        self.pending.len()
    }

    /// Writes what is queued to the file.
    ///
    /// Log LOOP appends as the other policies do, and compacts the file (rewrites it
    /// with the newest events within the log size) only when appending would take
    /// it past twice the log size, at `clear` and at shutdown: each event is
    /// written at most about three times, instead of the whole log at every flush.
    pub(crate) fn commit(&mut self) -> io::Result<()> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        self.commit_inner(false)
    }

    /// Writes what is queued once it passes `limit` bytes, so a long flush writes
    /// in large steps and its buffer stays bounded; a failure waits for the
    /// flush's final [`commit`](Self::commit).
    #[inline]
    pub(crate) fn commit_over(&mut self, limit: usize) {
        if self.pending.len() > limit && self.failed.is_none() {
            if let Err(e) = self.commit_inner(false) {
                self.failed = Some(e);
            }
        }
    }

    fn commit_inner(&mut self, compact: bool) -> io::Result<()> {
        self.block.close(&mut self.pending);
        // Saturating: the log size may be as large as `u64::MAX` (no practical
        // limit, or ignored under APPEND).
        let limit = (self.preamble.len() as u64).saturating_add(self.size.saturating_mul(2));
        if self.rewrite
            && (compact || self.redo || self.file_len + self.pending.len() as u64 > limit)
        {
            let mut all = self.preamble.clone();
            if self.policy == LogFullPolicy::Loop {
                // `pending` repeats the newest of `kept`.
                all.extend_from_slice(&self.kept[self.kept_start..]);
            } else {
                // Empty at a clear's rewrite; after one that failed, the
                // events queued since (their names are in the preamble).
                all.extend_from_slice(&self.pending);
            }
            // Cleared once the whole of `all` is written and the file cut
            // after it: a failure in between leaves the file's tail unknown.
            self.redo = true;
            if self.append {
                // Every write goes to the end: cut first, then write (a crash
                // in between leaves an empty log).
                self.file.set_len(0)?;
                self.file.write_all(&all)?;
            } else {
                // Overwrite in place, then cut: a crash in between leaves the
                // new records first, then a damaged tail the reader reports,
                // rather than an empty file.
                self.file.seek(SeekFrom::Start(0))?;
                self.file.write_all(&all)?;
                self.file.set_len(all.len() as u64)?;
            }
            self.file_len = all.len() as u64;
            self.rewrite = false;
            self.redo = false;
            self.pending.clear();
        } else if !self.pending.is_empty() {
            // A write that fails part-way (a file system that fills up) has
            // put its first bytes in the file: they leave the queue, and the
            // next commit goes on after them. Written again whole, they made
            // a cut record followed by its copy, and the log read as corrupt
            // from there on.
            let (written, res) = write_counted(&mut self.file, &self.pending);
            self.file_len += written as u64;
            self.pending.drain(..written);
            res?;
        }
        Ok(())
    }

    /// Empties the log of events, keeping header, attributes and names.
    pub(crate) fn clear(&mut self) -> io::Result<()> {
        self.kept.clear();
        self.kept_start = 0;
        self.kept_lens.clear();
        self.kept_bytes = 0;
        self.event_bytes = 0;
        self.full = false;
        // As a new log: the losses before the clear went with its events.
        self.lost = 0;
        self.overrun = false;
        if !self.seekable {
            // A pipe or socket (an APPEND or UNTIL_FULL log) cannot be
            // rewritten: what it was sent stays sent, and the log starts
            // over from here. What is queued (names, the rest of a record a
            // failed write cut) is written next, as it must be.
            return Ok(());
        }
        self.pending.clear();
        self.block.reset();
        self.rewrite = true;
        self.commit_inner(true)
    }

    /// Writes the service records (status, end) and syncs.
    pub(crate) fn finish(&mut self, mut st: LogStatus) -> io::Result<()> {
        self.sync_types();
        st.log_lost = self.lost;
        st.log_overrun = self.lost > 0;
        st.log_full = self.full;
        self.commit_inner(true)?;
        let mut tail = status_record(&st);
        frame(&[K_END], &mut tail);
        self.preamble.extend_from_slice(&tail);
        self.file.write_all(&tail)?;
        match self.file.sync_data() {
            // Pipes and character devices cannot be synced.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
            r => r,
        }
    }
}

/// Writes all of `buf` to `file` (as `write_all`); returns how many bytes
/// it wrote, also when a write fails after some did.
fn write_counted(file: &mut File, buf: &[u8]) -> (usize, io::Result<()>) {
    let mut done = 0;
    while done < buf.len() {
        match file.write(&buf[done..]) {
            Ok(0) => return (done, Err(io::ErrorKind::WriteZero.into())),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (done, Err(e)),
        }
    }
    (done, Ok(()))
}

/// A new open file description of `file` (a regular file), with `flags`
/// (its access mode and synchronisation) but without `O_APPEND`, through
/// `/proc/self/fd`; `None` for a file of another type.
fn own_description(file: &File, flags: rustix::fs::OFlags) -> io::Result<Option<File>> {
    use rustix::fs::{fstat, FileType, Mode, OFlags};
    use std::os::fd::AsRawFd;
    let st = fstat(file)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Ok(None);
    }
    let keep = OFlags::ACCMODE | OFlags::SYNC | OFlags::DSYNC;
    let path = format!("/proc/self/fd/{}", file.as_raw_fd());
    let own = File::from(rustix::fs::open(
        path.as_str(),
        (flags & keep) | OFlags::CLOEXEC,
        Mode::empty(),
    )?);
    // The same file, not whatever a strange /proc names so.
    let st2 = fstat(&own)?;
    if (st2.st_dev, st2.st_ino) != (st.st_dev, st.st_ino) {
        return Err(io::Error::from_raw_os_error(libc::ENXIO));
    }
    Ok(Some(own))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{EventId, TraceLog};
    use std::time::Duration;

    /// Where the log's own open file description cannot be had, the writer
    /// keeps the caller's, in append mode: a LOOP log's compaction then cuts
    /// the file before it writes (a write at offset 0 would go to the end),
    /// so the log still holds the newest events and reads to its end record.
    #[test]
    fn a_loop_log_written_in_append_mode_keeps_the_newest_events() {
        let p = std::env::temp_dir().join(format!(
            "posixrt-log-writer-{}-append.trace",
            std::process::id()
        ));
        std::fs::write(&p, b"").unwrap();
        let f = File::options().append(true).open(&p).unwrap();
        let mut a = TraceAttr::new();
        a.set_log_full_policy(LogFullPolicy::Loop);
        a.set_log_size(4096).unwrap();
        let pid = std::process::id();
        let mut w = LogWriter::with_file(f, true, &a, pid).unwrap();
        let id = EventId::START; // any id of a name every log knows
        for i in 0..2000u32 {
            w.push_record(id.0, false, pid, 1, u64::from(i) + 1, &i.to_le_bytes());
            if i % 100 == 99 {
                w.commit().unwrap();
            }
        }
        w.finish(LogStatus::default()).unwrap();
        drop(w);
        let mut l = TraceLog::open(&p).unwrap();
        let evs: Result<Vec<_>, _> = l.events().collect();
        std::fs::remove_file(&p).unwrap();
        let mine: Vec<u32> = evs
            .unwrap()
            .iter()
            .filter(|e| e.id == id && e.timestamp > Duration::ZERO)
            .map(|e| u32::from_le_bytes(e.data[..4].try_into().unwrap()))
            .collect();
        assert!(l.is_complete());
        assert!(mine.len() > 1, "{mine:?}");
        assert_eq!(mine.last(), Some(&1999), "{mine:?}");
        assert!(mine.windows(2).all(|w| w[1] == w[0] + 1), "{mine:?}");
    }

    /// A quota used up is told apart from a full file system: the hint of
    /// EDQUOT used to say "no space", which freeing space elsewhere on the
    /// file system does not mend.
    #[test]
    fn a_quota_has_its_own_hint() {
        let hint = |errno| {
            let e = create_error(&io::Error::from_raw_os_error(errno), Target::Other);
            e.hint().unwrap_or_default().to_string()
        };
        assert!(
            hint(libc::EDQUOT).contains("quota"),
            "{}",
            hint(libc::EDQUOT)
        );
        assert!(
            hint(libc::ENOSPC).contains("no space"),
            "{}",
            hint(libc::ENOSPC)
        );
        assert!(!hint(libc::ENOSPC).contains("quota"));
    }
}
