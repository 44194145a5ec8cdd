//! Integration tests of the POSIX trace facility (`posixrt::trace`).
//!
//! Streams are process-wide (every running stream records every `event()` call of
//! the process), so the tests serialise on one lock.

use std::fs::File;
use std::time::{Duration, Instant};

#[path = "common/child.rs"]
mod child;
#[path = "common/trace_files.rs"]
mod trace_files;
use trace_files::{log_events, open_log, serial, tmp, TempPath};

use posixrt::trace::{
    self, sys, Event, EventId, EventSet, FillWhat, FilterHow, Inheritance, LogFullPolicy,
    StreamFullPolicy, Trace, TraceAttr, TraceLog,
};
use posixrt::ErrorKind;

fn ids(evs: &[Event]) -> Vec<EventId> {
    evs.iter().map(|e| e.id).collect()
}

fn seq(e: &Event) -> u64 {
    u64::from_le_bytes(e.data[..8].try_into().unwrap())
}

/// Records events of id `ev` whose data is each number of `seqs`.
fn emit_numbered(ev: EventId, seqs: std::ops::Range<u64>) {
    for i in seqs {
        trace::event(ev, &i.to_le_bytes());
    }
}

/// The numbers ([`seq`]) of the events of id `ev` in `evs`, in order.
fn user_seqs(evs: &[Event], ev: EventId) -> Vec<u64> {
    evs.iter().filter(|e| e.id == ev).map(seq).collect()
}

fn attr_with(f: impl FnOnce(&mut TraceAttr)) -> TraceAttr {
    let mut a = TraceAttr::new();
    f(&mut a);
    a
}

#[test]
fn start_stop_events_and_ignored_repeats() {
    let _g = serial();
    let t = Trace::create(&TraceAttr::new()).unwrap();
    let ev = trace::eventid_open("tt.start_stop").unwrap();
    trace::event(ev, b"before"); // suspended: not recorded
    assert!(!t.status().running);
    t.start().unwrap();
    t.start().unwrap(); // ignored
    assert!(t.status().running);
    trace::event(ev, &7u64.to_le_bytes());
    t.stop().unwrap();
    t.stop().unwrap(); // ignored
    assert!(!t.status().running);
    trace::event(ev, b"after");
    let evs: Vec<Event> = t.events().collect();
    assert_eq!(ids(&evs), [EventId::START, ev, EventId::STOP]);
    let pid = std::process::id();
    assert!(evs.iter().all(|e| e.pid == pid));
    assert_eq!(evs[1].data, 7u64.to_le_bytes());
    assert_eq!(evs[2].data, 0u32.to_le_bytes(), "STOP reason 0 = stop()");
    let tid = rustix::thread::gettid().as_raw_nonzero().get() as u32;
    assert!(evs.iter().all(|e| e.tid == tid));
    assert!(evs.windows(2).all(|w| w[0].timestamp <= w[1].timestamp));
    // Timestamps are CLOCK_MONOTONIC.
    let now = trace::now();
    assert!(evs[2].timestamp <= now && now - evs[2].timestamp < Duration::from_secs(10));
    t.shutdown().unwrap();
}

#[test]
fn event_id_rules() {
    let _g = serial();
    let a = trace::eventid_open("tt.ids.a").unwrap();
    let b = trace::eventid_open("tt.ids.b").unwrap();
    assert_eq!(trace::eventid_open("tt.ids.a").unwrap(), a);
    assert!(a.equal(a) && !a.equal(b));
    assert!(!a.is_system());
    let t = Trace::create(&TraceAttr::new()).unwrap();
    assert_eq!(
        t.eventid_open("tt.ids.a").unwrap(),
        a,
        "per-stream open gives the process id"
    );
    assert_eq!(t.eventid_name(a).unwrap(), "tt.ids.a");
    assert_eq!(t.eventid_name(EventId::START).unwrap(), "posix_trace_start");
    assert_eq!(
        t.eventid_name(EventId::UNNAMED_USER).unwrap(),
        "posix_trace_unnamed_userevent"
    );
    let names: Vec<String> = t.event_types().map(|t| t.name).collect();
    for n in [
        "posix_trace_start",
        "posix_trace_stop",
        "posix_trace_filter",
        "posix_trace_overflow",
        "posix_trace_resume",
        "posix_trace_flush_start",
        "posix_trace_flush_stop",
        "posix_trace_error",
        "tt.ids.a",
        "tt.ids.b",
    ] {
        assert!(
            names.iter().any(|x| x == n),
            "{n} missing from the type list"
        );
    }
    assert_eq!(
        trace::eventid_open("").unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    let long = "x".repeat(trace::TRACE_EVENT_NAME_MAX + 1);
    assert_eq!(
        trace::eventid_open(&long).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        t.eventid_name(EventId::from_raw(1000).unwrap())
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidInput
    );
    assert!(EventId::from_raw(trace::ID_SPACE as u16).is_none());
}

#[test]
fn event_sets() {
    let _g = serial();
    static L: [sys::Field; 1] = [sys::Field {
        name: "x",
        ty: sys::FieldType::U32,
    }];
    let modev = sys::register("tt_sets_sys", &L).unwrap();
    let user = trace::eventid_open("tt.sets.user").unwrap();
    let mut s = EventSet::empty();
    assert!(s.is_empty() && !s.contains(EventId::START));
    s.add(user);
    s.add(user); // adding twice is fine
    assert!(s.contains(user));
    s.del(user);
    s.del(user); // deleting a non-member is fine
    assert!(!s.contains(user));
    let mut sysset = EventSet::empty();
    sysset.fill(FillWhat::System);
    assert!(
        sysset.contains(EventId::START)
            && sysset.contains(modev)
            && sysset.contains(EventId::ERROR)
    );
    assert!(!sysset.contains(user) && !sysset.contains(EventId::UNNAMED_USER));
    let mut wopid = EventSet::empty();
    wopid.fill(FillWhat::WithoutPid);
    assert!(wopid.contains(EventId::OVERFLOW) && wopid.contains(EventId::ERROR));
    assert!(
        !wopid.contains(EventId::FLUSH_START),
        "a flush runs in the process"
    );
    assert!(!wopid.contains(EventId::START) && !wopid.contains(modev));
    let mut all = EventSet::empty();
    all.fill(FillWhat::All);
    assert!(all.contains(user) && all.contains(EventId::STOP));
}

#[test]
fn filters_and_filter_events() {
    let _g = serial();
    let keep = trace::eventid_open("tt.filter.keep").unwrap();
    let drop_ = trace::eventid_open("tt.filter.drop").unwrap();
    let t = Trace::create(&TraceAttr::new()).unwrap();
    assert!(t.filter().is_empty(), "a new stream's filter is empty");
    t.start().unwrap();
    let mut s = EventSet::empty();
    s.add(drop_);
    t.set_filter(&s, FilterHow::Set).unwrap();
    assert_eq!(t.filter(), s);
    trace::event(keep, b"k");
    trace::event(drop_, b"d");
    let mut s2 = EventSet::empty();
    s2.add(keep);
    t.set_filter(&s2, FilterHow::Add).unwrap();
    assert!(t.filter().contains(keep) && t.filter().contains(drop_));
    trace::event(keep, b"k2");
    t.set_filter(&s, FilterHow::Sub).unwrap();
    assert!(t.filter().contains(keep) && !t.filter().contains(drop_));
    trace::event(drop_, b"d2");
    // Filtering a system event: STOP is not recorded.
    let mut stop = EventSet::empty();
    stop.add(EventId::STOP);
    t.set_filter(&stop, FilterHow::Add).unwrap();
    t.stop().unwrap();
    let evs: Vec<Event> = t.events().collect();
    assert_eq!(
        ids(&evs),
        [
            EventId::START,
            EventId::FILTER,
            keep,
            EventId::FILTER,
            EventId::FILTER,
            drop_,
            EventId::FILTER
        ]
    );
    // FILTER payload: old set then new set, 128 bytes each.
    let f1 = &evs[1].data;
    assert_eq!(f1.len(), 256);
    let layout = t
        .event_types()
        .find(|x| x.id == EventId::FILTER)
        .unwrap()
        .fields;
    let vals = sys::decode(&layout, f1).unwrap();
    assert_eq!(vals[0], ("old", sys::Value::Set(vec![])));
    assert_eq!(vals[1], ("new", sys::Value::Set(vec![drop_.raw()])));
    assert_eq!(evs[5].data, b"d2");
}

#[test]
fn data_truncation() {
    let _g = serial();
    let a = attr_with(|a| {
        a.set_max_data_size(8).unwrap();
    });
    assert_eq!(a.max_user_event_size(100), 16 + 8);
    assert_eq!(a.max_user_event_size(3), 16 + 8);
    let t = Trace::create(&a).unwrap();
    let ev = trace::eventid_open("tt.trunc").unwrap();
    t.start().unwrap();
    trace::event(ev, b"0123456789abcdef");
    trace::event(ev, b"01234567");
    t.stop().unwrap();
    let evs: Vec<Event> = t.events().filter(|e| e.id == ev).collect();
    assert_eq!(evs.len(), 2);
    assert!(evs[0].truncated);
    assert_eq!(evs[0].data, b"01234567");
    assert!(!evs[1].truncated);
    // Reading into a small buffer truncates too, and says so.
    t.start().unwrap();
    trace::event(ev, b"abcdefgh");
    let mut buf = [0u8; 3];
    let _start = t.getnext_into(&mut buf).unwrap().unwrap();
    let info = t.getnext_into(&mut buf).unwrap().unwrap();
    assert_eq!(info.id, ev);
    assert_eq!((info.data_len, info.truncated, &buf), (3, true, b"abc"));
    assert_eq!(
        TraceAttr::new()
            .set_max_data_size(trace::MAX_DATA_SIZE_LIMIT + 1)
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidInput
    );
}

#[test]
fn getnext_blocks_timed_and_try() {
    let _g = serial();
    let t = Trace::create(&TraceAttr::new()).unwrap();
    let ev = trace::eventid_open("tt.block").unwrap();
    // Suspended and empty: getnext does not block.
    assert_eq!(t.getnext().unwrap(), None);
    t.start().unwrap();
    assert_eq!(t.try_getnext().unwrap().unwrap().id, EventId::START);
    assert_eq!(t.try_getnext().unwrap(), None);
    let err = t
        .timed_getnext(Instant::now() + Duration::from_millis(30))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut);
    assert_eq!(err.errno(), Some(libc::ETIMEDOUT));
    let h = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        trace::event(ev, b"late");
    });
    let e = t
        .getnext()
        .unwrap()
        .expect("getnext blocks until the event arrives");
    assert_eq!((e.id, e.data.as_slice()), (ev, &b"late"[..]));
    h.join().unwrap();
    let h = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        trace::event(ev, b"timed");
    });
    let e = t
        .timed_getnext(Instant::now() + Duration::from_secs(30))
        .unwrap()
        .unwrap();
    assert_eq!(e.data, b"timed");
    h.join().unwrap();
    let past = std::time::SystemTime::now() - Duration::from_secs(1);
    assert_eq!(
        t.timed_getnext_realtime(past).unwrap_err().kind(),
        ErrorKind::TimedOut
    );
    trace::event(ev, b"rt");
    let soon = std::time::SystemTime::now() + Duration::from_secs(30);
    assert_eq!(t.timed_getnext_realtime(soon).unwrap().unwrap().data, b"rt");
    t.stop().unwrap();
    assert_eq!(t.getnext().unwrap().unwrap().id, EventId::STOP);
    assert_eq!(t.getnext().unwrap(), None);
}

