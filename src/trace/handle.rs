//! The stream handle [`Trace`]: creation (`posix_trace_create`,
//! `posix_trace_create_withlog`) and shutdown. Its control operations are in
//! `control.rs`, its readers in `getnext.rs`.

use std::collections::VecDeque;
use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::attr::{Inheritance, StreamFullPolicy, TraceAttr};
use super::flusher;
use super::local;
use super::log::LogStatus;
use super::log_writer::LogWriter;
use super::slots::{self, gen_of, lock, set_running, PID, TRACE_SYS_MAX};
use super::stream::{ReaderState, Stream};
use crate::sys::clock;
use crate::{Error, ErrorKind, Result};

/// A trace stream (`trace_id_t` of a live stream), created suspended.
///
/// Dropping it shuts it down (see [`Trace::shutdown`]).
pub struct Trace {
    pub(super) s: Arc<Stream>,
    pub(super) shut: bool,
}

impl std::fmt::Debug for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trace")
            .field("name", &self.s.attr.name)
            .field("slot", &self.s.slot)
            .field("running", &self.s.running())
            .finish()
    }
}

impl Trace {
    /// `posix_trace_create(0, attr, &trid)`: a stream tracing this process, without a
    /// log, suspended.
    ///
    /// # Errors
    /// `Unsupported` for [`Inheritance::Inherited`]; `InvalidInput` for the FLUSH
    /// policy without a log, or for a value the setters refuse (attributes read
    /// back from a log are checked as they check them); `OutOfResources`
    /// (EAGAIN, as POSIX) when [`TRACE_SYS_MAX`] streams exist.
    ///
    /// # References
    /// - [`posix_trace_create`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_create.html)
    #[doc(alias = "posix_trace_create")]
    pub fn create(attr: &TraceAttr) -> Result<Trace> {
        Trace::build(attr, None)
    }

    /// `posix_trace_create(pid, ...)`: only `pid` 0 or the caller's own pid is
    /// supported.
    ///
    /// # Errors
    /// `Unsupported` (with ENOSYS) for another process: tracing another process needs
    /// a shared-memory stream, which this version does not have.
    ///
    /// # References
    /// - [`posix_trace_create`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_create.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_create")]
    pub fn create_for_pid(pid: u32, attr: &TraceAttr) -> Result<Trace> {
        if pid != 0 && pid != slots::getpid() {
            return Err(Error::from_errno("posix_trace_create", libc::ENOSYS)
                .with_kind(ErrorKind::Unsupported)
                .with_message(format!(
                    "tracing another process (pid {pid}) is not supported"
                ))
                .with_hint(
                    "create the stream inside the traced process (pid 0) and read its log",
                ));
        }
        Trace::create(attr)
    }

    /// `posix_trace_create_withlog(0, attr, fd, &trid)`: a stream with a log file
    /// (truncated and written from the start). The stream full policy defaults to
    /// FLUSH. A flusher thread writes the log; the traced threads never do.
    ///
    /// A log file opened with `O_APPEND` is written through an open file
    /// description of its own (opened again through `/proc/self/fd`, without
    /// `O_APPEND`), so the caller's other descriptors of the file keep their
    /// append mode; where it cannot be opened again, the log is written in
    /// append mode (a LOOP log is then cut before it is rewritten).
    ///
    /// The log survives the end of the process: the flusher writes at least every
    /// [`TraceAttr::flush_interval`] (100 ms by default), and everything at process
    /// exit and on SIGINT, SIGTERM, SIGSEGV and SIGABRT (installed on the first
    /// stream with a log; a signal ignored at that time stays ignored). The handler
    /// then gives the signal the disposition it had before: a handler the program
    /// installed earlier is called, the default action acts (the process ends).
    ///
    /// A write to the log that fails (a full file system) is reported in the
    /// status's flush error and an ERROR event, and retried: what it did not
    /// write waits for the next write, up to 16 MiB; past that, flushes take
    /// nothing more from the stream until the log takes it, and the stream's
    /// full policy drops and counts what it cannot keep (an overrun).
    ///
    /// # Errors
    /// EBADF for a file not open for writing; `InvalidInput` (EINVAL, as
    /// POSIX for a file type that does not fit the log policy) for a LOOP log,
    /// the default log policy, on a pipe or socket, which cannot be rewritten
    /// from its start (an APPEND or UNTIL_FULL log can be); the errno of the
    /// write of the log's header and attributes, which happens here: ENOSPC
    /// (as POSIX has it) for a device without the space to create the log
    /// (`/dev/full`, a full file system), EPIPE for a pipe without a reader
    /// (where SIGPIPE is ignored, as in Rust programs); `InvalidInput`
    /// (EINVAL) for a file of a kernel file system (`/proc`, `/sys`), which
    /// holds no log, refused before anything is written to it;
    /// those of [`create`](Trace::create).
    ///
    /// # References
    /// - [`posix_trace_create_withlog`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_create.html)
    #[doc(alias = "posix_trace_create_withlog")]
    pub fn create_with_log(attr: &TraceAttr, log: File) -> Result<Trace> {
        Trace::build(attr, Some(log))
    }

