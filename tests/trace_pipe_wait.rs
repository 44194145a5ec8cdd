//! Waiting for the writer of a trace log read from a pipe: a read with a
//! deadline ends with `TimedOut` while the writer is silent, takes nothing,
//! and the events written later read back in order. (The tests take turns:
//! a running stream records every event of the process, also the system
//! events of another test's stream.)

use std::fs::File;

#[path = "common/trace_files.rs"]
mod trace_files;
use std::time::{Duration, Instant};
use trace_files::{open_log, pipe, serial};

use posixrt::trace::{self, LogFullPolicy, Trace, TraceAttr, TraceLog};
use posixrt::ErrorKind;

/// A stream whose log, `log`, takes every event (the APPEND policy).
fn appending_to(log: File) -> Trace {
    let mut a = TraceAttr::new();
    a.set_log_full_policy(LogFullPolicy::Append);
    Trace::create_with_log(&a, log).unwrap()
}

#[test]
fn a_timed_read_of_a_silent_pipe_ends_at_its_deadline() {
    let _turn = serial();
    let (rd, wr) = pipe();
    let t = appending_to(wr);
    let first = trace::eventid_open("pipe_wait.first").unwrap();
    let last = trace::eventid_open("pipe_wait.last").unwrap();
    t.start().unwrap();
    trace::event(first, &1u32.to_le_bytes());
    t.flush().unwrap();

    let mut l = TraceLog::from_file(rd).unwrap();
    let w = l.waiter().expect("a pipe has a waiter");
    // Everything the flush wrote (it returned once written): the events up to
    // ours, and the flush's own.
    let mut names = Vec::new();
    while l.next_is_ready() || w.wait(Some(Duration::ZERO)).unwrap() {
        let e = l.next_event().unwrap().expect("the log goes on");
        names.push(l.name(e.id).map(str::to_owned));
    }
    assert!(names.contains(&Some("pipe_wait.first".into())), "{names:?}");

    // The writer is silent: the reads end at their deadlines, twice.
    for _ in 0..2 {
        let r = l.timed_next_event(Instant::now() + Duration::from_millis(50));
        assert_eq!(r.map_err(|e| e.kind()).err(), Some(ErrorKind::TimedOut));
    }
    let r = l.next_event_timeout(Duration::ZERO);
    assert_eq!(r.map_err(|e| e.kind()).err(), Some(ErrorKind::TimedOut));

    // Then it writes: nothing was taken, the next events read back in order
    // (a generous deadline: the shutdown writes them at once).
    trace::event(last, &2u32.to_le_bytes());
    t.stop().unwrap();
    t.shutdown().unwrap();
    let mut ours = Vec::new();
    while let Some(e) = l.next_event_timeout(Duration::from_secs(60)).unwrap() {
        if e.id == last || l.name(e.id) == Some("pipe_wait.last") {
            ours.push(u32::from_le_bytes(e.data[..4].try_into().unwrap()));
        }
    }
    assert_eq!(ours, [2]);
    assert!(l.is_complete());
    assert!(l.next_is_ready(), "at the end, nothing to wait for");
}

