//! The `dashboard` scenario's client: what an open dashboard page costs the writers, measured
//! as a client fetching `/api/status` and `/api/history` at 10 Hz each (a page polls them at
//! 1 Hz and 0.5 Hz) while the imu load runs, against the same load with no client.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::error::{Result, ViewerError};

/// Requests per second per endpoint.
pub(super) const POLL_HZ: f64 = 10.0;

/// A thread polling the dashboard until stopped.
pub(super) struct Poller {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<u64>>,
}

impl Poller {
    /// Starts polling the dashboard at `addr` (`host:port`).
    pub(super) fn start(addr: String) -> Poller {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let period = Duration::from_secs_f64(1.0 / POLL_HZ);
            let mut next = Instant::now();
            let mut done = 0u64;
            while !flag.load(Ordering::Relaxed) {
                for path in ["/api/status", "/api/history"] {
                    get(&addr, path)?;
                    done += 1;
                }
                next += period;
                if let Some(wait) = next.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
            }
            Ok(done)
        });
        Poller { stop, thread }
    }

    /// Stops polling; returns how many requests were answered.
    pub(super) fn stop(self) -> Result<u64> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.join() {
            Ok(r) => r,
            Err(_) => Err(ViewerError::Panicked {
                client: "dashboard poller",
            }
            .into()),
        }
    }
}

/// One `GET` on a fresh connection (as a browser's first request is); fails unless 200.
pub(super) fn get(addr: &str, path: &'static str) -> Result<()> {
    let mut s = TcpStream::connect(addr).map_err(|error| ViewerError::DashboardConnect {
        addr: addr.to_owned(),
        error,
    })?;
    let mut reply = Vec::new();
    let asked = s
        .set_read_timeout(Some(Duration::from_secs(10)))
        .and_then(|()| {
            write!(
                s,
                "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
            )
        })
        .and_then(|()| s.read_to_end(&mut reply));
    if let Err(error) = asked {
        return Err(ViewerError::DashboardRead { path, error }.into());
    }
    if !reply.starts_with(b"HTTP/1.1 200") {
        let head = String::from_utf8_lossy(&reply[..reply.len().min(200)]).into_owned();
        return Err(ViewerError::DashboardStatus { path, head }.into());
    }
    Ok(())
}
