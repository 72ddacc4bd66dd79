//! The control socket's roles and idle timeout (issue 16): a monitoring peer gets `status`
//! and nothing that changes recording, a peer in no list is refused, an idle connection is
//! closed so idle clients cannot hold every slot, and a monitor list without operators is a
//! config error.

use crate::support::daemon;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use daemon::*;
use serde_json::{json, Value};

/// Tests run as root (uid 0, gid 0).
const NOBODY: u32 = 54321;

fn read_line(s: &UnixStream, what: &str) -> Value {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut line = String::new();
    BufReader::new(s.try_clone().unwrap())
        .read_line(&mut line)
        .unwrap_or_else(|e| panic!("waiting 10 s for {what}: {e}"));
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{what}: {e}: {line:?}"))
}

#[test]
fn a_monitoring_peer_reads_status_and_cannot_stop_the_recording() {
    let d =
        TestDaemon::start(json!({"control_operator_uids": [NOBODY], "control_monitor_uids": [0]}));
    let st = d.status();
    assert_eq!(st["ok"], true, "{st}");
    for cmd in ["stop", "start", "rotate"] {
        let r = d.ctl(json!({"cmd": cmd}));
        assert_eq!(r["ok"], false, "{cmd}: {r}");
        assert!(r["error"].as_str().unwrap().contains("operators"), "{r}");
    }
    let r = d.ctl(json!({"cmd": "mark", "text": "x"}));
    assert_eq!(r["ok"], false, "{r}");
    assert_eq!(d.status()["recording"], true, "nothing changed");
}

#[test]
fn a_peer_in_no_list_is_refused_when_it_connects() {
    let mut d = TestDaemon::create(json!({"control_operator_uids": [NOBODY]}));
    let log = std::fs::File::create(d.dir.path().join("daemon.log")).unwrap();
    d.child = Some(d.command().stderr(log).spawn().unwrap());
    let t0 = Instant::now();
    let s = loop {
        if let Ok(s) = UnixStream::connect(d.control_path()) {
            break s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no control socket after 20 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let r = read_line(&s, "the refusal");
    assert_eq!(r["ok"], false, "{r}");
    assert!(r["error"].as_str().unwrap().contains("uid 0"), "{r}");
    // `roverlog ctl` prints that refusal and exits 1 (the daemon answered), for a read and
    // for a change alike; it used to print "Broken pipe" and exit 3, "unreachable" (issue 26).
    for cmd in ["status", "stop"] {
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_roverlog"))
            .args(["ctl", "--socket"])
            .arg(d.control_path())
            .arg(cmd)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let out = output_within(child, 20, "roverlog ctl refused");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "ctl {cmd}: {err}");
        assert!(
            err.contains("is in neither control_operator_* nor control_monitor_*"),
            "ctl {cmd}: {err}"
        );
    }
    assert!(d.stop().success());
}

#[test]
fn idle_connections_are_closed_and_free_their_slots() {
    let d = TestDaemon::start(json!({"control_idle_timeout_ms": 1500}));
    // Every slot taken by a client that never sends a command. The start-up probe's slot
    // is freed only when the daemon notices that connection closed, so a connection made
    // before may be refused as one too many: replace those until 16 are held.
    let mut idle: Vec<UnixStream> = Vec::new();
    let t0 = std::time::Instant::now();
    while idle.len() < 16 {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "could not hold 16 control connections within 20 s"
        );
        let s = UnixStream::connect(d.control_path()).unwrap();
        s.set_nonblocking(true).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let mut b = [0u8; 1];
        match std::io::Read::read(&mut &s, &mut b) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                s.set_nonblocking(false).unwrap();
                idle.push(s);
            }
            _ => {} // refused (too many) or closed: try again
        }
    }
    let mut extra = UnixStream::connect(d.control_path()).unwrap();
    let r = read_line(&extra, "the too-many reply");
    assert!(r["error"].as_str().unwrap().contains("too many"), "{r}");
    for s in &idle {
        let r = read_line(s, "the idle close");
        assert!(
            r["error"].as_str().unwrap().contains("idle for 1500 ms"),
            "{r}"
        );
    }
    // The slots are free again; an active client is not cut off while it talks.
    let t0 = Instant::now();
    loop {
        extra = UnixStream::connect(d.control_path()).unwrap();
        extra.write_all(b"{\"cmd\": \"status\"}\n").unwrap();
        let r = read_line(&extra, "status");
        if r["ok"] == true {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "slots not freed: {r}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(150));
        extra.write_all(b"{\"cmd\": \"status\"}\n").unwrap();
        assert_eq!(read_line(&extra, "status")["ok"], true);
    }
}

#[test]
fn monitors_without_operators_are_a_config_error() {
    let d = TestDaemon::create(json!({"control_monitor_uids": [0]}));
    let out = d.command().output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("control_operator"));
}
