//! What is wrong with a zarr array's settings or one of its chunks, as values.
//!
//! These are the details of [`super::Error::BadSetting`] and [`super::Error::BadChunk`]: each
//! variant carries the numbers or JSON text involved, and its `Display` is the message users
//! read. They live beside the error type, below the zarr modules that produce them, so that
//! `zarr` imports them and nothing here imports `zarr` back. JSON values are kept as their
//! JSON text (what the messages print).

use std::fmt;

/// A compressor, filter, dtype or fill value in `.zarray` that we refuse.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SettingProblem {
    /// A compressor object without an `id`.
    CompressorNoId { json: String },
    /// A compressor we cannot decode, found while decoding.
    Compressor { id: String },
    /// A compressor we cannot decode, found when checking an array before reading it.
    CompressorNotReadable { id: String },
    /// numcodecs' lzma `format` outside 0..=3.
    LzmaFormat { format: i64 },
    /// lzma `filters` that are not a list of at most 4.
    LzmaFilters { json: String },
    /// An lzma filter without a numeric `id`.
    LzmaFilterNoId { json: String },
    /// An lzma filter id other than delta, lzma1, lzma2.
    LzmaFilterId { id: u64 },
    /// An lzma delta filter distance outside 1..=256.
    LzmaDelta { dist: u64 },
    /// lzma1 `lc`, `lp`, `pb` out of range.
    Lzma1 { lc: u64, lp: u64, pb: u64 },
    /// A raw lzma filter chain that does not end in lzma1 or lzma2.
    LzmaRawChain,
    /// More filters than we decode.
    TooManyFilters { count: usize },
    /// A filter id we do not decode.
    Filter { id: String },
    /// A filter's dtype that is not a plain number.
    FilterDType { dtype: String },
    /// A filter missing a string member.
    FilterMissing { id: String, key: String },
    /// A filter missing a numeric member.
    FilterMissingNumber { id: String, key: String },
    /// A categorize filter whose dtype is not `U<n>`.
    CategorizeDType { dtype: String },
    /// A categorize label that is not a string.
    CategorizeLabel,
    /// A shuffle filter's element size over our limit.
    ShuffleElementsize { size: u64 },
    /// A filter stage whose size is not whole elements.
    PartialElements { bytes: usize, size: usize },
    /// A filter stage that would grow a chunk past the chunk limit.
    FilterChunkTooLarge { bytes: usize },
    /// The array's `dtype`.
    DType(DTypeProblem),
    /// The array's `fill_value`.
    FillValue(FillProblem),
}

impl fmt::Display for SettingProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use SettingProblem::*;
        match self {
            CompressorNoId { json } => write!(f, "compressor {json} has no \"id\""),
            Compressor { id } => write!(f, "compressor {id:?} is not supported"),
            CompressorNotReadable { id } => write!(
                f,
                "compressor {id:?} is not supported (supported: blosc, zstd, zlib, gzip, \
                 lz4, bz2, lzma, null)"
            ),
            LzmaFormat { format } => write!(f, "lzma format {format} is not 0, 1, 2 or 3"),
            LzmaFilters { json } => write!(f, "lzma filters {json} is not a list of at most 4"),
            LzmaFilterNoId { json } => write!(f, "lzma filter {json} has no numeric \"id\""),
            LzmaFilterId { id } => write!(
                f,
                "lzma filter id {id:#x} is not supported (delta, lzma1, lzma2 are)"
            ),
            LzmaDelta { dist } => write!(f, "lzma delta filter distance {dist} is not 1..=256"),
            Lzma1 { lc, lp, pb } => {
                write!(f, "lzma1 filter lc={lc} lp={lp} pb={pb} out of range")
            }
            LzmaRawChain => f.write_str(
                "lzma raw format needs filters ending in lzma1 or lzma2 (delta before it)",
            ),
            TooManyFilters { count } => write!(f, "{count} filters (at most 16 are decoded)"),
            Filter { id } => write!(
                f,
                "filter {id:?} is not supported (delta, fixedscaleoffset, quantize, astype, \
                 packbits, categorize, shuffle, bitround are)"
            ),
            FilterDType { dtype } => write!(
                f,
                "filter dtype {dtype:?} is not supported (integers, f4, f8, bool)"
            ),
            FilterMissing { id, key } => write!(f, "filter {id}: no {key:?}"),
            FilterMissingNumber { id, key } => write!(f, "filter {id}: no numeric {key:?}"),
            CategorizeDType { dtype } => write!(
                f,
                "filter categorize: dtype {dtype:?} is not a fixed-width unicode string"
            ),
            CategorizeLabel => f.write_str("filter categorize: a label is not a string"),
            ShuffleElementsize { size } => {
                write!(f, "filter shuffle: elementsize {size} is too large")
            }
            PartialElements { bytes, size } => {
                write!(f, "{bytes} bytes are not whole {size}-byte elements")
            }
            FilterChunkTooLarge { bytes } => write!(
                f,
                "a filter's encoded chunk would be {bytes} bytes, over the chunk limit"
            ),
            DType(p) => write!(f, "{p}"),
            FillValue(p) => write!(f, "fill_value: {p}"),
        }
    }
}

