//! What the recording containers (MCAP, ROS 1 bag) share: the mapped file, its chunks, where
//! each message lives so it can be read again later, and chunk decompression with a bound on
//! the size a chunk may declare.

use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::error::{Error, IoContext, RecordProblem, Result, RosProblem};
use crate::wire::decode::Wire;

/// The largest chunk (uncompressed) and the largest record we accept.
pub const MAX_CHUNK: u64 = 1 << 30;

/// Receives what a container holds, in file order.
pub trait Sink {
    /// A topic's publisher (may repeat: MCAP repeats channels in every chunk).
    fn connection(&mut self, c: Connection);
    /// One message of connection `conn`, logged at `log_time` (ns since the epoch). Returns
    /// false when no connection `conn` was given before.
    fn message(&mut self, conn: u32, log_time: u64, at: MsgRef, data: &[u8]) -> bool;
    /// `done` of the file's `total` (bytes; rows for a database) read so far.
    fn progress(&mut self, _done: u64, _total: u64) {}
}

/// A topic's publisher as the container declares it (an MCAP channel, a ROS 1 connection).
#[derive(Debug, Clone)]
pub struct Connection {
    /// The container's id for it (MCAP channel id, ROS 1 `conn`).
    pub id: u32,
    pub topic: String,
    /// `pkg/Type` (normalised), empty when the container names none.
    pub msgtype: String,
    /// The `.msg` definition text stored with it.
    pub schema: String,
    /// How its messages are serialized, or why they cannot be decoded.
    pub wire: std::result::Result<Wire, crate::error::NoWire>,
}

/// How a chunk's records are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Zstd,
    /// The LZ4 frame format (MCAP's `lz4`, ROS 1's `lz4`).
    Lz4,
    Bz2,
}

impl Compression {
    pub fn parse(name: &str, at: u64) -> Result<Compression, RosProblem> {
        Ok(match name {
            "" | "none" => Compression::None,
            "zstd" => Compression::Zstd,
            "lz4" => Compression::Lz4,
            "bz2" => Compression::Bz2,
            other => {
                return Err(RosProblem::Compression {
                    at,
                    name: other.to_string(),
                })
            }
        })
    }
}

/// A chunk of records in a file.
#[derive(Debug, Clone)]
pub struct Chunk {
    /// The chunk record's offset (for messages).
    pub at: u64,
    /// Its compressed records in the file.
    pub data: Range<usize>,
    pub compression: Compression,
    /// The size its header declares.
    pub uncompressed: u64,
    /// CRC32 of the uncompressed records (0: none stored).
    pub crc: u32,
}

/// Where one message's bytes are: in a file's chunk (decompressed), or in the file itself.
#[derive(Debug, Clone, Copy)]
pub struct MsgRef {
    pub file: u16,
    /// Index into the file's chunks, or [`MsgRef::NO_CHUNK`].
    pub chunk: u32,
    pub start: u64,
    pub len: u32,
}

impl MsgRef {
    pub const NO_CHUNK: u32 = u32::MAX;
}

/// A mapped recording file and its chunks.
pub struct BagFile {
    pub path: PathBuf,
    pub map: Mmap,
    pub chunks: Vec<Chunk>,
}

impl BagFile {
    pub fn open(path: &Path) -> Result<BagFile> {
        let f = std::fs::File::open(path).at(path)?;
        // SAFETY: read-only map of a file we only read; a recording changed under us gives
        // wrong bytes (checked like any other), not undefined behaviour in safe code.
        let map = unsafe { Mmap::map(&f) }.at(path)?;
        Ok(BagFile {
            path: path.to_path_buf(),
            map,
            chunks: Vec::new(),
        })
    }

    pub fn err(&self, problem: RosProblem) -> Error {
        Error::Ros {
            path: self.path.clone(),
            problem,
        }
    }

    /// Chunk `i`'s records.
    pub fn decompress(&self, i: usize) -> Result<Vec<u8>> {
        let c = &self.chunks[i];
        decompress(&self.map[c.data.clone()], c).map_err(|p| self.err(p))
    }
}

