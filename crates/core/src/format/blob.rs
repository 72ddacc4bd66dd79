//! Blob channels (`jpg`, `npz`): a directory named after the channel with one file per sample,
//! `000000.jpg`, `000001.jpg`, ... Samples are variable-size (encoded frames).
//!
//! Each sample is written to `<sensor>/.<channel>..partial` and renamed into place once
//! complete, so a crash never leaves a truncated file under a sample's name. The partial file
//! lives outside the channel directory because upstream counts every file in it; its name
//! contains `..`, so it cannot be another channel's file (no valid name contains `..`).

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::bounds::{self, Expected};
use super::meta::sync_dir;
use super::problem::{Checked, Cut, CutAction, Problem};
use crate::error::{BlobProblem, CorruptProblem, Damage, Error, IoContext, Result};

/// The file name of sample `index`.
pub fn sample_name(index: u64, ext: &str) -> String {
    format!("{index:06}.{ext}")
}

/// The partial file used while writing channel directory `dir`.
pub fn partial_path(dir: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(dir.file_name().unwrap_or_default());
    name.push("..partial");
    dir.with_file_name(name)
}

/// Parses a sample file name `NNNNNN.<ext>` (at least 6 digits) into its index.
pub fn parse_sample_name(name: &str, ext: &str) -> Option<u64> {
    let stem = name.strip_suffix(ext)?.strip_suffix('.')?;
    if stem.len() < 6 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

/// Appends samples to a blob channel directory.
pub struct BlobWriter {
    dir: PathBuf,
    ext: String,
    len: u64,
    /// Files renamed into place but not yet fsynced.
    unsynced: Vec<File>,
    failed: Option<String>,
    /// Threads that fsync a period's files together (1: one after the other).
    sync_threads: usize,
    /// Most files kept open between syncs ([`BlobWriter::set_max_open`]).
    max_open: usize,
}

/// Default of [`BlobWriter::set_sync_threads`]: enough that a period's files at camera rates
/// (30 to 60 per second) are all in flight at once, so one journal commit covers them
/// (BENCHMARKS.md "Blob channels": on a disk whose flush takes milliseconds, 8 threads needed
/// about twice the flushes of one thread per file).
pub const DEFAULT_SYNC_THREADS: usize = 64;

/// Default of [`BlobWriter::set_max_open`]: a camera at 60 fps with a one-second fsync period
/// stays under it, and a few blob channels together stay far from the usual open-file limit
/// of 1,024 (each open file is a descriptor until its sync).
pub const DEFAULT_MAX_OPEN: usize = 64;

/// Stack of an fsync thread: it only makes the one call.
const SYNC_THREAD_STACK: usize = 64 << 10;

impl BlobWriter {
    /// Creates the channel directory (which must not exist).
    pub fn create(dir: &Path, ext: &str) -> Result<BlobWriter> {
        fs::create_dir(dir).at(dir)?;
        Ok(BlobWriter::new(dir, ext, 0))
    }

    /// Opens an existing channel directory to append after its last sample; samples must be
    /// numbered without gaps (run recovery first after a crash).
    pub fn open_append(dir: &Path, ext: &str) -> Result<BlobWriter> {
        if !dir.exists() {
            return BlobWriter::create(dir, ext);
        }
        let scan = scan(dir, ext)?;
        if !scan.problems.is_empty() {
            return Err(Error::corrupt(
                dir,
                CorruptProblem::BlobNeedsRecovery {
                    problems: scan.problems,
                },
            ));
        }
        Ok(BlobWriter::new(dir, ext, scan.contiguous))
    }

    fn new(dir: &Path, ext: &str, len: u64) -> BlobWriter {
        BlobWriter {
            dir: dir.to_path_buf(),
            ext: ext.to_string(),
            len,
            unsynced: Vec::new(),
            failed: None,
            sync_threads: DEFAULT_SYNC_THREADS,
            max_open: DEFAULT_MAX_OPEN,
        }
    }

    /// Most sample files kept open between two syncs (at least 1). A file stays open from its
    /// write to the next [`sync`](Self::sync) so that the sync can fsync it; at many small
    /// frames per fsync period those descriptors would reach the process's open-file limit
    /// and fail the channel. When `n` are open, they are fsynced (together, on the sync
    /// threads) and closed at once. The promise does not change: a sample counts as durable
    /// only after the next `sync`, which also fsyncs the directory that holds its name.
    pub fn set_max_open(&mut self, n: usize) {
        self.max_open = n.max(1);
    }

    /// How many threads fsync the files of one period together (at least 1). A disk takes
    /// concurrent fsyncs as one journal commit; one at a time, each waits for its own.
    pub fn set_sync_threads(&mut self, n: usize) {
        self.sync_threads = n.max(1);
    }

    /// Writes one sample as the next file. Empty samples are refused: recovery takes an
    /// empty sample file for one a power cut emptied.
    pub fn append(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.is_empty() {
            return Err(Error::EmptySample {
                channel: self.dir.display().to_string(),
            });
        }
        if let Some(msg) = &self.failed {
            return Err(Error::io(
                &self.dir,
                std::io::Error::other(format!("earlier failure, not retried: {msg}")),
            ));
        }
        let r = self.write_one(bytes);
        if let Err(e) = &r {
            self.failed = Some(e.to_string());
        }
        r
    }

    fn write_one(&mut self, bytes: &[u8]) -> Result<()> {
        let partial = partial_path(&self.dir);
        let mut f = File::create(&partial).at(&partial)?;
        f.write_all(bytes).at(&partial)?;
        let dest = self.dir.join(sample_name(self.len, &self.ext));
        fs::rename(&partial, &dest).at(&dest)?;
        self.unsynced.push(f);
        self.len += 1;
        if self.unsynced.len() >= self.max_open {
            self.sync_files()?;
        }
        Ok(())
    }

    /// Samples written.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether no sample was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Nothing is buffered in user space: every sample is in the kernel once appended.
    pub fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    /// fsyncs every sample file written since the last sync, then the directory.
    pub fn sync(&mut self) -> Result<()> {
        let r = self.sync_inner();
        if let Err(e) = &r {
            self.failed = Some(e.to_string());
        }
        r
    }

    fn sync_inner(&mut self) -> Result<()> {
        self.sync_files()?;
        sync_dir(&self.dir)
    }

    /// fsyncs (data) and closes every file written since the last sync; the directory is
    /// the caller's.
    fn sync_files(&mut self) -> Result<()> {
        let files = std::mem::take(&mut self.unsynced);
        let threads = self.sync_threads.min(files.len());
        if threads <= 1 {
            for f in &files {
                f.sync_data().at(&self.dir)?;
            }
        } else {
            // Every file is synced before the directory, as one at a time would: the
            // guarantee is the same, the waits overlap.
            let per = files.len().div_ceil(threads);
            let sync_part = |part: &[File]| part.iter().try_for_each(|f| f.sync_data());
            std::thread::scope(|s| {
                let mut hs = Vec::with_capacity(threads);
                let mut inline = Ok(());
                for part in files.chunks(per) {
                    let spawned = std::thread::Builder::new()
                        .stack_size(SYNC_THREAD_STACK)
                        .spawn_scoped(s, move || sync_part(part));
                    match spawned {
                        Ok(h) => hs.push(h),
                        // No thread to be had (a process limit, memory): this part waits
                        // here instead, and the sync still completes.
                        Err(_) => inline = inline.and_then(|()| sync_part(part)),
                    }
                }
                hs.into_iter()
                    .try_for_each(|h| h.join().expect("an fsync thread panicked"))
                    .and(inline)
            })
            .at(&self.dir)?;
        }
        Ok(())
    }

    /// Syncs and closes.
    pub fn finish(mut self) -> Result<()> {
        self.sync()
    }
}

/// What is in a blob channel directory.
#[derive(Debug, Default)]
pub struct BlobScan {
    /// Samples `0..contiguous` exist and are non-empty.
    pub contiguous: u64,
    /// Bytes of those samples.
    pub bytes: u64,
    /// What breaks the sequence: gaps, empty files, duplicates, stray files.
    pub problems: Vec<BlobProblem>,
    /// Sample files that do not belong to `0..contiguous` (recovery deletes them).
    pub extra_samples: Vec<PathBuf>,
    /// Files that are not samples at all (recovery leaves them and reports them).
    pub strays: Vec<PathBuf>,
}

/// Scans a blob channel directory. A missing directory scans as empty.
pub fn scan(dir: &Path, ext: &str) -> Result<BlobScan> {
    let mut out = BlobScan::default();
    if !dir.exists() {
        return Ok(out);
    }
    let mut indexed = Vec::new();
    for entry in fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let name = entry.file_name();
        match parse_sample_name(&name.to_string_lossy(), ext) {
            Some(i) => {
                let len = entry.metadata().at(&entry.path())?.len();
                indexed.push((i, len, entry.path()));
            }
            None => {
                out.problems.push(BlobProblem::UnexpectedFile { name });
                out.strays.push(entry.path());
            }
        }
    }
    indexed.sort();
    let mut broken = false;
    // One past the last index seen: every hole is reported, not only the first (the readers
    // give the samples after a hole, so each one matters).
    let mut next = 0;
    for (i, len, path) in indexed {
        // A `jpg` file a power cut left zero-filled breaks the sequence as an empty one does
        // (the readers call it damaged; recovery removes it with everything after).
        let zeroed = !broken
            && i == out.contiguous
            && len > 0
            && ext == "jpg"
            && file_zero_filled(&path, len)?;
        if !broken && i == out.contiguous && len > 0 && !zeroed {
            out.contiguous += 1;
            out.bytes += len;
            next = out.contiguous;
            continue;
        }
        if i < next {
            out.problems.push(BlobProblem::DuplicateSample {
                index: i,
                path: path.clone(),
            });
        } else {
            if i > next {
                out.problems.push(BlobProblem::SampleGap {
                    missing: next,
                    found: i,
                });
            }
            if len == 0 {
                out.problems.push(BlobProblem::EmptySample { index: i });
            }
            if zeroed {
                out.problems
                    .push(BlobProblem::ZeroFilledSample { index: i });
            }
            next = i + 1;
        }
        broken = true;
        out.extra_samples.push(path);
    }
    let partial = partial_path(dir);
    if partial.exists() {
        out.problems.push(BlobProblem::PartialSample {
            path: partial.clone(),
        });
        out.extra_samples.push(partial);
    }
    Ok(out)
}

