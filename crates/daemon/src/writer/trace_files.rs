//! The writer's part of a trace switch: opening the sensor's directory in a trace (created,
//! or resumed after a crash with its torn tail recovered) and closing it (finished, synced,
//! or removed when a kill left it unfinished before its first sample).

use super::*;
use crate::sidecar::{self, Sidecar, SidecarError};

impl Writer {
    pub(super) fn open(
        &mut self,
        trace: PathBuf,
        events: Arc<EventLog>,
        files: &[Sidecar],
    ) -> Result<u64, WriterError> {
        self.stats.clear_failed();
        let dir = trace.join(&self.sensor);
        let mut resumed = false;
        let mut recv = self.recv;
        let is_link = std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link && dir.join(META_FILE).exists() {
            // Resumed: its sidecars must be the connection's (or be missing), before anything
            // of it is touched.
            match sidecar::reconcile(&dir, files) {
                Ok(_) => {}
                Err(SidecarError::Io(source)) => {
                    return self.open_failed(&trace, dir, &events, source)
                }
                Err(source) => {
                    let failure = SensorFailure::Sidecar { dir, source };
                    return Err(self.refuse_open(failure, &events));
                }
            }
        }
        let opened = if is_link {
            // Someone else put it there; following it would write (and recover, i.e.
            // truncate) files outside the trace.
            Err(roverlog_core::Error::io(
                &dir,
                std::io::Error::other("is a symbolic link, not a sensor directory of this trace"),
            ))
        } else if dir.exists() && !dir.join(META_FILE).exists() {
            // `create` was interrupted (a crash) before `meta.json` was in place: no sample
            // was ever written there. Start it again.
            remove_unfinished_sensor_dir(&dir, files).and_then(|()| self.create(&dir, files))
        } else if dir.exists() {
            resumed = true;
            // Files this writer gave up on a failure: nothing past their last good fsync is
            // trusted, even where the cut after the failure could not be made then.
            let given_up = self.given_up.take().filter(|(d, _)| *d == dir);
            self.cut_given_up(&dir, given_up, &events).and_then(|()| {
                FileWriter::resume(&dir, self.resume_meta(&dir, &mut recv), &self.settings.opts)
                    .map(|(w, rec)| {
                        if !rec.cuts.is_empty() || !rec.left_alone.is_empty() {
                            let cuts: Vec<String> =
                                rec.cuts.iter().map(|c| c.to_string()).collect();
                            events.write(Event::Recovered {
                                sensor: self.sensor.clone(),
                                len: rec.len,
                                cuts,
                                left_alone: rec.left_alone.iter().map(|p| p.to_string()).collect(),
                                after: None,
                            });
                        }
                        w
                    })
            })
        } else {
            self.create(&dir, files)
        };
        match opened {
            Ok(files) => {
                self.settings.faults.clear(&self.sensor);
                let n = files.len();
                self.stats.samples.store(n, Relaxed);
                // Files found after a crash were flushed, not necessarily fsynced: they count
                // as durable once the fsync below is done.
                let durable = if resumed { 0 } else { files.durable_len() };
                self.stats.durable.store(durable, Relaxed);
                self.stats
                    .bytes
                    .store(n * self.fixed_sample_bytes(), Relaxed);
                let now = Instant::now();
                self.open = Some(Open {
                    files,
                    recv,
                    events,
                    unflushed: false,
                    unsynced_bytes: 0,
                    last_flush: now,
                    last_sync: now,
                });
                if resumed {
                    self.sync()?;
                }
                Ok(n)
            }
            Err(source) => self.open_failed(&trace, dir, &events, source),
        }
    }

    /// A new sensor directory: the channel files, then the connection's sidecar files
    /// (durably), then `meta.json`.
    fn create(
        &self,
        dir: &std::path::Path,
        files: &[Sidecar],
    ) -> roverlog_core::Result<FileWriter> {
        FileWriter::create_with(dir, self.meta.clone(), &self.settings.opts, |d| {
            sidecar::write_all(d, files)
        })
    }

