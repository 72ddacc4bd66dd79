//! The files of one trace to the store, `--jobs` requests at a time: whole files and the
//! parts of large ones go concurrently, at most `jobs` in flight, each holding its part's
//! bytes (so memory is bounded by `jobs + 1` parts).
//!
//! One thread (the caller's) keeps every promise of the sequential job: it reads each file
//! in order (so a file's MD5 is its bytes in order, and parts acknowledged before a kill are
//! read again and must hash the same), waits for the rate cap, books each part in flight in
//! the journal before it goes, and records a part only after its ETag matched the MD5 of
//! what was read; it completes and verifies each file once its last part is acknowledged.
//! `jobs` worker threads only hand bodies to the store. A kill at any moment then re-sends
//! at most the parts booked in flight. On an error (or a stop) nothing more goes, the parts
//! in flight are waited for and those acknowledged are recorded, then the first error is
//! returned.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use md5::Digest;
use roverlog_store::{
    md5_hex, multipart_etag, to_hex, ObjectInfo, PartTag, Store, StoreError, UploadId,
};

use crate::journal::{FileState, InFlight, PartEntry};
use crate::upload::{check_unchanged, part_size, read_at, sending};
use crate::{Job, OffloadError};

/// One request for a worker: a part of a file, or a whole file.
struct Work {
    file: usize,
    /// `None`: the whole object (`put`).
    part: Option<usize>,
    key: String,
    upload: Option<UploadId>,
    /// Where the part starts in the object.
    offset: u64,
    data: Vec<u8>,
    md5: String,
    /// Of these bytes, how many were in flight when the last run ended (sent again).
    again: u64,
}

/// What the store answered for a [`Work`].
struct Answer {
    file: usize,
    part: Option<usize>,
    bytes: u64,
    md5: String,
    again: u64,
    result: Result<Acked, StoreError>,
}

enum Acked {
    Part(PartTag),
    Whole(ObjectInfo),
}

fn worker(store: &Store, work: &Mutex<Receiver<Work>>, answers: &mpsc::Sender<Answer>) {
    loop {
        // The lock is held only to take the next request, not while it is sent.
        let next = work.lock().expect("work queue").recv();
        let Ok(w) = next else { return };
        let bytes = w.data.len() as u64;
        let data = crate::knobs::corrupt(&w.key, w.part.unwrap_or(0), w.data);
        let result = match (w.part, &w.upload) {
            (Some(k), Some(upload)) => store
                .put_part(&w.key, upload, k, w.offset, data)
                .map(Acked::Part),
            _ => store.put(&w.key, data).map(Acked::Whole),
        };
        let answer = Answer {
            file: w.file,
            part: w.part,
            bytes,
            md5: w.md5,
            again: w.again,
            result,
        };
        if answers.send(answer).is_err() {
            return;
        }
    }
}

/// A file being sent.
struct OpenFile {
    path: PathBuf,
    key: String,
    f: File,
    size: u64,
    /// Multipart: the upload and its part size; `None`: one whole object.
    upload: Option<(UploadId, u64)>,
    /// Parts (1 for a whole object).
    count: usize,
    /// The next part to read.
    next: usize,
    /// The file's MD5, fed in order as parts are read.
    whole: md5::Md5,
    /// Parts read to be sent and not answered yet.
    outstanding: usize,
    /// A whole object's answer: (ETag, MD5).
    answered: Option<(Option<String>, String)>,
    failed: bool,
}

/// The loop's state: files left, files open, requests in flight, the first error.
struct State<'t> {
    trace: &'t str,
    dir: &'t Path,
    queue: VecDeque<usize>,
    open: BTreeMap<usize, OpenFile>,
    in_flight: usize,
    error: Option<OffloadError>,
    answers: Receiver<Answer>,
    /// Files started again in this run (their upload was lost): once each.
    restarted: BTreeSet<usize>,
    /// Answers recorded in the journal in memory, not yet written.
    unsaved: bool,
}

impl State<'_> {
    fn fail(&mut self, e: OffloadError) {
        self.error.get_or_insert(e);
    }
}

