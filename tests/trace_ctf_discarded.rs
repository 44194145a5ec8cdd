//! The CTF export carries the events a log lost into its packets'
//! `events_discarded` (CTF 1.8), so babeltrace2 reports them, where they
//! were lost.

#[path = "common/ctf_read.rs"]
mod ctf_read;
#[path = "common/export_log.rs"]
mod export_log;

use std::fs::File;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use export_log::{big_log, have_babeltrace, make_log, scratch, SERIAL};

use posixrt::trace::{
    self, export, Event, EventId, LogFullPolicy, StreamFullPolicy, Trace, TraceAttr, TraceLog,
};

/// What babeltrace2 reports lost in the CTF trace `out` of `log` (on
/// standard error: `WARNING: Tracer discarded N events between [S.NS] and
/// [S.NS] ...`, wall-clock seconds): each count and its time span, in ns of
/// CLOCK_MONOTONIC as the events are stamped; `None` if babeltrace2 is not
/// installed.
fn discarded(log: &TraceLog, out: &Path) -> Option<Vec<(u64, u64, u64)>> {
    if !have_babeltrace() {
        return None;
    }
    let o = Command::new("babeltrace2")
        .args(["--clock-seconds"])
        .arg(out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "babeltrace2 failed: {err}");
    let a = log.attr().unwrap();
    let off = a.create_time().unwrap().as_nanos() - a.create_time_monotonic().unwrap().as_nanos();
    let num = |s: &str| -> u64 { s.trim().parse().unwrap() };
    let mono = |t: &str| -> u64 {
        let (s, ns) = t.split_once('.').unwrap();
        (u128::from(num(s)) * 1_000_000_000 + u128::from(num(ns)) - off) as u64
    };
    let found = err
        .lines()
        .filter_map(|l| l.strip_prefix("WARNING: Tracer discarded "))
        .map(|l| {
            let (n, rest) = l.split_once(' ').unwrap();
            let times: Vec<u64> = rest
                .split('[')
                .skip(1)
                .map(|t| mono(&t[..t.find(']').unwrap()]))
                .take(2)
                .collect();
            (num(n), times[0], times[1])
        })
        .collect();
    Some(found)
}

/// An OVERFLOW in the log (7 events lost after the second event) gives a
/// packet boundary and an `events_discarded` count: babeltrace2 warns of 7
/// discarded events between the events around the loss, and of no other.
#[test]
fn ctf_export_reports_the_events_an_overflow_counts() {
    let d = scratch("ctf-discarded");
    let (l, mut evs) = make_log(&d);
    assert!(l.event_type(EventId::OVERFLOW).is_some());
    let at = evs[1].clone();
    let mut data = 7u64.to_le_bytes().to_vec();
    data.extend_from_slice(&at.tid.to_le_bytes());
    let overflow = Event {
        id: EventId::OVERFLOW,
        pid: 0,
        data,
        ..at.clone()
    };
    let resume = Event {
        id: EventId::RESUME,
        pid: 0,
        data: Vec::new(),
        ..at.clone()
    };
    evs.insert(2, overflow);
    evs.insert(3, resume);
    let out = d.join("ctf");
    export::write_ctf(&l, &evs, &out).unwrap();
    let meta = std::fs::read_to_string(out.join("metadata")).unwrap();
    let ctx = meta.split("packet.context := struct {").nth(1).unwrap();
    assert!(
        ctx[..ctx.find("};").unwrap()].contains("uint64_t events_discarded;"),
        "{meta}"
    );
    let Some(found) = discarded(&l, &out) else {
        return;
    };
    // From the OVERFLOW (stamped as the last event before the loss) to the
    // event that ends the gap.
    let ns = |e: &Event| e.timestamp.as_nanos() as u64;
    assert_eq!(found, [(7, ns(&at), ns(&evs[4]))]);
}

/// Records `n` events of 8 bytes into a stream of `attr` with a log at
/// `path`, flushed only at shutdown; the log read back and its events.
fn lossy_log(path: &Path, attr: &TraceAttr, n: u64) -> (TraceLog, Vec<Event>) {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let ev = trace::eventid_open("ctf discarded").unwrap();
    let t = Trace::create_with_log(attr, File::create(path).unwrap()).unwrap();
    t.start().unwrap();
    for i in 0..n {
        trace::event(ev, &i.to_le_bytes());
    }
    t.stop().unwrap();
    t.shutdown().unwrap();
    let mut l = TraceLog::open(path).unwrap();
    let evs: Vec<Event> = l.events().collect::<Result<_, _>>().unwrap();
    (l, evs)
}

