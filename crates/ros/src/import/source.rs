//! A ROS recording as a replay [`Source`]: one sensor per topic we understand.
//!
//! Opening reads the whole recording once (`scan`): every message is decoded against its
//! schema and mapped to channels ([`crate::import::mapping`]), in batches on every usable CPU
//! ([`RosOptions::threads`]); a topic keeps where each message is and its
//! timestamp, nothing else. A topic whose schema does not parse, whose messages do not decode
//! or do not map, or whose messages change type or shape is not a sensor: it is listed in
//! [`RosSource::skipped`] with the reason (an unorganized point cloud that changes only its
//! width is padded to its widest instead, [`crate::import::cloud`]). Reading a sample decodes its
//! message again (the last decompressed chunks are kept), in [`Fetched::finish`] on any thread.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;

use crate::container::{MsgRef, MAX_CHUNK};
use crate::error::{Error, Result};
use crate::error::{MapError, SkipReason};
use crate::import::cloud;
use crate::import::mapping::{self, ImageFormat, Stamp};
pub use crate::import::options::RosOptions;
use crate::import::scan::Collector;
use crate::import::sensors::{as_sensors, mapping_error, Topic};
use crate::rosbag2::metadata::Compression;
use crate::rosbag2::zstd::{FrameDecoder, Scratch};
use crate::storage::Storage;
use crate::typesys::schema::Schema;
use crate::wire::decode::{decode, Limits, Wire};
use roverlog_core::replay::{Fetched, Source, SourceSensor};

/// Most decompressed chunks kept: samples are read in time order over all topics (see
/// [`roverlog_core::import::import_in_time_order`]) and a topic's header stamps may lag the
/// log time its chunk is ordered by, so reading moves among a few neighbouring chunks.
pub const CACHE_CHUNKS: usize = 8;
/// Most bytes of decompressed chunks kept (the latest one is kept whatever its size).
pub const CACHE_BYTES: usize = 256 << 20;

/// A topic that is not imported, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct SkippedTopic {
    pub topic: String,
    pub msgtype: String,
    /// Messages of it in the recording.
    pub messages: u64,
    pub reason: SkipReason,
}

/// A ROS recording (MCAP file, ROS 1 bag, rosbag2 directory) as sensors.
pub struct RosSource {
    path: PathBuf,
    files: Vec<Storage>,
    topics: Vec<Topic>,
    /// Per sensor: its topic's index.
    sensor_topics: Vec<usize>,
    sensors: Vec<SourceSensor>,
    /// Per sensor: what decodes its messages, shared with the threads that do.
    decoders: Vec<Arc<Decoder>>,
    /// Decompressed chunks, most recently used first (see [`CACHE_CHUNKS`]).
    cache: Vec<(u16, u32, Vec<u8>)>,
    /// Chunks decompressed since opening (the scan aside).
    decompressed: u64,
    /// The last message read from a database.
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    row: Vec<u8>,
    /// Messages are zstd frames (rosbag2 `compression_mode: message`).
    frames: Option<FrameDecoder>,
    /// Where files compressed whole were decompressed to; last, so removed after the files
    /// are closed.
    _scratch: Option<Scratch>,
}

impl RosSource {
    /// Opens and reads `path`: a rosbag2 directory, an `.mcap` file or a ROS 1 `.bag`.
    pub fn open(path: &Path, opts: RosOptions) -> Result<RosSource> {
        Self::open_with_progress(path, opts, |_, _, _| {})
    }

    /// [`RosSource::open`], calling `progress(file number, done, total)` while each file is
    /// read (bytes of an MCAP file or bag, rows of a database; a rosbag2 directory's files in
    /// turn).
    pub fn open_with_progress(
        path: &Path,
        opts: RosOptions,
        mut progress: impl FnMut(usize, u64, u64),
    ) -> Result<RosSource> {
        let (files, compression) = if path.is_dir() {
            let b = crate::rosbag2::metadata::open(path)?;
            (b.files, b.compression)
        } else {
            (vec![path.to_path_buf()], Compression::None)
        };
        // Dropped (the directory removed) on every return, the errors' included.
        let scratch = match compression {
            Compression::ZstdFile => Some(Scratch::new()?),
            _ => None,
        };
        let frames =
            || (compression == Compression::ZstdMessage).then(|| FrameDecoder::new(MAX_CHUNK));
        let limits = opts.limits.unwrap_or_default();
        let mut c = Collector {
            opts: &opts,
            progress: &mut progress,
            limits,
            file_no: 0,
            file: PathBuf::new(),
            frames: frames(),
            failed: None,
            by_conn: HashMap::new(),
            by_topic: HashMap::new(),
            topics: Vec::new(),
            threads: roverlog_core::cpus::threads(opts.threads),
            batch: Vec::new(),
            batch_bytes: 0,
        };
        let bags = c.scan(path, &files, scratch.as_ref())?;
        let rules = opts.map.as_ref().map(|m| &m.topics);
        for topic in rules.into_iter().flat_map(|r| r.keys()) {
            if !c.by_topic.contains_key(topic) {
                return Err(mapping_error(
                    path,
                    topic,
                    crate::error::MappingProblem::NoSuchTopic,
                ));
            }
        }
        let mut topics = c.topics;
        let (sensors, sensor_topics) = as_sensors(path, &mut topics, rules)?;
        let decoders = sensor_topics
            .iter()
            .zip(&sensors)
            .map(|(&ti, s)| Arc::new(Decoder::new(&topics[ti], s, limits)))
            .collect();
        Ok(RosSource {
            path: path.to_path_buf(),
            files: bags,
            topics,
            sensor_topics,
            sensors,
            decoders,
            cache: Vec::new(),
            decompressed: 0,
            row: Vec::new(),
            frames: frames(),
            _scratch: scratch,
        })
    }

