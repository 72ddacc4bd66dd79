//! A sensor: a directory with `meta.json`, a `ts` channel and data channels. [`Sensor`] reads
//! one; [`SensorWriter`] creates or resumes one and appends whole samples.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use super::channel::{channel_path, ChannelReader, ChannelWriter, WriterOptions};
use super::check::{recover_sensor, Recovery};
use super::dtype;
use super::meta::{sync_dir, ChannelFormat, ChannelMeta, SensorMeta, TS_CHANNEL};
use super::raw::RawReader;
use crate::error::{Error, IoContext, MetaProblem, Result};

/// A sensor directory opened for reading.
pub struct Sensor {
    dir: PathBuf,
    name: String,
    meta: SensorMeta,
    /// `ts`, mapped by the first [`Sensor::index_at`] and kept (mapped afresh when a search
    /// lands past its end and `ts` has grown since).
    ts_map: Mutex<Option<RawReader>>,
}

impl Sensor {
    /// Opens the sensor in `dir` (reads and validates `meta.json`).
    pub fn open(dir: &Path) -> Result<Sensor> {
        let meta = SensorMeta::read(dir)?;
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Sensor {
            dir: dir.to_path_buf(),
            name,
            meta,
            ts_map: Mutex::new(None),
        })
    }

    /// The sensor's name (its directory's name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The sensor's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether this is a virtual sensor (name starting with `_`).
    pub fn is_virtual(&self) -> bool {
        self.name.starts_with('_')
    }

    /// The parsed `meta.json`.
    pub fn meta(&self) -> &SensorMeta {
        &self.meta
    }

    /// Number of samples, as upstream counts them: whole `f8` values in `ts`.
    pub fn len(&self) -> Result<u64> {
        let p = channel_path(&self.dir, TS_CHANNEL);
        Ok(fs::metadata(&p).at(&p)?.len() / 8)
    }

    /// Whether the sensor holds no sample.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// The timestamps channel, mapped.
    pub fn ts_reader(&self) -> Result<RawReader> {
        RawReader::open(&channel_path(&self.dir, TS_CHANNEL), 8)
    }

    /// All timestamps (epoch seconds), copied out.
    pub fn timestamps(&self) -> Result<Vec<f64>> {
        let r = self.ts_reader()?;
        Ok(dtype::decode_vec(r.bytes()))
    }

    /// The first sample at or after `time` (epoch seconds), by a search over `ts`
    /// (interpolation, then bisection); `len()` when every sample is earlier. Assumes `ts` ascends (a clock step backwards makes
    /// the answer one of the valid positions, not necessarily the first).
    ///
    /// `ts` stays mapped between calls, so a search touches pages already resident. An
    /// answer inside the mapping holds however `ts` grew; one past its end looks again when
    /// `ts` has grown since.
    pub fn index_at(&self, time: f64) -> Result<u64> {
        let search = |r: &RawReader| -> Result<(u64, u64)> {
            let ts = r.typed::<f64>(super::DType::F8)?;
            Ok((first_at_or_after(&ts, time) as u64, ts.len() as u64))
        };
        let mut kept = self.ts_map.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(r) = kept.as_ref() {
            let (at, mapped) = search(r)?;
            if at < mapped || self.len()? == mapped {
                return Ok(at);
            }
        }
        let r = self.ts_reader()?;
        let (at, _) = search(&r)?;
        *kept = Some(r);
        Ok(at)
    }

    /// Opens channel `name` for reading.
    pub fn channel(&self, name: &str) -> Result<ChannelReader> {
        let ch = self.meta.get(name).ok_or_else(|| Error::NotA {
            path: channel_path(&self.dir, name),
            expected: "channel declared in meta.json",
        })?;
        ChannelReader::open(&self.dir, name, ch)
    }
}