/// Whether the sample file at `path` (`len` bytes) is zero-filled (see
/// [`crate::error::zero_filled`]): two reads of a few bytes.
fn file_zero_filled(path: &Path, len: u64) -> Result<bool> {
    use std::os::unix::fs::FileExt;
    let run = crate::error::ZERO_RUN as u64;
    if len < run {
        return Ok(false);
    }
    let f = File::open(path).at(path)?;
    let mut ends = vec![0u8; 2 * run as usize];
    let (head, tail) = ends.split_at_mut(run as usize);
    f.read_exact_at(head, 0).at(path)?;
    f.read_exact_at(tail, len - run).at(path)?;
    Ok(crate::error::zero_filled(&ends))
}

/// What recovery must know to cut a blob channel.
#[derive(Debug)]
pub(crate) struct BlobPlan {
    ext: String,
    extra: Vec<PathBuf>,
    exists: bool,
}

/// Checks the blob channel directory `dir`.
pub(crate) fn check(
    dir: &Path,
    ext: &str,
    problems: &mut Vec<Problem>,
) -> Result<Checked<BlobPlan>> {
    let exists = dir.is_dir();
    if !exists {
        problems.push(Problem::DirMissing);
    }
    let scan = scan(dir, ext)?;
    problems.extend(scan.problems.into_iter().map(Problem::Blob));
    Ok(Checked {
        complete: scan.contiguous,
        disk_bytes: scan.bytes,
        plan: BlobPlan {
            ext: ext.to_string(),
            extra: scan.extra_samples,
            exists,
        },
    })
}

