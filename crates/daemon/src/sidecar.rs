//! Sidecar files: what a driver delivers with its hello for its sensor's directory
//! (docs/protocol.md 2.6), such as the Ouster lidar's `lidar.json`. The writer puts them into
//! `<trace>/<sensor>/` whenever it opens that directory, before `meta.json` in a new one, so a
//! sensor directory with `meta.json` always has its sidecars whole (each written to a
//! temporary file, fsynced, renamed, the directory fsynced). A directory that already has one
//! with other bytes (the sensor resumed in the same trace with another calibration) is
//! refused, naming the file: the samples there were taken with the first.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use roverlog_core::format::meta::write_file_atomic;

/// One sidecar file: its name in the sensor's directory and its bytes as the driver sent them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sidecar {
    pub name: String,
    pub bytes: Vec<u8>,
}

/// A connection's sidecars, shared with the sensor's writer (empty: none).
pub type Sidecars = Arc<[Sidecar]>;

/// Why the sidecars could not be put into a sensor's directory.
#[derive(Debug, thiserror::Error)]
pub enum SidecarError {
    /// `<dir>/<name>` exists with other bytes than the driver sent.
    #[error(
        "file {name:?} differs from the one in {} ({sent} bytes sent, {on_disk} there); \
         the samples there belong to that one: use a new sensor name or rotate",
        dir.display()
    )]
    Differs {
        name: String,
        dir: PathBuf,
        on_disk: u64,
        sent: u64,
    },
    /// `<dir>/<name>` exists and is not a regular file (a directory, a symbolic link).
    #[error("file {name:?}: {} holds something else under that name (not a regular file)", dir.display())]
    NotAFile { name: String, dir: PathBuf },
    /// Reading or writing failed (the disk's error, with the path).
    #[error("{0}")]
    Io(roverlog_core::Error),
}

/// Writes every sidecar into `dir` durably (temporary file, fsync, rename, fsync `dir`).
pub fn write_all(dir: &Path, files: &[Sidecar]) -> roverlog_core::Result<()> {
    for f in files {
        write_file_atomic(&dir.join(&f.name), &f.bytes)?;
    }
    Ok(())
}

/// Puts the sidecars into `dir`, an existing sensor directory: one missing is written, one
/// with the same bytes left alone, one with other bytes refused. Returns how many were written.
pub fn reconcile(dir: &Path, files: &[Sidecar]) -> Result<usize, SidecarError> {
    let mut written = 0;
    for f in files {
        let path = dir.join(&f.name);
        match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                write_file_atomic(&path, &f.bytes).map_err(SidecarError::Io)?;
                written += 1;
            }
            Err(e) => return Err(SidecarError::Io(roverlog_core::Error::io(&path, e))),
            Ok(m) if !m.file_type().is_file() => {
                return Err(SidecarError::NotAFile {
                    name: f.name.clone(),
                    dir: dir.to_path_buf(),
                })
            }
            Ok(m) => {
                if m.len() != f.bytes.len() as u64 || !same_bytes(&path, &f.bytes)? {
                    return Err(SidecarError::Differs {
                        name: f.name.clone(),
                        dir: dir.to_path_buf(),
                        on_disk: m.len(),
                        sent: f.bytes.len() as u64,
                    });
                }
            }
        }
    }
    Ok(written)
}

/// Whether the file at `path` holds exactly `bytes` (its length already matches).
fn same_bytes(path: &Path, bytes: &[u8]) -> Result<bool, SidecarError> {
    let io = |e| SidecarError::Io(roverlog_core::Error::io(path, e));
    let mut on_disk = Vec::with_capacity(bytes.len() + 1);
    std::fs::File::open(path)
        .and_then(|f| f.take(bytes.len() as u64 + 1).read_to_end(&mut on_disk))
        .map_err(io)?;
    Ok(on_disk == bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(bytes: &[u8]) -> Vec<Sidecar> {
        vec![Sidecar {
            name: "lidar.json".into(),
            bytes: bytes.to_vec(),
        }]
    }

    #[test]
    fn reconcile_writes_missing_keeps_equal_refuses_different() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(reconcile(dir.path(), &files(b"{}\n")).unwrap(), 1);
        assert_eq!(
            std::fs::read(dir.path().join("lidar.json")).unwrap(),
            b"{}\n"
        );
        assert_eq!(reconcile(dir.path(), &files(b"{}\n")).unwrap(), 0);
        // Same length, other bytes.
        let e = reconcile(dir.path(), &files(b"[]\n")).unwrap_err();
        assert!(
            matches!(&e, SidecarError::Differs { name, on_disk: 3, sent: 3, .. } if name == "lidar.json"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "file \"lidar.json\" differs from the one in {} (3 bytes sent, 3 there); \
                 the samples there belong to that one: use a new sensor name or rotate",
                dir.path().display()
            )
        );
        assert!(matches!(
            reconcile(dir.path(), &files(b"{}\n\n")).unwrap_err(),
            SidecarError::Differs {
                on_disk: 3,
                sent: 4,
                ..
            }
        ));
        // What was there is left as it was.
        assert_eq!(
            std::fs::read(dir.path().join("lidar.json")).unwrap(),
            b"{}\n"
        );
        std::fs::create_dir(dir.path().join("d")).unwrap();
        let mut d = files(b"x");
        d[0].name = "d".into();
        assert!(matches!(
            reconcile(dir.path(), &d).unwrap_err(),
            SidecarError::NotAFile { .. }
        ));
    }
}
