//! A ROS 2 bag (rosbag2, MCAP storage) writer: a directory `NAME/` holding `NAME.mcap` and
//! `metadata.yaml`, as rosbag2 and the `rosbags` package write it.
//!
//! The MCAP file has profile `ros2`, one schema per message type (encoding `ros2msg`, the
//! concatenated `.msg` definition), one channel per topic (message encoding `cdr`, metadata
//! `offered_qos_profiles`), messages whose log and publish time are the bag time, and a
//! `rosbag2` metadata record holding the same YAML as `metadata.yaml` (`serialized_metadata`).
//! Chunks are uncompressed (as `rosbags` writes them by default) and flushed as they fill, so
//! memory holds one chunk.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};

use super::metadata::{self, WrittenTopic};
use crate::wire::encode::MsgType;

struct Topic {
    name: String,
    ty: MsgType,
    count: u64,
}

/// Writes a rosbag2 directory's MCAP file; [`Bag2Writer::finish`] adds `metadata.yaml`.
pub struct Bag2Writer {
    dir: PathBuf,
    file_name: String,
    mcap: mcap::Writer<BufWriter<File>>,
    schemas: BTreeMap<&'static str, u16>,
    topics: Vec<(u16, Topic)>,
    span: Option<(u64, u64)>,
    sequence: u32,
}

fn mcap_io(e: mcap::McapError) -> io::Error {
    match e {
        mcap::McapError::Io(e) => e,
        e => io::Error::other(format!("mcap: {e}")),
    }
}

impl Bag2Writer {
    /// Creates the directory `dir` (which must not exist) and `dir/<name>.mcap` in it, where
    /// `name` is the file name of `final_dir` (the directory's name once renamed there; the
    /// caller may write under a temporary name).
    pub fn create(dir: &Path, final_dir: &Path) -> io::Result<Bag2Writer> {
        let name = final_dir
            .file_name()
            .ok_or_else(|| io::Error::other("the bag directory has no name"))?
            .to_string_lossy()
            .into_owned();
        std::fs::create_dir(dir)?;
        let file_name = format!("{name}.mcap");
        let file = File::create(dir.join(&file_name))?;
        let mcap = mcap::WriteOptions::new()
            .profile("ros2")
            .library(concat!("roverlog-", env!("CARGO_PKG_VERSION")))
            .compression(None)
            .create(BufWriter::new(file))
            .map_err(mcap_io)?;
        Ok(Bag2Writer {
            dir: dir.to_path_buf(),
            file_name,
            mcap,
            schemas: BTreeMap::new(),
            topics: Vec::new(),
            span: None,
            sequence: 0,
        })
    }

    /// Adds topic `name` of type `ty`; returns its channel id.
    pub fn add_topic(&mut self, name: &str, ty: &MsgType) -> io::Result<u16> {
        let schema = match self.schemas.get(ty.ros2_name) {
            Some(&id) => id,
            None => {
                let id = self
                    .mcap
                    .add_schema(ty.ros2_name, "ros2msg", ty.ros2_definition.as_bytes())
                    .map_err(mcap_io)?;
                self.schemas.insert(ty.ros2_name, id);
                id
            }
        };
        let meta = BTreeMap::from([("offered_qos_profiles".to_string(), "[]".to_string())]);
        let id = self
            .mcap
            .add_channel(schema, name, "cdr", &meta)
            .map_err(mcap_io)?;
        self.topics.push((
            id,
            Topic {
                name: name.to_string(),
                ty: *ty,
                count: 0,
            },
        ));
        Ok(id)
    }

    /// Appends one CDR message on channel `id` at bag time `ns`.
    pub fn write(&mut self, id: u16, ns: u64, data: &[u8]) -> io::Result<()> {
        let header = mcap::records::MessageHeader {
            channel_id: id,
            sequence: self.sequence,
            log_time: ns,
            publish_time: ns,
        };
        self.mcap
            .write_to_known_channel(&header, data)
            .map_err(mcap_io)?;
        self.sequence = self.sequence.wrapping_add(1);
        if let Some((_, t)) = self.topics.iter_mut().find(|(i, _)| *i == id) {
            t.count += 1;
        }
        self.span = Some(match self.span {
            Some((a, b)) => (a.min(ns), b.max(ns)),
            None => (ns, ns),
        });
        Ok(())
    }

    /// The `rosbag2_bagfile_information` mapping, indented by `indent` spaces.
    fn metadata_yaml(&self, indent: usize) -> String {
        let topics: Vec<WrittenTopic> = self
            .topics
            .iter()
            .map(|(_, t)| WrittenTopic {
                name: &t.name,
                msgtype: t.ty.ros2_name,
                type_hash: t.ty.ros2_rihs01,
                count: t.count,
            })
            .collect();
        metadata::to_yaml(&self.file_name, self.span, &topics, indent)
    }

    /// Writes the `rosbag2` metadata record, closes the MCAP file and writes
    /// `metadata.yaml`.
    pub fn finish(mut self) -> io::Result<()> {
        let inner = self.metadata_yaml(0);
        self.mcap
            .write_metadata(&mcap::records::Metadata {
                name: "rosbag2".into(),
                metadata: BTreeMap::from([(
                    "serialized_metadata".to_string(),
                    inner.trim_end().to_string(),
                )]),
            })
            .map_err(mcap_io)?;
        self.mcap.finish().map_err(mcap_io)?;
        let yaml = format!("rosbag2_bagfile_information:\n{}", self.metadata_yaml(2));
        let file = self.mcap.into_inner();
        file.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::write(self.dir.join("metadata.yaml"), yaml)?;
        Ok(())
    }
}
