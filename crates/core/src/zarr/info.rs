//! The library side of `roverlog info` and `roverlog cat` for zarr stores.
//!
//! [`describe`] summarises a group (recursively) or a single array, like zarr-python's
//! `array.info`; [`cat`] streams rows `a:b` of an array (or one field of them) as
//! zarr-python's `array[a:b].tobytes()` gives them, in little-endian.

use std::fmt;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::array::ZarrArray;
use super::meta::{read_attrs, ArrayMeta, GroupMeta, Order};
use super::zerr;
use crate::error::{Error, IoContext, Result, ZarrProblem};

/// Deepest group nesting [`describe`] walks.
const MAX_GROUP_DEPTH: usize = 16;
/// Most directory entries [`describe`] looks at, in total.
const MAX_WALK_ENTRIES: u64 = 10_000_000;
/// Rows are written in batches of about this many bytes.
const CAT_BATCH_BYTES: u64 = 32 << 20;

/// A zarr store: one array, or a group and every array below it.
#[derive(Debug, Clone, PartialEq)]
pub struct ZarrInfo {
    pub path: PathBuf,
    /// True when `path` is a group.
    pub is_group: bool,
    /// Keys of the group's (or array's) `.zattrs`.
    pub attrs: Vec<String>,
    /// Arrays, named by their path relative to `path` (`""` for the array itself).
    pub arrays: Vec<ArrayInfo>,
}

/// The summary of one array.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayInfo {
    pub name: String,
    pub shape: Vec<u64>,
    pub chunks: Vec<u64>,
    /// numpy `descr`-like text: `<f8` or `[('centroid', '<f8', (2,)), ...]`.
    pub dtype: String,
    pub itemsize: usize,
    /// zarr-python-like text, e.g. `Blosc(cname='lz4', clevel=5, shuffle=SHUFFLE, blocksize=0)`.
    pub compressor: String,
    pub filters: Vec<String>,
    pub order: char,
    /// Number of chunks the shape needs.
    pub chunks_total: u64,
    /// Number of chunk files present.
    pub chunks_initialized: u64,
    /// Logical size, `prod(shape) * itemsize`.
    pub nbytes: u64,
    /// Bytes on disk: chunk files plus `.zarray`/`.zattrs`.
    pub nbytes_stored: u64,
    /// Empty when we can read it, else why not.
    pub unreadable: String,
}

impl ArrayInfo {
    /// `nbytes / nbytes_stored` (zarr-python's "Storage ratio").
    pub fn ratio(&self) -> f64 {
        if self.nbytes_stored == 0 {
            0.0
        } else {
            self.nbytes as f64 / self.nbytes_stored as f64
        }
    }
}

/// Describes the zarr group or array at `path`.
pub fn describe(path: &Path) -> Result<ZarrInfo> {
    let mut budget = MAX_WALK_ENTRIES;
    if path.join(".zarray").is_file() {
        let arr = array_info(path, "", &mut budget)?;
        return Ok(ZarrInfo {
            path: path.to_path_buf(),
            is_group: false,
            attrs: read_attrs(path)?.keys().cloned().collect(),
            arrays: vec![arr],
        });
    }
    let g = GroupMeta::read(path)?;
    let mut arrays = Vec::new();
    walk_group(path, "", 0, &mut budget, &mut arrays)?;
    Ok(ZarrInfo {
        path: path.to_path_buf(),
        is_group: true,
        attrs: g.attrs.keys().cloned().collect(),
        arrays,
    })
}

