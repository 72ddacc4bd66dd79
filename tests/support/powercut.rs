//! A power-loss filesystem for the power-cut tests (issue 12): a FUSE filesystem (fuser,
//! mounted with Debian's `fuse3`) whose durable state is a backing directory and whose
//! volatile state is everything written since the last `fsync` of a file (data, size) or of a
//! directory (creates, renames, unlinks in it), held in memory.
//!
//! [`PowerFs::cut`] is a power cut: the filesystem is unmounted and the volatile layer thrown
//! away, all of it ([`Cut::Clean`]) or, as a real disk and kernel may, only part of it
//! ([`Cut::Partial`]: a random subset of each file's unsynced pages written, the last one
//! possibly torn, the new size kept or not, each directory's unsynced operations applied or
//! not, independently of the others, so they reorder). What survives is written to the
//! backing directory as an ordinary tree, and the next mount starts from it.
//!
//! Honest about what makes data durable: only `fsync`/`fdatasync` of the file (and of the
//! directory, for its entries). `sync_file_range` and `O_DIRECT` never reach a FUSE
//! filesystem as durability requests, so they make nothing durable here, as on a real disk
//! they do not by themselves.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use fuser::{
    FileAttr, FileType, Filesystem, MountOption, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request, TimeOrNow,
};
use libc::{EEXIST, EINVAL, EISDIR, ENOENT, ENOTDIR, ENOTEMPTY};

const PAGE: u64 = 4096;
const TTL: Duration = Duration::from_secs(1);
const ROOT: u64 = fuser::FUSE_ROOT_ID;

#[derive(Debug, Clone)]
struct Node {
    dir: bool,
    perm: u16,
    mtime: SystemTime,
    /// File contents as the running system sees them, and as last made durable.
    live: Vec<u8>,
    durable: Vec<u8>,
    /// Pages written since the last fsync.
    dirty: BTreeSet<u64>,
    /// Directory entries as the running system sees them, and as of the last fsync of the
    /// directory.
    live_entries: BTreeMap<OsString, u64>,
    durable_entries: BTreeMap<OsString, u64>,
}

impl Node {
    fn new(dir: bool, perm: u16) -> Node {
        Node {
            dir,
            perm,
            mtime: SystemTime::now(),
            live: Vec::new(),
            durable: Vec::new(),
            dirty: BTreeSet::new(),
            live_entries: BTreeMap::new(),
            durable_entries: BTreeMap::new(),
        }
    }
}

/// Counters of what the filesystem saw.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    pub writes: u64,
    pub fsyncs: u64,
    pub fsyncdirs: u64,
    pub renames: u64,
}

#[derive(Debug, Default)]
struct State {
    nodes: HashMap<u64, Node>,
    next: u64,
    stats: Stats,
}

impl State {
    /// Loads the tree under `backing` as fully durable.
    fn load(backing: &Path) -> std::io::Result<State> {
        let mut st = State {
            nodes: HashMap::new(),
            next: ROOT + 1,
            stats: Stats::default(),
        };
        st.nodes.insert(ROOT, Node::new(true, 0o755));
        st.load_dir(backing, ROOT)?;
        Ok(st)
    }

    fn load_dir(&mut self, dir: &Path, ino: u64) -> std::io::Result<()> {
        for e in std::fs::read_dir(dir)? {
            let e = e?;
            let ft = e.file_type()?;
            let child = self.next;
            self.next += 1;
            if ft.is_dir() {
                self.nodes.insert(child, Node::new(true, 0o755));
                self.load_dir(&e.path(), child)?;
            } else {
                let mut n = Node::new(false, 0o644);
                n.live = std::fs::read(e.path())?;
                n.durable = n.live.clone();
                self.nodes.insert(child, n);
            }
            let d = self.nodes.get_mut(&ino).expect("loaded");
            d.live_entries.insert(e.file_name(), child);
            d.durable_entries.insert(e.file_name(), child);
        }
        Ok(())
    }

