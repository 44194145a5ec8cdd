//! Trace stream attributes (`trace_attr_t`).

use std::time::Duration;

use crate::sys::clock;
use crate::{Error, Result};

/// Maximum length of a stream name in bytes (`TRACE_NAME_MAX`).
pub const TRACE_NAME_MAX: usize = 64;
/// The generation version of this trace system (`posix_trace_attr_getgenversion`).
pub const GEN_VERSION: &str = "posixrt-trace 1.0 (log format 3)";
/// Bytes of record header in a stream: id, data length, tid, timestamp.
pub const RECORD_HEADER: usize = 16;
/// Largest payload of a system event (the FILTER event's two sets).
pub const MAX_SYS_PAYLOAD: usize = 256;
/// Largest accepted `max_data_size`.
pub const MAX_DATA_SIZE_LIMIT: usize = 4096;
/// Smallest accepted stream size.
pub const MIN_STREAM_SIZE: usize = 4096;
/// How often a stream with a log writes what it holds, by default
/// ([`TraceAttr::set_flush_interval`]).
pub const DEFAULT_FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// What a stream does when it is full (`posix_trace_attr_setstreamfullpolicy`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum StreamFullPolicy {
    /// `POSIX_TRACE_LOOP`: overwrite the oldest events (of the recording thread's
    /// sub-buffer) and set the overrun flag.
    Loop,
    /// `POSIX_TRACE_UNTIL_FULL`: suspend with a STOP event; resume with a START event
    /// once reading or clearing frees space. The events recorded meanwhile are
    /// lost and counted (the overrun flag, an OVERFLOW per thread; a thread's
    /// very first event meanwhile counts in an OVERFLOW with tid 0).
    UntilFull,
    /// `POSIX_TRACE_FLUSH`: flush to the log when full and go on.
    Flush,
}

/// What a log does when it reaches its size (`posix_trace_attr_setlogfullpolicy`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LogFullPolicy {
    /// `POSIX_TRACE_LOOP`: keep the newest events within the log size (exactly at
    /// shutdown; while running the file may hold up to twice the log size, as it is
    /// compacted only then, to bound the rewriting).
    Loop,
    /// `POSIX_TRACE_UNTIL_FULL`: stop writing; a STOP event is the last event, and
    /// the stream is suspended when the log fills (`start` is ignored while the
    /// log is full: `clear` empties it, then `start` runs the stream again).
    UntilFull,
    /// `POSIX_TRACE_APPEND`: grow without bound (the log size is ignored).
    Append,
}

/// Whether children inherit the stream (`posix_trace_attr_setinherited`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Inheritance {
    /// `POSIX_TRACE_CLOSE_FOR_CHILD` (default): a forked child records nothing.
    CloseForChild,
    /// `POSIX_TRACE_INHERITED`: not supported; creating a stream with it fails with
    /// [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported).
    Inherited,
}

/// Trace stream attributes (`trace_attr_t`), a plain value: build it with the
/// setters, pass it to [`Trace::create`](super::Trace::create), read a stream's with
/// [`Trace::attr`](super::Trace::attr).
///
/// # References
/// - [`posix_trace_attr_init`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_init.html)
/// - [`posix_trace_attr_getstreamsize`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getmaxdatasize.html)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceAttr {
    /// The name as text (each byte sequence that is not UTF-8 as U+FFFD).
    pub(crate) name: String,
    /// The name's bytes when they are not UTF-8 (a C name): what the log
    /// keeps and `posix_trace_attr_getname` gives back.
    pub(crate) raw_name: Option<Box<[u8]>>,
    pub(crate) create_time: Option<Duration>,
    /// The timestamp clock read with `create_time`.
    pub(crate) create_mono: Option<Duration>,
    pub(crate) clock_res: Option<Duration>,
    pub(crate) stream_size: usize,
    pub(crate) stream_full: Option<StreamFullPolicy>,
    pub(crate) log_full: LogFullPolicy,
    pub(crate) log_size: u64,
    pub(crate) max_data: usize,
    pub(crate) inherit: Inheritance,
    pub(crate) with_log: bool,
    pub(crate) flush_interval: Duration,
}

impl Default for TraceAttr {
    fn default() -> Self {
        TraceAttr::new()
    }
}