/// Decompresses a chunk's records, checking the size (and CRC, when stored) its header gives.
pub fn decompress(data: &[u8], c: &Chunk) -> Result<Vec<u8>, RosProblem> {
    if c.uncompressed > MAX_CHUNK {
        return Err(RosProblem::TooLarge {
            what: "chunk (uncompressed)",
            at: c.at,
            got: c.uncompressed,
            limit: MAX_CHUNK,
        });
    }
    let want = c.uncompressed as usize;
    let at = c.at;
    let bad = |codec| {
        move |e: std::io::Error| RosProblem::Decompress {
            at,
            codec,
            error: e.to_string(),
        }
    };
    let out = match c.compression {
        Compression::None => data.to_vec(),
        // In one piece when it is no larger than what `read_bounded` reserves first (the
        // declared size, reserved by `zstd::bulk`, is then bounded by the bytes at hand).
        Compression::Zstd if want < first_reserve(data.len()) => zstd::bulk::decompress(data, want)
            .map_err(|e| {
                if e.to_string().contains("too small") {
                    RosProblem::DecompressesLonger { at, want }
                } else {
                    bad("zstd")(e)
                }
            })?,
        Compression::Zstd => read_bounded(
            zstd::stream::read::Decoder::with_buffer(data).map_err(bad("zstd"))?,
            want,
            data.len(),
        )
        .map_err(bad("zstd"))?,
        Compression::Lz4 => read_bounded(
            lz4::Decoder::new(data).map_err(bad("lz4"))?,
            want,
            data.len(),
        )
        .map_err(bad("lz4"))?,
        Compression::Bz2 => {
            read_bounded(bzip2::read::BzDecoder::new(data), want, data.len()).map_err(bad("bz2"))?
        }
    };
    if out.len() != want {
        return Err(RosProblem::DecompressedSize {
            at,
            got: out.len(),
            want,
        });
    }
    if c.crc != 0 {
        let got = crc32fast::hash(&out);
        if got != c.crc {
            return Err(RosProblem::ChunkCrc {
                at,
                got,
                want: c.crc,
            });
        }
    }
    Ok(out)
}

/// What [`read_bounded`] reserves at least before any byte is decoded; it then doubles.
const FIRST_RESERVE: usize = 1 << 20;
/// ... or this many times the compressed size, if more: more than most chunks of sensor data
/// expand by, so they decode into one buffer of exactly their size.
const RESERVE_RATIO: usize = 64;

/// What [`read_bounded`] reserves first for `compressed` bytes.
fn first_reserve(compressed: usize) -> usize {
    FIRST_RESERVE.max(compressed.saturating_mul(RESERVE_RATIO))
}

/// Reads at most `want + 1` bytes of `r`, which decodes `compressed` bytes: one more than
/// declared is already a mismatch. The buffer grows with what is decoded (doubling, never past
/// `want + 1`) from [`first_reserve`], not with what the header declares: a few bytes of a
/// hostile file declaring a 1 GiB chunk allocate about as much as they decode to (or 64 times
/// their size), not 1 GiB up front.
fn read_bounded(r: impl Read, want: usize, compressed: usize) -> std::io::Result<Vec<u8>> {
    let limit = want + 1;
    let mut r = r.take(limit as u64);
    let mut out: Vec<u8> = Vec::new();
    loop {
        let mut step = out
            .len()
            .max(first_reserve(compressed))
            .min(limit - out.len());
        // Within half a step of the end: the rest at once (no reallocation for the last byte).
        if out.len() + step + step / 2 >= limit {
            step = limit - out.len();
        }
        if step == 0 {
            return Ok(out);
        }
        out.reserve_exact(step);
        // Reads `step` bytes or up to the end; the buffer has room for exactly that.
        let n = (&mut r).take(step as u64).read_to_end(&mut out)?;
        if n < step {
            return Ok(out);
        }
    }
}

