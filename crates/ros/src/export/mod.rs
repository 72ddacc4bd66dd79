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
//! one thread per usable CPU (`roverlog_core::cpus::usable`), each into buffers it reuses, while the calling thread
//! writes them in order with the IMU (a point cloud goes from the worker's buffer to the
//! file without another copy, see [`crate::rosbag1::writer`]); memory holds up to two messages per worker and
//! one chunk, whatever the trace's length.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use roverlog_core::error::{Error, IoContext, Result};
use roverlog_core::format::dtype::{decode_vec, view, Element};
use roverlog_core::format::{ChannelReader, DType, Sensor, Trace};
use roverlog_core::ouster::{LidarIntrinsics, XyzLut};
use roverlog_core::timestamps::{self, Model};

use crate::rosbag1::writer::Bag1Writer;
use crate::rosbag2::writer::Bag2Writer;
use crate::wire::encode::{CloudWriter, Imu, Stamp};

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

fn unexportable(path: &Path, msg: impl Into<String>) -> Error {
    Error::Unexportable {
        path: path.to_path_buf(),
        msg: msg.into(),
    }
}

fn open_sensor(t: &Trace, name: &str, role: &str) -> Result<Sensor> {
    if !t.all_sensor_names().contains(&name) {
        return Err(unexportable(
            t.dir(),
            format!(
                "no {role} sensor {name:?} (sensors: {})",
                t.sensor_names().join(", ")
            ),
        ));
    }
    t.sensor(name)
}

/// Checks that channel `name` of `s` exists with one of `dtypes` and `shape`.
fn check_channel(s: &Sensor, name: &str, dtypes: &[DType], shape: &[usize]) -> Result<DType> {
    let path = s.dir().join(name);
    let Some(c) = s.meta().get(name) else {
        return Err(unexportable(&path, "no such channel"));
    };
    if !dtypes.contains(&c.dtype) || c.shape != shape {
        let want: Vec<&str> = dtypes.iter().map(|d| d.code()).collect();
        return Err(unexportable(
            &path,
            format!(
                "is {} {:?}, expected {} {:?}",
                c.dtype.code(),
                c.shape,
                want.join(" or "),
                shape
            ),
        ));
    }
    Ok(c.dtype)
}

