//! Projecting Ouster depth frames to points: the per-pixel table (`ouster::XyzLut`) against
//! the same formula evaluated pixel by pixel (`ouster::project_direct`, upstream's order of
//! operations, trigonometry per pixel), same run, one thread.
//!
//! `cargo bench --bench ouster` builds an OS1-128 shaped `lidar.json` (128 beams x 2048
//! columns; `OUSTER_BENCH_FRAMES` frames, default 50) and reports, best of `REPEATS`: the
//! table's build time, and frames per second of each way with and without a minimum range.
//! Upstream's numpy `PointCloud` is measured by hand (BENCHMARKS.md says how).

use std::hint::black_box;
use std::path::Path;

#[path = "support/mod.rs"]
mod support;

use roverlog_core::ouster::{project_direct, LidarIntrinsics, XyzLut};
use support::best;

const REPEATS: usize = 3;
const BEAMS: usize = 128;
const COLUMNS: usize = 2048;

fn intrinsics() -> LidarIntrinsics {
    let alt: Vec<f64> = (0..BEAMS)
        .map(|b| 22.5 - 45.0 * b as f64 / (BEAMS - 1) as f64)
        .collect();
    let az: Vec<f64> = (0..BEAMS)
        .map(|b| [4.23, 1.41, -1.41, -4.23][b % 4])
        .collect();
    let shift: Vec<i64> = (0..BEAMS).map(|b| [72, 24, -24, -72][b % 4]).collect();
    let doc = serde_json::json!({
        "lidar_data_format": {"pixels_per_column": BEAMS, "columns_per_frame": COLUMNS,
                              "pixel_shift_by_row": shift},
        "beam_intrinsics": {"beam_altitude_angles": alt, "beam_azimuth_angles": az,
            "beam_to_lidar_transform": [1, 0, 0, 15.806, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]},
        "lidar_intrinsics": {"lidar_to_sensor_transform":
            [-1, 0, 0, 0, 0, -1, 0, 0, 0, 0, 1, 36.18, 0, 0, 0, 1]},
    });
    LidarIntrinsics::parse(Path::new("bench/lidar.json"), doc.to_string().as_bytes()).unwrap()
}

fn main() {
    let frames: usize = std::env::var("OUSTER_BENCH_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let i = intrinsics();
    // Ranges 0.2-40 m with one pixel in ten without a return.
    let rng: Vec<Vec<u16>> = (0..frames)
        .map(|f| {
            roverlog_core::noise(2 * BEAMS * COLUMNS, f as u64 + 1)
                .chunks_exact(2)
                .map(|b| {
                    let v = u16::from_le_bytes([b[0], b[1]]);
                    if v % 10 == 0 {
                        0
                    } else {
                        200 + v % 40_000
                    }
                })
                .collect()
        })
        .collect();
    let (build, lut) = best(REPEATS, || XyzLut::new(&i));
    println!(
        "{frames} frames of {BEAMS}x{COLUMNS}; table built in {:.1} ms",
        build.as_secs_f64() * 1e3
    );
    let mut out = Vec::with_capacity(BEAMS * COLUMNS);
    for min_range in [None, Some(0.5f32)] {
        let (lut_t, n) = best(REPEATS, || {
            let mut n = 0;
            for r in &rng {
                out.clear();
                lut.project(black_box(r), min_range, &mut out).unwrap();
                n += out.len();
            }
            n
        });
        let (direct_t, m) = best(REPEATS, || {
            let mut n = 0;
            for r in &rng {
                out.clear();
                project_direct(&i, black_box(r), min_range, &mut out).unwrap();
                n += out.len();
            }
            n
        });
        assert_eq!(n, m, "both ways keep the same points");
        let fps = |t: std::time::Duration| frames as f64 / t.as_secs_f64();
        println!(
            "min_range {min_range:?}: table {:.1} frames/s ({:.2} ms/frame), per pixel {:.1} frames/s; table / per pixel = {:.1}x",
            fps(lut_t),
            lut_t.as_secs_f64() * 1e3 / frames as f64,
            fps(direct_t),
            direct_t.as_secs_f64() / lut_t.as_secs_f64()
        );
    }
}
