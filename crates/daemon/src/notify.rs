//! Telling systemd how the daemon is doing (`sd_notify(3)`), without linking libsystemd.
//!
//! The unit in `systemd/roverlog.service` is `Type=notify` with a `WatchdogSec=`: systemd
//! considers the daemon started only when it sends `READY=1` (so units ordered after it find
//! the sockets listening), and restarts it when `WATCHDOG=1` stops arriving. The protocol is
//! one datagram of newline-separated `KEY=VALUE` assignments to the `AF_UNIX` socket named
//! in `$NOTIFY_SOCKET`: a filesystem path, or an abstract socket when it starts with `@`.
//! That is small enough that a dependency would cost more than these few lines.
//!
//! Outside systemd (`$NOTIFY_SOCKET` unset) every call is a cheap no-op returning
//! `Ok(false)`, so the daemon calls [`notify`] unconditionally.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::time::Duration;

/// Startup is finished: the sockets are listening. systemd starts the units ordered after us.
pub const READY: &str = "READY=1";
/// Shutdown has begun (the daemon is draining and syncing its writers).
pub const STOPPING: &str = "STOPPING=1";
/// Watchdog keep-alive; send it at least every half of [`watchdog_interval`].
pub const WATCHDOG: &str = "WATCHDOG=1";

/// Sends `state` (one or more `KEY=VALUE` lines, e.g. [`READY`] or
/// `"STATUS=recording 2026.11.22-07.52.11"`) to the service manager.
///
/// Returns `Ok(false)` when not running under a service manager (`$NOTIFY_SOCKET` unset or
/// empty), `Ok(true)` when the datagram was sent, and an error when `$NOTIFY_SOCKET` is set
/// but unusable (not absolute and not `@abstract`, nobody listening, datagram refused). The
/// caller decides whether that matters: for `READY=1` it does (systemd will time the start
/// out), for `STATUS=` it does not.
///
/// Unlike `sd_notify(3)` this never unsets `$NOTIFY_SOCKET`: the daemon starts no children
/// that could inherit it.
pub fn notify(state: &str) -> io::Result<bool> {
    match std::env::var_os("NOTIFY_SOCKET") {
        Some(addr) if !addr.is_empty() => notify_to(&addr, state).map(|()| true),
        _ => Ok(false),
    }
}

/// The watchdog timeout systemd enforces (`WatchdogSec=`), when it expects keep-alives from
/// this process: `$WATCHDOG_USEC` is set and positive, and `$WATCHDOG_PID` is unset or our
/// pid (it names the main process; a child must not take the job on itself).
///
/// systemd kills the service when no [`WATCHDOG`] arrives within this time; send one at
/// least every half of it, from the loop whose liveness it should prove.
pub fn watchdog_interval() -> Option<Duration> {
    watchdog_interval_from(
        std::env::var_os("WATCHDOG_USEC").as_deref(),
        std::env::var_os("WATCHDOG_PID").as_deref(),
        std::process::id(),
    )
}

/// [`notify`] with an explicit socket address (a path, or `@name` for an abstract socket).
fn notify_to(addr: &OsStr, state: &str) -> io::Result<()> {
    let sock = UnixDatagram::unbound()?;
    let bytes = addr.as_bytes();
    let sent = if let Some(name) = bytes.strip_prefix(b"@") {
        send_abstract(&sock, name, state.as_bytes())?
    } else if bytes.starts_with(b"/") {
        sock.send_to(state.as_bytes(), Path::new(addr))?
    } else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("NOTIFY_SOCKET={addr:?} is neither an absolute path nor an @abstract socket"),
        ));
    };
    if sent != state.len() {
        // A datagram is all or nothing, so this should not happen; but a truncated READY
        // would leave systemd waiting, so say so rather than report success.
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!("sent {sent} of {} bytes to NOTIFY_SOCKET", state.len()),
        ));
    }
    Ok(())
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn send_abstract(sock: &UnixDatagram, name: &[u8], msg: &[u8]) -> io::Result<usize> {
    #[cfg(target_os = "android")]
    use std::os::android::net::SocketAddrExt;
    #[cfg(target_os = "linux")]
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
    sock.send_to_addr(msg, &addr)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn send_abstract(_: &UnixDatagram, _: &[u8], _: &[u8]) -> io::Result<usize> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "abstract NOTIFY_SOCKET addresses exist on Linux only",
    ))
}

