//! A trace's lidar and IMU as a ROS bag, for SLAM tools (upstream's `roverd rosbag`,
//! `transforms/ros.py`): `/imu` as `sensor_msgs/Imu` (frame `imu_link`) and `/points2` as
//! `sensor_msgs/PointCloud2` (frame `os_sensor`, `x, y, z` float32), as a ROS 1 bag
//! ([`crate::rosbag1::writer`]) or a ROS 2 bag with MCAP storage ([`crate::rosbag2::writer`]).
//!
//! What upstream does, kept: the lidar's timestamps go through `discretize` (10 s, eps 0.05)
//! and the IMU's through `smooth` (30 s), upstream's `correction="auto"`; header stamps and bag
//! times come from those ([`crate::wire::encode::Stamp`]); the orientation is the `rot` Euler angles read as
//! intrinsic `XYZ` (scipy's `from_euler('XYZ')`), as a quaternion `x, y, z, w`; the IMU is
//! cut to the shortest of `ts`, `rot`, `acc`, `avel`; the points are
//! [`roverlog_core::ouster::XyzLut`]'s with upstream's `min_range` rule. Both connections are
//! latched, as upstream adds them.
//!
//! What differs: messages are written in time order across the two topics (upstream writes
//! every IMU message, then every point cloud; readers order by time either way), a point
//! cloud's `width` is its number of points and `row_step` its whole row (upstream writes
//! `width` 1 and `row_step` 12: its points array is `(1, 1, N, 3)`, so `shape[0]` is 1; the
//! data is the same), and the output is written under a temporary name and renamed when
//! complete. Frames are decoded (the bulk of the work: `lzma`), projected and serialised by
//! one thread per usable CPU (`roverlog_core::cpus::usable`, the pool in `workers`), each
//! into buffers it reuses, while the calling thread writes them in order with the IMU
//! (`write_in_order`, into the bag of `sink`; `inputs` reads the sensors). A point cloud goes
//! from the worker's buffer to the file without another copy (see
//! [`crate::rosbag1::writer`]); memory holds up to two messages per worker and one chunk,
//! whatever the trace's length.

mod inputs;
mod sink;
mod workers;

use std::path::{Path, PathBuf};

use roverlog_core::error::IoContext;
use roverlog_core::ouster::XyzLut;

use crate::error::{Error, Result, RosbagProblem};
use crate::wire::encode::Stamp;
use inputs::Inputs;
use sink::{bag_time, Sink};
use workers::{Frames, Lidar};

/// Which kind of bag to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BagFormat {
    /// ROS 1 bag, format 2.0 (one file).
    #[default]
    Ros1,
    /// rosbag2 directory with MCAP storage and CDR messages.
    Ros2Mcap,
}

/// What to write.
#[derive(Debug, Clone)]
pub struct RosbagOptions {
    pub format: BagFormat,
    /// Drop points closer than this (m); `None` drops only the origin (no return).
    pub min_range: Option<f32>,
    /// The sensors to read (`lidar` and `imu`, as upstream).
    pub lidar: String,
    pub imu: String,
}

impl Default for RosbagOptions {
    fn default() -> Self {
        RosbagOptions {
            format: BagFormat::Ros1,
            min_range: None,
            lidar: "lidar".into(),
            imu: "imu".into(),
        }
    }
}

/// What was written.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RosbagReport {
    pub imu_messages: u64,
    pub cloud_messages: u64,
    pub points: u64,
}

/// The IMU topic and the point cloud topic.
pub const IMU_TOPIC: &str = "/imu";
pub const POINTS_TOPIC: &str = "/points2";

fn rosbag_error(path: &Path, problem: RosbagProblem) -> Error {
    Error::Rosbag {
        path: path.to_path_buf(),
        problem: Box::new(problem),
    }
}

