//! One sensor as the daemon holds it while it exists: its queue to the writer thread, its
//! byte budget and counters. Kept apart from `recording` (which creates and forgets sensors)
//! so that `health` can watch sensors without depending on the recorder.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::sync::{Arc, Mutex};

use crossbeam_channel::Sender;
use tokio::sync::{oneshot, Semaphore};

use crate::dedup::SeqSeen;
use crate::events::EventLog;
use crate::failure::WriterError;
use crate::poison::LockExt;
use crate::protocol::Hello;
use crate::sidecar::Sidecars;
use crate::stats::SensorStats;
use crate::writer::WriterMsg;

/// One sensor: its queue, its counters, its writer thread.
pub struct Slot {
    pub name: String,
    /// The hello it was created with (channels as declared on the wire, `seq`).
    pub hello: Hello,
    pub tx: Sender<WriterMsg>,
    /// The queue's byte budget: a frame costs its size in permits until it is written.
    pub budget: Arc<Semaphore>,
    pub stats: Arc<SensorStats>,
    /// Sequence numbers written in the open trace, for connections that opted in to `dedup`.
    pub seen: Mutex<SeqSeen>,
    pub thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// A duplicate of the live connection's socket (`None` when none is attached, or just
    /// before it is set), so a hello for the sensor can tell a connection whose driver has
    /// closed it, and is about to be released, from one still in use (docs/protocol.md 7).
    pub conn: Mutex<Option<OwnedFd>>,
    /// The sidecar files of its latest connection (docs/protocol.md 2.6), put into each
    /// trace the sensor is opened in.
    pub files: Mutex<Sidecars>,
}

impl Slot {
    /// Whether the attached connection's driver has closed its end (or the socket failed):
    /// its task will release the sensor once it reads the end of the stream. False without a
    /// socket to look at.
    pub fn driver_closed(&self) -> bool {
        let conn = self.conn.lock_or_recover();
        let Some(fd) = conn.as_ref() else {
            return false;
        };
        let mut p = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLRDHUP,
            revents: 0,
        };
        // SAFETY: one valid pollfd, owned by this slot while the lock is held; no wait.
        let r = unsafe { libc::poll(&mut p, 1, 0) };
        r == 1 && p.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0
    }

    /// Sends `make(reply)` to the writer and waits for the count (or other value) it answers.
    pub async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<T, WriterError>>) -> WriterMsg,
    ) -> Result<T, WriterError> {
        let (tx, rx) = oneshot::channel();
        self.tx
            .send(make(tx))
            .map_err(|_| WriterError::ended(&self.name))?;
        rx.await.map_err(|_| WriterError::ended(&self.name))?
    }

    /// The sidecar files its trace directories get.
    pub fn files(&self) -> Sidecars {
        self.files.lock_or_recover().clone()
    }

    /// Bytes currently queued.
    pub fn queue_fill(&self) -> u64 {
        self.stats
            .queue_limit
            .saturating_sub(self.budget.available_permits() as u64)
    }

    /// Asks the writer to open (create or resume) its files in `trace`, without waiting: the
    /// outcome is seen through the hello's barrier, which reports a failure.
    pub fn open_in(&self, trace: &Path, events: &Arc<EventLog>) {
        let (reply, _) = oneshot::channel();
        let _ = self.tx.send(WriterMsg::Open {
            trace: trace.to_path_buf(),
            events: events.clone(),
            files: self.files(),
            reply,
            left: None,
        });
    }
}