/// [`watchdog_interval`] over explicit values, for testing without touching the environment.
fn watchdog_interval_from(
    usec: Option<&OsStr>,
    pid: Option<&OsStr>,
    my_pid: u32,
) -> Option<Duration> {
    let usec: u64 = usec?.to_str()?.parse().ok()?;
    if usec == 0 {
        return None;
    }
    if let Some(pid) = pid {
        let pid: u32 = pid.to_str()?.parse().ok()?;
        if pid != my_pid {
            return None;
        }
    }
    Some(Duration::from_micros(usec))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn receiver() -> (tempfile::TempDir, std::path::PathBuf, UnixDatagram) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let sock = UnixDatagram::bind(&path).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        (dir, path, sock)
    }

    fn recv(sock: &UnixDatagram) -> String {
        let mut buf = [0u8; 4096];
        let n = sock.recv(&mut buf).unwrap();
        String::from_utf8(buf[..n].to_vec()).unwrap()
    }

    #[test]
    fn sends_to_a_path_socket() {
        let (_dir, path, sock) = receiver();
        notify_to(path.as_os_str(), READY).unwrap();
        assert_eq!(recv(&sock), "READY=1");
    }

    #[test]
    fn several_assignments_travel_in_one_datagram() {
        let (_dir, path, sock) = receiver();
        let state = "READY=1\nSTATUS=recording 2026.11.22-07.52.11\nMAINPID=42";
        notify_to(path.as_os_str(), state).unwrap();
        assert_eq!(recv(&sock), state);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn sends_to_an_abstract_socket() {
        use std::os::linux::net::SocketAddrExt;
        use std::os::unix::net::SocketAddr;
        // Abstract names are global to the network namespace: make this one unique.
        let name = format!(
            "roverlog-notify-test-{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
        );
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let sock = UnixDatagram::bind_addr(&addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        notify_to(OsStr::new(&format!("@{name}")), WATCHDOG).unwrap();
        assert_eq!(recv(&sock), "WATCHDOG=1");
    }

    #[test]
    fn a_relative_address_is_refused() {
        let err = notify_to(OsStr::new("run/notify"), READY).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("run/notify"), "{err}");
    }

    #[test]
    fn nobody_listening_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("gone");
        assert!(notify_to(missing.as_os_str(), READY).is_err());
        // A socket file whose owner has closed it: connection refused. A child process that
        // another test forks holds the socket from its fork until its exec closes it (close
        // on exec): a send in that window still succeeds, so wait it out.
        let (_d, path, sock) = receiver();
        drop(sock);
        let refused = (0..500).any(|_| {
            let refused = notify_to(path.as_os_str(), READY).is_err();
            if !refused {
                std::thread::sleep(Duration::from_millis(10));
            }
            refused
        });
        assert!(refused, "a socket nobody holds must refuse");
    }

    /// Runs `child_reports_through_the_environment` in a child process with `env` set, so the
    /// public functions read a real environment without racing other tests for it.
    fn run_child(env: &[(&str, &OsStr)]) -> std::process::Output {
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "notify::tests::child_reports_through_the_environment",
            "--nocapture",
            "--test-threads=1",
        ]);
        cmd.env_remove("NOTIFY_SOCKET")
            .env_remove("WATCHDOG_USEC")
            .env_remove("WATCHDOG_PID")
            .env("ROVERLOG_NOTIFY_CHILD", "1");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        out
    }

    #[test]
    fn child_reports_through_the_environment() {
        if std::env::var_os("ROVERLOG_NOTIFY_CHILD").is_none() {
            return; // only meaningful when started by run_child
        }
        let sent = notify(READY).unwrap();
        let wd = watchdog_interval().map(|d| d.as_millis());
        if sent {
            notify(&format!("STATUS=watchdog {wd:?}")).unwrap();
        }
        println!("CHILD sent={sent} watchdog={wd:?}");
    }

    #[test]
    fn public_functions_read_the_environment() {
        let (_dir, path, sock) = receiver();
        run_child(&[
            ("NOTIFY_SOCKET", path.as_os_str()),
            ("WATCHDOG_USEC", OsStr::new("2000000")),
        ]);
        assert_eq!(recv(&sock), "READY=1");
        assert_eq!(recv(&sock), "STATUS=watchdog Some(2000)");

        // Not under systemd: nothing sent, no error.
        let out = run_child(&[]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("CHILD sent=false watchdog=None"),
            "{stdout}"
        );
        // WATCHDOG_PID naming another process: not ours to ping.
        let out = run_child(&[
            ("WATCHDOG_USEC", OsStr::new("2000000")),
            ("WATCHDOG_PID", OsStr::new("1")),
        ]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("CHILD sent=false watchdog=None"),
            "{stdout}"
        );
    }

    #[test]
    fn watchdog_needs_a_positive_usec() {
        let v = |s: &str| Some(OsString::from(s));
        assert_eq!(watchdog_interval_from(None, None, 7), None);
        assert_eq!(watchdog_interval_from(v("0").as_deref(), None, 7), None);
        assert_eq!(watchdog_interval_from(v("soon").as_deref(), None, 7), None);
        assert_eq!(watchdog_interval_from(v("-5").as_deref(), None, 7), None);
        assert_eq!(
            watchdog_interval_from(v("30000000").as_deref(), None, 7),
            Some(Duration::from_secs(30))
        );
    }

    #[test]
    fn watchdog_is_for_the_pid_systemd_named() {
        let v = |s: &str| Some(OsString::from(s));
        let usec = v("1500000");
        assert_eq!(
            watchdog_interval_from(usec.as_deref(), v("7").as_deref(), 7),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            watchdog_interval_from(usec.as_deref(), v("8").as_deref(), 7),
            None
        );
        assert_eq!(
            watchdog_interval_from(usec.as_deref(), v("main").as_deref(), 7),
            None
        );
    }
}