/// scipy's `Rotation.from_euler('XYZ', angles).as_quat()`: elementary quaternions composed
/// left to right (intrinsic), in scipy's arithmetic.
pub fn quat_from_intrinsic_xyz(angles: [f64; 3]) -> [f64; 4] {
    let elementary = |axis: usize, a: f64| {
        let mut q = [0.0; 4];
        q[axis] = (a / 2.0).sin();
        q[3] = (a / 2.0).cos();
        q
    };
    let compose = |p: [f64; 4], q: [f64; 4]| {
        let cross = [
            p[1] * q[2] - p[2] * q[1],
            p[2] * q[0] - p[0] * q[2],
            p[0] * q[1] - p[1] * q[0],
        ];
        [
            p[3] * q[0] + q[3] * p[0] + cross[0],
            p[3] * q[1] + q[3] * p[1] + cross[1],
            p[3] * q[2] + q[3] * p[2] + cross[2],
            p[3] * q[3] - p[0] * q[0] - p[1] * q[1] - p[2] * q[2],
        ]
    };
    let mut q = elementary(0, angles[0]);
    q = compose(q, elementary(1, angles[1]));
    compose(q, elementary(2, angles[2]))
}

/// Writes the lidar and IMU of `trace` to `out` (see the module doc). An existing `out` is
/// refused; a failure leaves nothing behind. `progress(done, total)` counts messages.
pub fn export_rosbag(
    trace: &Path,
    out: &Path,
    opts: &RosbagOptions,
    progress: impl FnMut(u64, u64),
) -> Result<RosbagReport> {
    let mut input = Inputs::open(trace, opts)?;
    let tmp = temporary_output(out)?;
    let lut = XyzLut::new(&input.intrinsics);
    let lidar_dir = input.lidar.dir().to_path_buf();
    let lidar = Lidar {
        sensor: &input.lidar,
        dir: &lidar_dir,
        rng_type: input.rng_type,
        lut: &lut,
        min_range: opts.min_range,
        ts: &input.lidar_ts,
        frames: input.n_lidar,
        ros2: opts.format == BagFormat::Ros2Mcap,
    };
    let result = std::thread::scope(|scope| -> Result<RosbagReport> {
        let workers = roverlog_core::cpus::usable().min(lidar.frames.max(1));
        let frames = Frames::spawn(scope, &lidar, workers);
        let mut sink = Sink::create(&tmp, out, opts.format)?;
        let report = write_in_order(
            &mut sink,
            &tmp,
            &mut input.imu_reader,
            &lidar,
            &frames,
            progress,
        )?;
        drop(frames);
        sink.finish(&tmp)?;
        Ok(report)
    });
    match result {
        Ok(report) => {
            std::fs::rename(&tmp, out).at(out)?;
            Ok(report)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            let _ = std::fs::remove_dir_all(&tmp);
            Err(e)
        }
    }
}

/// The temporary name `out` is written under (beside it, so the rename is atomic), once its
/// directory exists and `out` does not.
fn temporary_output(out: &Path) -> Result<PathBuf> {
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).at(parent)?;
    }
    if out.exists() {
        return Err(rosbag_error(out, RosbagProblem::Exists));
    }
    Ok(out.with_file_name(format!(
        ".{}.partial-{}",
        out.file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    )))
}

/// The ordered writer: IMU samples and the workers' point clouds merged by time into `sink`.
fn write_in_order(
    sink: &mut Sink,
    tmp: &Path,
    imu: &mut inputs::ImuReader,
    lidar: &Lidar,
    frames: &Frames,
    mut progress: impl FnMut(u64, u64),
) -> Result<RosbagReport> {
    let (n_imu, n_lidar) = (imu.len(), lidar.frames);
    let total = (n_imu + n_lidar) as u64;
    let mut report = RosbagReport::default();
    let mut buf = Vec::new();
    let (mut i, mut j) = (0usize, 0usize);
    while i < n_imu || j < n_lidar {
        if j >= n_lidar || (i < n_imu && imu.ts[i] <= lidar.ts[j]) {
            let m = imu.message(i)?;
            sink.write_imu(tmp, bag_time(imu.dir(), i, m.stamp)?, &m, &mut buf)?;
            report.imu_messages += 1;
            i += 1;
        } else {
            let c = frames.next(j)?;
            let stamp = Stamp::from_secs(lidar.ts[j]);
            sink.write_cloud(tmp, bag_time(lidar.dir, j, stamp)?, &c.msg)?;
            report.cloud_messages += 1;
            report.points += c.points as u64;
            frames.give_back(j, c.msg);
            j += 1;
        }
        progress((i + j) as u64, total);
    }
    Ok(report)
}
