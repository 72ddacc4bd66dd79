//! rosbag2 directories: `metadata.yaml` names the storage plugin and the files in order.
//!
//! We read only the two keys we need, line by line (the file is written by rosbag2 itself in
//! a fixed layout; a YAML library would be a dependency for two keys):
//! `storage_identifier: mcap` and the `relative_file_paths:` list.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result, RosProblem};

/// The longest `metadata.yaml` we read.
const MAX_METADATA: u64 = 16 << 20;

/// The recording files of the rosbag2 directory `dir`, in order.
pub fn files(dir: &Path) -> Result<Vec<PathBuf>> {
    let meta = dir.join("metadata.yaml");
    let err = |msg: String| Error::Ros {
        path: meta.clone(),
        problem: RosProblem::Metadata { msg },
    };
    let len = std::fs::metadata(&meta)
        .map_err(|e| Error::io(&meta, e))?
        .len();
    if len > MAX_METADATA {
        return Err(err(format!(
            "{len} bytes, over the limit of {MAX_METADATA}"
        )));
    }
    let text = std::fs::read_to_string(&meta).map_err(|e| Error::io(&meta, e))?;
    let (storage, names) = parse(&text).map_err(err)?;
    if storage != "mcap" && storage != "sqlite3" {
        return Err(Error::Ros {
            path: meta.clone(),
            problem: RosProblem::Storage { name: storage },
        });
    }
    let mut out = Vec::new();
    for n in names {
        let p = Path::new(&n);
        if p.is_absolute()
            || p.components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return Err(err(format!("file {n:?} is outside the directory")));
        }
        let f = dir.join(p);
        if !f.is_file() {
            return Err(err(format!("lists {n:?}, which is not in the directory")));
        }
        out.push(f);
    }
    if out.is_empty() {
        return Err(err("relative_file_paths lists no file".into()));
    }
    Ok(out)
}

/// (storage_identifier, relative_file_paths).
fn parse(text: &str) -> Result<(String, Vec<String>), String> {
    let unquote = |s: &str| s.trim().trim_matches(|c| c == '"' || c == '\'').to_string();
    let mut storage = None;
    let mut files = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if let Some(v) = t.strip_prefix("storage_identifier:") {
            storage = Some(unquote(v));
        } else if let Some(v) = t.strip_prefix("relative_file_paths:") {
            let v = v.trim();
            if let Some(inline) = v.strip_prefix('[') {
                let inline = inline
                    .strip_suffix(']')
                    .ok_or("relative_file_paths: unclosed [")?;
                files.extend(inline.split(',').map(unquote).filter(|s| !s.is_empty()));
            } else {
                while let Some(item) = lines.peek().and_then(|l| l.trim().strip_prefix("- ")) {
                    files.push(unquote(item));
                    lines.next();
                }
            }
        }
    }
    let storage = storage.ok_or("no storage_identifier")?;
    Ok((storage, files))
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_the_two_keys() {
        let text = "rosbag2_bagfile_information:\n  version: 5\n  storage_identifier: mcap\n  \
relative_file_paths:\n    - a_0.mcap\n    - \"a_1.mcap\"\n  duration:\n    nanoseconds: 1\n";
        let (s, f) = super::parse(text).unwrap();
        assert_eq!(s, "mcap");
        assert_eq!(f, ["a_0.mcap", "a_1.mcap"]);
        assert!(super::parse("version: 5\n").is_err());
    }
}