/// Records user events with 8 bytes of data until the sum of maximum sizes reaches
/// exactly the stream size (START included), and checks none is lost.
fn boundary(policy: StreamFullPolicy) {
    let size = 4096;
    let a = attr_with(|a| {
        a.set_stream_size(size).unwrap();
        a.set_stream_full_policy(policy);
    });
    let t = Trace::create(&a).unwrap();
    let ev = trace::eventid_open("tt.boundary").unwrap();
    let start_size = a.max_user_event_size(0); // START has no payload: 16 bytes
    let per = a.max_user_event_size(8);
    assert_eq!((size - start_size) % per, 0, "the test fills exactly");
    let n = (size - start_size) / per;
    t.start().unwrap();
    emit_numbered(ev, 0..n as u64);
    let st = t.status();
    assert!(!st.overrun, "{policy:?}: nothing lost at the boundary");
    assert!(st.running && !st.full, "{policy:?}: {st:?}");
    let evs: Vec<Event> = std::iter::from_fn(|| t.try_getnext().unwrap()).collect();
    assert_eq!(evs.len(), n + 1);
    assert_eq!(evs[0].id, EventId::START);
    for (i, e) in evs[1..].iter().enumerate() {
        assert_eq!((e.id, seq(e)), (ev, i as u64));
    }
    t.shutdown().unwrap();
}

#[test]
fn lossless_guarantee_exactly_at_the_boundary() {
    let _g = serial();
    boundary(StreamFullPolicy::UntilFull);
    boundary(StreamFullPolicy::Loop);
}

#[test]
fn stream_loop_overwrites_oldest_and_sets_overrun() {
    let _g = serial();
    let a = attr_with(|a| {
        a.set_stream_size(4096).unwrap();
        a.set_stream_full_policy(StreamFullPolicy::Loop);
    });
    let t = Trace::create(&a).unwrap();
    let ev = trace::eventid_open("tt.loop").unwrap();
    t.start().unwrap();
    let total = 5000u64;
    emit_numbered(ev, 0..total);
    let st = t.status();
    assert!(st.overrun && st.full && st.running, "{st:?}");
    assert!(!t.status().overrun, "overrun resets when read");
    t.stop().unwrap();
    let evs: Vec<Event> = t.events().collect();
    assert_eq!(evs[0].id, EventId::OVERFLOW);
    let lost = u64::from_le_bytes(evs[0].data[..8].try_into().unwrap());
    assert_eq!(evs[0].pid, 0, "OVERFLOW is a without-pid event");
    assert_eq!(evs[1].id, EventId::RESUME);
    let user = user_seqs(&evs, ev);
    // The newest events survive, contiguous, up to the last one.
    assert_eq!(*user.last().unwrap(), total - 1);
    assert!(user.windows(2).all(|w| w[1] == w[0] + 1));
    assert!(user.len() as u64 * a.max_user_event_size(8) as u64 >= 4096 - 16);
    // Every event is either read or counted as lost (START was overwritten too).
    assert_eq!(lost, total + 1 - user.len() as u64);
    assert_eq!(evs.last().unwrap().id, EventId::STOP);
}

#[test]
fn stream_until_full_suspends_then_resumes_with_start() {
    let _g = serial();
    let a = attr_with(|a| {
        a.set_stream_size(4096).unwrap();
        a.set_stream_full_policy(StreamFullPolicy::UntilFull);
    });
    let t = Trace::create(&a).unwrap();
    let ev = trace::eventid_open("tt.untilfull").unwrap();
    t.start().unwrap();
    emit_numbered(ev, 0..5000u64);
    let st = t.status();
    assert!(!st.running && st.full && st.overrun, "{st:?}");
    trace::event(ev, b"ignored while suspended");
    // Read everything: the stream resumes and records START.
    let evs: Vec<Event> = std::iter::from_fn(|| t.try_getnext().unwrap()).collect();
    let stops: Vec<&Event> = evs.iter().filter(|e| e.id == EventId::STOP).collect();
    assert_eq!(stops.len(), 1);
    assert_eq!(
        stops[0].data,
        1u32.to_le_bytes(),
        "STOP reason 1 = stream full"
    );
    let user = user_seqs(&evs, ev);
    assert!(
        user.len() >= (4096 - 16) / 24,
        "at least the lossless bound was kept"
    );
    assert_eq!(
        user,
        (0..user.len() as u64).collect::<Vec<_>>(),
        "the oldest are kept"
    );
    // The events recorded while it was suspended (the rest of the 5000 and
    // one more) were lost and counted: their OVERFLOW comes after the STOP,
    // then the START of the resume after reading.
    let n = evs.len();
    assert_eq!(
        ids(&evs[n - 4..]),
        [
            EventId::STOP,
            EventId::OVERFLOW,
            EventId::RESUME,
            EventId::START
        ],
        "the losses while suspended, then resumed after reading"
    );
    assert_eq!(
        evs[n - 3].data[..8],
        (5000 - user.len() as u64).to_le_bytes()
    );
    let st = t.status();
    assert!(st.running && !st.full, "{st:?}");
    // Fill again, then clear(): resumes as well.
    emit_numbered(ev, 0..5000u64);
    assert!(!t.status().running);
    t.clear().unwrap();
    assert!(t.status().running);
    let evs: Vec<Event> = t.events().collect();
    assert_eq!(ids(&evs), [EventId::START]);
    // stop() while suspended by a full stream: it stays suspended after reading.
    emit_numbered(ev, 0..5000u64);
    assert!(!t.status().running);
    t.stop().unwrap();
    while t.try_getnext().unwrap().is_some() {}
    assert!(!t.status().running, "stop() cancels the automatic resume");
}

