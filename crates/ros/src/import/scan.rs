//! The scan of a ROS recording when it is opened: every message decoded and mapped once, to
//! find each topic's layout, stamps and padding (see [`super::source`]). The messages are read
//! in order; their decoding and mapping run in batches on every usable CPU
//! ([`roverlog_core::parallel::ordered`]), and each outcome is then applied in order, so a
//! topic's state (skipped, its first layout, its wide-string form, its widths) is what a scan
//! on one thread makes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::container::{Connection, MsgRef, Sink};
use crate::error::{Error, Result, SkipReason};
use crate::import::cloud::{self, Widths};
use crate::import::mapping::{self, Mapped, Stamp};
use crate::import::options::RosOptions;
use crate::import::sensors::Topic;
use crate::rosbag2::zstd::{FrameDecoder, Scratch};
use crate::storage::{open_and_scan, Storage};
use crate::typesys::schema::{Dialect, Schema};
use crate::wire::decode::{decode, decode_detect, Limits, WideChars, Wire};
use roverlog_core::format::ChannelFormat;

/// Messages decoded together at most, and their bytes: a batch is a few hundred
/// messages for every thread, and its memory bounded whatever the messages' size.
const BATCH: usize = 1024;
const BATCH_BYTES: usize = 64 << 20;

/// A message read and not yet decoded.
pub(super) struct Queued {
    topic: usize,
    index: u64,
    log_time: u64,
    at: MsgRef,
    /// Its bytes, or why its zstd frame did not decompress.
    data: Result<Vec<u8>>,
}

/// What decoding and mapping a message found: its channels, header stamp, frame id and
/// point-cloud dimensions; the wide-string form it showed (when decoded without one).
struct Decoded {
    m: Mapped,
    stamp: Option<f64>,
    frame: Option<String>,
    dims: Option<(usize, usize)>,
    found: Option<WideChars>,
}

/// Decodes and maps message `index` of `t` with the wide-string form `wide` (found from the
/// message when `None`).
fn decode_one(
    t: &Topic,
    wide: Option<WideChars>,
    data: &[u8],
    index: u64,
    limits: &Limits,
) -> std::result::Result<Decoded, SkipReason> {
    let schema = t
        .schema
        .as_ref()
        .expect("a topic without a schema is skipped");
    let decoded = match wide {
        Some(w) => decode(schema, data, t.wire, w, limits).map(|v| (v, Some(w))),
        None => decode_detect(schema, data, t.wire, limits),
    };
    let (v, found) = decoded.map_err(|problem| SkipReason::Decode { index, problem })?;
    let m = mapping::map(&t.msgtype, &v, t.images)
        .map_err(|problem| SkipReason::Map { index, problem })?;
    Ok(Decoded {
        dims: cloud::dims(&t.msgtype, &v),
        stamp: mapping::header_stamp(&v),
        frame: mapping::frame_id(&v),
        m,
        found,
    })
}

pub(super) struct Collector<'o> {
    pub(super) opts: &'o RosOptions,
    /// (file number, done, total) of the scan.
    pub(super) progress: &'o mut dyn FnMut(usize, u64, u64),
    pub(super) limits: Limits,
    pub(super) file_no: u16,
    /// The file being read (as the recording names it), for errors.
    pub(super) file: PathBuf,
    /// Messages are zstd frames (rosbag2 `compression_mode: message`).
    pub(super) frames: Option<FrameDecoder>,
    /// A message that could not be read (its frame does not decompress): the scan stops.
    pub(super) failed: Option<Error>,
    pub(super) by_conn: HashMap<(u16, u32), usize>,
    pub(super) by_topic: HashMap<String, usize>,
    pub(super) topics: Vec<Topic>,
    /// Threads decoding and mapping the batched messages.
    pub(super) threads: usize,
    /// Messages read and not yet decoded ([`Collector::flush`]), and their bytes.
    pub(super) batch: Vec<Queued>,
    pub(super) batch_bytes: usize,
}

