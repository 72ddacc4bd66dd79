//! A tmpfs, ramfs or loop-mounted ext4 the test mounts itself (root, or CAP_SYS_ADMIN), for
//! disk-full and failing-disk paths: tests fail, never skip, when they cannot mount one.

use std::path::Path;
use std::process::Command;

/// A tmpfs (or ramfs) mounted on a temp directory, unmounted on drop.
pub struct Mounted {
    /// `None` only once [`Mounted::unmount`] took it.
    dir: Option<tempfile::TempDir>,
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
        Mounted { dir: Some(dir) }
    }

    pub fn path(&self) -> &Path {
        self.dir.as_ref().expect("mounted").path()
    }

    /// A fresh ext4 of `mib` MiB in the image file `image` (created here), loop-mounted on a
    /// temp directory: a real block filesystem, for a real ENOSPC and the ext4 shutdown
    /// ioctl. The loop device goes with the last unmount (`mount -o loop` sets autoclear).
    pub fn ext4_loop(image: &Path, mib: u64) -> Mounted {
        Mounted::ext4_loop_at(image, mib, tempfile::tempdir().unwrap())
    }

    /// [`Mounted::ext4_loop`] on the mount point `dir` (e.g. one [`Mounted::unmount`] gave
    /// back: a fresh disk where the old one was).
    pub fn ext4_loop_at(image: &Path, mib: u64, dir: tempfile::TempDir) -> Mounted {
        let f = std::fs::File::create(image).unwrap();
        f.set_len(mib << 20).unwrap();
        drop(f);
        let out = Command::new("mkfs.ext4")
            .args(["-q", "-F", "-m", "0"])
            .arg(image)
            .output()
            .expect("running mkfs.ext4 (Debian e2fsprogs)");
        assert!(
            out.status.success(),
            "mkfs.ext4 {}: {}",
            image.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Mounted::loop_at(image, dir)
    }

    /// Mounts the ext4 image `image` (made by [`Mounted::ext4_loop`]) on `dir`.
    pub fn loop_at(image: &Path, dir: tempfile::TempDir) -> Mounted {
        let out = Command::new("mount")
            .args(["-t", "ext4", "-o", "loop"])
            .arg(image)
            .arg(dir.path())
            .output()
            .expect("running mount(8)");
        assert!(
            out.status.success(),
            "this test must loop-mount the ext4 image {} on {} and could not (it needs root \
             or CAP_SYS_ADMIN and loop devices; CI runs as root): {}",
            image.display(),
            dir.path().display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Mounted { dir: Some(dir) }
    }

    /// Unmounts (lazily: a process may still hold files there) and gives the empty mount
    /// point back, e.g. to mount another filesystem on the same path.
    pub fn unmount(mut self) -> tempfile::TempDir {
        let dir = self.dir.take().expect("mounted");
        lazy_umount(dir.path());
        dir
    }
}

fn lazy_umount(path: &Path) {
    let _ = Command::new("umount").arg("-l").arg(path).status();
}

impl Drop for Mounted {
    fn drop(&mut self) {
        // Lazy: a daemon that outlived a failed assertion must not make the unmount fail.
        if let Some(dir) = &self.dir {
            lazy_umount(dir.path());
        }
    }
}
