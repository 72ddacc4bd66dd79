//! `.zarray`, `.zgroup` and `.zattrs`: Zarr v2 metadata, treated as untrusted input.
//!
//! Every number that later sizes an allocation is checked here: the number of dimensions, the
//! item size (in [`super::dtype`]), the decoded chunk size, and the product of the shape.

use std::path::Path;

use base64::Engine;
use serde_json::{Map, Value};

use super::codec::Compressor;
use super::dtype::{DType, ScalarKind};
use super::values::f64_to_f16;
use super::{read_limited, zerr, MAX_CHUNK_BYTES, MAX_META_BYTES, MAX_NDIM};
use crate::error::{Error, FillProblem, Result, SettingProblem, ZarrProblem};

/// Memory layout of a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    C,
    /// Fortran order; we only read it where it equals C order (at most one dimension).
    F,
}

/// A parsed `.zarray`.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayMeta {
    /// Shape as written (`[]` for a 0-d array).
    pub shape: Vec<u64>,
    /// Chunk shape (same length as `shape`).
    pub chunks: Vec<u64>,
    /// The dtype as stored (byte order included).
    pub dtype: DType,
    pub compressor: Compressor,
    /// Ids of the filters (`filters: null` and `[]` are both empty).
    pub filters: Vec<String>,
    /// The filters we decode, in `.zarray` order (decoded in reverse).
    pub chain: Vec<super::filters::Filter>,
    /// Why a filter cannot be decoded (the first such), when one cannot.
    pub filter_error: Option<SettingProblem>,
    /// One element of fill, in stored byte order; `None` for `fill_value: null`.
    pub fill_value: Option<Vec<u8>>,
    pub order: Order,
    /// `.` (default) or `/`.
    pub dimension_separator: char,
}

