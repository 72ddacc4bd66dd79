//! Reader for GulpIO2 directories (video datasets stored as JPEG frames).
//!
//! A directory holds chunk pairs `data_<n>.gulp` (JPEG records back to back, each padded with
//! zeros to a multiple of 4 bytes) and `meta_<n>.gmeta` (JSON: id -> `frame_info` +
//! `meta_data`). We map every data file and hand out frames as `&[u8]` borrowed from the map,
//! so reading a frame copies nothing. The `.gmeta` files are untrusted: their size and the
//! frames per id are limited ([`GulpOptions`]), and every frame is checked against the data
//! file's size when the directory is opened, so later reads cannot fail or panic.
//!
//! Differences from gulpio2 (0.0.4), on purpose:
//! - chunks are ordered by their number (gulpio2 sorts file names as strings, so with 10+
//!   chunks it visits `data_10` before `data_2`); ids are in chunk order, then file order;
//! - problems gulpio2 finds late or never (a frame past the end of its data file, a malformed
//!   `frame_info`, an unpaired file) are errors at open.
//!
//! Submodules: [`meta`] parses one `.gmeta`, [`select`] is the frame selection,
//! [`check`] holds the sanity check and the summary, [`crate::jpeg`] turns a JPEG into pixels.

pub mod check;
pub mod meta;
pub mod select;
mod source;

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use serde_json::Value;

#[cfg(feature = "jpeg")]
pub use crate::jpeg::{
    decode_jpeg, decode_jpeg_limited, decode_jpeg_with, DecodedFrame, JpegFrame,
};
pub use check::{sanity_check, ChunkSummary, GulpSummary, SanityProblem, SanityReport};
pub use meta::{parse_gmeta, FrameInfo, GmetaEntry};
pub use select::FrameSelection;
pub use source::GulpSource;

use crate::error::{GulpProblem, IoContext};
use crate::{Error, Result};

/// Largest read of [`GulpDirectory::read_all`] (unless one frame is larger): its buffer stays
/// this small however many frames a video has. Speed is the same from 64 KiB to one read per
/// whole video (`cargo bench --bench gulp_read`, BENCHMARKS.md "Gulp reader").
pub const READ_GROUP: u64 = 256 << 10;

/// Limits applied to the untrusted `.gmeta` files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GulpOptions {
    /// Largest `.gmeta` file we read, in bytes. Default 256 MiB.
    pub max_meta_bytes: u64,
    /// Most frames one id may have. Default 1 Mi (about 9 hours of video at 30 fps).
    pub max_frames_per_id: usize,
}

impl Default for GulpOptions {
    fn default() -> Self {
        GulpOptions {
            max_meta_bytes: 256 << 20,
            max_frames_per_id: 1 << 20,
        }
    }
}

/// One chunk pair as found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkFiles {
    pub number: u64,
    pub data: PathBuf,
    pub meta: PathBuf,
}

/// An open chunk: its files and the mapped data.
#[derive(Debug)]
struct Chunk {
    files: ChunkFiles,
    /// `None` for an empty data file (which cannot be mapped).
    map: Option<Mmap>,
}

impl Chunk {
    fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}

#[derive(Debug)]
struct Video {
    id: String,
    chunk: usize,
    meta: Option<Value>,
    frames: Vec<FrameInfo>,
}

/// An opened GulpIO2 directory.
#[derive(Debug)]
pub struct GulpDirectory {
    path: PathBuf,
    chunks: Vec<Chunk>,
    videos: Vec<Video>,
    by_id: HashMap<String, usize>,
}

/// A borrowed view of one video (one id).
#[derive(Clone, Copy)]
pub struct VideoRef<'a> {
    dir: &'a GulpDirectory,
    video: &'a Video,
}

