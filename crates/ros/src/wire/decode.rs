//! One serialized ROS message against its [`Schema`]: ROS 2's CDR (the 4-byte encapsulation
//! header, then fields aligned to their size relative to the end of it, strings with their
//! NUL counted in the length) and ROS 1's serialization (packed little-endian, strings
//! without NUL). Every length read from the message is checked against its limit and against
//! the bytes left before anything is allocated; arrays of numbers are not copied but kept as
//! slices of the message ([`Value::Prims`]), so a megapixel image costs nothing to decode.
//! A ROS 2 `wstring` has two wire forms ([`WideChars`]): [`decode`] is told which,
//! [`decode_detect`] finds it.

use crate::error::{DecodeProblem, WideProblem};
use crate::typesys::schema::{Base, Count, Prim, Schema};
use crate::wire::wide::Chars;
pub use crate::wire::wide::WideChars;

/// Limits on what one message may declare.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longest string, in bytes.
    pub max_string: usize,
    /// Most elements of one sequence whose elements take no bytes (an empty message type);
    /// other sequences are bounded by the bytes left.
    pub max_elements: usize,
    /// Deepest nesting of message types.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_string: 1 << 20,
            max_elements: 1 << 16,
            max_depth: 32,
        }
    }
}

/// The wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// ROS 2: CDR with its encapsulation header.
    Cdr,
    /// ROS 1 serialization.
    Ros1,
}

/// A decoded value. Numbers (scalars and arrays alike) stay in their wire bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// `count` numbers of type `prim`, `bytes` long, in the message's byte order. `array`
    /// tells a one-element array from a scalar.
    Prims {
        prim: Prim,
        big_endian: bool,
        array: bool,
        bytes: &'a [u8],
    },
    /// A string's bytes (NUL dropped; not checked to be UTF-8).
    Str(&'a [u8]),
    /// A wide string's (`wstring`) bytes, its characters `wide` units in the message's byte
    /// order, checked to be valid UTF-16 (or UTF-32) when decoded.
    WStr {
        wide: WideChars,
        big_endian: bool,
        bytes: &'a [u8],
    },
    /// An array of strings or messages.
    List(Vec<Value<'a>>),
    /// A message: its fields by name, in schema order.
    Msg(Vec<(&'a str, Value<'a>)>),
}

impl<'a> Value<'a> {
    /// The field `name` of a message.
    pub fn get(&self, name: &str) -> Option<&Value<'a>> {
        match self {
            Value::Msg(fields) => fields.iter().find(|(n, _)| *n == name).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The field at a dotted path (`header.stamp.sec`).
    pub fn path(&self, path: &str) -> Option<&Value<'a>> {
        path.split('.').try_fold(self, |v, name| v.get(name))
    }

    /// Number `i` of a numeric value as f64 (64-bit integers may round).
    pub fn f64_at(&self, i: usize) -> Option<f64> {
        let Value::Prims {
            prim,
            big_endian,
            bytes,
            ..
        } = self
        else {
            return None;
        };
        let n = prim.size();
        let b = bytes.get(i * n..i * n + n)?;
        let mut le = [0u8; 8];
        le[..n].copy_from_slice(b);
        if *big_endian {
            le[..n].reverse();
        }
        Some(match prim {
            Prim::Bool | Prim::U8 => le[0] as f64,
            Prim::I8 => le[0] as i8 as f64,
            Prim::I16 => i16::from_le_bytes([le[0], le[1]]) as f64,
            Prim::U16 => u16::from_le_bytes([le[0], le[1]]) as f64,
            Prim::I32 => i32::from_le_bytes(le[..4].try_into().unwrap()) as f64,
            Prim::U32 => u32::from_le_bytes(le[..4].try_into().unwrap()) as f64,
            Prim::F32 => f32::from_le_bytes(le[..4].try_into().unwrap()) as f64,
            Prim::I64 => i64::from_le_bytes(le) as f64,
            Prim::U64 => u64::from_le_bytes(le) as f64,
            Prim::F64 => f64::from_le_bytes(le),
        })
    }

    /// A scalar number as f64.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Prims { array: false, .. } => self.f64_at(0),
            _ => None,
        }
    }

    /// A scalar integer that fits u64 (or a bool), exactly.
    pub fn as_u64(&self) -> Option<u64> {
        let f = self.as_f64()?;
        matches!(self, Value::Prims { prim, .. } if !matches!(prim, Prim::F32 | Prim::F64))
            .then_some(())?;
        // Integers of up to 32 bits are exact in f64; larger ones are read again exactly.
        if let Value::Prims {
            prim: Prim::U64 | Prim::I64,
            big_endian,
            bytes,
            ..
        } = self
        {
            let mut b: [u8; 8] = (*bytes).try_into().ok()?;
            if *big_endian {
                b.reverse();
            }
            let v = u64::from_le_bytes(b);
            return (matches!(
                self,
                Value::Prims {
                    prim: Prim::U64,
                    ..
                }
            ) || (v as i64) >= 0)
                .then_some(v);
        }
        (f >= 0.0).then_some(f as u64)
    }

    /// A numeric array's (or scalar's) values little-endian, `prim` and count.
    pub fn le_bytes(&self) -> Option<(Prim, usize, Vec<u8>)> {
        let Value::Prims {
            prim,
            big_endian,
            bytes,
            ..
        } = self
        else {
            return None;
        };
        let mut out = bytes.to_vec();
        if *big_endian {
            for c in out.chunks_exact_mut(prim.size()) {
                c.reverse();
            }
        }
        Some((*prim, bytes.len() / prim.size(), out))
    }

    /// A string field's text (lossy; a wide string's text).
    pub fn as_str(&self) -> Option<String> {
        match self {
            Value::Str(b) => Some(String::from_utf8_lossy(b).into_owned()),
            Value::WStr {
                wide,
                big_endian,
                bytes,
            } => Some(
                Chars::new(bytes, *wide, *big_endian)
                    .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
                    .collect(),
            ),
            _ => None,
        }
    }
}

