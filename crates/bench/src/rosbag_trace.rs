//! The trace `roverlog bench --only rosbag` converts: what upstream's collector records from
//! an OS1-128 and the IMU, at full frame size. A `lidar` sensor with `rfl` u1, `nir` u2 and
//! `rng` u2 `[128, 2048]` `lzmaf` frames ([`crate::lidar::lidar_frame`]'s street scene,
//! compressed at the collector's preset 0) at 10 Hz, and a `lidar.json` in ouster-sdk's
//! layout (beam altitudes over +-22.5 degrees, the four-column azimuth offsets and stagger
//! of an OS1, the 15.8 mm beam origin, the sensor frame flipped about z and lifted); an `imu`
//! sensor with `rot`, `acc`, `avel` f4 `[3]` at 100 Hz. Timestamps carry receive jitter.
//!
//! Frames are compressed once per distinct image ([`POOL`] of them, cycled) and appended in
//! their stored encoding, so a long trace takes seconds to write; reading a frame costs what
//! reading a distinct one would (each is decoded on its own).

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::lidar::lidar_frame;
use roverlog_core::format::meta::write_file_atomic;
use roverlog_core::format::{
    lzma, ChannelFormat, ChannelMeta, DType, SensorMeta, SensorWriter, WriterOptions,
};
use roverlog_core::{Error, Result};

/// Beams and columns (an OS1-128 in 2048x10).
pub const BEAMS: usize = 128;
pub const COLUMNS: usize = 2048;
/// Distinct lidar frames, cycled.
pub const POOL: usize = 40;
/// IMU samples per lidar frame (100 Hz against 10 Hz).
pub const IMU_PER_FRAME: usize = 10;
const T0: f64 = 1.7e9;

/// An OS1-128's `lidar.json` in ouster-sdk's layout ([`crate::lidar::ouster_metadata`]).
pub fn lidar_json() -> Value {
    crate::lidar::ouster_metadata(BEAMS, COLUMNS)
}

fn meta(channels: &[(&str, DType, Vec<usize>, ChannelFormat)]) -> SensorMeta {
    SensorMeta {
        channels: channels
            .iter()
            .map(|(n, d, s, f)| (n.to_string(), ChannelMeta::new(f.clone(), *d, s.clone(), n)))
            .collect(),
    }
}

/// Writes the trace into `dir` (which must not exist) with `frames` lidar frames and ten
/// times as many IMU samples.
pub fn write(dir: &Path, frames: usize) -> Result<()> {
    fs::create_dir(dir).map_err(|e| Error::io(dir, e))?;
    write_file_atomic(&dir.join("config.yaml"), b"{}\n")?;
    let opts = WriterOptions::default();

    // Distinct frames compressed on two threads.
    let pool: Vec<[Vec<u8>; 3]> = std::thread::scope(|s| {
        let halves: Vec<_> = (0..2)
            .map(|h| {
                s.spawn(move || {
                    (h..POOL.min(frames.max(1)))
                        .step_by(2)
                        .map(|k| {
                            let f = lidar_frame(BEAMS, COLUMNS, k as u64);
                            let z = |b: &[u8]| lzma::compress(b, lzma::DEFAULT_PRESET);
                            (k, [z(&f.rfl), z(&f.nir), z(&f.rng)])
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<_> = halves
            .into_iter()
            .flat_map(|h| h.join().expect("compressing lidar frames"))
            .collect();
        all.sort_by_key(|(k, _)| *k);
        all.into_iter().map(|(_, f)| f).collect()
    });
    let shape = vec![BEAMS, COLUMNS];
    let mut w = SensorWriter::create(
        &dir.join("lidar"),
        meta(&[
            ("rfl", DType::U1, shape.clone(), ChannelFormat::Lzmaf),
            ("nir", DType::U2, shape.clone(), ChannelFormat::Lzmaf),
            ("rng", DType::U2, shape, ChannelFormat::Lzmaf),
        ]),
        &opts,
    )?;
    for i in 0..frames {
        let jitter = [0.0021, -0.0013, 0.0007, 0.0, -0.0024][i % 5];
        let [a, b, c] = &pool[i % pool.len()];
        w.append_encoded(T0 + 0.1 * i as f64 + jitter, &[a, b, c])?;
    }
    w.finish()?;
    let json = serde_json::to_vec_pretty(&lidar_json()).expect("lidar.json");
    write_file_atomic(&dir.join("lidar/lidar.json"), &json)?;

    let v3 = |n: &'static str| (n, DType::F4, vec![3], ChannelFormat::Raw);
    let mut w = SensorWriter::create(
        &dir.join("imu"),
        meta(&[v3("rot"), v3("acc"), v3("avel")]),
        &opts,
    )?;
    let f4 = |a: [f32; 3]| {
        let mut out = [0u8; 12];
        for (o, x) in out.chunks_exact_mut(4).zip(a) {
            o.copy_from_slice(&x.to_le_bytes());
        }
        out
    };
    for i in 0..frames * IMU_PER_FRAME {
        let x = i as f32 * 0.01;
        let rot = [0.02 * x.sin(), -0.01 * x.cos(), 0.3 + 0.05 * x];
        let acc = [0.3 * (7.0 * x).sin(), 0.05, 9.81 + 0.02 * (3.0 * x).cos()];
        let avel = [0.001 * x.cos(), -0.002, 0.05];
        let jitter = ((i * 7919) % 11) as f64 * 1e-4;
        w.append(
            T0 - 0.05 + 0.01 * i as f64 + jitter,
            &[&f4(rot), &f4(acc), &f4(avel)],
        )?;
    }
    w.finish()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use roverlog_core::format::Trace;
    use roverlog_core::ouster::LidarIntrinsics;

    #[test]
    fn a_short_trace_has_the_lidar_and_imu_rosbag_reads() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("t");
        write(&dir, 3).unwrap();
        let t = Trace::open(&dir).unwrap();
        let lidar = t.sensor("lidar").unwrap();
        let mut rng = lidar.channel("rng").unwrap();
        assert_eq!(rng.len().unwrap(), 3);
        assert_eq!(rng.get(2).unwrap().len(), BEAMS * COLUMNS * 2);
        let i = LidarIntrinsics::open(&dir.join("lidar/lidar.json")).unwrap();
        assert_eq!((i.pixels_per_column, i.columns_per_frame), (BEAMS, COLUMNS));
        let imu = t.sensor("imu").unwrap();
        assert_eq!(imu.channel("avel").unwrap().len().unwrap(), 30);
    }
}
