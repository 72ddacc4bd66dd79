//! A sensor's size figures per channel (`roverlog info`), with what the channel's reader
//! finds wrong when it opens: the same cheap checks (file sizes, an `lzmaf` index against its
//! data, an AVI's index, a blob channel's last file, and the listing the size figure needs
//! anyway), never a read of the samples. `roverlog validate` checks the rest.

use std::fmt;
use std::fs;
use std::path::Path;

use super::blob::parse_sample_name;
use super::channel::{channel_files, channel_path, ChannelReader};
use super::meta::{ChannelFormat, ChannelMeta};
use super::sensor::Sensor;
use crate::error::{IoContext, Result};

/// Size and rate figures of one channel.
#[derive(Debug, Clone)]
pub struct ChannelStats {
    pub name: String,
    pub format: String,
    /// Bytes on disk (all the channel's files).
    pub disk_bytes: u64,
    /// Decoded bytes of the samples the channel holds (`samples * sample size`), for
    /// fixed-size formats.
    pub decoded_bytes: Option<u64>,
    /// What its reader found wrong on opening it, if anything.
    pub damage: Option<OpenDamage>,
}

impl ChannelStats {
    /// Decoded / on-disk bytes (1.0 for `raw`).
    pub fn compression_ratio(&self) -> Option<f64> {
        let d = self.decoded_bytes?;
        (self.disk_bytes > 0).then(|| d as f64 / self.disk_bytes as f64)
    }
}

/// A channel that cannot give every sample its sensor's `ts` counts, as found without
/// reading samples ([`ChannelStats::damage`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenDamage {
    /// The channel gives only its first `holds` of the `counts` samples: its file is cut, its
    /// index points past its data, or its last sample files are missing or empty.
    Short { holds: u64, counts: u64 },
    /// A blob channel in which `missing` of the `counts` sample files are missing or empty.
    Holes { missing: u64, counts: u64 },
    /// A whole-file `lzma` channel whose `.xz` streams' indexes do not read (the file is cut
    /// short, or not `.xz`): how many samples decode takes decoding it.
    XzIndex,
    /// The channel's reader refused to open it: its error.
    Unopened(String),
}

impl fmt::Display for OpenDamage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenDamage::Short { holds, counts } => {
                write!(f, "holds {holds} of the {counts} samples ts counts")
            }
            OpenDamage::Holes { missing, counts } => write!(
                f,
                "{missing} of the {counts} sample files ts counts are missing or empty"
            ),
            OpenDamage::XzIndex => f.write_str(
                "its .xz indexes do not read (cut short?): decoding it tells how many samples it holds",
            ),
            OpenDamage::Unopened(e) => write!(f, "does not open: {e}"),
        }
    }
}

/// Size figures and open-time damage of every channel of `sensor` (`ts` included).
pub fn channel_stats(sensor: &Sensor) -> Result<Vec<ChannelStats>> {
    let dir = sensor.dir();
    let n = sensor.len()?;
    sensor
        .meta()
        .channels
        .iter()
        .map(|(name, ch)| {
            let (disk_bytes, holds, damage) = match &ch.format {
                ChannelFormat::Blob(ext) => {
                    let listing = list_blob(&channel_path(dir, name), ext, n)?;
                    let missing = n - listing.present_below(n);
                    let damage = (missing > 0).then_some(OpenDamage::Holes { missing, counts: n });
                    (listing.bytes, None, damage)
                }
                _ => {
                    let bytes = channel_files(dir, name, ch)
                        .iter()
                        .map(|p| fs::metadata(p).map(|m| m.len()).unwrap_or(0))
                        .sum();
                    let (holds, damage) = held(dir, name, ch, n);
                    (bytes, holds, damage)
                }
            };
            Ok(ChannelStats {
                name: name.clone(),
                format: ch.format.as_str().to_string(),
                disk_bytes,
                decoded_bytes: ch
                    .format
                    .is_fixed_size()
                    .then(|| holds.unwrap_or(n) * ch.sample_bytes() as u64),
                damage,
            })
        })
        .collect()
}

/// How many samples the channel's reader gives from the start (`None` when that needs
/// decoding: a whole-file `lzma` channel whose `.xz` index does not read), and its damage:
/// fewer than the sensor's `n`, or no index.
fn held(dir: &Path, name: &str, ch: &ChannelMeta, n: u64) -> (Option<u64>, Option<OpenDamage>) {
    if let ChannelFormat::Other(_) = ch.format {
        // A format this library does not read: not known to be damaged (`validate` lists it
        // as unchecked).
        return (None, None);
    }
    let len = match ChannelReader::open(dir, name, ch) {
        // `len` decodes a whole-file channel whose `.xz` index is torn: not here.
        Ok(ChannelReader::Lzma(_)) => {
            match super::xz_index::uncompressed_len(&channel_path(dir, name)) {
                Ok(Some(bytes)) => bytes / ch.sample_bytes() as u64,
                Ok(None) => return (None, Some(OpenDamage::XzIndex)),
                Err(e) => return (None, Some(OpenDamage::Unopened(e.to_string()))),
            }
        }
        Ok(mut r) => match r.len() {
            Ok(len) => len,
            Err(e) => return (None, Some(OpenDamage::Unopened(e.to_string()))),
        },
        Err(e) => return (None, Some(OpenDamage::Unopened(e.to_string()))),
    };
    let holds = len.min(n);
    let damage = (holds < n).then_some(OpenDamage::Short { holds, counts: n });
    (Some(holds), damage)
}

/// What the listing of a blob channel (needed for its size) tells.
struct BlobListing {
    bytes: u64,
    /// Indices of non-empty sample files, unordered.
    present: Vec<u64>,
}

impl BlobListing {
    /// Non-empty sample files among samples `0..n`.
    fn present_below(&self, n: u64) -> u64 {
        let mut below: Vec<u64> = self.present.iter().copied().filter(|&i| i < n).collect();
        below.sort_unstable();
        below.dedup();
        below.len() as u64
    }
}

fn list_blob(dir: &Path, ext: &str, n: u64) -> Result<BlobListing> {
    let mut out = BlobListing {
        bytes: 0,
        present: Vec::new(),
    };
    let Ok(rd) = fs::read_dir(dir) else {
        // A missing directory: every sample is missing (the reader says so when read).
        return Ok(out);
    };
    for e in rd {
        let e = e.at(dir)?;
        let len = e.metadata().at(&e.path())?.len();
        out.bytes += len;
        if len > 0 {
            if let Some(i) = parse_sample_name(&e.file_name().to_string_lossy(), ext) {
                if i < n {
                    out.present.push(i);
                }
            }
        }
    }
    Ok(out)
}