    fn attr(&self, ino: u64, req_uid: u32, req_gid: u32) -> Option<FileAttr> {
        let n = self.nodes.get(&ino)?;
        let size = if n.dir { 4096 } else { n.live.len() as u64 };
        Some(FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: n.mtime,
            mtime: n.mtime,
            ctime: n.mtime,
            crtime: n.mtime,
            kind: if n.dir {
                FileType::Directory
            } else {
                FileType::RegularFile
            },
            perm: n.perm,
            nlink: if n.dir { 2 } else { 1 },
            uid: req_uid,
            gid: req_gid,
            rdev: 0,
            blksize: PAGE as u32,
            flags: 0,
        })
    }

    fn child(&self, parent: u64, name: &OsStr) -> Result<u64, i32> {
        let p = self.nodes.get(&parent).ok_or(ENOENT)?;
        if !p.dir {
            return Err(ENOTDIR);
        }
        p.live_entries.get(name).copied().ok_or(ENOENT)
    }

    fn make(&mut self, parent: u64, name: &OsStr, dir: bool, mode: u32) -> Result<u64, i32> {
        match self.child(parent, name) {
            Ok(_) => return Err(EEXIST),
            Err(ENOENT) => {}
            Err(e) => return Err(e),
        }
        let ino = self.next;
        self.next += 1;
        self.nodes
            .insert(ino, Node::new(dir, (mode & 0o7777) as u16));
        let p = self.nodes.get_mut(&parent).expect("checked");
        p.live_entries.insert(name.to_os_string(), ino);
        p.mtime = SystemTime::now();
        Ok(ino)
    }

    fn write(&mut self, ino: u64, offset: u64, data: &[u8]) -> Result<(), i32> {
        let n = self.nodes.get_mut(&ino).ok_or(ENOENT)?;
        if n.dir {
            return Err(EISDIR);
        }
        let end = offset as usize + data.len();
        if n.live.len() < end {
            n.live.resize(end, 0);
        }
        n.live[offset as usize..end].copy_from_slice(data);
        if !data.is_empty() {
            n.dirty.extend(offset / PAGE..=(end as u64 - 1) / PAGE);
        }
        n.mtime = SystemTime::now();
        self.stats.writes += 1;
        Ok(())
    }

    fn truncate(&mut self, ino: u64, size: u64) -> Result<(), i32> {
        let n = self.nodes.get_mut(&ino).ok_or(ENOENT)?;
        if n.dir {
            return Err(EISDIR);
        }
        let old = n.live.len() as u64;
        n.live.resize(size as usize, 0);
        let (lo, hi) = (old.min(size), old.max(size));
        if hi > lo {
            n.dirty.extend(lo / PAGE..=(hi - 1) / PAGE);
        }
        n.mtime = SystemTime::now();
        Ok(())
    }

    fn fsync(&mut self, ino: u64) -> Result<(), i32> {
        let n = self.nodes.get_mut(&ino).ok_or(ENOENT)?;
        if n.dir {
            n.durable_entries = n.live_entries.clone();
            self.stats.fsyncdirs += 1;
        } else {
            n.durable = n.live.clone();
            n.dirty.clear();
            self.stats.fsyncs += 1;
        }
        Ok(())
    }
}

/// How much of the volatile layer a power cut loses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Everything not fsynced is lost.
    Clean,
    /// A random part of it reached the disk (seeded).
    Partial(u64),
}

/// A tiny deterministic generator for partial cuts.
struct Bits(u64);

impl Bits {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
}

/// What survives a cut of `st`: written as a tree under `out`.
fn survive(st: &State, cut: Cut, out: &Path) -> std::io::Result<()> {
    let mut bits = Bits(match cut {
        Cut::Clean => 1,
        Cut::Partial(seed) => seed | 1,
    });
    let partial = matches!(cut, Cut::Partial(_));
    let mut stack = vec![(ROOT, out.to_path_buf())];
    std::fs::create_dir_all(out)?;
    while let Some((ino, path)) = stack.pop() {
        let n = &st.nodes[&ino];
        // A directory's unsynced operations reach the disk together or not at all.
        let entries = if partial && bits.coin() {
            &n.live_entries
        } else {
            &n.durable_entries
        };
        for (name, &child) in entries {
            let Some(c) = st.nodes.get(&child) else {
                continue;
            };
            let p = path.join(name);
            if c.dir {
                std::fs::create_dir(&p)?;
                stack.push((child, p));
                continue;
            }
            let mut data = c.durable.clone();
            if partial {
                if bits.coin() {
                    data.resize(c.live.len(), 0);
                }
                let dirty: Vec<u64> = c.dirty.iter().copied().collect();
                for (k, &page) in dirty.iter().enumerate() {
                    if !bits.coin() {
                        continue;
                    }
                    let a = (page * PAGE) as usize;
                    let mut b = ((page + 1) * PAGE) as usize;
                    if k + 1 == dirty.len() && bits.coin() {
                        b = a + (bits.next() % PAGE) as usize; // torn
                    }
                    let b = b.min(c.live.len()).min(data.len());
                    if a < b {
                        data[a..b].copy_from_slice(&c.live[a..b]);
                    }
                }
            }
            std::fs::write(&p, &data)?;
        }
    }
    Ok(())
}

/// The FUSE side: every request goes to the shared state.
struct Fs(Arc<Mutex<State>>);

