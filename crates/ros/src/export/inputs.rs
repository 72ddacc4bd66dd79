//! What `roverlog rosbag` reads from a trace: the lidar (its `lidar.json` intrinsics, the
//! `rng` channel, frame times through `discretize`) and the IMU (`rot`, `acc`, `avel`, times
//! through `smooth`), each checked before anything is written.

use std::path::Path;

use roverlog_core::format::dtype::decode_vec;
use roverlog_core::format::{ChannelReader, DType, Sensor, Trace};
use roverlog_core::ouster::LidarIntrinsics;
use roverlog_core::timestamps::{self, Model};

use super::{quat_from_intrinsic_xyz, rosbag_error, RosbagOptions};
use crate::error::{Result, RosbagProblem};
use crate::wire::encode::{Imu, Stamp};

/// The trace's lidar and IMU, ready to be written.
pub(super) struct Inputs {
    pub lidar: Sensor,
    pub intrinsics: LidarIntrinsics,
    pub rng_type: DType,
    /// Frame times, corrected (`discretize`, 10 s, eps 0.05).
    pub lidar_ts: Vec<f64>,
    /// Frames to write: those with both a time and a range image.
    pub n_lidar: usize,
    pub imu_reader: ImuReader,
}

impl Inputs {
    pub(super) fn open(trace: &Path, opts: &RosbagOptions) -> Result<Inputs> {
        let t = Trace::open(trace)?;
        let lidar = open_sensor(&t, &opts.lidar, "lidar")?;
        let imu = open_sensor(&t, &opts.imu, "imu")?;

        let json = lidar.dir().join("lidar.json");
        if !json.exists() {
            return Err(rosbag_error(&json, RosbagProblem::NoIntrinsics));
        }
        let intrinsics = LidarIntrinsics::open(&json)?;
        let shape = [intrinsics.pixels_per_column, intrinsics.columns_per_frame];
        let rng_type = check_channel(&lidar, "rng", &[DType::U2, DType::U4], &shape)?;
        let lidar_ts = Model::Discretize {
            interval: timestamps::DISCRETIZE_INTERVAL,
            eps: timestamps::DISCRETIZE_EPS,
        }
        .apply(&lidar.timestamps()?)
        .map_err(|e| roverlog_core::Error::at(lidar.dir(), e))?;
        let n_lidar = lidar_ts.len().min(lidar.channel("rng")?.len()? as usize);
        let imu_reader = ImuReader::open(imu)?;
        Ok(Inputs {
            lidar,
            intrinsics,
            rng_type,
            lidar_ts,
            n_lidar,
            imu_reader,
        })
    }
}

/// The IMU's three vector channels and corrected times, cut to the shortest of them.
pub(super) struct ImuReader {
    sensor: Sensor,
    chans: Vec<(ChannelReader, DType)>,
    /// Sample times, corrected (`smooth`, 30 s).
    pub ts: Vec<f64>,
}

impl ImuReader {
    fn open(imu: Sensor) -> Result<ImuReader> {
        let kinds = [DType::F4, DType::F8];
        let mut chans = Vec::new();
        let mut n = usize::MAX;
        for name in ["rot", "acc", "avel"] {
            let dtype = check_channel(&imu, name, &kinds, &[3])?;
            let mut r = imu.channel(name)?;
            n = n.min(r.len()? as usize);
            chans.push((r, dtype));
        }
        let mut ts = Model::Smooth {
            interval: timestamps::SMOOTH_INTERVAL,
        }
        .apply(&imu.timestamps()?)
        .map_err(|e| roverlog_core::Error::at(imu.dir(), e))?;
        ts.truncate(n);
        Ok(ImuReader {
            sensor: imu,
            chans,
            ts,
        })
    }

    /// Samples to write.
    pub(super) fn len(&self) -> usize {
        self.ts.len()
    }

    pub(super) fn dir(&self) -> &Path {
        self.sensor.dir()
    }

    /// Sample `i` as a `sensor_msgs/Imu`: `rot` as a quaternion (intrinsic XYZ), `acc`,
    /// `avel`.
    pub(super) fn message(&mut self, i: usize) -> Result<Imu> {
        let mut v = [[0.0; 3]; 3];
        for (k, (r, dtype)) in self.chans.iter_mut().enumerate() {
            v[k] = triple(&r.get(i as u64)?, *dtype);
        }
        Ok(Imu {
            stamp: Stamp::from_secs(self.ts[i]),
            orientation: quat_from_intrinsic_xyz(v[0]),
            linear_acceleration: v[1],
            angular_velocity: v[2],
        })
    }
}

fn open_sensor(t: &Trace, name: &str, role: &'static str) -> Result<Sensor> {
    if !t.all_sensor_names().contains(&name) {
        return Err(rosbag_error(
            t.dir(),
            RosbagProblem::NoSensor {
                role,
                name: name.to_string(),
                sensors: t.sensor_names().iter().map(|s| s.to_string()).collect(),
            },
        ));
    }
    Ok(t.sensor(name)?)
}

/// Checks that channel `name` of `s` exists with one of `dtypes` and `shape`.
fn check_channel(s: &Sensor, name: &str, dtypes: &[DType], shape: &[usize]) -> Result<DType> {
    let path = s.dir().join(name);
    let Some(c) = s.meta().get(name) else {
        return Err(rosbag_error(&path, RosbagProblem::NoChannel));
    };
    if !dtypes.contains(&c.dtype) || c.shape != shape {
        return Err(rosbag_error(
            &path,
            RosbagProblem::Channel {
                dtype: c.dtype,
                shape: c.shape.clone(),
                want: dtypes.to_vec(),
                want_shape: shape.to_vec(),
            },
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
