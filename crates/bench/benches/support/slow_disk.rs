//! A disk whose cache flush is slow, for benchmarks of what fsync costs on a vehicle's data
//! disk (eMMC, SD cards, USB and SATA disks: a flush of the write cache takes milliseconds)
//! on a machine whose own virtual disk flushes for free.
//!
//! The disk is a real ext4 filesystem on a loop device. The loop device's backing file is the
//! one file of a FUSE filesystem held in memory (fuser), and that filesystem is where the
//! latency goes in: every `fsync` of the backing file, which is what the loop device does for
//! a cache flush (ext4 asks for one at each journal commit and for `fsync` of a file whose
//! blocks the journal does not cover), is answered after `flush_ms`. Flushes that arrive while
//! one is running are answered together by the next one, as a disk merges queued flushes.
//! Everything above the device (ext4's journal, its grouping of concurrent `fsync`s into one
//! commit, the page cache) is the kernel's own.
//!
//! Needs root (loop devices, `mount`), `/dev/fuse`, `fusermount3` and `mkfs.ext4`.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use fuser::{
    FileAttr, FileType, Filesystem, MountOption, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyWrite, Request, TimeOrNow,
};

const TTL: Duration = Duration::from_secs(1);
const ROOT: u64 = fuser::FUSE_ROOT_ID;
const IMAGE: u64 = 2;
const IMAGE_NAME: &str = "disk.img";

/// The image and what the FUSE side saw.
struct Image {
    bytes: Vec<u8>,
    flushes: u64,
}

struct Fs {
    image: Arc<Mutex<Image>>,
    /// fsync replies wait here for the flush thread.
    flush: mpsc::Sender<ReplyEmpty>,
}

fn attr(ino: u64, size: u64) -> FileAttr {
    let now = SystemTime::now();
    FileAttr {
        ino,
        size,
        blocks: size.div_ceil(512),
        atime: now,
        mtime: now,
        ctime: now,
        crtime: now,
        kind: if ino == ROOT {
            FileType::Directory
        } else {
            FileType::RegularFile
        },
        perm: if ino == ROOT { 0o755 } else { 0o600 },
        nlink: if ino == ROOT { 2 } else { 1 },
        uid: 0,
        gid: 0,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

impl Fs {
    fn size(&self) -> u64 {
        self.image.lock().unwrap().bytes.len() as u64
    }
}

impl Filesystem for Fs {
    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        if parent == ROOT && name == IMAGE_NAME {
            reply.entry(&TTL, &attr(IMAGE, self.size()), 0)
        } else {
            reply.error(libc::ENOENT)
        }
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, reply: ReplyAttr) {
        match ino {
            ROOT => reply.attr(&TTL, &attr(ROOT, 0)),
            IMAGE => reply.attr(&TTL, &attr(IMAGE, self.size())),
            _ => reply.error(libc::ENOENT),
        }
    }

    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        if ino != IMAGE || size.is_some_and(|s| s != self.size()) {
            return reply.error(libc::EPERM); // the image has a fixed size
        }
        reply.attr(&TTL, &attr(IMAGE, self.size()))
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        match ino {
            IMAGE => reply.opened(0, 0),
            _ => reply.error(libc::EISDIR),
        }
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        _fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock: Option<u64>,
        reply: ReplyData,
    ) {
        let image = self.image.lock().unwrap();
        let a = (offset.max(0) as usize).min(image.bytes.len());
        let b = (a + size as usize).min(image.bytes.len());
        reply.data(&image.bytes[a..b])
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        _fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock: Option<u64>,
        reply: ReplyWrite,
    ) {
        let mut image = self.image.lock().unwrap();
        let a = offset.max(0) as usize;
        match image.bytes.get_mut(a..a + data.len()) {
            Some(dst) => {
                dst.copy_from_slice(data);
                reply.written(data.len() as u32)
            }
            None => reply.error(libc::ENOSPC),
        }
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _lock: u64, reply: ReplyEmpty) {
        reply.ok()
    }

    fn fsync(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        _fh: u64,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        // Answered by the flush thread; reads and writes go on meanwhile.
        if let Err(mpsc::SendError(reply)) = self.flush.send(reply) {
            reply.error(libc::EIO)
        }
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        if ino != ROOT {
            return reply.error(libc::ENOTDIR);
        }
        let all = [
            (ROOT, FileType::Directory, "."),
            (ROOT, FileType::Directory, ".."),
            (IMAGE, FileType::RegularFile, IMAGE_NAME),
        ];
        for (i, (ino, kind, name)) in all.into_iter().enumerate().skip(offset as usize) {
            if reply.add(ino, (i + 1) as i64, kind, name) {
                break;
            }
        }
        reply.ok()
    }
}