/// A stream name's bytes fit `TRACE_NAME_MAX` and hold no NUL.
fn check_name(name: &[u8]) -> Result<()> {
    if name.len() > TRACE_NAME_MAX || name.contains(&0) {
        return Err(Error::invalid(
            "posix_trace_attr_setname",
            format!(
                "name of {} bytes (max {TRACE_NAME_MAX}, no NUL)",
                name.len()
            ),
        )
        .with_hint("use a shorter stream name (TRACE_NAME_MAX)"));
    }
    Ok(())
}

impl TraceAttr {
    /// `posix_trace_attr_init`: the default attributes.
    ///
    /// The default stream name is `"trace"`, what listing 8.17 of the source
    /// documents prints for a default-initialised attributes object; POSIX's
    /// `posix_trace_attr_setname` page calls the default a null string (set
    /// `""` with [`set_name`](TraceAttr::set_name) for that).
    ///
    /// # References
    /// - [`posix_trace_attr_init`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_destroy.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_init")]
    pub fn new() -> TraceAttr {
        TraceAttr {
            name: "trace".to_string(),
            raw_name: None,
            create_time: None,
            create_mono: None,
            clock_res: None,
            stream_size: 1 << 20,
            stream_full: None,
            log_full: LogFullPolicy::Loop,
            log_size: 16 << 20,
            max_data: 256,
            inherit: Inheritance::CloseForChild,
            with_log: false,
            flush_interval: DEFAULT_FLUSH_INTERVAL,
        }
    }

