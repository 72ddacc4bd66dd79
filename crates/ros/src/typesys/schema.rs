//! ROS message definitions (`.msg` text) as types: the schema text a recording stores with
//! every topic (an MCAP `ros2msg` schema record, a ROS 1 connection's `message_definition`).
//!
//! The text is the root type's fields, then every type it uses, each after a line of `=`
//! and a `MSG: pkg/Type` line. Field lines are `type name` (ROS 2 may add a default value),
//! constants `type NAME=value` (skipped: they are not on the wire), comments after `#`.
//! Types are `bool byte char int8..uint64 float32 float64 string wstring` (ROS 1 adds `time`
//! and `duration`), a message type (`pkg/Type`, `pkg/msg/Type`, or a bare name in the same
//! package; ROS 1's bare `Header` is `std_msgs/Header`), each optionally an array: `T[]`,
//! `T[N]`, `T[<=N]`; strings may be bounded: `string<=N`, `wstring<=N`. `wstring` is ROS 2
//! only (ROS 1 has none): a ROS 1 definition with one does not parse.

use std::collections::HashMap;

use crate::error::{DecodeProblem, SchemaProblem};

/// Most types one schema may define (a sensor message uses a handful).
pub const MAX_TYPES: usize = 256;
/// Most fields one type may have.
pub const MAX_FIELDS: usize = 1024;
/// The largest fixed array length a schema may declare.
pub const MAX_FIXED_ARRAY: usize = 1 << 20;

/// A numeric (or bool) wire type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prim {
    Bool,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
}

impl Prim {
    /// Bytes on the wire (and the CDR alignment).
    pub fn size(self) -> usize {
        match self {
            Prim::Bool | Prim::I8 | Prim::U8 => 1,
            Prim::I16 | Prim::U16 => 2,
            Prim::I32 | Prim::U32 | Prim::F32 => 4,
            Prim::I64 | Prim::U64 | Prim::F64 => 8,
        }
    }
}

/// What one element of a field is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Base {
    Prim(Prim),
    /// A string, with its bound (`string<=N`) if any.
    String(Option<usize>),
    /// A wide string (ROS 2 `wstring`), with its bound (`wstring<=N`, in characters) if any.
    /// Its wire form is one of two ([`crate::wire::wide::WideChars`]).
    WString(Option<usize>),
    /// A message type: its index in [`Schema::types`].
    Msg(usize),
}

/// How many elements a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    One,
    Fixed(usize),
    /// A sequence (length on the wire), with its bound (`T[<=N]`) if any.
    Seq(Option<usize>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub base: Base,
    pub count: Count,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MsgType {
    /// `pkg/Type` (without `/msg/`).
    pub name: String,
    pub fields: Vec<Field>,
}

/// Which serialization the schema is for: ROS 1 spells a few types differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Ros1,
    Ros2,
}

/// A parsed definition: the root type is `types[0]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    pub types: Vec<MsgType>,
}

/// `pkg/msg/Type` -> `pkg/Type`.
pub fn normalize_type(name: &str) -> String {
    let name = name.trim();
    match name.split('/').collect::<Vec<_>>()[..] {
        [pkg, "msg", t] => format!("{pkg}/{t}"),
        _ => name.to_string(),
    }
}

struct RawField {
    name: String,
    type_name: String,
    base: Option<Base>,
    count: Count,
}