/// Does `path` look like a gulp directory: a directory holding at least one `data_<n>.gulp`
/// or `meta_<n>.gmeta`? (Only names are looked at; [`GulpDirectory::open`] checks the rest.)
pub fn is_gulp_dir(path: impl AsRef<Path>) -> bool {
    let Ok(entries) = std::fs::read_dir(path) else {
        return false;
    };
    entries.flatten().any(|e| {
        e.file_name()
            .to_str()
            .is_some_and(|n| chunk_name(n).is_some())
    })
}

/// Which file of a chunk pair a name is, and the chunk number: `data_<n>.gulp` or
/// `meta_<n>.gmeta` with `n` all ASCII digits.
fn chunk_name(name: &str) -> Option<(bool, u64)> {
    let (is_data, digits) = if let Some(rest) = name.strip_prefix("data_") {
        (true, rest.strip_suffix(".gulp")?)
    } else {
        (false, name.strip_prefix("meta_")?.strip_suffix(".gmeta")?)
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((is_data, digits.parse().ok()?))
}

/// Lists the chunk pairs of `dir` by number. A file without its partner, or two files with
/// the same number (`data_1.gulp` and `data_01.gulp`), is an error naming the file.
pub fn chunk_files(dir: &Path) -> Result<Vec<ChunkFiles>> {
    let mut data: BTreeMap<u64, PathBuf> = BTreeMap::new();
    let mut meta: BTreeMap<u64, PathBuf> = BTreeMap::new();
    for entry in std::fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let name = entry.file_name();
        let Some((is_data, n)) = name.to_str().and_then(chunk_name) else {
            continue;
        };
        let path = entry.path();
        let map = if is_data { &mut data } else { &mut meta };
        if let Some(other) = map.insert(n, path.clone()) {
            return Err(Error::Gulp {
                path,
                problem: Box::new(GulpProblem::ChunkNumberReused { number: n, other }),
            });
        }
    }
    if data.is_empty() && meta.is_empty() {
        return Err(Error::Gulp {
            path: dir.to_owned(),
            problem: Box::new(GulpProblem::NotGulpDir),
        });
    }
    for (n, path) in &data {
        if !meta.contains_key(n) {
            return Err(Error::Gulp {
                path: path.clone(),
                problem: Box::new(GulpProblem::NoMetaFile { number: *n }),
            });
        }
    }
    for (n, path) in &meta {
        if !data.contains_key(n) {
            return Err(Error::Gulp {
                path: path.clone(),
                problem: Box::new(GulpProblem::NoDataFile { number: *n }),
            });
        }
    }
    Ok(data
        .into_iter()
        .zip(meta)
        .map(|((number, data), (_, meta))| ChunkFiles { number, data, meta })
        .collect())
}

/// Reads a `.gmeta` file, refusing one over `opts.max_meta_bytes`, and parses it.
pub fn read_gmeta(path: &Path, opts: &GulpOptions) -> Result<Vec<GmetaEntry>> {
    let bytes = crate::io::read_limited_required(path, opts.max_meta_bytes, "gulp metadata")?;
    parse_gmeta(path, &bytes, opts.max_frames_per_id)
}