/// Real losses: a LOOP stream that overwrote its oldest events (counted by
/// its OVERFLOW events and the status), an UNTIL_FULL log that had no room
/// for the last ones and a LOOP log that dropped the oldest (counted by the
/// status only): babeltrace2 reports as many discarded events as the log's
/// status counts, the log's own after its last event (UNTIL_FULL) or before
/// its first (LOOP).
#[test]
fn ctf_export_reports_as_many_lost_events_as_the_status_counts() {
    let d = scratch("ctf-discarded-real");
    let mut stream = TraceAttr::new();
    stream.set_stream_size(4096).unwrap();
    stream.set_stream_full_policy(StreamFullPolicy::Loop);
    stream.set_log_full_policy(LogFullPolicy::Append);
    stream
        .set_flush_interval(Duration::from_secs(3600))
        .unwrap();
    let mut log = TraceAttr::new();
    log.set_stream_size(1 << 16).unwrap();
    log.set_stream_full_policy(StreamFullPolicy::Flush);
    log.set_log_full_policy(LogFullPolicy::UntilFull);
    log.set_log_size(4096).unwrap();
    let mut looping = log.clone();
    looping.set_log_full_policy(LogFullPolicy::Loop);
    let cases = [
        ("stream", &stream, false),
        ("log", &log, true),
        ("loop", &looping, true),
    ];
    for (name, attr, log_lost) in cases {
        let (l, evs) = lossy_log(&d.join(format!("{name}.trace")), attr, 2000);
        let st = l.status().unwrap();
        assert_eq!(st.log_lost > 0, log_lost, "{name}: {st:?}");
        let total = st.stream_lost + st.log_lost;
        assert!(total > 0, "{name}: {st:?}");
        let out = d.join(format!("{name}-ctf"));
        export::write_ctf(&l, &evs, &out).unwrap();
        let Some(found) = discarded(&l, &out) else {
            continue;
        };
        let shown: u64 = found.iter().map(|f| f.0).sum();
        assert_eq!(shown, total, "{name}: {st:?} {found:?}");
        if log_lost {
            // The log's own losses: an UNTIL_FULL log's after its last event,
            // a LOOP log's (the oldest) before its first.
            let ts = evs.iter().map(|e| e.timestamp.as_nanos() as u64);
            let (at, (n, from, to)) = match name {
                "loop" => (ts.min().unwrap(), found[0]),
                _ => (ts.max().unwrap(), *found.last().unwrap()),
            };
            assert_eq!((from, to), (at, at), "{name}: {found:?}");
            assert!(n >= st.log_lost, "{name}: {st:?} {found:?}");
        }
    }
}

/// A log large enough for several packets (of about 1 MiB of events), with
/// losses in the middle of where packets would be: each OVERFLOW run keeps a
/// packet of its own, the packets around it are cut by size without counting
/// a loss, and babeltrace2 reports exactly the OVERFLOWs' losses, each from
/// the OVERFLOW to the event after its run, as for a log of one packet.
#[test]
fn ctf_export_in_many_packets_reports_the_same_losses() {
    let d = scratch("ctf-discarded-packets");
    let (l, mut evs) = big_log(&d.join("big.trace"), 120_000);
    evs.sort_by_key(|e| e.timestamp);
    // OVERFLOWs (7 lost, then 9) after events 50,000 and 90,000 of 120,000,
    // each stamped as the event before the loss and followed by a RESUME.
    let mut want = Vec::new();
    for (at, lost) in [(90_000, 9u64), (50_000, 7)] {
        let before = evs[at - 1].clone();
        let mut data = lost.to_le_bytes().to_vec();
        data.extend_from_slice(&before.tid.to_le_bytes());
        let overflow = Event {
            id: EventId::OVERFLOW,
            pid: 0,
            data,
            truncated: false,
            ..before.clone()
        };
        let resume = Event {
            id: EventId::RESUME,
            pid: 0,
            data: Vec::new(),
            truncated: false,
            ..before.clone()
        };
        let ns = |e: &Event| e.timestamp.as_nanos() as u64;
        want.insert(0, (lost, ns(&before), ns(&evs[at])));
        evs.insert(at, resume);
        evs.insert(at, overflow);
    }
    let out = d.join("ctf");
    export::write_ctf(&l, &evs, &out).unwrap();
    let packets = ctf_read::read_ctf(&out);
    assert!(packets.len() >= 5, "{} packets", packets.len());
    let counts: Vec<u64> = packets.iter().map(|p| p.discarded).collect();
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
    assert_eq!(counts.last(), Some(&16));
    // The packets that count a loss hold the OVERFLOW and RESUME, nothing else.
    for w in packets.windows(2) {
        if w[1].discarded > w[0].discarded {
            let ids: Vec<u16> = w[1].events.iter().map(|e| e.id).collect();
            assert_eq!(ids, [EventId::OVERFLOW.raw(), EventId::RESUME.raw()]);
        }
    }
    let read: usize = packets.iter().map(|p| p.events.len()).sum();
    assert_eq!(read, evs.len());
    let Some(found) = discarded(&l, &out) else {
        return;
    };
    assert_eq!(found, want);
}