impl Schema {
    /// Parses `text`, the definition of `root` (`pkg/Type` or `pkg/msg/Type`).
    pub fn parse(root: &str, text: &str, dialect: Dialect) -> Result<Schema, DecodeProblem> {
        let root = normalize_type(root);
        let mut sections: Vec<(String, Vec<RawField>)> = vec![(root.clone(), Vec::new())];
        let mut lines = text.lines().enumerate().peekable();
        while let Some((i, line)) = lines.next() {
            let bad = |problem| DecodeProblem::Schema {
                type_name: root.clone(),
                line: i + 1,
                problem,
            };
            let t = line.trim();
            if t.len() >= 3 && t.bytes().all(|b| b == b'=') {
                // The next non-empty line names the type that follows.
                let name = loop {
                    match lines.next() {
                        Some((_, l)) if l.trim().is_empty() => continue,
                        Some((_, l)) => break l.trim(),
                        None => return Err(bad(SchemaProblem::NoTypeAfterSeparator)),
                    }
                };
                let Some(name) = name.strip_prefix("MSG:") else {
                    return Err(bad(SchemaProblem::BadSection {
                        got: name.to_string(),
                    }));
                };
                if sections.len() >= MAX_TYPES {
                    return Err(bad(SchemaProblem::TooManyTypes { limit: MAX_TYPES }));
                }
                sections.push((normalize_type(name), Vec::new()));
                continue;
            }
            let package = sections
                .last()
                .and_then(|(n, _)| n.split_once('/'))
                .map(|(p, _)| p.to_string())
                .unwrap_or_default();
            if let Some(f) = parse_line(line, &package, dialect).map_err(bad)? {
                let fields = &mut sections.last_mut().expect("root section").1;
                if fields.len() >= MAX_FIELDS {
                    return Err(bad(SchemaProblem::TooManyFields { limit: MAX_FIELDS }));
                }
                if fields.iter().any(|g| g.name == f.name) {
                    return Err(bad(SchemaProblem::FieldTwice {
                        name: f.name.clone(),
                    }));
                }
                fields.push(f);
            }
        }
        if dialect == Dialect::Ros1 {
            // ROS 1's built-in time types, as messages so a stamp reads the same as ROS 2's.
            for (name, prim) in [("time", Prim::U32), ("duration", Prim::I32)] {
                if !sections.iter().any(|(n, _)| n == name) {
                    sections.push((
                        name.into(),
                        ["sec", "nanosec"]
                            .iter()
                            .map(|f| RawField {
                                name: f.to_string(),
                                type_name: String::new(),
                                base: Some(Base::Prim(prim)),
                                count: Count::One,
                            })
                            .collect(),
                    ));
                }
            }
        }
        let index: HashMap<&str, usize> = sections
            .iter()
            .enumerate()
            .rev()
            .map(|(i, (n, _))| (n.as_str(), i))
            .collect();
        let mut types = Vec::with_capacity(sections.len());
        for (name, raw) in &sections {
            let mut fields = Vec::with_capacity(raw.len());
            for f in raw {
                let base = match &f.base {
                    Some(b) => b.clone(),
                    None => match index.get(f.type_name.as_str()) {
                        Some(&i) => Base::Msg(i),
                        None => {
                            return Err(DecodeProblem::MissingType {
                                type_name: root.clone(),
                                missing: f.type_name.clone(),
                            })
                        }
                    },
                };
                fields.push(Field {
                    name: f.name.clone(),
                    base,
                    count: f.count,
                });
            }
            types.push(MsgType {
                name: name.clone(),
                fields,
            });
        }
        let schema = Schema { types };
        schema.check_acyclic(&root)?;
        Ok(schema)
    }

    /// The root type.
    pub fn root(&self) -> &MsgType {
        &self.types[0]
    }

    fn check_acyclic(&self, root: &str) -> Result<(), DecodeProblem> {
        // 0 = unvisited, 1 = on the current path, 2 = done.
        fn visit(s: &Schema, t: usize, state: &mut [u8]) -> Result<(), usize> {
            match state[t] {
                1 => return Err(t),
                2 => return Ok(()),
                _ => {}
            }
            state[t] = 1;
            for f in &s.types[t].fields {
                if let Base::Msg(u) = f.base {
                    visit(s, u, state)?;
                }
            }
            state[t] = 2;
            Ok(())
        }
        let mut state = vec![0u8; self.types.len()];
        visit(self, 0, &mut state).map_err(|t| DecodeProblem::Recursive {
            type_name: root.to_string(),
            cycle: self.types[t].name.clone(),
        })
    }