    fn build(attr: &TraceAttr, log: Option<File>) -> Result<Trace> {
        if attr.inherit == Inheritance::Inherited {
            return Err(Error::from_errno("posix_trace_create", libc::EINVAL)
                .with_kind(ErrorKind::Unsupported)
                .with_message(
                    "POSIX_TRACE_INHERITED is not supported (streams are process-private)",
                )
                .with_hint(
                    "use Inheritance::CloseForChild and create a stream in the child after fork",
                ));
        }
        // The setters check each value, but attributes read back from a log
        // (TraceLog::attr) did not go through them.
        TraceAttr::new()
            .set_stream_size(attr.stream_size)?
            .set_max_data_size(attr.max_data)?
            .set_log_size(attr.log_size)?
            .set_flush_interval(attr.flush_interval)?;
        let mut a = attr.clone();
        a.with_log = log.is_some();
        let policy = a.stream_full_policy();
        if policy == StreamFullPolicy::Flush && log.is_none() {
            return Err(
                Error::invalid("posix_trace_create", "POSIX_TRACE_FLUSH needs a log")
                    .with_hint("use Trace::create_with_log, or the LOOP or UNTIL_FULL policy"),
            );
        }
        slots::setup_process();
        let pid = slots::getpid();
        PID.store(pid, Relaxed);
        // The timestamp clock on either side of the creation time: their
        // midpoint goes with it (the wall-clock offset of event times).
        let before = super::now();
        a.create_time = Some(Duration::from_nanos(clock::real_ns()));
        let after = super::now();
        a.create_mono = Some(before + after.saturating_sub(before) / 2);
        a.clock_res = Some(clock::resolution());
        let max_event = a
            .max_user_event_size(a.max_data)
            .max(a.max_system_event_size()) as u64;
        let reserve = 2 * a.max_system_event_size() as u64;
        let cap = (a.stream_size as u64 + max_event + reserve + 64).next_power_of_two() as usize;
        let writer = match log {
            Some(f) => Some(Mutex::new(LogWriter::new(f, &a, pid)?)),
            None => None,
        };
        let Some((slot, gen)) = slots::claim() else {
            // POSIX: EAGAIN, "{TRACE_SYS_MAX} has been exceeded".
            return Err(Error::from_errno("posix_trace_create", libc::EAGAIN)
                .with_kind(ErrorKind::OutOfResources)
                .with_message(format!("{TRACE_SYS_MAX} streams exist (TRACE_SYS_MAX)"))
                .with_hint("shut down a stream before creating another"));
        };
        let s = Arc::new(Stream {
            slot,
            gen,
            pid,
            policy,
            max_data: a.max_data,
            cap,
            reserve,
            attr: a,
            rings: Mutex::new(Vec::new()),
            ring_ptrs: AtomicPtr::new(std::ptr::null_mut()),
            old_ptrs: Mutex::new(Vec::new()),
            gone_lost: AtomicU64::new(0),
            auto_suspended: AtomicBool::new(false),
            ctl: Mutex::new(()),
            flush_req: AtomicBool::new(false),
            flushing: AtomicU32::new(0),
            flush_error: AtomicI32::new(0),
            flush_done: AtomicU64::new(0),
            full_seen: AtomicBool::new(false),
            log_overrun: AtomicBool::new(false),
            log_full: AtomicBool::new(false),
            reader: Mutex::new(ReaderState {
                pending: VecDeque::new(),
                nested_reported: 0,
            }),
            log: writer,
            flusher: Mutex::new(None),
            stop_flusher: AtomicBool::new(false),
            lost_acked: AtomicU64::new(0),
            lost_cleared: AtomicU64::new(0),
            nested_lost: AtomicU64::new(0),
        });
        local::publish(slot, Arc::as_ptr(&s));
        gen_of(slot).store(gen, Release);
        if s.log.is_some() {
            let h = match flusher::spawn(&s) {
                Ok(h) => h,
                Err(e) => {
                    // Nothing recorded yet: take the stream out of its slot again.
                    slots::retire(slot, gen);
                    local::unpublish(slot);
                    slots::release(slot);
                    return Err(Error::from_errno(
                        "pthread_create",
                        e.raw_os_error().unwrap_or(libc::EAGAIN),
                    ));
                }
            };
            *lock(&s.flusher) = Some(h);
        }
        Ok(Trace { s, shut: false })
    }

