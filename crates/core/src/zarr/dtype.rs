//! numpy dtypes as zarr v2 stores them in `.zarray`, and what we need to read them.
//!
//! A dtype is either a scalar type string (`"<f8"`, `">i4"`, `"|b1"`, `"<c16"`, `"<M8[ns]"`,
//! `"<U16"`, `"|S5"`, `"|V8"`) or a structured list of `[name, type]` / `[name, type, shape]` fields where `type`
//! may itself be a list (nesting). Rows are packed: each field starts where the previous one
//! ends, as numpy's `descr` describes them (padding shows up as unnamed `|V` fields).
//!
//! Data is normalised to little-endian once per decoded chunk ([`SwapPlan`]); afterwards every
//! field can be sliced out of the packed rows without decoding anything again.

use std::fmt;

use crate::error::DTypeProblem;
use serde_json::Value;

use super::{MAX_DTYPE_DEPTH, MAX_FIELDS, MAX_ITEMSIZE, MAX_NDIM};

/// The kind of a scalar numpy type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarKind {
    /// `b1`: one byte, 0 or 1.
    Bool,
    /// `i1 i2 i4 i8`.
    Int,
    /// `u1 u2 u4 u8`.
    UInt,
    /// `f2 f4 f8`.
    Float,
    /// `c8 c16`: a real then an imaginary float of half the size, each in the stored byte
    /// order on its own (numpy's layout).
    Complex,
    /// `M8[unit]`: numpy `datetime64`, an `i8` count of units since 1970-01-01T00:00
    /// (`i64::MIN` is NaT).
    Datetime(TimeUnit),
    /// `m8[unit]`: numpy `timedelta64`, an `i8` count of units (`i64::MIN` is NaT).
    Timedelta(TimeUnit),
    /// `S n`: n bytes, NUL-padded.
    Bytes,
    /// `U n`: n UTF-32 code units (size is 4n bytes), NUL-padded.
    Unicode,
    /// `V n`: n opaque bytes (also padding between fields).
    Void,
}

/// The unit of an `M8`/`m8` dtype: `count` times one of numpy's units (`[ns]`, `[10ms]`), or
/// generic (`M8` without brackets). Kept so `info` names the dtype as numpy does; the stored
/// values are plain counts either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeUnit {
    /// Index into [`TIME_UNITS`] (0 is generic).
    pub code: u8,
    /// The multiplier, 1 or more (numpy keeps it in a C int).
    pub count: u32,
}

/// numpy's datetime unit names, in its order; the empty first one is the generic unit.
pub const TIME_UNITS: [&str; 14] = [
    "", "Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as",
];

impl TimeUnit {
    /// Parses what follows `M8`/`m8`: nothing (generic), `[unit]` or `[<count>unit]`.
    fn parse(s: &str) -> Option<TimeUnit> {
        if s.is_empty() {
            return Some(TimeUnit { code: 0, count: 1 });
        }
        let inner = s.strip_prefix('[')?.strip_suffix(']')?;
        let digits = inner.bytes().take_while(u8::is_ascii_digit).count();
        let count = match digits {
            0 => 1,
            // u32 parsing bounds the text, numpy keeps a C int. numpy takes `[0s]` but no
            // zarr-python array can have a zero-length unit, so it is refused.
            _ => inner[..digits]
                .parse::<u32>()
                .ok()
                .filter(|&c| (1..=i32::MAX as u32).contains(&c))?,
        };
        let code = TIME_UNITS[1..]
            .iter()
            .position(|&u| u == &inner[digits..])?
            + 1;
        Some(TimeUnit {
            code: code as u8,
            count,
        })
    }

    /// `[ns]`, `[10ms]`, or empty for generic.
    pub fn suffix(&self) -> String {
        let name = TIME_UNITS[usize::from(self.code)];
        match (self.code, self.count) {
            (0, _) => String::new(),
            (_, 1) => format!("[{name}]"),
            (_, n) => format!("[{n}{name}]"),
        }
    }
}

/// A scalar type with its size in bytes and stored byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scalar {
    pub kind: ScalarKind,
    /// Size in bytes (for `U n` that is `4 * n`).
    pub size: usize,
    /// Stored big-endian (`>`); converted to little-endian on read.
    pub big_endian: bool,
}

/// One field of a structured dtype.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Empty for padding.
    pub name: String,
    pub dtype: DType,
    /// Sub-array shape (`[]` for one value per row).
    pub shape: Vec<usize>,
    /// Byte offset inside the row.
    pub offset: usize,
}