impl GulpDirectory {
    /// Opens a gulp directory with the default [`GulpOptions`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, &GulpOptions::default())
    }

    /// Opens a gulp directory: pairs the chunk files, reads every `.gmeta`, maps every data
    /// file and checks each frame against the data file's size. Fails on any inconsistency
    /// (see the module docs), naming the file and the id.
    pub fn open_with(path: impl AsRef<Path>, opts: &GulpOptions) -> Result<Self> {
        let path = path.as_ref();
        let mut dir = GulpDirectory {
            path: path.to_owned(),
            chunks: Vec::new(),
            videos: Vec::new(),
            by_id: HashMap::new(),
        };
        for files in chunk_files(path)? {
            dir.add_chunk(files, opts)?;
        }
        Ok(dir)
    }

    /// Opens one chunk pair named by its two paths, as gulpio2's `GulpChunk(data_file_path,
    /// meta_file_path)` does: the files need not be named `data_<n>.gulp`/`meta_<n>.gmeta` nor
    /// sit in one directory. The chunk's number is the one in the data file's name (0 when it
    /// has none), and [`GulpDirectory::path`] is the data file. Checked as [`open_with`]
    /// checks each chunk.
    ///
    /// [`open_with`]: GulpDirectory::open_with
    pub fn open_chunk(
        data: impl AsRef<Path>,
        meta: impl AsRef<Path>,
        opts: &GulpOptions,
    ) -> Result<Self> {
        let (data, meta) = (data.as_ref(), meta.as_ref());
        let number = data
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(chunk_name)
            .map_or(0, |(_, n)| n);
        let mut dir = GulpDirectory {
            path: data.to_owned(),
            chunks: Vec::new(),
            videos: Vec::new(),
            by_id: HashMap::new(),
        };
        let files = ChunkFiles {
            number,
            data: data.to_owned(),
            meta: meta.to_owned(),
        };
        dir.add_chunk(files, opts)?;
        Ok(dir)
    }

    /// Reads a chunk's `.gmeta`, maps its data file, checks every frame against the data
    /// file's size and every id against the chunks already added, and adds it.
    fn add_chunk(&mut self, files: ChunkFiles, opts: &GulpOptions) -> Result<()> {
        let entries = read_gmeta(&files.meta, opts)?;
        let map = map_file(&files.data)?;
        let data_len = map.as_ref().map_or(0, |m| m.len() as u64);
        let chunk = self.chunks.len();
        for entry in entries {
            if let Some(f) = entry.frames.iter().position(|f| f.end() > data_len) {
                let fi = entry.frames[f];
                return Err(Error::Gulp {
                    path: files.meta.clone(),
                    problem: Box::new(GulpProblem::FramePastEnd {
                        id: entry.id,
                        frame: f,
                        end: fi.end(),
                        data: files.data.clone(),
                        data_len,
                    }),
                });
            }
            if let Some(&other) = self.by_id.get(&entry.id) {
                let first = &self.chunks[self.videos[other].chunk].files.meta;
                return Err(Error::Gulp {
                    path: files.meta.clone(),
                    problem: Box::new(GulpProblem::DuplicateId {
                        id: entry.id,
                        first: first.clone(),
                    }),
                });
            }
            self.by_id.insert(entry.id.clone(), self.videos.len());
            self.videos.push(Video {
                id: entry.id,
                chunk,
                meta: entry.meta,
                frames: entry.frames,
            });
        }
        self.chunks.push(Chunk { files, map });
        Ok(())
    }

    /// Reads every frame of every video and hands it to `f(video, frame index, JPEG bytes)`:
    /// the bulk path (training epochs, import). Each of `threads` threads takes whole chunk
    /// files and reads runs of adjacent records with one `pread` of at most [`READ_GROUP`]
    /// bytes into a buffer it reuses, so the bytes are copied once, memory stays bounded, and
    /// no fresh map is faulted in page by page; a data file that
    /// shrank since [`GulpDirectory::open`] is an error naming it (the map would SIGBUS).
    /// Videos of one chunk come in order; chunks in parallel, so `f` is called from several
    /// threads. Stops at the first error.
    pub fn read_all<F>(&self, threads: usize, f: F) -> Result<()>
    where
        F: Fn(VideoRef<'_>, usize, &[u8]) + Sync,
    {
        use std::os::unix::fs::FileExt;
        use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
        // Videos of a chunk are contiguous in `self.videos` (added chunk by chunk).
        let mut ranges = vec![0..0; self.chunks.len()];
        for (i, v) in self.videos.iter().enumerate() {
            let r = &mut ranges[v.chunk];
            if r.start == r.end {
                *r = i..i;
            }
            r.end = i + 1;
        }
        let next = AtomicUsize::new(0);
        let work = || -> Result<()> {
            let mut buf = Vec::new();
            loop {
                let c = next.fetch_add(1, Relaxed);
                let Some(range) = ranges.get(c) else {
                    return Ok(());
                };
                let path = &self.chunks[c].files.data;
                let file = std::fs::File::open(path).at(path)?;
                let read = |buf: &mut Vec<u8>, lo: u64, hi: u64| -> Result<()> {
                    let n = (hi - lo) as usize;
                    if buf.len() < n {
                        buf.resize(n, 0);
                    }
                    file.read_exact_at(&mut buf[..n], lo)
                        .map_err(|e| match e.kind() {
                            std::io::ErrorKind::UnexpectedEof => Error::Gulp {
                                path: path.clone(),
                                problem: Box::new(GulpProblem::Shrunk { lo, hi }),
                            },
                            _ => Error::io(path, e),
                        })
                };
                for video in &self.videos[range.clone()] {
                    let v = VideoRef { dir: self, video };
                    let frames = &video.frames;
                    let mut i = 0;
                    while i < frames.len() {
                        // Frames i..j, back to back in the file, in one read of at most
                        // READ_GROUP bytes (or one larger frame alone).
                        let lo = frames[i].offset;
                        let (mut j, mut hi) = (i + 1, frames[i].end());
                        while let Some(next) = frames.get(j) {
                            if next.offset != hi || next.end() - lo > READ_GROUP {
                                break;
                            }
                            hi = next.end();
                            j += 1;
                        }
                        read(&mut buf, lo, hi)?;
                        for (k, fi) in frames.iter().enumerate().take(j).skip(i) {
                            let s = (fi.offset - lo) as usize;
                            f(v, k, &buf[s..s + fi.jpeg_len() as usize]);
                        }
                        i = j;
                    }
                }
            }
        };
        let threads = threads.clamp(1, self.chunks.len().max(1));
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads).map(|_| s.spawn(work)).collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("gulp reader thread panicked"))
                .collect::<Result<Vec<()>>>()
                .map(|_| ())
        })
    }

    /// The directory this was opened from (the data file, for [`GulpDirectory::open_chunk`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The chunk pairs, by chunk number.
    pub fn chunks(&self) -> impl ExactSizeIterator<Item = &ChunkFiles> {
        self.chunks.iter().map(|c| &c.files)
    }

    /// Number of ids.
    pub fn len(&self) -> usize {
        self.videos.len()
    }

    /// True when no chunk holds any id.
    pub fn is_empty(&self) -> bool {
        self.videos.is_empty()
    }

    /// All ids: chunks by number, then each `.gmeta`'s order.
    pub fn ids(&self) -> impl ExactSizeIterator<Item = &str> {
        self.videos.iter().map(|v| v.id.as_str())
    }

    /// Every video, in [`ids`](Self::ids) order.
    pub fn videos(&self) -> impl ExactSizeIterator<Item = VideoRef<'_>> {
        self.videos
            .iter()
            .map(|video| VideoRef { dir: self, video })
    }

    /// The video with this id, if any.
    pub fn video(&self, id: &str) -> Option<VideoRef<'_>> {
        self.by_id.get(id).map(|&i| VideoRef {
            dir: self,
            video: &self.videos[i],
        })
    }

    fn get(&self, id: &str) -> Result<VideoRef<'_>> {
        self.video(id).ok_or_else(|| Error::Gulp {
            path: self.path.clone(),
            problem: Box::new(GulpProblem::NoId { id: id.to_owned() }),
        })
    }

    /// The metadata of an id: the first element of its `meta_data`, as gulpio2 returns it.
    /// An unknown id, or an empty `meta_data`, is an error.
    pub fn meta(&self, id: &str) -> Result<&Value> {
        let v = self.get(id)?;
        v.meta().ok_or_else(|| Error::Gulp {
            path: v.meta_path().to_owned(),
            problem: Box::new(GulpProblem::EmptyMeta { id: id.to_owned() }),
        })
    }

    /// The selected frames of an id as JPEG bytes (padding removed), borrowed from the map.
    pub fn frames(&self, id: &str, sel: &FrameSelection) -> Result<Vec<&[u8]>> {
        let v = self.get(id)?;
        let idx = sel
            .resolve(v.frame_count())
            .map_err(|problem| Error::BadFrames {
                path: v.meta_path().to_owned(),
                id: id.to_owned(),
                problem,
            })?;
        Ok(idx.into_iter().map(|i| v.frame_bytes(i)).collect())
    }

    /// Writes the selected frames' JPEG bytes (no padding) back to back to `out` (what
    /// `roverlog cat` prints); returns the number of bytes written. A write error is reported
    /// as [`Error::Io`] on the path `<output>`.
    pub fn write_frames(&self, id: &str, sel: &FrameSelection, mut out: impl Write) -> Result<u64> {
        let mut n = 0u64;
        for frame in self.frames(id, sel)? {
            out.write_all(frame).at(Path::new("<output>"))?;
            n += frame.len() as u64;
        }
        out.flush().at(Path::new("<output>"))?;
        Ok(n)
    }

    /// Summary for `roverlog info`.
    pub fn describe(&self) -> GulpSummary {
        check::describe(self)
    }
}