#[test]
fn log_round_trip() {
    let _g = serial();
    let (p, f) = open_log("roundtrip.trace");
    let a = attr_with(|a| {
        a.set_name("roundtrip").unwrap();
    });
    let t = Trace::create_with_log(&a, f).unwrap();
    assert_eq!(
        t.attr().stream_full_policy(),
        StreamFullPolicy::Flush,
        "FLUSH is the default with a log"
    );
    assert_eq!(t.attr().log_full_policy(), LogFullPolicy::Loop);
    let ev = trace::eventid_open("tt.log.roundtrip").unwrap();
    t.start().unwrap();
    emit_numbered(ev, 0..100u64);
    t.flush().unwrap();
    let st = t.status();
    assert_eq!((st.flushing, st.flush_error), (false, 0));
    trace::event(ev, b"after flush");
    t.stop().unwrap();
    let created = t.attr().create_time().unwrap();
    t.shutdown().unwrap();
    let (l, evs) = log_events(&p);
    assert!(l.is_complete());
    let la = l.attr().unwrap();
    assert_eq!(la.name(), "roundtrip");
    assert_eq!(la.create_time(), Some(created));
    assert_eq!(l.pid(), std::process::id());
    assert_eq!(l.name(ev), Some("tt.log.roundtrip"));
    assert_eq!(l.name(EventId::STOP), Some("posix_trace_stop"));
    let user: Vec<&Event> = evs.iter().filter(|e| e.id == ev).collect();
    assert_eq!(user.len(), 101);
    for (i, e) in user[..100].iter().enumerate() {
        assert_eq!(seq(e), i as u64);
        assert_eq!(e.pid, std::process::id());
    }
    assert_eq!(user[100].data, b"after flush");
    let first = evs
        .iter()
        .find(|e| !matches!(e.id, EventId::FLUSH_START | EventId::FLUSH_STOP));
    assert_eq!(first.unwrap().id, EventId::START);
    assert!(ids(&evs).contains(&EventId::FLUSH_START) && ids(&evs).contains(&EventId::FLUSH_STOP));
    let fs = evs.iter().find(|e| e.id == EventId::FLUSH_STOP).unwrap();
    assert_eq!(fs.pid, std::process::id());
    assert_eq!(l.status().unwrap().stream_lost, 0);
    // Rewind gives the same events again.
    let mut l = l;
    l.rewind().unwrap();
    let again: Vec<Event> = l.events().collect::<Result<_, _>>().unwrap();
    assert_eq!(again, evs);
}

/// The log full policies whose logs differ in layout: LOOP writes a record
/// per event, APPEND event blocks.
const LAYOUTS: [LogFullPolicy; 2] = [LogFullPolicy::Loop, LogFullPolicy::Append];

/// A running stream with a log named after `name` and `policy`.
fn started_with_log(name: &str, policy: LogFullPolicy) -> (TempPath, Trace) {
    let (p, f) = open_log(&format!("{name}-{policy:?}.trace"));
    let a = attr_with(|a| {
        a.set_log_full_policy(policy);
    });
    let t = Trace::create_with_log(&a, f).unwrap();
    t.start().unwrap();
    (p, t)
}

#[test]
fn log_cut_at_every_byte() {
    let _g = serial();
    for policy in LAYOUTS {
        log_cut_at_every_byte_with(policy);
    }
}

fn log_cut_at_every_byte_with(policy: LogFullPolicy) {
    let (p, t) = started_with_log("cut", policy);
    let ev = trace::eventid_open("tt.log.cut").unwrap();
    emit_numbered(ev, 0..6u64);
    t.stop().unwrap();
    t.shutdown().unwrap();
    let full = std::fs::read(&p).unwrap();
    let (_, all) = log_events(&p);
    let cut = tmp("cut-part.trace");
    // Where the name of `ev` is complete: the first length at which a cut log knows it.
    let mut named_from = None;
    for len in 0..=full.len() {
        std::fs::write(&cut, &full[..len]).unwrap();
        let mut l = match TraceLog::open(&cut) {
            Ok(l) => l,
            Err(e) => {
                assert!(len < 16, "open failed at {len}: {e}");
                assert_eq!(e.kind(), ErrorKind::Truncated, "at {len}");
                continue;
            }
        };
        if l.name(ev).is_some() && named_from.is_none() {
            named_from = Some(len);
        }
        if named_from.is_some() {
            assert_eq!(l.name(ev), Some("tt.log.cut"), "at {len}");
        }
        let mut got = Vec::new();
        let end = loop {
            match l.next_event() {
                Ok(Some(e)) => got.push(e),
                Ok(None) => break None,
                Err(e) => break Some(e.kind()),
            }
        };
        assert_eq!(
            got[..],
            all[..got.len()],
            "at {len}: a prefix of the events"
        );
        if len == full.len() {
            assert_eq!((end, got.len()), (None, all.len()));
        } else {
            assert_eq!(end, Some(ErrorKind::Truncated), "at {len}");
        }
        // After the error the reader is done.
        assert!(matches!(l.next_event(), Ok(None)));
    }
    // The user name is known before the first user event is complete.
    let first_user_end = {
        let mut n = 0;
        for len in 16..=full.len() {
            std::fs::write(&cut, &full[..len]).unwrap();
            let mut l = TraceLog::open(&cut).unwrap();
            if l.events().filter_map(|e| e.ok()).any(|e| e.id == ev) {
                n = len;
                break;
            }
        }
        n
    };
    assert!(named_from.unwrap() <= first_user_end);
    // A flipped byte is caught by the checksum.
    let mut bad = full.clone();
    let at = full.len() - 20;
    bad[at] ^= 0x40;
    std::fs::write(&cut, &bad).unwrap();
    let mut l = TraceLog::open(&cut).unwrap();
    let r: Result<Vec<Event>, _> = l.events().collect();
    assert!(matches!(
        r.unwrap_err().kind(),
        ErrorKind::Corrupt | ErrorKind::Truncated
    ));
    std::fs::write(&cut, b"not a trace log at all").unwrap();
    assert_eq!(TraceLog::open(&cut).unwrap_err().kind(), ErrorKind::Corrupt);
}

fn log_policy_run(
    policy: LogFullPolicy,
    name: &str,
    n: u64,
) -> (TraceLog, Vec<Event>, EventId, u64) {
    let (p, f) = open_log(name);
    let a = attr_with(|a| {
        a.set_log_full_policy(policy);
        a.set_log_size(4096).unwrap();
    });
    let t = Trace::create_with_log(&a, f).unwrap();
    let ev = trace::eventid_open("tt.log.policy").unwrap();
    t.start().unwrap();
    let mut max_len = 0;
    for i in 0..n {
        trace::event(ev, &i.to_le_bytes());
        if i % 50 == 49 {
            t.flush().unwrap();
            max_len = max_len.max(std::fs::metadata(&p).unwrap().len());
        }
    }
    t.flush().unwrap();
    let st = t.status();
    let full_flag = st.log_full as u64 | (st.log_overrun as u64) << 1 | (st.running as u64) << 2;
    if policy != LogFullPolicy::Append {
        assert!(!t.status().log_overrun, "log overrun resets when read");
    }
    t.stop().unwrap();
    t.shutdown().unwrap();
    if policy != LogFullPolicy::Append {
        // While running, a LOOP log is compacted before it passes twice the log size.
        let end = std::fs::metadata(&p).unwrap().len();
        assert!(
            max_len <= end + 4096 + 64,
            "{max_len} bytes before shutdown, {end} after"
        );
    }
    let (l, evs) = log_events(&p);
    (l, evs, ev, full_flag)
}