impl Field {
    /// Number of elements of `dtype` per row (product of `shape`).
    pub fn count(&self) -> usize {
        self.shape.iter().product()
    }

    /// Bytes this field takes in a row.
    pub fn size(&self) -> usize {
        self.count() * self.dtype.itemsize()
    }
}

/// A numpy dtype as zarr v2 describes it.
#[derive(Debug, Clone, PartialEq)]
pub enum DType {
    Scalar(Scalar),
    /// Fields in declaration order, packed; `itemsize` is the row size.
    Struct {
        fields: Vec<Field>,
        itemsize: usize,
    },
}

impl DType {
    /// Parses the `dtype` member of a `.zarray`.
    pub fn from_json(v: &Value) -> Result<DType, DTypeProblem> {
        parse(v, 0)
    }

    /// Parses a numpy type string such as `"<f8"` or `"|U3"`.
    pub fn parse_typestr(s: &str) -> Result<DType, DTypeProblem> {
        parse_scalar(s).map(DType::Scalar)
    }

    /// Bytes per element.
    pub fn itemsize(&self) -> usize {
        match self {
            DType::Scalar(s) => s.size,
            DType::Struct { itemsize, .. } => *itemsize,
        }
    }

    /// The fields of a structured dtype (empty for a scalar).
    pub fn fields(&self) -> &[Field] {
        match self {
            DType::Scalar(_) => &[],
            DType::Struct { fields, .. } => fields,
        }
    }

    /// Finds a (possibly nested, dot-separated: `"a.b"`) field; returns its absolute offset in
    /// the row, its dtype and its (concatenated) sub-array shape.
    pub fn find_field(&self, path: &str) -> Option<(usize, &DType, Vec<usize>)> {
        let mut dt = self;
        let mut offset = 0;
        let mut shape = Vec::new();
        for part in path.split('.') {
            if !shape.is_empty() {
                // A sub-array of structs has no single per-row offset for its members.
                return None;
            }
            let f = dt
                .fields()
                .iter()
                .find(|f| !f.name.is_empty() && f.name == part)?;
            offset += f.offset;
            shape.extend_from_slice(&f.shape);
            dt = &f.dtype;
        }
        Some((offset, dt, shape))
    }

    /// The byte swaps that turn one stored row into little-endian.
    pub fn swap_plan(&self) -> SwapPlan {
        let mut ops = Vec::new();
        collect_swaps(self, 0, 1, &mut ops);
        SwapPlan {
            ops,
            itemsize: self.itemsize(),
        }
    }

    /// The same dtype with every byte order little-endian (what our reads return).
    pub fn to_little_endian(&self) -> DType {
        match self {
            DType::Scalar(s) => DType::Scalar(Scalar {
                big_endian: false,
                ..*s
            }),
            DType::Struct { fields, itemsize } => DType::Struct {
                fields: fields
                    .iter()
                    .map(|f| Field {
                        dtype: f.dtype.to_little_endian(),
                        ..f.clone()
                    })
                    .collect(),
                itemsize: *itemsize,
            },
        }
    }

    /// What numpy's `str(dtype)` prints for this dtype (`int64`, `<U16`, `('<f8', (3, 3))` is
    /// produced by [`numpy_str_shaped`]).
    pub fn numpy_str(&self) -> String {
        match self {
            DType::Scalar(s) => s.numpy_str(),
            DType::Struct { .. } => self.to_string(),
        }
    }
}

/// numpy's `str()` of a field's dtype including its sub-array shape, e.g. `('<i8', (2,))`.
pub fn numpy_str_shaped(dt: &DType, shape: &[usize]) -> String {
    if shape.is_empty() {
        return dt.numpy_str();
    }
    format!("({}, {})", quoted_descr(dt), tuple(shape))
}

