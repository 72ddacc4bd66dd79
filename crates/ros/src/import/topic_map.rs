//! The optional mapping file (`roverlog import --map FILE`): per topic, leave it out, or give
//! its sensor and channels other names, and its own `--stamp` and `--images`:
//!
//! ```json
//! {
//!   "/camera/image_raw/compressed": {"sensor": "camera", "images": "mjpg"},
//!   "/imu/data": {"sensor": "imu", "stamp": "log"},
//!   "/ouster/points": {"sensor": "lidar", "channels": {"intensity": "rfl"}},
//!   "/tf": "skip"
//! }
//! ```
//!
//! Unknown keys, bad names and a topic the recording does not have are errors naming the
//! topic; a topic left out is still listed among the skipped ones.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::error::{Error, IoContext, MappingProblem, Result, RosProblem};
use crate::import::mapping::{ImageFormat, Stamp};
use roverlog_core::format::meta::validate_name;

/// The longest mapping file we read.
const MAX_FILE: u64 = 1 << 20;

/// What the file says of one topic.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TopicRule {
    /// Not imported.
    pub skip: bool,
    pub sensor: Option<String>,
    /// (default channel name, name to use).
    pub channels: Vec<(String, String)>,
    pub images: Option<ImageFormat>,
    pub stamp: Option<Stamp>,
}

/// The mapping file: topic -> rule.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TopicMap {
    pub topics: BTreeMap<String, TopicRule>,
}

impl TopicMap {
    /// Reads and checks `path`.
    pub fn read(path: &Path) -> Result<TopicMap> {
        let len = std::fs::metadata(path).at(path)?.len();
        if len > MAX_FILE {
            return Err(roverlog_core::Error::TooLarge {
                what: format!("mapping file {}", path.display()),
                got: len,
                limit: MAX_FILE,
            }
            .into());
        }
        let text = std::fs::read(path).at(path)?;
        let doc: Value =
            serde_json::from_slice(&text).map_err(|error| roverlog_core::Error::Json {
                path: path.to_path_buf(),
                error,
            })?;
        TopicMap::parse(&doc).map_err(|problem| Error::Ros {
            path: path.to_path_buf(),
            problem,
        })
    }

    /// Checks a parsed document.
    pub fn parse(doc: &Value) -> Result<TopicMap, RosProblem> {
        let bad = |topic: &str, problem| RosProblem::Mapping {
            topic: topic.to_string(),
            problem,
        };
        let Value::Object(map) = doc else {
            return Err(bad("", MappingProblem::NotAnObject));
        };
        let mut out = TopicMap::default();
        let mut sensors: Vec<String> = Vec::new();
        for (topic, v) in map {
            let rule = match v {
                Value::String(s) if s == "skip" => TopicRule {
                    skip: true,
                    ..TopicRule::default()
                },
                Value::Object(o) => {
                    let mut r = TopicRule::default();
                    for (k, v) in o {
                        let text = || {
                            v.as_str().ok_or_else(|| {
                                bad(topic, MappingProblem::NotAString { key: k.clone() })
                            })
                        };
                        match k.as_str() {
                            "sensor" => {
                                let s = text()?;
                                validate_name("sensor", s)
                                    .map_err(|e| bad(topic, MappingProblem::bad_name(e)))?;
                                r.sensor = Some(s.to_string());
                            }
                            "images" => {
                                r.images = Some(match text()? {
                                    "jpg" => ImageFormat::Jpg,
                                    "mjpg" => ImageFormat::Mjpg,
                                    o => {
                                        return Err(bad(
                                            topic,
                                            MappingProblem::Images { got: o.to_string() },
                                        ))
                                    }
                                })
                            }
                            "stamp" => {
                                r.stamp = Some(match text()? {
                                    "header" => Stamp::Header,
                                    "log" => Stamp::Log,
                                    o => {
                                        return Err(bad(
                                            topic,
                                            MappingProblem::Stamp { got: o.to_string() },
                                        ))
                                    }
                                })
                            }
                            "channels" => {
                                let Value::Object(c) = v else {
                                    return Err(bad(topic, MappingProblem::ChannelsNotAnObject));
                                };
                                for (from, to) in c {
                                    let to = to.as_str().ok_or_else(|| {
                                        bad(
                                            topic,
                                            MappingProblem::ChannelNotAString {
                                                from: from.clone(),
                                            },
                                        )
                                    })?;
                                    validate_name("channel", to)
                                        .map_err(|e| bad(topic, MappingProblem::bad_name(e)))?;
                                    if to == roverlog_core::format::TS_CHANNEL {
                                        return Err(bad(topic, MappingProblem::ChannelNamedTs));
                                    }
                                    r.channels.push((from.clone(), to.to_string()));
                                }
                            }
                            other => {
                                return Err(bad(
                                    topic,
                                    MappingProblem::UnknownKey {
                                        key: other.to_string(),
                                    },
                                ))
                            }
                        }
                    }
                    r
                }
                _ => return Err(bad(topic, MappingProblem::BadRule)),
            };
            if let Some(s) = &rule.sensor {
                if sensors.contains(s) {
                    return Err(bad(
                        topic,
                        MappingProblem::SensorTwice { sensor: s.clone() },
                    ));
                }
                sensors.push(s.clone());
            }
            out.topics.insert(topic.clone(), rule);
        }
        Ok(out)
    }

    pub fn get(&self, topic: &str) -> Option<&TopicRule> {
        self.topics.get(topic)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_rules_and_names_the_topic_of_a_mistake() {
        let m = TopicMap::parse(&json!({
            "/cam": {"sensor": "camera", "images": "mjpg", "channels": {"img": "video.avi"}},
            "/tf": "skip",
        }))
        .unwrap();
        assert!(m.get("/tf").unwrap().skip);
        let cam = m.get("/cam").unwrap();
        assert_eq!(cam.sensor.as_deref(), Some("camera"));
        assert_eq!(cam.images, Some(ImageFormat::Mjpg));
        for (doc, word) in [
            (json!({"/a": {"sensr": "x"}}), "unknown key"),
            (json!({"/a": {"sensor": "_x"}}), "reserved"),
            (
                json!({"/a": {"sensor": "x"}, "/b": {"sensor": "x"}}),
                "two topics",
            ),
            (json!({"/a": {"channels": {"x": "ts"}}}), "ts"),
            (json!({"/a": 3}), "skip"),
        ] {
            let e = TopicMap::parse(&doc).unwrap_err().to_string();
            assert!(e.contains(word), "{doc}: {e}");
        }
    }
}
