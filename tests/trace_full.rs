//! The stream and log full policies at their limits: what is recorded, lost and
//! reported when a stream or a log fills, and attribute values at their extremes.
//!
//! Streams are process-wide (every running stream records every `event()` call of
//! the process), so the tests serialise on one lock.

use std::fs::File;

#[path = "common/trace_files.rs"]
mod trace_files;
use trace_files::{open_log, serial};

use posixrt::trace::{
    self, Event, EventId, LogFullPolicy, StreamFullPolicy, Trace, TraceAttr, TraceLog,
};

fn ids(evs: &[Event]) -> Vec<EventId> {
    evs.iter().map(|e| e.id).collect()
}

/// The largest log size is accepted and works as "no practical limit" with every
/// log full policy (APPEND ignores it): flushing and shutting down must not
/// overflow on it.
#[test]
fn the_largest_log_size_flushes_and_shuts_down() {
    let _g = serial();
    let ev = trace::eventid_open("tf.huge_log").unwrap();
    for policy in [
        LogFullPolicy::Append,
        LogFullPolicy::Loop,
        LogFullPolicy::UntilFull,
    ] {
        let (p, f) = open_log("huge.trace");
        let mut a = TraceAttr::new();
        a.set_log_full_policy(policy);
        a.set_log_size(u64::MAX).unwrap();
        let t = Trace::create_with_log(&a, f).unwrap();
        t.start().unwrap();
        trace::event(ev, &7u64.to_le_bytes());
        t.flush().unwrap();
        t.stop().unwrap();
        t.shutdown().unwrap();
        let mut l = TraceLog::open(&p.0).unwrap();
        let evs: Vec<Event> = l.events().collect::<Result<_, _>>().unwrap();
        let user: Vec<&Event> = evs.iter().filter(|e| e.id == ev).collect();
        assert_eq!(user.len(), 1, "{policy:?}: {:?}", ids(&evs));
        assert_eq!(user[0].data, 7u64.to_le_bytes());
        let st = l.status().unwrap();
        assert!(!st.log_full && !st.log_overrun, "{policy:?}: {st:?}");
    }
}

/// A started UNTIL_FULL stream of the smallest size, filled until it suspended
/// itself.
fn full_until_full_stream(ev: EventId) -> Trace {
    let mut a = TraceAttr::new();
    a.set_stream_size(4096).unwrap();
    a.set_stream_full_policy(StreamFullPolicy::UntilFull);
    let t = Trace::create(&a).unwrap();
    t.start().unwrap();
    for i in 0..1000u64 {
        trace::event(ev, &i.to_le_bytes());
    }
    let st = t.status();
    assert!(!st.running && st.full, "{st:?}");
    t
}

/// POSIX (`posix_trace_start`): "If the trace stream is full, the
/// POSIX_TRACE_START trace event shall not be recorded and the status of the
/// trace stream shall not be changed." A full UNTIL_FULL stream stays suspended
/// (and records nothing) until reading or clearing frees space.
#[test]
fn start_is_ignored_while_an_until_full_stream_is_full() {
    let _g = serial();
    let ev = trace::eventid_open("tf.start_full").unwrap();
    let t = full_until_full_stream(ev);
    for _ in 0..20 {
        t.start().unwrap();
        let st = t.status();
        assert!(!st.running && st.full, "start on a full stream: {st:?}");
        trace::event(ev, b"suspended");
    }
    // Cancelling the automatic resume does not make it startable while full.
    t.stop().unwrap();
    t.start().unwrap();
    assert!(!t.status().running);
    let evs: Vec<Event> = t.events().collect();
    let starts = evs.iter().filter(|e| e.id == EventId::START).count();
    let stops: Vec<&Event> = evs.iter().filter(|e| e.id == EventId::STOP).collect();
    assert_eq!(starts, 1, "only the first start recorded START");
    assert_eq!(stops.len(), 1);
    assert_eq!(
        stops[0].data,
        1u32.to_le_bytes(),
        "STOP reason 1 = stream full"
    );
    assert!(evs.iter().all(|e| e.data != b"suspended"));
    // Read empty, it starts again.
    let st = t.status();
    assert!(!st.running && !st.full, "{st:?}");
    t.start().unwrap();
    assert!(t.status().running);
    assert_eq!(ids(&t.events().collect::<Vec<_>>()), [EventId::START]);
}

