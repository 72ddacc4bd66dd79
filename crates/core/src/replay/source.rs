//! Replay sources: anything that can be presented as sensors with timestamps and samples
//! ([`Source`]). [`TraceSource`] reads a roverd trace; the other formats' sources live beside
//! their readers ([`crate::gulp::GulpSource`], [`crate::zarr::l5kit::L5KitSource`], and
//! `roverlog-ros`'s `RosSource`).

use std::path::Path;
use std::sync::Arc;

use super::fetch::Fetched;
use crate::error::{ConfigProblem, CorruptProblem, Error, Result};
use crate::format::lzmaf::LzmafReader;
use crate::format::{ChannelFormat, ChannelReader, SensorMeta, Trace, TS_CHANNEL};

/// One sensor a source offers: its name and its data channels (`ts` excluded), in the formats
/// they will be sent and stored in.
#[derive(Debug, Clone)]
pub struct SourceSensor {
    pub name: String,
    pub meta: SensorMeta,
}

/// A dataset presented as sensors, for replay and import. `Send`: import and replay read it
/// on a thread of its own while others decode what it read ([`Source::fetch`]).
pub trait Source: Send {
    /// The sensors, in a stable order.
    fn sensors(&self) -> &[SourceSensor];
    /// All timestamps (epoch seconds) of sensor `sensor`.
    fn timestamps(&mut self, sensor: usize) -> Result<Vec<f64>>;
    /// Sample `index` of `sensor`: one buffer per data channel, in declared order. `out` is
    /// resized and reused between calls.
    fn read(&mut self, sensor: usize, index: u64, out: &mut Vec<Vec<u8>>) -> Result<()>;
    /// Sample `index` of `sensor` as [`crate::format::SensorWriter::append_encoded`] takes
    /// it: like [`Source::read`], with every `lzmaf` channel's sample an `.xz` frame
    /// compressed at `preset`. A source that stores such frames compressed gives them as
    /// stored (import then neither decodes nor re-encodes them).
    fn read_encoded(
        &mut self,
        sensor: usize,
        index: u64,
        preset: u32,
        out: &mut Vec<Vec<u8>>,
    ) -> Result<()> {
        self.read(sensor, index, out)?;
        let meta = &self.sensors()[sensor].meta;
        for ((_, ch), buf) in meta.data_channels().zip(out.iter_mut()) {
            if ch.format == ChannelFormat::Lzmaf {
                *buf = crate::format::lzma::compress(buf, preset);
            }
        }
        Ok(())
    }
    /// Sample `index` of `sensor` in two steps, for [`crate::parallel::pipeline()`]: what must
    /// be read in order happens here, the rest (decoding, compressing) in
    /// [`Fetched::finish`], on any thread. `encode`: `Some(preset)` for what
    /// [`Source::read_encoded`] gives, `None` for what [`Source::read`] gives. By default the
    /// sample is read here and only the `lzmaf` compression is left for later; a source
    /// whose samples take decoding overrides it.
    fn fetch(&mut self, sensor: usize, index: u64, encode: Option<u32>) -> Result<Fetched> {
        let mut out = Vec::new();
        self.read(sensor, index, &mut out)?;
        let f = Fetched::ready(out);
        Ok(match encode {
            Some(preset) => f.compressing_lzmaf(&self.sensors()[sensor].meta, preset),
            None => f,
        })
    }
    /// Extra files for the sensor's directory on import (name, contents), e.g. an index of
    /// the videos a camera sensor was made from.
    fn extra_files(&self, _sensor: usize) -> Vec<(String, Vec<u8>)> {
        Vec::new()
    }
}

/// A roverd trace as a source. `lzma` channels (whole-file, not appendable) are sent and
/// stored as `raw`; formats we cannot read are refused when the source is opened.
pub struct TraceSource {
    sensors: Vec<SourceSensor>,
    readers: Vec<Vec<Reader>>,
    trace: Trace,
    model: crate::timestamps::Model,
}

impl TraceSource {
    /// Opens `dir`, with the named sensors (all real sensors when `only` is empty).
    pub fn open(dir: &Path, only: &[String]) -> Result<TraceSource> {
        let trace = Trace::open(dir)?;
        let names: Vec<String> = if only.is_empty() {
            trace.sensor_names().into_iter().map(String::from).collect()
        } else {
            only.to_vec()
        };
        for (i, name) in names.iter().enumerate() {
            if names[..i].contains(name) {
                return Err(Error::from(ConfigProblem::SensorTwice {
                    sensor: name.clone(),
                }));
            }
        }
        let mut sensors = Vec::new();
        let mut readers = Vec::new();
        for name in names {
            let s = trace.sensor(&name)?;
            let mut meta = SensorMeta::default();
            let mut rs = Vec::new();
            for (ch, c) in s.meta().data_channels() {
                let mut c = c.clone();
                match &c.format {
                    ChannelFormat::Lzma => c.format = ChannelFormat::Raw,
                    ChannelFormat::Other(f) => {
                        return Err(Error::UnsupportedFormat {
                            channel: format!("{name}/{ch}"),
                            format: format!("{f} (cannot be replayed; leave this sensor out)"),
                        })
                    }
                    _ => {}
                }
                rs.push(match s.channel(ch)? {
                    ChannelReader::Lzmaf(l) => Reader::Lzmaf(Arc::new(l)),
                    r => Reader::Other(r),
                });
                meta.channels.push((ch.to_string(), c));
            }
            sensors.push(SourceSensor { name, meta });
            readers.push(rs);
        }
        Ok(TraceSource {
            sensors,
            readers,
            trace,
            model: crate::timestamps::Model::Raw,
        })
    }

