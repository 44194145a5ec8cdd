//! Reading a trace log from a descriptor that cannot seek (`posix_trace_open`
//! on a pipe): a log piped through `cat`, and a log written to a pipe while it
//! is read. The log is read as it comes; only `rewind` after the first record
//! taken needs to seek, and fails alone with `ESPIPE`.

use std::fs::File;
use std::io::Write;

#[path = "common/trace_files.rs"]
mod trace_files;
use trace_files::{open_log, pipe};

use posixrt::trace::{self, Event, LogFullPolicy, Trace, TraceAttr, TraceLog};
use posixrt::ErrorKind;

/// This test's events: a stream logged to `log`, `n` events of `name` with
/// their index as data, shut down.
fn write_log(log: File, name: &str, n: u32) {
    let mut a = TraceAttr::new();
    a.set_name("piped").unwrap();
    a.set_log_full_policy(LogFullPolicy::Append);
    let t = Trace::create_with_log(&a, log).unwrap();
    let ev = trace::eventid_open(name).unwrap();
    t.start().unwrap();
    for i in 0..n {
        trace::event(ev, &i.to_le_bytes());
    }
    t.stop().unwrap();
    t.shutdown().unwrap();
}

/// Every event of type `name`'s data (as u32), reading `l` to its end.
fn read_all(l: &mut TraceLog, name: &str) -> Vec<u32> {
    let mut got = Vec::new();
    while let Some(e) = l.next_event().unwrap() {
        if l.name(e.id) == Some(name) {
            got.push(data_u32(&e));
        }
    }
    got
}

fn data_u32(e: &Event) -> u32 {
    u32::from_le_bytes(e.data[..4].try_into().unwrap())
}

/// `cat log | reader`: the log's bytes come through a pipe. It opens, its
/// attributes are there at once, every event reads back in order, and its
/// status and shutdown record are known once read to the end.
#[test]
fn a_log_piped_through_cat_reads_back() {
    let (path, f) = open_log("pipe.trace");
    write_log(f, "pipe.cat", 20_000);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(bytes.len() > 64 << 10, "more than a pipe holds");
    let (rd, mut wr) = pipe();
    let cat = std::thread::spawn(move || wr.write_all(&bytes));
    let mut l = TraceLog::from_file(rd).unwrap();
    assert_eq!(l.attr().map(|a| a.name()), Some("piped"));
    assert_eq!(
        read_all(&mut l, "pipe.cat"),
        (0..20_000).collect::<Vec<_>>()
    );
    cat.join().unwrap().unwrap();
    assert!(l.is_complete(), "the shutdown record was read");
    let st = l.status().expect("the status record was read");
    assert_eq!((st.stream_lost, st.log_lost), (0, 0));
    // A pipe cannot go back: rewind alone fails, with the seek's error.
    let e = l.rewind().unwrap_err();
    assert_eq!(e.errno(), Some(libc::ESPIPE), "{e}");
    assert!(matches!(l.next_event(), Ok(None)));
}

/// A log written to a pipe by its stream is read from the other end while
/// the stream records (a FIFO works alike); rewinding before any event was
/// taken is fine (nothing was consumed yet), after one it is `ESPIPE`.
#[test]
fn a_log_written_to_a_pipe_reads_as_it_is_written() {
    let (rd, wr) = pipe();
    let writer = std::thread::spawn(move || write_log(wr, "pipe.live", 5000));
    let mut l = TraceLog::from_file(rd).unwrap();
    assert_eq!(l.attr().map(|a| a.name()), Some("piped"));
    l.rewind().unwrap();
    let first = loop {
        let e = l.next_event().unwrap().expect("events before the end");
        if l.name(e.id) == Some("pipe.live") {
            break data_u32(&e);
        }
    };
    assert_eq!(first, 0);
    let e = l.rewind().unwrap_err();
    assert_eq!(e.errno(), Some(libc::ESPIPE), "{e}");
    assert_ne!(e.kind(), ErrorKind::Corrupt);
    let rest = read_all(&mut l, "pipe.live");
    writer.join().unwrap();
    assert_eq!(rest, (1..5000).collect::<Vec<_>>());
    assert!(l.is_complete());
}