impl Collector<'_> {
    /// Decodes and maps the batched messages on every thread, then applies each outcome in
    /// order. A message decoded before its topic's wide-string form was known, which an
    /// earlier message of the batch then fixed, is decoded again with it (as one thread
    /// would have); one of a topic that an earlier message had it skipped is left.
    fn flush(&mut self) {
        let batch = std::mem::take(&mut self.batch);
        self.batch_bytes = 0;
        let (topics, limits) = (&self.topics, &self.limits);
        let mut outcomes = Vec::with_capacity(batch.len());
        let r: std::result::Result<(), std::convert::Infallible> = roverlog_core::parallel::ordered(
            batch.len(),
            self.threads,
            2,
            || Ok(()),
            |_, j| {
                let q = &batch[j];
                let t = &topics[q.topic];
                let outcome = q
                    .data
                    .as_ref()
                    .ok()
                    .map(|d| decode_one(t, t.wide, d, q.index, limits));
                Ok((t.wide, outcome))
            },
            |_, o| {
                outcomes.push(o);
                Ok(())
            },
        );
        let Ok(()) = r;
        for (q, (assumed, outcome)) in batch.into_iter().zip(outcomes) {
            let t = &mut self.topics[q.topic];
            if t.skip.is_some() {
                continue;
            }
            let Some(outcome) = outcome else {
                // The scan stops at the first damaged frame, as one thread's does.
                self.failed = q.data.err();
                break;
            };
            let outcome = match &q.data {
                Ok(d) if assumed != t.wide => decode_one(t, t.wide, d, q.index, &self.limits),
                _ => outcome,
            };
            Self::apply(t, outcome, q.index, q.log_time, q.at);
        }
    }

    /// What one thread's scan does with a message's outcome: the topic skipped, or its
    /// layout checked against the first and the message's time and place kept.
    fn apply(
        t: &mut Topic,
        outcome: std::result::Result<Decoded, SkipReason>,
        k: u64,
        log_time: u64,
        at: MsgRef,
    ) {
        let d = match outcome {
            Ok(d) => d,
            Err(reason) => {
                Self::skip(t, reason);
                return;
            }
        };
        if t.wide.is_none() {
            t.wide = d.found;
        }
        let (m, stamp, frame, dims) = (d.m, d.stamp, d.frame, d.dims);
        match &t.first {
            None => {
                // A publisher that never fills its header leaves the stamp zero: the log
                // time is then the only time there is.
                if stamp.is_none() || stamp == Some(0.0) {
                    t.stamp = Stamp::Log;
                }
                t.frame_id = frame.unwrap_or_default();
                t.widths = dims.map(Widths::new);
                if matches!(
                    m.channels[0].1.format,
                    ChannelFormat::Blob(_) | ChannelFormat::Mjpg
                ) {
                    t.first_frame = m.data[0].clone();
                }
                t.first = Some(Mapped {
                    channels: m.channels,
                    data: Vec::new(),
                });
            }
            Some(first) => {
                let fits = match (&mut t.widths, dims) {
                    (Some(w), Some(d)) => w.admit(first, &m, d),
                    _ => first.same_layout(&m),
                };
                if let Err(e) = fits {
                    Self::skip(
                        t,
                        SkipReason::ChangesShape {
                            index: k,
                            problem: e,
                        },
                    );
                    return;
                }
            }
        }
        let ts = match (t.stamp, stamp) {
            (Stamp::Header, Some(s)) => s,
            _ => log_time as f64 * 1e-9,
        };
        t.refs.push(at);
        t.ts.push(ts);
    }

    /// Reads every file of the recording once, in order, collecting its topics; the storages
    /// opened (to read samples from later).
    pub(super) fn scan(
        &mut self,
        path: &Path,
        files: &[PathBuf],
        scratch: Option<&Scratch>,
    ) -> Result<Vec<Storage>> {
        let mut bags = Vec::new();
        for (no, f) in files.iter().enumerate() {
            let no = u16::try_from(no).map_err(|_| Error::Ros {
                path: path.to_path_buf(),
                problem: crate::error::RosProblem::Metadata(
                    crate::error::MetadataProblem::TooManyFiles,
                ),
            })?;
            self.file_no = no;
            self.file = f.clone();
            bags.push(open_and_scan(f, no, scratch, self)?);
            self.flush();
            if let Some(e) = self.failed.take() {
                return Err(e);
            }
        }
        Ok(bags)
    }

    fn skip(t: &mut Topic, reason: SkipReason) {
        if t.skip.is_none() {
            t.skip = Some(reason);
            t.refs = Vec::new();
            t.ts = Vec::new();
            t.first = None;
            t.first_frame = Vec::new();
        }
    }
}