impl std::fmt::Debug for VideoRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VideoRef")
            .field("id", &self.id())
            .field("chunk", &self.chunk())
            .field("frames", &self.frame_count())
            .finish()
    }
}

impl<'a> VideoRef<'a> {
    /// The id.
    pub fn id(&self) -> &'a str {
        &self.video.id
    }

    /// The number of the chunk holding this video.
    pub fn chunk(&self) -> u64 {
        self.dir.chunks[self.video.chunk].files.number
    }

    /// The `.gmeta` file describing this video.
    pub fn meta_path(&self) -> &'a Path {
        &self.dir.chunks[self.video.chunk].files.meta
    }

    /// First element of `meta_data`, or `None` if that list is empty.
    pub fn meta(&self) -> Option<&'a Value> {
        self.video.meta.as_ref()
    }

    /// Number of frames.
    pub fn frame_count(&self) -> usize {
        self.video.frames.len()
    }

    /// Where each frame lies in the data file, as the `.gmeta` says.
    pub fn frame_infos(&self) -> &'a [FrameInfo] {
        &self.video.frames
    }

    /// Frame `i` as JPEG bytes, or `None` past the end.
    pub fn frame(&self, i: usize) -> Option<&'a [u8]> {
        (i < self.frame_count()).then(|| self.frame_bytes(i))
    }

    /// All frames in order as JPEG bytes.
    pub fn frames(&self) -> impl ExactSizeIterator<Item = &'a [u8]> + 'a {
        let this = *self;
        (0..self.frame_count()).map(move |i| this.frame_bytes(i))
    }

    fn frame_bytes(&self, i: usize) -> &'a [u8] {
        let f = self.video.frames[i];
        // Checked at open: offset + length <= data length and pad <= length.
        let start = f.offset as usize;
        &self.dir.chunks[self.video.chunk].bytes()[start..start + f.jpeg_len() as usize]
    }
}

