//! [`RemoteTrace`] and [`RemoteSensor`]: a trace's listing, each sensor's `meta.json` and
//! `ts`, read once on open.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::channel::RemoteChannel;
use super::fetch::read_whole;
use super::{RemoteError, TraceFiles};
use crate::format::meta::{ChannelFormat, SensorMeta, MAX_META_BYTES, META_FILE, TS_CHANNEL};
use crate::format::trace::CONFIG_FILE;

/// The most `ts` bytes a sensor may hold to be read in place (8 bytes a sample: 16 M samples,
/// 155 hours at 30 Hz).
pub const MAX_TS_BYTES: u64 = 128 << 20;

/// A trace opened in place: its files listed once.
pub struct RemoteTrace {
    files: Arc<dyn TraceFiles>,
    /// Every file, path relative to the trace -> size.
    sizes: Arc<BTreeMap<String, u64>>,
    /// Sensor directory names (holding `meta.json`), sorted, virtual ones included.
    names: Vec<String>,
}

impl RemoteTrace {
    /// Lists the trace's files (one listing request); a location with no `config.yaml` and no
    /// sensor is [`RemoteError::NoTrace`].
    pub fn open(files: Arc<dyn TraceFiles>) -> Result<RemoteTrace, RemoteError> {
        let listed = files.list().map_err(|error| RemoteError::Backend {
            location: files.location(),
            error,
        })?;
        let sizes: BTreeMap<String, u64> = listed.into_iter().collect();
        let mut names: Vec<String> = sizes
            .keys()
            .filter_map(|p| p.strip_suffix(&format!("/{META_FILE}")))
            .filter(|d| !d.is_empty() && !d.contains('/'))
            .map(str::to_string)
            .collect();
        names.sort();
        if names.is_empty() && !sizes.contains_key(CONFIG_FILE) {
            return Err(RemoteError::NoTrace {
                location: files.describe(),
            });
        }
        Ok(RemoteTrace {
            files,
            sizes: Arc::new(sizes),
            names,
        })
    }

    /// Where the trace is.
    pub fn location(&self) -> String {
        self.files.location()
    }

    /// Every file of the trace and its size, as listed on open.
    pub fn files(&self) -> &BTreeMap<String, u64> {
        &self.sizes
    }

    /// Names of the real (non-virtual) sensors, sorted.
    pub fn sensor_names(&self) -> Vec<&str> {
        self.names
            .iter()
            .filter(|n| !n.starts_with('_'))
            .map(String::as_str)
            .collect()
    }

    /// Names of every sensor, virtual ones (`_name`) included.
    pub fn all_sensor_names(&self) -> Vec<&str> {
        self.names.iter().map(String::as_str).collect()
    }

    /// Opens sensor `name`: reads its `meta.json` and `ts` (two requests).
    pub fn sensor(&self, name: &str) -> Result<RemoteSensor, RemoteError> {
        if !self.names.iter().any(|n| n == name) {
            return Err(RemoteError::NoSensor {
                location: self.location(),
                sensor: name.to_string(),
                known: self.names.join(", "),
            });
        }
        let meta_path = format!("{name}/{META_FILE}");
        let bytes = self.read_whole(&meta_path, MAX_META_BYTES, "meta.json")?;
        let shown = PathBuf::from(format!("{}/{meta_path}", self.location()));
        let meta = SensorMeta::parse(&bytes, &shown).map_err(RemoteError::Format)?;
        let ts_path = format!("{name}/{TS_CHANNEL}");
        let ts = if self.sizes.contains_key(&ts_path) {
            let b = self.read_whole(&ts_path, MAX_TS_BYTES, "ts channel")?;
            crate::format::dtype::decode_vec(&b[..b.len() / 8 * 8])
        } else {
            Vec::new()
        };
        Ok(RemoteSensor {
            files: self.files.clone(),
            sizes: self.sizes.clone(),
            name: name.to_string(),
            meta,
            ts,
        })
    }

    /// The trace's file `path` (relative to the trace, e.g. `_roverlog/events.jsonl`) whole:
    /// one request; `None` when the listing has no such file; refused over `limit` bytes.
    pub fn read_file(&self, path: &str, limit: u64) -> Result<Option<Vec<u8>>, RemoteError> {
        if !self.sizes.contains_key(path) {
            return Ok(None);
        }
        self.read_whole(path, limit, "file").map(Some)
    }

    /// File `path` whole (one request), refused over `limit` bytes.
    fn read_whole(
        &self,
        path: &str,
        limit: u64,
        what: &'static str,
    ) -> Result<Vec<u8>, RemoteError> {
        read_whole(&*self.files, &self.sizes, path, limit, what)
    }
}

/// A sensor opened in place: its `meta.json` and timestamps kept.
pub struct RemoteSensor {
    files: Arc<dyn TraceFiles>,
    sizes: Arc<BTreeMap<String, u64>>,
    name: String,
    meta: SensorMeta,
    ts: Vec<f64>,
}

impl RemoteSensor {
    /// The sensor's name (its directory's name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The parsed `meta.json`.
    pub fn meta(&self) -> &SensorMeta {
        &self.meta
    }

    /// Number of samples: whole `f8` values in `ts`.
    pub fn len(&self) -> u64 {
        self.ts.len() as u64
    }

    /// Whether the sensor holds no sample.
    pub fn is_empty(&self) -> bool {
        self.ts.is_empty()
    }

    /// The timestamps (epoch seconds), read on open.
    pub fn timestamps(&self) -> &[f64] {
        &self.ts
    }

    /// Bytes the channel's files take (data and index; a blob channel's files together).
    pub fn channel_bytes(&self, channel: &str) -> u64 {
        let prefix = format!("{}/{channel}", self.name);
        self.sizes
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .filter(|(p, _)| {
                let rest = &p[prefix.len()..];
                rest.is_empty() || rest == "_i" || rest.starts_with('/')
            })
            .map(|(_, n)| n)
            .sum()
    }

    /// Opens channel `name`: reads what its reads need (`lzmaf`: its index; `mjpg`: the
    /// video's header and `idx1`; `lzma`: nothing until the first read).
    pub fn channel(&self, name: &str) -> Result<RemoteChannel, RemoteError> {
        let ch = self.meta.get(name).ok_or_else(|| RemoteError::NoChannel {
            location: self.files.location(),
            sensor: self.name.clone(),
            channel: name.to_string(),
        })?;
        let expected = (name != TS_CHANNEL).then_some(self.len());
        match &ch.format {
            ChannelFormat::Other(f) => Err(RemoteError::UnsupportedFormat {
                file: format!("{}/{}/{name}", self.files.location(), self.name),
                format: f.clone(),
            }),
            _ => RemoteChannel::open(
                self.files.clone(),
                &self.sizes,
                &format!("{}/{name}", self.name),
                ch,
                expected,
            ),
        }
    }
}
