//! How to read a recording ([`RosOptions`]): shared by the source and the scan that opens it.

use crate::import::mapping::{ImageFormat, Stamp};
use crate::wire::decode::Limits;

/// How to read a recording.
#[derive(Debug, Clone, Default)]
pub struct RosOptions {
    pub stamp: Stamp,
    pub images: ImageFormat,
    /// Only these topics (all when empty).
    pub topics: Vec<String>,
    /// The mapping file's rules, if one was given.
    pub map: Option<crate::import::topic_map::TopicMap>,
    pub limits: Option<Limits>,
    /// Threads decoding the messages while the recording is scanned (0: every usable CPU).
    pub threads: usize,
}