/// A log in a file that can seek never waits: no waiter, always ready.
#[test]
fn a_log_file_that_seeks_needs_no_waiter() {
    let _turn = serial();
    let (path, f) = open_log("pipe-wait.trace");
    let t = appending_to(f);
    t.shutdown().unwrap();
    let mut l = TraceLog::open(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(l.waiter().is_none());
    assert!(l.next_is_ready());
    while l.timed_next_event(Instant::now()).unwrap().is_some() {}
    assert!(l.is_complete());
}

/// A log whose bytes come in two parts, cut inside a record after the first
/// event: the reader reads what came, is not ready for the cut record (a
/// timed read ends at its deadline, the pipe is not readable), and reads the
/// rest once it comes.
#[test]
fn a_record_cut_across_two_writes_waits_for_its_rest() {
    let _turn = serial();
    // The cut goes in the middle of the second record that holds events.
    let (bytes, _, cut) =
        log_cut_in_second_event_record("pipe_wait.cut_first", "pipe_wait.cut_second");

    let (rd, mut wr) = pipe();
    std::io::Write::write_all(&mut wr, &bytes[..cut]).unwrap();
    let mut l = TraceLog::from_file(rd).unwrap();
    let w = l.waiter().unwrap();
    let mut ours = Vec::new();
    while l.next_is_ready() {
        let e = l.next_event().unwrap().expect("the log goes on");
        if l.name(e.id) == Some("pipe_wait.cut_first") {
            ours.push(1);
        }
    }
    assert_eq!(ours, [1]);
    assert!(
        !w.wait(Some(Duration::ZERO)).unwrap(),
        "all that came was read"
    );
    let r = l.timed_next_event(Instant::now() + Duration::from_millis(20));
    assert_eq!(r.map_err(|e| e.kind()).err(), Some(ErrorKind::TimedOut));

    std::io::Write::write_all(&mut wr, &bytes[cut..]).unwrap();
    drop(wr);
    assert!(w.wait(None).unwrap());
    while let Some(e) = l.next_event_timeout(Duration::from_secs(60)).unwrap() {
        if l.name(e.id) == Some("pipe_wait.cut_second") {
            ours.push(2);
        }
    }
    assert_eq!(ours, [1, 2]);
    assert!(l.is_complete());
}

/// The bytes of a log whose first event is `first` with data 1u32 and a
/// later one (in another flush) `second` with data 2u32, and where to cut
/// it: the start of the second record that holds events, and the middle of
/// that record. The log fits a pipe.
fn log_cut_in_second_event_record(first: &str, second: &str) -> (Vec<u8>, usize, usize) {
    let (path, f) = open_log("pipe-parts.trace");
    let t = appending_to(f);
    let first = trace::eventid_open(first).unwrap();
    let second = trace::eventid_open(second).unwrap();
    t.start().unwrap();
    trace::event(first, &1u32.to_le_bytes());
    t.flush().unwrap();
    trace::event(second, &2u32.to_le_bytes());
    t.stop().unwrap();
    t.shutdown().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    // The records: a 16-byte file header, then length, checksum, body.
    let mut at = 16;
    let mut with_events = Vec::new();
    while at + 8 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        if matches!(bytes[at + 8], 3 | 6 | 7) {
            with_events.push((at, len));
        }
        at += 8 + len;
    }
    let (start, len) = with_events[1];
    assert!(start + 8 + len < 60 << 10, "the log fits a pipe");
    (bytes, start, start + 8 + len / 2)
}

/// A record that its writer writes in two parts, the second after a pause: a
/// read with a deadline while only the first part came takes it in and ends
/// with `TimedOut` (it used to wait in `read` for the rest, past its
/// deadline, with the log taken), keeps it (the pipe is drained, nothing is
/// lost), and once the rest comes the event reads back whole.
#[test]
fn a_record_written_in_two_parts_does_not_hold_a_timed_read() {
    let _turn = serial();
    let (bytes, start, cut) =
        log_cut_in_second_event_record("pipe_wait.parts_first", "pipe_wait.parts_second");
    let (rd, mut wr) = pipe();
    std::io::Write::write_all(&mut wr, &bytes[..start]).unwrap();
    let mut l = TraceLog::from_file(rd).unwrap();
    let w = l.waiter().unwrap();
    let mut ours = Vec::new();
    while l.next_is_ready() {
        let e = l.next_event().unwrap().expect("the log goes on");
        if l.name(e.id) == Some("pipe_wait.parts_first") {
            ours.push(u32::from_le_bytes(e.data[..4].try_into().unwrap()));
        }
    }
    assert_eq!(ours, [1]);

    let (go, wait_go) = std::sync::mpsc::channel::<()>();
    let writer = std::thread::spawn(move || {
        std::io::Write::write_all(&mut wr, &bytes[start..cut]).unwrap();
        // The rest once the reader is done with the first part; bounded only
        // so that a reader that waits in `read` for it fails the test
        // instead of hanging it.
        let _ = wait_go.recv_timeout(Duration::from_secs(20));
        std::io::Write::write_all(&mut wr, &bytes[cut..]).unwrap();
    });
    // The first part is there.
    assert!(w.wait(None).unwrap());
    // A try (deadline now), then a read with a deadline ahead (it used to
    // wait in `read` for the rest, 20 s here, and return the event).
    for wait in [Duration::ZERO, Duration::from_millis(50)] {
        let r = l.timed_next_event(Instant::now() + wait);
        assert_eq!(
            r.map_err(|e| e.kind()).err(),
            Some(ErrorKind::TimedOut),
            "only half the record came ({wait:?})"
        );
        assert!(!l.next_is_ready());
    }
    assert!(
        !w.wait(Some(Duration::ZERO)).unwrap(),
        "the first part was taken in"
    );
    let r = l.next_event_timeout(Duration::ZERO);
    assert_eq!(r.map_err(|e| e.kind()).err(), Some(ErrorKind::TimedOut));

    go.send(()).unwrap();
    while let Some(e) = l.next_event_timeout(Duration::from_secs(60)).unwrap() {
        if l.name(e.id) == Some("pipe_wait.parts_second") {
            assert!(!e.truncated);
            ours.push(u32::from_le_bytes(e.data[..4].try_into().unwrap()));
        }
    }
    writer.join().unwrap();
    assert_eq!(ours, [1, 2]);
    assert!(l.is_complete());
}