/// A little-endian cursor over a record, whose every read is checked; errors name the
/// record kind and its file offset.
pub struct Cursor<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
    /// The file offset of `buf[0]`.
    pub base: u64,
    pub what: &'static str,
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8], base: u64, what: &'static str) -> Self {
        Cursor {
            buf,
            pos: 0,
            base,
            what,
        }
    }

    pub fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn bytes(&mut self, n: u64) -> Result<&'a [u8], RosProblem> {
        if n > self.left() as u64 {
            return Err(RosProblem::BadRecord {
                what: self.what,
                at: self.base + self.pos as u64,
                problem: RecordProblem::FieldPastEnd {
                    len: n,
                    left: self.left(),
                },
            });
        }
        let b = &self.buf[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(b)
    }

    pub fn u8(&mut self) -> Result<u8, RosProblem> {
        Ok(self.bytes(1)?[0])
    }
    pub fn u16(&mut self) -> Result<u16, RosProblem> {
        Ok(u16::from_le_bytes(self.bytes(2)?.try_into().expect("2")))
    }
    pub fn u32(&mut self) -> Result<u32, RosProblem> {
        Ok(u32::from_le_bytes(self.bytes(4)?.try_into().expect("4")))
    }
    pub fn u64(&mut self) -> Result<u64, RosProblem> {
        Ok(u64::from_le_bytes(self.bytes(8)?.try_into().expect("8")))
    }
    /// A u32-length-prefixed UTF-8 string.
    pub fn string(&mut self) -> Result<String, RosProblem> {
        let at = self.base + self.pos as u64;
        let n = self.u32()?;
        let b = self.bytes(n as u64)?;
        String::from_utf8(b.to_vec()).map_err(|_| RosProblem::BadRecord {
            what: self.what,
            at,
            problem: RecordProblem::NotUtf8,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserves_what_is_decoded_not_what_is_declared() {
        // A chunk declaring 1 GiB that decodes to 3 bytes reserves no more than the first step.
        let out = read_bounded(&b"abc"[..], MAX_CHUNK as usize, 3).unwrap();
        assert_eq!(out, b"abc");
        assert!(out.capacity() <= FIRST_RESERVE, "{}", out.capacity());
        // Exactly the declared size, across several steps: never more than one byte over.
        let data = vec![7u8; 3 * FIRST_RESERVE + 5];
        let out = read_bounded(&data[..], data.len(), 10).unwrap();
        assert_eq!(out, data);
        assert_eq!(out.capacity(), data.len() + 1);
        // More than declared: one byte more is read, and that is the mismatch.
        assert_eq!(read_bounded(&data[..], 10, 10).unwrap().len(), 11);
        // Compressed bytes that expand less than RESERVE_RATIO: one buffer at once.
        let out = read_bounded(&data[..], data.len(), data.len() / 32).unwrap();
        assert_eq!(out.capacity(), data.len() + 1);
        let c = Chunk {
            at: 42,
            data: 0..0,
            compression: Compression::Zstd,
            uncompressed: MAX_CHUNK,
            crc: 0,
        };
        let z = zstd::bulk::compress(b"abc", 3).unwrap();
        let e = decompress(&z, &c).unwrap_err().to_string();
        assert!(e.contains("decompressed to 3 bytes"), "{e}");
        // Small enough to decode in one piece: the same checks.
        let c = Chunk {
            uncompressed: 2,
            ..c
        };
        let e = decompress(&z, &c).unwrap_err().to_string();
        assert!(e.contains("more than the 2 bytes"), "{e}");
        let c = Chunk {
            uncompressed: 4,
            ..c
        };
        let e = decompress(&z, &c).unwrap_err().to_string();
        assert!(e.contains("decompressed to 3 bytes"), "{e}");
        let c = Chunk {
            uncompressed: 3,
            ..c
        };
        assert_eq!(decompress(&z, &c).unwrap(), b"abc");
    }
}