fn tuple(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn quoted_descr(dt: &DType) -> String {
    match dt {
        DType::Scalar(s) => format!("'{}'", s.typestr()),
        DType::Struct { .. } => dt.to_string(),
    }
}

impl Scalar {
    /// The numpy type string, e.g. `<f8`, `|b1`, `>U4`, `<M8[ns]`.
    pub fn typestr(&self) -> String {
        let (code, n) = match self.kind {
            ScalarKind::Datetime(u) | ScalarKind::Timedelta(u) => {
                let code = if matches!(self.kind, ScalarKind::Datetime(_)) {
                    'M'
                } else {
                    'm'
                };
                // numpy always gives these a byte order, though the unit follows the size.
                let order = if self.big_endian { '>' } else { '<' };
                return format!("{order}{code}8{}", u.suffix());
            }
            ScalarKind::Bool => ('b', self.size),
            ScalarKind::Int => ('i', self.size),
            ScalarKind::UInt => ('u', self.size),
            ScalarKind::Float => ('f', self.size),
            ScalarKind::Complex => ('c', self.size),
            ScalarKind::Bytes => ('S', self.size),
            ScalarKind::Unicode => ('U', self.size / 4),
            ScalarKind::Void => ('V', self.size),
        };
        let order = if self.size == 1 && self.kind != ScalarKind::Unicode
            || matches!(self.kind, ScalarKind::Bytes | ScalarKind::Void)
        {
            '|'
        } else if self.big_endian {
            '>'
        } else {
            '<'
        };
        format!("{order}{code}{n}")
    }

    fn numpy_str(&self) -> String {
        if self.big_endian && self.size > 1 && self.kind != ScalarKind::Bytes {
            return self.typestr();
        }
        let bits = self.size * 8;
        match self.kind {
            ScalarKind::Bool => "bool".into(),
            ScalarKind::Int => format!("int{bits}"),
            ScalarKind::UInt => format!("uint{bits}"),
            ScalarKind::Float => format!("float{bits}"),
            ScalarKind::Complex => format!("complex{bits}"),
            ScalarKind::Datetime(u) => format!("datetime64{}", u.suffix()),
            ScalarKind::Timedelta(u) => format!("timedelta64{}", u.suffix()),
            ScalarKind::Bytes | ScalarKind::Unicode | ScalarKind::Void => self.typestr(),
        }
    }
}

/// Shown like numpy's `descr`: `<f8` or `[('a', '<i8', (2,)), ('b', '<U16')]`.
impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DType::Scalar(s) => f.write_str(&s.typestr()),
            DType::Struct { fields, .. } => {
                f.write_str("[")?;
                for (i, fl) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "('{}', {}", fl.name, quoted_descr(&fl.dtype))?;
                    if !fl.shape.is_empty() {
                        write!(f, ", {}", tuple(&fl.shape))?;
                    }
                    f.write_str(")")?;
                }
                f.write_str("]")
            }
        }
    }
}

fn parse(v: &Value, depth: usize) -> Result<DType, DTypeProblem> {
    match v {
        Value::String(s) => DType::parse_typestr(s),
        Value::Array(items) => {
            if depth >= MAX_DTYPE_DEPTH {
                return Err(DTypeProblem::TooDeep {
                    limit: MAX_DTYPE_DEPTH,
                });
            }
            if items.len() > MAX_FIELDS {
                return Err(DTypeProblem::TooManyFields {
                    count: items.len(),
                    limit: MAX_FIELDS,
                });
            }
            if items.is_empty() {
                return Err(DTypeProblem::NoFields);
            }
            let mut fields = Vec::with_capacity(items.len());
            let mut offset: u64 = 0;
            for item in items {
                let parts = item
                    .as_array()
                    .filter(|p| p.len() == 2 || p.len() == 3)
                    .ok_or_else(|| DTypeProblem::FieldForm {
                        json: item.to_string(),
                    })?;
                let name = parts[0].as_str().ok_or_else(|| DTypeProblem::FieldName {
                    json: parts[0].to_string(),
                })?;
                if !name.is_empty() && fields.iter().any(|f: &Field| f.name == name) {
                    return Err(DTypeProblem::DuplicateField {
                        name: name.to_string(),
                    });
                }
                let dtype = parse(&parts[1], depth + 1)?;
                let shape = match parts.get(2) {
                    None => Vec::new(),
                    Some(s) => parse_shape(s)?,
                };
                let count = shape
                    .iter()
                    .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64))
                    .ok_or(DTypeProblem::SubArrayOverflow)?;
                let size = count
                    .checked_mul(dtype.itemsize() as u64)
                    .filter(|&s| s <= MAX_ITEMSIZE)
                    .ok_or_else(|| DTypeProblem::FieldTooLarge {
                        name: name.to_string(),
                        limit: MAX_ITEMSIZE,
                    })?;
                fields.push(Field {
                    name: name.to_string(),
                    dtype,
                    shape,
                    offset: offset as usize,
                });
                offset += size;
                if offset > MAX_ITEMSIZE {
                    return Err(DTypeProblem::ItemTooLarge {
                        limit: MAX_ITEMSIZE,
                    });
                }
            }
            Ok(DType::Struct {
                fields,
                itemsize: offset as usize,
            })
        }
        other => Err(DTypeProblem::NotADType {
            json: other.to_string(),
        }),
    }
}

