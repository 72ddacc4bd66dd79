//! `order: "F"`: zarr-python stores each chunk as `chunk.tobytes(order="F")` (the whole chunk
//! shape, edge chunks padded); readers get the logical array in C order. One chunk is
//! reordered at a time, through a reused per-thread buffer: never a copy of the whole array.

/// Reorders one chunk of `shape` (elements of `itemsize` bytes) from Fortran to C order, in
/// place.
pub fn f_to_c(buf: &mut [u8], shape: &[u64], itemsize: usize) {
    if shape.len() < 2 || itemsize == 0 {
        return;
    }
    thread_local! {
        static TMP: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    TMP.with_borrow_mut(|tmp| {
        tmp.clear();
        tmp.extend_from_slice(buf);
        match itemsize {
            1 => reorder::<1>(tmp, buf, shape),
            2 => reorder::<2>(tmp, buf, shape),
            4 => reorder::<4>(tmp, buf, shape),
            8 => reorder::<8>(tmp, buf, shape),
            n => reorder_dyn(tmp, buf, shape, n),
        }
        if tmp.capacity() > 64 << 20 {
            *tmp = Vec::new();
        }
    });
}

/// Fortran strides, in elements: the first index varies fastest.
fn fortran_strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; dims.len()];
    for k in 1..dims.len() {
        s[k] = s[k - 1] * dims[k - 1];
    }
    s
}

/// Calls `row(src_start, dst_start)` for every run of the last dimension: in C order the
/// run is contiguous at `dst_start`; in the Fortran source its elements lie `stride` apart.
fn for_each_row(dims: &[usize], mut row: impl FnMut(usize, usize)) {
    let fs = fortran_strides(dims);
    let outer = &dims[..dims.len() - 1];
    let n_rows: usize = outer.iter().product();
    let last = dims[dims.len() - 1];
    let mut idx = vec![0usize; outer.len()];
    let mut src = 0usize;
    for r in 0..n_rows {
        row(src, r * last);
        for k in (0..outer.len()).rev() {
            idx[k] += 1;
            src += fs[k];
            if idx[k] < outer[k] {
                break;
            }
            src -= fs[k] * outer[k];
            idx[k] = 0;
        }
    }
}

fn reorder<const N: usize>(src: &[u8], dst: &mut [u8], shape: &[u64]) {
    let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    if dims.len() == 2 {
        return transpose_2d::<N>(bytemuck_cast(src), bytemuck_cast_mut(dst), dims[0], dims[1]);
    }
    let stride = fortran_strides(&dims)[dims.len() - 1];
    let last = dims[dims.len() - 1];
    let (s, d): (&[[u8; N]], &mut [[u8; N]]) = (bytemuck_cast(src), bytemuck_cast_mut(dst));
    for_each_row(&dims, |from, to| {
        for (j, out) in d[to..to + last].iter_mut().enumerate() {
            *out = s[from + j * stride];
        }
    });
}

/// A 2-D chunk: Fortran order of `rows x cols` is C order of `cols x rows`; transposed in
/// cache-sized tiles (a plain strided gather was twice as slow as zarr-python).
fn transpose_2d<const N: usize>(src: &[[u8; N]], dst: &mut [[u8; N]], rows: usize, cols: usize) {
    const T: usize = 32;
    for r0 in (0..rows).step_by(T) {
        for c0 in (0..cols).step_by(T) {
            for r in r0..(r0 + T).min(rows) {
                let out = &mut dst[r * cols..(r + 1) * cols];
                for c in c0..(c0 + T).min(cols) {
                    out[c] = src[c * rows + r];
                }
            }
        }
    }
}

fn reorder_dyn(src: &[u8], dst: &mut [u8], shape: &[u64], n: usize) {
    let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    let stride = fortran_strides(&dims)[dims.len() - 1];
    let last = dims[dims.len() - 1];
    for_each_row(&dims, |from, to| {
        for j in 0..last {
            let a = (from + j * stride) * n;
            dst[(to + j) * n..(to + j + 1) * n].copy_from_slice(&src[a..a + n]);
        }
    });
}

/// `bytes` as whole `N`-byte elements (the chunk holds a whole number of them).
fn bytemuck_cast<const N: usize>(bytes: &[u8]) -> &[[u8; N]] {
    debug_assert_eq!(bytes.len() % N, 0);
    // SAFETY: `[u8; N]` has alignment 1 and size N, so `len / N` of them fit exactly in
    // `bytes` (a whole number of elements), borrowed for the same lifetime.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast(), bytes.len() / N) }
}

fn bytemuck_cast_mut<const N: usize>(bytes: &mut [u8]) -> &mut [[u8; N]] {
    debug_assert_eq!(bytes.len() % N, 0);
    // SAFETY: as in `bytemuck_cast`, with the unique borrow of `bytes` handed on.
    unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast(), bytes.len() / N) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fortran_bytes_come_back_in_c_order() {
        // A 2x3 array [[0,1,2],[3,4,5]] in Fortran order is 0,3,1,4,2,5.
        let mut b: Vec<u8> = [0u8, 3, 1, 4, 2, 5].to_vec();
        f_to_c(&mut b, &[2, 3], 1);
        assert_eq!(b, [0, 1, 2, 3, 4, 5]);
        // 2x2x2 with 2-byte elements.
        let c: Vec<u16> = (0..8).collect();
        let f: Vec<u16> = [0, 4, 2, 6, 1, 5, 3, 7].to_vec();
        let mut fb: Vec<u8> = f.iter().flat_map(|v| v.to_le_bytes()).collect();
        f_to_c(&mut fb, &[2, 2, 2], 2);
        let got: Vec<u16> = fb
            .chunks(2)
            .map(|x| u16::from_le_bytes([x[0], x[1]]))
            .collect();
        assert_eq!(got, c);
    }
}
#[cfg(test)]
mod speed {
    #[test]
    #[ignore]
    fn transpose_speed() {
        let mut b = vec![1u8; 500 * 400 * 8];
        let t = std::time::Instant::now();
        for _ in 0..120 {
            super::f_to_c(&mut b, &[500, 400], 8);
        }
        eprintln!("120 chunks: {:?}", t.elapsed());
    }
}
