//! roverlog-ros: ROS recordings both ways, over one shared type system, laid out as the
//! `rosbags` package lays out its readers and writers.
//!
//! # Crate map
//!
//! - [`error`]: [`Error`], with what is wrong with a recording ([`error::RosProblem`]) or
//!   one message ([`error::DecodeProblem`]) as values.
//! - [`typesys`]: the message types: `.msg` definition text parsed into types
//!   ([`typesys::schema`]) and the one table of the standard messages we know (definition,
//!   ROS 1 md5, ROS 2 RIHS01; [`typesys::msgs`]).
//! - [`wire`]: the serialized forms, decode and encode side by side: CDR (ROS 2) and ROS 1
//!   ([`wire::decode`], [`wire::encode`]), ROS 2 `wstring`'s two forms ([`wire::wide`]).
//! - [`container`]: what the containers share (mapped file, chunks, decompression with a
//!   bound, message locations).
//! - [`rosbag1`]: ROS 1 bags: the record layout and opcodes (one copy), [`rosbag1::reader`]
//!   and [`rosbag1::writer`].
//! - [`rosbag2`]: rosbag2 directories: `metadata.yaml` read and written
//!   ([`rosbag2::metadata`]), the MCAP storage read ([`rosbag2::mcap`], also single `.mcap`
//!   files), `sqlite` storage (feature `sqlite`), zstd compression ([`rosbag2::zstd`]), and
//!   the writer ([`rosbag2::writer`]).
//! - `storage`: one file opened as the storage it holds (decompressed first when compressed
//!   whole) and read once.
//! - [`import`](mod@import): a recording as a replay source of roverd sensors ([`RosSource`]) and its
//!   import into a trace ([`import()`]).
//! - [`export`]: a trace's lidar and IMU as a bag ([`export_rosbag`], `roverlog rosbag`).
//!
//! Dependencies point down the list's order, except that `import` and `export` both stand
//! on everything above them and not on each other. Built on `roverlog-core` (the roverd
//! format, replay sources); core knows nothing of ROS. Plain Rust over files: no tokio.

pub mod container;
pub mod error;
pub mod export;
pub mod import;
pub mod rosbag1;
pub mod rosbag2;
mod storage;
pub mod typesys;
pub mod wire;

pub use error::{Error, Result};
pub use export::{export_rosbag, BagFormat, RosbagOptions, RosbagReport};
pub use import::{
    import, ImageFormat, RosImportReport, RosOptions, RosSource, SkippedTopic, Stamp, TopicMap,
    TopicRule,
};
pub use storage::is_ros_recording;
