//! rosbag2 directories: [`metadata`] (`metadata.yaml`, read and written), the storages read
//! ([`mcap`], which also reads single `.mcap` files; `sqlite`, feature `sqlite`), [`zstd`]
//! compression (per message, or whole files decompressed to a temporary directory), and
//! [`writer`] (MCAP storage).

pub mod mcap;
pub mod metadata;
#[cfg(feature = "sqlite")]
pub mod sqlite;
pub mod writer;
pub mod zstd;

pub use metadata::{open, parse, Compression, Metadata, Rosbag2};
