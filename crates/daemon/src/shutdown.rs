//! [`Shutdown`]: the one signal every task listens to for "stop reading, finish up".
//!
//! A `watch` channel: the daemon flips it once; every listener, connection and timer holds a
//! [`Shutdown`] and either polls [`Shutdown::is_shutdown`] or awaits [`Shutdown::recv`]. The
//! daemon then waits for the connections (they drain what the driver already sent) and for
//! every writer's `finish()` before returning.

use tokio::sync::watch;

/// A listener for the shutdown signal.
#[derive(Clone)]
pub struct Shutdown {
    rx: watch::Receiver<bool>,
}

/// The sending side, held by the daemon.
pub struct ShutdownTrigger {
    tx: watch::Sender<bool>,
}

/// A new trigger and its first listener.
pub fn channel() -> (ShutdownTrigger, Shutdown) {
    let (tx, rx) = watch::channel(false);
    (ShutdownTrigger { tx }, Shutdown { rx })
}

impl ShutdownTrigger {
    /// Tells every listener to stop.
    pub fn trigger(&self) {
        self.tx.send_replace(true);
    }
}

impl Shutdown {
    /// Whether shutdown has begun.
    pub fn is_shutdown(&self) -> bool {
        *self.rx.borrow()
    }

    /// Waits until shutdown begins (returns at once if it has).
    pub async fn recv(&mut self) {
        // An error means the trigger is gone, which only happens once the daemon is ending.
        let _ = self.rx.wait_for(|&s| s).await;
    }
}
