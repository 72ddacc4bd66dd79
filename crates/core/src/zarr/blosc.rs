//! Blosc 1 chunks (what numcodecs' `Blosc` writes), decoded by c-blosc itself.
//!
//! c-blosc is the reference implementation numcodecs bundles; we link the same 1.21 line
//! through `blosc-src`, so every codec/shuffle combination decodes bit-exactly (pure-Rust
//! decoders measured here were several times slower on shuffled chunks, and one returned wrong
//! bytes for bit-shuffled data).
//!
//! c-blosc's `blosc_decompress_ctx` takes no source length: it trusts the header. So before
//! calling it we check the 16-byte header ourselves against the buffer we actually hold and
//! against the decoded size the metadata promises:
//!
//! ```text
//! byte 0    version (2 for c-blosc 1.x; >= 3 is Blosc2)
//! byte 1    codec format version
//! byte 2    flags: 0x01 byte shuffle, 0x02 memcpyed, 0x04 bit shuffle, 0x10 no split,
//!           bits 5-7 codec (0 blosclz, 1 lz4/lz4hc, 2 snappy, 3 zlib, 4 zstd)
//! byte 3    typesize
//! 4..8      nbytes    (u32 LE, decoded size)
//! 8..12     blocksize (u32 LE)
//! 12..16    cbytes    (u32 LE, whole chunk including this header)
//! 16..      one u32 LE start offset per block (unless memcpyed), then the blocks
//! ```

use crate::error::{ChunkProblem, Error, Result};

/// Bytes in a Blosc 1 header.
pub const HEADER_LEN: usize = 16;
/// The only header version c-blosc 1.x reads.
const VERSION_FORMAT: u8 = 2;
const FLAG_MEMCPYED: u8 = 0x02;
const FLAG_DELTA: u8 = 0x08;
/// c-blosc's BLOSC_MAX_BLOCKSIZE.
const MAX_BLOCKSIZE: u32 = 536_866_816;

/// The fields of a Blosc 1 chunk header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub version: u8,
    pub versionlz: u8,
    pub flags: u8,
    pub typesize: u8,
    pub nbytes: u32,
    pub blocksize: u32,
    pub cbytes: u32,
}

impl Header {
    /// Name of the internal codec in the flags.
    pub fn codec(&self) -> &'static str {
        match self.flags >> 5 {
            0 => "blosclz",
            1 => "lz4",
            2 => "snappy",
            3 => "zlib",
            4 => "zstd",
            _ => "unknown",
        }
    }
}

/// Parses and validates a chunk's header against the buffer length and the decoded size we
/// expect, so that c-blosc can neither read past `src` nor write past `expected` bytes.
pub fn check_header(src: &[u8], expected: usize) -> Result<Header> {
    if src.len() < HEADER_LEN {
        return Err(Error::BadChunk(ChunkProblem::BloscShort {
            len: src.len(),
            header: HEADER_LEN,
        }));
    }
    let u32_at = |i: usize| u32::from_le_bytes(src[i..i + 4].try_into().unwrap());
    let h = Header {
        version: src[0],
        versionlz: src[1],
        flags: src[2],
        typesize: src[3],
        nbytes: u32_at(4),
        blocksize: u32_at(8),
        cbytes: u32_at(12),
    };
    if h.version >= 3 {
        return Err(Error::BadChunk(ChunkProblem::Blosc2 { version: h.version }));
    }
    if h.version != VERSION_FORMAT {
        return Err(Error::BadChunk(ChunkProblem::BloscVersion {
            version: h.version,
            reads: VERSION_FORMAT,
        }));
    }
    if h.cbytes as usize != src.len() {
        return Err(Error::BadChunk(ChunkProblem::BloscCbytes {
            cbytes: h.cbytes,
            len: src.len(),
        }));
    }
    if h.nbytes as usize != expected {
        return Err(Error::BadChunk(ChunkProblem::BloscNbytes {
            nbytes: h.nbytes,
            expected,
        }));
    }
    if h.flags & FLAG_DELTA != 0 {
        return Err(Error::BadChunk(ChunkProblem::BloscDelta));
    }
    if h.nbytes == 0 {
        return Ok(h);
    }
    if h.typesize == 0 {
        return Err(Error::BadChunk(ChunkProblem::BloscTypesize));
    }
    if h.blocksize == 0 || h.blocksize > h.nbytes.max(1) || h.blocksize > MAX_BLOCKSIZE {
        return Err(Error::BadChunk(ChunkProblem::BloscBlocksize {
            blocksize: h.blocksize,
            nbytes: h.nbytes,
        }));
    }
    if h.flags & FLAG_MEMCPYED != 0 {
        if h.cbytes as u64 != h.nbytes as u64 + HEADER_LEN as u64 {
            return Err(Error::BadChunk(ChunkProblem::BloscMemcpyed {
                nbytes: h.nbytes,
                cbytes: h.cbytes,
            }));
        }
        return Ok(h);
    }
    let nblocks = (h.nbytes as u64).div_ceil(h.blocksize as u64);
    let starts_end = HEADER_LEN as u64 + 4 * nblocks;
    if starts_end > h.cbytes as u64 {
        return Err(Error::BadChunk(ChunkProblem::BloscBlockTable {
            nblocks,
            need: starts_end,
            cbytes: h.cbytes,
        }));
    }
    for b in 0..nblocks as usize {
        let start = u32_at(HEADER_LEN + 4 * b) as u64;
        if start < starts_end || start >= h.cbytes as u64 {
            return Err(Error::BadChunk(ChunkProblem::BloscBlockStart {
                block: b,
                start,
                lo: starts_end,
                hi: h.cbytes,
            }));
        }
    }
    Ok(h)
}

