//! A recording's topics as roverd sensors, once every file has been read: each topic's
//! channels (those of its first message; point clouds padded to the widest; JPEG channels
//! shaped by the first frame), samples in time order, the mapping file's names, and sensor
//! names made from topic names.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;

use roverlog_core::format::{ChannelFormat, SensorMeta};
use roverlog_core::replay::SourceSensor;

use crate::container::MsgRef;
use crate::error::SkipReason;
use crate::error::{Error, MappingProblem, Result};
use crate::import::cloud::{self, Widths};
use crate::import::mapping::{ImageFormat, Mapped, Stamp};
use crate::import::topic_map::TopicRule;
use crate::typesys::schema::Schema;
use crate::wire::decode::{WideChars, Wire};

/// One topic of the recording as the scan collects it.
pub(super) struct Topic {
    pub(super) topic: String,
    pub(super) msgtype: String,
    pub(super) wire: Wire,
    pub(super) schema: Option<Schema>,
    /// The form of its `wstring`s, once a message with a non-empty one has told it
    /// ([`decode_detect`]); until then every wstring was empty and either form reads it.
    pub(super) wide: Option<WideChars>,
    /// Why it is skipped, once it is.
    pub(super) skip: Option<SkipReason>,
    pub(super) messages: u64,
    pub(super) refs: Vec<MsgRef>,
    pub(super) ts: Vec<f64>,
    pub(super) first: Option<Mapped>,
    pub(super) first_frame: Vec<u8>,
    /// A point cloud's sizes so far (a few numbers, whatever the message count).
    pub(super) widths: Option<Widths>,
    /// The width its samples are padded to, when they are ([`cloud::pad`]).
    pub(super) padded_to: Option<usize>,
    pub(super) stamp: Stamp,
    pub(super) images: ImageFormat,
    pub(super) frame_id: String,
}

/// A mapping file rule (`--map`) about `topic` we cannot follow.
pub(super) fn mapping_error(path: &Path, topic: &str, problem: MappingProblem) -> Error {
    Error::Ros {
        path: path.to_path_buf(),
        problem: crate::error::RosProblem::Mapping {
            topic: topic.to_string(),
            problem,
        },
    }
}

/// The topics that are not skipped as sensors, in the recording's order, with the topic each
/// is; a topic whose sensor cannot be made (no messages, clouds that cannot be padded) is
/// skipped with the reason.
pub(super) fn as_sensors(
    path: &Path,
    topics: &mut [Topic],
    rules: Option<&BTreeMap<String, TopicRule>>,
) -> Result<(Vec<SourceSensor>, Vec<usize>)> {
    let rule = |topic: &str| rules.and_then(|r| r.get(topic));
    let mut sensors = Vec::new();
    let mut sensor_topics = Vec::new();
    // Names the mapping file gives are taken first; the others go around them.
    let mut used: Vec<String> = rules
        .into_iter()
        .flat_map(|r| r.values().filter_map(|r| r.sensor.clone()))
        .collect();
    for (i, t) in topics.iter_mut().enumerate() {
        let Some(mut meta) = sensor_meta(t) else {
            continue;
        };
        if let Some(r) = rule(&t.topic) {
            rename_channels(path, &t.topic, &mut meta, r)?;
        }
        let name = match rule(&t.topic).and_then(|r| r.sensor.clone()) {
            Some(n) => n,
            None => {
                let n = sensor_name(&t.topic, &used);
                used.push(n.clone());
                n
            }
        };
        sensors.push(SourceSensor { name, meta });
        sensor_topics.push(i);
    }
    Ok((sensors, sensor_topics))
}

/// Topic `t` as a sensor's channels (its first message's, clouds padded to the widest, JPEG
/// channels shaped by the first frame), its samples put in time order; `None` when it is
/// skipped (the reason set).
fn sensor_meta(t: &mut Topic) -> Option<SensorMeta> {
    if t.skip.is_some() {
        return None;
    }
    let Some(mut first) = t.first.take() else {
        t.skip = Some(SkipReason::NoMessages);
        return None;
    };
    if let Some(w) = t.widths.filter(|w| w.varies) {
        if let Err(e) = cloud::pad_channels(&mut first.channels, w.max) {
            t.skip = Some(SkipReason::Padding(e));
            t.refs = Vec::new();
            t.ts = Vec::new();
            return None;
        }
        t.padded_to = Some(w.max);
    }
    // Samples in time order (a recorder logs in arrival order; stamps may differ).
    let mut order: Vec<usize> = (0..t.ts.len()).collect();
    order.sort_by(|&a, &b| t.ts[a].total_cmp(&t.ts[b]));
    t.refs = order.iter().map(|&k| t.refs[k]).collect();
    t.ts = order.iter().map(|&k| t.ts[k]).collect();
    let mut meta = SensorMeta::default();
    for (name, mut ch) in first.channels {
        if matches!(ch.format, ChannelFormat::Blob(_) | ChannelFormat::Mjpg) {
            ch.shape = jpeg_shape(&t.first_frame);
            if ch.format == ChannelFormat::Mjpg {
                let span = t.ts.last().unwrap_or(&0.0) - t.ts.first().unwrap_or(&0.0);
                let fps = if span > 0.0 {
                    (t.ts.len() - 1) as f64 / span
                } else {
                    30.0
                };
                let mut args = serde_json::Map::new();
                args.insert("fps".into(), json!(fps));
                ch.args = Some(args);
            }
        }
        meta.channels.push((name, ch));
    }
    t.first_frame = Vec::new();
    Some(meta)
}

/// The channel renames of the mapping file's rule for `topic`.
fn rename_channels(
    path: &Path,
    topic: &str,
    meta: &mut SensorMeta,
    rule: &TopicRule,
) -> Result<()> {
    for (from, to) in &rule.channels {
        let names: Vec<&str> = meta.channels.iter().map(|(n, _)| n.as_str()).collect();
        let Some(k) = names.iter().position(|n| n == from) else {
            return Err(mapping_error(
                path,
                topic,
                MappingProblem::NoSuchChannel {
                    from: from.clone(),
                    has: names.iter().map(|n| n.to_string()).collect(),
                },
            ));
        };
        if names.iter().enumerate().any(|(j, n)| j != k && n == to) {
            return Err(mapping_error(
                path,
                topic,
                MappingProblem::ChannelTwice { to: to.clone() },
            ));
        }
        meta.channels[k].0 = to.clone();
    }
    Ok(())
}

#[cfg(feature = "jpeg")]
fn jpeg_shape(frame: &[u8]) -> Vec<usize> {
    roverlog_core::jpeg::JpegFrame::open(frame, roverlog_core::jpeg::DEFAULT_MAX_PIXELS)
        .map(|f| vec![f.height(), f.width(), f.channels()])
        .unwrap_or_default()
}

#[cfg(not(feature = "jpeg"))]
fn jpeg_shape(_: &[u8]) -> Vec<usize> {
    Vec::new()
}

/// `/camera/image_raw` -> `camera_image_raw`; a second topic of the same name gets `_2`.
pub fn sensor_name(topic: &str, used: &[String]) -> String {
    let mut s: String = topic
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    s = s.trim_matches('_').to_string();
    if s.is_empty() {
        s = "topic".into();
    }
    s.truncate(200);
    let mut name = s.clone();
    let mut k = 2;
    while used.contains(&name) {
        name = format!("{s}_{k}");
        k += 1;
    }
    name
}
