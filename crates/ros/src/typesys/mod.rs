//! The message types, shared by the readers and the writers: [`schema`] parses the `.msg`
//! definition text a recording stores with every topic; [`msgs`] is the one table of the
//! standard messages we know (definition text, ROS 1 md5, ROS 2 RIHS01), for recordings that
//! store none and for the bags we write.

pub mod msgs;
pub mod schema;
