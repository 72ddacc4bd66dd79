//! Zarr v2 reader (DirectoryStore layout) and the L5Kit dataset layer on top of it.
//!
//! Plain Rust over files and bytes. The pieces, one per concern:
//!
//! - [`dtype`]: numpy dtypes as zarr v2 writes them (`"<f8"`, `"|S5"`, structured lists with
//!   sub-array shapes and nesting, complex, datetime64/timedelta64 with their units) and
//!   byte-order normalisation.
//! - [`values`]: the normalised bytes of a field as typed [`Values`] (numbers, strings).
//! - [`meta`]: `.zarray` / `.zgroup` / `.zattrs` parsing with explicit limits, since metadata
//!   files are untrusted input; fill values.
//! - [`codec`]: the compressors numcodecs writes (Blosc, Zstd, Zlib, GZip, BZ2, LZ4, LZMA,
//!   none), each decoding into a buffer of exactly the chunk's size; [`blosc`] validates the
//!   Blosc header before handing a chunk to c-blosc; [`lzma`](mod@lzma) is numcodecs' `LZMA`
//!   in its four formats; both fill a chunk's buffer through `stream` (below both, so
//!   neither imports the other back).
//! - [`filters`]: the `.zarray` filter chain (delta, fixedscaleoffset, quantize, astype,
//!   packbits, categorize, ...), undone in reverse after the compressor.
//! - [`order`]: `order: "F"` chunks reordered to C order, one chunk at a time.
//! - [`array`](mod@array): [`ZarrArray`], row-range reads that decode each chunk once (small LRU of
//!   decoded chunks) and decode independent chunks in parallel.
//! - [`info`]: [`describe`] and [`cat`], the library side of `roverlog info` / `roverlog cat`.
//! - [`l5kit`]: [`l5kit::ChunkedDataset`] with typed scenes, frames, agents and traffic
//!   light faces.
//!
//! Everything we hand out is little-endian and packed: a row range reads back as
//! zarr-python's `array[a:b].tobytes()` would give it after converting to little-endian.

pub mod array;
pub mod blosc;
pub mod codec;
pub mod dtype;
pub mod filters;
pub mod info;
pub mod l5kit;
pub mod lzma;
pub mod meta;
pub mod order;
mod stream;
pub mod values;

pub use array::{Rows, ZarrArray};
pub use codec::Compressor;
pub use dtype::{DType, Field, Scalar, ScalarKind};
pub use info::{cat, describe, ArrayInfo, ZarrInfo};
pub use meta::{ArrayMeta, Order};
pub use values::{Column, Values};

use std::path::Path;

use crate::error::{Error, ZarrProblem};

/// Largest metadata file (`.zarray`, `.zgroup`, `.zattrs`) we read.
pub const MAX_META_BYTES: u64 = 1 << 20;
/// Largest decoded chunk we allocate (bytes). L5Kit chunks are a few MiB.
pub const MAX_CHUNK_BYTES: u64 = 512 << 20;
/// Largest number of dimensions of an array or of a field's sub-array.
pub const MAX_NDIM: usize = 32;
/// Largest number of fields in one structured dtype (at one nesting level).
pub const MAX_FIELDS: usize = 1024;
/// Deepest nesting of structured dtypes.
pub const MAX_DTYPE_DEPTH: usize = 8;
/// Largest item (one array element, e.g. one structured row) in bytes.
pub const MAX_ITEMSIZE: u64 = 1 << 20;

pub(crate) use crate::io::{read_limited, read_limited_into};

/// A `Zarr` error for `path`.
pub(crate) fn zerr(path: &Path, problem: ZarrProblem) -> Error {
    Error::Zarr {
        path: path.to_path_buf(),
        problem,
    }
}
