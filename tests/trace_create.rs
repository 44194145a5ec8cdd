//! Validation at stream creation (`posix_trace_create_withlog`).

use posixrt::trace::{Trace, TraceAttr};
use posixrt::ErrorKind;

#[path = "common/log_bytes.rs"]
mod log_bytes;
use log_bytes::{crc32c, push_record};

/// POSIX: `posix_trace_create_withlog` fails with EBADF when the log file is
/// not open for writing, rather than creating a stream whose every flush fails.
#[test]
fn a_log_not_open_for_writing_is_ebadf() {
    let p = std::env::temp_dir().join(format!(
        "posixrt-trace-create-{}-ro.trace",
        std::process::id()
    ));
    std::fs::write(&p, b"").unwrap();
    let ro = std::fs::File::open(&p).unwrap();
    let r = Trace::create_with_log(&TraceAttr::new(), ro);
    let got = r.map(|_| ()).map_err(|e| (e.kind(), e.errno()));
    // A file open for writing only is fine.
    let wo = std::fs::File::options().write(true).open(&p).unwrap();
    let ok = Trace::create_with_log(&TraceAttr::new(), wo).and_then(|t| t.shutdown());
    std::fs::remove_file(&p).unwrap();
    assert_eq!(got, Err((ErrorKind::BadFd, Some(libc::EBADF))));
    ok.unwrap();
}