/// Decodes one Blosc chunk into `dst`, which it must fill exactly.
pub fn decompress_into(src: &[u8], dst: &mut [u8]) -> Result<()> {
    let h = check_header(src, dst.len())?;
    if h.nbytes == 0 {
        return Ok(());
    }
    let mut nbytes = 0usize;
    // SAFETY: `src` is a live slice of `src.len()` bytes; blosc_cbuffer_validate reads only the
    // 16-byte header (src.len() >= 16 was checked) and writes one usize we own.
    let ok =
        unsafe { blosc_src::blosc_cbuffer_validate(src.as_ptr().cast(), src.len(), &mut nbytes) };
    if ok != 0 || nbytes != dst.len() {
        return Err(Error::BadChunk(ChunkProblem::BloscRejected));
    }
    // SAFETY: check_header established cbytes == src.len() (c-blosc bounds every read by
    // cbytes), nbytes == dst.len() and a valid block table; c-blosc writes at most `destsize`
    // = dst.len() bytes into `dst`, which we borrow mutably and exclusively. The context API
    // (`_ctx`) keeps no global state, so concurrent calls from several threads are fine.
    let n = unsafe {
        blosc_src::blosc_decompress_ctx(src.as_ptr().cast(), dst.as_mut_ptr().cast(), dst.len(), 1)
    };
    if n < 0 || n as usize != dst.len() {
        return Err(Error::BadChunk(ChunkProblem::BloscFailed {
            codec: h.codec(),
            ret: n,
        }));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(version: u8, flags: u8, nbytes: u32, blocksize: u32, cbytes: u32) -> Vec<u8> {
        let mut h = vec![version, 1, flags, 4];
        h.extend_from_slice(&nbytes.to_le_bytes());
        h.extend_from_slice(&blocksize.to_le_bytes());
        h.extend_from_slice(&cbytes.to_le_bytes());
        h
    }

    #[test]
    fn memcpyed_chunk_round_trips() {
        let mut c = header(2, FLAG_MEMCPYED | 0x10, 8, 8, 24);
        c.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        let mut out = [0u8; 8];
        decompress_into(&c, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn hostile_headers_are_rejected_before_c_blosc() {
        let cases: Vec<(Vec<u8>, usize, &str)> = vec![
            (vec![2, 1, 0], 8, "shorter"),
            (header(3, 0, 8, 8, 16), 8, "Blosc2"),
            (header(1, 0, 8, 8, 16), 8, "version 1"),
            // cbytes larger than the buffer: c-blosc would read past it.
            (header(2, 0, 8, 8, 4096), 8, "compressed bytes"),
            // nbytes lying about the decoded size (would over-allocate / over-write).
            (header(2, 0, 0x7fff_ffff, 8, 16), 8, "decoded bytes"),
            (header(2, 0, 8, 0, 16), 8, "blocksize"),
            (header(2, 0, 8, 9, 16), 8, "blocksize"),
            (header(2, 0x08, 8, 8, 16), 8, "delta"),
            (header(2, FLAG_MEMCPYED, 8, 8, 16), 8, "stored-uncompressed"),
            // No room for the block-start table.
            (header(2, 0, 8, 1, 16), 8, "blocks need"),
        ];
        for (buf, expected, msg) in cases {
            let e = check_header(&buf, expected).unwrap_err();
            assert!(e.to_string().contains(msg), "{e} should mention {msg}");
            let mut out = vec![0u8; expected];
            assert!(decompress_into(&buf, &mut out).is_err());
        }
        // A block start pointing outside the chunk.
        let mut c = header(2, 0x10, 8, 8, 24);
        c.extend_from_slice(&1000u32.to_le_bytes());
        c.extend_from_slice(&[0; 4]);
        assert!(check_header(&c, 8)
            .unwrap_err()
            .to_string()
            .contains("block 0 starts"));
        // A plausible header over garbage blocks: c-blosc must fail cleanly.
        let mut c = header(2, 0x10 | 0x20, 64, 64, 28);
        c.extend_from_slice(&20u32.to_le_bytes());
        c.extend_from_slice(&[0xff; 8]);
        let mut out = [0u8; 64];
        assert!(decompress_into(&c, &mut out).is_err());
    }
}
