//! A slot's payload as the owner sees it: 64-bit atomic words in its
//! mapping (byte access built on them).

use std::sync::atomic::Ordering;

use super::map::Mapping;

/// A slot's payload, as 64-bit words (byte access is built on them).
pub struct Payload<'a> {
    pub(super) map: &'a Mapping,
    pub(super) off: usize,
    pub(super) len: usize,
}

impl Payload<'_> {
    /// The payload size in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Stores word `i` (byte offset `8 * i`).
    ///
    /// # Panics
    /// If the word is outside the payload (a bug in the caller's layout).
    #[inline]
    pub fn store_u64(&mut self, i: usize, v: u64) {
        // Not `i * 8 + 8 <= len`: that wraps for an index near `usize::MAX / 8`
        // and lets the store land outside the payload.
        assert!(i < self.len / 8, "payload word {i} out of range");
        self.map
            .u64_at(self.off + i * 8)
            .store(v, Ordering::Relaxed);
    }

    /// Loads word `i`.
    ///
    /// # Panics
    /// If the word is outside the payload.
    #[inline]
    pub fn load_u64(&self, i: usize) -> u64 {
        // Not `i * 8 + 8 <= len`: that wraps for an index near `usize::MAX / 8`
        // and lets the store land outside the payload.
        assert!(i < self.len / 8, "payload word {i} out of range");
        self.map.u64_at(self.off + i * 8).load(Ordering::Relaxed)
    }

    /// Stores `data` at byte offset `at` (edge words are merged).
    ///
    /// # Panics
    /// If the range is outside the payload.
    pub fn store_bytes(&mut self, at: usize, data: &[u8]) {
        assert!(
            at <= self.len && data.len() <= self.len - at,
            "payload bytes out of range"
        );
        let mut pos = at;
        let mut rest = data;
        while !rest.is_empty() {
            let w = pos / 8;
            let within = pos % 8;
            let n = (8 - within).min(rest.len());
            let v = if within == 0 && n == 8 {
                u64::from_ne_bytes([
                    rest[0], rest[1], rest[2], rest[3], rest[4], rest[5], rest[6], rest[7],
                ])
            } else {
                let mut b = self.load_u64(w).to_ne_bytes();
                b[within..within + n].copy_from_slice(&rest[..n]);
                u64::from_ne_bytes(b)
            };
            self.store_u64(w, v);
            pos += n;
            rest = &rest[n..];
        }
    }

    /// Loads bytes from offset `at` into `out`.
    ///
    /// # Panics
    /// If the range is outside the payload.
    pub fn load_bytes(&self, at: usize, out: &mut [u8]) {
        assert!(
            at <= self.len && out.len() <= self.len - at,
            "payload bytes out of range"
        );
        for (i, b) in out.iter_mut().enumerate() {
            let p = at + i;
            *b = self.load_u64(p / 8).to_ne_bytes()[p % 8];
        }
    }
}
