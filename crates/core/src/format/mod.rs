//! The roverd trace format: plain Rust over files and bytes (no tokio, no sockets).
//!
//! - [`meta`]: `meta.json`, names, atomic writes.
//! - [`dtype`]: type codes and typed views of sample bytes.
//! - one module per channel format: [`raw`], [`lzma`] (also the `.xz` codec; [`xz_index`]
//!   reads its decoded size from the streams' indexes), [`lzmaf`],
//!   [`blob`] (`jpg`/`npz` directories); [`stored_xz`] (`.xz` frames stored uncompressed, the
//!   `lzmaf` fallback); [`append`] is the buffered append-only file under
//!   the writers; [`channel`] puts the formats behind one reader and one writer type;
//!   [`bounds`]: what a reader answers for a sample that is damaged or past the end.
//! - [`sensor`] ([`Sensor`], [`SensorWriter`]) and [`trace`] ([`Trace`]); [`stats`]: a
//!   sensor's size figures per channel and the damage its readers find on opening.
//! - [`checksum`]: upstream's `file,md5` CSV (`roverlog checksum`, `roverlog offload`).
//! - [`events`]: the daemon's event log (`_roverlog/events.jsonl`): [`events::Event`] and its reader.
//! - [`check`]: consistency checking and crash recovery of a sensor, over each format's own
//!   check and cut (beside the format: `raw`, `lzma`, `lzmaf::check`, `blob`,
//!   `avi::repair`); [`problem`]: what they find ([`Problem`]) and do ([`Cut`]), as values.

pub mod append;
pub mod avi;
pub mod blob;
pub mod bounds;
pub mod channel;
pub mod check;
pub mod checksum;
pub mod copy;
mod deep;
pub mod direct;
pub mod dtype;
pub mod durable;
pub mod events;
pub mod lzma;
pub mod lzmaf;
pub mod meta;
pub mod problem;
pub mod raw;
pub mod sensor;
pub mod stats;
pub mod stored_xz;
pub mod trace;
pub mod xz_index;

pub use channel::{ChannelReader, ChannelWriter, WriterOptions};
pub use check::{
    check_sensor, check_sensor_with_progress, recover_sensor, recover_sensor_to, DeepProgress,
    Depth, Recovery, SensorCheck,
};
pub use dtype::DType;
pub use meta::{validate_name, ChannelFormat, ChannelMeta, SensorMeta, TS_CHANNEL};
pub use problem::{ChannelProblem, Cut, CutAction, EmptyVideoCause, Problem};
pub use sensor::{Sensor, SensorWriter};
pub use trace::{find_traces, is_trace, Trace};
