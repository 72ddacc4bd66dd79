//! Every scenario of `roverlog bench`: its name, what it measures and the function that runs
//! it. `--only` names rows of these tables; with no `--only`, every row of [`SCENARIOS`] runs.

use super::error::Result;
use super::scenario::{self, Ctx, Measured};
use super::{camera, faults, full_size, hour_trace, offload, rig, rosbag, soak, Options};

/// A scenario run against a fresh daemon of its own, in turn with the others named (or all).
pub(super) struct Scenario {
    pub name: &'static str,
    /// What it measures, and against what.
    pub measures: &'static str,
    pub run: fn(&mut Ctx) -> Result<Measured>,
}

/// The daemon scenarios, in the order they run and are reported.
pub(super) const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "large",
        measures: "4 MiB frames from two sensors vs dd conv=fdatasync (random bytes)",
        run: scenario::large_or_direct,
    },
    Scenario {
        name: "direct",
        measures: "the large load with the daemon's direct_io vs dd oflag=direct",
        run: scenario::large_or_direct,
    },
    Scenario {
        name: "imu",
        measures: "one write() per 44-byte sample vs a plain socket sink and the Python writer",
        run: scenario::imu,
    },
    Scenario {
        name: "batched",
        measures: "256 samples per write(): samples/s",
        run: scenario::batched,
    },
    Scenario {
        name: "lzmaf",
        measures: "256 KiB lidar frames compressed vs a 20 Hz lidar",
        run: scenario::lzmaf,
    },
    Scenario {
        name: "dashboard",
        measures: "the imu load with the dashboard polled at 10 Hz vs none",
        run: scenario::watched,
    },
    Scenario {
        name: "foxglove",
        measures: "the imu load with a client on the whole live Foxglove feed vs none",
        run: scenario::watched,
    },
];

/// A scenario that runs only when named, and alone (its report is its own).
pub(super) struct Alone {
    pub name: &'static str,
    /// What it measures, and against what.
    pub measures: &'static str,
    /// The usage error when it is named with others.
    pub alone: &'static str,
    /// `Ok(false)`: it ran and failed (exit 1); `Err`: it could not run (exit 2).
    pub run: fn(&Options) -> Result<bool>,
}

/// The scenarios that run alone, checked in this order. A new one is one row here (and its
/// module beside the others).
pub(super) const ALONE: &[Alone] = &[
    Alone {
        name: "full-size",
        measures: "the one-hour rig trace read per format and the verbs' RSS (no daemon)",
        alone: "--only full-size runs alone (it drives no daemon)",
        run: full_size::alone,
    },
    Alone {
        name: "hour-trace",
        measures: "nothing: writes the one-hour rig trace and prints its path",
        alone: "--only hour-trace runs alone",
        run: hour_trace::alone,
    },
    Alone {
        name: "soak",
        measures: "the crew's day with everything on: false alarms and RSS over --minutes",
        alone: "--only soak runs alone",
        run: soak::alone,
    },
    Alone {
        name: "faults",
        measures: "a failing disk (EIO, ENOSPC, shutdown): acknowledged samples lost, alarm delay",
        alone: "--only faults runs alone (it mounts its own disks)",
        run: faults::run,
    },
    Alone {
        name: "rosbag",
        measures: "`roverlog rosbag` vs upstream's `roverd rosbag`, CPU and wall",
        alone: "--only rosbag runs alone (it drives no daemon)",
        run: rosbag::run_bench,
    },
    Alone {
        name: "offload",
        measures: "`roverlog offload` vs `rclone copy` to the same Garage, same parallelism; re-sent bytes after kills",
        alone: "--only offload runs alone (it starts its own S3 server, no daemon)",
        run: offload::alone,
    },
    Alone {
        name: "camera",
        measures: "the V4L2 camera driver's CPU at 1080p 60 fps (replay) vs ffmpeg decode+encode",
        alone: "--only camera runs alone (its daemon is its own)",
        run: camera::alone,
    },
    Alone {
        name: "rig",
        measures: "the rig's four sensors as driver processes vs upstream's Python writers",
        alone: "the rig scenario runs alone (--only rig): its report is its own",
        run: rig::run,
    },
];
