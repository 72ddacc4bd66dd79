//! Config section: how a sensor's channels are stored: write buffers, `O_DIRECT`, `lzmaf`
//! compression, per-channel format overrides and the daemon's receive-time channel. The
//! override map is parsed into formats here, so a writer never sees a format name it
//! cannot store.

use std::collections::BTreeMap;

use super::raw::RawConfig;
use crate::error::{ConfigProblem, Result};
use roverlog_core::format::{validate_name, ChannelFormat, ChannelMeta, DType, SensorMeta};

/// The channel the daemon records its receive time of every sample in (see
/// `receive_timestamps`).
pub const RECEIVE_TS_CHANNEL: &str = "ts_recv";

/// Keys `buffer_bytes`, `direct_io*`, `lzmaf_preset`, `compress_threads`,
/// `compress_inflight_bytes`, `lzmaf_store_above`, `formats`,
/// `receive_timestamps*` (config/README.md, "Recording", "Queues and limits", "Operations").
#[derive(Debug, Clone, PartialEq)]
pub struct Storage {
    /// User-space write buffer per channel file.
    pub buffer_bytes: usize,
    /// With `direct_io` on: `raw` channels whose samples have at least this many bytes are
    /// written with `O_DIRECT` (see `format::direct`); `None`: `direct_io` is off.
    pub direct_io_min_sample_bytes: Option<usize>,
    /// `.xz` preset (0-9) of `lzmaf` channels.
    pub lzmaf_preset: u32,
    /// Threads of the daemon's `lzmaf` compression pool, all sensors together (`0` in the
    /// file: every CPU the process may use, [`roverlog_core::cpus::usable`], resolved here).
    pub compress_threads: usize,
    /// The most bytes of `lzmaf` frames in the pool at once (see `crate::compress`).
    pub compress_inflight_bytes: usize,
    /// An `lzmaf` frame is stored uncompressed when more than this fraction of its sensor's
    /// queue budget waits behind it (in (0, 1]; 1: never).
    pub lzmaf_store_above: f64,
    /// `{"sensor": {"channel": format}}`: store a channel in another format than declared
    /// (only `raw`, `lzmaf` or `mjpg`).
    pub formats: BTreeMap<String, BTreeMap<String, ChannelFormat>>,
    /// Record the daemon's receive time of every sample in a `ts_recv` channel...
    pub receive_timestamps: bool,
    /// ...except for these sensors.
    pub receive_timestamps_except: Vec<String>,
}

impl Storage {
    pub(super) fn from_raw(raw: &RawConfig) -> Result<Storage> {
        for (k, v) in [
            ("buffer_bytes", raw.buffer_bytes),
            ("direct_io_min_sample_bytes", raw.direct_io_min_sample_bytes),
            (
                "compress_inflight_bytes",
                raw.compress_inflight_bytes as usize,
            ),
        ] {
            if v == 0 {
                return Err(ConfigProblem::NotPositive { keys: vec![k] }.into());
            }
        }
        if raw.lzmaf_preset > 9 {
            return Err(ConfigProblem::LzmafPreset {
                preset: raw.lzmaf_preset,
            }
            .into());
        }
        if !(raw.lzmaf_store_above > 0.0 && raw.lzmaf_store_above <= 1.0) {
            return Err(ConfigProblem::LzmafStoreAbove {
                fraction: raw.lzmaf_store_above,
            }
            .into());
        }
        let mut formats = BTreeMap::new();
        for (sensor, chans) in &raw.formats {
            validate_name("sensor", sensor)?;
            let mut parsed = BTreeMap::new();
            for (ch, f) in chans {
                validate_name("channel", ch)?;
                let format = ChannelFormat::parse(f);
                if !matches!(
                    format,
                    ChannelFormat::Raw | ChannelFormat::Lzmaf | ChannelFormat::Mjpg
                ) {
                    return Err(ConfigProblem::FormatOverride {
                        sensor: sensor.clone(),
                        channel: ch.clone(),
                        format: f.clone(),
                    }
                    .into());
                }
                parsed.insert(ch.clone(), format);
            }
            formats.insert(sensor.clone(), parsed);
        }
        Ok(Storage {
            buffer_bytes: raw.buffer_bytes,
            direct_io_min_sample_bytes: raw.direct_io.then_some(raw.direct_io_min_sample_bytes),
            lzmaf_preset: raw.lzmaf_preset,
            compress_threads: roverlog_core::cpus::threads(raw.compress_threads),
            compress_inflight_bytes: raw.compress_inflight_bytes as usize,
            lzmaf_store_above: raw.lzmaf_store_above,
            formats,
            receive_timestamps: raw.receive_timestamps,
            receive_timestamps_except: raw.receive_timestamps_except.clone(),
        })
    }

