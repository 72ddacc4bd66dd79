//! Parsing one `.gmeta` file: `{"<id>": {"frame_info": [[offset, pad, length], ...],
//! "meta_data": [{...}, ...]}, ...}`.
//!
//! The file is untrusted. Everything is checked while it is deserialized, so nothing is ever
//! allocated for a frame list longer than the configured limit, only the first `meta_data`
//! element is kept, and a bad value is reported with the id it belongs to. Bounds against the
//! data file are checked by the caller, which knows the data file's size.

use std::fmt;
use std::path::Path;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::{Error, Result};

/// Where one frame's record lies in the data file, exactly as the `.gmeta` says.
///
/// `length` includes `pad` zero bytes appended so that each record is a multiple of 4 bytes;
/// the JPEG itself is `data[offset .. offset + length - pad]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameInfo {
    pub offset: u64,
    pub pad: u64,
    pub length: u64,
}

impl FrameInfo {
    /// Offset one past the record's last byte (padding included). Parsing guarantees that
    /// it does not overflow.
    pub fn end(&self) -> u64 {
        self.offset + self.length
    }

    /// Number of JPEG bytes (the record without its padding).
    pub fn jpeg_len(&self) -> u64 {
        self.length - self.pad
    }
}

/// One id of a `.gmeta` file, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct GmetaEntry {
    pub id: String,
    /// The first element of `meta_data` (what gulpio2 returns); `None` if the list was empty.
    pub meta: Option<Value>,
    pub frames: Vec<FrameInfo>,
}

/// Parses the bytes of a `.gmeta` file. `path` is only used in error messages.
///
/// JSON syntax errors become [`Error::Json`]; valid JSON with the wrong content (a negative
/// offset, `pad > length`, a frame list over `max_frames_per_id`, a duplicate id, ...) becomes
/// [`Error::Gulp`] naming the id. Ids keep the order of the file.
pub fn parse_gmeta(path: &Path, bytes: &[u8], max_frames_per_id: usize) -> Result<Vec<GmetaEntry>> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = FileSeed { max_frames_per_id }
        .deserialize(&mut de)
        .and_then(|entries| de.end().map(|()| entries));
    parsed.map_err(|e| match e.classify() {
        serde_json::error::Category::Data => Error::Gulp {
            path: path.to_owned(),
            problem: Box::new(crate::error::GulpProblem::BadMeta(e)),
        },
        _ => Error::Json {
            path: path.to_owned(),
            error: e,
        },
    })
}

/// The whole file: a map from id to entry.
struct FileSeed {
    max_frames_per_id: usize,
}

impl<'de> DeserializeSeed<'de> for FileSeed {
    type Value = Vec<GmetaEntry>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for FileSeed {
    type Value = Vec<GmetaEntry>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object mapping video ids to {frame_info, meta_data}")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries: Vec<GmetaEntry> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        while let Some(id) = map.next_key::<String>()? {
            if !seen.insert(id.clone()) {
                return Err(de::Error::custom(format_args!(
                    "id {id:?} appears twice in this file"
                )));
            }
            let entry = map.next_value_seed(EntrySeed {
                id: &id,
                max_frames: self.max_frames_per_id,
            })?;
            entries.push(entry);
        }
        Ok(entries)
    }
}

/// One id's value: `{"frame_info": [...], "meta_data": [...]}`; other keys are ignored.
struct EntrySeed<'a> {
    id: &'a str,
    max_frames: usize,
}

impl<'de> DeserializeSeed<'de> for EntrySeed<'_> {
    type Value = GmetaEntry;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EntrySeed<'_> {
    type Value = GmetaEntry;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "id {:?}: an object with frame_info and meta_data",
            self.id
        )
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let id = self.id;
        let mut frames = None;
        let mut meta = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "frame_info" if frames.is_none() => {
                    frames = Some(map.next_value_seed(FramesSeed {
                        id,
                        max: self.max_frames,
                    })?)
                }
                "meta_data" if meta.is_none() => meta = Some(map.next_value_seed(MetaSeed { id })?),
                "frame_info" | "meta_data" => {
                    return Err(de::Error::custom(format_args!(
                        "id {id:?}: {key} given twice"
                    )))
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let frames =
            frames.ok_or_else(|| de::Error::custom(format_args!("id {id:?}: no frame_info")))?;
        let meta =
            meta.ok_or_else(|| de::Error::custom(format_args!("id {id:?}: no meta_data")))?;
        Ok(GmetaEntry {
            id: id.to_owned(),
            meta,
            frames,
        })
    }
}