impl Sink for Collector<'_> {
    fn connection(&mut self, c: Connection) {
        if !self.opts.topics.is_empty() && !self.opts.topics.contains(&c.topic) {
            // Known, so its messages are not "of an undefined channel"; never a sensor.
            self.by_conn.insert((self.file_no, c.id), usize::MAX);
            return;
        }
        if let Some(&i) = self.by_topic.get(&c.topic) {
            self.by_conn.insert((self.file_no, c.id), i);
            let t = &mut self.topics[i];
            if t.msgtype != c.msgtype {
                let r = SkipReason::TypeChanges {
                    from: t.msgtype.clone(),
                    to: c.msgtype.clone(),
                };
                Self::skip(t, r);
            }
            return;
        }
        let rule = self.opts.map.as_ref().and_then(|m| m.get(&c.topic));
        let (wire, schema, skip) = match &c.wire {
            _ if rule.is_some_and(|r| r.skip) => (Wire::Cdr, None, Some(SkipReason::LeftOut)),
            Err(why) => (Wire::Cdr, None, Some(SkipReason::Wire(why.clone()))),
            Ok(w) => {
                let dialect = if *w == Wire::Ros1 {
                    Dialect::Ros1
                } else {
                    Dialect::Ros2
                };
                match Schema::parse(&c.msgtype, &c.schema, dialect) {
                    Ok(s) => (*w, Some(s), None),
                    Err(e) => (*w, None, Some(SkipReason::Schema(e))),
                }
            }
        };
        let i = self.topics.len();
        self.topics.push(Topic {
            topic: c.topic.clone(),
            msgtype: c.msgtype,
            wire,
            schema,
            wide: None,
            skip,
            messages: 0,
            refs: Vec::new(),
            ts: Vec::new(),
            first: None,
            first_frame: Vec::new(),
            widths: None,
            padded_to: None,
            stamp: rule.and_then(|r| r.stamp).unwrap_or(self.opts.stamp),
            images: rule.and_then(|r| r.images).unwrap_or(self.opts.images),
            frame_id: String::new(),
        });
        self.by_topic.insert(c.topic, i);
        self.by_conn.insert((self.file_no, c.id), i);
    }

    fn progress(&mut self, done: u64, total: u64) {
        (self.progress)(self.file_no as usize, done, total);
    }

    fn message(&mut self, conn: u32, log_time: u64, at: MsgRef, data: &[u8]) -> bool {
        let Some(&i) = self.by_conn.get(&(self.file_no, conn)) else {
            return false;
        };
        if i == usize::MAX || self.failed.is_some() {
            return true;
        }
        let t = &mut self.topics[i];
        let k = t.messages;
        t.messages += 1;
        if t.skip.is_some() {
            return true;
        }
        // A frame that does not decompress is a damaged recording (as a chunk that does not
        // decompress is), not a message that does not fit its schema: the import fails (when
        // its turn comes: an earlier message may yet have its topic skipped).
        let data = match &mut self.frames {
            None => Ok(data.to_vec()),
            Some(f) => f
                .decompress(data)
                .map(<[u8]>::to_vec)
                .map_err(|p| Error::RosMessage {
                    path: self.file.clone(),
                    topic: t.topic.clone(),
                    index: k,
                    problem: Box::new(p),
                }),
        };
        self.batch_bytes += data.as_ref().map_or(0, Vec::len);
        self.batch.push(Queued {
            topic: i,
            index: k,
            log_time,
            at,
            data,
        });
        if self.batch.len() >= BATCH || self.batch_bytes >= BATCH_BYTES {
            self.flush();
        }
        true
    }
}