/// An UNTIL_FULL stream loses the event that did not fit, after everything it
/// kept: its OVERFLOW comes where the loss happened, just before the STOP that
/// suspended the stream, not before the oldest event. The events recorded
/// while it was suspended are lost too, after the STOP.
#[test]
fn until_full_reports_its_loss_where_it_happened() {
    let _g = serial();
    let ev = trace::eventid_open("tf.until_full_loss").unwrap();
    let t = full_until_full_stream(ev);
    let evs: Vec<Event> = std::iter::from_fn(|| t.try_getnext().unwrap()).collect();
    let got = ids(&evs);
    let n = got.len();
    assert_eq!(got[0], EventId::START, "{got:?}");
    assert_eq!(got[1], ev);
    // ... the kept events, then the loss, the STOP, the losses while
    // suspended, and the automatic resume.
    assert_eq!(
        got[n - 7..],
        [
            ev,
            EventId::OVERFLOW,
            EventId::RESUME,
            EventId::STOP,
            EventId::OVERFLOW,
            EventId::RESUME,
            EventId::START
        ],
        "{got:?}"
    );
    let ovf = &evs[n - 6];
    assert_eq!(ovf.data[..8], 1u64.to_le_bytes(), "one event lost");
    assert!(ovf.timestamp >= evs[n - 7].timestamp);
    assert!(ovf.timestamp <= evs[n - 4].timestamp);
    let kept = got.iter().filter(|&&i| i == ev).count() as u64;
    let after = &evs[n - 3];
    assert_eq!(after.data[..8], (1000 - kept - 1).to_le_bytes());
    // The resume's START (this thread's next record) ends that run of losses.
    assert_eq!(
        after.timestamp,
        evs[n - 1].timestamp,
        "stamped as the START"
    );
    assert_eq!(got.iter().filter(|&&i| i == EventId::OVERFLOW).count(), 2);
}

/// `posix_trace_get_status` reports FLUSHING while a flush is in progress, so it
/// must not wait for the flush: here an explicit flush of over 4 MiB of log
/// blocks in a write to a pipe nobody reads yet, midway through its events.
#[test]
fn status_answers_while_a_large_flush_blocks_in_write() {
    use std::io::Read;
    use std::os::fd::{FromRawFd, IntoRawFd};
    use std::time::{Duration, Instant};
    let _g = serial();
    let (r, w) = rustix::pipe::pipe().unwrap();
    // SAFETY: each fd is owned exactly once, by the File it becomes.
    let (mut reader, writer) = unsafe {
        (
            File::from_raw_fd(r.into_raw_fd()),
            File::from_raw_fd(w.into_raw_fd()),
        )
    };
    let mut a = TraceAttr::new();
    a.set_stream_size(16 << 20).unwrap();
    a.set_stream_full_policy(StreamFullPolicy::UntilFull);
    a.set_log_full_policy(LogFullPolicy::Append);
    a.set_flush_interval(Duration::from_secs(3600)).unwrap();
    let t = Trace::create_with_log(&a, writer).unwrap();
    let ev = trace::eventid_open("tf.large_flush").unwrap();
    t.start().unwrap();
    let n = 450_000u64; // over 4 MiB in event blocks (12 bytes or more each)
    for i in 0..n {
        trace::event(ev, &i.to_le_bytes());
    }
    assert!(!t.status().overrun);
    let (tx, rx) = std::sync::mpsc::channel();
    let mut drain = None;
    let got = std::thread::scope(|s| {
        let flush = s.spawn(|| t.flush());
        // The pipe fills: the flush is blocked in a write.
        let deadline = Instant::now() + Duration::from_secs(20);
        while rustix::io::ioctl_fionread(&reader).unwrap() < 60 << 10 {
            assert!(Instant::now() < deadline, "the flush never wrote");
            std::thread::sleep(Duration::from_millis(1));
        }
        let t = &t;
        s.spawn(move || tx.send(t.status()).unwrap());
        let got = rx.recv_timeout(Duration::from_secs(20));
        // Unblock the flush whatever happened (the log ends at shutdown).
        drain = Some(std::thread::spawn(move || {
            let mut all = Vec::new();
            reader.read_to_end(&mut all).unwrap();
            all
        }));
        flush.join().unwrap().unwrap();
        got
    });
    t.stop().unwrap();
    t.shutdown().unwrap();
    drain.unwrap().join().unwrap();
    let st = got.expect("status() waited for the flush");
    assert!(st.flushing, "{st:?}");
}

