//! Trace log bytes built by hand, for the tests of the log reader:
//! `#[path = "common/log_bytes.rs"] mod log_bytes;`.
#![allow(dead_code)]

/// CRC-32C (Castagnoli), as the log format checks its records with.
pub fn crc32c(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// Appends record body `b` to `out`, framed (length, checksum, body).
pub fn push_record(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c(b).to_le_bytes());
    out.extend_from_slice(b);
}
