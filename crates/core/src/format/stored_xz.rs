//! `.xz` containers that store their data uncompressed: the daemon's fallback for an `lzmaf`
//! frame that compression cannot keep up with. The frame keeps the `.xz` framing every
//! `lzmaf` reader expects (upstream's `lzma.decompress` included): one block whose LZMA2
//! data is a run of *uncompressed* chunks, a CRC64 check as Python's `lzma` writes, an index
//! and a footer. Writing one costs a copy and a CRC, so it goes at about the disk's speed;
//! `roverlog compact` recompresses such frames later ([`is_stored`] finds them).
//!
//! Layout (xz file format 1.2.1, all written here):
//!
//! ```text
//! stream header  FD '7zXZ' 00 | flags 00 04 (CRC64) | CRC32(flags)
//! block header   size byte 02 (12 bytes) | block flags 00 (one filter, no sizes)
//!                | filter 21 (LZMA2) 01 (one property byte) 08 (64 KiB dictionary)
//!                | 3 zero bytes of padding | CRC32(the 8 bytes before)
//! LZMA2 chunks   01 (uncompressed, dictionary reset) | size-1 (u16 BE) | bytes, then
//!                02 (uncompressed) | size-1 | bytes ... (<= 64 KiB each) | 00 (end)
//! block padding  zeros to a multiple of 4 | CRC64(data) (u64 LE)
//! index          00 | records (varint) 1 | unpadded size | uncompressed size | zeros to
//!                a multiple of 4 | CRC32(index)
//! stream footer  CRC32(backward size, flags) | backward size (index bytes / 4 - 1, u32 LE)
//!                | flags 00 04 | 'YZ'
//! ```

/// The largest LZMA2 uncompressed chunk.
const CHUNK: usize = 64 << 10;
/// Stream flags: check type CRC64 (what Python's `lzma` writes by default).
const FLAGS: [u8; 2] = [0x00, 0x04];
const MAGIC: [u8; 6] = [0xFD, b'7', b'z', b'X', b'Z', 0x00];
const FOOTER_MAGIC: [u8; 2] = [b'Y', b'Z'];
/// LZMA2's dictionary-size property 8: 64 KiB, as large as a chunk.
const DICT_PROP: u8 = 8;
const BLOCK_HEADER: usize = 12;
const CHECK: usize = 8;

/// `data` as one `.xz` container whose LZMA2 chunks are stored uncompressed. Empty data
/// gives a stream without a block, as liblzma writes it.
pub fn store(data: &[u8]) -> Vec<u8> {
    let chunks = data.len().div_ceil(CHUNK);
    let mut out = Vec::with_capacity(data.len() + 3 * chunks + 64);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FLAGS);
    out.extend_from_slice(&crc32(&FLAGS).to_le_bytes());
    let mut index = vec![0x00];
    if data.is_empty() {
        index.push(0);
    } else {
        let block_start = out.len();
        let header = [0x02, 0x00, 0x21, 0x01, DICT_PROP, 0, 0, 0];
        out.extend_from_slice(&header);
        out.extend_from_slice(&crc32(&header).to_le_bytes());
        for (k, c) in data.chunks(CHUNK).enumerate() {
            out.push(if k == 0 { 0x01 } else { 0x02 });
            out.extend_from_slice(&((c.len() - 1) as u16).to_be_bytes());
            out.extend_from_slice(c);
        }
        out.push(0x00);
        let unpadded = out.len() - block_start + CHECK;
        out.resize(out.len().next_multiple_of(4), 0);
        out.extend_from_slice(&crc64(data).to_le_bytes());
        index.push(1);
        varint(&mut index, unpadded as u64);
        varint(&mut index, data.len() as u64);
    }
    index.resize(index.len().next_multiple_of(4), 0);
    let index_crc = crc32(&index);
    index.extend_from_slice(&index_crc.to_le_bytes());
    out.extend_from_slice(&index);
    let mut tail = ((index.len() / 4 - 1) as u32).to_le_bytes().to_vec();
    tail.extend_from_slice(&FLAGS);
    out.extend_from_slice(&crc32(&tail).to_le_bytes());
    out.extend_from_slice(&tail);
    out.extend_from_slice(&FOOTER_MAGIC);
    out
}

/// Whether `frame` is an `.xz` container whose first block holds only uncompressed LZMA2
/// chunks (what [`store`] writes; an encoder may also store a frame it could not shrink).
/// Anything else, damaged bytes included, is `false`: this only picks frames worth
/// recompressing, reading them is the decoder's job.
pub fn is_stored(frame: &[u8]) -> bool {
    if !frame.starts_with(&MAGIC) || frame.len() < BLOCK_HEADER + 1 {
        return false;
    }
    let size_byte = frame[BLOCK_HEADER];
    if size_byte == 0 {
        return false; // the index: no block at all
    }
    let mut pos = BLOCK_HEADER + (usize::from(size_byte) + 1) * 4;
    let mut chunks = 0;
    while let Some(&control) = frame.get(pos) {
        match control {
            0x00 => return chunks > 0,
            0x01 | 0x02 => {
                let Some(size) = frame.get(pos + 1..pos + 3) else {
                    return false;
                };
                pos += 3 + usize::from(u16::from_be_bytes([size[0], size[1]])) + 1;
                chunks += 1;
            }
            _ => return false,
        }
    }
    false
}

/// Appends `v` as an xz multibyte integer (7 bits a byte, low first).
fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// CRC32 (IEEE, reflected), for the container's headers, index and footer.
fn crc32(data: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut t = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    (c >> 1) ^ 0xEDB8_8320
                } else {
                    c >> 1
                };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        t
    };
    !data.iter().fold(!0u32, |c, &b| {
        TABLE[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8)
    })
}

/// CRC64 tables (ECMA-182, reflected, as xz uses), slice-by-8: the check covers every byte
/// of a stored frame, so it must run far faster than the disk.
const CRC64: [[u64; 256]; 8] = {
    let mut t = [[0u64; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u64;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xC96C_5795_D787_0F42
            } else {
                c >> 1
            };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut s = 1;
    while s < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xFF) as usize];
            i += 1;
        }
        s += 1;
    }
    t
};

/// CRC64 as the `.xz` check.
fn crc64(data: &[u8]) -> u64 {
    let mut c = !0u64;
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let x = c ^ u64::from_le_bytes(w.try_into().expect("8 bytes"));
        c = CRC64[7][(x & 0xFF) as usize]
            ^ CRC64[6][((x >> 8) & 0xFF) as usize]
            ^ CRC64[5][((x >> 16) & 0xFF) as usize]
            ^ CRC64[4][((x >> 24) & 0xFF) as usize]
            ^ CRC64[3][((x >> 32) & 0xFF) as usize]
            ^ CRC64[2][((x >> 40) & 0xFF) as usize]
            ^ CRC64[1][((x >> 48) & 0xFF) as usize]
            ^ CRC64[0][(x >> 56) as usize];
    }
    for &b in words.remainder() {
        c = CRC64[0][((c ^ u64::from(b)) & 0xFF) as usize] ^ (c >> 8);
    }
    !c
}

#[cfg(test)]
mod tests;
