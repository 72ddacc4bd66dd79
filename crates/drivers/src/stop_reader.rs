//! A peer's TCP socket (a camera's HTTP server, gpsd) read so that a driver's stop request is
//! seen within one poll of the socket, and a peer that goes quiet is an error rather than a
//! hang. Shared by every driver that reads a network peer.

use std::io::{self, Read};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The error kind a read returns once the stop flag is set.
pub const STOPPED: io::ErrorKind = io::ErrorKind::ConnectionAborted;

/// The socket, whose read timeout the caller set short (the poll): a read returns
/// `STOPPED` once `stop` is set, and [`io::ErrorKind::TimedOut`] naming `peer` once the
/// peer sent nothing for `stall`.
pub struct StopReader {
    sock: TcpStream,
    stop: Arc<AtomicBool>,
    stall: Duration,
    last: Instant,
    /// What the peer is, for the stall error ("the camera", "gpsd").
    peer: &'static str,
}

impl StopReader {
    pub fn new(
        sock: TcpStream,
        stop: Arc<AtomicBool>,
        stall: Duration,
        peer: &'static str,
    ) -> Self {
        StopReader {
            sock,
            stop,
            stall,
            last: Instant::now(),
            peer,
        }
    }
}

impl Read for StopReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Err(io::Error::new(STOPPED, "the driver was told to stop"));
            }
            match self.sock.read(buf) {
                Ok(n) => {
                    self.last = Instant::now();
                    return Ok(n);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) =>
                {
                    if self.last.elapsed() >= self.stall {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!("{} sent nothing for {:?}", self.peer, self.stall),
                        ));
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}
