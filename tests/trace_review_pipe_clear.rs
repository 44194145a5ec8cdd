//! Review: `clear` of a stream whose log is a pipe (an APPEND or UNTIL_FULL
//! log, which `create_with_log` takes on a pipe).

#[path = "common/trace_read.rs"]
mod trace_read;
use trace_read::filter_all_but;

use std::fs::File;
use std::io::Read;

use posixrt::trace::{self, LogFullPolicy, Trace, TraceAttr, TraceLog};

/// A pipe cannot be rewritten from its start: `clear` starts the log over
/// from where it is (its size and full state), and the log goes on. It
/// tried to rewrite the pipe: the clear failed with ESPIPE, and so did the
/// shutdown after it, which left the log without its status and end
/// records (read as cut short); past twice the log size every flush failed.
#[test]
fn clear_of_a_log_on_a_pipe_starts_it_over_where_it_is() {
    for pol in [LogFullPolicy::UntilFull, LogFullPolicy::Append] {
        let (rd, wr) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
        let drain = std::thread::spawn(move || {
            let mut v = Vec::new();
            File::from(rd).read_to_end(&mut v).unwrap();
            v
        });
        let mut a = TraceAttr::new();
        a.set_log_full_policy(pol);
        let t = Trace::create_with_log(&a, File::from(wr)).unwrap();
        let ev = trace::eventid_open("review.pipe_clear").unwrap();
        filter_all_but(&t, &[ev]);
        t.start().unwrap();
        for i in 0..100u64 {
            trace::event(ev, &i.to_le_bytes());
        }
        t.flush().unwrap();
        t.clear().unwrap();
        for i in 100..200u64 {
            trace::event(ev, &i.to_le_bytes());
        }
        t.flush().unwrap();
        t.stop().unwrap();
        t.shutdown().unwrap();
        let bytes = drain.join().unwrap();
        let p = std::env::temp_dir().join(format!("posixrt-review-pc-{}", std::process::id()));
        std::fs::write(&p, &bytes).unwrap();
        let l = TraceLog::open(&p);
        let _ = std::fs::remove_file(&p);
        let mut l = l.unwrap();
        let got: Vec<u64> = l
            .events()
            .map(|e| e.unwrap())
            .filter(|e| e.id == ev)
            .map(|e| u64::from_le_bytes(e.data[..8].try_into().unwrap()))
            .collect();
        assert!(l.is_complete(), "{pol:?}: the log has its end record");
        assert_eq!(
            got,
            (0..200).collect::<Vec<_>>(),
            "{pol:?}: sent before the clear, and after"
        );
        assert!(l.status().is_some_and(|s| !s.log_full), "{pol:?}");
    }
}
