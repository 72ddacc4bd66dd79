//! Copying traces and sensors: a window of samples (`extract`), channels changed to another
//! format (`convert`), or both. Stored encodings are copied, not re-encoded, where source and
//! target agree (`lzmaf` frames, JPEG frames of `jpg` and `mjpg` channels); fixed-size
//! channels convert through their decoded samples (`raw`, `lzma`, `lzmaf`).
//!
//! A copy is written under a hidden temporary name next to its destination and renamed into
//! place when complete; on any error the temporary directory is removed, so a failed copy
//! leaves nothing behind, and an existing destination is never touched.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::channel::{channel_files, channel_path, ChannelReader};
use super::meta::{sync_dir, write_file_atomic, ChannelFormat, META_FILE, TS_CHANNEL};
use super::sensor::{Sensor, SensorWriter};
use super::trace::{Trace, CONFIG_FILE};
use super::{blob, lzma, WriterOptions};
use crate::error::{ConfigProblem, Error, IoContext, Result};

/// Whether a channel stored as `from` can be copied into `to`.
pub fn convertible(from: &ChannelFormat, to: &ChannelFormat) -> bool {
    use ChannelFormat::*;
    let jpeg = |f: &ChannelFormat| matches!(f, Mjpg) || *f == Blob("jpg".into());
    from == to && !matches!(from, Other(_))
        || from.is_fixed_size() && to.is_fixed_size()
        || jpeg(from) && jpeg(to)
}

/// What to copy of a trace.
#[derive(Debug, Clone, Default)]
pub struct TracePlan {
    /// Per sensor, the samples to copy; sensors not listed are copied whole.
    pub ranges: BTreeMap<String, Range<u64>>,
    /// Per sensor, per channel: the target format (channels not listed keep theirs).
    pub formats: BTreeMap<String, BTreeMap<String, ChannelFormat>>,
    /// Also copy `_roverlog/` (the daemon's event log): right for a whole-trace conversion,
    /// wrong for a window of it.
    pub copy_events: bool,
}

/// Copies the real sensors of the trace in `src` into a new trace `dst` (which must not
/// exist), with `config.yaml`, the other top-level files and each sensor's sidecar files.
/// `progress(done, total)` counts samples. Returns per sensor the samples copied.
pub fn copy_trace(
    src: &Path,
    dst: &Path,
    plan: &TracePlan,
    mut progress: impl FnMut(u64, u64),
) -> Result<Vec<(String, u64)>> {
    let trace = Trace::open(src)?;
    if dst.exists() || dst.symlink_metadata().is_ok() {
        return Err(Error::from(ConfigProblem::DestinationExists {
            path: dst.to_path_buf(),
        }));
    }
    for (sensor, chans) in &plan.formats {
        let s = trace.sensor(sensor)?;
        for name in chans.keys() {
            if s.meta().get(name).is_none() || name == TS_CHANNEL {
                return Err(Error::from(ConfigProblem::NoSuchChannel {
                    sensor: sensor.clone(),
                    channel: name.clone(),
                    trace: src.to_path_buf(),
                }));
            }
        }
    }
    let sensors = trace.sensors()?;
    let mut total = 0;
    for s in &sensors {
        total += plan
            .ranges
            .get(s.name())
            .map_or(s.len()?, |r| r.end - r.start);
    }
    let tmp = temp_path(dst)?;
    let r = (|| {
        fs::create_dir(&tmp).at(&tmp)?;
        copy_top_level(src, &tmp, plan.copy_events)?;
        let mut done = 0;
        let mut out = Vec::new();
        let none = BTreeMap::new();
        for s in &sensors {
            let range = match plan.ranges.get(s.name()) {
                Some(r) => r.clone(),
                None => 0..s.len()?,
            };
            let formats = plan.formats.get(s.name()).unwrap_or(&none);
            let n = copy_sensor(s, &tmp.join(s.name()), range, formats, &mut |k| {
                progress(done + k, total)
            })?;
            done += n;
            out.push((s.name().to_string(), n));
        }
        sync_dir(&tmp)?;
        fs::rename(&tmp, dst).at(dst)?;
        sync_dir(super::meta::parent_dir(dst))?;
        Ok(out)
    })();
    if r.is_err() {
        let _ = fs::remove_dir_all(&tmp);
    }
    r
}

