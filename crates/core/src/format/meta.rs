//! `meta.json`: a sensor's channels (name -> format, type, shape, description), name rules,
//! and the atomic write.
//!
//! `meta.json` is untrusted input (it may come from any tool or a damaged disk), so it is read
//! with a size limit and every field is checked before anything is opened.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::dtype::DType;
use crate::error::{ChannelSpecProblem, Error, IoContext, MetaProblem, Result};

/// The file holding a sensor's channel descriptions.
pub const META_FILE: &str = "meta.json";
/// The timestamp channel every sensor has: `raw`, `f8`, `[]`, epoch seconds.
pub const TS_CHANNEL: &str = "ts";
/// Largest `meta.json` we read.
pub const MAX_META_BYTES: u64 = 1 << 20;
/// Most channels one sensor may declare.
pub const MAX_CHANNELS: usize = 1024;
/// Most dimensions of a channel's per-sample shape.
pub const MAX_NDIM: usize = 32;
/// Largest single sample of a fixed-size channel (1 GiB).
pub const MAX_SAMPLE_BYTES: usize = 1 << 30;

/// How a channel's samples are stored on disk.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ChannelFormat {
    /// Samples back to back, uncompressed.
    Raw,
    /// The whole file is one `.xz` container (read-only here: not appendable).
    Lzma,
    /// Each sample its own `.xz` container, with a `<name>_i` offset index.
    Lzmaf,
    /// A directory with one file per sample, `000000.<ext>`; the string is the extension
    /// (`jpg`, `npz`). Samples are variable-size.
    Blob(String),
    /// MJPEG video in one AVI file (upstream's camera `video.avi`); samples are JPEG frames.
    Mjpg,
    /// A format we do not read; kept so such a `meta.json` still parses and is written back
    /// unchanged.
    Other(String),
}

impl ChannelFormat {
    /// Parses the `format` field.
    pub fn parse(s: &str) -> ChannelFormat {
        match s {
            "raw" => ChannelFormat::Raw,
            "lzma" => ChannelFormat::Lzma,
            "lzmaf" => ChannelFormat::Lzmaf,
            "jpg" | "npz" => ChannelFormat::Blob(s.to_string()),
            "mjpg" => ChannelFormat::Mjpg,
            other => ChannelFormat::Other(other.to_string()),
        }
    }

    /// The name as written in `meta.json`.
    pub fn as_str(&self) -> &str {
        match self {
            ChannelFormat::Raw => "raw",
            ChannelFormat::Lzma => "lzma",
            ChannelFormat::Lzmaf => "lzmaf",
            ChannelFormat::Mjpg => "mjpg",
            ChannelFormat::Blob(s) | ChannelFormat::Other(s) => s,
        }
    }

    /// Whether every sample has exactly `prod(shape) * itemsize` bytes.
    pub fn is_fixed_size(&self) -> bool {
        matches!(
            self,
            ChannelFormat::Raw | ChannelFormat::Lzma | ChannelFormat::Lzmaf
        )
    }
}

/// One channel's description.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelMeta {
    pub format: ChannelFormat,
    pub dtype: DType,
    /// Per-sample shape; `[]` for a scalar.
    pub shape: Vec<usize>,
    pub desc: String,
    /// Upstream's optional `args` object, kept verbatim.
    pub args: Option<Map<String, Value>>,
}

impl ChannelMeta {
    /// A channel description with no `args`.
    pub fn new(format: ChannelFormat, dtype: DType, shape: Vec<usize>, desc: &str) -> Self {
        ChannelMeta {
            format,
            dtype,
            shape,
            desc: desc.to_string(),
            args: None,
        }
    }

    /// The `ts` channel's description.
    pub fn timestamps() -> Self {
        ChannelMeta::new(
            ChannelFormat::Raw,
            DType::F8,
            vec![],
            "epoch time in seconds",
        )
    }

    /// Bytes of one decoded sample: `prod(shape) * itemsize` (checked against
    /// [`MAX_SAMPLE_BYTES`] when the meta was parsed or validated, for fixed-size formats;
    /// saturates for the others, whose declared shape nothing checks).
    pub fn sample_bytes(&self) -> usize {
        self.shape
            .iter()
            .fold(self.dtype.itemsize(), |acc, &d| acc.saturating_mul(d))
    }

