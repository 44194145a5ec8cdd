//! Stream status (`struct posix_trace_status_info`).

/// A stream's status (`struct posix_trace_status_info`), from
/// [`Trace::status`](super::Trace::status). Reading it resets the two overrun flags
/// and the flush error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TraceStatus {
    /// `posix_stream_status`: `POSIX_TRACE_RUNNING` (true) or `POSIX_TRACE_SUSPENDED`.
    pub running: bool,
    /// `posix_stream_full_status`: `POSIX_TRACE_FULL`. An UNTIL_FULL stream is
    /// full once it suspended itself (an event did not fit: the events after it
    /// are lost), and while suspended (by [`stop`](super::Trace::stop)) with a
    /// sub-buffer that has no room left for two events of maximum size (a
    /// `start` is ignored then); never while it runs (its next event is
    /// recorded, or stops it; one that finds no room while a `start`, `stop`
    /// or `clear` holds the stream's control lock is lost, shows as
    /// `overrun`, and the next event decides). A LOOP or FLUSH stream is full while a
    /// sub-buffer has no room left for two events of maximum size (the next one
    /// may not fit: LOOP overwrites the oldest, FLUSH drops until a flush frees
    /// space); with a large maximum data size in a small stream this comes
    /// early: 2 × (maximum data size + header) bytes before the end.
    pub full: bool,
    /// `posix_stream_overrun_status`: `POSIX_TRACE_OVERRUN`: events were lost since
    /// the last status read.
    pub overrun: bool,
    /// `posix_stream_flush_status`: `POSIX_TRACE_FLUSHING`: a flush is in progress.
    pub flushing: bool,
    /// `posix_stream_flush_error`: the errno of the first failed flush since the last
    /// read, 0 if none.
    pub flush_error: i32,
    /// `posix_log_overrun_status`: events did not fit in the log since the last read.
    pub log_overrun: bool,
    /// `posix_log_full_status`: the log reached its size.
    pub log_full: bool,
}