#[test]
fn log_full_policies() {
    let _g = serial();
    let n = 500;
    // APPEND: everything, beyond the log size.
    let (l, evs, ev, flags) = log_policy_run(LogFullPolicy::Append, "append.trace", n);
    let user = user_seqs(&evs, ev);
    assert_eq!(user, (0..n).collect::<Vec<_>>());
    assert_eq!(flags, 4, "running, log neither full nor overrun");
    assert!(!l.status().unwrap().log_overrun);
    // UNTIL_FULL: the oldest, then a STOP (reason 2) as the last event. In
    // event blocks, 4096 bytes hold over 256 of them (32-byte records: 127).
    let (l, evs, ev, flags) = log_policy_run(LogFullPolicy::UntilFull, "untilfull.trace", n);
    let user = user_seqs(&evs, ev);
    assert!(
        user.len() > 256 && (user.len() as u64) < n,
        "{} events",
        user.len()
    );
    assert_eq!(user, (0..user.len() as u64).collect::<Vec<_>>());
    let last = evs.last().unwrap();
    assert_eq!(
        (last.id, last.data.as_slice()),
        (EventId::STOP, &2u32.to_le_bytes()[..])
    );
    assert_eq!(flags, 3, "log full and log overrun, the stream suspended");
    let st = l.status().unwrap();
    assert!(st.log_full && st.log_lost > 0);
    // LOOP: the newest events within the log size.
    let (l, evs, ev, flags) = log_policy_run(LogFullPolicy::Loop, "loop.trace", n);
    let user = user_seqs(&evs, ev);
    assert!(!user.is_empty() && (user.len() as u64) < n);
    assert_eq!(*user.last().unwrap(), n - 1);
    assert!(user.windows(2).all(|w| w[1] == w[0] + 1));
    // Each event is a compact record: 24 bytes before its data.
    let bytes: usize = evs.iter().map(|e| 24 + e.data.len()).sum();
    assert!(bytes <= 4096, "{bytes} bytes of events in a 4096-byte log");
    assert_eq!(flags & 6, 6, "log overrun, the stream still running");
    assert!(l.status().unwrap().log_lost > 0);
}