/// `frame_info`: a list of `[offset, pad, length]`, at most `max` long.
struct FramesSeed<'a> {
    id: &'a str,
    max: usize,
}

impl<'de> DeserializeSeed<'de> for FramesSeed<'_> {
    type Value = Vec<FrameInfo>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for FramesSeed<'_> {
    type Value = Vec<FrameInfo>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "id {:?}: frame_info as a list of [offset, pad, length]",
            self.id
        )
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let id = self.id;
        // The size hint comes from the untrusted input: grow as elements actually arrive.
        let mut frames = Vec::new();
        let mut index = 0usize;
        while let Some(raw) = seq.next_element::<RawTriple>()? {
            if frames.len() == self.max {
                return Err(de::Error::custom(format_args!(
                    "id {id:?}: more than {} frames (the configured limit)",
                    self.max
                )));
            }
            let [offset, pad, length] = match raw.0 {
                Ok(v) => v,
                Err(why) => {
                    return Err(de::Error::custom(format_args!(
                        "id {id:?}: frame_info[{index}]: {why}"
                    )))
                }
            };
            if pad > length {
                return Err(de::Error::custom(format_args!(
                    "id {id:?}: frame_info[{index}]: pad {pad} is larger than length {length}"
                )));
            }
            if offset.checked_add(length).is_none() {
                return Err(de::Error::custom(format_args!(
                    "id {id:?}: frame_info[{index}]: offset {offset} + length {length} overflows"
                )));
            }
            frames.push(FrameInfo {
                offset,
                pad,
                length,
            });
            index += 1;
        }
        Ok(frames)
    }
}

/// One `[offset, pad, length]`, or why it is not one (kept as a value so that the caller can
/// name the id and index).
struct RawTriple(Result<[u64; 3], &'static str>);

impl<'de> de::Deserialize<'de> for RawTriple {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TripleVisitor)
    }
}

struct TripleVisitor;

