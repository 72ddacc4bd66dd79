//! What is wrong with a zarr array's or group's metadata or layout ([`super::Error::Zarr`]),
//! as values: the numbers, names and JSON text involved. Beside the error type, below the
//! zarr modules that produce them; each variant's `Display` is the message users read after
//! the path. JSON values are kept as their JSON text (what the messages print).

use std::fmt;

/// Zarr metadata or layout we cannot read, or a read that does not fit the array.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ZarrProblem {
    // ----- .zarray / .zgroup / .zattrs ----------------------------------------------------
    /// A directory without `.zarray`.
    NoZarray,
    /// A `.zarray` that is not a JSON object.
    ZarrayNotObject,
    /// A `.zarray` whose `zarr_format` is not 2 (`None`: absent or not a number).
    ZarrFormat { found: Option<u64> },
    /// `shape` or `chunks` (`key`) absent or not a list.
    DimsNotList { key: &'static str },
    /// `shape` or `chunks` (`key`) with more than `limit` dimensions.
    TooManyDims {
        key: &'static str,
        ndim: usize,
        limit: usize,
    },
    /// An element of `shape` or `chunks` (`key`) that is not a non-negative integer.
    BadDim { key: &'static str, json: String },
    /// `shape` and `chunks` of different lengths.
    DimsMismatch { shape: usize, chunks: usize },
    /// A chunk dimension of 0.
    ZeroChunk,
    /// Chunks of `chunks` items of `item` bytes over `limit` bytes.
    ChunkTooLarge {
        chunks: Vec<u64>,
        item: u64,
        limit: u64,
    },
    /// A shape whose size in bytes overflows.
    ShapeOverflow { shape: Vec<u64> },
    /// `filters` that is neither null nor a list.
    FiltersNotList { json: String },
    /// An `order` other than `"C"` or `"F"`.
    Order { order: String },
    /// A `dimension_separator` other than `"."` or `"/"`.
    DimensionSeparator { json: String },
    /// A directory without `.zgroup`.
    NoZgroup,
    /// A `.zgroup` whose `zarr_format` is not 2.
    GroupFormat,
    /// A `.zattrs` that is not a JSON object.
    ZattrsNotObject,
    /// Groups nested deeper than `limit` while listing a store.
    GroupsTooDeep { limit: usize },
    /// More than `limit` directory entries while listing a store.
    TooManyEntries { limit: u64 },

    // ----- reading rows and fields --------------------------------------------------------
    /// Rows `start..end` outside an array of `rows` rows.
    RowsOutOfRange { start: u64, end: u64, rows: u64 },
    /// A field name that the rows' dtype does not have (the path is the field name).
    NoSuchField { fields: Vec<String> },
    /// A structured field read as values (`dtype`: its numpy description).
    StructuredField { field: String, dtype: String },
    /// Structured rows read as values without naming a field.
    StructuredRows,

    // ----- L5Kit --------------------------------------------------------------------------
    /// An array without one of the fields L5Kit writes.
    NotL5Kit { field: String },
    /// A dataset without `traffic_light_faces`, asked for some.
    NoTrafficLightFaces,
    /// An `[start, end)` interval outside an array of `rows` rows.
    IntervalOutOfRange { start: i64, end: i64, rows: u64 },
    /// An L5Kit array of more than one dimension.
    L5KitNotOneDim,
    /// A field the rows do not have.
    NoField { name: String },
    /// A field of another type or count than L5Kit writes (`dtype`: its numpy description).
    FieldNotL5Kit { name: String, dtype: String },
    /// Frame `frame`'s interval `[start, end)` that does not start where the one before it
    /// ended (`covered` of `rows` rows covered so far).
    FrameIntervalGap {
        frame: usize,
        start: i64,
        end: i64,
        covered: usize,
        rows: u64,
    },
    /// Frames' intervals that cover `covered` of the `rows` rows.
    FramesCoverage { covered: usize, rows: u64 },
}

impl fmt::Display for ZarrProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ZarrProblem as P;
        match self {
            P::NoZarray => f.write_str("not a zarr array (no .zarray)"),
            P::ZarrayNotObject => f.write_str(".zarray is not a JSON object"),
            P::ZarrFormat { found } => write!(
                f,
                "zarr_format {found:?}: only Zarr v2 (zarr_format 2) is supported"
            ),
            P::DimsNotList { key } => write!(f, "{key} is missing or not a list"),
            P::TooManyDims { key, ndim, limit } => {
                write!(f, "{key} has {ndim} dimensions, over the limit of {limit}")
            }
            P::BadDim { key, json } => write!(f, "{key}: {json} is not a non-negative integer"),
            P::DimsMismatch { shape, chunks } => {
                write!(f, "shape has {shape} dimensions but chunks has {chunks}")
            }
            P::ZeroChunk => f.write_str("chunk dimension 0"),
            P::ChunkTooLarge {
                chunks,
                item,
                limit,
            } => write!(
                f,
                "chunks {chunks:?} of {item}-byte items exceed the limit of {limit} bytes per chunk"
            ),
            P::ShapeOverflow { shape } => write!(f, "shape {shape:?} overflows"),
            P::FiltersNotList { json } => write!(f, "filters {json} is not a list"),
            P::Order { order } => write!(f, "order {order:?} is neither \"C\" nor \"F\""),
            P::DimensionSeparator { json } => {
                write!(f, "dimension_separator {json} is neither \".\" nor \"/\"")
            }
            P::NoZgroup => f.write_str("not a zarr group (no .zgroup)"),
            P::GroupFormat => f.write_str("only Zarr v2 groups (zarr_format 2) are supported"),
            P::ZattrsNotObject => f.write_str(".zattrs is not a JSON object"),
            P::GroupsTooDeep { limit } => write!(f, "groups nested deeper than {limit}"),
            P::TooManyEntries { limit } => write!(f, "more than {limit} entries"),
            P::RowsOutOfRange { start, end, rows } => write!(
                f,
                "rows {start}..{end} out of range (array has {rows} rows)"
            ),
            P::NoSuchField { fields } => {
                write!(f, "no such field (fields: {})", fields.join(", "))
            }
            P::StructuredField { field, dtype } => write!(
                f,
                "field is structured ({dtype}); name a sub-field (\"{field}.x\") or read its bytes"
            ),
            P::StructuredRows => f.write_str("structured rows: name a field"),
            P::NotL5Kit { field } => write!(f, "not an L5Kit array: no field {field:?}"),
            P::NoTrafficLightFaces => f.write_str("dataset has no traffic_light_faces array"),
            P::IntervalOutOfRange { start, end, rows } => write!(
                f,
                "interval [{start}, {end}) out of range (array has {rows} rows)"
            ),
            P::L5KitNotOneDim => f.write_str("L5Kit arrays are 1-dimensional"),
            P::NoField { name } => write!(f, "no field {name:?}"),
            P::FieldNotL5Kit { name, dtype } => {
                write!(f, "field {name:?} is {dtype} (not what L5Kit writes)")
            }
            P::FrameIntervalGap {
                frame,
                start,
                end,
                covered,
                rows,
            } => write!(
                f,
                "frame {frame}'s interval [{start}, {end}) does not continue the rows before it \
                 ({covered} of {rows} covered)"
            ),
            P::FramesCoverage { covered, rows } => {
                write!(f, "the frames' intervals cover {covered} of {rows} rows")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    /// The messages users, the Python layer and tests match on, exactly as they were when they
    /// were free text.
    #[test]
    fn messages_are_the_ones_users_read() {
        use ZarrProblem as P;
        let cases: Vec<(P, &str)> = vec![
            (P::NoZarray, "not a zarr array (no .zarray)"),
            (P::ZarrayNotObject, ".zarray is not a JSON object"),
            (
                P::ZarrFormat { found: Some(3) },
                "zarr_format Some(3): only Zarr v2 (zarr_format 2) is supported",
            ),
            (
                P::ZarrFormat { found: None },
                "zarr_format None: only Zarr v2 (zarr_format 2) is supported",
            ),
            (
                P::DimsNotList { key: "shape" },
                "shape is missing or not a list",
            ),
            (
                P::TooManyDims {
                    key: "chunks",
                    ndim: 33,
                    limit: 32,
                },
                "chunks has 33 dimensions, over the limit of 32",
            ),
            (
                P::BadDim {
                    key: "shape",
                    json: "-1".into(),
                },
                "shape: -1 is not a non-negative integer",
            ),
            (
                P::DimsMismatch {
                    shape: 2,
                    chunks: 1,
                },
                "shape has 2 dimensions but chunks has 1",
            ),
            (P::ZeroChunk, "chunk dimension 0"),
            (
                P::ChunkTooLarge {
                    chunks: vec![1 << 20, 1024],
                    item: 8,
                    limit: 512 << 20,
                },
                "chunks [1048576, 1024] of 8-byte items exceed the limit of 536870912 bytes per chunk",
            ),
            (
                P::ShapeOverflow {
                    shape: vec![u64::MAX, 2],
                },
                "shape [18446744073709551615, 2] overflows",
            ),
            (
                P::FiltersNotList { json: "{}".into() },
                "filters {} is not a list",
            ),
            (
                P::Order { order: "K".into() },
                "order \"K\" is neither \"C\" nor \"F\"",
            ),
            (
                P::DimensionSeparator {
                    json: "\"-\"".into(),
                },
                "dimension_separator \"-\" is neither \".\" nor \"/\"",
            ),
            (P::NoZgroup, "not a zarr group (no .zgroup)"),
            (
                P::GroupFormat,
                "only Zarr v2 groups (zarr_format 2) are supported",
            ),
            (P::ZattrsNotObject, ".zattrs is not a JSON object"),
            (
                P::GroupsTooDeep { limit: 16 },
                "groups nested deeper than 16",
            ),
            (
                P::TooManyEntries { limit: 10_000_000 },
                "more than 10000000 entries",
            ),
            (
                P::RowsOutOfRange {
                    start: 5,
                    end: 9,
                    rows: 7,
                },
                "rows 5..9 out of range (array has 7 rows)",
            ),
            (
                P::NoSuchField {
                    fields: vec!["a".into(), "b".into()],
                },
                "no such field (fields: a, b)",
            ),
            (
                P::StructuredField {
                    field: "pos".into(),
                    dtype: "[('x', '<f4')]".into(),
                },
                "field is structured ([('x', '<f4')]); name a sub-field (\"pos.x\") or read its bytes",
            ),
            (P::StructuredRows, "structured rows: name a field"),
            (
                P::NotL5Kit {
                    field: "yaw".into(),
                },
                "not an L5Kit array: no field \"yaw\"",
            ),
            (
                P::NoTrafficLightFaces,
                "dataset has no traffic_light_faces array",
            ),
            (
                P::IntervalOutOfRange {
                    start: -1,
                    end: 4,
                    rows: 3,
                },
                "interval [-1, 4) out of range (array has 3 rows)",
            ),
            (P::L5KitNotOneDim, "L5Kit arrays are 1-dimensional"),
            (
                P::NoField {
                    name: "centroid".into(),
                },
                "no field \"centroid\"",
            ),
            (
                P::FieldNotL5Kit {
                    name: "yaw".into(),
                    dtype: "<f8".into(),
                },
                "field \"yaw\" is <f8 (not what L5Kit writes)",
            ),
            (
                P::FrameIntervalGap {
                    frame: 1,
                    start: 3,
                    end: 5,
                    covered: 2,
                    rows: 9,
                },
                "frame 1's interval [3, 5) does not continue the rows before it (2 of 9 covered)",
            ),
            (
                P::FramesCoverage {
                    covered: 8,
                    rows: 9,
                },
                "the frames' intervals cover 8 of 9 rows",
            ),
        ];
        for (problem, want) in cases {
            let got = Error::Zarr {
                path: "z/a".into(),
                problem,
            }
            .to_string();
            assert_eq!(got, format!("z/a: {want}"));
        }
    }
}