fn parse_shape(v: &Value) -> Result<Vec<usize>, DTypeProblem> {
    let dims = match v {
        // numpy accepts a bare integer for a 1-D sub-array.
        Value::Number(_) => std::slice::from_ref(v),
        Value::Array(a) => a.as_slice(),
        _ => {
            return Err(DTypeProblem::ShapeNotList {
                json: v.to_string(),
            })
        }
    };
    if dims.len() > MAX_NDIM {
        return Err(DTypeProblem::ShapeDims {
            count: dims.len(),
            limit: MAX_NDIM,
        });
    }
    dims.iter()
        .map(|d| {
            d.as_u64()
                .filter(|&d| d <= MAX_ITEMSIZE)
                .map(|d| d as usize)
                .ok_or_else(|| DTypeProblem::ShapeDim {
                    json: d.to_string(),
                })
        })
        .collect()
}

fn parse_scalar(s: &str) -> Result<Scalar, DTypeProblem> {
    let bad = || DTypeProblem::Unsupported {
        typestr: s.to_string(),
    };
    let mut chars = s.chars();
    let order = chars.next().ok_or_else(bad)?;
    let (order, rest) = if matches!(order, '<' | '>' | '|' | '=') {
        (order, &s[1..])
    } else {
        ('|', s)
    };
    let code = rest.chars().next().ok_or_else(bad)?;
    if let (Some(unit), 'M' | 'm') = (rest[code.len_utf8()..].strip_prefix('8'), code) {
        let unit = TimeUnit::parse(unit).ok_or_else(bad)?;
        return Ok(Scalar {
            kind: if code == 'M' {
                ScalarKind::Datetime(unit)
            } else {
                ScalarKind::Timedelta(unit)
            },
            size: 8,
            big_endian: order == '>',
        });
    }
    let n: u64 = rest[code.len_utf8()..].parse().map_err(|_| bad())?;
    let (kind, size) = match (code, n) {
        ('b', 1) => (ScalarKind::Bool, 1),
        ('i', 1 | 2 | 4 | 8) => (ScalarKind::Int, n),
        ('u', 1 | 2 | 4 | 8) => (ScalarKind::UInt, n),
        ('f', 2 | 4 | 8) => (ScalarKind::Float, n),
        ('c', 8 | 16) => (ScalarKind::Complex, n),
        ('S', _) => (ScalarKind::Bytes, n),
        ('U', _) => (ScalarKind::Unicode, n.checked_mul(4).ok_or_else(bad)?),
        ('V', _) => (ScalarKind::Void, n),
        _ => return Err(bad()),
    };
    if size > MAX_ITEMSIZE {
        return Err(DTypeProblem::ScalarTooLarge {
            typestr: s.to_string(),
            limit: MAX_ITEMSIZE,
        });
    }
    let big_endian =
        order == '>' && size > 1 && !matches!(kind, ScalarKind::Bytes | ScalarKind::Void);
    Ok(Scalar {
        kind,
        size: size as usize,
        big_endian,
    })
}

/// One run of byte swaps inside a row: `count` elements of `width` bytes from `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Swap {
    pub offset: usize,
    pub width: usize,
    pub count: usize,
}

/// The byte swaps that make rows of a dtype little-endian. Empty for little-endian dtypes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwapPlan {
    pub ops: Vec<Swap>,
    pub itemsize: usize,
}

impl SwapPlan {
    /// Converts whole rows in place. `buf.len()` is a multiple of the itemsize.
    pub fn apply(&self, buf: &mut [u8]) {
        if self.ops.is_empty() || self.itemsize == 0 {
            return;
        }
        for row in buf.chunks_exact_mut(self.itemsize) {
            for op in &self.ops {
                let run = &mut row[op.offset..op.offset + op.width * op.count];
                for el in run.chunks_exact_mut(op.width) {
                    el.reverse();
                }
            }
        }
    }
}

