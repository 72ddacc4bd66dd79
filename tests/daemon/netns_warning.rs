//! The dashboard (on 0.0.0.0) and the live Foxglove feed (on 127.0.0.1, its only choice) in a
//! network namespace that has only loopback (systemd's `PrivateNetwork=true`; here
//! `unshare --net`): the daemon says at start that nothing outside can connect, instead of
//! only logging "listening". In the host's own namespace it says nothing of the kind.

use crate::support::daemon::TestDaemon;

use serde_json::json;
use std::process::Command;

const WARNING: &str = "no interface besides loopback";

fn listening() -> TestDaemon {
    TestDaemon::create(json!({
        "http_listen": "0.0.0.0:0",
        "http_token": "netns-warning-test-token",
        "foxglove_listen": "127.0.0.1:0",
    }))
}

#[test]
fn listeners_in_a_loopback_only_namespace_are_warned_about() {
    let mut d = listening();
    let mut cmd = Command::new("unshare");
    cmd.args(["--net", "--"])
        .arg(env!("CARGO_BIN_EXE_roverlog"))
        .args(["daemon", "--config"])
        .arg(&d.config);
    d.spawn_cmd(cmd);
    d.stop();
    let log = d.log();
    for what in [
        "dashboard: listening on 0.0.0.0:",
        "live Foxglove feed: listening on 127.0.0.1:",
    ] {
        assert!(
            log.lines()
                .any(|l| l.contains(what) && l.contains(WARNING) && l.contains("WARN")),
            "no warning '{what} ... {WARNING}' (unshare --net needs root):\n{log}"
        );
    }
}

#[test]
fn listeners_in_the_hosts_namespace_are_not_warned_about() {
    let interfaces = std::fs::read_to_string("/proc/self/net/dev").unwrap();
    assert!(
        roverlog_daemon::netns::parse_net_dev(&interfaces)
            .iter()
            .any(|i| i != "lo"),
        "this machine has no interface besides loopback: the test cannot tell:\n{interfaces}"
    );
    let mut d = listening();
    d.spawn();
    d.stop();
    let log = d.log();
    assert!(log.contains("dashboard listening"), "{log}");
    assert!(
        !log.contains(WARNING),
        "warned on the host's namespace:\n{log}"
    );
}