impl Job<'_> {
    /// Sends every file of `trace` (at `dir`) not done yet, `self.jobs` requests at a time,
    /// and verifies each; the journal then says `done` for each.
    pub(crate) fn send_files(&mut self, trace: &str, dir: &Path) -> Result<(), OffloadError> {
        let queue: VecDeque<usize> = self.journal.traces[trace]
            .files
            .iter()
            .enumerate()
            .filter(|(_, f)| !matches!(f.state, FileState::Done { .. }))
            .map(|(i, _)| i)
            .collect();
        if queue.is_empty() {
            return Ok(());
        }
        let jobs = self.jobs.max(1);
        let (work_tx, work_rx) = mpsc::sync_channel::<Work>(jobs);
        let work_rx = Arc::new(Mutex::new(work_rx));
        let (answer_tx, answer_rx) = mpsc::channel::<Answer>();
        std::thread::scope(|s| {
            for _ in 0..jobs {
                let (store, work, answers) = (
                    Arc::clone(&self.store),
                    Arc::clone(&work_rx),
                    answer_tx.clone(),
                );
                s.spawn(move || worker(&store, &work, &answers));
            }
            drop(answer_tx);
            let mut st = State {
                trace,
                dir,
                queue,
                open: BTreeMap::new(),
                in_flight: 0,
                error: None,
                answers: answer_rx,
                restarted: BTreeSet::new(),
                unsaved: false,
            };
            loop {
                while st.error.is_none() && st.in_flight < jobs {
                    if self.progress.stopped() {
                        st.fail(OffloadError::Stopped);
                        break;
                    }
                    match self.next_work(&mut st) {
                        Ok(Some(w)) => {
                            if let Err(e) = self.start(&mut st, w, &work_tx) {
                                st.fail(e);
                            }
                        }
                        Ok(None) => break,
                        Err(e) => st.fail(e),
                    }
                }
                if st.unsaved {
                    st.unsaved = false;
                    if let Err(e) = self.save() {
                        st.fail(e);
                    }
                }
                if st.in_flight == 0 {
                    break;
                }
                let a = st.answers.recv().expect("a worker answers every request");
                self.answered(&mut st, a);
            }
            drop(work_tx);
            match st.error {
                Some(e) => Err(e),
                None => Ok(()),
            }
        })
    }

    /// Waits for the rate cap (recording answers meanwhile), books the request in flight
    /// (the journal written), and hands it to a worker.
    fn start(
        &mut self,
        st: &mut State,
        mut w: Work,
        tx: &mpsc::SyncSender<Work>,
    ) -> Result<(), OffloadError> {
        let n = w.data.len() as u64;
        if let Some(p) = &mut self.pacer {
            let until = Instant::now() + p.book(n, Instant::now());
            loop {
                let now = Instant::now();
                if now >= until {
                    break;
                }
                if self.progress.stopped() {
                    return Err(OffloadError::Stopped);
                }
                match st
                    .answers
                    .recv_timeout((until - now).min(Duration::from_millis(100)))
                {
                    Ok(a) => self.answered(st, a),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => unreachable!("workers outlive the loop"),
                }
            }
            if let Some(e) = st.error.take() {
                return Err(e);
            }
        }
        let entry = &self.journal.traces[st.trace].files[w.file];
        let (file, older) = (entry.path.clone(), entry.again_below);
        // Bytes the store held of the file's older version go again too (`replan`).
        let again_older = older.saturating_sub(w.offset).min(n);
        w.again = self
            .book(st.trace, &file, w.part.unwrap_or(0), n)
            .max(again_older);
        self.save()?;
        st.unsaved = false;
        tx.send(w).expect("workers outlive the loop");
        st.in_flight += 1;
        Ok(())
    }

    /// Books `bytes` of part `part` of `file` as in flight (written with the next save);
    /// returns how many of them are sent again (the same part was in flight when the last
    /// run ended).
    fn book(&mut self, trace: &str, file: &str, part: usize, bytes: u64) -> u64 {
        let now = InFlight {
            trace: trace.to_string(),
            file: file.to_string(),
            part,
            bytes,
        };
        let again = match self.was_in_flight.iter().position(|f| *f == now) {
            Some(i) => {
                self.was_in_flight.swap_remove(i);
                bytes
            }
            None => 0,
        };
        self.journal.in_flight.push(now);
        self.journal.sent += bytes;
        again
    }

    /// The next request: the next part (or whole object) of the first file not fully read,
    /// opening it (and starting its upload) when it is reached; parts acknowledged by an
    /// earlier run are read again, must hash the same, and are skipped.
    fn next_work(&mut self, st: &mut State) -> Result<Option<Work>, OffloadError> {
        loop {
            let Some(&i) = st.queue.front() else {
                return Ok(None);
            };
            if !st.open.contains_key(&i) {
                let o = self.open_file(st.trace, st.dir, i)?;
                st.open.insert(i, o);
            }
            let acked = match &self.journal.traces[st.trace].files[i].state {
                FileState::Uploading { parts, .. } => parts.clone(),
                _ => Vec::new(),
            };
            let o = st.open.get_mut(&i).expect("opened");
            if o.next == o.count {
                st.queue.pop_front();
                self.finish_if_done(st, i)?;
                continue;
            }
            let Some((upload, part_size)) = o.upload.clone() else {
                let data = read_at(&o.f, &o.path, 0, o.size)?;
                o.next = 1;
                o.outstanding += 1;
                // Every unit of the file is out: the queue moves on (else, answered before
                // the next look, the file would be opened and sent again).
                st.queue.pop_front();
                return Ok(Some(Work {
                    file: i,
                    part: None,
                    key: o.key.clone(),
                    upload: None,
                    offset: 0,
                    md5: md5_hex(&data),
                    data,
                    again: 0,
                }));
            };
            let k = o.next;
            let off = k as u64 * part_size;
            let data = read_at(&o.f, &o.path, off, part_size.min(o.size - off))?;
            let md5 = md5_hex(&data);
            o.whole.update(&data);
            o.next += 1;
            if let Some(Some(p)) = acked.get(k) {
                if p.md5 != md5 {
                    return Err(OffloadError::Changed {
                        path: o.path.clone(),
                        what: format!("part {} (bytes {off}..) differs from what was sent", k + 1),
                    });
                }
                continue;
            }
            // Counted from here: the file is not completed while this part waits for the
            // rate cap either.
            o.outstanding += 1;
            if o.next == o.count {
                st.queue.pop_front();
            }
            return Ok(Some(Work {
                file: i,
                part: Some(k),
                key: o.key.clone(),
                upload: Some(upload),
                offset: off,
                md5,
                data,
                again: 0,
            }));
        }
    }

    /// Opens file `i` of `trace`: checks it is as planned, and starts its upload in parts
    /// (journalled) when it is larger than a part and none was started.
    fn open_file(&mut self, trace: &str, dir: &Path, i: usize) -> Result<OpenFile, OffloadError> {
        let entry = self.journal.traces[trace].files[i].clone();
        let path = dir.join(&entry.path);
        let key = format!("{trace}/{}", entry.path);
        check_unchanged(&path, &entry)?;
        let f = File::open(&path).map_err(|e| OffloadError::Read {
            path: path.clone(),
            error: e,
        })?;
        let upload = if entry.size <= self.part_size {
            None
        } else if let FileState::Uploading {
            upload, part_size, ..
        } = &entry.state
        {
            Some((UploadId(upload.clone()), *part_size))
        } else {
            let upload = self
                .store
                .create_upload(&key)
                .map_err(sending(&path, &key))?;
            let part_size = part_size(self.part_size, entry.size);
            let count = entry.size.div_ceil(part_size) as usize;
            self.journal.traces.get_mut(trace).expect("planned").files[i].state =
                FileState::Uploading {
                    upload: upload.0.clone(),
                    part_size,
                    parts: vec![None; count],
                };
            self.save()?;
            Some((upload, part_size))
        };
        let count = upload
            .as_ref()
            .map_or(1, |(_, ps)| entry.size.div_ceil(*ps) as usize);
        Ok(OpenFile {
            path,
            key,
            f,
            size: entry.size,
            upload,
            count,
            next: 0,
            whole: md5::Md5::new(),
            outstanding: 0,
            answered: None,
            failed: false,
        })
    }

    /// Records an answer: the part (or object) after its ETag matched what was read.
    fn answered(&mut self, st: &mut State, a: Answer) {
        st.in_flight -= 1;
        let i = a.file;
        if let Some(o) = st.open.get_mut(&i) {
            o.outstanding -= 1;
        }
        if let Err(e) = self.record(st, a) {
            if let Some(o) = st.open.get_mut(&i) {
                o.failed = true;
            }
            st.fail(e);
            return;
        }
        if let Err(e) = self.finish_if_done(st, i) {
            st.fail(e);
        }
    }

    fn record(&mut self, st: &mut State, a: Answer) -> Result<(), OffloadError> {
        let o = st.open.get_mut(&a.file).expect("open while in flight");
        let (path, key) = (o.path.clone(), o.key.clone());
        let acked = match a.result {
            Err(StoreError::NoSuchUpload { .. }) => {
                // The store dropped the upload (expired, aborted): start the file again.
                self.journal
                    .traces
                    .get_mut(st.trace)
                    .expect("planned")
                    .files[a.file]
                    .state = FileState::Pending;
                self.save()?;
                return Err(OffloadError::UploadLost { path, key });
            }
            Err(e) => return Err(sending(&path, &key)(e)),
            Ok(acked) => acked,
        };
        self.summary.bytes_sent += a.bytes;
        self.summary.bytes_resent += a.again;
        self.progress.sent(a.bytes);
        let etag = match &acked {
            Acked::Part(tag) => Some(tag.etag.clone()),
            Acked::Whole(info) => info.etag.clone(),
        };
        if let Some(etag) = etag.filter(|e| *e != a.md5) {
            let what = match a.part {
                Some(k) => format!("part {}: the store received other bytes (its ETag against the MD5 of what was read)", k + 1),
                None => "the store received other bytes (ETag against the MD5 of what was read)".into(),
            };
            return Err(OffloadError::Mismatch {
                path,
                key,
                what,
                expected: a.md5,
                got: etag,
            });
        }
        let file = &mut self
            .journal
            .traces
            .get_mut(st.trace)
            .expect("planned")
            .files[a.file];
        let part = a.part.unwrap_or(0);
        let name = file.path.clone();
        match acked {
            Acked::Part(tag) => {
                if let FileState::Uploading { parts, .. } = &mut file.state {
                    parts[part] = Some(PartEntry {
                        md5: a.md5,
                        token: tag.token,
                    });
                }
            }
            Acked::Whole(info) => o.answered = Some((info.etag, a.md5)),
        }
        self.journal
            .in_flight
            .retain(|f| !(f.trace == st.trace && f.file == name && f.part == part));
        // Written with the next booking (or below, before the loop waits): until then the
        // part is still booked in flight, so a kill re-sends it, within the bound.
        st.unsaved = true;
        Ok(())
    }

    /// Completes file `i` once every part was read and answered: the upload completed, the
    /// object checked against the file, the journal marks it `done`.
    fn finish_if_done(&mut self, st: &mut State, i: usize) -> Result<(), OffloadError> {
        let Some(o) = st.open.get(&i) else {
            return Ok(());
        };
        if o.next < o.count || o.outstanding > 0 || o.failed {
            return Ok(());
        }
        let o = st.open.remove(&i).expect("open");
        // Before the parts become an object: a file changed meanwhile is not completed (the
        // next run aborts its upload, `replan`).
        let entry = self.journal.traces[st.trace].files[i].clone();
        check_unchanged(&o.path, &entry)?;
        let (etag, md5) = match &o.upload {
            None => o.answered.clone().expect("answered"),
            Some((upload, _)) => match self.complete(st.trace, i, &o, upload)? {
                Some(done) => done,
                None => {
                    // The store dropped the upload and holds no object (e.g. a completion
                    // refused for a full bucket, between two runs): the file starts again,
                    // once per run.
                    self.journal
                        .traces
                        .get_mut(st.trace)
                        .expect("planned")
                        .files[i]
                        .state = FileState::Pending;
                    self.save()?;
                    if !st.restarted.insert(i) {
                        return Err(OffloadError::UploadLost {
                            path: o.path,
                            key: o.key,
                        });
                    }
                    st.queue.push_front(i);
                    return Ok(());
                }
            },
        };
        check_unchanged(&o.path, &entry)?;
        self.verify(&o.key, &o.path, entry.size, etag.as_deref(), &md5)?;
        let file = &mut self
            .journal
            .traces
            .get_mut(st.trace)
            .expect("planned")
            .files[i];
        file.state = FileState::Done { etag, md5 };
        file.again_below = 0;
        if std::mem::take(&mut file.replaced) {
            self.summary
                .replaced
                .push(format!("{}/{}", st.trace, file.path));
        }
        self.save()?;
        st.unsaved = false;
        self.verified_now.insert((st.trace.to_string(), i));
        self.summary.files += 1;
        Ok(())
    }

    /// Makes the object from its parts; its ETag must be that of the parts sent, in order.
    /// `None`: the store no longer knows the upload and has no object.
    fn complete(
        &mut self,
        trace: &str,
        i: usize,
        o: &OpenFile,
        upload: &UploadId,
    ) -> Result<Option<(Option<String>, String)>, OffloadError> {
        let (path, key) = (o.path.as_path(), o.key.as_str());
        let parts: Vec<PartEntry> = match &self.journal.traces[trace].files[i].state {
            FileState::Uploading { parts, .. } => parts.iter().flatten().cloned().collect(),
            _ => unreachable!("a file in parts is uploading"),
        };
        assert_eq!(parts.len(), o.count, "every part acknowledged");
        let md5 = to_hex(&o.whole.clone().finalize());
        let expected = multipart_etag(parts.iter().map(|p| p.md5.as_str()));
        let tags: Vec<PartTag> = parts
            .iter()
            .map(|p| PartTag {
                etag: p.md5.clone(),
                token: p.token.clone(),
            })
            .collect();
        let etag = match self.store.complete_upload(key, upload, &tags) {
            Ok(info) => info.etag,
            // Completed before the last run ended (what is there is checked below), or gone.
            Err(StoreError::NoSuchUpload { .. }) => match self.store.head(key)? {
                Some(h) => h.etag,
                None => return Ok(None),
            },
            Err(e) => return Err(sending(path, key)(e)),
        };
        if self.store.verifies_on_receipt() && etag.as_deref() != Some(expected.as_str()) {
            return Err(OffloadError::Mismatch {
                path: path.to_path_buf(),
                key: key.to_string(),
                what: "the completed object is not the parts sent (ETag)".into(),
                expected,
                got: etag.unwrap_or_else(|| "no object".into()),
            });
        }
        Ok(Some((etag, md5)))
    }
}
