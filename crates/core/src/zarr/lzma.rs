//! numcodecs' `LZMA` compressor: Python's `lzma` module with `format` 1 (`.xz`), 2 (`.lzma`,
//! "alone"), 0 (either, by its magic) or 3 (raw: the `filters` chain names the codec, e.g.
//! `[{"id": 3, "dist": 4}, {"id": 33, "preset": 1}]`, delta then LZMA2).
//!
//! Decoders are given a dictionary no larger than the chunk they decode (a dictionary only
//! has to hold the data produced so far), so a header claiming a huge dictionary cannot make
//! us allocate it.

use std::fmt;
use std::io::Read;

use lzma_rust2::{Lzma2Reader, LzmaReader, XzReader};
use serde_json::Value;

use super::stream::read_exact_stream;
use crate::error::{ChunkProblem, Error, Result, SettingProblem};

const FILTER_LZMA1: u64 = 0x4000_0000_0000_0001;
const FILTER_LZMA2: u64 = 0x21;
const FILTER_DELTA: u64 = 0x03;
const PRESET_LEVEL_MASK: u64 = 0x1f;

/// One filter of a raw chain.
#[derive(Debug, Clone, PartialEq)]
pub enum RawFilter {
    Delta {
        dist: usize,
    },
    Lzma1 {
        lc: u32,
        lp: u32,
        pb: u32,
        dict: u32,
    },
    Lzma2 {
        dict: u32,
    },
}

/// The codec as `.zarray` configures it.
#[derive(Debug, Clone, PartialEq)]
pub struct LzmaCodec {
    pub format: i64,
    pub filters: Vec<RawFilter>,
}

/// liblzma's dictionary size for a preset level.
fn preset_dict(preset: u64) -> u32 {
    const DICT: [u32; 10] = [
        1 << 18,
        1 << 20,
        1 << 21,
        1 << 22,
        1 << 22,
        1 << 23,
        1 << 23,
        1 << 24,
        1 << 25,
        1 << 26,
    ];
    DICT[((preset & PRESET_LEVEL_MASK) as usize).min(9)]
}

fn filter_from_json(f: &Value) -> Result<RawFilter, SettingProblem> {
    let id = f
        .get("id")
        .and_then(Value::as_u64)
        .ok_or_else(|| SettingProblem::LzmaFilterNoId {
            json: f.to_string(),
        })?;
    let num = |k: &str| f.get(k).and_then(Value::as_u64);
    let dict = num("dict_size")
        .map(|d| d.min(u64::from(u32::MAX)) as u32)
        .unwrap_or_else(|| preset_dict(num("preset").unwrap_or(6)));
    match id {
        FILTER_DELTA => {
            let dist = num("dist").unwrap_or(1);
            if !(1..=256).contains(&dist) {
                return Err(SettingProblem::LzmaDelta { dist });
            }
            Ok(RawFilter::Delta {
                dist: dist as usize,
            })
        }
        FILTER_LZMA2 => Ok(RawFilter::Lzma2 { dict }),
        FILTER_LZMA1 => {
            let (lc, lp, pb) = (
                num("lc").unwrap_or(3),
                num("lp").unwrap_or(0),
                num("pb").unwrap_or(2),
            );
            if lc > 8 || lp > 4 || pb > 4 {
                return Err(SettingProblem::Lzma1 { lc, lp, pb });
            }
            Ok(RawFilter::Lzma1 {
                lc: lc as u32,
                lp: lp as u32,
                pb: pb as u32,
                dict,
            })
        }
        other => Err(SettingProblem::LzmaFilterId { id: other }),
    }
}

impl LzmaCodec {
    /// Parses numcodecs' config (`format`, `filters`; `check` and `preset` only matter when
    /// writing).
    pub fn from_json(v: &Value) -> Result<LzmaCodec, SettingProblem> {
        let format = v.get("format").and_then(Value::as_i64).unwrap_or(1);
        if !(0..=3).contains(&format) {
            return Err(SettingProblem::LzmaFormat { format });
        }
        let filters = match v.get("filters") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(fs)) if fs.len() <= 4 => {
                fs.iter().map(filter_from_json).collect::<Result<_, _>>()?
            }
            Some(other) => {
                return Err(SettingProblem::LzmaFilters {
                    json: other.to_string(),
                })
            }
        };
        if format == 3 {
            let last_ok = matches!(
                filters.last(),
                Some(RawFilter::Lzma1 { .. } | RawFilter::Lzma2 { .. })
            );
            let rest_ok = filters[..filters.len().saturating_sub(1)]
                .iter()
                .all(|f| matches!(f, RawFilter::Delta { .. }));
            if !last_ok || !rest_ok {
                return Err(SettingProblem::LzmaRawChain);
            }
        }
        Ok(LzmaCodec { format, filters })
    }

    /// Decodes `src` into `dst`, which must come out exactly full.
    pub fn decode_into(&self, src: &[u8], dst: &mut [u8]) -> Result<()> {
        let cap = dst.len().clamp(4096, u32::MAX as usize) as u32;
        let xz = src.starts_with(&[0xFD, b'7', b'z', b'X', b'Z', 0]);
        match self.format {
            1 => read_exact_stream(XzReader::new(src, true), dst),
            0 if xz => read_exact_stream(XzReader::new(src, true), dst),
            0 | 2 => {
                if src.len() < 13 {
                    return Err(Error::BadChunk(ChunkProblem::LzmaNoHeader {
                        len: src.len(),
                    }));
                }
                let props = src[0];
                let dict = u32::from_le_bytes(src[1..5].try_into().unwrap()).clamp(4096, cap);
                let size = u64::from_le_bytes(src[5..13].try_into().unwrap());
                let r = LzmaReader::new_with_props(&src[13..], size, props, dict, None)
                    .map_err(|e| Error::BadChunk(ChunkProblem::LzmaHeader(e)))?;
                read_exact_stream(r, dst)
            }
            _ => {
                let reader: Box<dyn Read + '_> = match self.filters.last() {
                    Some(RawFilter::Lzma2 { dict }) => {
                        Box::new(Lzma2Reader::new(src, (*dict).clamp(4096, cap), None))
                    }
                    Some(RawFilter::Lzma1 { lc, lp, pb, dict }) => Box::new(
                        LzmaReader::new(
                            src,
                            u64::MAX,
                            *lc,
                            *lp,
                            *pb,
                            (*dict).clamp(4096, cap),
                            None,
                        )
                        .map_err(|e| Error::BadChunk(ChunkProblem::Lzma1(e)))?,
                    ),
                    _ => return Err(Error::BadChunk(ChunkProblem::LzmaRawNoFilter)),
                };
                read_exact_stream(reader, dst)?;
                for f in self.filters[..self.filters.len() - 1].iter().rev() {
                    if let RawFilter::Delta { dist } = *f {
                        for i in dist..dst.len() {
                            dst[i] = dst[i].wrapping_add(dst[i - dist]);
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for LzmaCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LZMA(format={}", self.format)?;
        if !self.filters.is_empty() {
            write!(f, ", filters={:?}", self.filters)?;
        }
        f.write_str(")")
    }
}
