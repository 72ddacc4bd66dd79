//! The filters of a `.zarray` (`filters` list), decoded in reverse order after the
//! compressor, each exactly as numcodecs decodes it: `delta` (cumulative sum),
//! `fixedscaleoffset` (`enc / scale + offset`, then cast), `quantize` and `astype` (casts),
//! `packbits` (booleans, MSB first, a leading count of padding bits), `categorize` (label
//! indices to fixed-width strings), `shuffle` (byte planes), `bitround` (no-op on decode).
//! Anything else is refused by name. Casts follow numpy's `astype`: floats to integers
//! truncate toward zero, integers wrap to their width.

use serde_json::Value;

use crate::error::{ChunkProblem, Error, Result, SettingProblem};

/// A numeric element type from a numpy type string (`<i4`, `>f8`, `|u1`, `|b1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Num {
    kind: u8,
    size: usize,
    big: bool,
}

#[derive(Debug, Clone, Copy)]
enum Val {
    I(i128),
    F(f64),
}

impl Num {
    pub fn parse(s: &str) -> Result<Num, SettingProblem> {
        let b = s.as_bytes();
        let (big, rest) = match b.first() {
            Some(b'>') => (true, &s[1..]),
            Some(b'<' | b'|' | b'=') => (false, &s[1..]),
            _ => (false, s),
        };
        // Complex, datetime (`<M8[ns]`) and string dtypes end up here too: one message.
        let unsupported = || SettingProblem::FilterDType {
            dtype: s.to_string(),
        };
        let kind = *rest.as_bytes().first().ok_or_else(unsupported)?;
        let size: usize = rest[1..].parse().map_err(|_| unsupported())?;
        let ok = match kind {
            b'i' | b'u' => matches!(size, 1 | 2 | 4 | 8),
            b'f' => matches!(size, 4 | 8),
            b'b' => size == 1,
            _ => false,
        };
        if !ok {
            return Err(unsupported());
        }
        Ok(Num { kind, size, big })
    }

    fn get(&self, b: &[u8]) -> Val {
        let mut buf = [0u8; 8];
        buf[..self.size].copy_from_slice(&b[..self.size]);
        if self.big {
            buf[..self.size].reverse();
        }
        let u = u64::from_le_bytes(buf);
        match (self.kind, self.size) {
            (b'f', 4) => Val::F(f64::from(f32::from_bits(u as u32))),
            (b'f', _) => Val::F(f64::from_bits(u)),
            (b'i', n) => {
                let shift = 64 - 8 * n as u32;
                Val::I(i128::from(((u << shift) as i64) >> shift))
            }
            _ => Val::I(i128::from(u)),
        }
    }

    fn put(&self, v: Val, out: &mut [u8]) {
        let bits: u64 = match (self.kind, v) {
            (b'f', Val::F(f)) if self.size == 4 => u64::from((f as f32).to_bits()),
            (b'f', Val::I(i)) if self.size == 4 => u64::from((i as f32).to_bits()),
            (b'f', Val::F(f)) => f.to_bits(),
            (b'f', Val::I(i)) => (i as f64).to_bits(),
            (b'b', v) => u64::from(match v {
                Val::I(i) => i != 0,
                Val::F(f) => f != 0.0,
            }),
            (_, Val::I(i)) => i as u64,
            (_, Val::F(f)) => (f as i128) as u64, // truncates toward zero, saturates
        };
        let le = bits.to_le_bytes();
        out[..self.size].copy_from_slice(&le[..self.size]);
        if self.big {
            out[..self.size].reverse();
        }
    }

    fn add(&self, a: Val, b: Val) -> Val {
        match (self.kind, a, b) {
            (b'f', Val::F(x), Val::F(y)) if self.size == 4 => {
                Val::F(f64::from(x as f32 + y as f32))
            }
            (b'f', Val::F(x), Val::F(y)) => Val::F(x + y),
            (_, Val::I(x), Val::I(y)) => self.wrap(x.wrapping_add(y)),
            (_, x, y) => Val::F(as_f64(x) + as_f64(y)),
        }
    }

    /// `v` as this type holds it (floats rounded to their width, integers wrapped).
    fn cast(&self, v: Val) -> Val {
        let mut b = [0u8; 8];
        self.put(v, &mut b);
        self.get(&b)
    }

    fn wrap(&self, x: i128) -> Val {
        self.cast(Val::I(x))
    }
}

fn as_f64(v: Val) -> f64 {
    match v {
        Val::I(i) => i as f64,
        Val::F(f) => f,
    }
}

