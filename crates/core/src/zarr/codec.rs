//! The compressors numcodecs writes into `.zarray`, decoding one chunk into a buffer of the
//! chunk's exact decoded size.
//!
//! The destination size always comes from the metadata (chunk shape times itemsize), never
//! from the compressed bytes, so a hostile chunk cannot make us allocate more than the
//! metadata limits allow; a chunk that decodes to any other size is an error.

use std::fmt;

use serde_json::Value;

use super::blosc;
use super::stream::{expect_len, read_exact_stream};
use crate::error::{ChunkProblem, Error, Result, SettingProblem};

/// A chunk compressor from `.zarray` (`compressor`).
#[derive(Debug, Clone, PartialEq)]
pub enum Compressor {
    /// `null`: chunks are stored raw.
    None,
    /// numcodecs `Blosc` (c-blosc 1.x frames).
    Blosc {
        cname: String,
        clevel: i64,
        shuffle: i64,
        blocksize: i64,
    },
    /// numcodecs `Zstd` (zstd frames).
    Zstd { level: i64 },
    /// numcodecs `Zlib` (zlib stream).
    Zlib { level: i64 },
    /// numcodecs `GZip` (gzip member).
    GZip { level: i64 },
    /// numcodecs `LZ4`: a 4-byte little-endian decoded size, then one LZ4 block.
    Lz4 { acceleration: i64 },
    /// numcodecs `BZ2` (one or more bzip2 streams).
    Bz2 { level: i64 },
    /// numcodecs `LZMA`: `format` 1 `.xz`, 2 `.lzma` ("alone"), 0 either, 3 raw with the
    /// `filters` chain (see [`super::lzma`]).
    Lzma(super::lzma::LzmaCodec),
    /// Anything else; reading such an array is an error naming `id`.
    Unsupported { id: String },
}

impl Compressor {
    /// Parses the `compressor` member of a `.zarray`.
    pub fn from_json(v: &Value) -> Result<Compressor, SettingProblem> {
        if v.is_null() {
            return Ok(Compressor::None);
        }
        let id =
            v.get("id")
                .and_then(Value::as_str)
                .ok_or_else(|| SettingProblem::CompressorNoId {
                    json: v.to_string(),
                })?;
        let int = |k: &str, default: i64| v.get(k).and_then(Value::as_i64).unwrap_or(default);
        Ok(match id {
            "blosc" => {
                let cname = v
                    .get("cname")
                    .and_then(Value::as_str)
                    .unwrap_or("lz4")
                    .to_string();
                Compressor::Blosc {
                    cname,
                    clevel: int("clevel", 5),
                    shuffle: int("shuffle", 1),
                    blocksize: int("blocksize", 0),
                }
            }
            "zstd" => Compressor::Zstd {
                level: int("level", 1),
            },
            "zlib" => Compressor::Zlib {
                level: int("level", 1),
            },
            "gzip" => Compressor::GZip {
                level: int("level", 1),
            },
            "lz4" => Compressor::Lz4 {
                acceleration: int("acceleration", 1),
            },
            "bz2" => Compressor::Bz2 {
                level: int("level", 1),
            },
            "lzma" => Compressor::Lzma(super::lzma::LzmaCodec::from_json(v)?),
            other => Compressor::Unsupported {
                id: other.chars().take(100).collect(),
            },
        })
    }

    /// The codec's name as used in errors (`blosc/lz4`, `zstd`, ...).
    pub fn name(&self) -> String {
        match self {
            Compressor::None => "null".into(),
            Compressor::Blosc { cname, .. } => format!("blosc/{cname}"),
            Compressor::Zstd { .. } => "zstd".into(),
            Compressor::Zlib { .. } => "zlib".into(),
            Compressor::GZip { .. } => "gzip".into(),
            Compressor::Lz4 { .. } => "lz4".into(),
            Compressor::Bz2 { .. } => "bz2".into(),
            Compressor::Lzma(_) => "lzma".into(),
            Compressor::Unsupported { id } => id.clone(),
        }
    }

    /// Decodes `src` into `dst`, which must come out exactly full. `what` names the chunk in
    /// errors (e.g. its path).
    pub fn decode_into(&self, src: &[u8], dst: &mut [u8], what: &str) -> Result<()> {
        self.decode(src, dst).map_err(|e| Error::Chunk {
            codec: self.name(),
            what: what.to_string(),
            inner: Box::new(e),
        })
    }