/// A log of this format whose attribute record carries `stream_size` and
/// `max_data` (and nothing else).
fn log_with_attr(stream_size: u64, max_data: u32) -> Vec<u8> {
    let mut out = b"PXTRLOG\0".to_vec();
    out.extend_from_slice(&posixrt::trace::LOG_VERSION.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    let c = crc32c(&out);
    out.extend_from_slice(&c.to_le_bytes());
    let mut b = vec![1u8]; // attributes
    for s in ["replayed", "posixrt-trace"] {
        b.extend_from_slice(&(s.len() as u16).to_le_bytes());
        b.extend_from_slice(s.as_bytes());
    }
    b.extend_from_slice(&0u64.to_le_bytes()); // creation time
    b.extend_from_slice(&1u64.to_le_bytes()); // clock resolution
    b.extend_from_slice(&stream_size.to_le_bytes());
    b.extend_from_slice(&max_data.to_le_bytes());
    b.extend_from_slice(&[0, 2]); // LOOP stream, APPEND log
    b.extend_from_slice(&(1u64 << 20).to_le_bytes());
    b.push(0);
    b.extend_from_slice(&1u32.to_le_bytes());
    push_record(&mut out, &b);
    out
}

/// The attributes read back from a log are checked like the setters check
/// them when a stream is created with them: a log from elsewhere (or damaged
/// with a valid checksum) must not make a stream that overflows its size
/// computations or its records' 14-bit length field.
#[test]
fn attributes_out_of_range_are_refused_at_creation() {
    use posixrt::trace::{TraceLog, MAX_DATA_SIZE_LIMIT};
    let p = std::env::temp_dir().join(format!(
        "posixrt-trace-create-{}-attr.trace",
        std::process::id()
    ));
    let mut got = Vec::new();
    for (size, max) in [
        (1 << 20, MAX_DATA_SIZE_LIMIT as u32 * 25),
        (1 << 40, 8),
        (16, 8),
        (1 << 20, 8),
    ] {
        std::fs::write(&p, log_with_attr(size, max)).unwrap();
        let l = TraceLog::open(&p).unwrap();
        let a = l.attr().unwrap();
        assert_eq!(
            (a.stream_size() as u64, a.max_data_size()),
            (size, max as usize)
        );
        got.push(Trace::create(a).map(|_| ()).map_err(|e| e.kind()));
    }
    std::fs::remove_file(&p).unwrap();
    let bad = Err(ErrorKind::InvalidInput);
    assert_eq!(got, [bad, bad, bad, Ok(())]);
}

/// A service record (attributes, an event type, the status) that passes its
/// checksum but does not parse was written wrong: the reader stops at it with
/// `Corrupt`, as at an event record that does not parse, instead of skipping it
/// and reading on as if the log were whole.
#[test]
fn a_service_record_that_does_not_parse_is_corrupt() {
    let mut ty = vec![2u8]; // an event type
    ty.extend_from_slice(&200u16.to_le_bytes());
    ty.push(0);
    ty.extend_from_slice(&1u16.to_le_bytes());
    ty.push(b'x');
    ty.extend_from_slice(&[1, 99]); // one field of an unknown type
    assert_eq!(first_event_of("badtype", &[ty]), Err(ErrorKind::Corrupt));
}

/// What reading the first event of a log gives whose attribute record is
/// followed by the records `extra` and an event (the log is written to a
/// temporary file named after `name`).
fn first_event_of(name: &str, extra: &[Vec<u8>]) -> Result<(), ErrorKind> {
    let p = std::env::temp_dir().join(format!(
        "posixrt-trace-create-{}-{name}.trace",
        std::process::id()
    ));
    let mut log = log_with_attr(1 << 20, 8);
    for b in extra.iter().chain([&vec![5u8]]) {
        push_record(&mut log, b);
    }
    std::fs::write(&p, &log).unwrap();
    let mut l = posixrt::trace::TraceLog::open(&p).unwrap();
    let got = l.next_event().map(drop).map_err(|e| e.kind());
    std::fs::remove_file(&p).unwrap();
    got
}

/// A record of a kind no format version has (it passed its checksum) is
/// `Corrupt`, not skipped.
#[test]
fn a_record_of_an_unknown_kind_is_corrupt() {
    assert_eq!(
        first_event_of("badkind", &[vec![99u8, 1, 2, 3]]),
        Err(ErrorKind::Corrupt)
    );
}

/// A log file opened in append mode (`O_APPEND`) is written as any other: a
/// LOOP log's compaction rewrites it from the start, so after many flushes it
/// holds the newest events and reads to its end record. (With `O_APPEND` every
/// write went to the end whatever the seek, and the cut that follows kept the
/// oldest bytes.)
#[test]
fn a_loop_log_opened_for_appending_keeps_the_newest_events() {
    use posixrt::trace::{self, LogFullPolicy, TraceLog};
    let p = std::env::temp_dir().join(format!(
        "posixrt-trace-create-{}-append.trace",
        std::process::id()
    ));
    std::fs::write(&p, b"").unwrap();
    let f = std::fs::File::options().append(true).open(&p).unwrap();
    let mut a = TraceAttr::new();
    a.set_log_full_policy(LogFullPolicy::Loop);
    a.set_log_size(4096).unwrap();
    let t = Trace::create_with_log(&a, f).unwrap();
    let ev = trace::eventid_open("append loop").unwrap();
    t.start().unwrap();
    for i in 0..2000u32 {
        trace::event(ev, &i.to_le_bytes());
        if i % 100 == 99 {
            t.flush().unwrap();
        }
    }
    t.stop().unwrap();
    t.shutdown().unwrap();
    let mut l = TraceLog::open(&p).unwrap();
    let evs: Result<Vec<_>, _> = l.events().collect();
    std::fs::remove_file(&p).unwrap();
    let evs = evs.unwrap();
    let mine: Vec<u32> = evs
        .iter()
        .filter(|e| e.id == ev)
        .map(|e| u32::from_le_bytes(e.data[..4].try_into().unwrap()))
        .collect();
    assert!(l.is_complete());
    assert_eq!(mine.last(), Some(&1999), "{mine:?}");
    assert!(mine.windows(2).all(|w| w[1] == w[0] + 1), "{mine:?}");
}

/// The caller's other descriptors of the log (a `try_clone` here, the
/// caller's own fd behind `posix_trace_create_withlog`'s dup, a forked
/// child's) share its open file description and its `O_APPEND`: the stream
/// never clears it, neither while it writes the log nor after.
#[test]
fn a_log_opened_for_appending_keeps_append_mode_on_the_callers_descriptors() {
    use rustix::fs::{fcntl_getfl, OFlags};
    let p = std::env::temp_dir().join(format!(
        "posixrt-trace-create-{}-append-restored.trace",
        std::process::id()
    ));
    std::fs::write(&p, b"").unwrap();
    let f = std::fs::File::options().append(true).open(&p).unwrap();
    let kept = f.try_clone().unwrap();
    let mut a = TraceAttr::new();
    a.set_log_full_policy(posixrt::trace::LogFullPolicy::Loop);
    let t = Trace::create_with_log(&a, f).unwrap();
    let created = fcntl_getfl(&kept).unwrap();
    t.start().unwrap();
    t.flush().unwrap();
    let flushed = fcntl_getfl(&kept).unwrap();
    t.stop().unwrap();
    t.shutdown().unwrap();
    let after = fcntl_getfl(&kept).unwrap();
    drop(kept);
    std::fs::remove_file(&p).unwrap();
    for (when, flags) in [
        ("created", created),
        ("flushed", flushed),
        ("shut down", after),
    ] {
        assert!(
            flags.contains(OFlags::APPEND),
            "O_APPEND cleared on the caller's descriptor once the stream was {when}: {flags:?}"
        );
    }
}

/// A file of the kernel's proc file system is no place for a log: the
/// creation is refused before anything is written to it (`InvalidInput`,
/// EINVAL, as POSIX for a file that does not fit), with a hint that speaks
/// of the file, not of pipes. Before: the header's write failed with EIO and
/// the hint said "a pipe needs a reader". Read as a log, such a file is
/// refused as any regular file that is not a log is (`Corrupt`, bad magic).
#[test]
fn a_proc_file_is_refused_as_a_log_without_a_pipe_hint() {
    let read = |p: &str| {
        posixrt::trace::TraceLog::open(p)
            .map(drop)
            .map_err(|e| (e.kind(), e.errno()))
    };
    let p = std::env::temp_dir().join(format!(
        "posixrt-trace-create-{}-text.trace",
        std::process::id()
    ));
    std::fs::write(&p, b"not a log\n").unwrap();
    let text = read(p.to_str().unwrap());
    std::fs::remove_file(&p).unwrap();
    assert_eq!(text, Err((ErrorKind::Corrupt, None)));
    assert_eq!(read("/proc/version"), text, "read as a log");
    // Only root may open /proc/version for writing.
    let Ok(f) = std::fs::File::options().write(true).open("/proc/version") else {
        return;
    };
    let e = Trace::create_with_log(&TraceAttr::new(), f)
        .map(drop)
        .expect_err("a proc file takes no log");
    assert_eq!(
        (e.kind(), e.errno()),
        (ErrorKind::InvalidInput, Some(libc::EINVAL)),
        "{e}"
    );
    let hint = e.hint().unwrap_or_default();
    assert!(!hint.contains("needs a reader"), "{e}");
    assert!(hint.contains("regular file"), "{e}");
    assert!(e.to_string().contains("proc"), "{e}");
}