fn triple(bytes: &[u8], dtype: DType) -> [f64; 3] {
    let v: Vec<f64> = match dtype {
        DType::F4 => decode_vec::<f32>(bytes)
            .into_iter()
            .map(f64::from)
            .collect(),
        _ => decode_vec::<f64>(bytes),
    };
    [v[0], v[1], v[2]]
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

/// The bag time of a stamp, which must not be before 1970.
fn bag_time(path: &Path, index: usize, stamp: Stamp) -> Result<u64> {
    u64::try_from(stamp.ns).map_err(|_| {
        unexportable(
            path,
            format!("sample {index}: time {} s is before 1970", stamp.sec),
        )
    })
}

enum Sink {
    Ros1 {
        w: Bag1Writer<BufWriter<File>>,
        imu: u32,
        points: u32,
    },
    Ros2 {
        w: Box<Bag2Writer>,
        imu: u16,
        points: u16,
    },
}

/// The output: a ROS 1 bag file or a rosbag2 directory, under a temporary name until
/// [`Sink::finish`].
impl Sink {
    fn create(tmp: &Path, out: &Path, format: BagFormat) -> Result<Sink> {
        let (imu_t, cloud_t) = (
            crate::wire::encode::imu_type(),
            crate::wire::encode::pointcloud2_type(),
        );
        Ok(match format {
            BagFormat::Ros1 => {
                let f = File::create_new(tmp).at(tmp)?;
                let mut w = Bag1Writer::new(BufWriter::with_capacity(1 << 20, f)).at(tmp)?;
                let imu = w.add_connection(IMU_TOPIC, &imu_t, true).at(tmp)?;
                let points = w.add_connection(POINTS_TOPIC, &cloud_t, true).at(tmp)?;
                Sink::Ros1 { w, imu, points }
            }
            BagFormat::Ros2Mcap => {
                let mut w = Box::new(Bag2Writer::create(tmp, out).at(tmp)?);
                let imu = w.add_topic(IMU_TOPIC, &imu_t).at(tmp)?;
                let points = w.add_topic(POINTS_TOPIC, &cloud_t).at(tmp)?;
                Sink::Ros2 { w, imu, points }
            }
        })
    }

    fn finish(self, tmp: &Path) -> Result<()> {
        match self {
            Sink::Ros1 { w, .. } => {
                let f = w.finish().at(tmp)?;
                f.into_inner()
                    .map_err(|e| Error::io(tmp, e.into_error()))?
                    .sync_all()
                    .at(tmp)
            }
            Sink::Ros2 { w, .. } => w.finish().at(tmp),
        }
    }
}

impl Sink {
    /// Writes an IMU message at bag time `ns`, serialised into `buf`.
    fn write_imu(&mut self, tmp: &Path, ns: u64, m: &Imu, buf: &mut Vec<u8>) -> Result<()> {
        buf.clear();
        let bad_stamp = |e: crate::wire::encode::StampRange| unexportable(tmp, e.to_string());
        match self {
            Sink::Ros1 { w, imu, .. } => {
                m.ros1(buf).map_err(bad_stamp)?;
                w.write(*imu, ns, buf).at(tmp)
            }
            Sink::Ros2 { w, imu, .. } => {
                m.cdr(buf).map_err(bad_stamp)?;
                w.write(*imu, ns, buf).at(tmp)
            }
        }
    }

    /// Writes a point cloud a worker serialised in this sink's wire (CDR for ROS 2).
    fn write_cloud(&mut self, tmp: &Path, ns: u64, data: &[u8]) -> Result<()> {
        match self {
            Sink::Ros1 { w, points, .. } => w.write(*points, ns, data).at(tmp),
            Sink::Ros2 { w, points, .. } => w.write(*points, ns, data).at(tmp),
        }
    }
}

/// One lidar frame as a serialised `PointCloud2` message, made by a worker thread.
struct Cloud {
    msg: Vec<u8>,
    points: usize,
}

/// Buffers a worker keeps from frame to frame.
#[derive(Default)]
struct WorkerBufs {
    /// The decompressed frame (`lzmaf`).
    raw: Vec<u8>,
}

/// Decodes lidar frame `j`, and projects it straight into the `PointCloud2` message `msg`
/// (cleared first).
#[allow(clippy::too_many_arguments)]
fn cloud(
    rng: &mut ChannelReader,
    dir: &Path,
    j: usize,
    rng_type: DType,
    lut: &XyzLut,
    min_range: Option<f32>,
    stamp: Stamp,
    ros2: bool,
    bufs: &mut WorkerBufs,
    mut msg: Vec<u8>,
) -> Result<Cloud> {
    msg.clear();
    msg.reserve(lut.pixels() * 12 + 256);
    let w = if ros2 {
        CloudWriter::cdr(&mut msg, stamp)
    } else {
        CloudWriter::ros1(&mut msg, stamp)
    }
    .map_err(|e| unexportable(dir, e.to_string()))?;
    let mut project = |bytes: &[u8]| match rng_type {
        DType::U2 => project_frame::<u16>(lut, bytes, min_range, &mut msg),
        _ => project_frame::<u32>(lut, bytes, min_range, &mut msg),
    };
    match rng {
        ChannelReader::Lzmaf(r) => {
            r.get_into(j as u64, &mut bufs.raw)?;
            project(&bufs.raw)?;
        }
        other => project(&other.get(j as u64)?)?,
    }
    let points = w.finish(&mut msg);
    Ok(Cloud { points, msg })
}

/// Appends the kept points of a range frame to `msg`, 12 bytes each (x, y, z little-endian).
fn project_frame<T: Element + Into<f64>>(
    lut: &XyzLut,
    bytes: &[u8],
    min_range: Option<f32>,
    msg: &mut Vec<u8>,
) -> Result<()> {
    let emit = |p: [f32; 3]| {
        let mut b = [0u8; 12];
        b[..4].copy_from_slice(&p[0].to_le_bytes());
        b[4..8].copy_from_slice(&p[1].to_le_bytes());
        b[8..].copy_from_slice(&p[2].to_le_bytes());
        msg.extend_from_slice(&b);
    };
    match view::<T>(bytes) {
        Some(v) => lut.project_with(v, min_range, emit),
        None => lut.project_with(&decode_vec::<T>(bytes), min_range, emit),
    }
}

/// Writes the lidar and IMU of `trace` to `out` (see the module doc). An existing `out` is
/// refused; a failure leaves nothing behind. `progress(done, total)` counts messages.
pub fn export_rosbag(
    trace: &Path,
    out: &Path,
    opts: &RosbagOptions,
    mut progress: impl FnMut(u64, u64),
) -> Result<RosbagReport> {
    let t = Trace::open(trace)?;
    let lidar = open_sensor(&t, &opts.lidar, "lidar")?;
    let imu = open_sensor(&t, &opts.imu, "imu")?;

    let json = lidar.dir().join("lidar.json");
    if !json.exists() {
        return Err(unexportable(
            &json,
            "missing: the lidar's intrinsics (the collector saves the sensor's metadata there)",
        ));
    }
    let intrinsics = LidarIntrinsics::open(&json)?;
    let shape = [intrinsics.pixels_per_column, intrinsics.columns_per_frame];
    let rng_type = check_channel(&lidar, "rng", &[DType::U2, DType::U4], &shape)?;
    let lidar_ts = Model::Discretize {
        interval: timestamps::DISCRETIZE_INTERVAL,
        eps: timestamps::DISCRETIZE_EPS,
    }
    .apply(&lidar.timestamps()?)
    .map_err(|e| Error::at(lidar.dir(), e))?;
    let n_lidar = lidar_ts.len().min(lidar.channel("rng")?.len()? as usize);

    let kinds = [DType::F4, DType::F8];
    let mut imu_chans = Vec::new();
    let mut n_imu = usize::MAX;
    for name in ["rot", "acc", "avel"] {
        let dtype = check_channel(&imu, name, &kinds, &[3])?;
        let mut r = imu.channel(name)?;
        n_imu = n_imu.min(r.len()? as usize);
        imu_chans.push((r, dtype));
    }
    let imu_ts = Model::Smooth {
        interval: timestamps::SMOOTH_INTERVAL,
    }
    .apply(&imu.timestamps()?)
    .map_err(|e| Error::at(imu.dir(), e))?;
    let n_imu = n_imu.min(imu_ts.len());

    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).at(parent)?;
    }
    if out.exists() {
        return Err(unexportable(
            out,
            "already exists (refusing to overwrite it)",
        ));
    }
    let tmp: PathBuf = out.with_file_name(format!(
        ".{}.partial-{}",
        out.file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    let total = (n_imu + n_lidar) as u64;
    let lut = XyzLut::new(&intrinsics);
    let min_range = opts.min_range;
    let lidar_dir = lidar.dir().to_path_buf();

    let result = std::thread::scope(|scope| -> Result<RosbagReport> {
        // Frames are decoded, projected and serialised by `workers` threads, worker `k`
        // taking frames `k, k + workers, ...`, each up to two ahead; the message buffers
        // come back for reuse.
        let workers = roverlog_core::cpus::usable().min(n_lidar.max(1));
        let ros2 = opts.format == BagFormat::Ros2Mcap;
        let mut frames = Vec::with_capacity(workers);
        let mut spares = Vec::with_capacity(workers);
        for k in 0..workers {
            let (frames_tx, frames_rx) = mpsc::sync_channel::<Result<Cloud>>(2);
            let (spare_tx, spare) = mpsc::channel::<Vec<u8>>();
            frames.push(frames_rx);
            spares.push(spare_tx);
            let lidar = &lidar;
            let lut = &lut;
            let lidar_ts = &lidar_ts;
            let lidar_dir = &lidar_dir;
            scope.spawn(move || {
                let mut rng = match lidar.channel("rng") {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = frames_tx.send(Err(e));
                        return;
                    }
                };
                let mut bufs = WorkerBufs::default();
                for j in (k..n_lidar).step_by(workers) {
                    let msg = spare.try_recv().unwrap_or_default();
                    let stamp = Stamp::from_secs(lidar_ts[j]);
                    let r = cloud(
                        &mut rng, lidar_dir, j, rng_type, lut, min_range, stamp, ros2, &mut bufs,
                        msg,
                    );
                    let stop = r.is_err();
                    if frames_tx.send(r).is_err() || stop {
                        return;
                    }
                }
            });
        }

        let mut sink = Sink::create(&tmp, out, opts.format)?;
        let mut report = RosbagReport::default();
        let mut buf = Vec::new();
        let (mut i, mut j) = (0usize, 0usize);
        while i < n_imu || j < n_lidar {
            if j >= n_lidar || (i < n_imu && imu_ts[i] <= lidar_ts[j]) {
                let mut v = [[0.0; 3]; 3];
                for (k, (r, dtype)) in imu_chans.iter_mut().enumerate() {
                    v[k] = triple(&r.get(i as u64)?, *dtype);
                }
                let stamp = Stamp::from_secs(imu_ts[i]);
                let m = Imu {
                    stamp,
                    orientation: quat_from_intrinsic_xyz(v[0]),
                    linear_acceleration: v[1],
                    angular_velocity: v[2],
                };
                sink.write_imu(&tmp, bag_time(imu.dir(), i, stamp)?, &m, &mut buf)?;
                report.imu_messages += 1;
                i += 1;
            } else {
                let c = frames[j % workers].recv().map_err(|_| {
                    unexportable(&lidar_dir, format!("frame {j}: the reader thread stopped"))
                })??;
                let stamp = Stamp::from_secs(lidar_ts[j]);
                sink.write_cloud(&tmp, bag_time(&lidar_dir, j, stamp)?, &c.msg)?;
                report.cloud_messages += 1;
                report.points += c.points as u64;
                let _ = spares[j % workers].send(c.msg);
                j += 1;
            }
            progress((i + j) as u64, total);
        }
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
