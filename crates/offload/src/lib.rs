//! `roverlog offload DATA DEST`: every sealed trace below `DATA` to `DEST` (an S3 bucket or a
//! directory, see `roverlog-store`), laid out as the trace itself (`DEST/<trace>/...`, byte
//! for byte) with upstream's `file,md5` CSV beside it (`DEST/<trace>.md5.csv`).
//!
//! - [`select`]: which traces are sealed (never the one a daemon records into; a trace a
//!   crash cut is reported, not sent).
//! - [`journal`]: the progress on the vehicle's disk; a kill or power cut then the same
//!   command sends again at most the part in flight.
//! - `send`: a trace's files, whole or in parts, `--jobs` requests in flight at a time.
//! - [`upload`]: part sizes, and what is verified.
//! - [`free`]: `--delete` and `--keep-free`, only ever of verified traces.
//! - `replan`: a trace whose files changed after it was planned, planned again by the run
//!   after the one that found the change, keeping what is still verified.
//! - [`rate`]: the `--rate` cap.
//!
//! One thread reads, hashes, paces and journals; `--jobs` workers hand the bodies to the
//! store, so the re-sent bytes after a kill are at most the `--jobs` parts in flight.

mod error;
pub mod free;
pub mod journal;
mod knobs;
pub mod pending;
pub mod plan;
pub mod rate;
mod replan;
pub mod select;
mod send;
pub mod upload;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use error::OffloadError;
use journal::{FileState, InFlight, Journal};
use roverlog_store::Store;
use select::TraceState;

/// Requests in flight at a time by default (as rclone's `--transfers 4`).
pub const JOBS: usize = 4;

/// What to offload, where, and how.
#[derive(Debug, Clone)]
pub struct Options {
    pub data: PathBuf,
    pub dest: String,
    /// Default: [`journal::default_path`].
    pub journal: Option<PathBuf>,
    /// Remove each trace once all its objects are verified.
    pub delete: bool,
    /// Remove the oldest verified traces while the free space of DATA's filesystem is
    /// under this fraction (0..1).
    pub keep_free: Option<f64>,
    /// Bytes per second.
    pub rate: Option<u64>,
    /// The smallest part (files up to it go whole).
    pub part_size: u64,
    /// Requests (parts, or whole files) in flight at a time, at least 1.
    pub jobs: usize,
}

impl Options {
    pub fn new(data: impl Into<PathBuf>, dest: impl Into<String>) -> Options {
        Options {
            data: data.into(),
            dest: dest.into(),
            journal: None,
            delete: false,
            keep_free: None,
            rate: None,
            part_size: upload::PART_SIZE,
            jobs: JOBS,
        }
    }
}

/// Told of the job's progress (the CLI draws it on stderr).
pub trait Progress {
    /// A trace begins: its bytes, and how many of them were already sent before.
    fn trace(&self, name: &str, bytes: u64, done: u64);
    /// `n` more bytes sent.
    fn sent(&self, n: u64);
    /// A line for the user (a skipped trace, a deletion).
    fn note(&self, line: &str);
    /// Whether the job must stop now (the daemon shuts down, or recording started under
    /// `when: idle`): asked before each part and trace, and while the rate cap waits. The
    /// job then ends with [`OffloadError::Stopped`], its journal saved: the next run goes on.
    fn stopped(&self) -> bool {
        false
    }
}

/// What was left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skipped {
    /// A daemon records into it.
    Recording,
    /// Cut by a crash and not recovered.
    Unfinished,
    /// Its event log has a line that is not an event (not its torn last line): whether its
    /// recording was closed cannot be told.
    Unreadable,
}

/// What the job did.
#[derive(Debug, Default)]
pub struct Summary {
    /// Traces verified in this run.
    pub traces: Vec<String>,
    /// Traces verified in earlier runs (not sent again).
    pub already: usize,
    pub skipped: Vec<(PathBuf, Skipped)>,
    pub files: u64,
    pub bytes_sent: u64,
    /// Bytes sent again: the parts in flight when an earlier run ended, and the bytes of a
    /// changed file that the store already held of its older version.
    pub bytes_resent: u64,
    /// Files (`trace/path`) sent again in this run because they changed after they were
    /// verified: the destination held an older version of each.
    pub replaced: Vec<String>,
    pub deleted: Vec<PathBuf>,
    /// `--keep-free` could not be reached with verified traces alone.
    pub keep_free_unreached: bool,
    pub elapsed: Duration,
}

impl Summary {
    /// Whether something is left for a person (exit code 1): a trace cut by a crash or
    /// whose event log does not parse, or free space `--keep-free` could not reach.
    pub fn left_something(&self) -> bool {
        self.keep_free_unreached
            || self
                .skipped
                .iter()
                .any(|(_, s)| matches!(s, Skipped::Unfinished | Skipped::Unreadable))
    }
}