/// `.<name>.partial-<pid>` beside `dst`.
fn temp_path(dst: &Path) -> Result<PathBuf> {
    let name = dst.file_name().ok_or_else(|| {
        Error::from(ConfigProblem::NotADirectoryName {
            path: dst.to_path_buf(),
        })
    })?;
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".partial-{}", std::process::id()));
    Ok(dst.with_file_name(tmp))
}

/// `config.yaml` and the other top-level regular files; `_roverlog/` when asked.
fn copy_top_level(src: &Path, dst: &Path, events: bool) -> Result<()> {
    for entry in fs::read_dir(src).at(src)? {
        let entry = entry.at(src)?;
        let path = entry.path();
        let ft = entry.file_type().at(&path)?;
        if ft.is_file() {
            fs::copy(&path, dst.join(entry.file_name())).at(&path)?;
        } else if ft.is_dir() && events && entry.file_name() == "_roverlog" {
            let to = dst.join("_roverlog");
            fs::create_dir(&to).at(&to)?;
            for e in fs::read_dir(&path).at(&path)? {
                let e = e.at(&path)?;
                if e.file_type().at(&e.path())?.is_file() {
                    fs::copy(e.path(), to.join(e.file_name())).at(&e.path())?;
                }
            }
        }
    }
    if !dst.join(CONFIG_FILE).exists() {
        // `list` and upstream find traces by it.
        fs::write(dst.join(CONFIG_FILE), b"{}\n").at(dst)?;
    }
    Ok(())
}

/// Copies samples `range` of `src` into a new sensor directory `dst` with the channel
/// formats changed as `formats` says, and the sensor's sidecar files (any regular file that
/// is not `meta.json` or a channel's). `progress(k)` gets the samples copied so far.
pub fn copy_sensor(
    src: &Sensor,
    dst: &Path,
    range: Range<u64>,
    formats: &BTreeMap<String, ChannelFormat>,
    progress: &mut dyn FnMut(u64),
) -> Result<u64> {
    let len = src.len()?;
    if range.start > range.end || range.end > len {
        return Err(Error::OutOfRange {
            path: src.dir().to_path_buf(),
            index: range.end,
            len,
        });
    }
    let ts = src.timestamps()?;
    let mut target = src.meta().clone();
    let mut lzma_later = Vec::new();
    for (name, ch) in &mut target.channels {
        let Some(to) = formats.get(name) else {
            continue;
        };
        if !convertible(&ch.format, to) {
            return Err(Error::UnsupportedFormat {
                channel: format!("{}/{name}", src.name()),
                format: format!(
                    "{} -> {} (not a conversion roverlog makes)",
                    ch.format.as_str(),
                    to.as_str()
                ),
            });
        }
        if *to == ChannelFormat::Mjpg && ch.format != ChannelFormat::Mjpg {
            set_fps(ch, &ts[range.start as usize..range.end as usize]);
        }
        ch.format = to.clone();
    }
    // `lzma` (one `.xz` for the whole file) is not appendable: written raw, encoded at the end.
    let mut writable = target.clone();
    for (name, ch) in &mut writable.channels {
        if ch.format == ChannelFormat::Lzma {
            ch.format = ChannelFormat::Raw;
            lzma_later.push(name.clone());
        }
    }
    let opts = WriterOptions::default();
    let mut w = SensorWriter::create(dst, writable.clone(), &opts)?;
    let names: Vec<String> = writable
        .data_channels()
        .map(|(n, _)| n.to_string())
        .collect();
    let open_readers = || {
        names
            .iter()
            .map(|n| src.channel(n))
            .collect::<Result<Vec<_>>>()
    };
    if range.is_empty() {
        // Nothing to read, but a channel that does not open is still an error.
        open_readers()?;
    }
    // Samples read and encoded (`lzmaf` frames compressed) on every usable CPU, appended in
    // order on this thread.
    let (start, preset, writable) = (range.start, opts.lzmaf_preset, &writable);
    crate::parallel::ordered(
        (range.end - range.start) as usize,
        crate::cpus::usable(),
        4,
        open_readers,
        |readers, j| {
            let i = start + j as u64;
            names
                .iter()
                .zip(readers.iter_mut())
                .map(|(name, r)| {
                    let to = &writable.get(name).expect("declared").format;
                    encoded_for(r, i, to, preset).map(Cow::into_owned)
                })
                .collect::<Result<Vec<Vec<u8>>>>()
        },
        |j, samples| {
            let refs: Vec<&[u8]> = samples.iter().map(|s| s.as_slice()).collect();
            w.append_encoded(ts[start as usize + j], &refs)?;
            let k = j as u64 + 1;
            if k.is_multiple_of(256) {
                progress(k);
            }
            Ok(())
        },
    )?;
    let n = w.finish()?;
    progress(n);
    for name in &lzma_later {
        let path = channel_path(dst, name);
        let raw = fs::read(&path).at(&path)?;
        write_file_atomic(&path, &lzma::compress(&raw, 6))?;
    }
    if !lzma_later.is_empty() {
        target.write_atomic(dst)?;
    }
    copy_sidecars(src, dst)?;
    Ok(n)
}