impl ArrayMeta {
    /// Parses `.zarray` bytes; `path` is only used in errors.
    pub fn parse(bytes: &[u8], path: &Path) -> Result<ArrayMeta> {
        let v: Value = serde_json::from_slice(bytes).map_err(|error| Error::Json {
            path: path.to_path_buf(),
            error,
        })?;
        let obj = v
            .as_object()
            .ok_or_else(|| zerr(path, ZarrProblem::ZarrayNotObject))?;
        match obj.get("zarr_format").and_then(Value::as_u64) {
            Some(2) => {}
            other => return Err(zerr(path, ZarrProblem::ZarrFormat { found: other })),
        }
        let shape = dims(obj, "shape", path)?;
        let chunks = dims(obj, "chunks", path)?;
        if shape.len() != chunks.len() {
            return Err(zerr(
                path,
                ZarrProblem::DimsMismatch {
                    shape: shape.len(),
                    chunks: chunks.len(),
                },
            ));
        }
        if chunks.contains(&0) {
            return Err(zerr(path, ZarrProblem::ZeroChunk));
        }
        let setting = |problem| Error::ZarrSetting {
            path: path.to_path_buf(),
            problem,
        };
        let dtype = DType::from_json(obj.get("dtype").unwrap_or(&Value::Null))
            .map_err(|p| setting(SettingProblem::DType(p)))?;
        let item = dtype.itemsize() as u64;
        chunks
            .iter()
            .try_fold(item, |acc, &d| acc.checked_mul(d))
            .filter(|&b| b <= MAX_CHUNK_BYTES)
            .ok_or_else(|| {
                zerr(
                    path,
                    ZarrProblem::ChunkTooLarge {
                        chunks: chunks.clone(),
                        item,
                        limit: MAX_CHUNK_BYTES,
                    },
                )
            })?;
        // The total size must at least be representable, so row arithmetic cannot overflow.
        shape
            .iter()
            .try_fold(item.max(1), |acc, &d| acc.checked_mul(d.max(1)))
            .ok_or_else(|| {
                zerr(
                    path,
                    ZarrProblem::ShapeOverflow {
                        shape: shape.clone(),
                    },
                )
            })?;
        let compressor = Compressor::from_json(obj.get("compressor").unwrap_or(&Value::Null))
            .map_err(setting)?;
        let filters = match obj.get("filters") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(fs)) => fs
                .iter()
                .take(64)
                .map(|f| {
                    f.get("id")
                        .and_then(Value::as_str)
                        .unwrap_or("<filter without id>")
                        .to_string()
                })
                .collect(),
            Some(other) => {
                return Err(zerr(
                    path,
                    ZarrProblem::FiltersNotList {
                        json: other.to_string(),
                    },
                ))
            }
        };
        let mut chain = Vec::new();
        let mut filter_error = None;
        if let Some(Value::Array(fs)) = obj.get("filters") {
            if fs.len() > 16 {
                filter_error = Some(SettingProblem::TooManyFilters { count: fs.len() });
            }
            for f in fs.iter().take(16) {
                match super::filters::Filter::from_json(f) {
                    Ok(x) => chain.push(x),
                    Err(e) => {
                        filter_error.get_or_insert(e);
                    }
                }
            }
        }
        let order = match obj.get("order").and_then(Value::as_str) {
            Some("C") | None => Order::C,
            Some("F") => Order::F,
            Some(o) => {
                return Err(zerr(
                    path,
                    ZarrProblem::Order {
                        order: o.to_string(),
                    },
                ))
            }
        };
        let dimension_separator = match obj.get("dimension_separator") {
            None | Some(Value::Null) => '.',
            Some(Value::String(s)) if s == "." => '.',
            Some(Value::String(s)) if s == "/" => '/',
            Some(other) => {
                return Err(zerr(
                    path,
                    ZarrProblem::DimensionSeparator {
                        json: other.to_string(),
                    },
                ))
            }
        };
        let fill_value = fill_value(obj.get("fill_value").unwrap_or(&Value::Null), &dtype)
            .map_err(|p| setting(SettingProblem::FillValue(p)))?;
        Ok(ArrayMeta {
            shape,
            chunks,
            dtype,
            compressor,
            filters,
            chain,
            filter_error,
            fill_value,
            order,
            dimension_separator,
        })
    }

    /// Reads and parses `<dir>/.zarray`.
    pub fn read(dir: &Path) -> Result<ArrayMeta> {
        let p = dir.join(".zarray");
        let bytes = read_limited(&p, MAX_META_BYTES, "metadata file")?
            .ok_or_else(|| zerr(dir, ZarrProblem::NoZarray))?;
        ArrayMeta::parse(&bytes, &p)
    }

    /// Decoded bytes of one chunk (all chunks are stored full size, the last one padded).
    pub fn chunk_bytes(&self) -> usize {
        self.chunks.iter().product::<u64>() as usize * self.dtype.itemsize()
    }

    /// Number of chunks along each dimension.
    pub fn chunk_grid(&self) -> Vec<u64> {
        self.shape
            .iter()
            .zip(&self.chunks)
            .map(|(s, c)| s.div_ceil(*c))
            .collect()
    }

    /// Logical size in bytes (`prod(shape) * itemsize`).
    pub fn nbytes(&self) -> u64 {
        self.shape.iter().product::<u64>() * self.dtype.itemsize() as u64
    }

    /// The store key of the chunk at grid position `idx` (`"0"` for a 0-d array).
    pub fn chunk_key(&self, idx: &[u64]) -> String {
        if idx.is_empty() {
            return "0".into();
        }
        let sep = self.dimension_separator.to_string();
        idx.iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(&sep)
    }

    /// Errors when we cannot read this array's chunks (unsupported compressor or filters,
    /// Fortran order over more than one dimension).
    pub fn check_readable(&self, path: &Path) -> Result<()> {
        if let Compressor::Unsupported { id } = &self.compressor {
            return Err(Error::ZarrSetting {
                path: path.to_path_buf(),
                problem: SettingProblem::CompressorNotReadable { id: id.clone() },
            });
        }
        if let Some(problem) = &self.filter_error {
            return Err(Error::ZarrSetting {
                path: path.to_path_buf(),
                problem: problem.clone(),
            });
        }
        Ok(())
    }
}

fn dims(obj: &Map<String, Value>, key: &'static str, path: &Path) -> Result<Vec<u64>> {
    let a = obj
        .get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| zerr(path, ZarrProblem::DimsNotList { key }))?;
    if a.len() > MAX_NDIM {
        return Err(zerr(
            path,
            ZarrProblem::TooManyDims {
                key,
                ndim: a.len(),
                limit: MAX_NDIM,
            },
        ));
    }
    a.iter()
        .map(|d| {
            d.as_u64().ok_or_else(|| {
                zerr(
                    path,
                    ZarrProblem::BadDim {
                        key,
                        json: d.to_string(),
                    },
                )
            })
        })
        .collect()
}

