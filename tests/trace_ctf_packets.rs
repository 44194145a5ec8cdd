//! The CTF export writes its stream packet by packet: packets of about
//! 1 MiB of events, each written with its real sizes, through a bounded
//! buffer, so the export's own memory does not grow with the log; what a
//! reader gets back is the log's events, in time order.

#[path = "common/ctf_read.rs"]
mod ctf_read;
#[path = "common/export_log.rs"]
mod export_log;
#[path = "common/peak_alloc.rs"]
mod peak_alloc;

use ctf_read::{read_ctf, ReadEvent};
use export_log::{babeltrace, big_log, make_log, scratch};
use peak_alloc::peak_bytes;

use posixrt::trace::{export, Event};

/// The events as a reader should get them back: in time order (stable),
/// with the export's layout of user events (a `truncated` flag, the data).
fn expected(evs: &[Event]) -> Vec<ReadEvent> {
    let mut sorted: Vec<&Event> = evs.iter().collect();
    sorted.sort_by_key(|e| e.timestamp);
    sorted
        .iter()
        .map(|e| ReadEvent {
            id: e.id.raw(),
            timestamp: e.timestamp.as_nanos() as u64,
            pid: e.pid,
            tid: e.tid,
            truncated: (!e.id.is_system()).then_some(e.truncated),
            data: e.data.clone(),
        })
        .collect()
}

/// Events of the export as read back, the packets' events one after the other.
fn read_events(dir: &std::path::Path) -> Vec<ReadEvent> {
    read_ctf(dir).into_iter().flat_map(|p| p.events).collect()
}

/// A small log: one packet holding every event, read back as the log's
/// events in time order; its sizes are its real ones.
#[test]
fn ctf_export_of_a_small_log_reads_back_as_one_packet() {
    let d = scratch("packets-small");
    let (l, evs) = make_log(&d);
    let out = d.join("ctf");
    export::write_ctf(&l, &evs, &out).unwrap();
    let packets = read_ctf(&out);
    assert_eq!(packets.len(), 1, "{packets:?}");
    let p = &packets[0];
    assert_eq!(p.packet_bits, p.content_bits);
    assert_eq!(
        p.packet_bits / 8,
        std::fs::metadata(out.join("stream_0")).unwrap().len()
    );
    let got: Vec<_> = p.events.iter().map(|e| (e.id, e.timestamp)).collect();
    let want: Vec<_> = expected(&evs).iter().map(|e| (e.id, e.timestamp)).collect();
    assert_eq!(got, want);
    // The user events' data as recorded.
    let user: Vec<&ReadEvent> = p.events.iter().filter(|e| e.truncated.is_some()).collect();
    assert_eq!(user.len(), 2);
    assert_eq!(user[0].data, 7i32.to_le_bytes());
    assert_eq!(user[1].data, b"say \"hi\" \\ ok");
}

/// A log of 150,000 events (4.5 MB of CTF events) is written as packets of
/// about 1 MiB, each with its real sizes and a time span holding its events
/// (the end of one the begin of the next); read back, they hold the log's
/// events in time order, as babeltrace2 reads them too.
#[test]
fn ctf_export_of_a_large_log_is_packets_of_about_one_mib() {
    let d = scratch("packets-large");
    let (l, evs) = big_log(&d.join("big.trace"), 150_000);
    let out = d.join("ctf");
    export::write_ctf(&l, &evs, &out).unwrap();
    let packets = read_ctf(&out);
    let file = std::fs::metadata(out.join("stream_0")).unwrap().len();
    assert!(file > 4 << 20, "{file}");
    assert!(packets.len() >= 4, "{} packets", packets.len());
    for (k, p) in packets.iter().enumerate() {
        assert_eq!(p.packet_bits, p.content_bits, "packet {k}");
        let events = p.content_bits / 8 - 48;
        assert!(events <= (1 << 20) + 4096, "packet {k}: {events} bytes");
        assert!(events >= (1 << 20) || k + 1 == packets.len(), "packet {k}");
        assert_eq!(p.discarded, 0, "packet {k}");
        assert!(p.begin <= p.end, "packet {k}");
        for e in &p.events {
            assert!((p.begin..=p.end).contains(&e.timestamp), "packet {k}");
        }
        if let Some(next) = packets.get(k + 1) {
            assert_eq!(p.end, next.begin, "packet {k}");
            assert_eq!(p.end, next.events[0].timestamp, "packet {k}");
        }
    }
    let first = evs.iter().map(|e| e.timestamp.as_nanos() as u64).min();
    let last = evs.iter().map(|e| e.timestamp.as_nanos() as u64).max();
    assert_eq!(Some(packets[0].begin), first);
    assert_eq!(packets.last().map(|p| p.end), last);
    let got = read_events(&out);
    assert!(got == expected(&evs), "the events read back differ");
    let Some(text) = babeltrace(&["--clock-cycles"], &out) else {
        return;
    };
    let ts: Vec<u64> = text
        .lines()
        .map(|l| {
            let n = l.trim_start_matches('[');
            n[..n.find(']').unwrap()].trim().parse().unwrap()
        })
        .collect();
    let want: Vec<u64> = got.iter().map(|e| e.timestamp).collect();
    assert!(ts == want, "babeltrace2 reads other events");
}

/// The export's own memory does not grow with the log: exporting 40,000 or
/// 160,000 events (in time order: no order of its own to keep) allocates
/// less than 1 MiB at any time, where the stream it writes is 1.2 and
/// 4.8 MB.
#[test]
fn ctf_export_memory_does_not_grow_with_the_log() {
    let d = scratch("packets-memory");
    for n in [40_000, 160_000] {
        let (l, mut evs) = big_log(&d.join(format!("{n}.trace")), n);
        evs.sort_by_key(|e| e.timestamp);
        let out = d.join(format!("ctf{n}"));
        let peak = peak_bytes(|| export::write_ctf(&l, &evs, &out).unwrap());
        let file = std::fs::metadata(out.join("stream_0")).unwrap().len();
        assert!(file as u64 > n * 25, "{n} events: {file}");
        assert!(
            peak < 1 << 20,
            "{n} events ({file} bytes): {peak} bytes at once"
        );
        assert!(read_events(&out) == expected(&evs), "{n} events read back");
    }
}
