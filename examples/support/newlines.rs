//! Newline counting shared by the `linecount` examples: AVX2 when the CPU has it,
//! otherwise byte lanes that LLVM vectorises.

/// Counts `\n` in `b`, 32 bytes per step in byte lanes (vectorised by LLVM).
#[inline(always)]
fn count_lanes(b: &[u8]) -> usize {
    const L: usize = 32;
    let mut total = 0usize;
    let mut big = b.chunks_exact(L * 255);
    for block in &mut big {
        let mut acc = [0u8; L];
        for c in block.chunks_exact(L) {
            for i in 0..L {
                acc[i] += (c[i] == b'\n') as u8;
            }
        }
        total += acc.iter().map(|&x| x as usize).sum::<usize>();
    }
    total + big.remainder().iter().filter(|&&x| x == b'\n').count()
}

/// AVX2: compare 32 bytes with `\n`, subtract the 0/-1 masks into byte
/// counters, fold them with `vpsadbw` before they can wrap (every 63 steps of
/// 4 vectors: at most 252 additions per lane).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn count_avx2(b: &[u8]) -> usize {
    use std::arch::x86_64::*;
    let nl = _mm256_set1_epi8(b'\n' as i8);
    let zero = _mm256_setzero_si256();
    let mut total = _mm256_setzero_si256();
    let mut chunks = b.chunks_exact(32 * 4);
    let mut acc = _mm256_setzero_si256();
    let mut steps = 0;
    for c in &mut chunks {
        // SAFETY: `c` is 128 bytes; unaligned loads are allowed.
        let (v0, v1, v2, v3) = unsafe {
            let p = c.as_ptr() as *const __m256i;
            (
                _mm256_loadu_si256(p),
                _mm256_loadu_si256(p.add(1)),
                _mm256_loadu_si256(p.add(2)),
                _mm256_loadu_si256(p.add(3)),
            )
        };
        acc = _mm256_sub_epi8(acc, _mm256_cmpeq_epi8(v0, nl));
        acc = _mm256_sub_epi8(acc, _mm256_cmpeq_epi8(v1, nl));
        acc = _mm256_sub_epi8(acc, _mm256_cmpeq_epi8(v2, nl));
        acc = _mm256_sub_epi8(acc, _mm256_cmpeq_epi8(v3, nl));
        steps += 1;
        if steps == 63 {
            total = _mm256_add_epi64(total, _mm256_sad_epu8(acc, zero));
            acc = _mm256_setzero_si256();
            steps = 0;
        }
    }
    total = _mm256_add_epi64(total, _mm256_sad_epu8(acc, zero));
    let mut lanes = [0u64; 4];
    // SAFETY: `lanes` is 32 bytes.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, total) };
    lanes.iter().sum::<u64>() as usize + count_lanes(chunks.remainder())
}

/// Counts the newlines in `b`, with AVX2 when the CPU has it.
pub fn count_newlines(b: &[u8]) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            return unsafe { count_avx2(b) };
        }
    }
    count_lanes(b)
}
