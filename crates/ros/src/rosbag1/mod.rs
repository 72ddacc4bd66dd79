//! ROS 1 bags (format 2.0, <http://wiki.ros.org/Bags/Format/2.0>): the record layout both
//! sides share, [`reader`] and [`writer`].
//!
//! Layout: `#ROSBAG V2.0\n`, then records `header_len u32, header, data_len u32, data`; a
//! header is fields `len u32, name=value`, its `op` field says what the record is.

pub mod reader;
pub mod writer;

/// The magic line a ROS 1 bag starts with.
pub const MAGIC: &[u8; 13] = b"#ROSBAG V2.0\n";

/// Record opcodes (the header's `op` field).
pub const OP_MSG_DATA: u8 = 0x02;
pub const OP_BAG_HEADER: u8 = 0x03;
pub const OP_INDEX_DATA: u8 = 0x04;
pub const OP_CHUNK: u8 = 0x05;
pub const OP_CHUNK_INFO: u8 = 0x06;
pub const OP_CONNECTION: u8 = 0x07;