#[test]
fn stream_flush_policy_writes_to_the_log_and_goes_on() {
    let _g = serial();
    let (p, f) = open_log("flushpolicy.trace");
    let a = attr_with(|a| {
        a.set_stream_size(4096).unwrap();
        a.set_log_full_policy(LogFullPolicy::Append);
    });
    let t = Trace::create_with_log(&a, f).unwrap();
    let ev = trace::eventid_open("tt.flushpolicy").unwrap();
    t.start().unwrap();
    // Ten chunks of 200 events (4800 bytes each: more than half the sub-buffer, so
    // the flusher is asked to flush, and less than all of it, so nothing is lost).
    let chunks = 10u64;
    let per = 200u64;
    for c in 0..chunks {
        let before = std::fs::metadata(&p).unwrap().len();
        for i in 0..per {
            trace::event(ev, &(c * per + i).to_le_bytes());
        }
        // The flusher thread (not this one) writes the chunk to the log.
        let deadline = Instant::now() + Duration::from_secs(20);
        // At least 12 bytes per event in an event block (8 bytes of data).
        while std::fs::metadata(&p).unwrap().len() < before + per * 12 {
            assert!(
                Instant::now() < deadline,
                "the flusher did not write chunk {c}"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    assert!(!t.status().overrun);
    t.stop().unwrap();
    t.shutdown().unwrap();
    let (l, evs) = log_events(&p);
    let user = user_seqs(&evs, ev);
    // Five times what the stream holds went through it, none lost, in order.
    assert_eq!(user, (0..chunks * per).collect::<Vec<_>>());
    assert_eq!(l.status().unwrap().stream_lost, 0);
    let flushes = evs.iter().filter(|e| e.id == EventId::FLUSH_START).count();
    assert!(flushes as u64 >= chunks, "{flushes} flushes");
    assert_eq!(
        flushes,
        evs.iter().filter(|e| e.id == EventId::FLUSH_STOP).count()
    );
    // An APPEND log packs its events in blocks: 8 bytes of data take 12 or 13
    // bytes, not a 32-byte record each (names, marks and framing aside).
    let len = std::fs::metadata(&p).unwrap().len();
    let events = evs.len() as u64;
    assert!(len < 4096 + events * 14, "{len} bytes for {events} events");
}

#[test]
fn status_flush_error_is_reported_and_reset() {
    let _g = serial();
    // A log that takes its header, then fails: a pipe whose reader has gone
    // (`/dev/full` is refused at creation, with ENOSPC). Rust programs ignore
    // SIGPIPE: the write fails with EPIPE.
    let (rd, wr) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
    let a = attr_with(|a| {
        a.set_log_full_policy(LogFullPolicy::Append);
    });
    let t = Trace::create_with_log(&a, File::from(wr)).unwrap();
    drop(rd);
    t.start().unwrap();
    let err = t.flush().unwrap_err();
    assert_eq!(err.errno(), Some(libc::EPIPE));
    let st = t.status();
    assert_eq!(st.flush_error, libc::EPIPE);
    assert_eq!(
        t.status().flush_error,
        0,
        "the flush error resets when read"
    );
    t.stop().unwrap();
    // The ERROR event went to the stream, with the errno.
    let evs: Vec<Event> = t.events().collect();
    let e = evs
        .iter()
        .find(|e| e.id == EventId::ERROR)
        .expect("an ERROR event");
    assert_eq!(e.data, libc::EPIPE.to_le_bytes());
}

#[test]
fn concurrent_threads_lose_nothing_under_the_bound() {
    let _g = serial();
    let threads = 4u64;
    let per = 2000u64;
    let a = attr_with(|a| {
        a.set_stream_size(per as usize * 24 + 64).unwrap();
        a.set_stream_full_policy(StreamFullPolicy::UntilFull);
    });
    let t = Trace::create(&a).unwrap();
    let ev = trace::eventid_open("tt.concurrent").unwrap();
    t.start().unwrap();
    let hs: Vec<_> = (0..threads)
        .map(|k| {
            std::thread::spawn(move || {
                for i in 0..per {
                    trace::event(ev, &(k << 32 | i).to_le_bytes());
                }
                rustix::thread::gettid().as_raw_nonzero().get() as u32
            })
        })
        .collect();
    let tids: Vec<u32> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    t.stop().unwrap();
    assert!(!t.status().overrun);
    let evs: Vec<Event> = t.events().collect();
    let user: Vec<&Event> = evs.iter().filter(|e| e.id == ev).collect();
    assert_eq!(user.len() as u64, threads * per);
    for k in 0..threads {
        let mine: Vec<u64> = user
            .iter()
            .filter(|e| seq(e) >> 32 == k)
            .map(|e| seq(e) & 0xffff_ffff)
            .collect();
        assert_eq!(mine, (0..per).collect::<Vec<_>>(), "thread {k} in order");
        let tid = user.iter().find(|e| seq(e) >> 32 == k).unwrap().tid;
        assert_eq!(tid, tids[k as usize]);
    }
    assert!(
        evs.windows(2).all(|w| w[0].timestamp <= w[1].timestamp),
        "merged oldest first"
    );
}

#[test]
fn system_event_catalogue() {
    let _g = serial();
    static L: [sys::Field; 2] = [
        sys::Field {
            name: "fd",
            ty: sys::FieldType::I32,
        },
        sys::Field {
            name: "len",
            ty: sys::FieldType::U64,
        },
    ];
    let id = sys::register("tt_cat_write", &L).unwrap();
    assert_eq!(sys::register("tt_cat_write", &L).unwrap(), id);
    static L2: [sys::Field; 1] = [sys::Field {
        name: "fd",
        ty: sys::FieldType::I32,
    }];
    assert_eq!(
        sys::register("tt_cat_write", &L2).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert!(id.is_system());
    let t = Trace::create(&TraceAttr::new()).unwrap();
    assert!(!sys::enabled());
    t.start().unwrap();
    assert!(sys::enabled());
    let mut p = Vec::new();
    p.extend_from_slice(&(-3i32).to_le_bytes());
    p.extend_from_slice(&4096u64.to_le_bytes());
    sys::emit(id, &p);
    let mut f = EventSet::empty();
    f.fill(FillWhat::System);
    t.set_filter(&f, FilterHow::Set).unwrap();
    sys::emit(id, &p); // filtered
    t.stop().unwrap(); // STOP filtered too
    let evs: Vec<Event> = t.events().collect();
    // (The change itself is recorded: the filter before it admitted FILTER.)
    assert_eq!(ids(&evs), [EventId::START, id, EventId::FILTER]);
    let ty = t.event_types().find(|x| x.id == id).unwrap();
    let v = sys::decode(&ty.fields, &evs[1].data).unwrap();
    assert_eq!(v, [("fd", sys::Value::I(-3)), ("len", sys::Value::U(4096))]);
}

#[test]
fn refused_configurations() {
    let _g = serial();
    let other = std::process::id() + 1;
    let e = Trace::create_for_pid(other, &TraceAttr::new()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(e.hint().is_some());
    Trace::create_for_pid(std::process::id(), &TraceAttr::new())
        .unwrap()
        .shutdown()
        .unwrap();
    let mut a = TraceAttr::new();
    a.set_inheritance(Inheritance::Inherited);
    let e = Trace::create(&a).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    let mut a = TraceAttr::new();
    a.set_stream_full_policy(StreamFullPolicy::Flush);
    assert_eq!(
        Trace::create(&a).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        TraceAttr::new().set_stream_size(100).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        TraceAttr::new()
            .set_name(&"n".repeat(trace::TRACE_NAME_MAX + 1))
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidInput
    );
    // TRACE_SYS_MAX streams at once.
    let ts: Vec<Trace> = (0..trace::TRACE_SYS_MAX)
        .map(|_| Trace::create(&TraceAttr::new()).unwrap())
        .collect();
    assert_eq!(
        Trace::create(&TraceAttr::new()).unwrap_err().kind(),
        ErrorKind::OutOfResources
    );
    drop(ts);
    Trace::create(&TraceAttr::new()).unwrap();
}

#[test]
fn default_attributes() {
    let _g = serial();
    let a = TraceAttr::new();
    assert_eq!(
        a.stream_full_policy(),
        StreamFullPolicy::Loop,
        "LOOP without a log"
    );
    assert_eq!(a.log_full_policy(), LogFullPolicy::Loop);
    assert_eq!(a.inheritance(), Inheritance::CloseForChild);
    assert_eq!(a.genversion(), trace::GEN_VERSION);
    assert!(
        a.clock_resolution() > Duration::ZERO && a.clock_resolution() <= Duration::from_micros(1)
    );
    assert_eq!(a.max_system_event_size(), 16 + 256);
    let t = Trace::create(&a).unwrap();
    let ta = t.attr();
    assert!(ta.create_time().is_some());
    assert_eq!(ta.stream_size(), a.stream_size());
}

#[test]
fn forked_child_records_nothing_close_for_child() {
    let _g = serial();
    let t = Trace::create(&TraceAttr::new()).unwrap();
    let ev = trace::eventid_open("tt.fork").unwrap();
    t.start().unwrap();
    // SAFETY: the child only reads atomics, calls methods that do not allocate on
    // these paths, and leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let mut code = 0;
        if sys::enabled() {
            code |= 1; // the child must not be recording
        }
        trace::event(ev, b"child");
        match t.start() {
            Err(e) if e.kind() == ErrorKind::InvalidState => {}
            _ => code |= 2,
        }
        // SAFETY: leaving the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    let status = child::wait_child(pid);
    assert!(libc::WIFEXITED(status));
    assert_eq!(
        libc::WEXITSTATUS(status),
        0,
        "child saw a running stream or could start it"
    );
    trace::event(ev, b"parent");
    t.stop().unwrap();
    let evs: Vec<Event> = t.events().filter(|e| e.id == ev).collect();
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].data, b"parent");
}

#[test]
fn sys_event_static_declaration() {
    let _g = serial();
    static L: [sys::Field; 1] = [sys::Field {
        name: "v",
        ty: sys::FieldType::U32,
    }];
    static E: sys::SysEvent = sys::SysEvent::new("tt_static_sys", &L);
    E.emit(&1u32.to_le_bytes()); // nothing running
    let t = Trace::create(&TraceAttr::new()).unwrap();
    t.start().unwrap();
    E.emit(&2u32.to_le_bytes());
    t.stop().unwrap();
    let id = E.id().unwrap();
    let evs: Vec<Event> = t.events().filter(|e| e.id == id).collect();
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].data, 2u32.to_le_bytes());
    assert_eq!(t.eventid_name(id).unwrap(), "tt_static_sys");
}

#[test]
fn status_flushing_while_the_log_write_blocks() {
    let _g = serial();
    use std::io::Read;
    use std::os::fd::{FromRawFd, IntoRawFd};
    // A pipe nobody reads yet: the flusher's write blocks once 64 KiB are in it.
    let (r, w) = rustix::pipe::pipe().unwrap();
    // SAFETY: each fd is owned exactly once, by the File it becomes.
    let (mut reader, writer) = unsafe {
        (
            File::from_raw_fd(r.into_raw_fd()),
            File::from_raw_fd(w.into_raw_fd()),
        )
    };
    let a = attr_with(|a| {
        a.set_stream_size(256 << 10).unwrap();
        a.set_log_full_policy(LogFullPolicy::Append);
    });
    let t = Trace::create_with_log(&a, writer).unwrap();
    let ev = trace::eventid_open("tt.flushing").unwrap();
    t.start().unwrap();
    // 192 KB in the stream (over half of it), at least 96 KB in the log (12
    // bytes or more per event in an event block).
    let n = 8000u64;
    emit_numbered(ev, 0..n);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !t.status().flushing {
        assert!(Instant::now() < deadline, "the flusher never started");
        std::thread::sleep(Duration::from_millis(1));
    }
    // Blocked in write: still flushing.
    std::thread::sleep(Duration::from_millis(20));
    assert!(t.status().flushing);
    // Drain the pipe: the flush completes.
    // Non-blocking reads: the flush may end (or the next one start) between a
    // status read and a read of the pipe, which must not then block forever.
    rustix::io::ioctl_fionbio(&reader, true).unwrap();
    let mut bytes = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    while t.status().flushing {
        assert!(Instant::now() < deadline, "the flush never finished");
        match reader.read(&mut buf) {
            Ok(k) => bytes.extend_from_slice(&buf[..k]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(e) => panic!("{e}"),
        }
    }
    rustix::io::ioctl_fionbio(&reader, false).unwrap();
    t.stop().unwrap();
    let h = std::thread::spawn(move || {
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).unwrap();
        rest
    });
    t.shutdown().unwrap();
    bytes.extend(h.join().unwrap());
    // What went through the pipe is a complete log with every event.
    let p = tmp("pipe.trace");
    std::fs::write(&p, &bytes).unwrap();
    let (l, evs) = log_events(&p);
    assert!(l.is_complete());
    let user = user_seqs(&evs, ev);
    assert_eq!(user, (0..n).collect::<Vec<_>>());
}

#[test]
fn aio_requests_emit_system_events() {
    let _g = serial();
    use posixrt::aio::Aio;
    use posixrt::trace::catalog;
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let mut f =
        File::from(rustix::fs::memfd_create("trace-aio", rustix::fs::MemfdFlags::empty()).unwrap());
    f.write_all(b"one\ntwo\nthree\n").unwrap();
    let aio = Aio::new().unwrap();
    let t = Trace::create(&TraceAttr::new()).unwrap();
    t.start().unwrap();
    let mut r = aio.read(&f, 4, vec![0u8; 4]).unwrap();
    aio.suspend([&r], None).unwrap();
    let done = r.aio_return().unwrap();
    assert_eq!(done.data(), b"two\n");
    t.stop().unwrap();
    let sub = catalog::AIO_SUBMIT.id().unwrap();
    let com = catalog::AIO_COMPLETE.id().unwrap();
    let evs: Vec<Event> = t.events().filter(|e| e.id == sub || e.id == com).collect();
    assert_eq!(ids(&evs), [sub, com], "{evs:?}");
    let fields = |id| t.event_types().find(|x| x.id == id).unwrap().fields;
    let (fs, fc) = (fields(sub), fields(com));
    let s = sys::decode(&fs, &evs[0].data).unwrap();
    let c = sys::decode(&fc, &evs[1].data).unwrap();
    let fd = f.as_raw_fd() as i64;
    assert_eq!(
        s[1..],
        [
            ("fd", sys::Value::I(fd)),
            ("op", sys::Value::U(0)),
            ("offset", sys::Value::I(4)),
            ("len", sys::Value::U(4)),
            // The effective priority of a SCHED_OTHER submitter.
            ("prio", sys::Value::I(0)),
        ]
    );
    assert_eq!(
        c[1..],
        [
            ("fd", sys::Value::I(fd)),
            ("op", sys::Value::U(0)),
            ("offset", sys::Value::I(4)),
            ("len", sys::Value::U(4)),
            ("result", sys::Value::I(4)),
            ("prio", sys::Value::I(0)),
        ]
    );
    assert_eq!(s[0], c[0], "the same request id");
    assert!(evs[0].timestamp <= evs[1].timestamp);
}

#[test]
fn sub_buffers_of_exited_threads_are_reclaimed_once_read() {
    let _g = serial();
    let t = Trace::create(&TraceAttr::new()).unwrap();
    let ev = trace::eventid_open("tt.reclaim").unwrap();
    t.start().unwrap(); // START from this thread: one sub-buffer
    assert_eq!(t.sub_buffers(), 1);
    for k in 0..20u64 {
        std::thread::spawn(move || {
            for i in 0..5u64 {
                trace::event(ev, &(k * 100 + i).to_le_bytes());
            }
        })
        .join()
        .unwrap();
    }
    assert_eq!(
        t.sub_buffers(),
        21,
        "exited threads keep their events until read"
    );
    let n = std::iter::from_fn(|| t.try_getnext().unwrap())
        .filter(|e| e.id == ev)
        .count();
    assert_eq!(n, 100);
    assert_eq!(
        t.sub_buffers(),
        1,
        "drained sub-buffers of exited threads are unmapped"
    );
    // The stream goes on working, for this thread and for new ones.
    std::thread::spawn(move || trace::event(ev, b"new"))
        .join()
        .unwrap();
    trace::event(ev, b"main");
    t.stop().unwrap();
    let st = t.status();
    assert!(!st.overrun, "{st:?}");
    let data: Vec<Vec<u8>> = t.events().filter(|e| e.id == ev).map(|e| e.data).collect();
    assert_eq!(data, [b"new".to_vec(), b"main".to_vec()]);
    assert_eq!(t.sub_buffers(), 1);
}

#[test]
fn lossless_guarantee_at_the_boundary_with_flush_policy() {
    let _g = serial();
    let size = 4096;
    let (p, f) = open_log("boundary-flush.trace");
    let a = attr_with(|a| {
        a.set_stream_size(size).unwrap();
        a.set_log_full_policy(LogFullPolicy::Append);
    });
    let t = Trace::create_with_log(&a, f).unwrap();
    assert_eq!(t.attr().stream_full_policy(), StreamFullPolicy::Flush);
    let mut quiet = EventSet::empty();
    quiet.add(EventId::FLUSH_START);
    quiet.add(EventId::FLUSH_STOP);
    quiet.add(EventId::FILTER);
    t.set_filter(&quiet, FilterHow::Set).unwrap();
    let ev = trace::eventid_open("tt.boundary.flush").unwrap();
    let n = (size - a.max_user_event_size(0)) / a.max_user_event_size(8);
    t.start().unwrap();
    emit_numbered(ev, 0..n as u64);
    assert!(!t.status().overrun);
    t.stop().unwrap();
    t.shutdown().unwrap();
    let (l, evs) = log_events(&p);
    let user = user_seqs(&evs, ev);
    assert_eq!(user, (0..n as u64).collect::<Vec<_>>());
    assert_eq!(l.status().unwrap().stream_lost, 0);
}

/// A small deterministic PRNG (xorshift64*) for the reader fuzz test.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Reads a (possibly damaged) log to its end, with a bound on the number of calls so
/// a reader that loops forever fails the test instead of hanging it. Returns the
/// events read and how it ended: `None` after a clean end, else the error kind.
fn read_damaged(path: &std::path::Path, bound: usize) -> (Vec<Event>, Option<ErrorKind>) {
    let mut l = match TraceLog::open(path) {
        Ok(l) => l,
        Err(e) => return (Vec::new(), Some(e.kind())),
    };
    let mut got = Vec::new();
    for _ in 0..bound {
        match l.next_event() {
            Ok(Some(e)) => got.push(e),
            Ok(None) => return (got, None),
            Err(e) => {
                // After an error the reader is done, and stays done.
                assert!(matches!(l.next_event(), Ok(None)));
                assert!(matches!(l.next_event(), Ok(None)));
                return (got, Some(e.kind()));
            }
        }
    }
    panic!("reader did not end within {bound} calls");
}

#[test]
fn log_reader_survives_random_damage() {
    let _g = serial();
    for policy in LAYOUTS {
        log_reader_survives_random_damage_with(policy);
    }
}

fn log_reader_survives_random_damage_with(policy: LogFullPolicy) {
    let (p, t) = started_with_log("fuzz-src", policy);
    let ev = trace::eventid_open("tt.log.fuzz").unwrap();
    for i in 0..12u64 {
        trace::event(ev, &i.to_le_bytes()[..(i as usize % 9)]);
    }
    // Another thread, then this one again, with data over 8 bytes: a block
    // gives tids back and forth, and lengths past its inline codes.
    std::thread::spawn(move || {
        for i in 0..3u8 {
            trace::event(ev, &[i; 12]);
        }
    })
    .join()
    .unwrap();
    trace::event(ev, &[9; 12]);
    t.stop().unwrap();
    t.shutdown().unwrap();
    let full = std::fs::read(&p).unwrap();
    let (_, all) = log_events(&p);
    assert!(all.len() >= 18, "START, 16 events, STOP");
    let tids: std::collections::HashSet<u32> =
        all.iter().filter(|e| e.id == ev).map(|e| e.tid).collect();
    assert_eq!(tids.len(), 2);
    let bound = all.len() + 8;
    let bad = tmp(&format!("fuzz-case-{policy:?}.trace"));
    let ok_kinds = [ErrorKind::Corrupt, ErrorKind::Truncated];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let check = |bytes: &[u8], must_fail: bool, what: &str| {
        std::fs::write(&bad, bytes).unwrap();
        let (got, end) = read_damaged(&bad, bound);
        // Every record is checksummed: whatever is returned is a prefix of the truth.
        assert!(got.len() <= all.len(), "{what}: more events than written");
        assert_eq!(got[..], all[..got.len()], "{what}: a prefix of the events");
        if let Some(k) = end {
            assert!(ok_kinds.contains(&k), "{what}: error kind {k:?}");
        }
        if must_fail {
            assert!(end.is_some(), "{what}: damage went unnoticed");
        }
    };

    // 1. Flip 1..=4 random bytes anywhere (header included): always detected.
    for case in 0..2000 {
        let mut b = full.clone();
        for _ in 0..1 + rng.below(4) {
            let i = rng.below(b.len());
            b[i] ^= 1 + rng.below(255) as u8;
        }
        check(&b, b != full, &format!("flip case {case}"));
    }
    // 2. Cut at a random byte and flip one byte before the cut.
    for case in 0..500 {
        let len = 1 + rng.below(full.len() - 1);
        let mut b = full[..len].to_vec();
        let i = rng.below(len);
        b[i] ^= 1 + rng.below(255) as u8;
        check(&b, true, &format!("cut+flip case {case}"));
    }
    // 3. Random garbage files, 0..300 bytes (sometimes starting with the magic).
    for case in 0..500 {
        let n = rng.below(300);
        let mut b: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
        if case % 2 == 0 && n >= 8 {
            b[..8].copy_from_slice(&trace::LOG_MAGIC);
        }
        check(&b, true, &format!("garbage case {case} ({n} bytes)"));
    }
    // 4. A valid header followed by garbage.
    for case in 0..500 {
        let n = 1 + rng.below(300);
        let mut b = full[..16].to_vec();
        b.extend((0..n).map(|_| rng.next() as u8));
        check(&b, true, &format!("header+garbage case {case}"));
    }
    // 5. Record length fields replaced: zero, just over the cap, the cap with a short
    //    file, u32::MAX, and random values, at the first record and at a later one.
    let second = 16 + 8 + u32::from_le_bytes(full[16..20].try_into().unwrap()) as usize;
    for at in [16, second] {
        for len in [0u32, 1, 7, 1 << 20, (1 << 20) + 1, u32::MAX, 0x8000_0000] {
            let mut b = full.clone();
            b[at..at + 4].copy_from_slice(&len.to_le_bytes());
            check(&b, true, &format!("length {len} at {at}"));
        }
        for case in 0..200 {
            let mut b = full.clone();
            let len = rng.next() as u32;
            b[at..at + 4].copy_from_slice(&len.to_le_bytes());
            check(&b, b != full, &format!("random length case {case} at {at}"));
        }
    }
    // 6. Zero-length file and a bare header: nothing to read, a clear error.
    check(&[], true, "empty file");
    let (_, end) = {
        std::fs::write(&bad, &full[..16]).unwrap();
        read_damaged(&bad, bound)
    };
    assert_eq!(end, Some(ErrorKind::Truncated), "bare header");
    // 7. The intact log still reads cleanly.
    check(&full, false, "intact");
    std::fs::write(&bad, &full).unwrap();
    assert_eq!(read_damaged(&bad, bound), (all.clone(), None));
}

#[test]
fn clear_empties_stream_and_log_but_keeps_service_data() {
    let _g = serial();
    let (p, f) = open_log("clear.trace");
    let a = attr_with(|a| {
        a.set_name("cleared").unwrap();
        a.set_log_full_policy(LogFullPolicy::Append);
    });
    let t = Trace::create_with_log(&a, f).unwrap();
    let mut quiet = EventSet::empty();
    quiet.add(EventId::FLUSH_START);
    quiet.add(EventId::FLUSH_STOP);
    t.set_filter(&quiet, FilterHow::Set).unwrap();
    let before = trace::eventid_open("tt.clear.before").unwrap();
    t.start().unwrap();
    for i in 0..3u64 {
        trace::event(before, &i.to_le_bytes());
    }
    t.flush().unwrap(); // in the log now
    for i in 3..5u64 {
        trace::event(before, &i.to_le_bytes()); // still in the stream
    }
    t.clear().unwrap();
    assert!(t.try_getnext().unwrap().is_none(), "the stream is empty");
    assert!(t.status().running, "clear does not stop the stream");
    let after = trace::eventid_open("tt.clear.after").unwrap();
    trace::event(after, &9u64.to_le_bytes());
    t.stop().unwrap();
    t.shutdown().unwrap();
    let (l, evs) = log_events(&p);
    // Events before the clear are gone from the log, those after it are there.
    assert_eq!(ids(&evs), [after, EventId::STOP]);
    assert_eq!(seq(&evs[0]), 9);
    // The service data survived: attributes, and the names of both event types.
    assert_eq!(l.attr().unwrap().name(), "cleared");
    assert_eq!(l.name(before), Some("tt.clear.before"));
    assert_eq!(l.name(after), Some("tt.clear.after"));
    assert_eq!(l.name(EventId::START), Some("posix_trace_start"));
    assert!(l.is_complete());
}

/// `posix_trace_clear` empties the log as if it were new: a full log is no
/// longer full, and the status says so at once, not only after a later flush
/// (with nothing recorded, none comes).
#[test]
fn clear_resets_the_log_full_status() {
    let _g = serial();
    for policy in [LogFullPolicy::UntilFull, LogFullPolicy::Loop] {
        let (_p, f) = open_log("clear-full.trace");
        let a = attr_with(|a| {
            a.set_log_full_policy(policy);
            a.set_log_size(4096).unwrap();
        });
        let t = Trace::create_with_log(&a, f).unwrap();
        let ev = trace::eventid_open("tt.clear.full").unwrap();
        t.start().unwrap();
        emit_numbered(ev, 0..1000u64);
        t.flush().unwrap();
        assert!(
            t.status().log_full,
            "{policy:?}: 1000 events fill 4096 bytes"
        );
        t.stop().unwrap();
        t.clear().unwrap();
        assert!(
            !t.status().log_full,
            "{policy:?}: the log is empty after clear"
        );
        t.shutdown().unwrap();
    }
}

/// `posix_trace_clear` reinitialises the log as `create_withlog` would: the
/// log overrun status and the status record written at shutdown count only
/// what the log lost after the clear, not the events that did not fit before
/// it (and are gone anyway).
#[test]
fn clear_resets_the_losses_the_log_reports() {
    let _g = serial();
    let (p, f) = open_log("clear-lost.trace");
    let a = attr_with(|a| {
        a.set_log_full_policy(LogFullPolicy::UntilFull);
        a.set_log_size(4096).unwrap();
    });
    let t = Trace::create_with_log(&a, f).unwrap();
    let ev = trace::eventid_open("tt.clear.lost").unwrap();
    t.start().unwrap();
    emit_numbered(ev, 0..1000u64);
    t.flush().unwrap(); // 1000 events overrun 4096 bytes
    t.clear().unwrap();
    assert!(
        !t.status().log_overrun,
        "the log lost nothing since the clear"
    );
    let st = record_7_after_clear(t, ev, &p);
    assert_eq!(
        (st.log_lost, st.log_overrun, st.log_full),
        (0, false, false),
        "{st:?}"
    );
}

/// Starts `t` again after its `clear`, records event 7 of id `ev` and shuts
/// `t` down: the log at `p` holds that event alone of that id (the ones
/// before the clear are gone). The log's status record.
#[track_caller]
fn record_7_after_clear(t: Trace, ev: EventId, p: &std::path::Path) -> trace::LogStatus {
    t.start().unwrap();
    trace::event(ev, &7u64.to_le_bytes());
    t.stop().unwrap();
    t.shutdown().unwrap();
    let (l, evs) = log_events(p);
    assert_eq!(user_seqs(&evs, ev), [7]);
    l.status().unwrap()
}

/// `clear` reinitializes the stream "as if it were returning from
/// posix_trace_create": losses before it are gone with their events, and the
/// next status reports no overrun and not full.
#[test]
fn clear_resets_the_stream_overrun() {
    let _g = serial();
    let a = attr_with(|a| {
        a.set_stream_size(4096).unwrap();
        a.set_stream_full_policy(StreamFullPolicy::Loop);
    });
    let t = Trace::create(&a).unwrap();
    let ev = trace::eventid_open("tt.clear.overrun").unwrap();
    t.start().unwrap();
    emit_numbered(ev, 0..5000u64);
    t.clear().unwrap();
    let st = t.status();
    assert!(!st.overrun && !st.full && st.running, "{st:?}");
    t.shutdown().unwrap();
}

/// The status record a log gets at shutdown counts the stream's losses since
/// the last `clear` only: the events lost before it went with the cleared log.
#[test]
fn clear_resets_the_stream_losses_the_log_reports() {
    let _g = serial();
    let (p, f) = open_log("clear-stream-lost.trace");
    let a = attr_with(|a| {
        a.set_stream_size(4096).unwrap();
        a.set_stream_full_policy(StreamFullPolicy::UntilFull);
    });
    let t = Trace::create_with_log(&a, f).unwrap();
    let ev = trace::eventid_open("tt.clear.stream.lost").unwrap();
    t.start().unwrap();
    // Most are dropped: the stream is full.
    emit_numbered(ev, 0..5000u64);
    t.clear().unwrap();
    let st = record_7_after_clear(t, ev, &p);
    assert_eq!((st.stream_lost, st.stream_overrun), (0, false), "{st:?}");
}

#[test]
fn sub_buffer_memory_is_reported() {
    let _g = serial();
    let a = attr_with(|a| {
        a.set_stream_size(100_000).unwrap();
    });
    let t = Trace::create(&a).unwrap();
    let b = t.sub_buffer_bytes();
    assert!(b.is_power_of_two());
    assert!(
        b >= 100_000 + a.max_user_event_size(a.max_data_size()) + 2 * a.max_system_event_size()
    );
    assert_eq!(b, 131_072);
    assert_eq!(t.sub_buffers(), 0, "nothing mapped before a thread records");
    t.start().unwrap(); // START, recorded from this thread, maps its sub-buffer
    assert_eq!(t.sub_buffers(), 1);
    t.shutdown().unwrap();
}

#[test]
fn opening_a_directory_or_missing_log_is_a_clear_error() {
    let dir = tmp("a-directory");
    std::fs::create_dir_all(&dir).unwrap();
    let e = TraceLog::open(&dir).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("is a directory"), "{e}");
    let e = TraceLog::open(tmp("no-such.trace")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
}

#[test]
fn racing_starts_and_stops_record_one_event_each() {
    let _g = serial();
    let t = std::sync::Arc::new(Trace::create(&TraceAttr::new()).unwrap());
    let rounds = 200;
    for _ in 0..rounds {
        let go = std::sync::Arc::new(std::sync::Barrier::new(2));
        let h = {
            let (t, go) = (t.clone(), go.clone());
            std::thread::spawn(move || {
                go.wait();
                t.start().unwrap();
            })
        };
        go.wait();
        t.start().unwrap();
        h.join().unwrap();
        let go = std::sync::Arc::new(std::sync::Barrier::new(2));
        let h = {
            let (t, go) = (t.clone(), go.clone());
            std::thread::spawn(move || {
                go.wait();
                t.stop().unwrap();
            })
        };
        go.wait();
        t.stop().unwrap();
        h.join().unwrap();
    }
    let evs: Vec<Event> = t.events().collect();
    let starts = evs.iter().filter(|e| e.id == EventId::START).count();
    let stops = evs.iter().filter(|e| e.id == EventId::STOP).count();
    assert_eq!((starts, stops), (rounds, rounds));
    // Alternating, START first.
    let ctl: Vec<EventId> = ids(&evs);
    assert!(ctl.chunks(2).all(|c| c == [EventId::START, EventId::STOP]));
}

#[test]
fn flush_policy_under_overload_ends_each_flush_and_drops_in_runs() {
    let _g = serial();
    let (p, f) = open_log("overload.trace");
    let a = attr_with(|a| {
        a.set_stream_size(4096).unwrap();
        a.set_log_full_policy(LogFullPolicy::Append);
    });
    let t = std::sync::Arc::new(Trace::create_with_log(&a, f).unwrap());
    assert_eq!(t.attr().stream_full_policy(), StreamFullPolicy::Flush);
    let ev = trace::eventid_open("tt.overload").unwrap();
    t.start().unwrap();
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let going = std::sync::Arc::new(AtomicBool::new(false));
    let h = {
        let (stop, going) = (stop.clone(), going.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Relaxed) {
                trace::event(ev, &i.to_le_bytes());
                i += 1;
                if i == 20_000 {
                    going.store(true, Relaxed);
                }
            }
            i
        })
    };
    while !going.load(Relaxed) {
        std::thread::yield_now();
    }
    // A writer that never pauses must not keep a flush going forever: each flush
    // takes what was there when it began, and returns.
    for _ in 0..5 {
        t.flush().unwrap();
    }
    stop.store(true, Relaxed);
    let sent = h.join().unwrap();
    t.stop().unwrap();
    let t = std::sync::Arc::try_unwrap(t).unwrap();
    t.shutdown().unwrap();
    let (l, evs) = log_events(&p);
    let user = user_seqs(&evs, ev);
    let overflows: Vec<&Event> = evs.iter().filter(|e| e.id == EventId::OVERFLOW).collect();
    let lost: u64 = overflows
        .iter()
        .map(|e| u64::from_le_bytes(e.data[..8].try_into().unwrap()))
        .sum();
    // Every event is in the log or counted as lost.
    assert_eq!(user.len() as u64 + lost, sent);
    assert_eq!(l.status().unwrap().stream_lost, lost);
    assert!(user.windows(2).all(|w| w[0] < w[1]), "in order");
    // Once full, the writer drops until half the sub-buffer is free: losses come in
    // runs, each followed by many recorded events, not one OVERFLOW per event.
    let per_run = (t_cap_half(&a) / a.max_user_event_size(8)) as u64;
    assert!(
        user.len() as u64 >= overflows.len().saturating_sub(1) as u64 * per_run,
        "{} events, {} overflows",
        user.len(),
        overflows.len()
    );
}