fn walk_group(
    dir: &Path,
    prefix: &str,
    depth: usize,
    budget: &mut u64,
    out: &mut Vec<ArrayInfo>,
) -> Result<()> {
    if depth > MAX_GROUP_DEPTH {
        return Err(zerr(
            dir,
            ZarrProblem::GroupsTooDeep {
                limit: MAX_GROUP_DEPTH,
            },
        ));
    }
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir).at(dir)? {
        let e = e.at(dir)?;
        take_budget(budget, dir)?;
        if e.file_type().at(dir)?.is_dir() {
            names.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    for name in names {
        let sub = dir.join(&name);
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        if sub.join(".zarray").is_file() {
            // One array whose `.zarray` we cannot parse (an object dtype, a damaged file)
            // is listed as unreadable; the rest of the group is still described.
            let info = match ArrayMeta::read(&sub) {
                Ok(_) => array_info(&sub, &rel, budget)?,
                Err(e) => unparsed_array(&sub, &rel, budget, e.to_string())?,
            };
            out.push(info);
        } else if sub.join(".zgroup").is_file() {
            walk_group(&sub, &rel, depth + 1, budget, out)?;
        }
    }
    Ok(())
}

fn take_budget(budget: &mut u64, dir: &Path) -> Result<()> {
    *budget = budget.checked_sub(1).ok_or_else(|| {
        zerr(
            dir,
            ZarrProblem::TooManyEntries {
                limit: MAX_WALK_ENTRIES,
            },
        )
    })?;
    Ok(())
}

fn array_info(dir: &Path, name: &str, budget: &mut u64) -> Result<ArrayInfo> {
    let meta = ArrayMeta::read(dir)?;
    let (mut files, mut stored) = (0u64, 0u64);
    count_files(dir, 0, budget, &mut files, &mut stored)?;
    Ok(ArrayInfo {
        name: name.to_string(),
        shape: meta.shape.clone(),
        chunks: meta.chunks.clone(),
        dtype: meta.dtype.to_string(),
        itemsize: meta.dtype.itemsize(),
        compressor: meta.compressor.to_string(),
        filters: meta.filters.clone(),
        order: if meta.order == Order::C { 'C' } else { 'F' },
        chunks_total: meta.chunk_grid().iter().product(),
        chunks_initialized: files,
        nbytes: meta.nbytes(),
        nbytes_stored: stored,
        unreadable: meta
            .check_readable(dir)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default(),
    })
}

/// What is known of an array inside a group whose `.zarray` could not be parsed: its name,
/// its files and why it is unreadable.
fn unparsed_array(dir: &Path, name: &str, budget: &mut u64, why: String) -> Result<ArrayInfo> {
    let (mut files, mut stored) = (0u64, 0u64);
    count_files(dir, 0, budget, &mut files, &mut stored)?;
    Ok(ArrayInfo {
        name: name.to_string(),
        shape: Vec::new(),
        chunks: Vec::new(),
        dtype: String::new(),
        itemsize: 0,
        compressor: String::new(),
        filters: Vec::new(),
        order: '?',
        chunks_total: 0,
        chunks_initialized: files,
        nbytes: 0,
        nbytes_stored: stored,
        unreadable: why,
    })
}

/// Counts chunk files (not starting with `.`) and sums all file sizes under an array.
fn count_files(
    dir: &Path,
    depth: usize,
    budget: &mut u64,
    n: &mut u64,
    bytes: &mut u64,
) -> Result<()> {
    if depth > super::MAX_NDIM {
        return Ok(());
    }
    for e in std::fs::read_dir(dir).at(dir)? {
        let e = e.at(dir)?;
        take_budget(budget, dir)?;
        let ft = e.file_type().at(dir)?;
        let name = e.file_name();
        let name = name.to_string_lossy();
        if ft.is_dir() {
            // Nested chunk keys (dimension_separator "/"); not sub-arrays.
            if !e.path().join(".zarray").exists() && !e.path().join(".zgroup").exists() {
                count_files(&e.path(), depth + 1, budget, n, bytes)?;
            }
        } else if ft.is_file() {
            *bytes += e.metadata().at(dir)?.len();
            if !name.starts_with('.') {
                *n += 1;
            } else if name != ".zarray" && name != ".zattrs" {
                // Other dotfiles are not part of the array.
                *bytes -= e.metadata().at(dir)?.len();
            }
        }
    }
    Ok(())
}

fn human(n: u64) -> String {
    const UNITS: [&str; 5] = ["", "K", "M", "G", "T"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n}")
    } else {
        format!("{n} ({v:.1}{})", UNITS[u])
    }
}

impl fmt::Display for ZarrInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.is_group { "group" } else { "array" };
        writeln!(f, "{}: zarr v2 {kind}", self.path.display())?;
        if !self.attrs.is_empty() {
            writeln!(f, "attributes         : {}", self.attrs.join(", "))?;
        }
        for a in &self.arrays {
            writeln!(f)?;
            if !a.name.is_empty() {
                writeln!(f, "[{}]", a.name)?;
            }
            if a.dtype.is_empty() {
                // Its `.zarray` could not be parsed: nothing else is known.
                writeln!(f, "  bytes stored     : {}", human(a.nbytes_stored))?;
                writeln!(f, "  unreadable       : {}", a.unreadable)?;
                continue;
            }
            writeln!(f, "  shape            : {:?}", a.shape)?;
            writeln!(f, "  chunks           : {:?}", a.chunks)?;
            writeln!(f, "  dtype            : {}", a.dtype)?;
            writeln!(f, "  itemsize         : {}", a.itemsize)?;
            writeln!(f, "  order            : {}", a.order)?;
            writeln!(f, "  compressor       : {}", a.compressor)?;
            if !a.filters.is_empty() {
                writeln!(f, "  filters          : {}", a.filters.join(", "))?;
            }
            writeln!(f, "  bytes            : {}", human(a.nbytes))?;
            writeln!(f, "  bytes stored     : {}", human(a.nbytes_stored))?;
            writeln!(f, "  storage ratio    : {:.1}", a.ratio())?;
            writeln!(
                f,
                "  chunks stored    : {}/{}",
                a.chunks_initialized, a.chunks_total
            )?;
            if !a.unreadable.is_empty() {
                writeln!(f, "  unreadable       : {}", a.unreadable)?;
            }
        }
        Ok(())
    }
}

/// Writes rows `rows` of the array at `path` to `out` as zarr-python's
/// `array[a:b].tobytes()` gives them (rows packed, little-endian), or with `field` only that
/// field's values (`array[a:b][field].tobytes()`). Like a Python slice, the range is clipped
/// to the array. Returns the number of bytes written.
pub fn cat(
    path: &Path,
    rows: Range<u64>,
    field: Option<&str>,
    out: &mut impl Write,
) -> Result<u64> {
    let arr = ZarrArray::open(path)?;
    let end = rows.end.min(arr.len());
    let start = rows.start.min(end);
    if let Some(name) = field {
        if arr.dtype().find_field(name).is_none() {
            // Fail before writing anything.
            arr.read_records(0..0)?.field_bytes(name)?;
        }
    }
    let batch = (CAT_BATCH_BYTES / arr.row_bytes().max(1) as u64).max(1);
    let mut written = 0u64;
    let mut a = start;
    let out_err = |e| Error::io("<output>", e);
    while a < end {
        let b = end.min(a + batch);
        let bytes = match field {
            None => arr.read_rows(a..b)?,
            Some(name) => arr.read_field_bytes(name, a..b)?,
        };
        out.write_all(&bytes).map_err(out_err)?;
        written += bytes.len() as u64;
        a = b;
    }
    out.flush().map_err(out_err)?;
    Ok(written)
}
