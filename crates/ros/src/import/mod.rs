//! ROS recordings into roverd: the recording as a replay [`Source`] ([`RosSource`]), one
//! sensor per topic, so `import` and `replay` take it; [`import`] writes it as a trace.
//!
//! - [`mapping`]: the default mapping of standard messages to channels (docs/ros.md);
//!   [`cloud`]: unorganized point clouds of changing width, padded to the widest;
//!   [`topic_map`]: the optional mapping file (per topic: skip, names, stamp, images).
//! - [`source`]: the recording as sensors, one per topic (`scan`: its scan when opened, each
//!   message decoded and mapped once, in batches on every core); topics we cannot import are listed
//!   with the reason, never dropped without a word; [`import`] writes them as events.
//!
//! Dependencies point down this list; the readers below (`rosbag1`, `rosbag2`, `storage`)
//! know nothing of this module.

pub mod cloud;
pub mod mapping;
mod options;
mod scan;
mod sensors;
pub mod source;
pub mod topic_map;

use std::path::Path;

pub use mapping::{ImageFormat, Stamp};
pub use source::{RosOptions, RosSource, SkippedTopic};
pub use topic_map::{TopicMap, TopicRule};

use crate::error::{IoContext, Result};
use roverlog_core::format::events::{events_path, Event, EventLine, EVENTS_DIR};
use roverlog_core::format::WriterOptions;
use roverlog_core::import::ImportReport;
use roverlog_core::replay::Source;

/// What importing a recording did: the sensors written and the topics left out.
#[derive(Debug, Clone)]
pub struct RosImportReport {
    pub written: ImportReport,
    pub skipped: Vec<SkippedTopic>,
}

/// Writes `source` into a new trace at `out` (see [`roverlog_core::import::import_in_time_order`]), then one
/// `import_skipped` event per topic left out (`_roverlog/events.jsonl`: topic, type,
/// messages, reason), so the trace itself says what it lacks. The messages are read in order
/// on one thread and decoded on `threads` others (0: every usable CPU); the trace is the same
/// byte for byte whatever their number.
pub fn import(
    source: &mut RosSource,
    out: &Path,
    described_as: &str,
    threads: usize,
    progress: impl FnMut(u64, u64),
) -> Result<RosImportReport> {
    // Every topic's writer open at once, samples in time order, so a chunk is decompressed
    // about once, not once per topic. A blob (jpg) channel keeps up to `blob_max_open` files
    // open between syncs: shared among the image topics so descriptors stay few.
    let blob_sensors = source
        .sensors()
        .iter()
        .filter(|s| {
            s.meta
                .channels
                .iter()
                .any(|(_, c)| matches!(c.format, roverlog_core::format::ChannelFormat::Blob(_)))
        })
        .count();
    let opts = WriterOptions {
        blob_max_open: (256 / blob_sensors.max(1)).clamp(4, 64),
        ..WriterOptions::default()
    };
    let written = roverlog_core::import::import_in_time_order(
        source,
        out,
        described_as,
        &opts,
        threads,
        progress,
    )?;
    let skipped = source.skipped();
    if !skipped.is_empty() {
        let dir = out.join(EVENTS_DIR);
        std::fs::create_dir_all(&dir).at(&dir)?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let mut text = Vec::new();
        for s in &skipped {
            let serde_json::Value::Object(map) = serde_json::json!({
                "event": "import_skipped",
                "source": described_as,
                "topic": s.topic,
                "type": s.msgtype,
                "messages": s.messages,
                "reason": s.reason.to_string(),
            }) else {
                unreachable!("an object")
            };
            let line = EventLine {
                t: now,
                event: Event::Other(map),
            };
            text.extend(line.to_json());
            text.push(b'\n');
        }
        let path = events_path(out);
        roverlog_core::format::meta::write_file_atomic(&path, &text)?;
    }
    Ok(RosImportReport { written, skipped })
}
