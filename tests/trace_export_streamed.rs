//! The exports read from the log twice (`export::Scan::read`, then
//! `write_chrome_json_scanned` / `write_ctf_scanned`), never holding it: the
//! same bytes as the exports of every event loaded and sorted by time (a
//! stable sort), also where threads' flushes interleave in time, and memory
//! that does not grow with an in-order log.

#[path = "common/export_log.rs"]
mod export_log;
#[path = "common/peak_alloc.rs"]
mod peak_alloc;

use std::fs::File;

use export_log::{record_numbers, scratch};
use peak_alloc::peak_bytes;
use posixrt::trace::{export, Event, TraceLog};

/// Records `per` user events from each of `threads` threads into a log at
/// `path` whose stream holds `stream` bytes (see `record_numbers`).
fn record(path: &std::path::Path, threads: u64, per: u64, stream: usize) {
    record_numbers(
        path,
        threads,
        per,
        stream,
        ("streamed number", "streamed text"),
    );
}

/// The log's events in log order.
fn events(path: &std::path::Path) -> (TraceLog, Vec<Event>) {
    let mut l = TraceLog::open(path).unwrap();
    let evs: Vec<Event> = l.events().collect::<Result<_, _>>().unwrap();
    (l, evs)
}

/// Whether the events are in non-decreasing timestamp order.
fn in_order(evs: &[Event]) -> bool {
    evs.windows(2).all(|w| w[0].timestamp <= w[1].timestamp)
}

/// The files of a CTF export.
fn ctf_files(dir: &std::path::Path) -> (Vec<u8>, Vec<u8>) {
    (
        std::fs::read(dir.join("metadata")).unwrap(),
        std::fs::read(dir.join("stream_0")).unwrap(),
    )
}

/// Logs whose threads' flushes interleave in time (events of one flush
/// older than the end of the flush before it), some with losses: streamed
/// from the log, both exports are byte for byte those of the events loaded
/// and sorted by a stable sort by timestamp, and those of the events in log
/// order (which the exports order themselves).
#[test]
fn streamed_exports_are_the_bytes_of_the_sorted_events() {
    let d = scratch("streamed-same");
    let mut interleaved = 0;
    for (name, threads, per, stream) in [
        ("tiny", 4, 20_000, 4096),
        ("small", 3, 30_000, 16 << 10),
        ("mid", 2, 60_000, 64 << 10),
    ] {
        let p = d.join(format!("{name}.trace"));
        record(&p, threads, per, stream);
        let (l, evs) = events(&p);
        if !in_order(&evs) {
            interleaved += 1;
        }
        let mut sorted = evs.clone();
        sorted.sort_by_key(|e| e.timestamp);
        assert!(in_order(&sorted));

        let want_json = export::chrome_json(&l, &sorted);
        assert_eq!(
            export::chrome_json(&l, &evs),
            want_json,
            "{name}: log order"
        );
        let mut log = TraceLog::open(&p).unwrap();
        let scan = export::Scan::read(&mut log).unwrap();
        assert!(scan.error().is_none());
        assert_eq!(scan.events(), evs.len() as u64);
        let mut got = Vec::new();
        export::write_chrome_json_scanned(&mut log, &scan, &mut got).unwrap();
        assert!(
            got == want_json.as_bytes(),
            "{name}: streamed Chrome JSON differs"
        );

        let want = d.join(format!("{name}-sorted"));
        export::write_ctf(&l, &sorted, &want).unwrap();
        let given = d.join(format!("{name}-given"));
        export::write_ctf(&l, &evs, &given).unwrap();
        assert!(ctf_files(&given) == ctf_files(&want), "{name}: log order");
        let streamed = d.join(format!("{name}-streamed"));
        export::write_ctf_scanned(&mut log, &scan, &streamed).unwrap();
        assert!(
            ctf_files(&streamed) == ctf_files(&want),
            "{name}: streamed CTF differs"
        );
    }
    // Else the test shows nothing about the order: the logs need flushes
    // that interleave.
    assert!(interleaved > 0, "no log's flushes interleaved");
}

/// A cut log: the scan keeps the error that ended it, and the exports write
/// the events before it, as of those events loaded.
#[test]
fn streamed_export_of_a_cut_log_writes_the_events_before_the_cut() {
    let d = scratch("streamed-cut");
    let p = d.join("whole.trace");
    record(&p, 2, 5_000, 16 << 10);
    let bytes = std::fs::read(&p).unwrap();
    let cut = d.join("cut.trace");
    // Its end record cut: every event read, then `Truncated`.
    std::fs::write(&cut, &bytes[..bytes.len() - 1]).unwrap();
    let mut l = TraceLog::open(&cut).unwrap();
    let evs: Vec<Event> = l.events().map_while(Result::ok).collect();
    assert!(!evs.is_empty());
    let mut log = TraceLog::open(&cut).unwrap();
    let mut scan = export::Scan::read(&mut log).unwrap();
    assert_eq!(scan.events(), evs.len() as u64);
    let mut got = Vec::new();
    export::write_chrome_json_scanned(&mut log, &scan, &mut got).unwrap();
    assert!(got == export::chrome_json(&l, &evs).as_bytes());
    let (want, streamed) = (d.join("want"), d.join("streamed"));
    export::write_ctf(&l, &evs, &want).unwrap();
    export::write_ctf_scanned(&mut log, &scan, &streamed).unwrap();
    assert!(ctf_files(&streamed) == ctf_files(&want));
    let e = scan.take_error().expect("the cut");
    assert_eq!(e.kind(), posixrt::ErrorKind::Truncated);
}

/// A log in time order but for a few events (one thread) of 40,000 or 160,000 events: reading it
/// and writing both exports from it allocates less than 1 MiB at any time,
/// the same bound for both (the exports are 1.2 to 13 MB).
#[test]
fn streamed_export_memory_does_not_grow_with_an_in_order_log() {
    let d = scratch("streamed-memory");
    for n in [40_000, 160_000] {
        let p = d.join(format!("{n}.trace"));
        // A stream that holds every event, so that none is lost however slow
        // the flusher is on a loaded machine (with 1 MiB, 160,000 events
        // once came out as 138,487).
        record(&p, 1, n, 16 << 20);
        // (One thread's events are in time order; the flush marks, stamped
        // when a flush begins, come a little early.)
        let (_, evs) = events(&p);
        assert!(
            evs.len() as u64 > n,
            "{n} events and START, STOP: {}",
            evs.len()
        );
        drop(evs);
        let mut log = TraceLog::open(&p).unwrap();
        let out = d.join(format!("ctf{n}"));
        let json = d.join(format!("{n}.json"));
        let peak = peak_bytes(|| {
            let scan = export::Scan::read(&mut log).unwrap();
            export::write_ctf_scanned(&mut log, &scan, &out).unwrap();
            let f = File::create(&json).unwrap();
            export::write_chrome_json_scanned(&mut log, &scan, f).unwrap();
        });
        let ctf = std::fs::metadata(out.join("stream_0")).unwrap().len();
        let js = std::fs::metadata(&json).unwrap().len();
        assert!(ctf > n * 25 && js > n * 80, "{n} events: {ctf} {js}");
        assert!(peak < 1 << 20, "{n} events: {peak} bytes at once");
    }
}
