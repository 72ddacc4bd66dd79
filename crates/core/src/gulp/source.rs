//! A GulpIO2 directory as a replay [`Source`]: one camera sensor, every video's frames in id
//! order.

use std::path::Path;

use serde_json::json;

use super::GulpDirectory;
use crate::error::{ConfigProblem, Error, Result};
use crate::format::{ChannelFormat, ChannelMeta, DType, SensorMeta};
use crate::replay::{Source, SourceSensor};

/// A GulpIO2 directory as one camera sensor: every video's frames in id order, `fps` frames a
/// second from `t0`. Channels: `img` (the JPEG bytes, `jpg`), `video` (`u4`, the video's
/// position in `videos.json`), `frame` (`u4`, the frame's index within its video).
pub struct GulpSource {
    gulp: GulpDirectory,
    sensors: Vec<SourceSensor>,
    /// Per sample: (video position, frame index).
    samples: Vec<(u32, u32)>,
    ids: Vec<String>,
    fps: f64,
    t0: f64,
}

impl GulpSource {
    /// The sensor name gulp frames are given.
    pub const SENSOR: &'static str = "camera";

    /// Opens a gulp directory.
    pub fn open(dir: &Path, fps: f64, t0: f64) -> Result<GulpSource> {
        if !(fps.is_finite() && fps > 0.0) {
            return Err(Error::from(ConfigProblem::Fps { fps }));
        }
        let gulp = GulpDirectory::open(dir)?;
        let ids: Vec<String> = gulp.ids().map(String::from).collect();
        let mut samples = Vec::new();
        for (v, id) in ids.iter().enumerate() {
            let n = gulp.video(id).map_or(0, |r| r.frame_count());
            samples.extend((0..n as u32).map(|f| (v as u32, f)));
        }
        let shape = first_frame_shape(&gulp);
        let meta = SensorMeta {
            channels: vec![
                (
                    "img".into(),
                    ChannelMeta::new(
                        ChannelFormat::Blob("jpg".into()),
                        DType::U1,
                        shape,
                        "JPEG frame (shape of the first video; see videos.json)",
                    ),
                ),
                (
                    "video".into(),
                    ChannelMeta::new(
                        ChannelFormat::Raw,
                        DType::U4,
                        vec![],
                        "position of the video in videos.json",
                    ),
                ),
                (
                    "frame".into(),
                    ChannelMeta::new(
                        ChannelFormat::Raw,
                        DType::U4,
                        vec![],
                        "frame index within the video",
                    ),
                ),
            ],
        };
        Ok(GulpSource {
            gulp,
            sensors: vec![SourceSensor {
                name: Self::SENSOR.into(),
                meta,
            }],
            samples,
            ids,
            fps,
            t0,
        })
    }
}

#[cfg(feature = "jpeg")]
fn first_frame_shape(g: &GulpDirectory) -> Vec<usize> {
    g.videos()
        .find_map(|v| v.frame(0))
        .and_then(|f| crate::gulp::decode_jpeg(f).ok())
        .map(|d| vec![d.height, d.width, d.channels])
        .unwrap_or_default()
}

#[cfg(not(feature = "jpeg"))]
fn first_frame_shape(_: &GulpDirectory) -> Vec<usize> {
    Vec::new()
}

impl Source for GulpSource {
    fn sensors(&self) -> &[SourceSensor] {
        &self.sensors
    }

    fn timestamps(&mut self, _sensor: usize) -> Result<Vec<f64>> {
        Ok((0..self.samples.len())
            .map(|k| self.t0 + k as f64 / self.fps)
            .collect())
    }

    fn read(&mut self, _sensor: usize, index: u64, out: &mut Vec<Vec<u8>>) -> Result<()> {
        let (v, f) = *self
            .samples
            .get(index as usize)
            .ok_or_else(|| Error::OutOfRange {
                path: self.gulp.path().to_path_buf(),
                index,
                len: self.samples.len() as u64,
            })?;
        let id = &self.ids[v as usize];
        let frame = self
            .gulp
            .video(id)
            .and_then(|r| r.frame(f as usize))
            .expect("frames were listed from this directory");
        out.resize_with(3, Vec::new);
        out[0].clear();
        out[0].extend_from_slice(frame);
        out[1] = v.to_le_bytes().to_vec();
        out[2] = f.to_le_bytes().to_vec();
        Ok(())
    }

    fn extra_files(&self, _sensor: usize) -> Vec<(String, Vec<u8>)> {
        let videos: Vec<_> = self
            .ids
            .iter()
            .map(|id| {
                let v = self.gulp.video(id);
                json!({"id": id, "frames": v.as_ref().map_or(0, |v| v.frame_count()),
                       "meta": v.and_then(|v| v.meta().cloned())})
            })
            .collect();
        let doc =
            json!({"source": self.gulp.path(), "fps": self.fps, "t0": self.t0, "videos": videos});
        vec![(
            "videos.json".into(),
            serde_json::to_vec_pretty(&doc).expect("JSON"),
        )]
    }
}
