//! The hello's opt-in `files` (docs/protocol.md 2.6): per-sensor sidecar files a driver
//! delivers with its hello, such as an Ouster lidar's `lidar.json`. The hello declares each
//! file's name and length; the bytes follow the hello line back to back, in declared order,
//! before the daemon answers. Everything here is checked before a byte of them is read.

use serde_json::Value;

use roverlog_core::format::validate_name;

/// Most files one hello may declare.
pub const MAX_FILES: usize = 16;
/// Most bytes all of a hello's files may hold together.
pub const MAX_FILES_BYTES: usize = 1 << 20;

/// One declared file: its name in `<trace>/<sensor>/` and its length in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDecl {
    pub name: String,
    pub bytes: usize,
}

/// Why a hello's `files` is refused.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("\"files\" must be a list")]
    NotList,
    #[error("{count} files, over the limit of {MAX_FILES}")]
    TooMany { count: usize },
    /// Entry `index` is not an object.
    #[error("file {index}: expected an object")]
    NotObject { index: usize },
    #[error("file {index}: unknown key {key:?} (expected name, bytes)")]
    UnknownKey { index: usize, key: String },
    #[error("file {index}: \"name\" missing or not a string")]
    NoName { index: usize },
    /// The name is not a plain file name (core's name rules for `"file"`, which also keep
    /// names starting with `.` for the daemon's own files).
    #[error("{0}")]
    Name(roverlog_core::Error),
    #[error("file {name:?} is declared twice")]
    Duplicate { name: String },
    #[error("file {name:?}: \"bytes\" missing or not a non-negative integer")]
    NoBytes { name: String },
    #[error("the files hold {total} bytes, over the limit of {MAX_FILES_BYTES}")]
    TooLarge { total: u64 },
}

/// Parses the hello's `files` value: a list of `{"name": ..., "bytes": n}`.
pub fn parse_files(v: &Value) -> Result<Vec<FileDecl>, FileError> {
    let Value::Array(list) = v else {
        return Err(FileError::NotList);
    };
    if list.len() > MAX_FILES {
        return Err(FileError::TooMany { count: list.len() });
    }
    let mut files: Vec<FileDecl> = Vec::with_capacity(list.len());
    let mut total: u64 = 0;
    for (index, entry) in list.iter().enumerate() {
        let Value::Object(o) = entry else {
            return Err(FileError::NotObject { index });
        };
        if let Some(key) = o.keys().find(|k| !matches!(k.as_str(), "name" | "bytes")) {
            return Err(FileError::UnknownKey {
                index,
                key: key.clone(),
            });
        }
        let Some(name) = o.get("name").and_then(Value::as_str) else {
            return Err(FileError::NoName { index });
        };
        validate_name("file", name).map_err(FileError::Name)?;
        if files.iter().any(|f| f.name == name) {
            return Err(FileError::Duplicate { name: name.into() });
        }
        let Some(bytes) = o.get("bytes").and_then(Value::as_u64) else {
            return Err(FileError::NoBytes { name: name.into() });
        };
        total = total.saturating_add(bytes);
        if total > MAX_FILES_BYTES as u64 {
            return Err(FileError::TooLarge { total });
        }
        files.push(FileDecl {
            name: name.to_string(),
            bytes: bytes as usize,
        });
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Vec<FileDecl>, FileError> {
        parse_files(&serde_json::from_str(s).unwrap())
    }

    #[test]
    fn files_are_declared_by_name_and_length() {
        let f =
            parse(r#"[{"name": "lidar.json", "bytes": 12}, {"name": "b", "bytes": 0}]"#).unwrap();
        assert_eq!(
            f,
            vec![
                FileDecl {
                    name: "lidar.json".into(),
                    bytes: 12
                },
                FileDecl {
                    name: "b".into(),
                    bytes: 0
                }
            ]
        );
    }

    /// The words a driver reads (after `hello: `), for each refusal.
    #[test]
    fn refusals_name_the_file() {
        let many = format!("[{}]", vec![r#"{"name": "a", "bytes": 1}"#; 17].join(","));
        let cases = [
            (
                r#"{"lidar.json": 3}"#.to_string(),
                "\"files\" must be a list",
            ),
            (many, "17 files, over the limit of 16"),
            ("[1]".into(), "file 0: expected an object"),
            (
                r#"[{"name": "a", "bytes": 1, "text": "x"}]"#.into(),
                "file 0: unknown key \"text\" (expected name, bytes)",
            ),
            (
                r#"[{"bytes": 1}]"#.into(),
                "file 0: \"name\" missing or not a string",
            ),
            (
                r#"[{"name": "../x", "bytes": 1}]"#.into(),
                "invalid file name \"../x\": contains a path separator",
            ),
            (
                r#"[{"name": "..", "bytes": 1}]"#.into(),
                "invalid file name \"..\": contains '..' or is '.'",
            ),
            (
                r#"[{"name": "meta.json", "bytes": 1}]"#.into(),
                "invalid file name \"meta.json\": is reserved (meta.json)",
            ),
            (
                r#"[{"name": ".durable", "bytes": 1}]"#.into(),
                "invalid file name \".durable\": starts with '.' (names starting with '.' are the daemon's own)",
            ),
            (
                r#"[{"name": "a", "bytes": 1}, {"name": "a", "bytes": 2}]"#.into(),
                "file \"a\" is declared twice",
            ),
            (
                r#"[{"name": "a", "bytes": -1}]"#.into(),
                "file \"a\": \"bytes\" missing or not a non-negative integer",
            ),
            (
                r#"[{"name": "a", "bytes": 1048576}, {"name": "b", "bytes": 1}]"#.into(),
                "the files hold 1048577 bytes, over the limit of 1048576",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(parse(&input).unwrap_err().to_string(), want, "{input}");
        }
    }
}
