//! rosbag2 directories' `metadata.yaml`, read and written: it names the storage plugin, the
//! files in order and how they are compressed.
//!
//! Written ([`to_yaml`]): the whole mapping as rosbag2 and `rosbags` write it, version
//! [`VERSION_WRITTEN`], for the bags `roverlog rosbag` writes.
//!
//! We read only the keys we need, line by line (the file is written by rosbag2 itself, or by
//! `rosbags`, in a fixed layout; a YAML library would be a dependency for four keys):
//! `storage_identifier: mcap`, the `relative_file_paths:` list, and `compression_format:` /
//! `compression_mode:` (rosbag2 writes `zstd` and `FILE` or `MESSAGE`, rosbags `file` or
//! `message`; empty, `none` or absent is no compression). zstd is the only compressor rosbag2
//! ships (`rosbag2_compression_zstd`); any other name is refused, never read as if plain.

use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, MetadataProblem, Result, RosProblem};

/// The longest `metadata.yaml` we read.
const MAX_METADATA: u64 = 16 << 20;

/// How rosbag2 compressed a recording (`compression_mode`, with `compression_format: zstd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    #[default]
    None,
    /// Every listed file is a whole storage file compressed with zstd (`x_0.mcap.zstd`).
    ZstdFile,
    /// The files are plain storage; each message's serialized bytes are one zstd frame.
    ZstdMessage,
}

/// What `metadata.yaml` says about a rosbag2 directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Rosbag2 {
    /// The recording files, in order.
    pub files: Vec<PathBuf>,
    pub compression: Compression,
}

/// The keys of `metadata.yaml` we read, as written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metadata {
    pub storage_identifier: String,
    pub relative_file_paths: Vec<String>,
    /// Empty when absent.
    pub compression_format: String,
    /// Empty when absent.
    pub compression_mode: String,
}

impl Metadata {
    /// The compression the two keys name, or why we cannot read it.
    pub fn compression(&self) -> Result<Compression, MetadataProblem> {
        let mode = self.compression_mode.to_ascii_lowercase();
        let mode = match mode.as_str() {
            "" | "none" => return Ok(Compression::None),
            "file" => Compression::ZstdFile,
            "message" => Compression::ZstdMessage,
            _ => {
                return Err(MetadataProblem::Mode {
                    mode: self.compression_mode.clone(),
                })
            }
        };
        if !self.compression_format.eq_ignore_ascii_case("zstd") {
            return Err(MetadataProblem::Format {
                format: self.compression_format.clone(),
            });
        }
        Ok(mode)
    }
}

/// The recording files of the rosbag2 directory `dir`, in order, and their compression.
pub fn open(dir: &Path) -> Result<Rosbag2> {
    let meta = dir.join("metadata.yaml");
    // The problem's text starts with `metadata.yaml: `: the path is the directory's.
    let err = |problem| Error::Ros {
        path: dir.to_path_buf(),
        problem: RosProblem::Metadata(problem),
    };
    let len = std::fs::metadata(&meta).at(&meta)?.len();
    if len > MAX_METADATA {
        return Err(err(MetadataProblem::TooLarge {
            len,
            limit: MAX_METADATA,
        }));
    }
    let text = std::fs::read_to_string(&meta).at(&meta)?;
    let m = parse(&text).map_err(err)?;
    if m.storage_identifier != "mcap" && m.storage_identifier != "sqlite3" {
        return Err(Error::Ros {
            path: meta.clone(),
            problem: RosProblem::Storage {
                name: m.storage_identifier,
            },
        });
    }
    let compression = m.compression().map_err(err)?;
    let mut files = Vec::new();
    for n in m.relative_file_paths {
        let p = Path::new(&n);
        if p.is_absolute()
            || p.components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return Err(err(MetadataProblem::Outside { file: n }));
        }
        let f = dir.join(p);
        if !f.is_file() {
            return Err(err(MetadataProblem::Missing { file: n }));
        }
        files.push(f);
    }
    if files.is_empty() {
        return Err(err(MetadataProblem::NoFiles));
    }
    Ok(Rosbag2 { files, compression })
}