/// One element of fill in stored byte order.
fn fill_value(v: &Value, dtype: &DType) -> Result<Option<Vec<u8>>, FillProblem> {
    let not_a = |expected| FillProblem::NotA {
        json: v.to_string(),
        expected,
    };
    let item = dtype.itemsize();
    let s = match (v, dtype) {
        (Value::Null, _) => return Ok(None),
        // Older zarr-python 2 releases wrote their default fill value 0 for every dtype,
        // strings and structured ones included: zero bytes.
        (Value::Number(n), DType::Struct { .. }) if n.as_f64() == Some(0.0) => {
            return Ok(Some(vec![0; item]))
        }
        (Value::Number(n), DType::Scalar(sc))
            if n.as_f64() == Some(0.0)
                && matches!(
                    sc.kind,
                    ScalarKind::Unicode | ScalarKind::Bytes | ScalarKind::Void
                ) =>
        {
            return Ok(Some(vec![0; item]))
        }
        (Value::String(b64), DType::Struct { .. }) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(FillProblem::Base64)?;
            if bytes.len() != item {
                return Err(FillProblem::StructSize {
                    got: bytes.len(),
                    item,
                });
            }
            return Ok(Some(bytes));
        }
        (_, DType::Struct { .. }) => return Err(not_a("base64 text")),
        (_, DType::Scalar(s)) => *s,
    };
    let le = |mut b: Vec<u8>| {
        b.truncate(s.size);
        if s.big_endian {
            b.reverse();
        }
        b
    };
    let out = match s.kind {
        ScalarKind::Bool => vec![u8::from(match v {
            Value::Bool(b) => *b,
            Value::Number(n) => n.as_f64() != Some(0.0),
            _ => return Err(not_a("a boolean")),
        })],
        ScalarKind::Int | ScalarKind::UInt => {
            let n = match v {
                Value::Number(n) => n,
                _ => return Err(not_a("an integer")),
            };
            let raw: i128 = if let Some(i) = n.as_i64() {
                i as i128
            } else if let Some(u) = n.as_u64() {
                u as i128
            } else {
                // zarr writes integers, but numpy accepts e.g. 0.0.
                n.as_f64().unwrap_or(0.0) as i128
            };
            le(raw.to_le_bytes().to_vec())
        }
        ScalarKind::Datetime(_) | ScalarKind::Timedelta(_) => {
            // zarr-python writes the count of units (`int(v.view("i8"))`, NaT as i64::MIN);
            // numpy would also read "NaT". Floats and date strings it never writes: refused.
            let n = match v {
                Value::Number(n) => n
                    .as_i64()
                    .ok_or_else(|| not_a("a 64-bit integer count of units"))?,
                Value::String(t) if t == "NaT" => i64::MIN,
                _ => return Err(not_a("a count of units or \"NaT\"")),
            };
            le(n.to_le_bytes().to_vec())
        }
        ScalarKind::Float => le(float_le_bytes(float_fill(v)?, s.size)),
        ScalarKind::Complex => {
            let parts = v
                .as_array()
                .filter(|a| a.len() == 2)
                .ok_or_else(|| not_a("[real, imaginary]"))?;
            let half = s.size / 2;
            // Each part is first a fill value of the half-size float (rounded to f32 for c8).
            let part = |p: &Value| -> Result<f64, FillProblem> {
                let f = float_fill(p)?;
                Ok(if half == 4 { f as f32 as f64 } else { f })
            };
            let (re, im) = (part(&parts[0])?, part(&parts[1])?);
            // zarr-python reads the pair back as `re + 1j * im` in numpy arithmetic and fills
            // missing chunks with that: the real part is `re + (0 * im - 0)` and the imaginary
            // part `0 + im`. So an infinite or NaN imaginary part makes the real part NaN, and
            // an imaginary -0.0 becomes +0.0. Computed at run time like numpy does it, so a NaN
            // has the sign this CPU gives `0 * inf`, as zarr-python's has.
            let mut b = float_le_bytes(re + 0.0 * im, half);
            b.extend(float_le_bytes(0.0 + im, half));
            if s.big_endian {
                b[..half].reverse();
                b[half..].reverse();
            }
            b
        }
        ScalarKind::Unicode => {
            let text = v.as_str().ok_or_else(|| not_a("a string"))?;
            let mut b = Vec::with_capacity(s.size);
            for c in text.chars().take(s.size / 4) {
                let u = c as u32;
                b.extend_from_slice(&if s.big_endian {
                    u.to_be_bytes()
                } else {
                    u.to_le_bytes()
                });
            }
            b.resize(s.size, 0);
            b
        }
        ScalarKind::Bytes | ScalarKind::Void => {
            let text = v.as_str().ok_or_else(|| not_a("base64 text"))?;
            let mut b = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(FillProblem::Base64)?;
            if b.len() > s.size {
                return Err(FillProblem::TooLong {
                    got: b.len(),
                    size: s.size,
                });
            }
            b.resize(s.size, 0);
            b
        }
    };
    Ok(Some(out))
}