    /// Topics not imported, with the reason, in the order they appear.
    pub fn skipped(&self) -> Vec<SkippedTopic> {
        self.topics
            .iter()
            .filter_map(|t| {
                t.skip.as_ref().map(|r| SkippedTopic {
                    topic: t.topic.clone(),
                    msgtype: t.msgtype.clone(),
                    messages: t.messages,
                    reason: r.clone(),
                })
            })
            .collect()
    }

    /// (chunks in the recording, chunks decompressed to read samples so far): how well the
    /// reading order fits the chunks.
    pub fn chunk_reads(&self) -> (u64, u64) {
        let chunks = self
            .files
            .iter()
            .map(|f| match f {
                Storage::Mapped(b) => b.chunks.len() as u64,
                #[cfg(feature = "sqlite")]
                Storage::Db3(_) => 0,
            })
            .sum();
        (chunks, self.decompressed)
    }

    /// The topic sensor `i` was made from.
    pub fn topic_of(&self, sensor: usize) -> &str {
        &self.topics[self.sensor_topics[sensor]].topic
    }

    /// Makes the bytes of `r` available to [`RosSource::bytes`]: its chunk decompressed (the
    /// last one is kept), or its database row read.
    fn load(&mut self, r: MsgRef) -> Result<()> {
        match &self.files[r.file as usize] {
            #[cfg(feature = "sqlite")]
            Storage::Db3(db) => db.read_into(r.start as i64, &mut self.row),
            Storage::Mapped(_) if r.chunk == MsgRef::NO_CHUNK => Ok(()),
            Storage::Mapped(file) => {
                let at = self
                    .cache
                    .iter()
                    .position(|(f, c, _)| *f == r.file && *c == r.chunk);
                let entry = match at {
                    Some(i) => self.cache.remove(i),
                    None => {
                        self.decompressed += 1;
                        (r.file, r.chunk, file.decompress(r.chunk as usize)?)
                    }
                };
                self.cache.insert(0, entry);
                let mut bytes = 0;
                let keep = self
                    .cache
                    .iter()
                    .take_while(|(_, _, c)| {
                        bytes += c.len();
                        bytes <= CACHE_BYTES
                    })
                    .count()
                    .clamp(1, CACHE_CHUNKS);
                self.cache.truncate(keep);
                Ok(())
            }
        }
    }

    /// The bytes of `r` as stored, after [`RosSource::load`]. Not a method: the caller
    /// borrows `frames` mutably beside it.
    fn stored<'a>(
        files: &'a [Storage],
        cache: &'a [(u16, u32, Vec<u8>)],
        #[cfg_attr(not(feature = "sqlite"), allow(unused_variables))] row: &'a [u8],
        r: MsgRef,
    ) -> &'a [u8] {
        let range = r.start as usize..r.start as usize + r.len as usize;
        match &files[r.file as usize] {
            #[cfg(feature = "sqlite")]
            Storage::Db3(_) => row,
            Storage::Mapped(f) if r.chunk == MsgRef::NO_CHUNK => &f.map[range],
            Storage::Mapped(_) => &cache.first().expect("load fills the cache").2[range],
        }
    }
}

impl Source for RosSource {
    fn sensors(&self) -> &[SourceSensor] {
        &self.sensors
    }

    fn timestamps(&mut self, sensor: usize) -> roverlog_core::Result<Vec<f64>> {
        Ok(self.topics[self.sensor_topics[sensor]].ts.clone())
    }

    fn read(
        &mut self,
        sensor: usize,
        index: u64,
        out: &mut Vec<Vec<u8>>,
    ) -> roverlog_core::Result<()> {
        Ok(self.read_message(sensor, index, out)?)
    }

    /// The message's bytes are read here (in order: its chunk is decompressed once for the
    /// messages around it); decoding and mapping them is left to [`Fetched::finish`].
    fn fetch(
        &mut self,
        sensor: usize,
        index: u64,
        encode: Option<u32>,
    ) -> roverlog_core::Result<Fetched> {
        let (decoder, file, data) = self.message_bytes(sensor, index)?;
        let f = Fetched::later(move || Ok(decoder.decode(&file, &data, index)?));
        Ok(match encode {
            Some(preset) => f.compressing_lzmaf(&self.sensors[sensor].meta, preset),
            None => f,
        })
    }