/// The keys we read from `metadata.yaml`'s text (untrusted: fuzzed by `rosbag2_meta`).
pub fn parse(text: &str) -> Result<Metadata, MetadataProblem> {
    let unquote = |s: &str| s.trim().trim_matches(|c| c == '"' || c == '\'').to_string();
    let mut storage = None;
    let mut m = Metadata::default();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if let Some(v) = t.strip_prefix("storage_identifier:") {
            storage = Some(unquote(v));
        } else if let Some(v) = t.strip_prefix("compression_format:") {
            m.compression_format = unquote(v);
        } else if let Some(v) = t.strip_prefix("compression_mode:") {
            m.compression_mode = unquote(v);
        } else if let Some(v) = t.strip_prefix("relative_file_paths:") {
            let v = v.trim();
            if let Some(inline) = v.strip_prefix('[') {
                let inline = inline.strip_suffix(']').ok_or(MetadataProblem::Unclosed)?;
                m.relative_file_paths
                    .extend(inline.split(',').map(unquote).filter(|s| !s.is_empty()));
            } else {
                while let Some(item) = lines.peek().and_then(|l| l.trim().strip_prefix("- ")) {
                    m.relative_file_paths.push(unquote(item));
                    lines.next();
                }
            }
        }
    }
    m.storage_identifier = storage.ok_or(MetadataProblem::NoStorage)?;
    Ok(m)
}

/// The rosbag2 metadata version written (`rosbags` writes 8 or 9; 9 adds type hashes).
pub const VERSION_WRITTEN: u32 = 9;

/// One topic of a bag we write, as `metadata.yaml` lists it.
#[derive(Debug, Clone, Copy)]
pub struct WrittenTopic<'a> {
    pub name: &'a str,
    /// ROS 2 type name (`sensor_msgs/msg/Imu`).
    pub msgtype: &'a str,
    /// RIHS01 type hash.
    pub type_hash: &'a str,
    pub count: u64,
}

