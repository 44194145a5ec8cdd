//! `posix_truncation_status` read into a caller's buffer
//! ([`Trace::getnext_into`]): POSIX tells POSIX_TRACE_TRUNCATED_RECORD (cut
//! when recorded, past the maximum data size) from POSIX_TRACE_TRUNCATED_READ
//! (cut by the reader's buffer, which overrides it); a port that grows its
//! buffer on TRUNCATED_READ needs the two apart, as the C library gives them.

#[path = "common/trace_files.rs"]
mod trace_files;
use trace_files::serial;

use posixrt::trace::{self, Trace, TraceAttr};

#[test]
fn getnext_into_tells_a_read_cut_from_a_record_cut() {
    let _g = serial();
    let mut a = TraceAttr::new();
    a.set_max_data_size(8).unwrap();
    let t = Trace::create(&a).unwrap();
    let ev = trace::eventid_open("truncation.kinds").unwrap();
    t.start().unwrap();
    trace::event(ev, b"0123456789abcdef"); // cut when recorded
    trace::event(ev, b"01234567"); // whole
    trace::event(ev, b"0123456789"); // cut when recorded, and by the read
    t.stop().unwrap();
    let mut info = Vec::new();
    let mut big = [0u8; 16];
    let mut small = [0u8; 3];
    while let Some(i) = t.getnext_into(&mut big).unwrap() {
        if i.id == ev {
            info.push((i.data_len, i.truncated, i.truncated_read));
            if info.len() == 1 {
                // The whole one, into a buffer too small for it.
                let i = t.getnext_into(&mut small).unwrap().unwrap();
                info.push((i.data_len, i.truncated, i.truncated_read));
                let i = t.getnext_into(&mut small).unwrap().unwrap();
                info.push((i.data_len, i.truncated, i.truncated_read));
            }
        }
    }
    assert_eq!(
        info,
        [
            (8, true, false), // TRUNCATED_RECORD
            (3, true, true),  // TRUNCATED_READ
            (3, true, true),  // both: TRUNCATED_READ overrides
        ]
    );
    t.shutdown().unwrap();
}
