//! Replay: reading recorded data back in time order.
//!
//! - [`merge`]: a time-merged stream over a trace's sensors (k-way merge of their `ts`), with
//!   seek, time window and sensor selection.
//! - [`sync`]: nearest-sample synchronisation of sensors against a reference sensor.
//!
//! Like the format library this is plain Rust over files; pushing samples into a daemon is the
//! CLI's job.

pub mod merge;
pub mod sync;

pub use merge::{MergedSample, TimeMerge};
pub use sync::{nearest, SyncRow};