impl Fs {
    fn st(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Filesystem for Fs {
    fn lookup(&mut self, req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        let st = self.st();
        match st.child(parent, name) {
            Ok(ino) => reply.entry(&TTL, &st.attr(ino, req.uid(), req.gid()).unwrap(), 0),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&mut self, req: &Request<'_>, ino: u64, reply: ReplyAttr) {
        match self.st().attr(ino, req.uid(), req.gid()) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(ENOENT),
        }
    }

    fn setattr(
        &mut self,
        req: &Request<'_>,
        ino: u64,
        mode: Option<u32>,
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
        let mut st = self.st();
        if let Some(size) = size {
            if let Err(e) = st.truncate(ino, size) {
                return reply.error(e);
            }
        }
        if let (Some(m), Some(n)) = (mode, st.nodes.get_mut(&ino)) {
            n.perm = (m & 0o7777) as u16;
        }
        match st.attr(ino, req.uid(), req.gid()) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(ENOENT),
        }
    }

    fn mknod(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        if mode & libc::S_IFMT != libc::S_IFREG {
            return reply.error(libc::EPERM);
        }
        let mut st = self.st();
        match st.make(parent, name, false, mode) {
            Ok(ino) => reply.entry(&TTL, &st.attr(ino, req.uid(), req.gid()).unwrap(), 0),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        let mut st = self.st();
        match st.make(parent, name, true, mode) {
            Ok(ino) => reply.entry(&TTL, &st.attr(ino, req.uid(), req.gid()).unwrap(), 0),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        let mut st = self.st();
        match st.child(parent, name) {
            Ok(ino) if st.nodes[&ino].dir => reply.error(EISDIR),
            Ok(_) => {
                st.nodes.get_mut(&parent).unwrap().live_entries.remove(name);
                reply.ok()
            }
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        let mut st = self.st();
        match st.child(parent, name) {
            Ok(ino) if !st.nodes[&ino].dir => reply.error(ENOTDIR),
            Ok(ino) if !st.nodes[&ino].live_entries.is_empty() => reply.error(ENOTEMPTY),
            Ok(_) => {
                st.nodes.get_mut(&parent).unwrap().live_entries.remove(name);
                reply.ok()
            }
            Err(e) => reply.error(e),
        }
    }

    fn rename(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
        reply: ReplyEmpty,
    ) {
        let mut st = self.st();
        let ino = match st.child(parent, name) {
            Ok(i) => i,
            Err(e) => return reply.error(e),
        };
        if flags & !libc::RENAME_NOREPLACE != 0 {
            return reply.error(EINVAL);
        }
        match st.child(newparent, newname) {
            Ok(_) if flags & libc::RENAME_NOREPLACE != 0 => return reply.error(EEXIST),
            Ok(old) if st.nodes[&old].dir && !st.nodes[&old].live_entries.is_empty() => {
                return reply.error(ENOTEMPTY)
            }
            Ok(_) | Err(ENOENT) => {}
            Err(e) => return reply.error(e),
        }
        st.nodes.get_mut(&parent).unwrap().live_entries.remove(name);
        st.nodes
            .get_mut(&newparent)
            .unwrap()
            .live_entries
            .insert(newname.to_os_string(), ino);
        st.stats.renames += 1;
        reply.ok()
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, flags: i32, reply: ReplyOpen) {
        let mut st = self.st();
        if !st.nodes.contains_key(&ino) {
            return reply.error(ENOENT);
        }
        if flags & libc::O_TRUNC != 0 {
            let _ = st.truncate(ino, 0);
        }
        reply.opened(0, 0)
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock: Option<u64>,
        reply: ReplyData,
    ) {
        let st = self.st();
        let Some(n) = st.nodes.get(&ino) else {
            return reply.error(ENOENT);
        };
        let a = (offset.max(0) as usize).min(n.live.len());
        let b = (a + size as usize).min(n.live.len());
        reply.data(&n.live[a..b])
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock: Option<u64>,
        reply: ReplyWrite,
    ) {
        match self.st().write(ino, offset.max(0) as u64, data) {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(e),
        }
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _lock: u64, reply: ReplyEmpty) {
        reply.ok() // close() makes nothing durable
    }

    fn fsync(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        match self.st().fsync(ino) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
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
        let st = self.st();
        let Some(n) = st.nodes.get(&ino) else {
            return reply.error(ENOENT);
        };
        let mut all = vec![
            (ino, FileType::Directory, OsString::from(".")),
            (ino, FileType::Directory, OsString::from("..")),
        ];
        for (name, &c) in &n.live_entries {
            let kind = if st.nodes[&c].dir {
                FileType::Directory
            } else {
                FileType::RegularFile
            };
            all.push((c, kind, name.clone()));
        }
        for (i, (c, kind, name)) in all.into_iter().enumerate().skip(offset as usize) {
            if reply.add(c, (i + 1) as i64, kind, &name) {
                break;
            }
        }
        reply.ok()
    }

    fn fsyncdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        match self.st().fsync(ino) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn access(&mut self, _req: &Request<'_>, ino: u64, _mask: i32, reply: ReplyEmpty) {
        if self.st().nodes.contains_key(&ino) {
            reply.ok()
        } else {
            reply.error(ENOENT)
        }
    }

    fn create(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let mut st = self.st();
        let ino = match st.make(parent, name, false, mode) {
            Ok(i) => i,
            Err(EEXIST) if flags & libc::O_EXCL == 0 => {
                let i = st.child(parent, name).unwrap();
                if flags & libc::O_TRUNC != 0 {
                    let _ = st.truncate(i, 0);
                }
                i
            }
            Err(e) => return reply.error(e),
        };
        reply.created(&TTL, &st.attr(ino, req.uid(), req.gid()).unwrap(), 0, 0, 0)
    }
}

/// A mounted power-loss filesystem.
pub struct PowerFs {
    pub mountpoint: PathBuf,
    pub backing: PathBuf,
    state: Arc<Mutex<State>>,
    session: Option<fuser::BackgroundSession>,
}

/// Fails with a message naming what is missing when FUSE cannot be used here.
pub fn require_fuse() {
    assert!(
        Path::new("/dev/fuse").exists(),
        "/dev/fuse is missing: the power-cut tests need FUSE (a kernel with fuse, a container given /dev/fuse)"
    );
    let found = std::process::Command::new("sh")
        .args(["-c", "command -v fusermount3 || command -v fusermount"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        found,
        "fusermount3 is missing: the power-cut tests need Debian's `fuse3` package (`apt-get install fuse3`; scripts/test installs it)"
    );
}

impl PowerFs {
    /// Mounts a filesystem whose durable state is the tree under `backing` on `mountpoint`.
    pub fn mount(backing: &Path, mountpoint: &Path) -> PowerFs {
        require_fuse();
        std::fs::create_dir_all(backing).unwrap();
        std::fs::create_dir_all(mountpoint).unwrap();
        let state =
            Arc::new(Mutex::new(State::load(backing).unwrap_or_else(|e| {
                panic!("loading {}: {e}", backing.display())
            })));
        let opts = [MountOption::FSName("roverlog-powercut".into())];
        let session = fuser::spawn_mount2(Fs(state.clone()), mountpoint, &opts)
            .unwrap_or_else(|e| panic!("mounting FUSE on {}: {e}", mountpoint.display()));
        // The mount is live once the kernel answers through it.
        let t0 = std::time::Instant::now();
        while !is_mounted(mountpoint) {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "FUSE mount on {} not up after 10 s",
                mountpoint.display()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        PowerFs {
            mountpoint: mountpoint.to_path_buf(),
            backing: backing.to_path_buf(),
            state,
            session: Some(session),
        }
    }

    /// What the filesystem saw so far (since the last mount).
    pub fn stats(&self) -> Stats {
        self.state.lock().unwrap().stats
    }

    /// A power cut: unmounts, keeps what `cut` says survives in the backing directory, and
    /// mounts again from it. Every process using the mount must be dead already.
    pub fn cut(&mut self, cut: Cut) {
        self.unmount();
        let next = self.backing.with_extension("next");
        let _ = std::fs::remove_dir_all(&next);
        survive(&self.state.lock().unwrap(), cut, &next).expect("writing what survived");
        std::fs::remove_dir_all(&self.backing).unwrap();
        std::fs::rename(&next, &self.backing).unwrap();
        *self = PowerFs::mount(&self.backing.clone(), &self.mountpoint.clone());
    }

    fn unmount(&mut self) {
        if let Some(s) = self.session.take() {
            drop(s); // unmounts (fusermount -u) and joins the session thread
        }
        if is_mounted(&self.mountpoint) {
            // Files still open (a power cut does not wait for them): detach lazily.
            let _ = std::process::Command::new("fusermount3")
                .arg("-uz")
                .arg(&self.mountpoint)
                .status();
        }
        let t0 = std::time::Instant::now();
        while is_mounted(&self.mountpoint) {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "{} still mounted after 10 s",
                self.mountpoint.display()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for PowerFs {
    fn drop(&mut self) {
        self.session.take();
    }
}

/// Whether `/proc/self/mountinfo` lists our filesystem on `path`.
fn is_mounted(path: &Path) -> bool {
    let want = path.to_string_lossy().into_owned();
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(want.as_str()) && l.contains("roverlog-powercut"))
}
