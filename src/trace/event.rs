//! Events as read back (`struct posix_trace_event_info` plus data).

use std::time::Duration;

use super::ids::EventId;

/// One event read back from a stream or a log (`posix_trace_event_info` and its data).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// `posix_event_id`.
    pub id: EventId,
    /// `posix_pid`: the recording process (0 for events not associated with a process).
    pub pid: u32,
    /// The kernel thread id (`gettid`) of the recording thread.
    pub tid: u32,
    /// `posix_thread_id`: the recording thread's `pthread_t` (its
    /// `pthread_self()`), 0 where not known: events read from a log (a log
    /// keeps the kernel tid only), and the events the library makes up
    /// (OVERFLOW and RESUME, the flush marks).
    pub thread: u64,
    /// `posix_timestamp`: CLOCK_MONOTONIC time of the event.
    pub timestamp: Duration,
    /// `posix_truncation_status`: the data was longer than the maximum and was cut.
    pub truncated: bool,
    /// `posix_prog_address`: not recorded (always 0): taking the caller's address
    /// would cost more than the rest of the record.
    pub prog_address: u64,
    /// The event's data (user data, or a system event's payload).
    pub data: Vec<u8>,
}

/// Event information without data, as returned by the buffer-filling readers
/// ([`Trace::getnext_into`](super::Trace::getnext_into)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventInfo {
    /// `posix_event_id`.
    pub id: EventId,
    /// `posix_pid`.
    pub pid: u32,
    /// The kernel thread id of the recording thread.
    pub tid: u32,
    /// `posix_thread_id`: the recording thread's `pthread_t` (see [`Event::thread`]).
    pub thread: u64,
    /// `posix_timestamp` (CLOCK_MONOTONIC).
    pub timestamp: Duration,
    /// `posix_truncation_status` is not `POSIX_TRACE_NOT_TRUNCATED`: cut when
    /// recorded, or cut now because the caller's buffer was smaller than the data.
    pub truncated: bool,
    /// `posix_truncation_status` is `POSIX_TRACE_TRUNCATED_READ`: cut now by the
    /// caller's buffer (whether or not it was cut when recorded too, which POSIX
    /// has this override); `truncated` without it is
    /// `POSIX_TRACE_TRUNCATED_RECORD`, the data cut at the maximum data size.
    pub truncated_read: bool,
    /// `posix_prog_address` (always 0).
    pub prog_address: u64,
    /// Bytes of data written to the caller's buffer.
    pub data_len: usize,
}

impl Event {
    /// The data as little-endian `i32`s (the philosophers' numbers).
    pub fn data_i32(&self) -> Option<i32> {
        let b = self.data.get(..4)?;
        Some(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}