    /// The fewest bytes one element of `base` takes on the wire (padding aside): what bounds a
    /// sequence's declared length by the bytes left.
    pub fn min_size(&self, base: &Base) -> usize {
        match base {
            Base::Prim(p) => p.size(),
            Base::String(_) | Base::WString(_) => 4,
            Base::Msg(t) => self.types[*t]
                .fields
                .iter()
                .map(|f| match f.count {
                    Count::One => self.min_size(&f.base),
                    Count::Fixed(n) => n.saturating_mul(self.min_size(&f.base)),
                    Count::Seq(_) => 4,
                })
                .fold(0usize, usize::saturating_add),
        }
    }
}

/// One line: `Ok(None)` for blank lines, comments and constants.
fn parse_line(
    line: &str,
    package: &str,
    dialect: Dialect,
) -> Result<Option<RawField>, SchemaProblem> {
    let t = line.trim();
    if t.is_empty() || t.starts_with('#') {
        return Ok(None);
    }
    let (ty, rest) =
        t.split_once(char::is_whitespace)
            .ok_or_else(|| SchemaProblem::NoFieldName {
                text: t.to_string(),
            })?;
    let rest = rest.trim_start();
    // A constant's value runs to the end of the line (a string constant may hold '#').
    let name_end = rest
        .find(|c: char| c.is_whitespace() || c == '=' || c == '#')
        .unwrap_or(rest.len());
    let (name, after) = rest.split_at(name_end);
    if after.trim_start().starts_with('=') {
        return Ok(None);
    }
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(SchemaProblem::BadFieldName {
            name: name.to_string(),
        });
    }
    let (elem, count) = match ty.find('[') {
        None => (ty, Count::One),
        Some(open) => {
            let inner = ty[open + 1..]
                .strip_suffix(']')
                .ok_or_else(|| SchemaProblem::UnclosedBracket { ty: ty.to_string() })?;
            let count = if inner.is_empty() {
                Count::Seq(None)
            } else if let Some(b) = inner.strip_prefix("<=") {
                Count::Seq(Some(parse_len(b, ty)?))
            } else {
                let n = parse_len(inner, ty)?;
                if n > MAX_FIXED_ARRAY {
                    return Err(SchemaProblem::FixedTooLong {
                        ty: ty.to_string(),
                        limit: MAX_FIXED_ARRAY,
                    });
                }
                Count::Fixed(n)
            };
            (&ty[..open], count)
        }
    };
    let prim = |p| Some(Base::Prim(p));
    let base = match elem {
        "bool" => prim(Prim::Bool),
        "byte" if dialect == Dialect::Ros1 => prim(Prim::I8),
        "byte" | "char" | "uint8" => prim(Prim::U8),
        "int8" => prim(Prim::I8),
        "int16" => prim(Prim::I16),
        "uint16" => prim(Prim::U16),
        "int32" => prim(Prim::I32),
        "uint32" => prim(Prim::U32),
        "int64" => prim(Prim::I64),
        "uint64" => prim(Prim::U64),
        "float32" => prim(Prim::F32),
        "float64" => prim(Prim::F64),
        "string" => Some(Base::String(None)),
        s if dialect == Dialect::Ros1 && (s == "wstring" || s.starts_with("wstring<=")) => {
            return Err(SchemaProblem::Ros1Wide { ty: ty.to_string() })
        }
        "wstring" => Some(Base::WString(None)),
        s if s.starts_with("string<=") => Some(Base::String(Some(parse_len(&s[8..], ty)?))),
        s if s.starts_with("wstring<=") => Some(Base::WString(Some(parse_len(&s[9..], ty)?))),
        _ => None,
    };
    let type_name = match (&base, elem) {
        (Some(_), _) => String::new(),
        (None, "time" | "duration") if dialect == Dialect::Ros1 => elem.to_string(),
        (None, "Header") if dialect == Dialect::Ros1 => "std_msgs/Header".into(),
        (None, e) if e.contains('/') => normalize_type(e),
        (None, e) if !e.is_empty() && e.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
            format!("{package}/{e}")
        }
        (None, e) => {
            return Err(SchemaProblem::NotAType {
                name: e.to_string(),
            })
        }
    };
    Ok(Some(RawField {
        name: name.to_string(),
        type_name,
        base,
        count,
    }))
}

