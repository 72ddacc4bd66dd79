//! The decoded size of an `.xz` file read from its streams' indexes, without decoding.
//!
//! An `lzma` channel's length is its decoded bytes over the sample size. Decoding an hour of
//! IMU samples to count them costs what the channel holds; every `.xz` stream ends with an
//! index that lists each block's unpadded and uncompressed size, and a footer that gives the
//! index's size, so the count costs a few small reads from the end of the file.
//!
//! Layout (the `.xz` file format, 1.2.0): `stream = header(12) block* index footer(12)`,
//! streams optionally separated by stream padding (zero bytes, a multiple of 4). The footer
//! is `crc32(4) backward_size(4) flags(2) "YZ"`, where the index holds
//! `(backward_size + 1) * 4` bytes; the index is `0x00, count, (unpadded, uncompressed) *
//! count, zero padding to 4, crc32(4)` with sizes as variable-length integers.
//!
//! The bytes are untrusted: every size is checked against what is left of the file, and
//! anything that does not fit answers `None` (the caller decodes instead, and reports what
//! is wrong from there).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::error::{IoContext, Result};

const FOOTER_MAGIC: [u8; 2] = *b"YZ";
const HEADER_MAGIC: [u8; 6] = [0xFD, b'7', b'z', b'X', b'Z', 0x00];
/// Largest index read (the format allows 16 GiB; one of a few million blocks is far less).
const MAX_INDEX_BYTES: u64 = 64 << 20;

/// The decoded bytes of every stream of the `.xz` file at `path`, from the indexes; `None`
/// when the file's tail is not a sound sequence of streams.
pub fn uncompressed_len(path: &Path) -> Result<Option<u64>> {
    let file = File::open(path).at(path)?;
    let size = file.metadata().at(path)?.len();
    Ok(streams_len(size, &|offset, len| {
        let mut buf = vec![0u8; len];
        file.read_exact_at(&mut buf, offset).ok()?;
        Some(buf)
    }))
}

/// [`uncompressed_len`] of bytes in memory (what the fuzz target drives).
pub fn uncompressed_len_of(bytes: &[u8]) -> Option<u64> {
    streams_len(bytes.len() as u64, &|offset, len| {
        let start = usize::try_from(offset).ok()?;
        bytes
            .get(start..start.checked_add(len)?)
            .map(<[u8]>::to_vec)
    })
}

/// `len` bytes at `offset`, or `None` past the end.
type ReadAt<'a> = dyn Fn(u64, usize) -> Option<Vec<u8>> + 'a;

fn streams_len(size: u64, read_at: &ReadAt) -> Option<u64> {
    let mut end = size;
    let mut total = 0u64;
    if end == 0 {
        return None;
    }
    while end > 0 {
        // Stream padding: zero bytes in groups of four before a stream's end.
        while end >= 4 && read_at(end - 4, 4)? == [0; 4] {
            end -= 4;
        }
        if end < 24 {
            return None;
        }
        let footer = read_at(end - 12, 12)?;
        if footer[10..12] != FOOTER_MAGIC {
            return None;
        }
        let stored = u32::from_le_bytes(footer[4..8].try_into().ok()?) as u64;
        let index_len = (stored + 1) * 4;
        if index_len > MAX_INDEX_BYTES || index_len + 24 > end {
            return None;
        }
        let index_start = end - 12 - index_len;
        let index = read_at(index_start, index_len as usize)?;
        let (blocks, decoded) = parse_index(&index)?;
        let stream_len = 12u64.checked_add(blocks)?.checked_add(index_len + 12)?;
        if stream_len > end {
            return None;
        }
        let start = end - stream_len;
        if read_at(start, 6)? != HEADER_MAGIC {
            return None;
        }
        total = total.checked_add(decoded)?;
        end = start;
    }
    Some(total)
}

/// An index's (bytes of its blocks, each padded to 4; decoded bytes).
fn parse_index(index: &[u8]) -> Option<(u64, u64)> {
    if index.first() != Some(&0) || index.len() < 8 {
        return None;
    }
    let body = &index[..index.len() - 4];
    let crc = u32::from_le_bytes(index[index.len() - 4..].try_into().ok()?);
    if crc32fast::hash(body) != crc {
        return None;
    }
    let mut pos = 1;
    let count = varint(body, &mut pos)?;
    // Each record takes at least two bytes.
    if count > body.len() as u64 / 2 {
        return None;
    }
    let (mut blocks, mut decoded) = (0u64, 0u64);
    for _ in 0..count {
        let unpadded = varint(body, &mut pos)?;
        let uncompressed = varint(body, &mut pos)?;
        blocks = blocks.checked_add(unpadded.checked_add(3)? & !3)?;
        decoded = decoded.checked_add(uncompressed)?;
    }
    // What is left is zero padding to a multiple of four.
    if body.len() - pos >= 4 || body[pos..].iter().any(|&b| b != 0) {
        return None;
    }
    Some((blocks, decoded))
}

/// A variable-length integer (7 bits per byte, at most 9 bytes).
fn varint(b: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..9 {
        let byte = *b.get(*pos)?;
        *pos += 1;
        v |= ((byte & 0x7F) as u64) << (7 * i);
        if byte & 0x80 == 0 {
            // A multi-byte integer may not end in a zero byte.
            return (i == 0 || byte != 0).then_some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::lzma::compress;

    fn len_of(bytes: &[u8]) -> Option<u64> {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.xz");
        std::fs::write(&p, bytes).unwrap();
        let from_file = uncompressed_len(&p).unwrap();
        assert_eq!(from_file, uncompressed_len_of(bytes));
        from_file
    }

    #[test]
    fn one_stream_and_several_with_padding() {
        let a = crate::noise(100_000, 1);
        let b = vec![7u8; 12_345];
        assert_eq!(len_of(&compress(&a, 0)), Some(100_000));
        assert_eq!(len_of(&compress(&[], 0)), Some(0));
        let mut two = compress(&a, 6);
        two.extend([0u8; 8]);
        two.extend(compress(&b, 0));
        two.extend([0u8; 4]);
        assert_eq!(len_of(&two), Some(112_345));
    }

    #[test]
    fn damaged_tails_are_not_trusted() {
        let x = compress(&crate::noise(5000, 2), 0);
        assert_eq!(len_of(&x[..x.len() - 1]), None, "cut");
        assert_eq!(len_of(&[]), None, "empty");
        let mut bad = x.clone();
        let n = bad.len();
        bad[n - 14] ^= 1; // the index's crc
        assert_eq!(len_of(&bad), None, "index crc");
        let mut junk = x.clone();
        junk.extend(b"abcd");
        assert_eq!(len_of(&junk), None, "trailing junk");
        // A stream missing its header (a tail cut from another file).
        assert_eq!(len_of(&x[4..]), None, "headless");
    }
}