    /// The format a channel declared as `declared` is stored in: its override when one
    /// applies (fixed-size channels may be compressed, `jpg` frames may go into one `mjpg`
    /// video), else as declared (with a warning for an override that does not apply).
    pub fn stored_format(
        &self,
        sensor: &str,
        channel: &str,
        declared: &ChannelFormat,
    ) -> ChannelFormat {
        let Some(f) = self.format_override(sensor, channel) else {
            return declared.clone();
        };
        let applies = match f {
            ChannelFormat::Mjpg => *declared == ChannelFormat::Blob("jpg".into()),
            _ => declared.is_fixed_size(),
        };
        if applies {
            return f.clone();
        }
        tracing::warn!(
            sensor,
            channel,
            "format override {:?} does not apply to a {:?} channel; kept as declared",
            f.as_str(),
            declared.as_str()
        );
        declared.clone()
    }

    /// Adds the daemon's receive-time channel (`ts_recv`, raw `f8`) to a sensor's stored
    /// channels when it is on for `sensor` and the driver did not declare such a channel.
    pub fn add_receive_channel(&self, sensor: &str, meta: &mut SensorMeta) {
        let on =
            self.receive_timestamps && !self.receive_timestamps_except.iter().any(|s| s == sensor);
        if on && meta.get(RECEIVE_TS_CHANNEL).is_none() {
            meta.channels.push((
                RECEIVE_TS_CHANNEL.to_string(),
                ChannelMeta::new(
                    ChannelFormat::Raw,
                    DType::F8,
                    vec![],
                    "daemon receive time, epoch seconds (CLOCK_REALTIME when the frame was parsed)",
                ),
            ));
        }
    }

    /// The format override for one channel, if any.
    pub fn format_override(&self, sensor: &str, channel: &str) -> Option<&ChannelFormat> {
        self.formats.get(sensor).and_then(|m| m.get(channel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(raw: RawConfig) -> Result<Storage> {
        Storage::from_raw(&raw)
    }

    fn formats(sensor: &str, channel: &str, format: &str) -> RawConfig {
        let chans = BTreeMap::from([(channel.to_string(), format.to_string())]);
        RawConfig {
            formats: BTreeMap::from([(sensor.to_string(), chans)]),
            ..RawConfig::default()
        }
    }

    #[test]
    fn format_overrides_become_formats() {
        let s = convert(formats("lidar", "rng", "lzmaf")).unwrap();
        assert_eq!(
            s.format_override("lidar", "rng"),
            Some(&ChannelFormat::Lzmaf)
        );
        assert_eq!(s.format_override("lidar", "other"), None);
        let u2 = ChannelFormat::Raw;
        assert_eq!(s.stored_format("lidar", "rng", &u2), ChannelFormat::Lzmaf);
        let e = convert(formats("cam", "img", "jpg")).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"config: formats.cam.img: "jpg" (overrides may only be "raw", "lzmaf" or "mjpg")"#
        );
        let e = convert(formats("../x", "img", "raw")).unwrap_err();
        assert!(
            matches!(
                e,
                crate::Error::Core(roverlog_core::Error::InvalidName { kind: "sensor", .. })
            ),
            "{e}"
        );
    }

    #[test]
    fn direct_io_and_compression() {
        let off = convert(RawConfig::default()).unwrap();
        assert_eq!(off.direct_io_min_sample_bytes, None);
        assert_eq!(
            off.compress_threads,
            roverlog_core::cpus::usable(),
            "0 resolves to every usable CPU, no cap"
        );
        assert_eq!(off.compress_inflight_bytes, 64 << 20);
        let e = convert(RawConfig {
            compress_inflight_bytes: 0,
            ..RawConfig::default()
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "config: compress_inflight_bytes must be positive"
        );
        let on = convert(RawConfig {
            direct_io: true,
            direct_io_min_sample_bytes: 4096,
            compress_threads: 12,
            ..RawConfig::default()
        })
        .unwrap();
        assert_eq!(on.direct_io_min_sample_bytes, Some(4096));
        assert_eq!(on.compress_threads, 12);
        let e = convert(RawConfig {
            lzmaf_preset: 10,
            ..RawConfig::default()
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "config: lzmaf_preset must be 0..=9");
        assert_eq!(off.lzmaf_store_above, 0.5);
        for bad in [0.0, -1.0, 1.5, f64::NAN] {
            let e = convert(RawConfig {
                lzmaf_store_above: bad,
                ..RawConfig::default()
            })
            .unwrap_err();
            assert!(
                e.to_string()
                    .starts_with("config: lzmaf_store_above must be a fraction of the queue"),
                "{e}"
            );
        }
        let e = convert(RawConfig {
            direct_io_min_sample_bytes: 0,
            ..RawConfig::default()
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "config: direct_io_min_sample_bytes must be positive"
        );
    }
}
