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
//! `location` (a position mapping and its `LocationFix`); this file writes the file. The
//! daemon's live feed uses the three, so it shows a trace as this export does.
//!
//! [`ros`] writes a trace's lidar and IMU as a ROS 1 bag or a ROS 2 (MCAP) bag instead
//! (`roverlog rosbag`, upstream's `roverd rosbag`).

use std::collections::BTreeMap;
use std::io::BufWriter;
use std::ops::Range;
use std::path::Path;

use roverlog_core::error::{Error, IoContext, Result};
use roverlog_core::format::events::read_events;
use roverlog_core::format::{DType, Trace};

pub mod error;
pub mod location;
pub mod log;
pub mod message;
pub mod ros;

use location::{Location, LocationMapping};
use message::{channel_metadata, nanos, topic, MessageKind};

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

/// The id of `s` in `w`, added on first use.
fn schema_id<W: std::io::Write + std::io::Seek>(
    w: &mut mcap::Writer<W>,
    ids: &mut BTreeMap<String, u16>,
    out: &Path,
    s: foxglove::Schema,
) -> Result<u16> {
    if let Some(&id) = ids.get(&s.name) {
        return Ok(id);
    }
    let id = w
        .add_schema(&s.name, &s.encoding, &s.data)
        .map_err(|e| mcap_err(out, e))?;
    ids.insert(s.name.clone(), id);
    Ok(id)
}

fn mcap_err(out: &Path, e: mcap::McapError) -> Error {
    Error::io(out, std::io::Error::other(format!("mcap: {e}")))
}

/// Messages read and encoded ahead of the writer, per channel (all workers together).
const QUEUE: usize = 256;

