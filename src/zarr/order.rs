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
    let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    let n: usize = dims.iter().product();
    debug_assert_eq!(n * itemsize, buf.len());
    // Fortran strides (in elements): the first index varies fastest.
    let mut fstride = vec![1usize; dims.len()];
    for k in 1..dims.len() {
        fstride[k] = fstride[k - 1] * dims[k - 1];
    }
    TMP.with_borrow_mut(|tmp| {
        tmp.clear();
        tmp.extend_from_slice(buf);
        let mut idx = vec![0usize; dims.len()];
        let mut src = 0usize; // Fortran offset of `idx`
        for c in 0..n {
            buf[c * itemsize..(c + 1) * itemsize]
                .copy_from_slice(&tmp[src * itemsize..(src + 1) * itemsize]);
            // Next C index: the last dimension varies fastest.
            for k in (0..dims.len()).rev() {
                idx[k] += 1;
                src += fstride[k];
                if idx[k] < dims[k] {
                    break;
                }
                src -= fstride[k] * dims[k];
                idx[k] = 0;
            }
        }
        if tmp.capacity() > 64 << 20 {
            *tmp = Vec::new();
        }
    });
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