/// Appends whole samples to a sensor directory.
///
/// Within one sample, data channels are written before `ts`, and flushes and syncs follow the
/// same order, so a crash can only leave `ts` shorter than the data channels or a channel with
/// a torn tail: never a timestamp for data that is not there. [`recover_sensor`] repairs both.
pub struct SensorWriter {
    dir: PathBuf,
    meta: SensorMeta,
    /// Data channels in declared order (all but `ts`).
    channels: Vec<ChannelWriter>,
    ts: ChannelWriter,
    len: u64,
    durable: u64,
    /// The count in `.durable` (see [`super::durable`]), when this writer wrote it.
    watermark: Option<u64>,
}

impl SensorWriter {
    /// Creates a new sensor directory with `meta` (a `ts` channel is added when absent).
    pub fn create(dir: &Path, meta: SensorMeta, opts: &WriterOptions) -> Result<SensorWriter> {
        SensorWriter::create_with(dir, meta, opts, |_| Ok(()))
    }

    /// [`create`](Self::create), calling `before_meta` with the new directory once its
    /// channel files are there and before `meta.json`, which is written last: whatever it
    /// puts there durably is in every directory that has `meta.json` (the daemon's sidecar
    /// files, such as a lidar's `lidar.json`). Its error leaves the directory without
    /// `meta.json`, as an interrupted `create` does.
    pub fn create_with(
        dir: &Path,
        mut meta: SensorMeta,
        opts: &WriterOptions,
        before_meta: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<SensorWriter> {
        if meta.get(TS_CHANNEL).is_none() {
            meta.channels
                .insert(0, (TS_CHANNEL.to_string(), ChannelMeta::timestamps()));
        }
        meta.validate()?;
        fs::create_dir(dir).at(dir)?;
        let w = SensorWriter::open_channels(dir, meta, opts, false, 0)?;
        // Zero samples are durable: after a power cut nothing unsynced is trusted.
        super::durable::write(dir, 0)?;
        before_meta(dir)?;
        w.meta.write_atomic(dir)?;
        sync_dir(super::meta::parent_dir(dir))?;
        Ok(w)
    }

    /// Reopens an existing sensor to append: its `meta.json` must equal `meta` (with `ts`
    /// added when absent; writer-only `args` such as `fps` are not compared: `meta.json`
    /// does not keep them). Torn tails are recovered first; the report says what was cut.
    pub fn resume(
        dir: &Path,
        mut meta: SensorMeta,
        opts: &WriterOptions,
    ) -> Result<(SensorWriter, Recovery)> {
        if meta.get(TS_CHANNEL).is_none() {
            meta.channels
                .insert(0, (TS_CHANNEL.to_string(), ChannelMeta::timestamps()));
        }
        let on_disk = SensorMeta::read(dir)?;
        if on_disk.for_disk() != meta.for_disk() {
            return Err(Error::InvalidMeta {
                path: dir.join(super::meta::META_FILE),
                problem: Box::new(MetaProblem::ChannelsDiffer),
            });
        }
        let recovery = recover_sensor(dir)?;
        let mut w = SensorWriter::open_channels(dir, meta, opts, true, recovery.len)?;
        // What was found may have been flushed and never fsynced (a kill -9): it is durable
        // once this writer syncs it.
        w.durable = 0;
        Ok((w, recovery))
    }

    fn open_channels(
        dir: &Path,
        meta: SensorMeta,
        opts: &WriterOptions,
        append: bool,
        len: u64,
    ) -> Result<SensorWriter> {
        let ts_meta = meta.get(TS_CHANNEL).expect("ts added by caller").clone();
        let ts = ChannelWriter::open(dir, TS_CHANNEL, &ts_meta, opts, append)?;
        let channels = meta
            .data_channels()
            .map(|(name, ch)| ChannelWriter::open(dir, name, ch, opts, append))
            .collect::<Result<Vec<_>>>()?;
        Ok(SensorWriter {
            dir: dir.to_path_buf(),
            meta,
            channels,
            ts,
            len,
            durable: len,
            watermark: (!append).then_some(0),
        })
    }

    /// The sensor's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The sensor's channels (`ts` included).
    pub fn meta(&self) -> &SensorMeta {
        &self.meta
    }

    /// Samples appended (buffered ones included).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether no sample was appended.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Samples known to be on disk (as of the last successful [`SensorWriter::sync`] of this
    /// writer; 0 after [`SensorWriter::resume`] until then).
    pub fn durable_len(&self) -> u64 {
        self.durable
    }

    /// Appends one sample: `samples` holds one buffer per data channel in declared order
    /// (decoded bytes; `lzmaf` channels are compressed here).
    pub fn append(&mut self, ts: f64, samples: &[&[u8]]) -> Result<()> {
        self.append_with(ts, samples, false)
    }

    /// Like [`SensorWriter::append`], but `lzmaf` samples arrive already compressed (see
    /// [`super::lzma::compress`]).
    pub fn append_encoded(&mut self, ts: f64, samples: &[&[u8]]) -> Result<()> {
        self.append_with(ts, samples, true)
    }

    /// Checks the whole sample before writing any of it, so a bad one leaves no partial
    /// sample behind; `encoded`: `lzmaf` samples arrive compressed (their size is not known).
    fn append_with(&mut self, ts: f64, samples: &[&[u8]], encoded: bool) -> Result<()> {
        if samples.len() != self.channels.len() {
            return Err(Error::SampleSize {
                channel: format!("{} (channel count)", self.dir.display()),
                expected: self.channels.len(),
                got: samples.len(),
            });
        }
        if !ts.is_finite() {
            return Err(Error::InvalidMeta {
                path: channel_path(&self.dir, TS_CHANNEL),
                problem: Box::new(MetaProblem::TimeNotFinite { ts }),
            });
        }
        for ((name, ch), sample) in self.meta.data_channels().zip(samples) {
            let sized =
                ch.format.is_fixed_size() && !(encoded && ch.format == ChannelFormat::Lzmaf);
            if sized && sample.len() != ch.sample_bytes() {
                return Err(Error::SampleSize {
                    channel: name.to_string(),
                    expected: ch.sample_bytes(),
                    got: sample.len(),
                });
            }
            if matches!(ch.format, ChannelFormat::Blob(_) | ChannelFormat::Mjpg)
                && sample.is_empty()
            {
                return Err(Error::EmptySample {
                    channel: name.to_string(),
                });
            }
        }
        for (w, sample) in self.channels.iter_mut().zip(samples) {
            if encoded {
                w.append_encoded(sample)?;
            } else {
                w.append(sample)?;
            }
        }
        // `ts` must trail the data in the kernel too: when its buffer is about to spill, the
        // data channels' buffered samples go first.
        if self.ts.append_reaches_kernel(8) {
            for w in &mut self.channels {
                w.flush()?;
            }
        }
        self.ts.append(&ts.to_le_bytes())?;
        self.len += 1;
        Ok(())
    }

    /// Hands buffered bytes to the kernel (data channels first, then `ts`): they then survive
    /// a crash of this process.
    pub fn flush(&mut self) -> Result<()> {
        for w in &mut self.channels {
            w.flush()?;
        }
        self.ts.flush()
    }

    /// fsyncs data channels, then `ts`, then the directory; returns the new durable count.
    pub fn sync(&mut self) -> Result<u64> {
        // Everything reaches the kernel first, so a crash during a slow fsync of one channel
        // does not cost the buffered samples of the others.
        self.flush()?;
        for w in &mut self.channels {
            w.sync()?;
        }
        self.ts.sync()?;
        if self.watermark != Some(self.len) {
            super::durable::write(&self.dir, self.len)?;
            self.watermark = Some(self.len);
        }
        sync_dir(&self.dir)?;
        self.durable = self.len;
        Ok(self.durable)
    }

    /// Syncs and closes every channel; the first error is returned.
    pub fn finish(mut self) -> Result<u64> {
        let n = self.sync()?;
        for w in self.channels {
            w.finish()?;
        }
        self.ts.finish()?;
        Ok(n)
    }
}

/// The index of the first of ascending `ts` not below `time`: `ts.partition_point(|&t| t <
/// time)`, found by interpolation first. A steady sensor's timestamps are near-evenly spaced,
/// so a guess from the two ends lands within a few samples of the answer, where a bisection
/// over an hour's 360,000 takes 19 probes, the last of them cache misses. A guess is checked
/// 8 samples on; a few rounds narrow the range, and bisection finishes it whatever the
/// spacing (gaps, bursts). Unordered `ts` (a clock stepped back) gives one valid position.
fn first_at_or_after(ts: &[f64], time: f64) -> usize {
    const NEAR: usize = 8;
    // ts[..lo] < time <= ts[hi..]
    let (mut lo, mut hi) = (0, ts.len());
    for _ in 0..4 {
        if hi - lo <= 2 * NEAR {
            break;
        }
        let (a, b) = (ts[lo], ts[hi - 1]);
        // Not below `time` (a NaN `time` included, as `partition_point` answers it).
        if a.partial_cmp(&time) != Some(std::cmp::Ordering::Less) {
            return lo;
        }
        if b < time {
            return hi;
        }
        // a < time <= b, so b > a.
        let span = (hi - 1 - lo) as f64;
        let g = lo + (((time - a) / (b - a) * span) as usize).min(hi - 1 - lo);
        if ts[g] < time {
            lo = g + 1;
            let h = (g + NEAR).min(hi - 1);
            if ts[h] < time {
                lo = h + 1;
            } else {
                hi = h;
            }
        } else {
            hi = g;
            let h = g.saturating_sub(NEAR).max(lo);
            if ts[h] < time {
                lo = h + 1;
            } else {
                hi = h;
            }
        }
    }
    lo + ts[lo..hi].partition_point(|&t| t < time)
}

#[cfg(test)]
mod tests {
    use super::first_at_or_after;