/// Writes the trace in `trace` to the MCAP file `out` (written under a temporary name and
/// renamed when complete: a failure leaves no file). `progress(done, total)` counts samples.
pub fn export_mcap(
    trace: &Path,
    out: &Path,
    opts: &ExportOptions,
    mut progress: impl FnMut(u64, u64),
) -> std::result::Result<ExportReport, error::ExportError> {
    let t = Trace::open(trace)?;
    let names: Vec<String> = if opts.sensors.is_empty() {
        t.sensor_names().into_iter().map(String::from).collect()
    } else {
        opts.sensors.clone()
    };
    let mut sensors = Vec::new();
    let mut total = 0;
    for n in &names {
        let s = t.sensor(n)?;
        let ts = s.timestamps()?;
        let range = match &opts.window {
            Some(w) => ts.partition_point(|&x| x < w.start)..ts.partition_point(|&x| x < w.end),
            None => 0..ts.len(),
        };
        let location = opts
            .locations
            .get(n)
            .map(|m| m.resolve(n, s.meta()).map(|l| (m, l)))
            .transpose()?;
        let count = s.meta().data_channels().count() as u64 + u64::from(location.is_some());
        total += (range.end - range.start) as u64 * count;
        sensors.push((n.clone(), s, ts, range, location));
    }
    let tmp = out.with_file_name(format!(
        ".{}.partial-{}",
        out.file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    let r = (|| -> Result<ExportReport> {
        let file = std::fs::File::create(&tmp).at(&tmp)?;
        let mut w = mcap::WriteOptions::new()
            .compression(Some(mcap::Compression::Zstd))
            .profile("")
            .create(BufWriter::new(file))
            .map_err(|e| mcap_err(out, e))?;
        let mut schemas = BTreeMap::new();
        let mut report = ExportReport::default();
        let mut done = 0;
        for (name, s, ts, range, location) in &sensors {
            let recv = match s.meta().get(RECEIVE_TS_CHANNEL) {
                Some(c) if c.dtype == DType::F8 && c.shape.is_empty() => {
                    let mut r = s.channel(RECEIVE_TS_CHANNEL)?;
                    Some(
                        (0..r.len()?)
                            .map(|i| {
                                r.get(i)
                                    .map(|b| f64::from_le_bytes(b[..8].try_into().unwrap()))
                            })
                            .collect::<Result<Vec<f64>>>()?,
                    )
                }
                _ => None,
            };
            for (ch_name, ch) in s.meta().data_channels() {
                if ch_name == RECEIVE_TS_CHANNEL {
                    continue;
                }
                let Some(k) = MessageKind::of(ch) else {
                    report.skipped.push(format!(
                        "{name}/{ch_name}: {} channels are not exported",
                        ch.format.as_str()
                    ));
                    continue;
                };
                let schema = schema_id(&mut w, &mut schemas, out, k.schema())?;
                let topic = topic(name, ch_name);
                let channel = w
                    .add_channel(schema, &topic, k.message_encoding(), &channel_metadata(ch))
                    .map_err(|e| mcap_err(out, e))?;
                let mut n = 0u64;
                if range.is_empty() {
                    // Nothing to read, but a channel that does not open is still an error.
                    s.channel(ch_name)?;
                }
                // Reading and encoding (an `lzmaf` frame's decoding, the message's bytes) on
                // every usable CPU, compressing and writing the MCAP on this thread, in
                // order, with bounded queues between: memory that does not grow.
                let (ts, k, start) = (&ts, &k, range.start);
                let workers = roverlog_core::cpus::usable();
                let s = &s;
                roverlog_core::parallel::ordered(
                    range.len(),
                    workers,
                    (QUEUE / workers).max(2),
                    || s.channel(ch_name),
                    |r, j| {
                        let i = start + j;
                        r.get(i as u64).map(|sample| k.encode(name, ts[i], &sample))
                    },
                    |j, data| {
                        let i = start + j;
                        let t = ts[i];
                        let publish = recv.as_ref().and_then(|r| r.get(i).copied()).unwrap_or(t);
                        let header = mcap::records::MessageHeader {
                            channel_id: channel,
                            sequence: n as u32,
                            log_time: nanos(t),
                            publish_time: nanos(publish),
                        };
                        w.write_to_known_channel(&header, &data)
                            .map_err(|e| mcap_err(out, e))?;
                        n += 1;
                        done += 1;
                        if done % 256 == 0 {
                            progress(done, total);
                        }
                        Ok(())
                    },
                )?;
                report.topics.push((topic, n));
            }
            if let Some((mapping, loc)) = location {
                let schema = schema_id(&mut w, &mut schemas, out, location::schema())?;
                let topic = location::topic(name);
                let meta: BTreeMap<String, String> = [
                    ("latitude", Some(&mapping.latitude)),
                    ("longitude", Some(&mapping.longitude)),
                    ("altitude", mapping.altitude.as_ref()),
                ]
                .into_iter()
                .filter_map(|(k, r)| Some((k.to_string(), r?.to_string())))
                .collect();
                let channel = w
                    .add_channel(schema, &topic, "protobuf", &meta)
                    .map_err(|e| mcap_err(out, e))?;
                let names: Vec<&str> = s.meta().data_channels().map(|(n, _)| n).collect();
                let mut readers = loc
                    .channels()
                    .into_iter()
                    .map(|i| Ok((i, s.channel(names[i])?)))
                    .collect::<Result<Vec<_>>>()?;
                let mut n = 0u64;
                for i in range.clone() {
                    let mut samples = vec![Vec::new(); names.len()];
                    for (k, r) in &mut readers {
                        samples[*k] = r.get(i as u64)?.into_owned();
                    }
                    let slices: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
                    let t = ts[i];
                    let publish = recv.as_ref().and_then(|r| r.get(i).copied()).unwrap_or(t);
                    let header = mcap::records::MessageHeader {
                        channel_id: channel,
                        sequence: n as u32,
                        log_time: nanos(t),
                        publish_time: nanos(publish),
                    };
                    let data = Location::encode(name, t, loc.read(&slices));
                    w.write_to_known_channel(&header, &data)
                        .map_err(|e| mcap_err(out, e))?;
                    n += 1;
                    done += 1;
                    if done % 256 == 0 {
                        progress(done, total);
                    }
                }
                report.topics.push((topic, n));
            }
        }
        let events = read_events(trace)?;
        if !events.is_empty() {
            let schema = schema_id(&mut w, &mut schemas, out, log::schema())?;
            let channel = w
                .add_channel(schema, log::EVENTS_TOPIC, "protobuf", &BTreeMap::new())
                .map_err(|e| mcap_err(out, e))?;
            let mut n = 0u64;
            for e in &events {
                let t = e.t;
                if opts.window.as_ref().is_some_and(|w| !w.contains(&t)) {
                    continue;
                }
                let header = mcap::records::MessageHeader {
                    channel_id: channel,
                    sequence: n as u32,
                    log_time: nanos(t),
                    publish_time: nanos(t),
                };
                w.write_to_known_channel(&header, &log::encode_event(e))
                    .map_err(|e| mcap_err(out, e))?;
                n += 1;
            }
            report.topics.push((log::EVENTS_TOPIC.into(), n));
        }
        w.finish().map_err(|e| mcap_err(out, e))?;
        drop(w);
        std::fs::rename(&tmp, out).at(out)?;
        progress(done, total);
        Ok(report)
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    Ok(r?)
}
