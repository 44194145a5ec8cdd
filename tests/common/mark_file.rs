//! Raw access to this process's mark registry file, as another writer (or a
//! damaged file) would change it, for tests of what readers make of it:
//! `#[path = "common/mark_file.rs"] mod mark_file;` (from tools/tests:
//! `#[path = "../../tests/common/mark_file.rs"]`). The offsets are those of
//! `src/registry/layout.rs`.
#![allow(dead_code)]

use std::fs::File;
use std::os::unix::fs::FileExt;

/// The file header's size; the slots follow it.
pub const HEADER: u64 = 128;
/// A slot's header (sequence word, state, tid, ...); the payload follows it.
pub const SLOT_HEADER: u64 = 32;
/// A slot's state word, and its values.
pub const S_STATE: u64 = 4;
pub const STATE_FREE: u32 = 0;
pub const STATE_RESERVED: u32 = 1;
/// A slot's tid word.
pub const S_TID: u64 = 8;
/// The marker length word in a mark payload.
pub const P_LEN: u64 = 8;

/// This process's mark registry, open for reading and writing, with its slot
/// size and slot count.
pub fn open() -> (File, u64, u64) {
    let path = posixrt::mark::registry_path().expect("a registry");
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let mut hdr = [0u8; 64];
    f.read_exact_at(&mut hdr, 0).unwrap();
    let get = |o: usize| u32::from_ne_bytes(hdr[o..o + 4].try_into().unwrap()) as u64;
    let (slot_size, count) = (get(48), get(52));
    (f, slot_size, count)
}

/// The file offset of thread `tid`'s slot.
pub fn slot_of(f: &File, slot_size: u64, count: u64, tid: i32) -> u64 {
    (0..count)
        .map(|i| HEADER + i * slot_size)
        .find(|&off| {
            let mut t = [0u8; 8];
            f.read_exact_at(&mut t, off + S_TID).unwrap();
            u64::from_ne_bytes(t) as i32 == tid
        })
        .expect("the thread's slot")
}

/// Writes `bytes` at payload offset `at` of thread `tid`'s slot.
pub fn write_payload_at(tid: i32, at: u64, bytes: &[u8]) {
    let (f, size, count) = open();
    let slot = slot_of(&f, size, count, tid);
    f.write_all_at(bytes, slot + SLOT_HEADER + at).unwrap();
}

/// Writes `len` as the marker length of thread `tid`'s slot.
pub fn write_marker_len(tid: i32, len: u32) {
    write_payload_at(tid, P_LEN, &len.to_ne_bytes());
}

/// Adds `by` to the sequence word of thread `tid`'s slot (odd: a write in
/// progress).
pub fn bump_seq(tid: i32, by: u32) {
    let (f, size, count) = open();
    let slot = slot_of(&f, size, count, tid);
    let mut s = [0u8; 4];
    f.read_exact_at(&mut s, slot).unwrap();
    let seq = u32::from_ne_bytes(s).wrapping_add(by);
    f.write_all_at(&seq.to_ne_bytes(), slot).unwrap();
}

/// Sets the state of every slot in state `from` to `to`; how many.
pub fn set_states(from: u32, to: u32) -> usize {
    let (f, size, count) = open();
    let mut n = 0;
    for i in 0..count {
        let at = HEADER + i * size + S_STATE;
        let mut s = [0u8; 4];
        f.read_exact_at(&mut s, at).unwrap();
        if u32::from_ne_bytes(s) == from {
            f.write_all_at(&to.to_ne_bytes(), at).unwrap();
            n += 1;
        }
    }
    n
}