    fn checked_sample_bytes(&self) -> Option<usize> {
        self.shape
            .iter()
            .try_fold(self.dtype.itemsize(), |acc, &d| acc.checked_mul(d))
            .filter(|&n| n > 0 && n <= MAX_SAMPLE_BYTES)
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("format".into(), self.format.as_str().into());
        m.insert("type".into(), self.dtype.code().into());
        m.insert("shape".into(), self.shape.clone().into());
        m.insert("desc".into(), self.desc.clone().into());
        if let Some(args) = &self.args {
            m.insert("args".into(), Value::Object(args.clone()));
        }
        Value::Object(m)
    }
}

/// A sensor's `meta.json`: its channels in declared order (`ts` included when present).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SensorMeta {
    pub channels: Vec<(String, ChannelMeta)>,
}

impl SensorMeta {
    /// The channel named `name`.
    pub fn get(&self, name: &str) -> Option<&ChannelMeta> {
        self.channels
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c)
    }

    /// The data channels (all but `ts`), in declared order.
    pub fn data_channels(&self) -> impl Iterator<Item = (&str, &ChannelMeta)> {
        self.channels
            .iter()
            .filter(|(n, _)| n != TS_CHANNEL)
            .map(|(n, c)| (n.as_str(), c))
    }

    /// Reads and validates `<dir>/meta.json`.
    pub fn read(dir: &Path) -> Result<SensorMeta> {
        let path = dir.join(META_FILE);
        let bytes = crate::io::read_limited_required(&path, MAX_META_BYTES, "sensor metadata")?;
        SensorMeta::parse(&bytes, &path)
    }

    /// Parses `meta.json` bytes; `path` is only used in error messages.
    pub fn parse(bytes: &[u8], path: &Path) -> Result<SensorMeta> {
        let invalid = |problem| Error::InvalidMeta {
            path: path.to_path_buf(),
            problem: Box::new(problem),
        };
        let value: Value = serde_json::from_slice(bytes).map_err(|error| Error::Json {
            path: path.to_path_buf(),
            error,
        })?;
        let Value::Object(obj) = value else {
            return Err(invalid(MetaProblem::NotObject));
        };
        if obj.len() > MAX_CHANNELS {
            return Err(invalid(MetaProblem::TooManyChannels {
                channels: obj.len(),
                limit: MAX_CHANNELS,
            }));
        }
        let mut channels = Vec::with_capacity(obj.len());
        for (name, spec) in obj {
            let ch = parse_channel(&spec).map_err(|problem| Error::InvalidChannel {
                path: path.to_path_buf(),
                channel: name.clone(),
                problem,
            })?;
            channels.push((name, ch));
        }
        let meta = SensorMeta { channels };
        meta.check().map_err(invalid)?;
        Ok(meta)
    }

    /// Checks names, shapes, sizes and the `ts` channel, and that no two channels would use
    /// the same file (`x_i` next to an `lzmaf` channel `x`).
    pub fn validate(&self) -> Result<()> {
        self.check().map_err(|problem| match problem {
            MetaProblem::Name { kind, name, reason } => Error::InvalidName { kind, name, reason },
            problem => Error::InvalidMeta {
                path: PathBuf::from(META_FILE),
                problem: Box::new(problem),
            },
        })
    }

    /// [`SensorMeta::validate`]'s checks, as the problem found first.
    fn check(&self) -> std::result::Result<(), MetaProblem> {
        if self.channels.len() > MAX_CHANNELS {
            return Err(MetaProblem::TooManyChannels {
                channels: self.channels.len(),
                limit: MAX_CHANNELS,
            });
        }
        for (i, (name, ch)) in self.channels.iter().enumerate() {
            if let Some(reason) = name_problem("channel", name) {
                return Err(MetaProblem::Name {
                    kind: "channel",
                    name: name.clone(),
                    reason,
                });
            }
            if self.channels[..i].iter().any(|(n, _)| n == name) {
                return Err(MetaProblem::DeclaredTwice {
                    channel: name.clone(),
                });
            }
            if ch.shape.len() > MAX_NDIM {
                return Err(MetaProblem::TooManyDims {
                    channel: name.clone(),
                    ndim: ch.shape.len(),
                    limit: MAX_NDIM,
                });
            }
            if ch.format.is_fixed_size() && ch.checked_sample_bytes().is_none() {
                return Err(MetaProblem::SampleBytes {
                    channel: name.clone(),
                    shape: ch.shape.clone(),
                    dtype: ch.dtype.code(),
                    limit: MAX_SAMPLE_BYTES,
                });
            }
            if name == TS_CHANNEL && *ch != ChannelMeta::timestamps() {
                let ok =
                    ch.format == ChannelFormat::Raw && ch.dtype == DType::F8 && ch.shape.is_empty();
                if !ok {
                    return Err(MetaProblem::TsChannel {
                        format: ch.format.as_str().to_string(),
                        dtype: ch.dtype.code(),
                        shape: ch.shape.clone(),
                    });
                }
            }
            if ch.format == ChannelFormat::Lzmaf {
                let index = format!("{name}_i");
                if self.get(&index).is_some() {
                    return Err(MetaProblem::IndexCollision {
                        index,
                        channel: name.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    /// Serialises as upstream writes it: one object, channels in declared order.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        let obj: Map<String, Value> = self
            .channels
            .iter()
            .map(|(n, c)| (n.clone(), c.to_json()))
            .collect();
        let mut out = serde_json::to_vec_pretty(&Value::Object(obj)).expect("JSON of a map");
        out.push(b'\n');
        out
    }

    /// Writes `<dir>/meta.json` atomically: a temporary file, fsync, rename, fsync of `dir`.
    /// A crash leaves either the old or the new file, never a torn one. What is written is
    /// [`SensorMeta::for_disk`]: upstream must be able to open it.
    pub fn write_atomic(&self, dir: &Path) -> Result<()> {
        self.validate()?;
        write_file_atomic(&dir.join(META_FILE), &self.for_disk().to_json_bytes())
    }

    /// These channels as `meta.json` holds them: without the `args` keys only roverlog's
    /// writers read ([`WRITER_ONLY_ARGS`]), and without an `args` left empty. Upstream
    /// passes a channel's `args` to its channel class as keyword arguments, and a key the
    /// class does not take makes the whole trace unreadable there.
    pub fn for_disk(&self) -> SensorMeta {
        let mut m = self.clone();
        for (_, ch) in &mut m.channels {
            if let Some(args) = &mut ch.args {
                for k in WRITER_ONLY_ARGS {
                    args.remove(*k);
                }
                if args.is_empty() {
                    ch.args = None;
                }
            }
        }
        m
    }
}

/// `args` keys roverlog's writers take and upstream's channel classes do not: `fps`, the
/// frame rate a new MJPEG file's header gets (`ts` is the truth for time). A driver or a
/// converter may pass them; [`SensorMeta::write_atomic`] leaves them out of `meta.json`.
pub const WRITER_ONLY_ARGS: &[&str] = &["fps"];

/// One channel's description; the caller names the channel in the error.
fn parse_channel(spec: &Value) -> std::result::Result<ChannelMeta, ChannelSpecProblem> {
    let Value::Object(o) = spec else {
        return Err(ChannelSpecProblem::NotObject);
    };
    let field = |k: &str| o.get(k);
    let missing = |key, expected| ChannelSpecProblem::Missing { key, expected };
    let format = match field("format") {
        Some(Value::String(s)) => ChannelFormat::parse(s),
        _ => return Err(missing("format", "a string")),
    };
    let dtype = match field("type") {
        Some(Value::String(s)) => {
            DType::parse(s).map_err(|e| ChannelSpecProblem::Type(Box::new(e)))?
        }
        _ => return Err(missing("type", "a string")),
    };
    let shape = match field("shape") {
        Some(Value::Array(dims)) => dims
            .iter()
            .map(|d| {
                d.as_u64()
                    .and_then(|d| usize::try_from(d).ok())
                    .ok_or_else(|| ChannelSpecProblem::ShapeEntry(d.to_string()))
            })
            .collect::<std::result::Result<Vec<_>, _>>()?,
        _ => return Err(missing("shape", "a list")),
    };
    let desc = match field("desc").or_else(|| field("description")) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => {
            return Err(ChannelSpecProblem::NotA {
                key: "desc",
                expected: "a string",
            })
        }
    };
    let args = match field("args") {
        None | Some(Value::Null) => None,
        Some(Value::Object(a)) => Some(a.clone()),
        Some(_) => {
            return Err(ChannelSpecProblem::NotA {
                key: "args",
                expected: "an object",
            })
        }
    };
    Ok(ChannelMeta {
        format,
        dtype,
        shape,
        desc,
        args,
    })
}

/// Checks a sensor or channel name: non-empty, at most 255 bytes, no `/`, no NUL, no control
/// characters, not `.`/`..` nor containing `..`, not `meta.json`. Sensor names must also not
/// start with `_` (upstream reserves that for virtual sensors); use `kind = "virtual sensor"`
/// to allow it. A driver's sidecar file (`kind = "file"`, docs/protocol.md 2.6) must also not
/// start with `.`: those are the daemon's own (watermark, partial and temporary files). The
/// daemon and the Python `roverlog.Driver` both check sidecar names here.
pub fn validate_name(kind: &'static str, name: &str) -> Result<()> {
    match name_problem(kind, name) {
        Some(reason) => Err(Error::InvalidName {
            kind,
            name: name.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

/// Why `name` cannot be a `kind` name ([`validate_name`]), if it cannot.
fn name_problem(kind: &str, name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("empty");
    }
    if name.len() > 255 {
        return Some("longer than 255 bytes");
    }
    if name.contains('/') || name.contains('\\') {
        return Some("contains a path separator");
    }
    if name.contains("..") || name == "." {
        return Some("contains '..' or is '.'");
    }
    if name.chars().any(char::is_control) {
        return Some("contains a control character");
    }
    if name == META_FILE {
        return Some("is reserved (meta.json)");
    }
    if kind == "sensor" && name.starts_with('_') {
        return Some("starts with '_' (reserved for virtual sensors)");
    }
    if kind == "file" && name.starts_with('.') {
        return Some("starts with '.' (names starting with '.' are the daemon's own)");
    }
    None
}

/// Where [`write_file_atomic`] writes `path` before renaming it: `<path>..tmp`. The name
/// contains `..`, so no valid sensor or channel name (see [`validate_name`]) can be the same
/// file; a crash may leave it behind.
pub fn atomic_tmp_path(path: &Path) -> PathBuf {
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push("..tmp");
    path.with_file_name(tmp_name)
}

/// Writes `path` atomically: [`atomic_tmp_path`], fsync, rename over `path`, fsync the
/// directory.
pub fn write_file_atomic(path: &Path, contents: &[u8]) -> Result<()> {
    let dir = parent_dir(path);
    let tmp = atomic_tmp_path(path);
    {
        let mut f = fs::File::create(&tmp).at(&tmp)?;
        f.write_all(contents).at(&tmp)?;
        f.sync_all().at(&tmp)?;
    }
    fs::rename(&tmp, path).at(path)?;
    sync_dir(dir)
}

/// The directory holding `path`: `.` for a bare relative name (`Path::parent` gives `""`,
/// which no system call opens).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// fsyncs a directory so that entries created or renamed in it survive a power cut.
pub fn sync_dir(dir: &Path) -> Result<()> {
    fs::File::open(dir).and_then(|d| d.sync_all()).at(dir)
}

/// Like `fs::create_dir_all`, and every directory it creates is made durable (its parent is
/// fsynced after it): a power cut cannot take away a directory whose contents were
/// acknowledged as durable.
pub fn create_dir_all_durable(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dir_all_durable(parent)?;
    }
    match fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => return Ok(()),
        Err(e) => return Err(crate::Error::io(dir, e)),
    }
    sync_dir(parent_dir(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<SensorMeta> {
        SensorMeta::parse(s.as_bytes(), Path::new("x/meta.json"))
    }

    #[test]
    fn parses_upstream_meta_in_order() {
        let m = parse(
            r#"{"ts": {"format": "raw", "type": "f8", "shape": [], "description": "t"},
                "rng": {"format": "lzmaf", "type": "u2", "shape": [64, 2048], "desc": "range"},
                "video.avi": {"format": "mjpg", "type": "u1", "shape": [480, 640, 3], "desc": "",
                              "args": {"fps": 30}}}"#,
        )
        .unwrap();
        let names: Vec<_> = m.channels.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["ts", "rng", "video.avi"]);
        assert_eq!(m.get("ts").unwrap().desc, "t");
        assert_eq!(m.get("rng").unwrap().sample_bytes(), 64 * 2048 * 2);
        assert_eq!(m.get("video.avi").unwrap().format, ChannelFormat::Mjpg);
        let again = parse(std::str::from_utf8(&m.to_json_bytes()).unwrap()).unwrap();
        assert_eq!(again, m);
    }

    #[test]
    fn rejects_bad_meta_with_the_reason() {
        let cases = [
            (r#"[]"#, "expected a JSON object"),
            (
                r#"{"a": {"format": "raw", "type": "f5", "shape": []}}"#,
                "\"f5\"",
            ),
            (
                r#"{"a": {"format": "raw", "type": "f4", "shape": [-1]}}"#,
                "shape entry -1",
            ),
            (
                r#"{"a": {"format": "raw", "type": "f4", "shape": [3, 0]}}"#,
                "empty sample",
            ),
            (
                r#"{"a": {"format": "raw", "type": "f4"}}"#,
                "\"shape\" missing",
            ),
            (
                r#"{"ts": {"format": "raw", "type": "f4", "shape": []}}"#,
                "must be raw f8",
            ),
            (
                r#"{"a/b": {"format": "raw", "type": "f4", "shape": []}}"#,
                "path separator",
            ),
            (
                r#"{"..": {"format": "raw", "type": "f4", "shape": []}}"#,
                "'..'",
            ),
            (
                r#"{"meta.json": {"format": "raw", "type": "f4", "shape": []}}"#,
                "reserved",
            ),
            (
                r#"{"a": {"format": "raw", "type": "f8", "shape": [1048576, 1048576]}}"#,
                "over 1073741824 bytes",
            ),
            (
                r#"{"x": {"format": "lzmaf", "type": "u1", "shape": [4]},
                    "x_i": {"format": "raw", "type": "u1", "shape": [4]}}"#,
                "collides",
            ),
        ];
        for (json, want) in cases {
            let err = parse(json).unwrap_err().to_string();
            assert!(err.contains(want), "{json}: {err}");
            assert!(err.contains("meta.json"), "{err}");
        }
    }

    #[test]
    fn sensor_names() {
        assert!(validate_name("sensor", "imu").is_ok());
        assert!(validate_name("sensor", "_radar").is_err());
        assert!(validate_name("virtual sensor", "_radar").is_ok());
        assert!(validate_name("sensor", "a\nb").is_err());
    }

    #[test]
    fn oversized_or_missing_meta_json_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let err = SensorMeta::read(dir.path()).unwrap_err().to_string();
        assert!(err.contains("meta.json"), "{err}");
        fs::write(
            dir.path().join(META_FILE),
            vec![b' '; MAX_META_BYTES as usize + 1],
        )
        .unwrap();
        let err = SensorMeta::read(dir.path()).unwrap_err();
        assert!(matches!(err, Error::TooLarge { .. }), "{err}");
        assert!(err.to_string().contains("meta.json"), "{err}");
    }

    #[test]
    fn atomic_write_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let m = SensorMeta {
            channels: vec![("ts".into(), ChannelMeta::timestamps())],
        };
        m.write_atomic(dir.path()).unwrap();
        assert_eq!(SensorMeta::read(dir.path()).unwrap(), m);
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["meta.json"]);
    }

    /// Upstream opens a channel with `Class(path, dtype, shape, **args)`: an `fps` there
    /// (which only our MJPEG writer reads) made the whole trace unreadable upstream.
    #[test]
    fn writer_only_args_stay_out_of_meta_json() {
        let dir = tempfile::tempdir().unwrap();
        let m = parse(
            r#"{"ts": {"format": "raw", "type": "f8", "shape": [], "desc": "t"},
                "video.avi": {"format": "mjpg", "type": "u1", "shape": [4, 6, 3], "desc": "v",
                              "args": {"fps": 10}},
                "small.avi": {"format": "mjpg", "type": "u1", "shape": [4, 6, 3], "desc": "v",
                              "args": {"fps": 10, "interp": "area"}}}"#,
        )
        .unwrap();
        m.write_atomic(dir.path()).unwrap();
        let text = fs::read_to_string(dir.path().join(META_FILE)).unwrap();
        assert!(!text.contains("fps"), "{text}");
        let back = SensorMeta::read(dir.path()).unwrap();
        assert_eq!(back.get("video.avi").unwrap().args, None);
        let small = back.get("small.avi").unwrap().args.clone().unwrap();
        assert_eq!(small.len(), 1, "{small:?}");
        assert_eq!(small["interp"], "area");
        assert_eq!(back, m.for_disk());
        assert_ne!(back, m);
    }
}