    fn decode(&self, src: &[u8], dst: &mut [u8]) -> Result<()> {
        match self {
            Compressor::None => {
                if src.len() != dst.len() {
                    return Err(Error::BadChunk(ChunkProblem::RawSize {
                        got: src.len(),
                        expected: dst.len(),
                    }));
                }
                dst.copy_from_slice(src);
                Ok(())
            }
            Compressor::Blosc { .. } => blosc::decompress_into(src, dst),
            Compressor::Zstd { .. } => {
                let n = zstd::bulk::decompress_to_buffer(src, dst)
                    .map_err(|e| Error::BadChunk(ChunkProblem::Zstd(e)))?;
                expect_len(n, dst.len())
            }
            Compressor::Zlib { .. } => read_exact_stream(flate2::read::ZlibDecoder::new(src), dst),
            Compressor::GZip { .. } => {
                read_exact_stream(flate2::read::MultiGzDecoder::new(src), dst)
            }
            Compressor::Lz4 { .. } => {
                if src.len() < 4 {
                    return Err(Error::BadChunk(ChunkProblem::Lz4NoPrefix {
                        len: src.len(),
                    }));
                }
                let size = u32::from_le_bytes(src[..4].try_into().unwrap()) as usize;
                expect_len(size, dst.len())?;
                // `size` fits in i32: dst sizes are capped by MAX_CHUNK_BYTES.
                let n = lz4::block::decompress_to_buffer(&src[4..], Some(size as i32), dst)
                    .map_err(|e| Error::BadChunk(ChunkProblem::Lz4(e)))?;
                expect_len(n, dst.len())
            }
            Compressor::Bz2 { .. } => read_exact_stream(bzip2::read::MultiBzDecoder::new(src), dst),
            Compressor::Lzma(c) => c.decode_into(src, dst),
            Compressor::Unsupported { id } => Err(Error::BadSetting(SettingProblem::Compressor {
                id: id.clone(),
            })),
        }
    }
}

impl fmt::Display for Compressor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Compressor::None => f.write_str("None"),
            Compressor::Blosc {
                cname,
                clevel,
                shuffle,
                blocksize,
            } => {
                let sh = match shuffle {
                    0 => "NOSHUFFLE",
                    1 => "SHUFFLE",
                    2 => "BITSHUFFLE",
                    -1 => "AUTOSHUFFLE",
                    _ => "?",
                };
                write!(
                    f,
                    "Blosc(cname='{cname}', clevel={clevel}, shuffle={sh}, blocksize={blocksize})"
                )
            }
            Compressor::Zstd { level } => write!(f, "Zstd(level={level})"),
            Compressor::Zlib { level } => write!(f, "Zlib(level={level})"),
            Compressor::GZip { level } => write!(f, "GZip(level={level})"),
            Compressor::Lz4 { acceleration } => write!(f, "LZ4(acceleration={acceleration})"),
            Compressor::Bz2 { level } => write!(f, "BZ2(level={level})"),
            Compressor::Lzma(c) => write!(f, "{c}"),
            Compressor::Unsupported { id } => write!(f, "{id} (unsupported)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn all() -> Vec<Compressor> {
        [
            json!(null),
            json!({"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}),
            json!({"id": "zstd"}),
            json!({"id": "zlib"}),
            json!({"id": "gzip"}),
            json!({"id": "lz4"}),
            json!({"id": "bz2", "level": 1}),
            json!({"id": "lzma", "format": 1}),
            json!({"id": "lzma", "format": 2}),
            json!({"id": "lzma", "format": 0}),
            json!({"id": "lzma", "format": 3, "filters": [{"id": 3, "dist": 4}, {"id": 33, "preset": 1}]}),
        ]
        .iter()
        .map(|v| Compressor::from_json(v).unwrap())
        .collect()
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut dst = vec![0u8; 64];
        for c in all() {
            for src in [
                &b""[..],
                &b"\x00"[..],
                &[0xffu8; 3][..],
                &[
                    0x02, 0x01, 0x21, 0x01, 64, 0, 0, 0, 64, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
                ][..],
                &[0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0][..],
                &[0x78, 0x9c, 1, 2, 3][..],
                &[0x1f, 0x8b, 8, 0, 0, 0][..],
                &[64, 0, 0, 0, 0xf0, 1, 2][..],
                &[0xff, 0xff, 0xff, 0x7f, 0xf0][..],
            ] {
                assert!(c.decode_into(src, &mut dst, "t").is_err(), "{c:?} {src:?}");
            }
        }
    }

    #[test]
    fn unsupported_names_itself() {
        let c = Compressor::from_json(&json!({"id": "brotli", "level": 9})).unwrap();
        let e = c
            .decode_into(b"x", &mut [0u8; 1], "a/0")
            .unwrap_err()
            .to_string();
        assert!(e.contains("brotli"), "{e}");
    }
}
