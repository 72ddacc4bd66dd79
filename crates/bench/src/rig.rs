//! The red-rover rig (`UPSTREAM.md`, roverc's sensors) as a load: four streams with frames of
//! realistic content and size, each pushed into the daemon by its own driver process.
//!
//! | sensor | channels | rate |
//! | --- | --- | --- |
//! | `camera` | `video.avi` `mjpg` u1 `[1080, 1920, 3]` (JPEG frames of 150-400 KB) | 30 Hz |
//! | `lidar` | `rfl` u1, `nir` u2, `rng` u2 `[128, 2048]`, `lzmaf`; `lidar.json` beside them | 10 Hz |
//! | `radar` | `iq` i2 `[64, 3, 4, 512]` and `valid` u1 `[]`, `raw` | 20 Hz |
//! | `imu` | `rot`, `acc`, `avel` f4 `[3]`, `raw` | 100 Hz |
//!
//! The frames are made once ([`frames::write_pool`]) into a directory with a manifest
//! (`rig.json`) that both our driver processes ([`push`]) and the Python writers of
//! `scripts/bench/python_writer.py` (upstream `roverd`'s, or its stdlib imitation) read, so
//! both sides store the same samples. A stream's sample `i` is pool entry `i % pool` with the
//! timestamp `t0 + i / hz`: the rig's clock, however fast the daemon takes them.

pub mod frames;
pub mod push;

use roverlog_core::format::{ChannelFormat, ChannelMeta, DType, SensorMeta};

/// One of the rig's sensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Camera,
    Lidar,
    Radar,
    Imu,
}

/// Every stream, in the order they are started and reported.
pub const STREAMS: [Stream; 4] = [Stream::Camera, Stream::Lidar, Stream::Radar, Stream::Imu];

impl Stream {
    /// The sensor (directory) name, as roverc names it.
    pub fn name(self) -> &'static str {
        match self {
            Stream::Camera => "camera",
            Stream::Lidar => "lidar",
            Stream::Radar => "radar",
            Stream::Imu => "imu",
        }
    }

    pub fn parse(name: &str) -> Option<Stream> {
        STREAMS.into_iter().find(|s| s.name() == name)
    }

    /// Samples per rig second.
    pub fn hz(self) -> f64 {
        match self {
            Stream::Camera => 30.0,
            Stream::Lidar => 10.0,
            Stream::Radar => 20.0,
            Stream::Imu => 100.0,
        }
    }

    /// Samples in `seconds` of the rig.
    pub fn samples(self, seconds: f64) -> u64 {
        (seconds * self.hz()).round().max(1.0) as u64
    }

    /// Distinct samples made once and reused in turn.
    pub fn pool(self) -> usize {
        match self {
            Stream::Camera => 6,
            Stream::Lidar | Stream::Radar => 4,
            Stream::Imu => 100,
        }
    }

    /// The channels it declares (`ts` is implicit).
    pub fn meta(self, dims: &Dims) -> SensorMeta {
        let ch = |name: &str, format: ChannelFormat, dtype: DType, shape: &[usize], desc: &str| {
            (
                name.to_string(),
                ChannelMeta::new(format, dtype, shape.to_vec(), desc),
            )
        };
        let (rows, cols) = dims.lidar;
        let channels = match self {
            Stream::Camera => vec![ch(
                "video.avi",
                ChannelFormat::Mjpg,
                DType::U1,
                &[dims.camera.0, dims.camera.1, 3],
                "Ordinary camera video",
            )],
            Stream::Lidar => vec![
                ch(
                    "rfl",
                    ChannelFormat::Lzmaf,
                    DType::U1,
                    &[rows, cols],
                    "Object NIR reflectivity",
                ),
                ch(
                    "nir",
                    ChannelFormat::Lzmaf,
                    DType::U2,
                    &[rows, cols],
                    "Near infrared ambient photons",
                ),
                ch(
                    "rng",
                    ChannelFormat::Lzmaf,
                    DType::U2,
                    &[rows, cols],
                    "Range, in millimeters",
                ),
            ],
            Stream::Radar => vec![
                ch(
                    "iq",
                    ChannelFormat::Raw,
                    DType::I2,
                    &dims.radar,
                    "Raw I/Q stream.",
                ),
                ch(
                    "valid",
                    ChannelFormat::Raw,
                    DType::U1,
                    &[],
                    "True if this frame is complete (no zero-fill).",
                ),
            ],
            Stream::Imu => ["rot", "acc", "avel"]
                .into_iter()
                .zip([
                    "Orientation (Euler Angles)",
                    "Linear acceleration",
                    "Angular velocity",
                ])
                .map(|(n, d)| ch(n, ChannelFormat::Raw, DType::F4, &[3], d))
                .collect(),
        };
        SensorMeta { channels }
    }

    /// Files the collector writes into the sensor directory beside the channels.
    pub fn sidecars(self) -> &'static [&'static str] {
        match self {
            Stream::Lidar => &["lidar.json"],
            _ => &[],
        }
    }
}

/// Frame dimensions: the rig's, or tiny ones for a smoke test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    /// Camera `(height, width)`.
    pub camera: (usize, usize),
    /// Lidar `(beams, columns)`.
    pub lidar: (usize, usize),
    /// Radar `iq` shape: chirps, tx, rx, samples.
    pub radar: [usize; 4],
}

impl Dims {
    /// The red-rover rig's.
    pub const RIG: Dims = Dims {
        camera: (1080, 1920),
        lidar: (128, 2048),
        radar: [64, 3, 4, 512],
    };
    /// Small frames with the same structure, for tests.
    pub const TINY: Dims = Dims {
        camera: (48, 64),
        lidar: (16, 64),
        radar: [4, 3, 4, 16],
    };

    pub fn of(tiny: bool) -> Dims {
        if tiny {
            Dims::TINY
        } else {
            Dims::RIG
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_declare_the_collectors_channels() {
        let d = Dims::RIG;
        let names = |s: Stream| -> Vec<String> {
            s.meta(&d).channels.into_iter().map(|(n, _)| n).collect()
        };
        assert_eq!(names(Stream::Camera), ["video.avi"]);
        assert_eq!(names(Stream::Lidar), ["rfl", "nir", "rng"]);
        assert_eq!(names(Stream::Radar), ["iq", "valid"]);
        assert_eq!(names(Stream::Imu), ["rot", "acc", "avel"]);
        let iq = &Stream::Radar.meta(&d).channels[0].1;
        assert_eq!(iq.sample_bytes(), 64 * 3 * 4 * 512 * 2);
        assert_eq!(Stream::Lidar.samples(60.0), 600);
        assert_eq!(Stream::parse("imu"), Some(Stream::Imu));
        assert_eq!(Stream::parse("gps"), None);
    }
}
