//! A roverd trace as an MCAP file for Foxglove (and its open fork Lichtblick).
//!
//! Every data channel of every sensor becomes topic `/<sensor>/<channel>`:
//! - `jpg` and `mjpg` frames: `foxglove.CompressedImage` (format `jpeg`, the JPEG bytes as
//!   stored, never re-encoded);
//! - `u1 [H, W, 3]` samples: `foxglove.RawImage` `rgb8`; `u1 [H, W]`: `mono8`; `u2 [H, W]`:
//!   `16UC1` (little-endian, as stored);
//! - every other fixed-size channel: JSON, schema `roverlog.Sample` (JSON Schema):
//!   `{"value": ...}` with the sample as nested lists of the channel's shape (a scalar is a
//!   number; complex numbers are `[re, im]`; booleans are `true`/`false`);
//! - `npz` channels are left out (listed in the report).
//!
//! Protobuf messages and their schemas come from the Foxglove SDK (`foxglove::messages`).
//! Log time is the sample's `ts`; publish time is the sample's receive time when the sensor
//! has a `ts_recv` channel, else `ts`. The trace's events (`_roverlog/events.jsonl`) become
//! `foxglove.Log` messages on `/roverlog/events` with levels (`log`: an alarm raised is a
//! warning or an error, its clearing and a mark are info). A sensor given a position mapping
//! ([`ExportOptions::locations`]) also has `foxglove.LocationFix` messages on
//! `/<sensor>/location` (`location`). Channels carry their roverd description as MCAP channel
//! metadata (`format`, `type`, `shape`, `desc`).
//!
//! Modules: `message` (a sample as a Foxglove message), `log` (an event as a `Log`),
//! `location` (a position mapping and its `LocationFix`); `mcap_file` writes the file. The
//! daemon's live feed uses the three, so it shows a trace as this export does. `source` is
//! what the export reads a trace through: a local one, or one read in place on object
//! storage ([`export_mcap_from`] with a [`source::InPlace`]): the same file either way.
//!
//! A trace's lidar and IMU as a ROS bag (`roverlog rosbag`) is `roverlog-ros`'s.

use std::collections::BTreeMap;
use std::ops::Range;

pub mod error;
pub mod location;
pub mod log;
mod mcap_file;
pub mod message;
pub mod source;

use location::LocationMapping;
pub use mcap_file::{export_mcap, export_mcap_from};

/// The receive-time channel publish times come from, when a sensor has it.
pub const RECEIVE_TS_CHANNEL: &str = "ts_recv";

/// What to export.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// Only these sensors (all when empty).
    pub sensors: Vec<String>,
    /// Only samples with `ts` in this window (epoch seconds).
    pub window: Option<Range<f64>>,
    /// Per sensor: where its position is (its samples also become `foxglove.LocationFix`);
    /// checked against the sensor before anything is written. Sensors not exported are
    /// ignored.
    pub locations: BTreeMap<String, LocationMapping>,
}

/// What was exported.
#[derive(Debug, Default)]
pub struct ExportReport {
    /// Per topic: messages written.
    pub topics: Vec<(String, u64)>,
    /// Channels not exported, with why.
    pub skipped: Vec<String>,
}
