//! [`export_mcap`]: a roverd trace written as one MCAP file (what goes where: the crate's
//! documentation), read through a [`TraceSource`] (a local trace, or one read in place). In
//! steps: [`plan`] the sensors (sample ranges, location mappings
//! checked, the total for the progress), then per sensor its data channels
//! ([`McapOut::data_channels`], read and encoded on every CPU, written in order) and its
//! positions ([`McapOut::locations`]), then the trace's events ([`McapOut::events`]); the
//! file is written under a temporary name and renamed when complete.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::ops::Range;
use std::path::Path;

use roverlog_core::error::{Error, IoContext};

use crate::error::ExportError;
use crate::source::{ChannelSource, SensorSource, TraceSource};
use roverlog_core::format::{DType, Trace};

use crate::location::{self, Location, LocationMapping};
use crate::log;
use crate::message::{channel_metadata, nanos, topic, MessageKind};
use crate::{ExportOptions, ExportReport, RECEIVE_TS_CHANNEL};

/// Messages read and encoded ahead of the writer, per channel (all workers together).
const QUEUE: usize = 256;

type Result<T, E = ExportError> = std::result::Result<T, E>;

/// Writes the trace in `trace` to the MCAP file `out` (written under a temporary name and
/// renamed when complete: a failure leaves no file). `progress(done, total)` counts samples.
pub fn export_mcap(
    trace: &Path,
    out: &Path,
    opts: &ExportOptions,
    progress: impl FnMut(u64, u64),
) -> Result<ExportReport> {
    export_mcap_from(&Trace::open(trace)?, out, opts, progress)
}