/// Shutting down an UNTIL_FULL stream with a log that suspended itself: the
/// shutdown's final flush frees the sub-buffer, which must not resume the
/// stream on its way out (its slot stayed marked running, and the next stream
/// created there ran and recorded without being started).
#[test]
fn shutdown_of_a_full_until_full_stream_does_not_resume_it() {
    let _g = serial();
    let ev = trace::eventid_open("tf.shutdown_full").unwrap();
    let (_p, f) = open_log("shutdown_full.trace");
    let mut a = TraceAttr::new();
    a.set_stream_size(4096).unwrap();
    a.set_stream_full_policy(StreamFullPolicy::UntilFull);
    // Only the shutdown writes the log.
    a.set_flush_interval(std::time::Duration::from_secs(3600))
        .unwrap();
    let t = Trace::create_with_log(&a, f).unwrap();
    t.start().unwrap();
    for i in 0..1000u64 {
        trace::event(ev, &i.to_le_bytes());
    }
    let st = t.status();
    assert!(!st.running && st.full, "{st:?}");
    t.shutdown().unwrap();
    // A new stream, in the slot just freed (the lowest free one).
    let t2 = Trace::create(&TraceAttr::new()).unwrap();
    let st = t2.status();
    trace::event(ev, &[1]);
    let evs: Vec<Event> = t2.events().collect();
    t2.shutdown().unwrap();
    assert!(!st.running, "a new stream is created suspended");
    assert_eq!(ids(&evs), [], "it records nothing before it is started");
}

/// Fills a started UNTIL_FULL stream with `ev` events until it suspends
/// itself, twice: the first time it is read only until it resumes (half
/// empty: its first STOP is still unread), the second time not at all. Returns
/// the events read in between.
fn two_runs_of_losses(t: &Trace, ev: EventId) -> Vec<Event> {
    let mut i = 0u64;
    let mut fill = || {
        for _ in 0..10_000 {
            if !t.status().running {
                return;
            }
            trace::event(ev, &i.to_le_bytes());
            i += 1;
        }
        panic!("the stream never filled");
    };
    fill();
    let mut read = Vec::new();
    while !t.status().running {
        read.push(t.try_getnext().unwrap().expect("resumed before empty"));
    }
    assert!(t.status().running);
    fill();
    read
}

/// Checks that each STOP of a full stream comes right after its own loss: an
/// OVERFLOW of one event of this thread, then RESUME.
fn each_loss_before_its_stop(evs: &[Event]) {
    let got = ids(evs);
    // The system events only, for the messages.
    let sys: Vec<(EventId, &[u8])> = evs
        .iter()
        .filter(|e| e.id.is_system())
        .map(|e| (e.id, &e.data[..]))
        .collect();
    let stops: Vec<usize> = (0..evs.len())
        .filter(|&i| evs[i].id == EventId::STOP && evs[i].data == 1u32.to_le_bytes())
        .collect();
    assert_eq!(stops.len(), 2, "{sys:?}");
    let tid = rustix::thread::gettid().as_raw_nonzero().get() as u32;
    for s in stops {
        assert_eq!(
            got[s - 2..=s],
            [EventId::OVERFLOW, EventId::RESUME, EventId::STOP],
            "{sys:?}"
        );
        let ovf = &evs[s - 2];
        assert_eq!(
            (&ovf.data[..8], ovf.tid),
            (&1u64.to_le_bytes()[..], tid),
            "one event lost before each STOP: {sys:?}"
        );
    }
    assert_eq!(got.iter().filter(|&&i| i == EventId::OVERFLOW).count(), 2);
}

