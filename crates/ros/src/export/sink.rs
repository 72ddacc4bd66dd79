//! The ordered writer's output: a ROS 1 bag file or a rosbag2 directory, under a temporary
//! name until [`Sink::finish`], with the two connections (`/imu`, `/points2`) added.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use roverlog_core::error::IoContext;

use super::{rosbag_error, BagFormat, IMU_TOPIC, POINTS_TOPIC};
use crate::error::{Result, RosbagProblem};
use crate::rosbag1::writer::Bag1Writer;
use crate::rosbag2::writer::Bag2Writer;
use crate::wire::encode::{Imu, Stamp};

/// The bag time of a stamp of sample `index` of `path`, which must not be before 1970.
pub(super) fn bag_time(path: &Path, index: usize, stamp: Stamp) -> Result<u64> {
    u64::try_from(stamp.ns).map_err(|_| {
        rosbag_error(
            path,
            RosbagProblem::BeforeEpoch {
                index,
                sec: stamp.sec,
            },
        )
    })
}

pub(super) enum Sink {
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

impl Sink {
    pub(super) fn create(tmp: &Path, out: &Path, format: BagFormat) -> Result<Sink> {
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

    pub(super) fn finish(self, tmp: &Path) -> Result<()> {
        match self {
            Sink::Ros1 { w, .. } => {
                let f = w.finish().at(tmp)?;
                f.into_inner()
                    .map_err(|e| e.into_error())
                    .at(tmp)?
                    .sync_all()
                    .at(tmp)?;
                Ok(())
            }
            Sink::Ros2 { w, .. } => Ok(w.finish().at(tmp)?),
        }
    }
}

impl Sink {
    /// Writes an IMU message at bag time `ns`, serialised into `buf`.
    pub(super) fn write_imu(
        &mut self,
        tmp: &Path,
        ns: u64,
        m: &Imu,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        buf.clear();
        let bad_stamp = |e: crate::error::StampRange| rosbag_error(tmp, RosbagProblem::Stamp(e));
        match self {
            Sink::Ros1 { w, imu, .. } => {
                m.ros1(buf).map_err(bad_stamp)?;
                Ok(w.write(*imu, ns, buf).at(tmp)?)
            }
            Sink::Ros2 { w, imu, .. } => {
                m.cdr(buf).map_err(bad_stamp)?;
                Ok(w.write(*imu, ns, buf).at(tmp)?)
            }
        }
    }

    /// Writes a point cloud a worker serialised in this sink's wire (CDR for ROS 2).
    pub(super) fn write_cloud(&mut self, tmp: &Path, ns: u64, data: &[u8]) -> Result<()> {
        match self {
            Sink::Ros1 { w, points, .. } => Ok(w.write(*points, ns, data).at(tmp)?),
            Sink::Ros2 { w, points, .. } => Ok(w.write(*points, ns, data).at(tmp)?),
        }
    }
}