impl<'de> Visitor<'de> for TripleVisitor {
    type Value = RawTriple;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("[offset, pad, length]")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawTriple, A::Error> {
        let mut out = [0u64; 3];
        let mut bad = None;
        let mut n = 0usize;
        while let Some(v) = seq.next_element::<RawInt>()? {
            match (n < 3, v.0) {
                (true, Ok(x)) => out[n] = x,
                (true, Err(why)) => bad = bad.or(Some(why)),
                (false, _) => bad = bad.or(Some("has more than 3 elements")),
            }
            n += 1;
        }
        if n < 3 {
            bad = bad.or(Some("has fewer than 3 elements"));
        }
        Ok(RawTriple(bad.map_or(Ok(out), Err)))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<RawTriple, E> {
        Ok(RawTriple(Err("is not a list")))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<RawTriple, E> {
        Ok(RawTriple(Err("is not a list")))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<RawTriple, E> {
        Ok(RawTriple(Err("is not a list")))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<RawTriple, E> {
        Ok(RawTriple(Err("is not a list")))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<RawTriple, E> {
        Ok(RawTriple(Err("is not a list")))
    }
    fn visit_unit<E: de::Error>(self) -> Result<RawTriple, E> {
        Ok(RawTriple(Err("is not a list")))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawTriple, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(RawTriple(Err("is not a list")))
    }
}

/// A non-negative integer that fits in u64, or why not.
struct RawInt(Result<u64, &'static str>);

impl<'de> de::Deserialize<'de> for RawInt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IntVisitor)
    }
}

struct IntVisitor;

const NOT_INT: &str = "holds a value that is not a non-negative integer";

impl<'de> Visitor<'de> for IntVisitor {
    type Value = RawInt;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a non-negative integer")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawInt, E> {
        Ok(RawInt(Ok(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawInt, E> {
        Ok(RawInt(
            u64::try_from(v).map_err(|_| "holds a negative number"),
        ))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<RawInt, E> {
        Ok(RawInt(Err(NOT_INT)))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<RawInt, E> {
        Ok(RawInt(Err(NOT_INT)))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<RawInt, E> {
        Ok(RawInt(Err(NOT_INT)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<RawInt, E> {
        Ok(RawInt(Err(NOT_INT)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawInt, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(RawInt(Err(NOT_INT)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawInt, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(RawInt(Err(NOT_INT)))
    }
}

/// `meta_data`: a list whose first element is kept; the rest are skipped unallocated.
struct MetaSeed<'a> {
    id: &'a str,
}

impl<'de> DeserializeSeed<'de> for MetaSeed<'_> {
    type Value = Option<Value>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for MetaSeed<'_> {
    type Value = Option<Value>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "id {:?}: meta_data as a list", self.id)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let first = seq.next_element::<Value>()?;
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Vec<GmetaEntry>> {
        parse_gmeta(Path::new("meta_0.gmeta"), s.as_bytes(), 10)
    }

    #[test]
    fn keeps_file_order_and_first_meta() {
        let e = parse(
            r#"{"b": {"frame_info": [[0, 1, 8]], "meta_data": [{"x": 1}, {"x": 2}]},
                "a": {"meta_data": [], "frame_info": [], "extra": {"y": [1]}}}"#,
        )
        .unwrap();
        assert_eq!(e[0].id, "b");
        assert_eq!(e[0].meta, Some(serde_json::json!({"x": 1})));
        assert_eq!(e[0].frames[0].jpeg_len(), 7);
        assert_eq!(e[1].id, "a");
        assert_eq!(e[1].meta, None);
    }

    #[test]
    fn bad_values_name_the_id_and_frame() {
        for (json, want) in [
            (
                r#"{"v": {"frame_info": [[0, 9, 8]], "meta_data": []}}"#,
                "pad 9 is larger",
            ),
            (
                r#"{"v": {"frame_info": [[0, -1, 8]], "meta_data": []}}"#,
                "negative",
            ),
            (
                r#"{"v": {"frame_info": [[0, 1]], "meta_data": []}}"#,
                "fewer than 3",
            ),
            (
                r#"{"v": {"frame_info": [[0, 1, 2, 3]], "meta_data": []}}"#,
                "more than 3",
            ),
            (
                r#"{"v": {"frame_info": [[0, 1.5, 8]], "meta_data": []}}"#,
                "not a non-negative",
            ),
            (
                r#"{"v": {"frame_info": ["x"], "meta_data": []}}"#,
                "not a list",
            ),
            (
                r#"{"v": {"frame_info": [[18446744073709551615, 0, 2]], "meta_data": []}}"#,
                "overflows",
            ),
            (r#"{"v": {"meta_data": []}}"#, "no frame_info"),
            (r#"{"v": {"frame_info": []}}"#, "no meta_data"),
            (
                r#"{"v": {"frame_info": [], "meta_data": []}, "v": 1}"#,
                "appears twice",
            ),
        ] {
            let err = parse(json).unwrap_err();
            let msg = err.to_string();
            assert!(matches!(err, Error::Gulp { .. }), "{json}: {msg}");
            assert!(msg.contains("meta_0.gmeta"), "{msg}");
            assert!(msg.contains(want), "{json}: {msg}");
            if !want.contains("twice") {
                assert!(msg.contains("\"v\""), "{msg}");
            }
        }
    }

    #[test]
    fn frame_limit_is_enforced() {
        let frames = ["[0,0,4]"; 11].join(",");
        let json = format!(r#"{{"v": {{"frame_info": [{frames}], "meta_data": []}}}}"#);
        let msg = parse(&json).unwrap_err().to_string();
        assert!(msg.contains("more than 10 frames"), "{msg}");
    }

    #[test]
    fn syntax_errors_are_json_errors() {
        assert!(matches!(parse("{\"v\": "), Err(Error::Json { .. })));
        assert!(matches!(parse("{} x"), Err(Error::Json { .. })));
        assert!(matches!(parse("[]"), Err(Error::Gulp { .. })));
    }
}