/// Decodes `data`, one message of `schema`'s root type, its `wstring`s (if any) in the form
/// `wide`.
pub fn decode<'a>(
    schema: &'a Schema,
    data: &'a [u8],
    wire: Wire,
    wide: WideChars,
    limits: &Limits,
) -> Result<Value<'a>, DecodeProblem> {
    run(schema, data, wire, wide, limits).0
}

/// Decodes `data` as [`decode`] does, finding the form of its `wstring`s: the form under
/// which the whole message decodes, its bytes used up to the trailing padding [`decode`]
/// allows, with no NUL character in a wstring (4-byte characters read as 2-byte ones give a
/// NUL for every other one); if both do, 4-byte characters, as every ROS 2 rmw writes them on
/// Linux (see [`crate::wire::wide`]); if neither, the one that decodes with a NUL, 4-byte first.
/// Returns the form found, or `None` when the message has no non-empty wstring (both forms
/// read it the same). A message that fails to decode before any non-empty wstring fails as
/// it would in [`decode`]; one that decodes in neither form is
/// [`DecodeProblem::WideForm`], naming its first non-empty wstring field.
pub fn decode_detect<'a>(
    schema: &'a Schema,
    data: &'a [u8],
    wire: Wire,
    limits: &Limits,
) -> Result<(Value<'a>, Option<WideChars>), DecodeProblem> {
    let (four, seen, nul4) = run(schema, data, wire, WideChars::U32, limits);
    let Some(field) = seen else {
        return four.map(|v| (v, None));
    };
    if four.is_ok() && !nul4 {
        return four.map(|v| (v, Some(WideChars::U32)));
    }
    let (two, _, nul2) = run(schema, data, wire, WideChars::U16, limits);
    match (four, two) {
        (_, Ok(v)) if !nul2 => Ok((v, Some(WideChars::U16))),
        (Ok(v), _) => Ok((v, Some(WideChars::U32))),
        (Err(_), Ok(v)) => Ok((v, Some(WideChars::U16))),
        (Err(four), Err(two)) => Err(DecodeProblem::WideForm {
            field,
            four: Box::new(four),
            two: Box::new(two),
        }),
    }
}

