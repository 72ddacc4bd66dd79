//! Whether a TCP listener can be reached from outside the daemon's network namespace: under
//! systemd's `PrivateNetwork=true` (or `unshare --net`) the namespace holds only its own
//! loopback, so the dashboard and the Foxglove feed bind and log "listening" while every
//! tablet's (and every SSH tunnel's) connection is refused. [`warn_if_isolated`] says so at
//! start.

use std::net::SocketAddr;
use std::path::Path;

/// The interfaces of this process's network namespace, from `/proc/self/net/dev` (per
/// namespace, unlike `/sys/class/net`, which shows the namespace that mounted sysfs).
/// `None` when it cannot be read (then nothing is claimed).
pub fn interfaces() -> Option<Vec<String>> {
    let text = std::fs::read_to_string(Path::new("/proc/self/net/dev")).ok()?;
    Some(parse_net_dev(&text))
}

/// Interface names of a `/proc/net/dev` table (two header lines, then `name: counters`).
pub fn parse_net_dev(text: &str) -> Vec<String> {
    text.lines()
        .skip(2)
        .filter_map(|l| l.split_once(':'))
        .map(|(name, _)| name.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect()
}

/// Why `addr` cannot be reached from outside this process's network namespace, given the
/// namespace's interfaces: `Some` when loopback is all there is. A loopback address is no
/// exception: under `PrivateNetwork=true` the namespace's loopback is its own, so the host's
/// processes (a reverse proxy, an SSH tunnel's end) cannot reach it either.
pub fn isolation(addr: SocketAddr, interfaces: &[String]) -> Option<String> {
    if interfaces.iter().any(|i| i != "lo") {
        return None;
    }
    Some(format!(
        "listening on {addr}, but this process's network namespace has no interface besides \
         loopback ({}): only processes inside it can connect, not other machines nor, under \
         systemd's PrivateNetwork=true, the host's own (a proxy, an SSH tunnel); \
         docs/install.md says how to serve the vehicle network",
        if interfaces.is_empty() {
            "none at all".to_string()
        } else {
            interfaces.join(", ")
        }
    ))
}

/// Logs a warning naming `what` (`dashboard`, `live Foxglove feed`) when `addr` is out of
/// reach from outside the namespace (see [`isolation`]).
pub fn warn_if_isolated(what: &str, addr: SocketAddr) {
    if let Some(why) = interfaces().and_then(|i| isolation(addr, &i)) {
        tracing::warn!("{what}: {why}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ISOLATED: &str = "Inter-|   Receive                            |  Transmit\n \
        face |bytes    packets errs drop fifo frame compressed multicast|bytes\n    \
        lo:       0       0    0    0    0     0          0         0        0\n";

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn net_dev_names_parsed() {
        let host = format!("{ISOLATED}  eth0: 1 2 3 4 5 6 7 8 9\nwlan0: 1 2\n");
        assert_eq!(parse_net_dev(ISOLATED), names(&["lo"]));
        assert_eq!(parse_net_dev(&host), names(&["lo", "eth0", "wlan0"]));
    }

    #[test]
    fn a_loopback_only_namespace_is_isolated_whatever_the_address() {
        let any: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let lo: SocketAddr = "127.0.0.1:8765".parse().unwrap();
        let why = isolation(any, &names(&["lo"])).expect("isolated");
        assert!(
            why.contains("0.0.0.0:8080") && why.contains("(lo)"),
            "{why}"
        );
        let why = isolation(lo, &names(&["lo"])).expect("isolated");
        assert!(why.contains("127.0.0.1:8765"), "{why}");
        assert!(isolation(any, &[])
            .expect("isolated")
            .contains("none at all"));
        assert_eq!(isolation(any, &names(&["lo", "eth0"])), None);
        assert_eq!(isolation(lo, &names(&["lo", "eth0"])), None);
    }
}