impl BlobPlan {
    /// Removes the samples from `target` on and every sample file out of sequence; the
    /// sensor directory `sensor` is synced after removals. Stray files are left alone.
    pub(crate) fn recover(
        &self,
        dir: &Path,
        sensor: &Path,
        complete: u64,
        target: u64,
        cuts: &mut Vec<Cut>,
    ) -> Result<()> {
        if !self.exists {
            fs::create_dir(dir).at(dir)?;
            cuts.push(Cut::new(dir, CutAction::CreatedEmptyDir));
            return Ok(());
        }
        let mut doomed: Vec<PathBuf> = self.extra.clone();
        for i in target..complete {
            doomed.push(dir.join(sample_name(i, &self.ext)));
        }
        doomed.sort();
        for f in &doomed {
            fs::remove_file(f).at(f)?;
            cuts.push(Cut::new(f, CutAction::Removed));
        }
        if !doomed.is_empty() {
            sync_dir(dir)?;
            sync_dir(sensor)?;
        }
        Ok(())
    }
}

/// Reads a blob channel by index.
///
/// The channel holds samples up to its last non-empty sample file (no more than `ts`
/// counts): a file missing or empty before that is a [`Error::DamagedSample`], and every
/// later sample still reads. When the sensor's `ts` count `n` is known and sample `n - 1` is
/// there, that is all there is to know: two `stat`s instead of listing an hour of files
/// ([`BlobReader::open_expecting`]); otherwise the directory is listed once, when opened.
pub struct BlobReader {
    dir: PathBuf,
    ext: String,
    files: Files,
    expected: Expected,
}

