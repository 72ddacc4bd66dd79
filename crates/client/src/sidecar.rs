//! Sidecar files sent with the hello (docs/protocol.md 2.6): the hello declares each file's
//! name and length under `"files"`, and the bytes follow the hello line back to back before
//! the daemon answers; it writes them into `<trace>/<sensor>/` (an Ouster lidar's
//! `lidar.json`). A daemon that predates them refuses the hello with `unknown key "files"`;
//! the driver then connects again without them (see [`crate::Driver::connect_full`]).

use serde_json::{json, Value};

/// Most bytes a hello's files may hold together (the daemon refuses more, naming the total).
pub const MAX_FILES_BYTES: usize = 1 << 20;
/// Most files one hello may declare.
pub const MAX_FILES: usize = 16;

/// One file for the sensor's directory, byte for byte as it is to be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SidecarFile {
    /// A plain file name: not `meta.json`, no `/`, no `..`, not starting with `.`, not the
    /// name of one of the sensor's channel files (the daemon refuses those, naming them).
    pub name: String,
    pub bytes: Vec<u8>,
}

impl SidecarFile {
    pub fn new(name: impl Into<String>, bytes: impl Into<Vec<u8>>) -> SidecarFile {
        SidecarFile {
            name: name.into(),
            bytes: bytes.into(),
        }
    }
}

/// The hello's `files` value: each file's name and length, in the order the bytes follow.
pub fn declaration(files: &[SidecarFile]) -> Value {
    Value::Array(
        files
            .iter()
            .map(|f| json!({"name": f.name, "bytes": f.bytes.len()}))
            .collect(),
    )
}

/// Appends the files' bytes, in declared order, after the hello line in `out`.
pub fn append_bytes(out: &mut Vec<u8>, files: &[SidecarFile]) {
    for f in files {
        out.extend_from_slice(&f.bytes);
    }
}

/// Whether a refusal is an older daemon's answer to `files`, which it does not know.
pub fn refuses_files(msg: &str) -> bool {
    msg.starts_with("hello: unknown key \"files\"")
}