    /// Gives every sensor's timestamps through `model` (upstream's `smooth`/`discretize`).
    pub fn with_timestamps(mut self, model: crate::timestamps::Model) -> TraceSource {
        self.model = model;
        self
    }
}

impl Source for TraceSource {
    fn sensors(&self) -> &[SourceSensor] {
        &self.sensors
    }

    fn timestamps(&mut self, sensor: usize) -> Result<Vec<f64>> {
        let name = &self.sensors[sensor].name;
        let ts = self.trace.sensor(name)?.timestamps()?;
        // The merge cannot place such a sample: it would be left out without a word.
        if let Some(i) = ts.iter().position(|t| !t.is_finite()) {
            return Err(Error::corrupt(
                self.trace.dir().join(name).join(TS_CHANNEL),
                CorruptProblem::TimeNotFinite {
                    sample: i,
                    time: ts[i],
                },
            ));
        }
        self.model.apply(&ts).map_err(|e| {
            Error::corrupt(
                self.trace.dir().join(name).join(TS_CHANNEL),
                CorruptProblem::Timestamps {
                    error: Box::new(e),
                    model: format!("{:?}", self.model),
                },
            )
        })
    }

    fn read(&mut self, sensor: usize, index: u64, out: &mut Vec<Vec<u8>>) -> Result<()> {
        let readers = &mut self.readers[sensor];
        out.resize_with(readers.len(), Vec::new);
        for (r, buf) in readers.iter_mut().zip(out.iter_mut()) {
            match r {
                Reader::Lzmaf(l) => l.get_into(index, buf)?,
                Reader::Other(r) => {
                    buf.clear();
                    buf.extend_from_slice(&r.get(index)?);
                }
            }
        }
        Ok(())
    }

    /// `lzmaf` frames are decompressed in [`Fetched::finish`] (for replay; import copies
    /// them as stored, as [`Source::read_encoded`] does).
    fn fetch(&mut self, sensor: usize, index: u64, encode: Option<u32>) -> Result<Fetched> {
        let mut out = Vec::new();
        if let Some(preset) = encode {
            self.read_encoded(sensor, index, preset, &mut out)?;
            return Ok(Fetched::ready(out));
        }
        let mut later = Vec::new();
        for (k, r) in self.readers[sensor].iter_mut().enumerate() {
            out.push(match r {
                Reader::Lzmaf(l) => {
                    later.push((k, l.clone()));
                    Vec::new()
                }
                Reader::Other(r) => r.get(index)?.into_owned(),
            });
        }
        if later.is_empty() {
            return Ok(Fetched::ready(out));
        }
        Ok(Fetched::later(move || {
            for (k, l) in later {
                l.get_into(index, &mut out[k])?;
            }
            Ok(out)
        }))
    }

    /// An `lzmaf` channel's frames are copied as stored (its format is kept on import).
    fn read_encoded(
        &mut self,
        sensor: usize,
        index: u64,
        preset: u32,
        out: &mut Vec<Vec<u8>>,
    ) -> Result<()> {
        let readers = &mut self.readers[sensor];
        let meta = &self.sensors[sensor].meta;
        out.resize_with(readers.len(), Vec::new);
        for ((r, buf), (_, ch)) in readers
            .iter_mut()
            .zip(out.iter_mut())
            .zip(meta.data_channels())
        {
            buf.clear();
            match r {
                Reader::Lzmaf(l) => buf.extend_from_slice(l.compressed(index)?),
                Reader::Other(r) if ch.format == ChannelFormat::Lzmaf => {
                    buf.extend_from_slice(&crate::format::lzma::compress(&r.get(index)?, preset))
                }
                Reader::Other(r) => buf.extend_from_slice(&r.get(index)?),
            }
        }
        Ok(())
    }
}

/// A trace channel's reader: `lzmaf` ones shared with the threads that decode their frames.
enum Reader {
    Lzmaf(Arc<LzmafReader>),
    Other(ChannelReader),
}

/// Checks that no source sensor declares `ts` itself.
pub fn check_sensors(sensors: &[SourceSensor]) -> Result<()> {
    for s in sensors {
        if s.meta.get(TS_CHANNEL).is_some() {
            return Err(Error::from(ConfigProblem::DeclaresTs {
                sensor: s.name.clone(),
            }));
        }
    }
    Ok(())
}
