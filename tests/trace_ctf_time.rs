//! The times of the CTF 1.8 export: what its clock says (and babeltrace2
//! shows), and timestamps that no CTF reader can show.

#[path = "common/export_log.rs"]
mod export_log;
#[path = "common/log_bytes.rs"]
mod log_bytes;

use std::time::Duration;

use export_log::{babeltrace, make_log, scratch};

use posixrt::trace::{export, TraceLog};
use posixrt::ErrorKind;

/// The log records the stream's clock (CLOCK_MONOTONIC, as events are
/// stamped) with its creation time (CLOCK_REALTIME), so the CTF clock is
/// offset by their difference (`offset_s`, `offset`): babeltrace2 and Trace
/// Compass show each event's wall-clock time, not the time since boot.
#[test]
fn ctf_export_clock_shows_wall_clock_time() {
    let d = scratch("ctf-clock");
    let (l, evs) = make_log(&d);
    let a = l.attr().unwrap();
    let real = a.create_time().unwrap().as_nanos();
    let mono = a.create_time_monotonic().unwrap().as_nanos();
    assert!(mono > 0 && mono <= evs[0].timestamp.as_nanos(), "{mono}");
    let off = real - mono;
    let out = d.join("ctf");
    export::write_ctf(&l, &evs, &out).unwrap();
    let meta = std::fs::read_to_string(out.join("metadata")).unwrap();
    let clock = meta.split("clock {").nth(1).unwrap();
    let clock = &clock[..clock.find("};").unwrap()];
    assert!(
        clock.contains(&format!("offset_s = {};", off / 1_000_000_000))
            && clock.contains(&format!("offset = {};", off % 1_000_000_000)),
        "{clock}"
    );
    let Some(text) = babeltrace(&["--clock-seconds"], &out) else {
        return;
    };
    // `[1765152000.123456789] (+?.?????????) posix_trace_start: ...`
    let shown: Vec<u128> = text
        .lines()
        .map(|l| {
            let t = &l[1..l.find(']').unwrap()];
            let (s, ns) = t.split_once('.').unwrap();
            s.parse::<u128>().unwrap() * 1_000_000_000 + ns.parse::<u128>().unwrap()
        })
        .collect();
    let want: Vec<u128> = evs.iter().map(|e| e.timestamp.as_nanos() + off).collect();
    assert_eq!(shown, want, "{text}");
}

/// A log written before the stream's clock was recorded at creation (its
/// attribute record ends at the pid) still reads, and exports with the clock
/// at offset 0 (times since boot), as before.
#[test]
fn a_log_without_the_creation_clock_exports_times_since_boot() {
    let d = scratch("ctf-clock-old");
    let p = d.join("old.trace");
    let mut b = b"PXTRLOG\0".to_vec();
    b.extend_from_slice(&3u16.to_le_bytes());
    b.extend_from_slice(&0u16.to_le_bytes());
    let c = log_bytes::crc32c(&b);
    b.extend_from_slice(&c.to_le_bytes());
    let mut attr = vec![1u8];
    for s in ["old", "posixrt-trace 1.0 (log format 3)"] {
        attr.extend_from_slice(&(s.len() as u16).to_le_bytes());
        attr.extend_from_slice(s.as_bytes());
    }
    attr.extend_from_slice(&1_765_000_000_000_000_000u64.to_le_bytes()); // created
    attr.extend_from_slice(&1u64.to_le_bytes()); // clock resolution
    attr.extend_from_slice(&(1u64 << 20).to_le_bytes());
    attr.extend_from_slice(&64u32.to_le_bytes());
    attr.extend_from_slice(&[0, 2]); // LOOP stream, APPEND log
    attr.extend_from_slice(&(1u64 << 20).to_le_bytes());
    attr.push(0);
    attr.extend_from_slice(&77u32.to_le_bytes()); // pid: the record ends here
    log_bytes::push_record(&mut b, &attr);
    let mut ev = vec![3u8]; // an event: id, flags, pid, tid, time, address, data
    ev.extend_from_slice(&300u16.to_le_bytes());
    ev.push(0);
    ev.extend_from_slice(&77u32.to_le_bytes());
    ev.extend_from_slice(&78u32.to_le_bytes());
    ev.extend_from_slice(&5_000_000_123u64.to_le_bytes());
    ev.extend_from_slice(&0u64.to_le_bytes());
    ev.extend_from_slice(&4u16.to_le_bytes());
    ev.extend_from_slice(&9i32.to_le_bytes());
    log_bytes::push_record(&mut b, &ev);
    log_bytes::push_record(&mut b, &[5]);
    std::fs::write(&p, &b).unwrap();
    let mut l = TraceLog::open(&p).unwrap();
    let evs: Vec<_> = l.events().collect::<Result<_, _>>().unwrap();
    let a = l.attr().unwrap();
    assert_eq!(
        (
            a.create_time().map(|t| t.as_secs()),
            a.create_time_monotonic()
        ),
        (Some(1_765_000_000), None)
    );
    assert_eq!((l.pid(), evs.len()), (77, 1));
    let out = d.join("ctf");
    export::write_ctf(&l, &evs, &out).unwrap();
    let meta = std::fs::read_to_string(out.join("metadata")).unwrap();
    assert!(
        meta.contains("offset = 0;") && !meta.contains("offset_s"),
        "{meta}"
    );
    if let Some(text) = babeltrace(&["--clock-cycles"], &out) {
        assert_eq!(cycles(&text), 5_000_000_123, "{text}");
    }
}