fn parse_len(s: &str, ty: &str) -> Result<usize, SchemaProblem> {
    s.trim().parse().map_err(|_| SchemaProblem::BadLength {
        ty: ty.to_string(),
        len: s.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const IMU: &str = "std_msgs/Header header\ngeometry_msgs/Quaternion orientation\n\
float64[9] orientation_covariance # comment\nint32 A=1\nstring S=has # inside\n\
================================================================================\n\
MSG: std_msgs/Header\nbuiltin_interfaces/Time stamp\nstring frame_id\n\
================================================================================\n\
MSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n\
================================================================================\n\
MSG: geometry_msgs/Quaternion\nfloat64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n";

    #[test]
    fn parses_nested_types_constants_and_defaults() {
        let s = Schema::parse("sensor_msgs/msg/Imu", IMU, Dialect::Ros2).unwrap();
        let root = s.root();
        assert_eq!(root.name, "sensor_msgs/Imu");
        let names: Vec<_> = root.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["header", "orientation", "orientation_covariance"]);
        assert_eq!(root.fields[2].count, Count::Fixed(9));
        let Base::Msg(h) = root.fields[0].base else {
            panic!("header is a message")
        };
        assert_eq!(s.types[h].name, "std_msgs/Header");
        assert_eq!(s.min_size(&Base::Msg(0)), 4 + 4 + 4 + 32 + 72);
    }

    #[test]
    fn ros1_header_and_time() {
        let text = "Header header\ntime t\nbyte b\n====\nMSG: std_msgs/Header\nuint32 seq\ntime stamp\nstring frame_id\n";
        let s = Schema::parse("pkg/M", text, Dialect::Ros1).unwrap();
        let Base::Msg(t) = s.root().fields[1].base else {
            panic!()
        };
        assert_eq!(s.types[t].name, "time");
        assert_eq!(s.root().fields[2].base, Base::Prim(Prim::I8));
    }

    #[test]
    fn wide_strings_in_ros2_only() {
        let text = "wstring a\nwstring<=8 b\nwstring[] c\nwstring<=4[<=2] d\nwstring[3] e\n";
        let s = Schema::parse("p/W", text, Dialect::Ros2).unwrap();
        let got: Vec<_> = s.root().fields.iter().map(|f| (&f.base, f.count)).collect();
        assert_eq!(
            got,
            [
                (&Base::WString(None), Count::One),
                (&Base::WString(Some(8)), Count::One),
                (&Base::WString(None), Count::Seq(None)),
                (&Base::WString(Some(4)), Count::Seq(Some(2))),
                (&Base::WString(None), Count::Fixed(3)),
            ]
        );
        assert_eq!(s.min_size(&Base::Msg(0)), 4 * 4 + 3 * 4);
        for line in ["wstring w\n", "wstring<=4[] w\n"] {
            let e = Schema::parse("p/W", line, Dialect::Ros1).unwrap_err();
            assert!(e.to_string().contains("ROS 1 has no wide strings"), "{e}");
        }
        // A message type whose name starts with "wstring" is still a message type.
        let s = Schema::parse(
            "p/W",
            "wstringy w\n===\nMSG: p/wstringy\nint8 x\n",
            Dialect::Ros1,
        );
        assert!(s.is_ok(), "{s:?}");
    }

    #[test]
    fn refuses_missing_and_recursive_types() {
        let e = Schema::parse("a/B", "a/C c\n", Dialect::Ros2).unwrap_err();
        assert!(matches!(e, DecodeProblem::MissingType { ref missing, .. } if missing == "a/C"));
        let e = Schema::parse("a/B", "C[] c\n===\nMSG: a/C\nB b\n", Dialect::Ros2).unwrap_err();
        assert!(matches!(e, DecodeProblem::Recursive { .. }), "{e}");
        let e = Schema::parse("a/B", "int32 x\nint32 x\n", Dialect::Ros2).unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
    }
}