/// One run of the job.
pub(crate) struct Job<'a> {
    pub(crate) store: Arc<Store>,
    pub(crate) journal: Journal,
    pub(crate) journal_path: PathBuf,
    pub(crate) pacer: Option<rate::Pacer>,
    pub(crate) progress: &'a dyn Progress,
    pub(crate) summary: Summary,
    pub(crate) part_size: u64,
    pub(crate) jobs: usize,
    /// The parts the last run had in flight.
    pub(crate) was_in_flight: Vec<InFlight>,
    /// Files (trace, index) sent and verified by this run: not checked again before their
    /// trace is called verified (that check is for objects sent by an earlier run).
    pub(crate) verified_now: std::collections::BTreeSet<(String, usize)>,
}

impl Job<'_> {
    pub(crate) fn save(&self) -> Result<(), OffloadError> {
        self.journal.save(&self.journal_path)
    }
}

/// Runs the offload.
pub fn run(opts: &Options, progress: &dyn Progress) -> Result<Summary, OffloadError> {
    let t0 = Instant::now();
    if !opts.data.is_dir() {
        return Err(OffloadError::NoData {
            path: opts.data.clone(),
        });
    }
    let journal_path = opts
        .journal
        .clone()
        .unwrap_or_else(|| journal::default_path(&opts.data, &opts.dest));
    // Before the store: a second job on this journal is refused at once.
    let _lock = journal::lock(&journal_path)?;
    let store = Store::open(&opts.dest)?;
    store.check()?;
    let mut journal = Journal::load(&journal_path, &opts.dest)?;
    let was_in_flight = std::mem::take(&mut journal.in_flight);
    let mut job = Job {
        store: Arc::new(store),
        journal,
        journal_path,
        pacer: opts
            .rate
            .map(|r| rate::Pacer::new(r, upload::part_size(opts.part_size, 0))),
        progress,
        summary: Summary::default(),
        part_size: opts.part_size,
        jobs: opts.jobs.max(1),
        was_in_flight,
        verified_now: Default::default(),
    };
    // A kill between verification and deletion: the deletion is finished first.
    if opts.delete {
        job.delete_verified(&opts.data)?;
    }
    job.keep_free(&opts.data, opts.keep_free)?;
    // A destination directory below DATA holds copies, not traces to send.
    let dest_dir = (!opts.dest.starts_with("s3://"))
        .then(|| Path::new(&opts.dest).canonicalize().ok())
        .flatten();
    for (dir, name) in plan::traces(&opts.data)? {
        if let Some(d) = &dest_dir {
            if dir.canonicalize().is_ok_and(|c| c.starts_with(d)) {
                continue;
            }
        }
        if progress.stopped() {
            return Err(OffloadError::Stopped);
        }
        match select::trace_state(&dir) {
            TraceState::Sealed => {}
            TraceState::Recording { data_root } => {
                progress.note(&format!(
                    "{}: skipped: being recorded (a daemon holds {})",
                    dir.display(),
                    data_root.display()
                ));
                job.summary.skipped.push((dir, Skipped::Recording));
                continue;
            }
            TraceState::Unfinished { torn_tail } => {
                progress.note(&format!(
                    "{}: not offloaded: its recording was cut by a crash (a `start` without a \
                     `stop` in _roverlog/events.jsonl{}, and no daemon holds {}); starting the \
                     daemon there recovers it (torn tails cut, the trace closed)",
                    dir.display(),
                    if torn_tail {
                        ", whose last line the crash tore"
                    } else {
                        ""
                    },
                    dir.parent().unwrap_or(Path::new(".")).display()
                ));
                job.summary.skipped.push((dir, Skipped::Unfinished));
                continue;
            }
            TraceState::Unreadable(problem) => {
                let remedy = match problem {
                    select::LogProblem::Read { .. } => "",
                    _ => "; mend or remove that line, then offload again",
                };
                progress.note(&format!(
                    "{}: not offloaded: {problem}, so whether its recording was closed cannot \
                     be told{remedy}",
                    dir.display()
                ));
                job.summary.skipped.push((dir, Skipped::Unreadable));
                continue;
            }
        }
        if job.journal.traces.get(&name).is_some_and(|t| t.verified) {
            job.summary.already += 1;
        } else {
            job.offload_trace(&dir, &name)?;
        }
        if opts.delete {
            job.delete_verified(&opts.data)?;
        }
        job.keep_free(&opts.data, opts.keep_free)?;
    }
    job.summary.elapsed = t0.elapsed();
    Ok(job.summary)
}