/// A float `fill_value`: a number, or the strings zarr-python writes for NaN and infinities.
fn float_fill(v: &Value) -> Result<f64, FillProblem> {
    Ok(match v {
        Value::Number(n) => n.as_f64().unwrap_or(0.0),
        Value::String(s) if s == "NaN" => f64::NAN,
        Value::String(s) if s == "Infinity" => f64::INFINITY,
        Value::String(s) if s == "-Infinity" => f64::NEG_INFINITY,
        _ => {
            return Err(FillProblem::NotA {
                json: v.to_string(),
                expected: "a number",
            })
        }
    })
}

/// `f` as a little-endian float of `size` bytes (2, 4 or 8).
fn float_le_bytes(f: f64, size: usize) -> Vec<u8> {
    match size {
        2 => f64_to_f16(f).to_le_bytes().to_vec(),
        4 => (f as f32).to_le_bytes().to_vec(),
        _ => f.to_le_bytes().to_vec(),
    }
}

/// A parsed `.zgroup` plus its `.zattrs`.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupMeta {
    /// The `.zattrs` object (empty when absent).
    pub attrs: Map<String, Value>,
}

impl GroupMeta {
    /// Reads `<dir>/.zgroup` (must say `zarr_format: 2`) and `<dir>/.zattrs` if present.
    pub fn read(dir: &Path) -> Result<GroupMeta> {
        let p = dir.join(".zgroup");
        let bytes = read_limited(&p, MAX_META_BYTES, "metadata file")?
            .ok_or_else(|| zerr(dir, ZarrProblem::NoZgroup))?;
        let v: Value = serde_json::from_slice(&bytes).map_err(|error| Error::Json {
            path: p.clone(),
            error,
        })?;
        if v.get("zarr_format").and_then(Value::as_u64) != Some(2) {
            return Err(zerr(&p, ZarrProblem::GroupFormat));
        }
        Ok(GroupMeta {
            attrs: read_attrs(dir)?,
        })
    }
}