    /// Opening the sensor's directory failed with `source`: the sensor fails (a disk that
    /// refuses is noticed for the alarm).
    fn open_failed(
        &mut self,
        trace: &std::path::Path,
        dir: PathBuf,
        events: &EventLog,
        source: roverlog_core::Error,
    ) -> Result<u64, WriterError> {
        if source.io_error().and_then(|e| e.raw_os_error()).is_some() {
            // The disk refuses (EIO after a shutdown, EROFS, ENOSPC): alarm, probe.
            let durable = self.given_up.as_ref().map_or(0, |g| g.1);
            let fault =
                crate::disk_fault::Fault::new(&self.sensor, "open", &source, durable, trace);
            self.notice(fault, &source.to_string());
        }
        Err(self.refuse_open(SensorFailure::Open { dir, source }, events))
    }

    /// The sensor's directory was not opened: the sensor fails with `failure`, logged.
    fn refuse_open(&mut self, failure: SensorFailure, events: &EventLog) -> WriterError {
        let failure = Arc::new(failure);
        let msg = failure.to_string();
        tracing::error!(sensor = %self.sensor, "{msg}");
        events.write(Event::Error {
            sensor: self.sensor.clone(),
            error: msg.clone(),
        });
        self.stats.set_failed(failure.clone());
        WriterError::Failed(failure)
    }

    /// Cuts files this writer gave up on a failure back to their last good fsync before they
    /// are resumed: nothing past it is trusted, even where the cut right after the failure
    /// could not be made (a disk that came back). An error refuses the resume.
    fn cut_given_up(
        &mut self,
        dir: &std::path::Path,
        given_up: Option<(PathBuf, u64)>,
        events: &EventLog,
    ) -> roverlog_core::Result<()> {
        let Some((_, durable)) = given_up else {
            return Ok(());
        };
        let r = recover_sensor_to(dir, Some(durable)).inspect_err(|_| {
            // Still owed: the next reopen tries again.
            self.given_up = Some((dir.to_path_buf(), durable));
        })?;
        if !r.cuts.is_empty() {
            events.write(Event::Recovered {
                sensor: self.sensor.clone(),
                len: r.len,
                cuts: r.cuts.iter().map(|c| c.to_string()).collect(),
                left_alone: Vec::new(),
                after: Some("write failure".into()),
            });
        }
        Ok(())
    }

    /// The channels to resume the sensor in `dir` with: ours, or ours without `ts_recv` when
    /// the trace was written by a daemon that did not record receive times (clears `recv`).
    fn resume_meta(&self, dir: &std::path::Path, recv: &mut bool) -> SensorMeta {
        if !self.recv {
            return self.meta.clone();
        }
        let mut without = self.meta.clone();
        without.channels.pop();
        let on_disk = SensorMeta::read(dir).ok().map(|mut m| {
            if m.get(roverlog_core::format::TS_CHANNEL).is_none() {
                m.channels.insert(
                    0,
                    (
                        roverlog_core::format::TS_CHANNEL.into(),
                        roverlog_core::format::ChannelMeta::timestamps(),
                    ),
                );
            }
            m
        });
        let mut without_ts = without.clone();
        if without_ts.get(roverlog_core::format::TS_CHANNEL).is_none() {
            without_ts.channels.insert(
                0,
                (
                    roverlog_core::format::TS_CHANNEL.into(),
                    roverlog_core::format::ChannelMeta::timestamps(),
                ),
            );
        }
        if on_disk.map(|m| m.for_disk()) == Some(without_ts.for_disk()) {
            *recv = false;
            return without;
        }
        self.meta.clone()
    }

    /// Bytes of a resumed sample when every channel is fixed-size (else only `ts` is known
    /// without reading the files, and `bytes` counts from the resume on).
    fn fixed_sample_bytes(&self) -> u64 {
        8 + self
            .meta
            .data_channels()
            .take(self.layouts[0].channel_count())
            .filter(|(_, c)| c.format.is_fixed_size())
            .map(|(_, c)| c.sample_bytes() as u64)
            .sum::<u64>()
    }

