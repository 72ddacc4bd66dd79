//! `roverlog daemon`: the logging daemon. Drivers connect to the ingest socket (one
//! connection = one sensor, see [`protocol`]), the daemon writes roverd traces with the
//! [`roverlog_core::format`] library, and `roverlog ctl` talks to the control socket.
//!
//! - [`config`]: the JSON document ([`config::RawConfig`]) and its checked, typed sections
//!   ([`Config`]; [`config::QueuePolicy`], [`config::FsyncPolicy`]).
//! - [`protocol`]: sans-io hello and frame parsing.
//! - [`ingest`]: accept loop and per-connection tasks (tokio); [`dedup`]: the sequence
//!   numbers a sensor wrote in the open trace, to drop a driver's resent frames.
//! - [`writer`]: per-sensor writer threads (blocking file I/O, durability, failure);
//!   [`compress`]: the one `lzmaf` compression pool all writers share, in order per sensor;
//!   [`failure`]: why a sensor failed, and the writers' error replies.
//! - [`recording`]: traces and sensors: attach, start, stop, rotate, mark, status, crash
//!   recovery.
//! - [`command`]: the control commands and their replies as types, parsed once at the edge.
//! - [`control`]: the control socket. [`http`]: the dashboard (page and JSON API).
//!   [`foxglove_live`]: the live Foxglove feed. [`events`]: `events.jsonl`. [`stats`]: counters.
//! - [`clock_sync`]: the host clock's synchronisation state, recorded with each trace.
//! - [`netns`]: the warning when a TCP listener is in a namespace with only loopback.
//! - [`notify`]: systemd `sd_notify` (READY, STATUS, WATCHDOG, STOPPING) without libsystemd.
//! - [`malloc_policy`]: the glibc allocator thresholds the daemon sets at start.
//! - [`offload`]: the background offload of sealed traces (config `offload`).
//! - [`shutdown`]: the shutdown signal. [`sockets`]: atomic socket creation. [`disk`]: free
//!   space.
//!
//! A sample's path: socket → connection task (`BytesMut`, check in place, byte budget) →
//! crossbeam queue (`Bytes` runs of frames) → writer thread → `SensorWriter::append` (data
//! channels, then `ts`) → flush to the kernel every `flush_interval_ms` → fsync per
//! [`config::FsyncPolicy`] → durable watermark.

pub mod bufpool;
pub mod clock_sync;
pub mod command;
pub mod compress;
pub mod config;
pub mod control;
pub mod dedup;
pub mod disk;
pub mod disk_fault;
pub mod error;
pub mod events;
pub mod failure;
pub mod foxglove_live;
pub mod health;
pub mod http;
pub mod ingest;
pub mod malloc_policy;
pub mod netns;
pub mod notify;
pub mod offload;
pub mod poison;
pub mod protocol;
pub mod recording;
mod run;
pub mod shutdown;
pub mod sidecar;
pub mod slot;
pub mod snapshot;
pub mod sockets;
pub mod stats;
pub mod traces;
pub mod writer;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

pub use config::{Config, FsyncPolicy, QueuePolicy, RawConfig};

use crate::error::{Error, Result};

/// Something asked of a running daemon from outside its sockets (e.g. SIGHUP).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// Rotate to a new trace (SIGHUP).
    Rotate,
}

/// Service-manager notifications (`READY=1`, `STATUS=...`, `WATCHDOG=1`, `STOPPING=1`); the
/// binary plugs in sd_notify, the default does nothing.
pub type Notifier = fn(&str);

fn no_notify(_: &str) {}

