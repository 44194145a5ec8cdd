//! Validation at stream creation (`posix_trace_create_withlog`).

use posixrt::trace::{Trace, TraceAttr};
use posixrt::ErrorKind;

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
