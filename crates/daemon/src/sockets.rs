//! Creating the daemon's Unix sockets with their final mode and group, atomically.
//!
//! `bind` creates the socket file with the process umask, so binding at the final path would
//! leave a window in which the file has wider permissions than configured. Instead the socket
//! is bound inside a fresh private directory (mode 0700, so nobody else can reach it), given
//! its mode and group there, then renamed over the final path. A socket file left by a crashed
//! daemon is replaced; one that still answers means another daemon is running: an error.

use std::ffi::CString;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;

use crate::error::{Error, Result, SocketProblem};

/// Binds a listening socket at `path` with permission bits `mode` and, when given, group
/// `gid`. The parent directory is created when missing.
pub fn bind(path: &Path, mode: u32, gid: Option<u32>) -> Result<UnixListener> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // A path that does not fit sun_path could be bound (see below) but never connected to.
    std::os::unix::net::SocketAddr::from_pathname(path).map_err(|error| SocketProblem::Path {
        path: path.to_path_buf(),
        error,
    })?;
    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    if let Ok(meta) = std::fs::metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(SocketProblem::NotASocket {
                path: path.to_path_buf(),
            }
            .into());
        }
        match UnixStream::connect(path) {
            Ok(_) => {
                return Err(Error::InUse {
                    path: path.to_path_buf(),
                    holds: "listening on this socket",
                })
            }
            Err(_) => tracing::warn!(path = %path.display(), "replacing a stale socket file"),
        }
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let private = parent.join(format!(".{name}.{}.bind", std::process::id()));
    let _ = std::fs::remove_dir_all(&private);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&private)
        .map_err(|e| Error::io(&private, e))?;
    let result = (|| -> Result<UnixListener> {
        let tmp = private.join("s");
        let listener = match UnixListener::bind(&tmp) {
            // The private directory's name makes `tmp` longer than `path`: a socket path
            // that fits sun_path (107 bytes) may not with it. Bind through the directory's
            // descriptor then (a short path), which names the same file.
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                use std::os::fd::AsRawFd;
                let dir = std::fs::File::open(&private).map_err(|e| Error::io(&private, e))?;
                let short = format!("/proc/self/fd/{}/s", dir.as_raw_fd());
                UnixListener::bind(short).map_err(|_| Error::io(&tmp, e))?
            }
            r => r.map_err(|e| Error::io(&tmp, e))?,
        };
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))
            .map_err(|e| Error::io(&tmp, e))?;
        if let Some(gid) = gid {
            std::os::unix::fs::chown(&tmp, None, Some(gid)).map_err(|e| {
                if e.raw_os_error() == Some(libc::EPERM) {
                    SocketProblem::NotInGroup {
                        gid,
                        path: path.to_path_buf(),
                        error: e,
                    }
                    .into()
                } else {
                    Error::io(&tmp, e)
                }
            })?;
        }
        std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))?;
        Ok(listener)
    })();
    let _ = std::fs::remove_dir_all(&private);
    let listener = result?;
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::io(path, e))?;
    Ok(listener)
}

/// Resolves `socket_group`: a numeric gid or a group name.
pub fn resolve_group(group: &str) -> Result<u32> {
    if let Ok(gid) = group.parse::<u32>() {
        return Ok(gid);
    }
    let c = CString::new(group.as_bytes()).map_err(|_| SocketProblem::GroupNul {
        group: group.to_string(),
    })?;
    let mut grp: libc::group = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 16 << 10];
    let mut out: *mut libc::group = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call; `buf` outlives it.
    let r =
        unsafe { libc::getgrnam_r(c.as_ptr(), &mut grp, buf.as_mut_ptr(), buf.len(), &mut out) };
    if r != 0 || out.is_null() {
        return Err(SocketProblem::NoGroup {
            group: group.to_string(),
        }
        .into());
    }
    Ok(grp.gr_gid)
}

/// Removes `path` if it is still the socket we bound (same inode), at shutdown.
pub fn remove_if_ours(path: &Path, ino: u64) {
    use std::os::unix::fs::MetadataExt;
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.ino() == ino) {
        let _ = std::fs::remove_file(path);
    }
}

/// The inode of the socket file at `path`.
pub fn inode(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path)
        .map(|m| m.ino())
        .unwrap_or(0)
}