/// An UNTIL_FULL stream read only until it resumes still holds its first STOP
/// when it fills again: each run of losses is reported with the STOP that
/// ended it (one event each), not both with the first STOP.
#[test]
fn until_full_reports_each_run_of_losses_with_its_own_stop() {
    let _g = serial();
    let ev = trace::eventid_open("tf.two_runs").unwrap();
    let mut a = TraceAttr::new();
    a.set_stream_size(4096).unwrap();
    a.set_stream_full_policy(StreamFullPolicy::UntilFull);
    let t = Trace::create(&a).unwrap();
    t.start().unwrap();
    let mut evs = two_runs_of_losses(&t, ev);
    evs.extend(std::iter::from_fn(|| t.try_getnext().unwrap()));
    each_loss_before_its_stop(&evs);
    t.shutdown().unwrap();
}

/// As above, with both STOPs written to the log by one flush.
#[test]
fn until_full_logs_each_run_of_losses_with_its_own_stop() {
    let _g = serial();
    let ev = trace::eventid_open("tf.two_runs_log").unwrap();
    let (p, f) = open_log("two_runs.trace");
    let mut a = TraceAttr::new();
    a.set_stream_size(4096).unwrap();
    a.set_stream_full_policy(StreamFullPolicy::UntilFull);
    a.set_log_full_policy(LogFullPolicy::Append);
    // Only the explicit flush writes the log.
    a.set_flush_interval(std::time::Duration::from_secs(3600))
        .unwrap();
    let t = Trace::create_with_log(&a, f).unwrap();
    t.start().unwrap();
    let mut evs = two_runs_of_losses(&t, ev);
    t.flush().unwrap();
    t.shutdown().unwrap();
    let mut l = TraceLog::open(&p.0).unwrap();
    evs.extend(l.events().map(|e| e.unwrap()));
    each_loss_before_its_stop(&evs);
}

/// POSIX (`posix_trace_get_status`): POSIX_TRACE_FULL says the stream's space
/// is exhausted, and an UNTIL_FULL stream then stops, losing the events after.
/// So its status says full exactly while events are lost for fullness: an
/// event recorded while the status said full (it used to say so near the
/// end, two events of maximum size before it, while events still fitted and
/// stop() still stopped the stream) contradicts it, as would one lost while
/// it said not full other than the event that found no room (which stops
/// the stream). A large maximum data size makes the difference wide.
#[test]
fn an_until_full_stream_is_full_exactly_while_it_loses_events() {
    let _g = serial();
    let ev = trace::eventid_open("tf.full_status").unwrap();
    let mut a = TraceAttr::new();
    a.set_stream_size(4096).unwrap();
    a.set_max_data_size(1024).unwrap();
    a.set_stream_full_policy(StreamFullPolicy::UntilFull);
    let t = Trace::create(&a).unwrap();
    t.start().unwrap();
    let mut i = 0u64;
    loop {
        assert!(i < 10_000, "the stream never filled");
        // Each status read resets the overrun flag: `after.overrun` says
        // whether event `i` was lost.
        let before = t.status();
        trace::event(ev, &i.to_le_bytes());
        let after = t.status();
        if before.full {
            assert!(
                after.overrun,
                "event {i} recorded while the status said full: {before:?}"
            );
        } else if after.overrun {
            assert!(
                before.running && after.full && !after.running,
                "event {i} lost while the status said not full: {before:?} then {after:?}"
            );
        }
        if !after.running {
            break;
        }
        i += 1;
    }
    // Full now: events are lost, the status says so, stop has no effect
    // (it records no STOP; the stream stays full).
    trace::event(ev, b"lost");
    let st = t.status();
    assert!(!st.running && st.full && st.overrun, "{st:?}");
    t.stop().unwrap();
    let st = t.status();
    assert!(!st.running && st.full, "{st:?}");
    let stops = t.events().filter(|e| e.id == EventId::STOP).count();
    assert_eq!(stops, 1, "the STOP of fullness");
    t.shutdown().unwrap();
}