    pub(super) fn close(&mut self) -> Result<u64, WriterError> {
        // Every frame still compressing belongs to this trace.
        self.append_all();
        let Some(o) = self.open.take() else {
            return match self.stats.failure() {
                Some(f) => Err(WriterError::Failed(f)),
                None => Ok(0),
            };
        };
        let dir = o.files.dir().to_path_buf();
        self.fallback.report(&o.events, &self.sensor);
        match o.files.finish() {
            Ok(n) => {
                self.stats.durable.store(n, Relaxed);
                self.stats.last_fsync_ms.store(
                    Instant::now()
                        .duration_since(self.settings.epoch)
                        .as_millis() as u64,
                    Relaxed,
                );
                Ok(n)
            }
            Err(e) => {
                let e = Arc::new(e);
                let failure = Arc::new(SensorFailure::Io {
                    what: "finish",
                    source: e.clone(),
                });
                let msg = failure.to_string();
                tracing::error!(sensor = %self.sensor, "{msg}");
                o.events.write(Event::Error {
                    sensor: self.sensor.clone(),
                    error: msg.clone(),
                });
                self.stats.set_failed(failure.clone());
                let durable = self.stats.durable.load(Relaxed);
                if let Some(trace) = dir.parent() {
                    let fault =
                        crate::disk_fault::Fault::new(&self.sensor, "finish", &e, durable, trace);
                    self.notice(fault, &msg);
                }
                self.recover_after_failure(&dir, &o.events, durable);
                Err(WriterError::Failed(failure))
            }
        }
    }
}

/// Removes what an interrupted `SensorWriter::create` leaves in `dir`, then `dir`: `create`
/// writes `meta.json` last, and no sample is appended before it returns, so every file there
/// is a fresh channel file holding no sample (empty, an `lzmaf` index of just its first
/// offset, an `mjpg` video of no frame), an empty blob directory, the zero watermark
/// `.durable`, a temporary file of the atomic writes (`<name>..tmp`), or one of the sidecar
/// files `files` names, which the new `create` writes again. Anything else there makes it an
/// error, and is left alone.
pub(super) fn remove_unfinished_sensor_dir(
    dir: &std::path::Path,
    files: &[Sidecar],
) -> roverlog_core::Result<()> {
    let io = |p: &std::path::Path, e| roverlog_core::Error::io(p, e);
    for entry in std::fs::read_dir(dir).map_err(|e| io(dir, e))? {
        let entry = entry.map_err(|e| io(dir, e))?;
        let (path, kind) = (entry.path(), entry.file_type().map_err(|e| io(dir, e))?);
        if kind.is_dir() {
            std::fs::remove_dir(&path).map_err(|e| io(&path, e))?;
        } else if kind.is_file() && (is_sidecar(&path, files) || holds_no_sample(dir, &path)?) {
            std::fs::remove_file(&path).map_err(|e| io(&path, e))?;
        }
    }
    std::fs::remove_dir(dir).map_err(|e| io(dir, e))
}

/// Whether `path` is one of the sidecar files `files`, or the temporary file of an atomic
/// write (`<name>..tmp`: no channel or sidecar name contains `..`).
fn is_sidecar(path: &std::path::Path, files: &[Sidecar]) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    name.ends_with("..tmp") || files.iter().any(|f| f.name == name)
}

/// Whether `path`, a file in an unfinished sensor directory `dir`, is one `create` writes
/// before any sample (see [`remove_unfinished_sensor_dir`]).
fn holds_no_sample(dir: &std::path::Path, path: &std::path::Path) -> roverlog_core::Result<bool> {
    let name = path.file_name().unwrap_or_default();
    if path == roverlog_core::format::meta::atomic_tmp_path(&dir.join(META_FILE))
        || roverlog_core::format::durable::is_watermark_file(name)
    {
        return Ok(true);
    }
    let len = std::fs::metadata(path)
        .map_err(|e| roverlog_core::Error::io(path, e))?
        .len();
    if len == 0 {
        return Ok(true);
    }
    if len == 8 && name.to_string_lossy().ends_with("_i") {
        let bytes = std::fs::read(path).map_err(|e| roverlog_core::Error::io(path, e))?;
        return Ok(bytes == [0u8; 8]);
    }
    Ok(name.to_string_lossy().ends_with(".avi")
        && roverlog_core::format::avi::MjpgReader::open(path).is_ok_and(|r| r.is_empty()))
}