/// What the reader knows of the sample files.
enum Files {
    /// Listed: the indices of the non-empty and of the empty sample files, ascending.
    Listed { present: Vec<u64>, empty: Vec<u64> },
    /// Not listed: the last sample `ts` counts is there, so samples `0..n` are taken as
    /// there; one that is not is found when read.
    Counted(u64),
}

impl BlobReader {
    /// Opens a blob channel directory and lists it.
    pub fn open(dir: &Path, ext: &str) -> Result<BlobReader> {
        if !dir.is_dir() {
            return Err(Error::NotA {
                path: dir.to_path_buf(),
                expected: "blob channel directory",
            });
        }
        let (mut present, mut empty) = (Vec::new(), Vec::new());
        for entry in fs::read_dir(dir).at(dir)? {
            let entry = entry.at(dir)?;
            if let Some(i) = parse_sample_name(&entry.file_name().to_string_lossy(), ext) {
                match entry.metadata().at(&entry.path())?.len() {
                    0 => empty.push(i),
                    _ => present.push(i),
                }
            }
        }
        present.sort_unstable();
        present.dedup();
        empty.sort_unstable();
        Ok(BlobReader {
            dir: dir.to_path_buf(),
            ext: ext.to_string(),
            files: Files::Listed { present, empty },
            expected: None,
        })
    }

    /// Opens a blob channel read against the sensor's `ts` count: when that count is `n > 0`
    /// and sample `n - 1` is a non-empty file, the channel holds `n` samples and is not
    /// listed; otherwise (a torn channel, no `ts`) it is listed as [`BlobReader::open`] does.
    /// A file written ahead of its timestamp (a trace being recorded) is not counted until
    /// its timestamp is there.
    pub fn open_expecting(dir: &Path, ext: &str, expected: Expected) -> Result<BlobReader> {
        if let Some(n) = expected.filter(|&n| n > 0) {
            let last = dir.join(sample_name(n - 1, ext));
            if fs::metadata(&last).is_ok_and(|m| m.is_file() && m.len() > 0) {
                return Ok(BlobReader {
                    dir: dir.to_path_buf(),
                    ext: ext.to_string(),
                    files: Files::Counted(n),
                    expected,
                });
            }
        }
        Ok(BlobReader::open(dir, ext)?.expecting(expected))
    }

    /// Reads the channel against the sensor's `ts` count (see [`Expected`]).
    pub fn expecting(mut self, expected: Expected) -> BlobReader {
        self.expected = expected;
        self
    }

    /// One past the last non-empty sample file.
    fn end(&self) -> u64 {
        match &self.files {
            Files::Listed { present, .. } => present.last().map_or(0, |i| i + 1),
            Files::Counted(n) => *n,
        }
    }

    /// Number of samples: up to the last non-empty sample file, no more than `ts` counts
    /// (missing or empty files before it are counted, and raise when read).
    pub fn len(&self) -> u64 {
        bounds::agreed(self.end(), self.expected)
    }

    /// Whether there is no sample.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The path of sample `index`.
    pub fn path_of(&self, index: u64) -> PathBuf {
        self.dir.join(sample_name(index, &self.ext))
    }