/// Maps a data file read-only; `None` when it is empty.
fn map_file(path: &Path) -> Result<Option<Mmap>> {
    // SAFETY: gulp data files are written once and then only read; if another process
    // truncated one while we hold the map, reads would fault (SIGBUS), the same trade
    // numpy's memmap and gulpio2 users' page cache make.
    Ok(unsafe { crate::io::map_possibly_empty(path) }?.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_names() {
        assert_eq!(chunk_name("data_0.gulp"), Some((true, 0)));
        assert_eq!(chunk_name("meta_12.gmeta"), Some((false, 12)));
        assert_eq!(chunk_name("data_.gulp"), None);
        assert_eq!(chunk_name("data_1x.gulp"), None);
        assert_eq!(chunk_name("meta_1.gulp"), None);
        assert_eq!(chunk_name("label2idx.json"), None);
        assert_eq!(chunk_name("data_99999999999999999999999.gulp"), None);
    }

    #[test]
    fn empty_chunks_unknown_ids_and_empty_meta_data() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path();
        assert!(!is_gulp_dir(p));
        assert!(GulpDirectory::open(p)
            .unwrap_err()
            .to_string()
            .contains("not a gulp"));
        std::fs::write(p.join("data_0.gulp"), b"").unwrap();
        std::fs::write(p.join("meta_0.gmeta"), b"{}").unwrap();
        std::fs::write(p.join("data_1.gulp"), b"abcd").unwrap();
        std::fs::write(
            p.join("meta_1.gmeta"),
            br#"{"x": {"frame_info": [[0, 1, 4], [0, 0, 0]], "meta_data": []}}"#,
        )
        .unwrap();
        assert!(is_gulp_dir(p));
        let dir = GulpDirectory::open(p).unwrap();
        assert_eq!(dir.ids().collect::<Vec<_>>(), ["x"]);
        assert_eq!(
            dir.frames("x", &FrameSelection::All).unwrap(),
            [&b"abc"[..], b""]
        );
        let e = dir.meta("x").unwrap_err().to_string();
        assert!(
            e.contains("meta_1.gmeta") && e.contains("meta_data is empty"),
            "{e}"
        );
        assert!(dir
            .meta("y")
            .unwrap_err()
            .to_string()
            .contains("no id \"y\""));
        assert_eq!(dir.describe().frames, 2);
        // As gulpio2 checks: data_0 is empty (its meta is {}, so its size matches), and
        // data_1's size is compared with the end of the *last* frame, [0, 0, 0].
        let report = sanity_check(p, &GulpOptions::default()).unwrap();
        assert_eq!(
            report.problems,
            [
                SanityProblem::EmptyData {
                    path: p.join("data_0.gulp")
                },
                SanityProblem::DataSize {
                    path: p.join("data_1.gulp"),
                    expected: 0,
                    actual: 4
                }
            ]
        );
    }

    #[test]
    fn a_chunk_opens_alone_from_its_two_paths() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path();
        std::fs::create_dir(p.join("d")).unwrap();
        let (data, meta) = (p.join("d/frames.bin"), p.join("index.json"));
        std::fs::write(&data, b"abcdefgh").unwrap();
        std::fs::write(
            &meta,
            br#"{"v": {"frame_info": [[0, 1, 4], [4, 0, 4]], "meta_data": [{"n": 2}]}}"#,
        )
        .unwrap();
        let dir = GulpDirectory::open_chunk(&data, &meta, &GulpOptions::default()).unwrap();
        assert_eq!(dir.path(), data);
        assert_eq!(dir.ids().collect::<Vec<_>>(), ["v"]);
        assert_eq!(dir.chunks().next().unwrap().number, 0);
        assert_eq!(
            dir.frames("v", &FrameSelection::All).unwrap(),
            [&b"abc"[..], b"efgh"]
        );
        // The number comes from a gulp name; a frame past the end names both files.
        std::fs::rename(&data, p.join("d/data_7.gulp")).unwrap();
        std::fs::write(p.join("d/data_7.gulp"), b"abcd").unwrap();
        let e = GulpDirectory::open_chunk(p.join("d/data_7.gulp"), &meta, &GulpOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("index.json") && e.contains("data_7.gulp") && e.contains("frame 1"),
            "{e}"
        );
        std::fs::write(p.join("d/data_7.gulp"), b"abcdefgh").unwrap();
        let dir =
            GulpDirectory::open_chunk(p.join("d/data_7.gulp"), &meta, &GulpOptions::default())
                .unwrap();
        assert_eq!(dir.chunks().next().unwrap().number, 7);
        let e = GulpDirectory::open_chunk(&data, &meta, &GulpOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("frames.bin"), "{e}");
    }
}
