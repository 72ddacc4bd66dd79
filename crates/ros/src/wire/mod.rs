//! The serialized forms of a message, decode and encode side by side: CDR (ROS 2) and the
//! ROS 1 serialization. [`decode`] reads any message against its schema, every length checked
//! against its limit and the bytes left; [`wide`] tells ROS 2 `wstring`'s two wire forms;
//! [`encode`] writes the two messages `roverlog rosbag` writes.

pub mod decode;
pub mod encode;
pub mod wide;