/// Opening a log on a pipe waits for its header, and reports what came
/// instead: bytes that are not a log's header as soon as they come (`Corrupt`:
/// it used to wait for 16 of them, as long as the writer kept the pipe
/// open), and a pipe closed before the header was whole (`Truncated`, EINVAL
/// in C).
#[test]
fn opening_a_pipe_reports_what_came_instead_of_a_header() {
    let _turn = serial();
    let open = |bytes: &'static [u8], close: bool| {
        let (rd, mut wr) = pipe();
        std::io::Write::write_all(&mut wr, bytes).unwrap();
        let keep = (!close).then_some(wr);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(TraceLog::from_file(rd).map(drop).map_err(|e| e.kind()));
        });
        // Bounded only so that an open that waits on fails the test instead
        // of hanging it.
        let r = rx.recv_timeout(Duration::from_secs(20));
        drop(keep);
        r.expect("the open waited for more")
    };
    assert_eq!(open(b"hello", false), Err(ErrorKind::Corrupt));
    assert_eq!(open(b"", true), Err(ErrorKind::Truncated));
    assert_eq!(
        open(&posixrt::trace::LOG_MAGIC, true),
        Err(ErrorKind::Truncated)
    );
    assert_eq!(open(b"PXTR", true), Err(ErrorKind::Truncated));
}

/// A writer that closes the pipe inside a record, after the open: the read
/// that reaches the cut ends with `Truncated` (a timed one too, not
/// `TimedOut`: the rest will never come), at once, cut inside the record's
/// header or inside its body, and every event before the cut reads back.
/// (It passed when written: it pins the edge `log_pipe.rs` takes over from
/// the blocking reads it replaced.)
#[test]
fn a_pipe_closed_inside_a_record_ends_the_log_truncated() {
    let _turn = serial();
    let (bytes, start, cut) =
        log_cut_in_second_event_record("pipe_wait.eof_first", "pipe_wait.eof_second");
    for (end, timed) in [
        (cut, false),
        (cut, true),
        (start + 4, false),
        (start + 4, true),
    ] {
        let (rd, mut wr) = pipe();
        std::io::Write::write_all(&mut wr, &bytes[..end]).unwrap();
        drop(wr);
        let mut l = TraceLog::from_file(rd).unwrap();
        let mut firsts = 0;
        let err = loop {
            assert!(l.read_available(), "the writer closed: nothing to wait for");
            let r = if timed {
                l.timed_next_event(Instant::now())
            } else {
                l.next_event()
            };
            match r {
                Ok(Some(e)) => firsts += usize::from(l.name(e.id) == Some("pipe_wait.eof_first")),
                Ok(None) => panic!("a clean end at byte {end}"),
                Err(e) => break e,
            }
        };
        assert_eq!(
            err.kind(),
            ErrorKind::Truncated,
            "cut at byte {end}, timed: {timed}"
        );
        // Not the clean end of a log without its shutdown record (also
        // `Truncated`): the record the writer began.
        let inside = if end == cut {
            "inside a record"
        } else {
            "inside a record header"
        };
        assert!(err.to_string().contains(inside), "cut at byte {end}: {err}");
        assert_eq!(firsts, 1);
        assert!(!l.is_complete());
    }
}