/// [`export_mcap`] of the trace `t` reads (a local [`Trace`], or a trace read in place:
/// [`crate::source::InPlace`]); the same trace gives the same file either way.
pub fn export_mcap_from<T: TraceSource>(
    t: &T,
    out: &Path,
    opts: &ExportOptions,
    progress: impl FnMut(u64, u64),
) -> Result<ExportReport> {
    let (sensors, total) = plan(t, opts)?;
    let tmp = out.with_file_name(format!(
        ".{}.partial-{}",
        out.file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    let r = (|| -> Result<ExportReport> {
        let file = File::create(&tmp).at(&tmp)?;
        let w = mcap::WriteOptions::new()
            .compression(Some(mcap::Compression::Zstd))
            .profile("")
            .create(BufWriter::new(file))
            .map_err(|e| mcap_err(out, e))?;
        let mut o = McapOut {
            w,
            out,
            schemas: BTreeMap::new(),
            report: ExportReport::default(),
            done: 0,
            total,
            progress,
        };
        for s in &sensors {
            let recv = receive_times(&s.sensor)?;
            o.data_channels(s, recv.as_deref())?;
            if let Some((mapping, loc)) = &s.location {
                o.locations(s, mapping, loc, recv.as_deref())?;
            }
        }
        o.events(t, opts.window.as_ref())?;
        let McapOut {
            mut w,
            report,
            done,
            mut progress,
            ..
        } = o;
        w.finish().map_err(|e| mcap_err(out, e))?;
        drop(w);
        std::fs::rename(&tmp, out).at(out)?;
        progress(done, total);
        Ok(report)
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

/// One sensor to export: its samples in the window, and its position mapping (resolved).
struct Planned<'o, S> {
    name: String,
    sensor: S,
    ts: Vec<f64>,
    range: Range<usize>,
    location: Option<(&'o LocationMapping, Location)>,
}

/// The sensors `opts` asks for, each opened with its sample range and its position mapping
/// checked against it, and the number of messages all together.
fn plan<'o, T: TraceSource>(
    t: &T,
    opts: &'o ExportOptions,
) -> Result<(Vec<Planned<'o, T::Sensor>>, u64)> {
    let names: Vec<String> = if opts.sensors.is_empty() {
        t.sensor_names()
    } else {
        opts.sensors.clone()
    };
    let mut sensors = Vec::new();
    let mut total = 0;
    for n in names {
        let sensor = t.sensor(&n)?;
        let ts = sensor.timestamps()?;
        let range = match &opts.window {
            Some(w) => ts.partition_point(|&x| x < w.start)..ts.partition_point(|&x| x < w.end),
            None => 0..ts.len(),
        };
        let location = opts
            .locations
            .get(&n)
            .map(|m| m.resolve(&n, sensor.meta()).map(|l| (m, l)))
            .transpose()?;
        let count = sensor.meta().data_channels().count() as u64 + u64::from(location.is_some());
        total += (range.end - range.start) as u64 * count;
        sensors.push(Planned {
            name: n,
            sensor,
            ts,
            range,
            location,
        });
    }
    Ok((sensors, total))
}

/// The sensor's receive times (its `ts_recv` channel, when it is a scalar `f8`): the
/// messages' publish times.
fn receive_times<S: SensorSource>(s: &S) -> Result<Option<Vec<f64>>> {
    match s.meta().get(RECEIVE_TS_CHANNEL) {
        Some(c) if c.dtype == DType::F8 && c.shape.is_empty() => {
            let c = s.channel(RECEIVE_TS_CHANNEL)?;
            let mut r = c.reader()?;
            let n = c.len(&mut r)?;
            let mut times = Vec::with_capacity(n as usize);
            for a in (0..n).step_by(c.batch_len().max(1) as usize) {
                let b = (a + c.batch_len().max(1)).min(n);
                c.visit(&mut r, a..b, &mut |v| {
                    times.push(f64::from_le_bytes(v[..8].try_into().unwrap()))
                })?;
            }
            Ok(Some(times))
        }
        _ => Ok(None),
    }
}

/// The MCAP file being written, with its schemas, the report and the progress.
struct McapOut<'a, P> {
    w: mcap::Writer<BufWriter<File>>,
    /// The file's final name (errors name it).
    out: &'a Path,
    /// Schema name -> id, added on first use.
    schemas: BTreeMap<String, u16>,
    report: ExportReport,
    done: u64,
    total: u64,
    progress: P,
}

impl<P: FnMut(u64, u64)> McapOut<'_, P> {
    /// The id of `s`, added on first use.
    fn schema(&mut self, s: foxglove::Schema) -> Result<u16> {
        if let Some(&id) = self.schemas.get(&s.name) {
            return Ok(id);
        }
        let id = self
            .w
            .add_schema(&s.name, &s.encoding, &s.data)
            .map_err(|e| mcap_err(self.out, e))?;
        self.schemas.insert(s.name.clone(), id);
        Ok(id)
    }

    /// A new channel on `topic`.
    fn channel(
        &mut self,
        schema: foxglove::Schema,
        topic: &str,
        encoding: &str,
        meta: &BTreeMap<String, String>,
    ) -> Result<u16> {
        let schema = self.schema(schema)?;
        self.w
            .add_channel(schema, topic, encoding, meta)
            .map_err(|e| mcap_err(self.out, e))
    }

    /// Writes message `seq` of `channel`, logged at `t`, published at `publish`.
    fn write(&mut self, channel: u16, seq: u64, t: f64, publish: f64, data: &[u8]) -> Result<()> {
        let header = mcap::records::MessageHeader {
            channel_id: channel,
            sequence: seq as u32,
            log_time: nanos(t),
            publish_time: nanos(publish),
        };
        self.w
            .write_to_known_channel(&header, data)
            .map_err(|e| mcap_err(self.out, e))
    }

    /// One sample written: the progress, every 256.
    fn count(&mut self) {
        self.done += 1;
        if self.done.is_multiple_of(256) {
            (self.progress)(self.done, self.total);
        }
    }

    /// Every data channel of `s` as a topic (those without a message kind listed in the
    /// report as skipped).
    fn data_channels<S: SensorSource>(
        &mut self,
        s: &Planned<S>,
        recv: Option<&[f64]>,
    ) -> Result<()> {
        let name = &s.name;
        for (ch_name, ch) in s.sensor.meta().data_channels() {
            if ch_name == RECEIVE_TS_CHANNEL {
                continue;
            }
            let Some(k) = MessageKind::of(ch) else {
                self.report.skipped.push(format!(
                    "{name}/{ch_name}: {} channels are not exported",
                    ch.format.as_str()
                ));
                continue;
            };
            let topic = topic(name, ch_name);
            let channel = self.channel(
                k.schema(),
                &topic,
                k.message_encoding(),
                &channel_metadata(ch),
            )?;
            let mut n = 0u64;
            let c = s.sensor.channel(ch_name)?;
            if s.range.is_empty() {
                // Nothing to read, but a channel that does not open is still an error.
                c.reader()?;
            }
            // Reading and encoding (an `lzmaf` frame's decoding, the message's bytes) on
            // every usable CPU, compressing and writing the MCAP on this thread, in order,
            // with bounded queues between: memory that does not grow. Work goes in batches
            // of the channel's `batch_len` samples (1 locally; small samples read in place
            // come many to a request).
            let (ts, k, start) = (&s.ts, &k, s.range.start);
            let batch = c.batch_len().max(1) as usize;
            let workers = roverlog_core::cpus::usable();
            let c = &c;
            roverlog_core::parallel::ordered(
                s.range.len().div_ceil(batch),
                workers,
                (QUEUE / workers / batch).max(2),
                || c.reader(),
                |r, j| {
                    let a = start + j * batch;
                    let b = (a + batch).min(s.range.end);
                    let mut encoded = Vec::with_capacity(b - a);
                    let mut i = a;
                    c.visit(r, a as u64..b as u64, &mut |sample| {
                        encoded.push(k.encode(name, ts[i], sample));
                        i += 1;
                    })?;
                    Ok(encoded)
                },
                |j, encoded| {
                    for (m, data) in encoded.into_iter().enumerate() {
                        let i = start + j * batch + m;
                        let t = ts[i];
                        let publish = recv.and_then(|r| r.get(i).copied()).unwrap_or(t);
                        self.write(channel, n, t, publish, &data)?;
                        n += 1;
                        self.count();
                    }
                    Ok(())
                },
            )?;
            self.report.topics.push((topic, n));
        }
        Ok(())
    }

    /// `foxglove.LocationFix` messages of `s` on `/<sensor>/location`, read through its
    /// mapping.
    fn locations<S: SensorSource>(
        &mut self,
        s: &Planned<S>,
        mapping: &LocationMapping,
        loc: &Location,
        recv: Option<&[f64]>,
    ) -> Result<()> {
        let topic = location::topic(&s.name);
        let meta: BTreeMap<String, String> = [
            ("latitude", Some(&mapping.latitude)),
            ("longitude", Some(&mapping.longitude)),
            ("altitude", mapping.altitude.as_ref()),
        ]
        .into_iter()
        .filter_map(|(k, r)| Some((k.to_string(), r?.to_string())))
        .collect();
        let channel = self.channel(location::schema(), &topic, "protobuf", &meta)?;
        let names: Vec<&str> = s.sensor.meta().data_channels().map(|(n, _)| n).collect();
        let mut readers = loc
            .channels()
            .into_iter()
            .map(|i| {
                let c = s.sensor.channel(names[i])?;
                let r = c.reader()?;
                Ok((i, c, r))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut n = 0u64;
        // In batches, as the data channels (the smallest batch of the mapped channels).
        let batch = readers
            .iter()
            .map(|(_, c, _)| c.batch_len().max(1) as usize)
            .min()
            .unwrap_or(1);
        for a in s.range.clone().step_by(batch) {
            let b = (a + batch).min(s.range.end);
            // Per channel of the sensor, its samples `a..b` (the mapped channels only).
            let mut batches = vec![Vec::new(); names.len()];
            for (k, c, r) in &mut readers {
                c.visit(r, a as u64..b as u64, &mut |v| batches[*k].push(v.to_vec()))?;
            }
            for i in a..b {
                let slices: Vec<&[u8]> = batches
                    .iter()
                    .map(|got| got.get(i - a).map_or(&[][..], Vec::as_slice))
                    .collect();
                let t = s.ts[i];
                let publish = recv.and_then(|r| r.get(i).copied()).unwrap_or(t);
                let data = Location::encode(&s.name, t, loc.read(&slices));
                self.write(channel, n, t, publish, &data)?;
                n += 1;
                self.count();
            }
        }
        self.report.topics.push((topic, n));
        Ok(())
    }

    /// The trace's events (in the window) as `foxglove.Log` on `/roverlog/events`.
    fn events(&mut self, trace: &impl TraceSource, window: Option<&Range<f64>>) -> Result<()> {
        let events = trace.events()?;
        if events.is_empty() {
            return Ok(());
        }
        let channel = self.channel(
            log::schema(),
            log::EVENTS_TOPIC,
            "protobuf",
            &BTreeMap::new(),
        )?;
        let mut n = 0u64;
        for e in &events {
            let t = e.t;
            if window.is_some_and(|w| !w.contains(&t)) {
                continue;
            }
            self.write(channel, n, t, t, &log::encode_event(e))?;
            n += 1;
        }
        self.report.topics.push((log::EVENTS_TOPIC.into(), n));
        Ok(())
    }
}

fn mcap_err(out: &Path, e: mcap::McapError) -> ExportError {
    Error::io(out, std::io::Error::other(format!("mcap: {e}"))).into()
}
