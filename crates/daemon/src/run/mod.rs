//! A bound [`Daemon`](crate::Daemon) running, in the three steps of its life (the way
//! mini-redis's server is read): [`start`] (recover, autostart, spawn the listeners and the
//! health task, `READY=1`), [`tick`] (the main loop: requests, writer notices, stats, the
//! watchdog, the disk guard, rotation) and [`drain`] (stop reading, write every queue, join
//! the writers, the exit's verdict). [`watchdog`]: the service manager's pings.

mod drain;
mod start;
mod status_line;
mod tick;
mod watchdog;

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::recording::Recorder;
use crate::writer::WriterNotice;
use crate::{offload, shutdown, Config, Notifier, Request};
use watchdog::Watchdog;

/// What a started daemon holds until it has drained.
pub(crate) struct Running {
    cfg: Arc<Config>,
    rec: Arc<Recorder>,
    notify: Notifier,
    /// Asks the listeners and connection tasks to stop (the drain).
    trigger: shutdown::ShutdownTrigger,
    /// Closed when the last connection task ended.
    conns_done: mpsc::Receiver<()>,
    /// The writers' reports (disk errors).
    notices: mpsc::UnboundedReceiver<WriterNotice>,
    /// Asked from outside the sockets (SIGHUP).
    requests: mpsc::UnboundedReceiver<Request>,
    offloader: Option<Arc<offload::Offloader>>,
    wd: Watchdog,
    /// The sockets bound, with their inodes: removed at the end if still ours.
    sockets: Vec<(PathBuf, u64)>,
    /// `data_root`'s lock, held until the drain is over.
    _data_lock: std::fs::File,
}