    /// `posix_trace_attr_getgenversion`: the trace system's version (read-only).
    ///
    /// # References
    /// - [`posix_trace_attr_getgenversion`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getclockres.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_getgenversion")]
    pub fn genversion(&self) -> &'static str {
        GEN_VERSION
    }

    /// `posix_trace_attr_getname`, as text: a name set from bytes that are
    /// not UTF-8 ([`set_name_bytes`](Self::set_name_bytes), a C name) shows
    /// U+FFFD for each sequence that is not; [`name_bytes`](Self::name_bytes)
    /// gives its bytes.
    ///
    /// # References
    /// - [`posix_trace_attr_getname`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getclockres.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_getname")]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `posix_trace_attr_getname`: the name's bytes, as set (POSIX names are
    /// byte strings), and as a log keeps them.
    ///
    /// # References
    /// - [`posix_trace_attr_getname`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getclockres.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_getname")]
    pub fn name_bytes(&self) -> &[u8] {
        self.raw_name.as_deref().unwrap_or(self.name.as_bytes())
    }

    /// `posix_trace_attr_setname` with a name of any bytes (as C gives it).
    ///
    /// # Errors
    /// `InvalidInput` if longer than [`TRACE_NAME_MAX`] bytes or containing NUL.
    ///
    /// # References
    /// - [`posix_trace_attr_setname`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getclockres.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_setname")]
    pub fn set_name_bytes(&mut self, name: &[u8]) -> Result<&mut Self> {
        check_name(name)?;
        self.set_name_unchecked(name);
        Ok(self)
    }

    /// The name's bytes, unchecked (a name read back from a log).
    pub(crate) fn set_name_unchecked(&mut self, name: &[u8]) {
        match std::str::from_utf8(name) {
            Ok(s) => {
                self.name = s.to_string();
                self.raw_name = None;
            }
            Err(_) => {
                self.name = String::from_utf8_lossy(name).into_owned();
                self.raw_name = Some(name.into());
            }
        }
    }

    /// `posix_trace_attr_setname`.
    ///
    /// # Errors
    /// `InvalidInput` if longer than [`TRACE_NAME_MAX`] bytes or containing NUL.
    ///
    /// # References
    /// - [`posix_trace_attr_setname`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getclockres.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_setname")]
    pub fn set_name(&mut self, name: &str) -> Result<&mut Self> {
        check_name(name.as_bytes())?;
        self.name = name.to_string();
        self.raw_name = None;
        Ok(self)
    }

    /// `posix_trace_attr_getcreatetime`: CLOCK_REALTIME when the stream was created
    /// (`None` for an attribute object not read from a stream).
    ///
    /// # References
    /// - [`posix_trace_attr_getcreatetime`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getclockres.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_getcreatetime")]
    pub fn create_time(&self) -> Option<Duration> {
        self.create_time
    }

    /// The stream's timestamp clock (ns of CLOCK_MONOTONIC, as its events are
    /// stamped) read together with [`create_time`](Self::create_time): their
    /// difference is CLOCK_REALTIME minus CLOCK_MONOTONIC when the stream was
    /// created, which turns event timestamps into wall-clock times (the CTF
    /// export's clock offset). `None` for an attribute object not read from
    /// a stream, and for a log written before posixrt recorded it.
    pub fn create_time_monotonic(&self) -> Option<Duration> {
        self.create_mono
    }

    /// `posix_trace_attr_getclockres`: the real resolution of the timestamp clock
    /// (the TSC, rounded up to 1 ns, or CLOCK_MONOTONIC's `clock_getres`).
    ///
    /// # References
    /// - [`posix_trace_attr_getclockres`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getclockres.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_getclockres")]
    pub fn clock_resolution(&self) -> Duration {
        self.clock_res.unwrap_or_else(clock::resolution)
    }

    /// `posix_trace_attr_getstreamsize`: the minimum bytes reserved for events.
    ///
    /// # References
    /// - [`posix_trace_attr_getstreamsize`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getlogsize.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_getstreamsize")]
    pub fn stream_size(&self) -> usize {
        self.stream_size
    }

    /// `posix_trace_attr_setstreamsize`. While the sum of the maximum sizes of the
    /// recorded events does not exceed it, no event is lost.
    ///
    /// Memory: each thread that records gets its own sub-buffer of
    /// `(size + max event + 2 * max system event + 64).next_power_of_two()` bytes
    /// (the default 1 MiB gives 2 MiB per recording thread; see
    /// [`Trace::sub_buffer_bytes`](super::Trace::sub_buffer_bytes)). It is virtual
    /// memory, touched as it is used: a stream read often stays small, a LOOP stream
    /// in steady state touches all of it. So the guarantee holds per thread, which
    /// is stronger than the POSIX one, and the memory is up to threads × that.
    ///
    /// # Errors
    /// `InvalidInput` below [`MIN_STREAM_SIZE`] or above 1 GiB.
    ///
    /// # References
    /// - [`posix_trace_attr_setstreamsize`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getlogsize.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_setstreamsize")]
    pub fn set_stream_size(&mut self, size: usize) -> Result<&mut Self> {
        if !(MIN_STREAM_SIZE..=1 << 30).contains(&size) {
            return Err(Error::invalid(
                "posix_trace_attr_setstreamsize",
                format!("stream size {size} outside {MIN_STREAM_SIZE}..=1 GiB"),
            )
            .with_hint("pick a stream size between 4 KiB and 1 GiB"));
        }
        self.stream_size = size;
        Ok(self)
    }

    /// `posix_trace_attr_getstreamfullpolicy`: FLUSH for a stream with a log, LOOP
    /// without, unless set.
    ///
    /// # References
    /// - [`posix_trace_attr_getstreamfullpolicy`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getinherited.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_getstreamfullpolicy")]
    pub fn stream_full_policy(&self) -> StreamFullPolicy {
        self.stream_full.unwrap_or(if self.with_log {
            StreamFullPolicy::Flush
        } else {
            StreamFullPolicy::Loop
        })
    }

    /// `posix_trace_attr_setstreamfullpolicy`. (FLUSH without a log is refused at
    /// creation.)
    ///
    /// # References
    /// - [`posix_trace_attr_setstreamfullpolicy`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getinherited.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_setstreamfullpolicy")]
    pub fn set_stream_full_policy(&mut self, p: StreamFullPolicy) -> &mut Self {
        self.stream_full = Some(p);
        self
    }

    /// `posix_trace_attr_getlogfullpolicy` (default LOOP).
    ///
    /// # References
    /// - [`posix_trace_attr_getlogfullpolicy`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getinherited.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_getlogfullpolicy")]
    pub fn log_full_policy(&self) -> LogFullPolicy {
        self.log_full
    }

    /// `posix_trace_attr_setlogfullpolicy`.
    ///
    /// # References
    /// - [`posix_trace_attr_setlogfullpolicy`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getinherited.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_setlogfullpolicy")]
    pub fn set_log_full_policy(&mut self, p: LogFullPolicy) -> &mut Self {
        self.log_full = p;
        self
    }

    /// `posix_trace_attr_getlogsize`: the bytes of event records a log keeps
    /// (ignored with APPEND).
    ///
    /// # References
    /// - [`posix_trace_attr_getlogsize`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getlogsize.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_getlogsize")]
    pub fn log_size(&self) -> u64 {
        self.log_size
    }

    /// `posix_trace_attr_setlogsize`.
    ///
    /// # Errors
    /// `InvalidInput` below 1024 bytes.
    ///
    /// # References
    /// - [`posix_trace_attr_setlogsize`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getlogsize.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_setlogsize")]
    pub fn set_log_size(&mut self, size: u64) -> Result<&mut Self> {
        if size < 1024 {
            return Err(Error::invalid(
                "posix_trace_attr_setlogsize",
                format!("log size {size} below 1024 bytes"),
            )
            .with_hint("use a log size of at least 1024 bytes, or APPEND"));
        }
        self.log_size = size;
        Ok(self)
    }

    /// `posix_trace_attr_getmaxdatasize`: bytes of user data kept per event (longer
    /// data is truncated and flagged).
    ///
    /// # References
    /// - [`posix_trace_attr_getmaxdatasize`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getlogsize.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_getmaxdatasize")]
    pub fn max_data_size(&self) -> usize {
        self.max_data
    }

    /// `posix_trace_attr_setmaxdatasize`.
    ///
    /// # Errors
    /// `InvalidInput` above [`MAX_DATA_SIZE_LIMIT`].
    ///
    /// # References
    /// - [`posix_trace_attr_setmaxdatasize`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getlogsize.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_setmaxdatasize")]
    pub fn set_max_data_size(&mut self, n: usize) -> Result<&mut Self> {
        if n > MAX_DATA_SIZE_LIMIT {
            return Err(Error::invalid(
                "posix_trace_attr_setmaxdatasize",
                format!("{n} bytes above the limit of {MAX_DATA_SIZE_LIMIT}"),
            )
            .with_hint("record large data in several events"));
        }
        self.max_data = n;
        Ok(self)
    }

    /// `posix_trace_attr_getmaxsystemeventsize`: the largest system event, record
    /// header and padding included.
    ///
    /// # References
    /// - [`posix_trace_attr_getmaxsystemeventsize`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getlogsize.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_getmaxsystemeventsize")]
    pub fn max_system_event_size(&self) -> usize {
        RECORD_HEADER + MAX_SYS_PAYLOAD.next_multiple_of(8)
    }

    /// `posix_trace_attr_getmaxusereventsize`: the size a user event with `data_len`
    /// bytes of data takes in the stream, header and padding included.
    ///
    /// # References
    /// - [`posix_trace_attr_getmaxusereventsize`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getlogsize.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_getmaxusereventsize")]
    pub fn max_user_event_size(&self, data_len: usize) -> usize {
        RECORD_HEADER + data_len.min(self.max_data).next_multiple_of(8)
    }

    /// `posix_trace_attr_getinherited` (default CLOSE_FOR_CHILD).
    ///
    /// # References
    /// - [`posix_trace_attr_getinherited`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getinherited.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_getinherited")]
    pub fn inheritance(&self) -> Inheritance {
        self.inherit
    }

    /// `posix_trace_attr_setinherited`. INHERITED is refused at creation
    /// ([`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported)).
    ///
    /// # References
    /// - [`posix_trace_attr_setinherited`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_attr_getinherited.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_attr_setinherited")]
    pub fn set_inheritance(&mut self, i: Inheritance) -> &mut Self {
        self.inherit = i;
        self
    }

    /// How often, at most, a stream with a log leaves what it holds unwritten
    /// (default [`DEFAULT_FLUSH_INTERVAL`], 100 ms). A posixrt extension: POSIX
    /// leaves the timing of writes to the log to the implementation.
    ///
    /// The flusher thread writes the stream's records to the log at least this
    /// often while there are any, so a process that dies without shutting the
    /// stream down (a kill it cannot catch, a power cut) loses at most this much
    /// of its trace; process exit and SIGINT, SIGTERM, SIGSEGV and SIGABRT write
    /// everything (see [`Trace::create_with_log`](super::Trace::create_with_log)).
    /// These writes add no FLUSH_START / FLUSH_STOP events.
    pub fn flush_interval(&self) -> Duration {
        self.flush_interval
    }

    /// Sets [`flush_interval`](Self::flush_interval).
    ///
    /// # Errors
    /// `InvalidInput` below 1 ms or above 1 hour.
    pub fn set_flush_interval(&mut self, every: Duration) -> Result<&mut Self> {
        if every < Duration::from_millis(1) || every > Duration::from_secs(3600) {
            return Err(Error::invalid(
                "TraceAttr::set_flush_interval",
                format!("flush interval {every:?} outside 1 ms ..= 1 h"),
            )
            .with_hint("pass an interval between 1 ms and 1 hour (default 100 ms)"));
        }
        self.flush_interval = every;
        Ok(self)
    }
}
