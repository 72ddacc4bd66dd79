//! The start of a run: the recorder, start-up recovery of a crash's traces (telling the
//! service manager to wait), autostart, the offloader, the listeners, the health task, the
//! dashboard and the live feed, then `READY=1`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::watchdog::Watchdog;
use super::Running;
use crate::error::{Error, Result};
use crate::recording::{self, Recorder};
use crate::{command, control, disk, health, http, ingest, netns, offload, shutdown};
use crate::{Config, Daemon};

/// How much more start-up time each `EXTEND_TIMEOUT_USEC=` asks for; sent every third of it.
const START_EXTENSION: Duration = Duration::from_secs(30);

impl Running {
    /// Starts `d`: from its bound sockets to a daemon that records and answers.
    pub(crate) async fn start(d: Daemon) -> Result<Running> {
        let Daemon {
            cfg,
            ingest,
            control,
            sockets,
            requests_tx,
            requests,
            notify,
            watchdog,
            data_lock,
            http,
        } = d;
        drop(requests_tx);
        let (notice_tx, notices) = mpsc::unbounded_channel();
        let rec = Arc::new(Recorder::new(cfg.clone(), notice_tx, watchdog)?);
        rec.set_disk_free(disk::free_bytes(&cfg.recording.data_root).ok());

        let unfinished = recover_extending_start(&cfg, &notify).await?;
        if cfg.recording.autostart {
            autostart(&cfg, &rec, unfinished).await;
        }
        // After the recovery: the traces a crash cut are sealed now, and may go.
        let offloader = start_offload(&cfg, &rec)?;

        let (trigger, shut) = shutdown::channel();
        let max_conns = cfg.ingest.max_sensors + 16;
        let conns = Arc::new(tokio::sync::Semaphore::new(max_conns));
        let (done_tx, conns_done) = mpsc::channel::<()>(1);
        let ingest = tokio::net::UnixListener::from_std(ingest)
            .map_err(|e| Error::io(&cfg.sockets.ingest, e))?;
        let control = tokio::net::UnixListener::from_std(control)
            .map_err(|e| Error::io(&cfg.sockets.control, e))?;
        tokio::spawn(ingest::accept_loop(
            ingest,
            rec.clone(),
            shut.clone(),
            conns,
            done_tx,
        ));
        tokio::spawn(control::accept_loop(control, rec.clone(), shut.clone()));
        let watched = rec.clone();
        tokio::spawn(health::run(
            cfg.clone(),
            rec.alarms().clone(),
            move || watched.watch(),
            shut.clone(),
        ));
        if let Some(l) = http {
            tokio::spawn(http::serve(l, rec.clone(), shut.clone()));
        }
        if let Some(hub) = rec.live() {
            let addr = hub.serve().await?;
            tracing::info!(url = %format!("ws://{addr}"), "live Foxglove feed listening");
            netns::warn_if_isolated("live Foxglove feed", addr);
        }
        tracing::info!(
            ingest = %cfg.sockets.ingest.display(),
            control = %cfg.sockets.control.display(),
            data = %cfg.recording.data_root.display(),
            "roverlog daemon ready"
        );
        notify("READY=1");
        Ok(Running {
            cfg,
            rec,
            notify,
            trigger,
            conns_done,
            notices,
            requests,
            offloader,
            wd: Watchdog::new(watchdog),
            sockets,
            _data_lock: data_lock,
        })
    }
}

/// Config `autostart`: resumes the trace a crash cut (`resume_unfinished`) or starts one,
/// unless the disk is low. A refusal is shown in status and `STATUS=`, not only logged.
async fn autostart(cfg: &Config, rec: &Recorder, unfinished: Option<PathBuf>) {
    let r = match (&unfinished, rec.disk_low()) {
        (_, Some(why)) => {
            // Shown in status like a stop by the guard later on.
            rec.stop_for(why.clone()).await;
            Err(command::Refusal::DiskLow(why))
        }
        (Some(dir), None) if cfg.recording.resume_unfinished => rec.resume(dir).await,
        _ => rec.start(cfg.recording.label.as_deref(), "autostart").await,
    };
    if let Err(why) = r {
        tracing::error!("autostart failed: {why}");
        // status and STATUS= say why nothing is recorded, not just the log.
        rec.note_not_recording(format!("autostart failed: {why}"));
    }
}

/// Config `offload`: the background offloader, told whether a trace is being recorded.
fn start_offload(cfg: &Config, rec: &Arc<Recorder>) -> Result<Option<Arc<offload::Offloader>>> {
    let Some(o) = &cfg.offload else {
        return Ok(None);
    };
    let root = cfg.recording.data_root.clone();
    // Weak: the recorder holds the job's handle.
    let r = Arc::downgrade(rec);
    let recording = Box::new(move || r.upgrade().is_some_and(|r| r.current().is_some()));
    let o = offload::Offloader::start(o, root, recording)
        .map_err(|e| Error::io(&cfg.recording.data_root, e))?;
    rec.set_offload(o.clone());
    Ok(Some(o))
}

/// Start-up recovery of unfinished traces (which may read and cut large files) on a blocking
/// thread, telling the service manager to extend the start timeout while it runs: a long
/// recovery must not make systemd kill the daemon before it is ready.
async fn recover_extending_start(cfg: &Config, notify: &impl Fn(&str)) -> Result<Option<PathBuf>> {
    let root = cfg.recording.data_root.clone();
    let delay = cfg.test_knobs.recovery_delay;
    let mut job = tokio::task::spawn_blocking(move || {
        std::thread::sleep(delay);
        recording::recover_unfinished(&root)
    });
    let extend = || {
        notify(&format!(
            "EXTEND_TIMEOUT_USEC={}",
            START_EXTENSION.as_micros()
        ))
    };
    extend();
    loop {
        tokio::select! {
            r = &mut job => {
                let found = r.map_err(|e| Error::Task { what: "start-up recovery", error: Box::new(e) })?;
                return Ok(found?);
            }
            _ = tokio::time::sleep(START_EXTENSION / 3) => extend(),
        }
    }
}
