//! The sensor's UDP ports, opened with a large receive buffer: at 1,280 packets/s of 12-25 KB
//! the kernel's default (about 200 KiB, 16 packets; ouster-sdk PR #81) overflows whenever the
//! reading thread is late by a few milliseconds. Linux doubles the size asked for and caps it
//! at `net.core.rmem_max` unless the process may force it (CAP_NET_ADMIN, SO_RCVBUFFORCE):
//! [`open`] asks, reads back what it got and says so when it is less.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// A bound socket and what its receive buffer became.
#[derive(Debug)]
pub struct Opened {
    pub socket: UdpSocket,
    /// Bytes the kernel gives the buffer (`SO_RCVBUF` read back: twice what it accepted).
    pub rcvbuf: usize,
    /// Set when the kernel capped the buffer below `asked`: `net.core.rmem_max` then.
    pub capped_at: Option<u64>,
}

/// Why a port could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum UdpError {
    #[error("binding UDP {addr}: {error}")]
    Bind { addr: SocketAddr, error: io::Error },
    #[error("UDP {addr}: setting {option}: {error}")]
    Option {
        addr: SocketAddr,
        option: &'static str,
        error: io::Error,
    },
}

fn set_int(sock: &UdpSocket, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: setsockopt on a socket we own, with a pointer to a c_int and its size.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn get_int(sock: &UdpSocket, name: libc::c_int) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt into a c_int we own, its size in `len`.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            name,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(value)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The kernel's cap on `SO_RCVBUF` (`/proc/sys/net/core/rmem_max`), when readable.
pub fn rmem_max() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Binds `addr` with a receive buffer of `asked` bytes (forced past `rmem_max` when the
/// process may) and a read timeout of `poll`.
pub fn open(addr: SocketAddr, asked: usize, poll: Duration) -> Result<Opened, UdpError> {
    let socket = UdpSocket::bind(addr).map_err(|error| UdpError::Bind { addr, error })?;
    let option = |option, error| UdpError::Option {
        addr,
        option,
        error,
    };
    socket
        .set_read_timeout(Some(poll))
        .map_err(|e| option("the read timeout", e))?;
    let want = asked.min(i32::MAX as usize / 2) as libc::c_int;
    if set_int(&socket, libc::SO_RCVBUFFORCE, want).is_err() {
        set_int(&socket, libc::SO_RCVBUF, want).map_err(|e| option("SO_RCVBUF", e))?;
    }
    let rcvbuf = get_int(&socket, libc::SO_RCVBUF).map_err(|e| option("SO_RCVBUF", e))? as usize;
    // Linux reports twice the size it accepted (the other half is its bookkeeping).
    let capped_at = if rcvbuf / 2 < want as usize {
        Some(rmem_max().unwrap_or(rcvbuf as u64 / 2))
    } else {
        None
    };
    Ok(Opened {
        socket,
        rcvbuf,
        capped_at,
    })
}