/// The `rosbag2_bagfile_information` mapping of a one-file MCAP bag (`file_name`, messages
/// from `span`'s start to its end in ns since the epoch, uncompressed, CDR), each line
/// indented by `indent` spaces.
pub fn to_yaml(
    file_name: &str,
    span: Option<(u64, u64)>,
    topics: &[WrittenTopic],
    indent: usize,
) -> String {
    let (start, end) = span.unwrap_or((0, 0));
    let duration = end - start;
    let count: u64 = topics.iter().map(|t| t.count).sum();
    let mut lines = vec![
        "compression_format: ''".to_string(),
        "compression_mode: ''".to_string(),
        "custom_data: null".to_string(),
        "duration:".to_string(),
        format!("  nanoseconds: {duration}"),
        "files:".to_string(),
        "- duration:".to_string(),
        format!("    nanoseconds: {duration}"),
        format!("  message_count: {count}"),
        format!("  path: {file_name}"),
        "  starting_time:".to_string(),
        format!("    nanoseconds_since_epoch: {start}"),
        format!("message_count: {count}"),
        "relative_file_paths:".to_string(),
        format!("- {file_name}"),
        "ros_distro: roverlog".to_string(),
        "starting_time:".to_string(),
        format!("  nanoseconds_since_epoch: {start}"),
        "storage_identifier: mcap".to_string(),
        "topics_with_message_count:".to_string(),
    ];
    for t in topics {
        lines.extend([
            format!("- message_count: {}", t.count),
            "  topic_metadata:".to_string(),
            format!("    name: {}", t.name),
            "    offered_qos_profiles: []".to_string(),
            "    serialization_format: cdr".to_string(),
            format!("    type: {}", t.msgtype),
            format!("    type_description_hash: {}", t.type_hash),
        ]);
    }
    lines.push(format!("version: {VERSION_WRITTEN}"));
    let pad = " ".repeat(indent);
    lines.iter().map(|l| format!("{pad}{l}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::Compression;

    #[test]
    fn reads_the_storage_and_files() {
        let text = "rosbag2_bagfile_information:\n  version: 5\n  storage_identifier: mcap\n  \
relative_file_paths:\n    - a_0.mcap\n    - \"a_1.mcap\"\n  duration:\n    nanoseconds: 1\n";
        let m = super::parse(text).unwrap();
        assert_eq!(m.storage_identifier, "mcap");
        assert_eq!(m.relative_file_paths, ["a_0.mcap", "a_1.mcap"]);
        assert_eq!(m.compression(), Ok(Compression::None));
        assert!(super::parse("version: 5\n").is_err());
    }

    /// As rosbag2 (yaml-cpp, `ros2 bag record --compression-mode file`) lays it out: keys in
    /// its order, the mode in capitals, topics' QoS as a block string.
    #[test]
    fn reads_rosbag2s_compressed_layout() {
        let text = r#"
rosbag2_bagfile_information:
  version: 5
  storage_identifier: sqlite3
  duration:
    nanoseconds: 3054712004
  starting_time:
    nanoseconds_since_epoch: 1700000000000000000
  message_count: 31
  topics_with_message_count:
    - topic_metadata:
        name: /imu
        type: sensor_msgs/msg/Imu
        serialization_format: cdr
        offered_qos_profiles: "- history: 3\n  depth: 0\n  reliability: 1\n"
      message_count: 31
  compression_format: zstd
  compression_mode: FILE
  relative_file_paths:
    - drive_0.db3.zstd
    - drive_1.db3.zstd
  files:
    - path: drive_0.db3.zstd
      starting_time:
        nanoseconds_since_epoch: 1700000000000000000
      duration:
        nanoseconds: 3054712004
      message_count: 31
"#;
        let m = super::parse(text).unwrap();
        assert_eq!(m.storage_identifier, "sqlite3");
        assert_eq!(
            m.relative_file_paths,
            ["drive_0.db3.zstd", "drive_1.db3.zstd"]
        );
        assert_eq!(m.compression(), Ok(Compression::ZstdFile));
        let m = super::parse(&text.replace("FILE", "MESSAGE")).unwrap();
        assert_eq!(m.compression(), Ok(Compression::ZstdMessage));
        // Uncompressed, rosbag2 writes both keys empty.
        let m = super::parse(
            &text
                .replace("compression_format: zstd", "compression_format: \"\"")
                .replace("compression_mode: FILE", "compression_mode: \"\""),
        )
        .unwrap();
        assert_eq!(m.compression(), Ok(Compression::None));
    }

    /// As `rosbags` writes it (ruamel, keys sorted, the mode in lower case).
    #[test]
    fn reads_rosbags_compressed_layout() {
        let text = "rosbag2_bagfile_information:
  compression_format: zstd
  compression_mode: message
  custom_data: null
  duration:
    nanoseconds: 400000000
  files:
  - duration:
      nanoseconds: 400000000
    message_count: 70
    path: rosbag2.mcap
    starting_time:
      nanoseconds_since_epoch: 1700000000007000123
  message_count: 70
  relative_file_paths:
  - rosbag2.mcap
  ros_distro: rosbags
  starting_time:
    nanoseconds_since_epoch: 1700000000007000123
  storage_identifier: mcap
  topics_with_message_count: []
  version: 8
";
        let m = super::parse(text).unwrap();
        assert_eq!(m.storage_identifier, "mcap");
        assert_eq!(m.relative_file_paths, ["rosbag2.mcap"]);
        assert_eq!(m.compression(), Ok(Compression::ZstdMessage));
        let m = super::parse(&text.replace("compression_mode: message", "compression_mode: file"))
            .unwrap();
        assert_eq!(m.compression(), Ok(Compression::ZstdFile));
        // rosbags writes both empty when uncompressed.
        let m = super::parse(&text.replace(
            "compression_format: zstd\n  compression_mode: message",
            "compression_format: ''\n  compression_mode: ''",
        ))
        .unwrap();
        assert_eq!(m.compression(), Ok(Compression::None));
    }

    #[test]
    fn refuses_a_compression_it_does_not_read_by_name() {
        let m = |format: &str, mode: &str| super::Metadata {
            storage_identifier: "mcap".into(),
            relative_file_paths: vec!["a.mcap".into()],
            compression_format: format.into(),
            compression_mode: mode.into(),
        };
        let e = m("lz4", "FILE").compression().unwrap_err().to_string();
        assert!(e.contains("\"lz4\""), "{e}");
        let e = m("", "message").compression().unwrap_err().to_string();
        assert!(e.contains("compression_format \"\""), "{e}");
        let e = m("zstd", "STORAGE").compression().unwrap_err().to_string();
        assert!(e.contains("\"STORAGE\""), "{e}");
        assert_eq!(m("ZSTD", "File").compression(), Ok(Compression::ZstdFile));
        // A format without a mode: nothing is compressed.
        assert_eq!(m("zstd", "").compression(), Ok(Compression::None));
        assert_eq!(m("zstd", "NONE").compression(), Ok(Compression::None));
    }

    #[test]
    fn what_we_write_we_read() {
        let topics = [super::WrittenTopic {
            name: "/imu",
            msgtype: "sensor_msgs/msg/Imu",
            type_hash: "RIHS01_00",
            count: 3,
        }];
        let yaml = format!(
            "rosbag2_bagfile_information:\n{}",
            super::to_yaml("b.mcap", Some((5, 9)), &topics, 2)
        );
        let m = super::parse(&yaml).unwrap();
        assert_eq!(m.storage_identifier, "mcap");
        assert_eq!(m.relative_file_paths, ["b.mcap"]);
        assert_eq!(m.compression().unwrap(), super::Compression::None);
    }
}
