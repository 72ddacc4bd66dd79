//! Blosc's byte unshuffle for wide records, with an AVX2 kernel picked at run time.
//!
//! `blosc-src` compiles c-blosc's shuffle with SSE2 only (its AVX2 file needs the whole crate
//! built with `-mavx2`, which a wheel cannot assume), while c-blosc's own build compiles
//! `shuffle-avx2.c` with `-mavx2` and chooses at run time. For records of 16 bytes or more
//! (L5Kit's 116-byte agents, 64+ byte frames) we do the same here: c-blosc decodes the
//! chunk with its shuffle flag cleared, and [`unshuffle_block`] undoes the shuffle block by
//! block with AVX2 when the CPU has it.
//!
//! A shuffled block of `n = len / typesize` records stores byte `i` of record `j` at
//! `i * n + j`; the `len % typesize` trailing bytes are stored as they are.

/// Whether this CPU runs the AVX2 kernel (checked once; `false` off x86-64).
pub fn avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *HAS.get_or_init(|| std::is_x86_feature_detected!("avx2"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Undoes Blosc's byte shuffle of one block: `src` and `dst` have the same length.
pub fn unshuffle_block(typesize: usize, src: &[u8], dst: &mut [u8]) {
    assert_eq!(src.len(), dst.len());
    #[cfg(target_arch = "x86_64")]
    if typesize >= 16 && avx2() {
        // SAFETY: the CPU has AVX2 (checked above); the kernel bounds every access by the
        // slices' lengths (see `avx2_kernel`).
        unsafe { avx2_kernel::unshuffle(typesize, src, dst) };
        return;
    }
    unshuffle_scalar(typesize, src, dst);
}

/// The plain loop (c-blosc's `unshuffle_generic`), also the reference the tests use.
pub fn unshuffle_scalar(typesize: usize, src: &[u8], dst: &mut [u8]) {
    assert_eq!(src.len(), dst.len());
    let n = src.len() / typesize.max(1);
    let done = n * typesize;
    if typesize > 1 {
        for (j, rec) in dst[..done].chunks_exact_mut(typesize).enumerate() {
            for (i, b) in rec.iter_mut().enumerate() {
                *b = src[i * n + j];
            }
        }
    } else {
        dst[..done].copy_from_slice(&src[..done]);
    }
    dst[done..].copy_from_slice(&src[done..]);
}

#[cfg(target_arch = "x86_64")]
mod avx2_kernel {
    use std::arch::x86_64::*;

    /// 32 records at a time, 16 byte positions at a time: 16 rows of 32 bytes loaded,
    /// transposed in registers (both 128-bit lanes at once: records 0-15 and 16-31), stored
    /// as 32 runs of 16 bytes. A record width that is not a multiple of 16 ends with an
    /// overlapping tile at `typesize - 16`, which rewrites the same bytes. The records past
    /// the last multiple of 32 go through the scalar loop.
    ///
    /// # Safety
    /// The CPU must have AVX2; `typesize >= 16`; `src.len() == dst.len()`.
    #[target_feature(enable = "avx2")]
    pub unsafe fn unshuffle(typesize: usize, src: &[u8], dst: &mut [u8]) {
        let n = src.len() / typesize;
        let vec_n = n - n % 32;
        let s = src.as_ptr();
        let d = dst.as_mut_ptr();
        let mut tiles = (0..typesize / 16).map(|t| t * 16).collect::<Vec<_>>();
        if typesize % 16 != 0 {
            tiles.push(typesize - 16);
        }
        let mut j = 0;
        while j < vec_n {
            for &i in &tiles {
                let mut x = [_mm256_setzero_si256(); 16];
                for (r, v) in x.iter_mut().enumerate() {
                    // In bounds: (i + r) < typesize, j + 32 <= n, so the last byte read is
                    // below typesize * n <= src.len().
                    *v = _mm256_loadu_si256(s.add((i + r) * n + j).cast());
                }
                transpose(&mut x);
                for (k, v) in x.iter().enumerate() {
                    // Register k holds byte positions i..i+16 of record (bit-reversed k)
                    // in its low lane, and of the record 16 further in its high lane.
                    let rec = j + BITREV4[k];
                    let lo = _mm256_castsi256_si128(*v);
                    let hi = _mm256_extracti128_si256::<1>(*v);
                    // In bounds: rec + 16 < n and i + 16 <= typesize.
                    _mm_storeu_si128(d.add(rec * typesize + i).cast(), lo);
                    _mm_storeu_si128(d.add((rec + 16) * typesize + i).cast(), hi);
                }
            }
            j += 32;
        }
        for jj in vec_n..n {
            for i in 0..typesize {
                *d.add(jj * typesize + i) = *s.add(i * n + jj);
            }
        }
        let done = n * typesize;
        dst[done..].copy_from_slice(&src[done..]);
    }

    const BITREV4: [usize; 16] = [0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15];

    /// Four rounds of pairwise interleaving (8, 16, 32, 64-bit elements) transpose a
    /// 16x16 byte matrix in each lane; the result's register k holds column `BITREV4[k]`.
    #[target_feature(enable = "avx2")]
    unsafe fn transpose(x: &mut [__m256i; 16]) {
        let mut y = [_mm256_setzero_si256(); 16];
        for k in 0..8 {
            y[k] = _mm256_unpacklo_epi8(x[2 * k], x[2 * k + 1]);
            y[k + 8] = _mm256_unpackhi_epi8(x[2 * k], x[2 * k + 1]);
        }
        for k in 0..8 {
            x[k] = _mm256_unpacklo_epi16(y[2 * k], y[2 * k + 1]);
            x[k + 8] = _mm256_unpackhi_epi16(y[2 * k], y[2 * k + 1]);
        }
        for k in 0..8 {
            y[k] = _mm256_unpacklo_epi32(x[2 * k], x[2 * k + 1]);
            y[k + 8] = _mm256_unpackhi_epi32(x[2 * k], x[2 * k + 1]);
        }
        for k in 0..8 {
            x[k] = _mm256_unpacklo_epi64(y[2 * k], y[2 * k + 1]);
            x[k + 8] = _mm256_unpackhi_epi64(y[2 * k], y[2 * k + 1]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shuffle(typesize: usize, src: &[u8]) -> Vec<u8> {
        let n = src.len() / typesize;
        let mut out = src.to_vec();
        for j in 0..n {
            for i in 0..typesize {
                out[i * n + j] = src[j * typesize + i];
            }
        }
        out
    }

    #[test]
    fn kernels_undo_the_shuffle_for_every_width_and_length() {
        let mut seed = 7u32;
        for typesize in [1usize, 2, 3, 8, 15, 16, 17, 24, 31, 32, 33, 64, 116, 255] {
            for records in [0, 1, 31, 32, 33, 64, 100, 1000] {
                for tail in [0, 1, typesize.saturating_sub(1)] {
                    let len = records * typesize + tail.min(typesize.saturating_sub(1));
                    let plain: Vec<u8> = (0..len)
                        .map(|_| {
                            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                            (seed >> 16) as u8
                        })
                        .collect();
                    let shuffled = shuffle(typesize, &plain);
                    let mut a = vec![0u8; len];
                    unshuffle_scalar(typesize, &shuffled, &mut a);
                    assert_eq!(a, plain, "scalar, typesize {typesize}, {len} bytes");
                    let mut b = vec![0u8; len];
                    unshuffle_block(typesize, &shuffled, &mut b);
                    assert_eq!(b, plain, "dispatch, typesize {typesize}, {len} bytes");
                }
            }
        }
        // Say which kernel the dispatch test covered, so a run on a CPU without AVX2 is
        // visible in the test output rather than silently scalar-only.
        eprintln!("unshuffle dispatch used AVX2: {}", avx2());
    }
}
