//! Tests of a sub-buffer's fast path (`ring.rs`).

use super::*;

/// Writes fast-path records until the fast path refuses, checking that it
/// never wrote past the end of the ring or the soft limit.
fn fill_fast(r: &Ring, first: u64) -> u64 {
    let mut n = first;
    while r.put_fast(1, &n.to_le_bytes()) {
        n += 1;
    }
    n
}

#[test]
fn fast_path_stops_before_the_end_and_resumes_after_padding() {
    if !clock::uses_tsc() {
        let r = Ring::new(256, 7, 256, 64).unwrap();
        assert!(!r.put_fast(1, &[1]), "no TSC: the fast path never writes");
        return;
    }
    let r = Ring::new(256, 7, 256, 64).unwrap();
    // 256 bytes hold ten 24-byte records (240), and the eleventh would cross.
    let n = fill_fast(&r, 0);
    assert_eq!(n, 10);
    assert_eq!(r.head.0.load(Relaxed), 240);
    // Read them back in order, with their data and thread id.
    for i in 0..10u64 {
        let rec = r.pop().unwrap();
        assert_eq!(
            (rec.id, rec.tid, rec.data.clone()),
            (1, 7, i.to_le_bytes().to_vec())
        );
    }
    // The slow path pads the end and writes at the start of the next lap...
    let head = r.head.0.load(Relaxed);
    assert!(r.room(head, r.need(head, 8, false), 0) != NO_ROOM);
    r.put(head, 2, 7, 0, &99u64.to_le_bytes(), false, None);
    assert_eq!(r.head.0.load(Relaxed), 256 + 24);
    // ...after which the fast path takes over again, to the end of that lap.
    let m = fill_fast(&r, 100);
    assert_eq!(m - 100, 9);
    assert_eq!(r.pop().unwrap().data, 99u64.to_le_bytes().to_vec());
    for i in 100..m {
        assert_eq!(r.pop().unwrap().data, i.to_le_bytes().to_vec());
    }
    assert!(r.pop().is_none());
}

#[test]
fn fast_path_keeps_within_the_soft_limit_by_the_cached_tail() {
    if !clock::uses_tsc() {
        return;
    }
    // Soft limit 96 bytes: four 24-byte records, then the slow path decides.
    let r = Ring::new(1024, 7, 96, 64).unwrap();
    assert_eq!(fill_fast(&r, 0), 4);
    // Reading frees the space, but the writer's cached tail is older: the fast
    // path stays off until a slow-path record refreshes it.
    while r.pop().is_some() {}
    assert!(!r.put_fast(1, &[0; 8]));
    let head = r.head.0.load(Relaxed);
    assert!(r.room(head, r.need(head, 8, false), 1024 - 96) != NO_ROOM);
    r.put(head, 1, 7, 0, &[0; 8], false, None);
    assert_eq!(fill_fast(&r, 0), 3);
}

#[test]
fn fast_path_leaves_long_or_truncated_data_to_the_slow_path() {
    let r = Ring::new(256, 7, 256, 4).unwrap();
    assert!(
        !r.put_fast(1, &[1, 2]),
        "max data 4: the slow path truncates"
    );
    let r = Ring::new(256, 7, 256, 64).unwrap();
    assert!(!r.put_fast(1, &[0; 9]));
    assert_eq!(r.head.0.load(Relaxed), 0);
}