/// A timestamp of 2^63 - 1 ns or more (a damaged or foreign log: CLOCK_MONOTONIC
/// reaches it after 292 years) is refused with `InvalidInput` naming the event
/// and its time, before anything is written: babeltrace2 reads clock values as
/// signed 64-bit nanoseconds below `i64::MAX` and would refuse the whole trace
/// later.
#[test]
fn ctf_export_refuses_a_timestamp_readers_cannot_show() {
    let d = scratch("ctf-ts63");
    let (l, evs) = make_log(&d);
    let a = l.attr().unwrap();
    let off = a.create_time().unwrap().as_nanos() - a.create_time_monotonic().unwrap().as_nanos();
    // Readers add the clock's offset to the wall clock (see above).
    let latest = i64::MAX as u128 - off;
    let last = evs.len() - 1;
    for ns in [
        latest + 1,
        i64::MAX as u128,
        1 << 63,
        u64::MAX as u128,
        1 << 70,
    ] {
        let mut evs = evs.clone();
        evs[last].timestamp = nanos(ns);
        let out = d.join(format!("ctf-{ns}"));
        let e = export::write_ctf(&l, &evs, &out).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        let text = e.to_string();
        assert!(text.contains("posix_trace_stop"), "{text}");
        assert!(text.contains(&format!("{ns} ns")), "{text}");
        assert!(e.hint().is_some_and(|h| h.contains("damaged")), "{e:?}");
        assert!(!out.exists(), "{ns}: {out:?} was made");
    }
    // The largest time a reader shows is exported, and shown as such.
    let mut evs = evs.clone();
    evs[last].timestamp = nanos(latest);
    let out = d.join("ctf-max");
    export::write_ctf(&l, &evs, &out).unwrap();
    if let Some(text) = babeltrace(&["--clock-cycles"], &out) {
        let end = text.lines().last().unwrap_or_default();
        assert_eq!(cycles(end) as u128, latest, "{text}");
    }
}

/// `ns` nanoseconds, past what `Duration::from_nanos` takes.
fn nanos(ns: u128) -> Duration {
    Duration::new((ns / 1_000_000_000) as u64, (ns % 1_000_000_000) as u32)
}

/// The time of a line of `babeltrace2 --clock-cycles` (`[000123] name: ...`).
fn cycles(line: &str) -> u64 {
    let n = line.trim_start_matches('[');
    n[..n.find(']').unwrap()].trim().parse().unwrap()
}