/// Half a sub-buffer minus the control-event reserve: what a FLUSH writer records
/// at least between two losses.
fn t_cap_half(a: &TraceAttr) -> usize {
    let t = Trace::create(&attr_with(|x| {
        x.set_stream_size(a.stream_size()).unwrap();
        x.set_stream_full_policy(StreamFullPolicy::Loop);
    }))
    .unwrap();
    let b = t.sub_buffer_bytes();
    t.shutdown().unwrap();
    b / 2 - 2 * a.max_system_event_size()
}

/// A log written through flushes is in time order: FLUSH_START used to be written
/// before the older events of the batch it flushed, stamped with the flush time.
#[test]
fn log_with_flushes_is_in_time_order() {
    let _g = serial();
    let (p, f) = open_log("ordered.trace");
    let t = Trace::create_with_log(&TraceAttr::new(), f).unwrap();
    let ev = trace::eventid_open("tt.log.ordered").unwrap();
    t.start().unwrap();
    for i in 0..10u64 {
        trace::event(ev, &i.to_le_bytes());
        std::thread::sleep(Duration::from_micros(200));
    }
    t.flush().unwrap();
    emit_numbered(ev, 10..20u64);
    std::thread::sleep(Duration::from_millis(2));
    t.stop().unwrap();
    t.shutdown().unwrap();
    let (_l, evs) = log_events(&p);
    let user = user_seqs(&evs, ev);
    assert_eq!(user, (0..20).collect::<Vec<_>>());
    for w in evs.windows(2) {
        assert!(
            w[0].timestamp <= w[1].timestamp,
            "log out of time order: {:?} at {:?} then {:?} at {:?}",
            w[0].id,
            w[0].timestamp,
            w[1].id,
            w[1].timestamp
        );
    }
    // FLUSH_START/FLUSH_STOP still bracket each flush: they alternate, and the
    // explicit flush comes after the first ten events (all recorded before it began).
    let marks: Vec<EventId> = ids(&evs)
        .into_iter()
        .filter(|&i| matches!(i, EventId::FLUSH_START | EventId::FLUSH_STOP))
        .collect();
    assert!(marks.len() >= 2 && marks.len() % 2 == 0, "{marks:?}");
    for pair in marks.chunks(2) {
        assert_eq!(pair, [EventId::FLUSH_START, EventId::FLUSH_STOP]);
    }
    let first_start = evs
        .iter()
        .position(|e| e.id == EventId::FLUSH_START)
        .unwrap();
    let tenth = evs.iter().position(|e| e.id == ev && seq(e) == 9).unwrap();
    assert!(tenth < first_start, "{:?}", ids(&evs));
    let span = evs.last().unwrap().timestamp - evs[0].timestamp;
    assert!(span >= Duration::from_millis(2), "span {span:?}");
}

