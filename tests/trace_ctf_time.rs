//! The times of the CTF 1.8 export: what its clock says (and babeltrace2
//! shows), and timestamps that no CTF reader can show.

#[path = "common/export_log.rs"]
mod export_log;

use std::time::Duration;

use export_log::{babeltrace, make_log, scratch};

use posixrt::trace::export;
use posixrt::ErrorKind;

/// A timestamp of 2^63 - 1 ns or more (a damaged or foreign log: CLOCK_MONOTONIC
/// reaches it after 292 years) is refused with `InvalidInput` naming the event
/// and its time, before anything is written: babeltrace2 reads clock values as
/// signed 64-bit nanoseconds below `i64::MAX` and would refuse the whole trace
/// later.
#[test]
fn ctf_export_refuses_a_timestamp_readers_cannot_show() {
    let d = scratch("ctf-ts63");
    let (l, evs) = make_log(&d);
    let last = evs.len() - 1;
    for ns in [i64::MAX as u128, 1 << 63, u64::MAX as u128, 1 << 70] {
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
    evs[last].timestamp = Duration::from_nanos(i64::MAX as u64 - 1);
    let out = d.join("ctf-max");
    export::write_ctf(&l, &evs, &out).unwrap();
    if let Some(text) = babeltrace(&["--clock-cycles"], &out) {
        let end = text.lines().last().unwrap_or_default();
        assert_eq!(cycles(end), i64::MAX as u64 - 1, "{text}");
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
