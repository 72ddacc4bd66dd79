//! A tmpfs or ramfs the test mounts itself (root, or CAP_SYS_ADMIN), for disk-full paths:
//! tests fail, never skip, when they cannot mount one.

use std::path::Path;
use std::process::Command;

/// A tmpfs (or ramfs) mounted on a temp directory, unmounted on drop.
pub struct Mounted {
    dir: tempfile::TempDir,
}

impl Mounted {
    pub fn tmpfs(size: &str) -> Mounted {
        Mounted::mount_fs("tmpfs", &["-o", &format!("size={size}")])
    }

    pub fn mount_fs(fstype: &str, opts: &[&str]) -> Mounted {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args(["-t", fstype])
            .args(opts)
            .arg(fstype)
            .arg(dir.path())
            .output()
            .expect("running mount(8)");
        assert!(
            out.status.success(),
            "this test must mount a {fstype} {opts:?} on {} and could not (it needs root or \
             CAP_SYS_ADMIN; CI runs as root): {}",
            dir.path().display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Mounted { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        // Lazy: a daemon that outlived a failed assertion must not make the unmount fail.
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}
