//! Replay: reading recorded data back in time order.
//!
//! - [`merge`]: a time-merged stream over a trace's sensors (k-way merge of their `ts`), with
//!   seek, time window and sensor selection.
//! - [`sync`]: nearest-sample synchronisation of sensors against a reference sensor.
//! - [`source`]: datasets presented as sensors (roverd traces, GulpIO2 directories);
//!   [`l5kit`]: L5Kit zarr datasets likewise.
//! - [`import`](mod@import): a source written straight to a roverd trace.
//!
//! Plain Rust over files: no sockets, no tokio. Playback into a daemon is
//! `roverlog_client::play`.

pub mod import;
pub mod l5kit;
pub mod merge;
pub mod source;
pub mod sync;

pub use import::{import, ImportReport};
pub use l5kit::L5KitSource;
pub use merge::{MergedSample, TimeMerge};
pub use source::{GulpSource, Source, SourceSensor, TraceSource};
pub use sync::{nearest, SyncRow};