impl Job<'_> {
    /// Offloads one trace: planned again first when the last run found files of it changed
    /// (`replan`); a file found changed now fails the run, journalled for the next one.
    fn offload_trace(&mut self, dir: &Path, name: &str) -> Result<(), OffloadError> {
        if self
            .journal
            .traces
            .get(name)
            .is_some_and(|t| !t.changed.is_empty() || t.changed_since_verified)
        {
            self.replan(dir, name)?;
        }
        match self.send_trace(dir, name) {
            Err(OffloadError::Changed { path, what }) => {
                self.mark_changed(dir, name, &path)?;
                Err(OffloadError::Changed { path, what })
            }
            r => r,
        }
    }

    /// Sends every file of the trace not sent yet, its CSV, checks every object once more,
    /// and marks it verified.
    fn send_trace(&mut self, dir: &Path, name: &str) -> Result<(), OffloadError> {
        let planned = self
            .journal
            .traces
            .get(name)
            .is_some_and(|t| !t.files.is_empty());
        if !planned {
            let entry = plan::plan(dir)?;
            self.journal.traces.insert(name.to_string(), entry);
            self.save()?;
        }
        let entry = &self.journal.traces[name];
        let done: u64 = entry
            .files
            .iter()
            .map(|f| match &f.state {
                FileState::Done { .. } => f.size,
                FileState::Uploading {
                    part_size, parts, ..
                } => (*part_size * parts.iter().flatten().count() as u64).min(f.size),
                FileState::Pending => 0,
            })
            .sum();
        self.progress.trace(name, entry.bytes, done);
        self.send_files(name, dir)?;
        self.send_csv(dir, name)?;
        // Every object sent by an earlier run once more: one changed on the store since
        // (between two runs) is caught before the trace is called verified. (Those this run
        // sent were checked as they completed.) Every local file is still as planned.
        let files = self.journal.traces[name].files.clone();
        for (i, f) in files.iter().enumerate() {
            let path = dir.join(&f.path);
            upload::check_unchanged(&path, f)?;
            if self.verified_now.contains(&(name.to_string(), i)) {
                continue;
            }
            if let Err(e) = self.check_again(name, dir, f) {
                // Sent again by the next run (the object at the store is not this file).
                self.journal.traces.get_mut(name).expect("planned").files[i].state =
                    FileState::Pending;
                self.save()?;
                return Err(e);
            }
        }
        let t = self.journal.traces.get_mut(name).expect("planned");
        t.fingerprint = Some(plan::fingerprint(&t.files));
        t.files.clear();
        t.verified = true;
        self.save()?;
        self.summary.traces.push(name.to_string());
        Ok(())
    }

    /// A file's object once more, against the journal: its size, and its ETag (S3; a
    /// directory's objects were read back as they went).
    fn check_again(
        &mut self,
        name: &str,
        dir: &Path,
        f: &journal::FileEntry,
    ) -> Result<(), OffloadError> {
        let FileState::Done { etag, md5 } = &f.state else {
            unreachable!("every file was sent before");
        };
        let key = format!("{name}/{}", f.path);
        let path = dir.join(&f.path);
        if self.store.verifies_on_receipt() {
            return self.verify(&key, &path, f.size, etag.as_deref(), md5);
        }
        match self.store.head(&key)? {
            Some(h) if h.size == f.size => Ok(()),
            other => Err(OffloadError::Mismatch {
                path,
                key,
                what: "size".into(),
                expected: f.size.to_string(),
                got: other.map_or("missing".into(), |h| h.size.to_string()),
            }),
        }
    }

    /// Upstream's `file,md5` CSV of the trace, beside it: `<trace>.md5.csv`.
    fn send_csv(&mut self, dir: &Path, name: &str) -> Result<(), OffloadError> {
        let rows: Vec<(String, String)> = self.journal.traces[name]
            .files
            .iter()
            .filter_map(|f| match &f.state {
                FileState::Done { md5, .. } => Some((f.path.clone(), md5.clone())),
                _ => None,
            })
            .collect();
        let text = roverlog_core::format::checksum::csv_text(
            "md5",
            rows.iter().map(|(p, m)| (p.as_str(), m.as_str())),
        );
        let key = format!("{name}.md5.csv");
        let md5 = roverlog_store::md5_hex(text.as_bytes());
        let size = text.len() as u64;
        self.journal.sent += size;
        self.save()?;
        let info = self.store.put(&key, text.into_bytes())?;
        self.summary.bytes_sent += size;
        if info.etag.as_deref().is_some_and(|e| e != md5) {
            return Err(OffloadError::Mismatch {
                path: dir.to_path_buf(),
                key,
                what: "the MD5 CSV as received (ETag)".into(),
                expected: md5,
                got: info.etag.unwrap_or_default(),
            });
        }
        self.verify(&key, dir, size, info.etag.as_deref(), &md5)
    }
}
