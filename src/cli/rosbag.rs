//! `roverlog rosbag <trace> [--out PATH] [--min-range M] [--format bag|mcap]`: the trace's
//! lidar as `sensor_msgs/PointCloud2` on `/points2` and its IMU as `sensor_msgs/Imu` on
//! `/imu`, for SLAM tools (upstream's `roverd rosbag`; see `roverlog_ros::export`). The
//! default output is upstream's, `<trace>/_scratch/lidar.bag` (`_scratch/lidar/`, a rosbag2
//! directory, with `--format mcap`). An existing output is refused; a failure leaves none.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};

use super::exit::outln;
use super::Outcome;
use roverlog_ros::{export_rosbag, BagFormat, RosbagOptions};

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    /// ROS 1 bag (format 2.0), as upstream writes.
    Bag,
    /// ROS 2 bag: a rosbag2 directory with MCAP storage (CDR messages, ros2msg schemas).
    Mcap,
}

#[derive(Args)]
pub struct RosbagArgs {
    /// The trace (with a `lidar` sensor holding `rng` and `lidar.json`, and an `imu` sensor
    /// holding `rot`, `acc`, `avel`).
    pub trace: PathBuf,
    /// Output path [default: TRACE/_scratch/lidar.bag, or TRACE/_scratch/lidar with
    /// --format mcap]. Must not exist.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Drop lidar points closer than this, in meters (without it, only pixels with no
    /// return are dropped).
    #[arg(long, alias = "min_range")]
    pub min_range: Option<f32>,
    /// ROS 1 bag or ROS 2 (MCAP) bag.
    #[arg(long, value_enum, default_value = "bag")]
    pub format: Format,
    /// The lidar sensor's name.
    #[arg(long, default_value = "lidar")]
    pub lidar: String,
    /// The IMU sensor's name.
    #[arg(long, default_value = "imu")]
    pub imu: String,
}

pub fn rosbag(args: RosbagArgs) -> Result<Outcome> {
    let format = match args.format {
        Format::Bag => BagFormat::Ros1,
        Format::Mcap => BagFormat::Ros2Mcap,
    };
    let out = args.out.clone().unwrap_or_else(|| {
        args.trace.join("_scratch").join(match format {
            BagFormat::Ros1 => "lidar.bag",
            BagFormat::Ros2Mcap => "lidar",
        })
    });
    if let Some(m) = args.min_range {
        anyhow::ensure!(
            m.is_finite(),
            "--min-range must be a finite number of meters, got {m}"
        );
    }
    let opts = RosbagOptions {
        format,
        min_range: args.min_range,
        lidar: args.lidar.clone(),
        imu: args.imu.clone(),
    };
    let pb = super::progress::bar("rosbag", "messages");
    let report = export_rosbag(&args.trace, &out, &opts, |d, t| {
        pb.set_length(t);
        pb.set_position(d);
    })
    .with_context(|| format!("writing {} to {}", args.trace.display(), out.display()))?;
    pb.finish_and_clear();
    outln!("{}", out.display())?;
    outln!("/imu: {} messages", report.imu_messages)?;
    outln!(
        "/points2: {} messages, {} points",
        report.cloud_messages,
        report.points
    )?;
    Ok(Outcome::Ok)
}
