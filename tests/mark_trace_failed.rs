//! The `mark_set` trace event says a thread's marker changed: a mark call
//! that fails (here: every slot of the registry taken, `OutOfResources`)
//! changed nothing and must not record one, or the trace shows a marker the
//! thread never had. (Alone in its binary: it fills this process's registry.)

use std::collections::BTreeMap;

use posixrt::trace::{Trace, TraceAttr};
use posixrt::ErrorKind;

#[path = "common/mark_file.rs"]
mod mark_file;
use mark_file::{set_states, STATE_FREE, STATE_RESERVED};

/// The marker texts of the `mark_set` events of `tid` in `t`.
fn mark_texts(t: &Trace, tid: u32) -> Vec<String> {
    let types: BTreeMap<u16, _> = t.event_types().map(|ty| (ty.id.raw(), ty)).collect();
    t.events()
        .filter(|e| e.tid == tid)
        .filter_map(|e| {
            let ty = types.get(&e.id.raw()).filter(|ty| ty.name == "mark_set")?;
            let used: usize = ty.fields.iter().map(|f| f.1.size()).sum();
            Some(String::from_utf8_lossy(&e.data[used..]).into_owned())
        })
        .collect()
}

#[test]
fn a_failed_mark_records_no_mark_set_event() {
    posixrt::mark::set("mark_trace_failed keeper").unwrap();
    let mut a = TraceAttr::new();
    a.set_stream_size(1 << 20).unwrap();
    let t = Trace::create(&a).unwrap();
    t.start().unwrap();
    let filled = set_states(STATE_FREE, STATE_RESERVED);
    let (tid, update, set) = std::thread::spawn(|| {
        let u = posixrt::mark::update("no slot (update)").map_err(|e| e.kind());
        let s = posixrt::mark::set("no slot (set)").map_err(|e| e.kind());
        // SAFETY: gettid has no preconditions.
        ((unsafe { libc::gettid() }) as u32, u, s)
    })
    .join()
    .unwrap();
    let freed = set_states(STATE_RESERVED, STATE_FREE);
    t.stop().unwrap();
    let texts = mark_texts(&t, tid);
    t.shutdown().unwrap();
    posixrt::mark::clear();
    assert!(filled > 0 && freed == filled, "{filled} {freed}");
    // The precondition: both marks failed.
    assert_eq!(update, Err(ErrorKind::OutOfResources));
    assert_eq!(set, Err(ErrorKind::OutOfResources));
    assert!(texts.is_empty(), "events of marks that failed: {texts:?}");
}