/// Why a `dtype` description was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DTypeProblem {
    /// Neither a type string nor a field list (its JSON text).
    NotADType { json: String },
    /// A type string we do not read.
    Unsupported { typestr: String },
    /// A scalar type larger than `limit` bytes.
    ScalarTooLarge { typestr: String, limit: u64 },
    /// Structured dtypes nested deeper than `limit`.
    TooDeep { limit: usize },
    /// More fields than `limit`.
    TooManyFields { count: usize, limit: usize },
    /// A structured dtype without fields.
    NoFields,
    /// A field that is not `[name, type(, shape)]`.
    FieldForm { json: String },
    /// A field name that is not a string.
    FieldName { json: String },
    /// Two fields of one name.
    DuplicateField { name: String },
    /// A field's sub-array shape whose product overflows.
    SubArrayOverflow,
    /// A field larger than `limit` bytes.
    FieldTooLarge { name: String, limit: u64 },
    /// A structured item larger than `limit` bytes.
    ItemTooLarge { limit: u64 },
    /// A sub-array shape that is not a list.
    ShapeNotList { json: String },
    /// A sub-array shape of more than `limit` dimensions.
    ShapeDims { count: usize, limit: usize },
    /// A sub-array dimension that is not a small integer.
    ShapeDim { json: String },
}

impl fmt::Display for DTypeProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use DTypeProblem::*;
        match self {
            NotADType { json } => {
                write!(f, "dtype {json} is neither a type string nor a field list")
            }
            Unsupported { typestr } => write!(f, "unsupported dtype {typestr:?}"),
            ScalarTooLarge { typestr, limit } => {
                write!(
                    f,
                    "dtype {typestr:?} is larger than the limit of {limit} bytes"
                )
            }
            TooDeep { limit } => write!(f, "structured dtype nested deeper than {limit} levels"),
            TooManyFields { count, limit } => write!(
                f,
                "structured dtype has {count} fields, over the limit of {limit}"
            ),
            NoFields => f.write_str("structured dtype without fields"),
            FieldForm { json } => write!(f, "dtype field {json} is not [name, type(, shape)]"),
            FieldName { json } => write!(f, "dtype field name {json} is not a string"),
            DuplicateField { name } => write!(f, "dtype field {name:?} appears twice"),
            SubArrayOverflow => f.write_str("dtype sub-array shape overflows"),
            FieldTooLarge { name, limit } => {
                write!(f, "dtype field {name:?} is larger than {limit} bytes")
            }
            ItemTooLarge { limit } => write!(
                f,
                "structured dtype itemsize over the limit of {limit} bytes"
            ),
            ShapeNotList { json } => write!(f, "dtype sub-array shape {json} is not a list"),
            ShapeDims { count, limit } => write!(
                f,
                "dtype sub-array has {count} dimensions, over the limit of {limit}"
            ),
            ShapeDim { json } => {
                write!(f, "dtype sub-array dimension {json} is not a small integer")
            }
        }
    }
}

/// Why a `fill_value` does not fit the array's dtype.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FillProblem {
    /// A value of the wrong kind: its JSON text, and what it should have been.
    NotA {
        json: String,
        expected: &'static str,
    },
    /// Text that is not base64.
    Base64(base64::DecodeError),
    /// Base64 fill for a structured dtype of another size.
    StructSize { got: usize, item: usize },
    /// Base64 fill longer than the item.
    TooLong { got: usize, size: usize },
}

impl fmt::Display for FillProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FillProblem::NotA { json, expected } => write!(f, "{json} is not {expected}"),
            FillProblem::Base64(e) => write!(f, "invalid base64: {e}"),
            FillProblem::StructSize { got, item } => {
                write!(f, "{got} bytes of fill for a {item}-byte structured item")
            }
            FillProblem::TooLong { got, size } => {
                write!(f, "{got} bytes of fill for {size} bytes")
            }
        }
    }
}