    /// Whether the calling process owns the stream (not a forked child).
    pub(super) fn in_owner(&self) -> bool {
        PID.load(Relaxed) == self.s.pid
    }

    pub(super) fn check_owner(&self, call: &'static str) -> Result<()> {
        // POSIX: EINVAL, the handle names no valid trace stream.
        let refused = |why: &'static str| {
            Error::from_errno(call, libc::EINVAL)
                .with_kind(ErrorKind::InvalidState)
                .with_message(why)
        };
        if self.shut {
            return Err(refused("the stream was shut down"));
        }
        if !self.in_owner() {
            return Err(refused("the stream belongs to the parent process")
                .with_hint("POSIX_TRACE_CLOSE_FOR_CHILD: create a new stream in the child"));
        }
        Ok(())
    }

    /// `posix_trace_shutdown`: stops recording as [`stop`](Self::stop) does
    /// (a running stream records STOP), flushes to the log, writes the
    /// service records (status, end) and closes it, and frees the stream.
    ///
    /// # References
    /// - [`posix_trace_shutdown`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_shutdown.html)
    #[doc(alias = "posix_trace_shutdown")]
    pub fn shutdown(mut self) -> Result<()> {
        self.do_shutdown()
    }

    fn do_shutdown(&mut self) -> Result<()> {
        if self.shut {
            return Ok(());
        }
        if !self.in_owner() {
            self.shut = true;
            return Ok(()); // a forked child: the parent owns the stream
        }
        // POSIX: shutdown stops the stream "as if posix_trace_stop() had
        // been invoked": a running stream records STOP, which its log then
        // holds before the final flush (it ended without one).
        let _ = self.stop();
        self.shut = true;
        let s = &self.s;
        {
            // No automatic resume from here on: the final flush frees the
            // sub-buffers of an UNTIL_FULL stream that suspended itself, and
            // resuming it then left its slot running for the next stream.
            let _ctl = lock(&s.ctl);
            s.auto_suspended.store(false, Release);
            set_running(s.slot, false);
        }
        let mut res = Ok(());
        if s.log.is_some() {
            flusher::stop(s);
            if let Some(h) = lock(&s.flusher).take() {
                let _ = h.join();
            }
            res = s.flush_now(false);
            if let Some(log) = &s.log {
                let lost = s.lost_sum().saturating_sub(s.lost_cleared.load(Acquire));
                let st = LogStatus {
                    stream_lost: lost,
                    stream_overrun: lost > 0,
                    ..LogStatus::default()
                };
                if let Err(e) = lock(log).finish(st) {
                    res = res.and(Err(Error::from_errno(
                        "posix_trace_shutdown",
                        e.raw_os_error().unwrap_or(libc::EIO),
                    )));
                }
            }
        }
        // Retire the slot: writers check the generation after setting `busy`.
        slots::retire(s.slot, s.gen);
        local::unpublish(s.slot);
        // A stream is created suspended: the slot is handed on stopped.
        set_running(s.slot, false);
        slots::release(s.slot);
        res
    }
}

impl Drop for Trace {
    fn drop(&mut self) {
        let _ = self.do_shutdown();
    }
}