fn collect_swaps(dt: &DType, base: usize, count: usize, ops: &mut Vec<Swap>) {
    match dt {
        DType::Scalar(s) if s.big_endian => {
            let (width, per) = match s.kind {
                ScalarKind::Unicode => (4, s.size / 4),
                // Real and imaginary parts are swapped each on its own, not as one 16 bytes.
                ScalarKind::Complex => (s.size / 2, 2),
                _ => (s.size, 1),
            };
            if per * count > 0 {
                ops.push(Swap {
                    offset: base,
                    width,
                    count: per * count,
                });
            }
        }
        DType::Scalar(_) => {}
        DType::Struct { fields, itemsize } => {
            for i in 0..count {
                for f in fields {
                    collect_swaps(&f.dtype, base + i * itemsize + f.offset, f.count(), ops);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn l5kit_agents_layout() {
        let dt = DType::from_json(&json!([
            ["centroid", "<f8", [2]],
            ["extent", "<f4", [3]],
            ["yaw", "<f4"],
            ["velocity", "<f4", [2]],
            ["track_id", "<u8"],
            ["label_probabilities", "<f4", [17]]
        ]))
        .unwrap();
        assert_eq!(dt.itemsize(), 116);
        let offs: Vec<usize> = dt.fields().iter().map(|f| f.offset).collect();
        assert_eq!(offs, [0, 16, 28, 32, 40, 48]);
        assert!(dt.swap_plan().ops.is_empty());
        assert_eq!(
            numpy_str_shaped(&dt.fields()[0].dtype, &dt.fields()[0].shape),
            "('<f8', (2,))"
        );
        assert_eq!(dt.fields()[4].dtype.numpy_str(), "uint64");
    }

    #[test]
    fn nested_big_endian_swaps() {
        let dt = DType::from_json(&json!([
            ["a", ">i2"],
            ["s", [["x", ">f4"], ["u", ">U1"]], [2]]
        ]))
        .unwrap();
        assert_eq!(dt.itemsize(), 2 + 2 * 8);
        let mut row = vec![
            0x01, 0x02, 1, 2, 3, 4, 0, 0, 0, 0x41, 5, 6, 7, 8, 0, 0, 0, 0x42,
        ];
        dt.swap_plan().apply(&mut row);
        assert_eq!(
            row,
            [2, 1, 4, 3, 2, 1, 0x41, 0, 0, 0, 8, 7, 6, 5, 0x42, 0, 0, 0]
        );
        let (off, _, shape) = dt.find_field("a").unwrap();
        assert_eq!((off, shape), (0, vec![]));
        // Members of a sub-array of structs have no single offset.
        assert!(dt.find_field("s.x").is_none());
    }

    #[test]
    fn complex_dtypes_swap_each_half() {
        for (t, shown, size) in [("<c8", "complex64", 8), (">c16", ">c16", 16)] {
            let dt = DType::parse_typestr(t).unwrap();
            assert_eq!((dt.to_string(), dt.numpy_str()), (t.into(), shown.into()));
            assert_eq!(dt.itemsize(), size);
        }
        let c8 = DType::parse_typestr(">c8").unwrap();
        let mut b = vec![1, 2, 3, 4, 5, 6, 7, 8];
        c8.swap_plan().apply(&mut b);
        assert_eq!(b, [4, 3, 2, 1, 8, 7, 6, 5]);
        for bad in ["<c4", "<c32", "<c", ">c8x"] {
            assert!(DType::parse_typestr(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn datetimes_keep_their_units() {
        for (t, shown) in [
            ("<M8[ns]", "datetime64[ns]"),
            (">m8[10ms]", ">m8[10ms]"),
            ("<M8", "datetime64"),
            ("<m8[D]", "timedelta64[D]"),
            ("<M8[2147483647as]", "datetime64[2147483647as]"),
        ] {
            let dt = DType::parse_typestr(t).unwrap();
            assert_eq!((dt.to_string(), dt.numpy_str()), (t.into(), shown.into()));
            assert_eq!(dt.itemsize(), 8);
        }
        let mut b: Vec<u8> = (1..=8).collect();
        DType::parse_typestr(">M8[s]")
            .unwrap()
            .swap_plan()
            .apply(&mut b);
        assert_eq!(b, [8, 7, 6, 5, 4, 3, 2, 1]);
        for bad in [
            "<M8[xs]",
            "<M8[0s]",
            "<M8[2147483648s]",
            "<M8[99999999999999999999s]",
            "<M4[ns]",
            "<M8ns",
            "<m8[ns",
            "<M8[]",
            "<M8[-1s]",
            "<M8[ns/2]",
        ] {
            assert!(DType::parse_typestr(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rejects_hostile_dtypes() {
        assert!(DType::from_json(&json!("<i3")).is_err());
        assert!(DType::from_json(&json!("<U99999999999")).is_err());
        assert!(DType::from_json(&json!([["a", "<f8", [1000000, 1000000]]])).is_err());
        assert!(DType::from_json(&json!([["a", "<f8"], ["a", "<f8"]])).is_err());
        assert!(DType::from_json(&json!([])).is_err());
        assert!(DType::from_json(&json!("|O")).is_err());
        let mut deep = json!("<i1");
        for _ in 0..20 {
            deep = json!([["x", deep]]);
        }
        assert!(DType::from_json(&deep).is_err());
    }
}
