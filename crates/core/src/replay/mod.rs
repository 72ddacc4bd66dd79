//! Replay: reading recorded data back in time order.
//!
//! - [`merge`]: a time-merged stream over a trace's sensors (k-way merge of their `ts`), with
//!   seek, time window and sensor selection.
//! - [`fetch`]: a sample read in two steps, so that the reading stays in order on one thread
//!   and the decoding runs on every core ([`Source::fetch`], [`crate::parallel::pipeline()`]).
//! - [`sync`]: nearest-sample synchronisation of sensors against a reference sensor.
//! - [`source`]: what a source is ([`Source`]: sensors with timestamps and samples) and a
//!   roverd trace as one ([`TraceSource`]). The other formats' sources live beside their
//!   readers: [`crate::gulp::GulpSource`], [`crate::zarr::l5kit::L5KitSource`] (and
//!   `roverlog-ros`'s `RosSource`).
//!
//! Plain Rust over files: no sockets, no tokio. Writing a source into a trace is
//! [`crate::import`]; playback into a daemon is `roverlog_client::play`.

pub mod fetch;
pub mod merge;
pub mod source;
pub mod sync;

pub use fetch::Fetched;
pub use merge::{MergedSample, TimeMerge};
pub use source::{Source, SourceSensor, TraceSource};
pub use sync::{nearest, SyncRow};