    /// Equal to `partition_point` on steady, jittered, gapped, bursty and repeated
    /// timestamps, for times before, between, on and after them.
    #[test]
    fn interpolated_search_finds_what_bisection_finds() {
        let mut seed = 7u64;
        let mut rnd = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut cases: Vec<Vec<f64>> = vec![vec![], vec![5.0], vec![1.0; 50]];
        for n in [3usize, 17, 100, 1000, 36_000] {
            let steady: Vec<f64> = (0..n).map(|i| 1.7e9 + i as f64 * 0.1).collect();
            let jitter: Vec<f64> = steady.iter().map(|t| t + rnd() * 0.02).collect();
            let mut gapped = steady.clone();
            for t in &mut gapped[n / 3..] {
                *t += 3600.0;
            }
            let mut bursty = Vec::with_capacity(n);
            let mut t = 1.7e9;
            for _ in 0..n {
                t += if rnd() < 0.1 {
                    rnd() * 50.0
                } else {
                    rnd() * 1e-3
                };
                bursty.push(t);
            }
            let repeated: Vec<f64> = (0..n).map(|i| (i / 10) as f64).collect();
            cases.extend([steady, jitter, gapped, bursty, repeated]);
        }
        for ts in &cases {
            let mut probes: Vec<f64> = ts.clone();
            probes.extend(ts.windows(2).map(|w| (w[0] + w[1]) / 2.0));
            if let (Some(a), Some(b)) = (ts.first(), ts.last()) {
                probes.extend([a - 1.0, b + 1.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN]);
                probes.extend((0..200).map(|_| a + (b - a) * rnd()));
            }
            for &t in &probes {
                assert_eq!(
                    first_at_or_after(ts, t),
                    ts.partition_point(|&x| x < t),
                    "time {t} in {} timestamps",
                    ts.len()
                );
            }
        }
    }
}