    fn extra_files(&self, sensor: usize) -> Vec<(String, Vec<u8>)> {
        self.sidecar(sensor)
    }
}

impl RosSource {
    /// Message `index` of `sensor`'s topic, decoded and mapped to its channels in `out`.
    fn read_message(&mut self, sensor: usize, index: u64, out: &mut Vec<Vec<u8>>) -> Result<()> {
        let (decoder, file, data) = self.message_bytes(sensor, index)?;
        *out = decoder.decode(&file, &data, index)?;
        Ok(())
    }

    /// The stored bytes of message `index` of `sensor`'s topic (its chunk decompressed, or
    /// its zstd frame), what decodes them and the file they are in.
    fn message_bytes(
        &mut self,
        sensor: usize,
        index: u64,
    ) -> Result<(Arc<Decoder>, PathBuf, Vec<u8>)> {
        let ti = self.sensor_topics[sensor];
        let r = *self.topics[ti].refs.get(index as usize).ok_or_else(|| {
            roverlog_core::Error::OutOfRange {
                path: self.path.clone(),
                index,
                len: self.topics[ti].refs.len() as u64,
            }
        })?;
        self.load(r)?;
        let data = Self::stored(&self.files, &self.cache, &self.row, r);
        let data = match &mut self.frames {
            None => data.to_vec(),
            Some(f) => f
                .decompress(data)
                .map_err(|problem| Error::RosMessage {
                    path: self.files[r.file as usize].path().to_path_buf(),
                    topic: self.topics[ti].topic.clone(),
                    index,
                    problem: Box::new(problem),
                })?
                .to_vec(),
        };
        let file = self.files[r.file as usize].path().to_path_buf();
        Ok((self.decoders[sensor].clone(), file, data))
    }

    /// The sensor's `ros.json`: where its topic came from.
    fn sidecar(&self, sensor: usize) -> Vec<(String, Vec<u8>)> {
        let t = &self.topics[self.sensor_topics[sensor]];
        let mut doc = json!({
            "source": self.path,
            "topic": t.topic,
            "type": t.msgtype,
            "frame_id": t.frame_id,
            "messages": t.messages,
            "stamp": match t.stamp { Stamp::Header => "header", Stamp::Log => "log" },
        });
        if let Some(max) = t.padded_to {
            // Every channel but the count is padded past the count to this many points.
            let meta = &self.sensors[sensor].meta;
            doc["padded_to"] = json!(max);
            doc["points_channel"] = json!(meta.channels.last().map(|(n, _)| n.as_str()));
        }
        vec![(
            "ros.json".into(),
            serde_json::to_vec_pretty(&doc).expect("JSON"),
        )]
    }
}

/// What decodes one topic's messages and maps them to its sensor's channels, on any thread.
pub(super) struct Decoder {
    topic: String,
    msgtype: String,
    schema: Arc<Schema>,
    wire: Wire,
    wide: crate::wire::decode::WideChars,
    images: ImageFormat,
    padded_to: Option<usize>,
    channels: usize,
    limits: Limits,
}

impl Decoder {
    fn new(t: &Topic, sensor: &SourceSensor, limits: Limits) -> Decoder {
        Decoder {
            topic: t.topic.clone(),
            msgtype: t.msgtype.clone(),
            schema: Arc::new(t.schema.clone().expect("a sensor's topic has a schema")),
            wire: t.wire,
            wide: t.wide.unwrap_or_default(),
            images: t.images,
            padded_to: t.padded_to,
            channels: sensor.meta.channels.len(),
            limits,
        }
    }

    /// Message `index` (its bytes `data`, from `file`) decoded and mapped to the sensor's
    /// channels.
    fn decode(&self, file: &Path, data: &[u8], index: u64) -> Result<Vec<Vec<u8>>> {
        let err = |problem| Error::RosMessage {
            path: file.to_path_buf(),
            topic: self.topic.clone(),
            index,
            problem: Box::new(problem),
        };
        let v = decode(&self.schema, data, self.wire, self.wide, &self.limits).map_err(err)?;
        let changed = |problem| Error::MapsDifferently {
            path: file.to_path_buf(),
            topic: self.topic.clone(),
            index,
            problem: Box::new(problem),
        };
        let mut m = mapping::map(&self.msgtype, &v, self.images).map_err(changed)?;
        if let Some(max) = self.padded_to {
            match cloud::dims(&self.msgtype, &v) {
                Some((1, w)) => cloud::pad(&mut m, w, max).map_err(changed)?,
                _ => return Err(changed(MapError::NotUnorganized)),
            }
        }
        if m.data.len() != self.channels {
            return Err(Error::ShapeChanged {
                path: file.to_path_buf(),
                topic: self.topic.clone(),
                index,
            });
        }
        Ok(m.data)
    }
}