/// A deadline too far ahead for the monotonic clock (a C caller's `{LONG_MAX, 0}`
/// or `Duration::MAX`) means no limit: no panic, and the reader still gets an event
/// recorded while it waits.
#[test]
fn huge_timeouts_mean_no_limit() {
    let _g = serial();
    use posixrt::trace::{self, Trace, TraceAttr};
    use std::time::{Duration, SystemTime};

    let t = std::sync::Arc::new(Trace::create(&TraceAttr::new()).unwrap());
    let id = trace::eventid_open("limits.late").unwrap();
    t.start().unwrap();
    assert_eq!(
        t.try_getnext().unwrap().unwrap().id,
        posixrt::trace::EventId::START
    );
    let far = SystemTime::UNIX_EPOCH + Duration::from_secs(1 << 62);
    for k in 0..2u8 {
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            trace::event(id, &[k]);
        });
        let e = if k == 0 {
            t.timed_getnext_for(Duration::MAX)
        } else {
            t.timed_getnext_realtime(far)
        };
        let e = e.unwrap().unwrap();
        assert_eq!((e.id, e.data.as_slice()), (id, &[k][..]));
        h.join().unwrap();
    }
    t.stop().unwrap();
}

/// Every data length from 0 to 16 bytes reads back as written (the writer's fast
/// path takes up to 8 bytes, the slow path the rest), and a maximum data size of 4
/// truncates and flags longer data on either path.
#[test]
fn every_short_data_length_round_trips() {
    let _g = serial();
    let id = trace::eventid_open("tt.lengths").unwrap();
    for max in [256usize, 4] {
        let t = Trace::create(&attr_with(|a| {
            a.set_max_data_size(max).unwrap();
        }))
        .unwrap();
        t.start().unwrap();
        for n in 0..=16u8 {
            let data: Vec<u8> = (0..n).map(|i| 0xA0 ^ i ^ n).collect();
            trace::event(id, &data);
        }
        t.stop().unwrap();
        let got: Vec<Event> = t.events().filter(|e| e.id == id).collect();
        assert_eq!(got.len(), 17);
        for (n, e) in got.iter().enumerate() {
            let data: Vec<u8> = (0..n as u8).map(|i| 0xA0 ^ i ^ n as u8).collect();
            let keep = n.min(max);
            assert_eq!(e.data, &data[..keep], "max {max}, {n} bytes");
            assert_eq!(e.truncated, n > max, "max {max}, {n} bytes");
        }
    }
}