/// Sample `i` of `r` as the writer of a `to` channel takes it (see
/// [`SensorWriter::append_encoded`]): `lzmaf` frames compressed, everything else as read.
fn encoded_for<'a>(
    r: &'a mut ChannelReader,
    i: u64,
    to: &ChannelFormat,
    preset: u32,
) -> Result<Cow<'a, [u8]>> {
    Ok(match (r, to) {
        (ChannelReader::Lzmaf(l), ChannelFormat::Lzmaf) => Cow::Borrowed(l.compressed(i)?),
        (r, ChannelFormat::Lzmaf) => Cow::Owned(lzma::compress(&r.get(i)?, preset)),
        (r, _) => r.get(i)?,
    })
}

/// Puts the median frame rate of `ts` into the channel's `args.fps` (the AVI header's rate).
fn set_fps(ch: &mut super::meta::ChannelMeta, ts: &[f64]) {
    let mut d: Vec<f64> = ts
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|d| *d > 0.0)
        .collect();
    if d.is_empty() {
        return;
    }
    d.sort_by(f64::total_cmp);
    let fps = (1.0 / d[d.len() / 2] * 1000.0).round() / 1000.0;
    if fps.is_finite() && fps > 0.0 {
        ch.args
            .get_or_insert_with(Default::default)
            .entry("fps")
            .or_insert(fps.into());
    }
}

/// Every regular file of `src`'s directory that is no channel's and not `meta.json`
/// (upstream's `lidar.json`, `radar.json`, calibration files).
fn copy_sidecars(src: &Sensor, dst: &Path) -> Result<()> {
    let mut owned: Vec<PathBuf> = vec![src.dir().join(META_FILE)];
    for (name, ch) in &src.meta().channels {
        owned.extend(channel_files(src.dir(), name, ch));
        if let ChannelFormat::Blob(_) = ch.format {
            owned.push(blob::partial_path(&channel_path(src.dir(), name)));
        }
    }
    for entry in fs::read_dir(src.dir()).at(src.dir())? {
        let entry = entry.at(src.dir())?;
        let path = entry.path();
        let ours = super::durable::is_watermark_file(&entry.file_name());
        if entry.file_type().at(&path)?.is_file() && !owned.contains(&path) && !ours {
            fs::copy(&path, dst.join(entry.file_name())).at(&path)?;
        }
    }
    Ok(())
}
