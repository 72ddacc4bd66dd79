//! The daemon's configuration: one JSON document, every key optional, defaults that make
//! `roverlog daemon` with no arguments a working logger (data under `./data`, sockets under
//! `./run`). `config/README.md` documents every key; keep the two in step.
//!
//! Two steps, as ripgrep treats its flags: serde reads the document into [`RawConfig`]
//! (`raw`: keys, defaults, unknown keys refused), and [`Config::try_from`] turns it into
//! typed sections, each checking its own keys and turning text into values (`fsync` into a
//! [`FsyncPolicy`], `socket_mode` into bits, listen addresses into `SocketAddr`s, format
//! overrides into formats, milliseconds into `Duration`s). A `Config` is valid by
//! construction; the daemon's modules read its sections and never see the document.
//!
//! - `sockets`: [`Sockets`]. `ingest`: [`Ingest`], queues and limits.
//! - `durability`: [`Durability`], [`FsyncPolicy`]. `storage`: [`Storage`], how channels are
//!   stored (buffers, direct I/O, compression, format overrides, `ts_recv`).
//! - `recording`: [`Recording`] (data root, start, disk guard, shutdown bounds),
//!   [`Rotation`], [`Snapshot`]. `health`: [`Health`], the alarms.
//! - `viewers`: [`Http`] (dashboard), [`FoxgloveFeed`]. `knobs`: [`TestKnobs`], keys only
//!   the `test-knobs` feature knows. `offload`: [`Offload`], the background offload job.
//!
//! Dependencies point one way: `mod` → sections → `raw`.

mod durability;
mod health;
mod ingest;
mod knobs;
mod offload;
#[cfg(test)]
mod problem_texts;
mod raw;
mod recording;
mod sockets;
mod storage;
mod viewers;

use std::path::Path;

use serde::{Serialize, Serializer};

use crate::error::{Error, Result};

pub use durability::{Durability, FsyncPolicy, MAX_BLOB_SYNC_THREADS};
pub use health::Health;
pub use ingest::Ingest;
pub use knobs::{TestKnobs, TEST_KNOB_KEYS};
pub use offload::{Offload, OffloadWhen};
pub use raw::{QueuePolicy, RawConfig, RawOffload, SensorHealth};
pub use recording::{validate_label, Recording, Rotation, Snapshot};
pub use sockets::Sockets;
pub use storage::{Storage, RECEIVE_TS_CHANNEL};
pub use viewers::{split_host, AllowedHost, FoxgloveFeed, Http, MIN_TOKEN_CHARS};

/// The daemon's configuration, checked and typed (see `config/README.md`). Built only from
/// a [`RawConfig`]; serializes as that document (`--print-config`, each trace's
/// `config.yaml`), so change a setting in the document and convert again, never here.
#[derive(Debug, Clone)]
pub struct Config {
    pub sockets: Sockets,
    pub recording: Recording,
    pub rotation: Rotation,
    pub ingest: Ingest,
    pub durability: Durability,
    pub storage: Storage,
    pub snapshot: Snapshot,
    pub health: Health,
    pub http: Http,
    pub foxglove: FoxgloveFeed,
    /// `None`: no offload.
    pub offload: Option<Offload>,
    pub test_knobs: TestKnobs,
    /// The document this was built from.
    document: RawConfig,
}

impl TryFrom<RawConfig> for Config {
    type Error = Error;

    /// Checks values that serde cannot (ranges, names, relations between keys) and types
    /// them; the first fault found is the error.
    fn try_from(raw: RawConfig) -> Result<Config> {
        Ok(Config {
            sockets: Sockets::from_raw(&raw)?,
            ingest: Ingest::from_raw(&raw)?,
            durability: Durability::from_raw(&raw)?,
            storage: Storage::from_raw(&raw)?,
            recording: Recording::from_raw(&raw)?,
            rotation: Rotation::from_raw(&raw),
            snapshot: Snapshot::from_raw(&raw)?,
            health: Health::from_raw(&raw)?,
            http: Http::from_raw(&raw)?,
            foxglove: FoxgloveFeed::from_raw(&raw)?,
            offload: Offload::from_raw(&raw)?,
            test_knobs: TestKnobs::from_raw(&raw),
            document: raw,
        })
    }
}

impl Config {
    /// Reads and checks a JSON config file.
    pub fn load(path: &Path) -> Result<Config> {
        Config::try_from(RawConfig::load(path)?)
    }

    /// The document this configuration was built from, every key with its value.
    pub fn document(&self) -> &RawConfig {
        &self.document
    }
}

impl Default for Config {
    fn default() -> Self {
        Config::try_from(RawConfig::default()).expect("the defaults are valid")
    }
}

impl Serialize for Config {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.document.serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        let cfg = Config::try_from(RawConfig::default()).unwrap();
        assert_eq!(cfg.sockets.mode, 0o660);
        assert_eq!(cfg.recording.data_root, Path::new("./data"));
        assert_eq!(cfg.http.listen, None);
    }

    #[test]
    fn unknown_keys_are_refused() {
        let e = serde_json::from_str::<RawConfig>(r#"{"queue_byte": 5}"#).unwrap_err();
        assert!(
            e.to_string().starts_with("unknown field `queue_byte`"),
            "{e}"
        );
    }

    #[test]
    fn a_config_prints_as_the_document_it_came_from() {
        let text = r#"{"socket_mode": "0o600", "fsync": "on_request", "fsync_interval_ms": 0,
            "http_listen": "[::1]:0", "formats": {"lidar": {"rng": "lzmaf"}}}"#;
        let raw: RawConfig = serde_json::from_str(text).unwrap();
        let cfg = Config::try_from(raw.clone()).unwrap();
        assert_eq!(
            serde_json::to_value(&cfg).unwrap(),
            serde_json::to_value(&raw).unwrap()
        );
        let printed = serde_json::to_value(&cfg).unwrap();
        assert_eq!(printed["socket_mode"], "0o600");
        assert_eq!(printed["fsync_interval_ms"], 0);
    }

    #[test]
    fn a_bad_value_is_the_error_of_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        std::fs::write(&path, r#"{"fsync": "sometimes"}"#).unwrap();
        let e = Config::load(&path).unwrap_err().to_string();
        assert_eq!(
            e,
            r#"config: fsync "sometimes" (expected "periodic" or "on_request")"#
        );
        std::fs::write(&path, r#"{"fsync": 1}"#).unwrap();
        let e = Config::load(&path).unwrap_err();
        assert!(
            matches!(e, Error::Core(roverlog_core::Error::Json { .. })),
            "{e}"
        );
    }

    #[test]
    fn example_and_readme_document_every_key() {
        let example = include_str!("../../../../config/roverlog.example.json");
        let readme = include_str!("../../../../config/README.md");
        // The example must load in every build, so it holds no test knob.
        let parsed: RawConfig = serde_json::from_str(example).unwrap();
        Config::try_from(parsed).unwrap();
        let example: serde_json::Value = serde_json::from_str(example).unwrap();
        let defaults = serde_json::to_value(RawConfig::default()).unwrap();
        for key in defaults.as_object().unwrap().keys() {
            if !TEST_KNOB_KEYS.contains(&key.as_str()) {
                assert!(example.get(key).is_some(), "{key} missing from the example");
            }
            assert!(
                readme.contains(&format!("| `{key}` |")),
                "{key} missing from README"
            );
        }
        for key in TEST_KNOB_KEYS {
            assert!(example.get(key).is_none(), "{key} is in the example");
            assert!(
                readme.contains(&format!("| `{key}` |")),
                "{key} missing from README"
            );
        }
    }
}