/// Answers queued fsyncs `flush` after the first of them arrived, all that queued meanwhile
/// with it; ends when the filesystem is gone.
fn flusher(queue: mpsc::Receiver<ReplyEmpty>, flush: Duration, image: Arc<Mutex<Image>>) {
    while let Ok(first) = queue.recv() {
        std::thread::sleep(flush);
        let mut batch = vec![first];
        batch.extend(queue.try_iter());
        image.lock().unwrap().flushes += 1;
        for reply in batch {
            reply.ok();
        }
    }
}

fn run(what: &str, cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: could not run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {cmd:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// An ext4 filesystem mounted on `mount`, on a loop device over an in-memory image whose
/// cache flushes take `flush`. Unmounted and detached on drop.
pub struct SlowDisk {
    pub mount: PathBuf,
    fuse_dir: PathBuf,
    loop_dev: String,
    image: Arc<Mutex<Image>>,
    session: Option<fuser::BackgroundSession>,
}

impl SlowDisk {
    /// Builds the disk (`size` bytes, allocated as written) under `work`: the FUSE mount and
    /// the ext4 mount point are made there.
    pub fn new(work: &Path, size: u64, flush: Duration) -> SlowDisk {
        assert!(
            Path::new("/dev/fuse").exists(),
            "/dev/fuse is missing: the slow-flush disk needs FUSE"
        );
        let fuse_dir = work.join("image");
        let mount = work.join("disk");
        std::fs::create_dir_all(&fuse_dir).unwrap();
        std::fs::create_dir_all(&mount).unwrap();
        let image = Arc::new(Mutex::new(Image {
            bytes: vec![0; size as usize], // calloc: pages come as they are written
            flushes: 0,
        }));
        let (tx, rx) = mpsc::channel();
        let flusher_image = image.clone();
        std::thread::spawn(move || flusher(rx, flush, flusher_image));
        let fs = Fs {
            image: image.clone(),
            flush: tx,
        };
        let opts = [MountOption::FSName("roverlog-slowflush".into())];
        let session = fuser::spawn_mount2(fs, &fuse_dir, &opts)
            .unwrap_or_else(|e| panic!("mounting FUSE on {}: {e}", fuse_dir.display()));
        let file = fuse_dir.join(IMAGE_NAME);
        let t0 = Instant::now();
        while !file.exists() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "{} not there 10 s after mounting",
                file.display()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let loop_dev = run(
            "attaching a loop device",
            Command::new("losetup")
                .args(["--find", "--show", "--direct-io=on"])
                .arg(&file),
        );
        let disk = SlowDisk {
            mount,
            fuse_dir,
            loop_dev,
            image,
            session: Some(session),
        };
        run(
            "making ext4",
            Command::new("mkfs.ext4").args(["-q", "-F", &disk.loop_dev]),
        );
        run(
            "mounting ext4",
            Command::new("mount").arg(&disk.loop_dev).arg(&disk.mount),
        );
        disk.image.lock().unwrap().flushes = 0;
        disk
    }

    /// Cache flushes the device answered since it was made.
    pub fn flushes(&self) -> u64 {
        self.image.lock().unwrap().flushes
    }

    /// The loop device, e.g. `/dev/loop0`.
    pub fn device(&self) -> &str {
        &self.loop_dev
    }
}

impl Drop for SlowDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mount).status();
        let _ = Command::new("losetup")
            .args(["--detach", &self.loop_dev])
            .status();
        self.session.take(); // unmounts the FUSE side
        let mounted = std::fs::read_to_string("/proc/self/mountinfo")
            .unwrap_or_default()
            .contains("roverlog-slowflush");
        if mounted {
            // Something still holds it open: detach lazily.
            let _ = Command::new("fusermount3")
                .arg("-uz")
                .arg(&self.fuse_dir)
                .status();
        }
    }
}