    /// Sample `index`'s bytes. Every sample file can be read, also one past `ts` (a sample
    /// a crash left without its timestamp).
    pub fn get(&self, index: u64) -> Result<Vec<u8>> {
        let file = self.path_of(index);
        let may_be_there = match &self.files {
            Files::Listed { present, .. } => present.binary_search(&index).is_ok(),
            // Past the count: a sample a crash left without its timestamp may be there.
            Files::Counted(_) => true,
        };
        if may_be_there {
            match fs::read(&file) {
                Ok(b) if !b.is_empty() => return Ok(b),
                // Removed or emptied since the listing: damaged all the same.
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(file, e)),
            }
        }
        let listed = match &self.files {
            Files::Listed { empty, .. } => self.end().max(empty.last().map_or(0, |i| i + 1)),
            Files::Counted(n) => *n,
        };
        Err(bounds::unreadable(
            &self.dir,
            index,
            self.len(),
            listed,
            self.expected,
            || match file.metadata() {
                Ok(m) if m.len() == 0 => Damage::FileEmpty { file },
                _ => Damage::FileMissing { file },
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel(n: u8) -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("img");
        let mut w = BlobWriter::create(&dir, "jpg").unwrap();
        for i in 0..n {
            w.append(&[i + 1; 3]).unwrap();
        }
        w.finish().unwrap();
        (d, dir)
    }

    #[test]
    fn a_counted_open_trusts_the_last_sample_and_lists_otherwise() {
        let (_d, dir) = channel(10);
        let open = |n| BlobReader::open_expecting(&dir, "jpg", n).unwrap();
        assert!(matches!(open(Some(10)).files, Files::Counted(10)));
        assert_eq!(open(Some(10)).len(), 10);
        // A file written ahead of its timestamp is not counted yet.
        assert_eq!(open(Some(9)).len(), 9);
        // More timestamps than files (a torn channel), or no `ts`: the listing decides.
        assert!(matches!(open(Some(12)).files, Files::Listed { .. }));
        assert_eq!(open(Some(12)).len(), 10);
        assert_eq!(open(None).len(), 10);
        // An emptied last file is not trusted either.
        fs::write(dir.join(sample_name(9, "jpg")), b"").unwrap();
        assert!(matches!(open(Some(10)).files, Files::Listed { .. }));
        assert_eq!(open(Some(10)).len(), 9);
    }

    #[test]
    fn a_sample_missing_in_the_middle_of_a_counted_channel_fails_on_access_by_name() {
        let (_d, dir) = channel(10);
        fs::remove_file(dir.join(sample_name(4, "jpg"))).unwrap();
        let r = BlobReader::open_expecting(&dir, "jpg", Some(10)).unwrap();
        assert_eq!(r.len(), 10);
        assert_eq!(r.get(9).unwrap(), vec![10; 3]);
        let e = r.get(4).unwrap_err();
        assert!(matches!(e, Error::DamagedSample { index: 4, .. }), "{e}");
        let e = e.to_string();
        assert!(
            e.contains("000004.jpg") && e.contains("sample 4") && e.contains("roverlog recover"),
            "{e}"
        );
        assert!(matches!(
            r.get(10).unwrap_err(),
            Error::OutOfRange { index: 10, .. }
        ));
    }

    #[test]
    fn open_files_stay_under_the_bound_and_every_sample_is_whole() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("img");
        let mut w = BlobWriter::create(&dir, "jpg").unwrap();
        w.set_max_open(4);
        for i in 0..10u8 {
            w.append(&[i; 3]).unwrap();
            assert!(
                w.unsynced.len() < 4,
                "sample {i}: {} open",
                w.unsynced.len()
            );
        }
        // Two batches of four reached the bound and were closed; two files wait for the
        // period's sync.
        assert_eq!(w.unsynced.len(), 2);
        w.sync().unwrap();
        assert!(w.unsynced.is_empty());
        for i in 0..10u8 {
            let got = fs::read(dir.join(sample_name(i as u64, "jpg"))).unwrap();
            assert_eq!(got, vec![i; 3]);
        }
        let scan = scan(&dir, "jpg").unwrap();
        assert_eq!((scan.contiguous, scan.problems.len()), (10, 0));
    }
}
