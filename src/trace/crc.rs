//! CRC-32C (Castagnoli), the checksum of every log record.

const POLY: u32 = 0x82F6_3B78;

const fn make_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static TABLE: [u32; 256] = make_table();

/// CRC-32C of `data` (the iSCSI / ext4 polynomial; `crc32c(b"123456789") == 0xE306_9283`).
///
/// Uses the SSE4.2 `crc32` instruction when the CPU has it (8 bytes per
/// instruction; the flusher and log readers checksum every record), else a table.
pub(crate) fn crc32c(data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU supports SSE4.2 (checked just above), the only
        // requirement of `crc32c_sse42`.
        return unsafe { crc32c_sse42(data) };
    }
    crc32c_table(data)
}

fn crc32c_table(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c = TABLE[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

/// CRC-32C of up to three little-endian words followed by the first `tail_len`
/// (at most 16) bytes of `tail`, little-endian: an event record's body,
/// checksummed from registers (no pass over a buffer, no load of bytes just
/// stored).
pub(crate) fn crc32c_record(words: &[u64], tail: u128, tail_len: usize) -> u32 {
    let words = &words[..words.len().min(3)];
    let tail_len = tail_len.min(16);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU supports SSE4.2 (checked just above).
        return unsafe { crc32c_record_sse42(words, tail, tail_len) };
    }
    let mut b = [0u8; 40];
    for (i, w) in words.iter().enumerate() {
        b[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
    }
    let at = words.len() * 8;
    b[at..at + 16].copy_from_slice(&tail.to_le_bytes());
    crc32c_table(&b[..at + tail_len])
}

/// # Safety
/// The CPU must support SSE4.2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
#[allow(unused_unsafe)] // the intrinsics are safe here from Rust 1.86 on
unsafe fn crc32c_record_sse42(words: &[u64], tail: u128, len: usize) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u16, _mm_crc32_u32, _mm_crc32_u64, _mm_crc32_u8};
    let mut c = !0u64;
    for &w in words {
        // SAFETY: SSE4.2 is enabled for this function (caller's contract).
        c = unsafe { _mm_crc32_u64(c, w) };
    }
    let (mut t, mut len) = (tail, len);
    while len >= 8 {
        // SAFETY: as above.
        c = unsafe { _mm_crc32_u64(c, t as u64) };
        t >>= 64;
        len -= 8;
    }
    let mut c = c as u32;
    if len >= 4 {
        // SAFETY: as above.
        c = unsafe { _mm_crc32_u32(c, t as u32) };
        t >>= 32;
        len -= 4;
    }
    if len >= 2 {
        // SAFETY: as above.
        c = unsafe { _mm_crc32_u16(c, t as u16) };
        t >>= 16;
        len -= 2;
    }
    if len >= 1 {
        // SAFETY: as above.
        c = unsafe { _mm_crc32_u8(c, t as u8) };
    }
    !c
}

/// # Safety
/// The CPU must support SSE4.2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
unsafe fn crc32c_sse42(data: &[u8]) -> u32 {
    // SAFETY: SSE4.2 is enabled for this function (caller's contract).
    !unsafe { crc32c_sse42_from(!0, data) }
}

/// The CRC state after `data`, from state `c` (not inverted at either end).
///
/// # Safety
/// The CPU must support SSE4.2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
#[inline]
#[allow(unused_unsafe)] // the intrinsics are safe here from Rust 1.86 on
unsafe fn crc32c_sse42_from(c: u32, data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u16, _mm_crc32_u32, _mm_crc32_u64, _mm_crc32_u8};
    let mut c = c as u64;
    let mut chunks = data.chunks_exact(8);
    for ch in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(ch);
        // SAFETY: SSE4.2 is enabled for this function (caller's contract).
        c = unsafe { _mm_crc32_u64(c, u64::from_le_bytes(w)) };
    }
    let mut c = c as u32;
    // The tail in at most three steps (4, 2, 1 bytes): each step is a dependent
    // instruction, and an event record's body ends in 6 bytes.
    let mut rest = chunks.remainder();
    if rest.len() >= 4 {
        let w = [rest[0], rest[1], rest[2], rest[3]];
        // SAFETY: as above.
        c = unsafe { _mm_crc32_u32(c, u32::from_le_bytes(w)) };
        rest = &rest[4..];
    }
    if rest.len() >= 2 {
        // SAFETY: as above.
        c = unsafe { _mm_crc32_u16(c, u16::from_le_bytes([rest[0], rest[1]])) };
        rest = &rest[2..];
    }
    if let Some(&b) = rest.first() {
        // SAFETY: as above.
        c = unsafe { _mm_crc32_u8(c, b) };
    }
    c
}

#[cfg(test)]
mod tests {
    #[test]
    fn check_value() {
        assert_eq!(super::crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(super::crc32c_table(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn a_record_from_registers_is_the_crc_of_its_bytes() {
        let words = [0x0123_4567_89ab_cdefu64, 7, u64::MAX];
        let mut bytes = Vec::new();
        for w in words {
            bytes.extend_from_slice(&w.to_le_bytes());
        }
        let tail: u128 = 0x0f0e_0d0c_0b0a_0908_0706_0504_0302_0100 ^ (1u128 << 127);
        for n in 0..=16usize {
            let mut all = bytes.clone();
            all.extend_from_slice(&tail.to_le_bytes()[..n]);
            let want = super::crc32c_table(&all);
            assert_eq!(super::crc32c_record(&words, tail, n), want, "{n}");
            assert_eq!(super::crc32c(&all), want, "{n}");
            // Two words (a compact event record).
            let mut two = bytes[..16].to_vec();
            two.extend_from_slice(&tail.to_le_bytes()[..n]);
            let want = super::crc32c_table(&two);
            assert_eq!(
                super::crc32c_record(&words[..2], tail, n),
                want,
                "2 words, {n}"
            );
        }
    }

    #[test]
    fn hardware_and_table_agree_on_every_length() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        for start in 0..9 {
            for end in start..data.len() {
                let d = &data[start..end];
                assert_eq!(super::crc32c(d), super::crc32c_table(d), "{start}..{end}");
            }
        }
    }
}