/// A daemon whose sockets are bound: drivers may connect as soon as this exists.
pub struct Daemon {
    cfg: Arc<Config>,
    ingest: std::os::unix::net::UnixListener,
    control: std::os::unix::net::UnixListener,
    sockets: Vec<(PathBuf, u64)>,
    requests_tx: mpsc::UnboundedSender<Request>,
    requests: mpsc::UnboundedReceiver<Request>,
    notify: Notifier,
    watchdog: Option<Duration>,
    /// `data_root`, opened and `flock`ed for as long as the daemon runs (see [`lock_data_root`]).
    data_lock: std::fs::File,
    /// The dashboard's listener (config `http_listen`).
    http: Option<std::net::TcpListener>,
}

/// Runs a daemon with `config` until `shutdown` completes (see [`Daemon::run`]).
pub async fn run(config: Config, shutdown: impl Future<Output = ()>) -> Result<()> {
    Daemon::bind(config)?.run(shutdown).await
}

impl Daemon {
    /// Creates `data_root`, binds both sockets (mode, group, stale-socket rules in
    /// [`sockets`]) and the dashboard's listener.
    pub fn bind(config: Config) -> Result<Daemon> {
        roverlog_core::format::meta::create_dir_all_durable(&config.recording.data_root)?;
        let data_lock = lock_data_root(&config.recording.data_root)?;
        // Before the sockets: a taken port must not leave them behind.
        let http = http::bind(&config.http)?;
        let mode = config.sockets.mode;
        let gid = config
            .sockets
            .group
            .as_deref()
            .map(sockets::resolve_group)
            .transpose()?;
        let ingest = sockets::bind(&config.sockets.ingest, mode, gid)?;
        let control = sockets::bind(&config.sockets.control, mode, gid)?;
        let socks = vec![
            (
                config.sockets.ingest.clone(),
                sockets::inode(&config.sockets.ingest),
            ),
            (
                config.sockets.control.clone(),
                sockets::inode(&config.sockets.control),
            ),
        ];
        let (requests_tx, requests) = mpsc::unbounded_channel();
        Ok(Daemon {
            cfg: Arc::new(config),
            ingest,
            control,
            sockets: socks,
            requests_tx,
            requests,
            notify: no_notify,
            watchdog: None,
            data_lock,
            http,
        })
    }

    /// A sender of [`Request`]s, usable from any thread (a signal handler thread).
    pub fn requests(&self) -> mpsc::UnboundedSender<Request> {
        self.requests_tx.clone()
    }

    /// Sets the service-manager notifier.
    pub fn set_notifier(&mut self, notify: Notifier) {
        self.notify = notify;
    }

    /// Enables the service manager's watchdog with its timeout (see
    /// [`notify::watchdog_interval`]): `WATCHDOG=1` is sent every half of `timeout`, and only
    /// while every writer thread has proved progress within `timeout`, so a writer stuck in a
    /// write or fsync gets the daemon restarted.
    pub fn set_watchdog(&mut self, timeout: Option<Duration>) {
        self.watchdog = timeout.filter(|t| !t.is_zero());
    }

    /// Records until `shutdown` completes, then drains: connections stop reading (after what
    /// the drivers already sent), every queue is written, every writer finishes (fsync).
    /// Returns an error when that does not finish within `shutdown_deadline_ms` (the three
    /// steps: the private `run` module: start, tick, drain).
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<()> {
        let mut running = run::Running::start(self).await?;
        tokio::pin!(shutdown);
        running.tick(&mut shutdown).await;
        running.drain().await
    }
}

/// Takes an exclusive `flock` on the `data_root` directory itself (no lock file: a read-only
/// data_root still starts and says why it cannot record). A second daemon on the same
/// data_root, whatever its sockets, would take the live trace for a crashed one and cut and
/// record into its files: it is refused like one on the same sockets.
fn lock_data_root(root: &std::path::Path) -> Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    let dir = std::fs::File::open(root).map_err(|e| Error::io(root, e))?;
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            return Err(Error::InUse {
                path: root.to_path_buf(),
                holds: "recording into this data_root (it holds its lock)",
            });
        }
        return Err(Error::io(root, e));
    }
    Ok(dir)
}
