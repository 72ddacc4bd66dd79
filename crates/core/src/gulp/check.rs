//! `roverlog validate` and `roverlog info` for gulp directories.
//!
//! The sanity check reproduces gulpio2's `gulp2_sanity_check` (empty files, data file size
//! versus the end of the last frame, duplicate ids) but reports every problem instead of
//! stopping at the first, and works on a directory that [`GulpDirectory::open`] refuses.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use super::{chunk_files, read_gmeta, GulpDirectory, GulpOptions};
use crate::error::IoContext;
use crate::{Error, Result};

/// One problem found by [`sanity_check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SanityProblem {
    /// A `.gmeta` of 0 bytes (gulpio2: `check_meta_file_size_larger_zero`).
    EmptyMeta { path: PathBuf },
    /// A `.gulp` of 0 bytes (gulpio2: `check_data_file_size_larger_zero`).
    EmptyData { path: PathBuf },
    /// The `.gulp` size is not the end of the last frame of the last id (gulpio2:
    /// `check_data_file_size`).
    DataSize {
        path: PathBuf,
        expected: u64,
        actual: u64,
    },
    /// An id present in more than one chunk (gulpio2: `check_for_duplicate_ids`).
    DuplicateId { id: String, metas: Vec<PathBuf> },
    /// Beyond gulpio2: a frame that lies (partly) past the end of its data file, which
    /// gulpio2 only notices when it reads it.
    FramePastEnd {
        path: PathBuf,
        id: String,
        frame: usize,
        end: u64,
        data_len: u64,
    },
    /// A `.gmeta` we cannot read or parse, or files we cannot pair (gulpio2 crashes on these).
    Unreadable { error: String },
}

impl fmt::Display for SanityProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SanityProblem::EmptyMeta { path } => write!(f, "{}: empty meta file", path.display()),
            SanityProblem::EmptyData { path } => write!(f, "{}: empty data file", path.display()),
            SanityProblem::DataSize {
                path,
                expected,
                actual,
            } => write!(
                f,
                "{}: {actual} bytes, but the last frame ends at {expected}",
                path.display()
            ),
            SanityProblem::DuplicateId { id, metas } => {
                let names: Vec<String> = metas.iter().map(|p| p.display().to_string()).collect();
                write!(f, "duplicate id {id:?} in {}", names.join(", "))
            }
            SanityProblem::FramePastEnd {
                path,
                id,
                frame,
                end,
                data_len,
            } => write!(
                f,
                "{}: id {id:?} frame {frame} ends at {end}, past the data file's {data_len} bytes",
                path.display()
            ),
            SanityProblem::Unreadable { error } => f.write_str(error),
        }
    }
}

/// Everything [`sanity_check`] found; passed when `problems` is empty.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SanityReport {
    pub chunks: usize,
    pub ids: usize,
    pub problems: Vec<SanityProblem>,
}

impl SanityReport {
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

impl fmt::Display for SanityReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_ok() {
            return write!(f, "ok: {} chunks, {} ids", self.chunks, self.ids);
        }
        writeln!(f, "{} problem(s):", self.problems.len())?;
        for p in &self.problems {
            writeln!(f, "  {p}")?;
        }
        Ok(())
    }
}