/// One filter of a chain.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    Delta {
        dtype: Num,
        astype: Num,
    },
    FixedScaleOffset {
        offset: f64,
        scale: f64,
        dtype: Num,
        astype: Num,
    },
    AsType {
        decode: Num,
        encode: Num,
    },
    PackBits,
    Categorize {
        labels: Vec<String>,
        chars: usize,
        big: bool,
        astype: Num,
    },
    Shuffle {
        elementsize: usize,
    },
    BitRound,
}

impl Filter {
    /// Parses one filter's config; unsupported ones are refused by name.
    pub fn from_json(v: &Value) -> Result<Filter, SettingProblem> {
        let id = v
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("<filter without id>");
        let s = |k: &str| v.get(k).and_then(Value::as_str);
        let missing = |key: &str| SettingProblem::FilterMissing {
            id: id.to_string(),
            key: key.to_string(),
        };
        let num = |k: &str| -> Result<Num, SettingProblem> {
            Num::parse(s(k).ok_or_else(|| missing(k))?)
        };
        let num_or = |k: &str, other: Num| s(k).map(Num::parse).unwrap_or(Ok(other));
        Ok(match id {
            "delta" => {
                let dtype = num("dtype")?;
                Filter::Delta {
                    dtype,
                    astype: num_or("astype", dtype)?,
                }
            }
            "fixedscaleoffset" => {
                let dtype = num("dtype")?;
                let f = |k: &str| {
                    v.get(k).and_then(Value::as_f64).ok_or_else(|| {
                        SettingProblem::FilterMissingNumber {
                            id: id.to_string(),
                            key: k.to_string(),
                        }
                    })
                };
                Filter::FixedScaleOffset {
                    offset: f("offset")?,
                    scale: f("scale")?,
                    dtype,
                    astype: num_or("astype", dtype)?,
                }
            }
            "quantize" => {
                let dtype = num("dtype")?;
                Filter::AsType {
                    decode: dtype,
                    encode: num_or("astype", dtype)?,
                }
            }
            "astype" => Filter::AsType {
                decode: num("decode_dtype")?,
                encode: num("encode_dtype")?,
            },
            "packbits" => Filter::PackBits,
            "categorize" => {
                let dt = s("dtype").ok_or_else(|| missing("dtype"))?;
                let (big, rest) = match dt.as_bytes().first() {
                    Some(b'>') => (true, &dt[1..]),
                    Some(b'<' | b'|' | b'=') => (false, &dt[1..]),
                    _ => (false, dt),
                };
                let chars = rest
                    .strip_prefix('U')
                    .and_then(|n| n.parse::<usize>().ok())
                    .filter(|&n| (1..=1 << 16).contains(&n))
                    .ok_or_else(|| SettingProblem::CategorizeDType {
                        dtype: dt.to_string(),
                    })?;
                let labels = v
                    .get("labels")
                    .and_then(Value::as_array)
                    .ok_or_else(|| missing("labels"))?
                    .iter()
                    .map(|l| {
                        l.as_str()
                            .map(str::to_string)
                            .ok_or(SettingProblem::CategorizeLabel)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Filter::Categorize {
                    labels,
                    chars,
                    big,
                    astype: num_or("astype", Num::parse("|u1")?)?,
                }
            }
            "shuffle" => {
                let e = v.get("elementsize").and_then(Value::as_u64).unwrap_or(4);
                if e > 1 << 20 {
                    return Err(SettingProblem::ShuffleElementsize { size: e });
                }
                Filter::Shuffle {
                    elementsize: e as usize,
                }
            }
            "bitround" => Filter::BitRound,
            other => {
                return Err(SettingProblem::Filter {
                    id: other.to_string(),
                })
            }
        })
    }

    /// The bytes this filter's output (the stage before it) takes for `decoded` bytes of input.
    pub fn encoded_len(&self, decoded: usize) -> Result<usize> {
        let per = |dtype: usize, enc: usize| -> Result<usize> {
            if !decoded.is_multiple_of(dtype) {
                return Err(Error::BadSetting(SettingProblem::PartialElements {
                    bytes: decoded,
                    size: dtype,
                }));
            }
            Ok(decoded / dtype * enc)
        };
        match self {
            Filter::Delta { dtype, astype } | Filter::FixedScaleOffset { dtype, astype, .. } => {
                per(dtype.size, astype.size)
            }
            Filter::AsType { decode, encode } => per(decode.size, encode.size),
            Filter::PackBits => Ok(1 + decoded.div_ceil(8)),
            Filter::Categorize { chars, astype, .. } => per(4 * chars, astype.size),
            Filter::Shuffle { .. } | Filter::BitRound => Ok(decoded),
        }
    }

    /// Decodes `enc` (exactly `encoded_len(dec.len())` bytes) into `dec`.
    pub fn decode(&self, enc: &[u8], dec: &mut [u8]) -> Result<()> {
        match self {
            Filter::Delta { dtype, astype } => {
                let mut acc: Option<Val> = None;
                for (e, d) in enc
                    .chunks_exact(astype.size)
                    .zip(dec.chunks_exact_mut(dtype.size))
                {
                    let x = dtype.cast(astype.get(e));
                    let v = match acc {
                        None => x,
                        Some(a) => dtype.add(a, x),
                    };
                    dtype.put(v, d);
                    acc = Some(v);
                }
            }
            Filter::FixedScaleOffset {
                offset,
                scale,
                dtype,
                astype,
            } => {
                for (e, d) in enc
                    .chunks_exact(astype.size)
                    .zip(dec.chunks_exact_mut(dtype.size))
                {
                    let x = as_f64(astype.get(e)) / scale + offset;
                    dtype.put(Val::F(x), d);
                }
            }
            Filter::AsType { decode, encode } => {
                for (e, d) in enc
                    .chunks_exact(encode.size)
                    .zip(dec.chunks_exact_mut(decode.size))
                {
                    decode.put(encode.get(e), d);
                }
            }
            Filter::PackBits => {
                let pad = usize::from(
                    *enc.first()
                        .ok_or(Error::BadChunk(ChunkProblem::PackBitsEmpty))?,
                );
                let bits = (enc.len() - 1) * 8;
                if pad > 7 || bits - pad != dec.len() {
                    return Err(Error::BadChunk(ChunkProblem::PackBitsSize {
                        bits,
                        pad,
                        values: dec.len(),
                    }));
                }
                for (i, d) in dec.iter_mut().enumerate() {
                    *d = (enc[1 + i / 8] >> (7 - i % 8)) & 1;
                }
            }
            Filter::Categorize {
                labels,
                chars,
                big,
                astype,
            } => {
                let width = 4 * chars;
                for (e, d) in enc
                    .chunks_exact(astype.size)
                    .zip(dec.chunks_exact_mut(width))
                {
                    d.fill(0);
                    let k = match astype.get(e) {
                        Val::I(k) => k,
                        Val::F(f) => f as i128,
                    };
                    if k < 1 || k as usize > labels.len() {
                        continue; // numcodecs leaves unknown codes as ''
                    }
                    for (c, slot) in labels[k as usize - 1].chars().zip(d.chunks_exact_mut(4)) {
                        let b = if *big {
                            (c as u32).to_be_bytes()
                        } else {
                            (c as u32).to_le_bytes()
                        };
                        slot.copy_from_slice(&b);
                    }
                }
            }
            Filter::Shuffle { elementsize } => {
                let s = *elementsize;
                if s <= 1 {
                    dec.copy_from_slice(enc);
                } else {
                    if !enc.len().is_multiple_of(s) {
                        return Err(Error::BadChunk(ChunkProblem::ShuffleSize {
                            bytes: enc.len(),
                            size: s,
                        }));
                    }
                    let n = enc.len() / s;
                    for b in 0..s {
                        for i in 0..n {
                            dec[i * s + b] = enc[b * n + i];
                        }
                    }
                }
            }
            Filter::BitRound => dec.copy_from_slice(enc),
        }
        Ok(())
    }
}

/// Decodes a chunk through `chain` (in reverse): `decompress(buf)` must fill the buffer it is
/// given with the compressor's output; `dst` gets the decoded chunk.
pub fn decode_chain(
    chain: &[Filter],
    dst: &mut [u8],
    decompress: impl FnOnce(&mut [u8]) -> Result<()>,
) -> Result<()> {
    let mut lens = vec![dst.len()];
    for f in chain {
        let last = *lens.last().expect("one at least");
        let n = f.encoded_len(last)?;
        if n > super::MAX_CHUNK_BYTES as usize {
            return Err(Error::BadSetting(SettingProblem::FilterChunkTooLarge {
                bytes: n,
            }));
        }
        lens.push(n);
    }
    let mut cur = vec![0u8; *lens.last().expect("one at least")];
    decompress(&mut cur)?;
    for (k, f) in chain.iter().enumerate().rev() {
        if k == 0 {
            return f.decode(&cur, dst);
        }
        let mut next = vec![0u8; lens[k]];
        f.decode(&cur, &mut next)?;
        cur = next;
    }
    Ok(())
}