/// One decoding: the message, the name of its first non-empty wstring field (if it got that
/// far), and whether a wstring held a NUL character.
fn run<'a>(
    schema: &'a Schema,
    data: &'a [u8],
    wire: Wire,
    wide: WideChars,
    limits: &Limits,
) -> (Result<Value<'a>, DecodeProblem>, Option<String>, bool) {
    let mut r = Reader {
        data,
        pos: 0,
        origin: 0,
        big_endian: false,
        wire,
        wide,
        first_wide: None,
        wide_nul: false,
        limits,
        schema,
    };
    let v = r.whole();
    (v, r.first_wide, r.wide_nul)
}

struct Reader<'a, 'l> {
    data: &'a [u8],
    pos: usize,
    /// Where CDR alignment counts from (after the encapsulation header).
    origin: usize,
    big_endian: bool,
    wire: Wire,
    /// The form `wstring`s are read in.
    wide: WideChars,
    /// The first non-empty wstring field met, by name.
    first_wide: Option<String>,
    /// Whether a wstring held a NUL character.
    wide_nul: bool,
    limits: &'l Limits,
    schema: &'a Schema,
}

impl<'a> Reader<'a, '_> {
    /// The encapsulation header (CDR), the root message, and what may be left after it.
    fn whole(&mut self) -> Result<Value<'a>, DecodeProblem> {
        if self.wire == Wire::Cdr {
            let head = self.take(4, "the CDR encapsulation header", 1)?;
            let kind = u16::from_be_bytes([head[0], head[1]]);
            self.big_endian = match kind {
                0 => true,
                1 => false,
                k => return Err(DecodeProblem::Encapsulation(k)),
            };
            self.origin = 4;
        }
        let v = self.message(0, 0)?;
        let left = self.left();
        // CDR writers pad the message to a multiple of 4 (rmw) or 8; ROS 1 has no padding.
        let slack = if self.wire == Wire::Cdr { 7 } else { 0 };
        if left > slack {
            return Err(DecodeProblem::Trailing { left });
        }
        Ok(v)
    }

    fn left(&self) -> usize {
        self.data.len() - self.pos
    }

    /// `n` bytes after aligning to `align` (CDR only).
    fn take(&mut self, n: usize, what: &str, align: usize) -> Result<&'a [u8], DecodeProblem> {
        if self.wire == Wire::Cdr && align > 1 {
            let rel = self.pos - self.origin;
            let pad = (align - rel % align) % align;
            if pad > self.left() {
                return Err(self.truncated(what, pad));
            }
            self.pos += pad;
        }
        if n > self.left() {
            return Err(self.truncated(what, n));
        }
        let b = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(b)
    }

    fn truncated(&self, what: &str, need: usize) -> DecodeProblem {
        DecodeProblem::Truncated {
            what: what.to_string(),
            at: self.pos,
            need,
            left: self.left(),
        }
    }

    fn u32(&mut self, what: &str) -> Result<u32, DecodeProblem> {
        let b: [u8; 4] = self.take(4, what, 4)?.try_into().expect("4 bytes");
        Ok(if self.big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    }

    fn message(&mut self, ty: usize, depth: usize) -> Result<Value<'a>, DecodeProblem> {
        if depth > self.limits.max_depth {
            return Err(DecodeProblem::TooDeep(self.limits.max_depth));
        }
        let schema = self.schema;
        let t = &schema.types[ty];
        let mut fields = Vec::with_capacity(t.fields.len());
        for f in &t.fields {
            let v = match f.count {
                Count::One => self.element(&f.base, &f.name, depth)?,
                Count::Fixed(n) => self.array(&f.base, n, &f.name, depth)?,
                Count::Seq(bound) => {
                    let at = self.pos;
                    let n = self.u32(&f.name)? as usize;
                    let min = schema.min_size(&f.base);
                    let limit = match (bound, min) {
                        (Some(b), _) => b,
                        (None, 0) => self.limits.max_elements,
                        (None, m) => self.left() / m,
                    };
                    if n > limit || n.saturating_mul(min) > self.left() {
                        return Err(DecodeProblem::TooLong {
                            what: format!("sequence {}", f.name),
                            at,
                            got: n as u64,
                            limit: limit.min(self.left() / min.max(1)) as u64,
                            unit: "elements",
                        });
                    }
                    self.array(&f.base, n, &f.name, depth)?
                }
            };
            fields.push((f.name.as_str(), v));
        }
        Ok(Value::Msg(fields))
    }

    fn array(
        &mut self,
        base: &Base,
        n: usize,
        name: &str,
        depth: usize,
    ) -> Result<Value<'a>, DecodeProblem> {
        if let Base::Prim(p) = base {
            let len = n
                .checked_mul(p.size())
                .ok_or_else(|| self.truncated(name, usize::MAX))?;
            let bytes = self.take(len, name, p.size())?;
            return Ok(Value::Prims {
                prim: *p,
                big_endian: self.big_endian,
                array: true,
                bytes,
            });
        }
        if n.saturating_mul(self.schema.min_size(base)) > self.left() {
            return Err(self.truncated(name, n.saturating_mul(self.schema.min_size(base))));
        }
        let mut items = Vec::with_capacity(n.min(self.left() + 1));
        for _ in 0..n {
            items.push(self.element(base, name, depth)?);
        }
        Ok(Value::List(items))
    }

    fn element(
        &mut self,
        base: &Base,
        name: &str,
        depth: usize,
    ) -> Result<Value<'a>, DecodeProblem> {
        match base {
            Base::Prim(p) => Ok(Value::Prims {
                prim: *p,
                big_endian: self.big_endian,
                array: false,
                bytes: self.take(p.size(), name, p.size())?,
            }),
            Base::String(bound) => {
                let at = self.pos;
                let n = self.u32(name)? as usize;
                let limit = bound.map_or(self.limits.max_string, |b| {
                    // CDR counts the NUL.
                    b + usize::from(self.wire == Wire::Cdr)
                });
                if n > limit.min(self.limits.max_string + 1) {
                    return Err(DecodeProblem::TooLong {
                        what: format!("string {name}"),
                        at,
                        got: n as u64,
                        limit: limit as u64,
                        unit: "bytes",
                    });
                }
                let b = self.take(n, name, 1)?;
                let b = match (self.wire, b.split_last()) {
                    (Wire::Cdr, Some((0, s))) => s,
                    _ => b,
                };
                Ok(Value::Str(b))
            }
            Base::WString(bound) => self.wstring(*bound, name),
            Base::Msg(t) => self.message(*t, depth + 1),
        }
    }

    /// A `wstring` in the form `self.wide`: a uint32 count of characters, then each one.
    fn wstring(&mut self, bound: Option<usize>, name: &str) -> Result<Value<'a>, DecodeProblem> {
        let at = self.pos;
        if self.wire != Wire::Cdr {
            return Err(DecodeProblem::BadWide {
                field: name.to_string(),
                at,
                problem: WideProblem::Ros1,
            });
        }
        let n = self.u32(name)? as usize;
        let unit = self.wide.size();
        // The string limit counts bytes on the wire.
        let limit = bound
            .map_or(usize::MAX, |b| b)
            .min(self.limits.max_string / unit);
        if n > limit {
            return Err(DecodeProblem::TooLong {
                what: format!("wstring {name}"),
                at,
                got: n as u64,
                limit: limit as u64,
                unit: "characters",
            });
        }
        if n > 0 && self.first_wide.is_none() {
            self.first_wide = Some(name.to_string());
        }
        let bytes = self.take(n * unit, name, unit)?;
        for c in Chars::new(bytes, self.wide, self.big_endian) {
            match c {
                Ok('\0') => self.wide_nul = true,
                Ok(_) => {}
                Err(char) => {
                    return Err(DecodeProblem::BadWide {
                        field: name.to_string(),
                        at,
                        problem: WideProblem::Char {
                            char,
                            read_as: self.wide.describe(),
                        },
                    })
                }
            }
        }
        Ok(Value::WStr {
            wide: self.wide,
            big_endian: self.big_endian,
            bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::typesys::schema::Dialect;

    fn schema() -> Schema {
        Schema::parse(
            "p/M",
            "uint8 a\nfloat64 b\nstring s\nint16[] v\np/N[2] n\n===\nMSG: p/N\nuint32 x\n",
            Dialect::Ros2,
        )
        .unwrap()
    }

    fn cdr() -> Vec<u8> {
        let mut m = vec![0, 1, 0, 0, 7];
        m.extend([0; 7]); // align to 8
        m.extend(2.5f64.to_le_bytes());
        m.extend(3u32.to_le_bytes());
        m.extend(b"hi\0");
        m.push(0); // align to 4
        m.extend(2u32.to_le_bytes());
        m.extend((-1i16).to_le_bytes());
        m.extend(5i16.to_le_bytes());
        m.extend(9u32.to_le_bytes());
        m.extend(10u32.to_le_bytes());
        m
    }

    #[test]
    fn decodes_cdr_with_alignment() {
        let s = schema();
        let m = cdr();
        let v = decode(&s, &m, Wire::Cdr, WideChars::U32, &Limits::default()).unwrap();
        assert_eq!(v.get("a").unwrap().as_u64(), Some(7));
        assert_eq!(v.get("b").unwrap().as_f64(), Some(2.5));
        assert_eq!(v.get("s").unwrap().as_str().as_deref(), Some("hi"));
        let seq = v.get("v").unwrap();
        assert_eq!((seq.f64_at(0), seq.f64_at(1)), (Some(-1.0), Some(5.0)));
        let Value::List(n) = v.get("n").unwrap() else {
            panic!()
        };
        assert_eq!(n[1].get("x").unwrap().as_u64(), Some(10));
    }

    #[test]
    fn big_endian_cdr_and_bounded_strings() {
        let s = Schema::parse("p/M", "uint16 a\nfloat64 b\nstring<=2 s\n", Dialect::Ros2).unwrap();
        let mut m = vec![0, 0, 0, 0];
        m.extend(513u16.to_be_bytes());
        m.extend([0; 6]);
        m.extend((-0.5f64).to_be_bytes());
        m.extend(3u32.to_be_bytes());
        m.extend(b"ok\0");
        let v = decode(&s, &m, Wire::Cdr, WideChars::U32, &Limits::default()).unwrap();
        assert_eq!(v.get("a").unwrap().as_u64(), Some(513));
        assert_eq!(v.get("b").unwrap().as_f64(), Some(-0.5));
        let (_, _, le) = v.get("a").unwrap().le_bytes().unwrap();
        assert_eq!(le, 513u16.to_le_bytes());
        // Over the bound: 3 characters and the NUL.
        let n = m.len();
        m[n - 7..n - 3].copy_from_slice(&4u32.to_be_bytes());
        m.push(0);
        let e = decode(&s, &m, Wire::Cdr, WideChars::U32, &Limits::default()).unwrap_err();
        assert!(matches!(e, DecodeProblem::TooLong { .. }), "{e}");
    }

    #[test]
    fn every_cut_is_an_error_not_a_panic() {
        let s = schema();
        let m = cdr();
        for cut in 0..m.len() {
            assert!(decode(&s, &m[..cut], Wire::Cdr, WideChars::U32, &Limits::default()).is_err());
        }
    }

    #[test]
    fn huge_lengths_are_refused_before_allocating() {
        let s = Schema::parse("p/M", "string s\nuint64[] v\n", Dialect::Ros1).unwrap();
        let mut m = u32::MAX.to_le_bytes().to_vec();
        m.extend([0; 16]);
        let e = decode(&s, &m, Wire::Ros1, WideChars::U32, &Limits::default()).unwrap_err();
        assert!(matches!(e, DecodeProblem::TooLong { .. }), "{e}");
        let mut m = 0u32.to_le_bytes().to_vec();
        m.extend(3u32.to_le_bytes());
        m.extend([0; 16]);
        let e = decode(&s, &m, Wire::Ros1, WideChars::U32, &Limits::default()).unwrap_err();
        assert!(e.to_string().contains("sequence v"), "{e}");
    }
}