/// Reads `<dir>/.zattrs` (an empty map when absent).
pub fn read_attrs(dir: &Path) -> Result<Map<String, Value>> {
    let p = dir.join(".zattrs");
    let Some(bytes) = read_limited(&p, MAX_META_BYTES, "metadata file")? else {
        return Ok(Map::new());
    };
    let v: Value = serde_json::from_slice(&bytes).map_err(|error| Error::Json {
        path: p.clone(),
        error,
    })?;
    match v {
        Value::Object(m) => Ok(m),
        _ => Err(zerr(&p, ZarrProblem::ZattrsNotObject)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<ArrayMeta> {
        ArrayMeta::parse(s.as_bytes(), Path::new("t/.zarray"))
    }

    const OK: &str = r#"{"zarr_format":2,"shape":[10,4],"chunks":[3,4],"dtype":">i4",
        "compressor":null,"fill_value":-2,"filters":null,"order":"C"}"#;

    /// [`OK`] with another dtype and fill value: the parsed fill value's bytes.
    fn with_dtype_fill(dtype: &str, fill: &str) -> Result<Option<Vec<u8>>> {
        parse(
            &OK.replace(r#""dtype":">i4""#, &format!(r#""dtype":"{dtype}""#))
                .replace(r#""fill_value":-2"#, &format!(r#""fill_value":{fill}"#)),
        )
        .map(|m| m.fill_value)
    }

    #[test]
    fn parses_and_keys() {
        let m = parse(OK).unwrap();
        assert_eq!(m.chunk_grid(), [4, 1]);
        assert_eq!(m.chunk_key(&[3, 0]), "3.0");
        assert_eq!(m.fill_value.as_deref(), Some(&[0xff, 0xff, 0xff, 0xfe][..]));
        assert_eq!(m.chunk_bytes(), 48);
    }

    #[test]
    fn rejects_bad_metadata() {
        for bad in [
            "",
            "[]",
            "{",
            r#"{"zarr_format":3}"#,
            r#"{"zarr_format":2,"shape":[1],"chunks":[0],"dtype":"<i4","compressor":null}"#,
            r#"{"zarr_format":2,"shape":[1],"chunks":[1,1],"dtype":"<i4","compressor":null}"#,
            r#"{"zarr_format":2,"shape":[1],"chunks":[4294967296],"dtype":"<f8","compressor":null}"#,
            r#"{"zarr_format":2,"shape":[18446744073709551615, 8],"chunks":[1,1],"dtype":"<f8","compressor":null}"#,
            r#"{"zarr_format":2,"shape":[1],"chunks":[1],"dtype":"<i4","compressor":null,"order":"X"}"#,
            r#"{"zarr_format":2,"shape":[1],"chunks":[1],"dtype":"<i4","compressor":null,"dimension_separator":"-"}"#,
            r#"{"zarr_format":2,"shape":[1],"chunks":[1],"dtype":[["a","<i4"]],"compressor":null,"fill_value":"AAAA"}"#,
            r#"{"zarr_format":2,"shape":[1],"chunks":[1],"dtype":"<i4","compressor":{"cname":"lz4"}}"#,
        ] {
            assert!(parse(bad).is_err(), "accepted {bad}");
        }
        let many_dims = format!(
            r#"{{"zarr_format":2,"shape":{0},"chunks":{0},"dtype":"<i1","compressor":null}}"#,
            serde_json::to_string(&vec![1; 40]).unwrap()
        );
        assert!(parse(&many_dims).is_err());
    }

    #[test]
    fn fill_values_in_the_forms_zarr_python_2_releases_wrote() {
        let with = |dtype: &str, fill: &str| {
            parse(
                &OK.replace(r#""dtype":">i4""#, &format!(r#""dtype":{dtype}"#))
                    .replace(r#""fill_value":-2"#, &format!(r#""fill_value":{fill}"#)),
            )
            .map(|m| m.fill_value)
        };
        assert_eq!(
            with(r#""<U2""#, "0").unwrap(),
            Some(vec![0; 8]),
            "old default 0 for strings"
        );
        assert_eq!(with(r#""|S3""#, "0").unwrap(), Some(vec![0; 3]));
        assert_eq!(
            with(r#"[["a","<i2"]]"#, "0").unwrap(),
            Some(vec![0; 2]),
            "structured 0"
        );
        assert_eq!(
            with(r#""|S3""#, r#""YWI=""#).unwrap(),
            Some(b"ab\0".to_vec()),
            "base64"
        );
        assert_eq!(
            with(r#""<U2""#, r#""é""#).unwrap(),
            Some(vec![0xe9, 0, 0, 0, 0, 0, 0, 0])
        );
        assert_eq!(
            with(r#""<f4""#, r#""NaN""#)
                .unwrap()
                .map(|b| f32::from_le_bytes(b[..4].try_into().unwrap()).is_nan()),
            Some(true)
        );
        assert_eq!(
            with(r#"">f8""#, r#""-Infinity""#).unwrap(),
            Some(f64::NEG_INFINITY.to_be_bytes().to_vec())
        );
        assert_eq!(
            with(r#""<f8""#, "1").unwrap(),
            Some(1.0f64.to_le_bytes().to_vec()),
            "integer for a float"
        );
        assert_eq!(with(r#""|b1""#, "false").unwrap(), Some(vec![0]));
        assert_eq!(with(r#""<i4""#, "null").unwrap(), None);
        assert!(
            with(r#""<U2""#, "7").is_err(),
            "only 0 stands for an empty string"
        );
    }

    #[test]
    fn complex_fill_values_read_as_zarr_python_reads_them() {
        let with = |dtype: &str, fill: &str| with_dtype_fill(dtype, fill).unwrap().unwrap();
        let hex = |b: Vec<u8>| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        // What zarr-python 2.18.7 gives: np.array(Metadata2.decode_fill_value(fill, dtype),
        // dtype).tobytes().hex() for each case.
        for (dtype, fill, want) in [
            ("<c8", "[3, -4]", "00004040000080c0"),
            ("<c8", "[-0.0, -0.0]", "0000008000000000"),
            ("<c8", r#"["NaN", 1.0]"#, "0000c07f0000803f"),
            ("<c8", r#"[2.0, "NaN"]"#, "0000c07f0000c07f"),
            ("<c8", "[-0.0, 2.0]", "0000000000000040"),
            (">c16", "[3, -4]", "4008000000000000c010000000000000"),
            (">c16", "[-0.0, -0.0]", "80000000000000000000000000000000"),
            (
                ">c16",
                r#"["Infinity", 0.0]"#,
                "7ff00000000000000000000000000000",
            ),
        ] {
            assert_eq!(hex(with(dtype, fill)), want, "{dtype} {fill}");
        }
        // An infinite imaginary part makes the real part NaN (0 * inf); its sign is the CPU's.
        let b = with(">c16", r#"[1.5, "-Infinity"]"#);
        assert!(f64::from_be_bytes(b[..8].try_into().unwrap()).is_nan());
        assert_eq!(hex(b[8..].to_vec()), "fff0000000000000");
        for bad in ["1.5", "[1.5]", "[1, 2, 3]", r#"["x", 1]"#, "null"] {
            let m = parse(
                &OK.replace(r#""dtype":">i4""#, r#""dtype":"<c8""#)
                    .replace(r#""fill_value":-2"#, &format!(r#""fill_value":{bad}"#)),
            );
            assert_eq!(m.is_err(), bad != "null", "{bad}");
        }
        // Filters take numeric dtypes only: complex ones are refused by name.
        let f = parse(
            &OK.replace(r#""dtype":">i4""#, r#""dtype":"<c16""#)
                .replace(r#""fill_value":-2"#, r#""fill_value":null"#)
                .replace(
                    r#""filters":null"#,
                    r#""filters":[{"id":"delta","dtype":"<c16"}]"#,
                ),
        )
        .unwrap();
        let e = f.check_readable(Path::new("a")).unwrap_err().to_string();
        assert!(e.contains("<c16"), "{e}");
    }

    #[test]
    fn datetime_fill_values_are_counts_or_nat() {
        let with = with_dtype_fill;
        // zarr-python writes NaT as int(np.datetime64("NaT").view("i8")).
        assert_eq!(
            with("<M8[s]", "-9223372036854775808").unwrap(),
            Some(i64::MIN.to_le_bytes().to_vec())
        );
        assert_eq!(
            with("<M8[s]", r#""NaT""#).unwrap(),
            Some(i64::MIN.to_le_bytes().to_vec())
        );
        assert_eq!(
            with(">m8[10ms]", "1234").unwrap(),
            Some(1234i64.to_be_bytes().to_vec())
        );
        assert_eq!(with("<M8[ns]", "null").unwrap(), None);
        for bad in [
            "2.5",
            r#""2020-01-01""#,
            "9223372036854775808",
            "true",
            "[1]",
        ] {
            let e = with("<M8[ns]", bad).unwrap_err().to_string();
            assert!(e.contains("fill_value"), "{bad}: {e}");
        }
        // Filters take numeric dtypes only.
        let f = parse(
            &OK.replace(r#""dtype":">i4""#, r#""dtype":"<m8[s]""#)
                .replace(
                    r#""filters":null"#,
                    r#""filters":[{"id":"delta","dtype":"<m8[s]"}]"#,
                ),
        )
        .unwrap();
        let e = f.check_readable(Path::new("a")).unwrap_err().to_string();
        assert!(e.contains("\"<m8[s]\" is not supported"), "{e}");
    }

    #[test]
    fn readable_checks_name_the_problem() {
        let f = parse(&OK.replace(r#""order":"C""#, r#""order":"F""#)).unwrap();
        assert!(f.check_readable(Path::new("a")).is_ok());
        let f = parse(&OK.replace(r#""filters":null"#, r#""filters":[{"id":"json2"}]"#)).unwrap();
        let e = f.check_readable(Path::new("a")).unwrap_err().to_string();
        assert!(e.contains("json2"), "{e}");
        let f = parse(&OK.replace(r#""filters":null"#, r#""filters":[{"id":"delta"}]"#)).unwrap();
        let e = f.check_readable(Path::new("a")).unwrap_err().to_string();
        assert!(e.contains("delta") && e.contains("dtype"), "{e}");
    }
}