/// Checks a gulp directory as `gulp2_sanity_check` does and lists every problem. Only a
/// directory that cannot be listed at all is an `Err`.
pub fn sanity_check(dir: impl AsRef<Path>, opts: &GulpOptions) -> Result<SanityReport> {
    let dir = dir.as_ref();
    std::fs::read_dir(dir).at(dir)?;
    let mut report = SanityReport::default();
    let pairs = match chunk_files(dir) {
        Ok(p) => p,
        Err(e) => {
            report.problems.push(SanityProblem::Unreadable {
                error: e.to_string(),
            });
            return Ok(report);
        }
    };
    report.chunks = pairs.len();
    let mut seen: HashMap<String, Vec<PathBuf>> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    for files in &pairs {
        let size = |p: &Path| {
            std::fs::metadata(p)
                .map(|m| m.len())
                .map_err(|e| Error::io(p, e))
        };
        let (meta_len, data_len) = match (size(&files.meta), size(&files.data)) {
            (Ok(m), Ok(d)) => (m, d),
            (Err(e), _) | (_, Err(e)) => {
                report.problems.push(SanityProblem::Unreadable {
                    error: e.to_string(),
                });
                continue;
            }
        };
        if meta_len == 0 {
            report.problems.push(SanityProblem::EmptyMeta {
                path: files.meta.clone(),
            });
        }
        if data_len == 0 {
            report.problems.push(SanityProblem::EmptyData {
                path: files.data.clone(),
            });
        }
        if meta_len == 0 {
            continue;
        }
        let entries = match read_gmeta(&files.meta, opts) {
            Ok(e) => e,
            Err(e) => {
                report.problems.push(SanityProblem::Unreadable {
                    error: e.to_string(),
                });
                continue;
            }
        };
        // gulpio2 takes the last frame of the last id; an id without frames there would
        // crash it, we look further back.
        let expected = entries
            .iter()
            .rev()
            .find_map(|e| e.frames.last())
            .map_or(0, |f| f.end());
        if expected != data_len {
            report.problems.push(SanityProblem::DataSize {
                path: files.data.clone(),
                expected,
                actual: data_len,
            });
        }
        for e in &entries {
            if let Some((i, f)) = e
                .frames
                .iter()
                .enumerate()
                .find(|(_, f)| f.end() > data_len)
            {
                report.problems.push(SanityProblem::FramePastEnd {
                    path: files.meta.clone(),
                    id: e.id.clone(),
                    frame: i,
                    end: f.end(),
                    data_len,
                });
            }
            let chunks = seen.entry(e.id.clone()).or_default();
            if chunks.is_empty() {
                order.push(e.id.clone());
            }
            chunks.push(files.meta.clone());
        }
    }
    report.ids = order.len();
    for id in order {
        if seen[&id].len() > 1 {
            let metas = seen.remove(&id).unwrap_or_default();
            report
                .problems
                .push(SanityProblem::DuplicateId { id, metas });
        }
    }
    Ok(report)
}

/// Per-chunk figures in a [`GulpSummary`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkSummary {
    pub number: u64,
    pub ids: usize,
    pub frames: usize,
    /// Size of the data file.
    pub data_bytes: u64,
}

/// What `roverlog info` prints about a gulp directory.
#[derive(Debug, Clone, PartialEq)]
pub struct GulpSummary {
    pub path: PathBuf,
    pub chunks: Vec<ChunkSummary>,
    pub ids: usize,
    pub frames: usize,
    /// JPEG bytes of all frames (padding excluded).
    pub jpeg_bytes: u64,
    /// Sum of the data file sizes.
    pub data_bytes: u64,
    /// Frames per id: min, median, max (all 0 when there are no ids) and mean.
    pub frames_per_id_min: usize,
    pub frames_per_id_median: usize,
    pub frames_per_id_max: usize,
    pub frames_per_id_mean: f64,
}

pub(super) fn describe(dir: &GulpDirectory) -> GulpSummary {
    let mut chunks: Vec<ChunkSummary> = dir
        .chunks
        .iter()
        .map(|c| ChunkSummary {
            number: c.files.number,
            ids: 0,
            frames: 0,
            data_bytes: c.bytes().len() as u64,
        })
        .collect();
    let mut counts = Vec::with_capacity(dir.videos.len());
    let mut jpeg_bytes = 0u64;
    for v in &dir.videos {
        chunks[v.chunk].ids += 1;
        chunks[v.chunk].frames += v.frames.len();
        counts.push(v.frames.len());
        jpeg_bytes += v.frames.iter().map(|f| f.jpeg_len()).sum::<u64>();
    }
    counts.sort_unstable();
    let frames: usize = counts.iter().sum();
    GulpSummary {
        path: dir.path.clone(),
        ids: counts.len(),
        frames,
        jpeg_bytes,
        data_bytes: chunks.iter().map(|c| c.data_bytes).sum(),
        frames_per_id_min: counts.first().copied().unwrap_or(0),
        frames_per_id_median: counts.get(counts.len() / 2).copied().unwrap_or(0),
        frames_per_id_max: counts.last().copied().unwrap_or(0),
        frames_per_id_mean: if counts.is_empty() {
            0.0
        } else {
            frames as f64 / counts.len() as f64
        },
        chunks,
    }
}

impl fmt::Display for GulpSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "gulp directory {}", self.path.display())?;
        writeln!(
            f,
            "  {} chunks, {} ids, {} frames, {} JPEG bytes ({} on disk)",
            self.chunks.len(),
            self.ids,
            self.frames,
            self.jpeg_bytes,
            self.data_bytes
        )?;
        writeln!(
            f,
            "  frames per id: min {}, median {}, mean {:.1}, max {}",
            self.frames_per_id_min,
            self.frames_per_id_median,
            self.frames_per_id_mean,
            self.frames_per_id_max
        )?;
        for c in &self.chunks {
            writeln!(
                f,
                "  chunk {}: {} ids, {} frames, {} bytes",
                c.number, c.ids, c.frames, c.data_bytes
            )?;
        }
        Ok(())
    }
}