/// Chunk bytes that contradict their codec's framing (header, size prefix, padding).
#[derive(Debug)]
#[non_exhaustive]
pub enum ChunkProblem {
    /// An uncompressed chunk of the wrong size.
    RawSize { got: usize, expected: usize },
    /// zstd refused the data.
    Zstd(std::io::Error),
    /// An lz4 chunk too short for its 4-byte size prefix.
    Lz4NoPrefix { len: usize },
    /// lz4 refused the block.
    Lz4(std::io::Error),
    /// A `.lzma` chunk too short for its 13-byte header.
    LzmaNoHeader { len: usize },
    /// A `.lzma` header lzma refused.
    LzmaHeader(std::io::Error),
    /// Raw lzma1 settings lzma refused.
    Lzma1(std::io::Error),
    /// A raw lzma chain without lzma1 or lzma2.
    LzmaRawNoFilter,
    /// A packbits chunk without its padding byte.
    PackBitsEmpty,
    /// A packbits chunk whose bit count does not give the values expected.
    PackBitsSize {
        bits: usize,
        pad: usize,
        values: usize,
    },
    /// A shuffled chunk that is not whole elements.
    ShuffleSize { bytes: usize, size: usize },
    /// A chunk shorter than the Blosc header.
    BloscShort { len: usize, header: usize },
    /// A Blosc2 chunk.
    Blosc2 { version: u8 },
    /// A Blosc header version c-blosc 1.x does not read.
    BloscVersion { version: u8, reads: u8 },
    /// The header's compressed size is not the chunk's.
    BloscCbytes { cbytes: u32, len: usize },
    /// The header's decoded size is not the chunk's.
    BloscNbytes { nbytes: u32, expected: usize },
    /// Blosc's own delta filter.
    BloscDelta,
    /// A Blosc header with type size 0.
    BloscTypesize,
    /// A block size that does not fit the decoded size.
    BloscBlocksize { blocksize: u32, nbytes: u32 },
    /// A stored-uncompressed chunk of the wrong size.
    BloscMemcpyed { nbytes: u32, cbytes: u32 },
    /// A block table that does not fit the chunk.
    BloscBlockTable {
        nblocks: u64,
        need: u64,
        cbytes: u32,
    },
    /// A block that starts outside the chunk's data.
    BloscBlockStart {
        block: usize,
        start: u64,
        lo: u64,
        hi: u32,
    },
    /// c-blosc's own header check failed.
    BloscRejected,
    /// c-blosc failed to decode (`ret` is what it returned).
    BloscFailed { codec: &'static str, ret: i32 },
}

impl fmt::Display for ChunkProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ChunkProblem::*;
        match self {
            RawSize { got, expected } => write!(f, "raw chunk is {got} bytes, expected {expected}"),
            Zstd(e) => write!(f, "corrupt zstd data: {e}"),
            Lz4NoPrefix { len } => write!(f, "{len} bytes, no size prefix"),
            Lz4(e) => write!(f, "corrupt lz4 block: {e}"),
            LzmaNoHeader { len } => write!(f, "{len} bytes: no .lzma header"),
            LzmaHeader(e) => write!(f, "corrupt .lzma header: {e}"),
            Lzma1(e) => write!(f, "lzma1: {e}"),
            LzmaRawNoFilter => f.write_str("lzma raw format without an lzma1/lzma2 filter"),
            PackBitsEmpty => f.write_str("packbits: empty chunk"),
            PackBitsSize { bits, pad, values } => {
                write!(
                    f,
                    "packbits: {bits} bits ({pad} padding) for {values} values"
                )
            }
            ShuffleSize { bytes, size } => {
                write!(
                    f,
                    "shuffle: {bytes} bytes are not whole {size}-byte elements"
                )
            }
            BloscShort { len, header } => write!(
                f,
                "chunk is {len} bytes, shorter than the {header}-byte Blosc header"
            ),
            Blosc2 { version } => write!(
                f,
                "Blosc header version {version} is a Blosc2 chunk (only Blosc 1 is supported)"
            ),
            BloscVersion { version, reads } => write!(
                f,
                "Blosc header version {version} (c-blosc 1.x reads version {reads})"
            ),
            BloscCbytes { cbytes, len } => write!(
                f,
                "header says {cbytes} compressed bytes but the chunk holds {len}"
            ),
            BloscNbytes { nbytes, expected } => write!(
                f,
                "header says {nbytes} decoded bytes but the chunk must hold {expected}"
            ),
            BloscDelta => f.write_str("delta filter flag (0x08) is not supported"),
            BloscTypesize => f.write_str("typesize 0"),
            BloscBlocksize { blocksize, nbytes } => {
                write!(f, "blocksize {blocksize} for {nbytes} decoded bytes")
            }
            BloscMemcpyed { nbytes, cbytes } => write!(
                f,
                "stored-uncompressed chunk of {nbytes} bytes has cbytes {cbytes}"
            ),
            BloscBlockTable {
                nblocks,
                need,
                cbytes,
            } => write!(
                f,
                "{nblocks} blocks need {need} bytes of header, chunk has {cbytes}"
            ),
            BloscBlockStart {
                block,
                start,
                lo,
                hi,
            } => write!(f, "block {block} starts at {start}, outside [{lo}, {hi})"),
            BloscRejected => f.write_str("c-blosc rejected the chunk header"),
            BloscFailed { codec, ret } => write!(
                f,
                "c-blosc ({codec} codec) failed to decode the chunk (returned {ret})"
            ),
        }
    }
}
