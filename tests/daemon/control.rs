//! The control socket and `roverlog ctl`, the drop policy's exact counts, the disk guard,
//! peer-credential checks, rotation.

use crate::support::daemon;

use std::process::Command;
use std::time::Duration;

use daemon::*;
use serde_json::{json, Value};

fn ctl_cli(d: &TestDaemon, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_roverlog"))
        .arg("ctl")
        .arg("--socket")
        .arg(d.control_path())
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn start_stop_rotate_mark_and_ctl() {
    let d = TestDaemon::start(json!({"autostart": false}));
    let st = d.status();
    assert_eq!(st["recording"], false);
    assert_eq!(d.ctl(json!({"cmd": "stop"}))["ok"], false);

    // Frames sent while not recording are accepted and discarded (counted).
    let (mut c, r) = d.connect(&raw_hello("s", 2));
    assert_eq!(r["ok"], true);
    assert!(r["trace"].is_null());
    c.send(&frame(1.0, None, &[(&[1, 1], false)]));
    assert_eq!(c.sync(), 0);
    assert_eq!(d.status()["sensors"]["s"]["discarded"], 1);

    // A label cannot escape data_root.
    for bad in ["../x", "a/b", ".hidden"] {
        let r = d.ctl(json!({"cmd": "start", "label": bad}));
        assert_eq!(r["ok"], false, "{bad}: {r}");
    }
    let (code, out) = ctl_cli(&d, &["start", "--label", "run1"]);
    assert_eq!(code, Some(0), "{out}");
    let first = d.trace_dir();
    assert!(first
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .ends_with("-run1"));
    assert_eq!(first.parent().unwrap(), d.data_root());
    for i in 0..5 {
        c.send(&frame(i as f64, None, &[(&[i as u8, 0], false)]));
    }
    assert_eq!(c.sync(), 5);
    assert_eq!(ctl_cli(&d, &["mark", "turning left"]).0, Some(0));
    // A sensor whose driver left before the rotation ends with this trace.
    {
        let (mut g, r) = d.connect(&raw_hello("gone", 2));
        assert_eq!(r["ok"], true, "{r}");
        for i in 0..2 {
            g.send(&frame(i as f64, None, &[(&[i as u8, 1], false)]));
        }
        assert_eq!(g.sync(), 2);
    }
    d.wait_status("gone's driver seen to leave", |st| {
        st["sensors"]["gone"]["connected"] == false
    });

    // Rotation cuts the stream exactly: 5 samples in the first trace, the rest in the second.
    let r = d.ctl(json!({"cmd": "rotate", "label": "run2"}));
    assert_eq!(r["ok"], true, "{r}");
    let second = d.trace_dir();
    assert_ne!(first, second);
    for i in 5..8 {
        c.send(&frame(i as f64, None, &[(&[i as u8, 0], false)]));
    }
    assert_eq!(c.sync(), 3);
    let (code, out) = ctl_cli(&d, &["status"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("recording") && out.contains("\ns "), "{out}");
    // The options go before or after the command, as people type them.
    for args in [["--json", "status"], ["status", "--json"]] {
        let (code, out) = ctl_cli(&d, &args);
        assert_eq!(code, Some(0), "{args:?}: {out}");
        let st: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(st["sensors"]["s"]["samples"], 3);
    }

    let r = d.ctl(json!({"cmd": "stop"}));
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["sensors"]["s"]["samples"], 3);
    let (ts, _) = read_sensor(&first, "s", "x");
    assert_eq!(ts, [0.0, 1.0, 2.0, 3.0, 4.0]);
    let (ts, _) = read_sensor(&second, "s", "x");
    assert_eq!(ts, [5.0, 6.0, 7.0]);
    let ev = events(&first);
    assert!(ev
        .iter()
        .any(|e| matches!(&e.event, Event::Mark { text } if text == "turning left")));
    assert!(ev.iter().any(|e| matches!(e.event, Event::Rotate { .. })));
    // The rotated trace's stop line says what each sensor holds there.
    let stop = ev.iter().rfind(|e| matches!(e.event, Event::Stop { .. }));
    let Some(Event::Stop {
        reason, sensors, ..
    }) = stop.map(|e| &e.event)
    else {
        panic!("no stop: {ev:?}")
    };
    assert_eq!(reason, "rotate", "{stop:?}");
    assert_eq!(
        sensors.get("s"),
        Some(&Count::Samples { samples: 5 }),
        "{stop:?}"
    );
    assert_eq!(
        sensors.get("gone"),
        Some(&Count::Samples { samples: 2 }),
        "{stop:?}"
    );

    // Errors: exit 1 for a refused command, 3 when nothing listens.
    assert_eq!(ctl_cli(&d, &["stop"]).0, Some(1));
    let out = Command::new(env!("CARGO_BIN_EXE_roverlog"))
        .args(["ctl", "--socket", "/nonexistent/roverlog.sock", "status"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(d.ctl(json!({"cmd": "fly"}))["ok"], false);
}

#[test]
fn drop_policy_counts_every_drop_exactly() {
    let d = TestDaemon::start(json!({
        "queue_policy": "drop", "queue_bytes": 2048, "max_frame_bytes": 1024,
        "debug_write_delay_ms": 5,
    }));
    let hello = json!({"roverlog": 1, "sensor": "fast", "seq": true,
        "channels": [{"name": "x", "format": "raw", "type": "u1", "shape": [200]}]});
    let (mut c, _) = d.connect(&hello);
    let n = 300u64;
    let mut all = Vec::new();
    for i in 0..n {
        all.extend(frame(i as f64, Some(i), &[(&sample(4, i, 200), false)]));
    }
    c.send(&all);
    let written = c.sync();
    let st = &d.status()["sensors"]["fast"];
    let drops = st["drops"].as_u64().unwrap();
    assert!(drops > 0, "the slow writer must have caused drops: {st}");
    assert_eq!(written + drops, n, "{st}");
    assert_eq!(
        st["gaps"], 0,
        "drops inside the daemon are not sequence gaps"
    );
    assert!(st["queue_high_water"].as_u64().unwrap() <= 2048);
    let trace = d.trace_dir();
    let (ts, x) = read_sensor(&trace, "fast", "x");
    assert_eq!(ts.len() as u64, written);
    // What was kept is byte-identical and in order.
    for (k, &t) in ts.iter().enumerate() {
        assert_eq!(x[k], sample(4, t as u64, 200));
    }
    let ev = events(&trace);
    let spans: Vec<(u64, f64, f64)> = ev
        .iter()
        .filter_map(|e| match e.event {
            Event::Drop {
                count,
                from_ts,
                to_ts,
                ..
            } => Some((count, from_ts, to_ts)),
            _ => None,
        })
        .collect();
    let logged: u64 = spans.iter().map(|s| s.0).sum();
    assert_eq!(logged, drops);
    let first = spans.first().unwrap();
    assert!(first.1 <= first.2);
}

#[test]
fn disk_guard_refuses_to_record_below_min_free_bytes() {
    // No filesystem has u64::MAX / 2 bytes free: the guard trips at once.
    let d = TestDaemon::start(json!({"min_free_bytes": u64::MAX / 2, "autostart": false}));
    let st = d.status();
    assert_eq!(st["disk"]["low"], true, "{st}");
    let r = d.ctl(json!({"cmd": "start"}));
    assert_eq!(r["ok"], false);
    assert!(r["error"].as_str().unwrap().contains("disk low"), "{r}");
}

#[test]
fn peer_credentials_are_checked_before_the_hello() {
    // Our own uid is not on the list: refused before anything is read.
    let uid = unsafe { libc::getuid() };
    let d = TestDaemon::start(json!({"allow_uids": [uid + 12345], "socket_mode": "0600"}));
    let mut s = std::os::unix::net::UnixStream::connect(d.ingest_path()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut reply = String::new();
    use std::io::Read;
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.contains("not in allow_uids"), "{reply}");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(d.control_path()).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);

    let d = TestDaemon::start(json!({"allow_uids": [uid]}));
    let (_c, r) = d.connect(&raw_hello("ok", 1));
    assert_eq!(r["ok"], true, "{r}");
}

#[test]
fn rotation_by_size() {
    let d = TestDaemon::start(json!({"rotate_bytes": 10000}));
    let first = d.trace_dir();
    let (mut c, _) = d.connect(&raw_hello("s", 1000));
    for i in 0..20 {
        c.send(&frame(i as f64, None, &[(&sample(1, i, 1000), false)]));
    }
    c.sync();
    let t0 = std::time::Instant::now();
    while d.trace_dir() == first {
        assert!(t0.elapsed() < Duration::from_secs(10), "no rotation");
        std::thread::sleep(Duration::from_millis(50));
    }
    let ev = events(&first);
    assert!(ev
        .iter()
        .any(|e| matches!(&e.event, Event::Rotate { reason, .. } if reason == "rotate_bytes")));
}

#[test]
fn sighup_rotates() {
    let d = TestDaemon::start(json!({}));
    let first = d.trace_dir();
    // Trace names have one-second resolution; a same-second rotation gets a ".2" suffix.
    d.signal(libc::SIGHUP);
    let t0 = std::time::Instant::now();
    while d.trace_dir() == first {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "SIGHUP did not rotate"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let ev = events(&first);
    assert!(ev
        .iter()
        .any(|e| matches!(&e.event, Event::Rotate { reason, .. } if reason == "SIGHUP")));
}

#[test]
fn no_arguments_runs_on_defaults_in_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_roverlog"))
        .arg("daemon")
        .current_dir(dir.path())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !dir.path().join("run/control.sock").exists() {
        assert!(t0.elapsed() < Duration::from_secs(20));
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = Command::new(env!("CARGO_BIN_EXE_roverlog"))
        .args(["ctl", "--json", "status"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let st: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(st["recording"], true, "{st}");
    assert!(dir.path().join("data").read_dir().unwrap().count() == 1);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = output_within(child, 30, "the daemon after SIGINT");
    assert!(out.status.success(), "{:?}", out.status);
}

#[test]
fn block_policy_loses_nothing_and_max_sensors_is_enforced() {
    let d = TestDaemon::start(json!({
        "queue_policy": "block", "queue_bytes": 2048, "max_frame_bytes": 1024,
        "debug_write_delay_ms": 1, "max_sensors": 2,
    }));
    let (mut c, _) = d.connect(&raw_hello("slow", 200));
    let n = 300u64;
    let mut all = Vec::new();
    for i in 0..n {
        all.extend(frame(i as f64, None, &[(&sample(5, i, 200), false)]));
    }
    c.send(&all);
    assert_eq!(c.sync(), n);
    let st = &d.status()["sensors"]["slow"];
    assert_eq!(st["drops"], 0);
    let hw = st["queue_high_water"].as_u64().unwrap();
    assert!(hw > 0 && hw <= 2048, "{st}");
    let (ts, x) = read_sensor(&d.trace_dir(), "slow", "x");
    assert_eq!(ts.len() as u64, n);
    assert_eq!(x[299], sample(5, 299, 200));

    let (_b, r) = d.connect(&raw_hello("second", 1));
    assert_eq!(r["ok"], true);
    let (_c, r) = d.connect(&raw_hello("third", 1));
    assert_eq!(r["ok"], false);
    assert!(r["error"].as_str().unwrap().contains("max_sensors"), "{r}");
}

/// The `stats` log lines print the same counters as `status`; both must match the files.
#[test]
fn stats_log_lines_and_status_agree_with_the_files() {
    let d = TestDaemon::start(json!({"stats_interval_ms": 200, "fsync": "on_request"}));
    let (mut a, _) = d.connect(&raw_hello("a", 100));
    let (mut b, _) = d.connect(&raw_hello("b", 7));
    for i in 0..500u64 {
        a.send(&frame(i as f64, None, &[(&sample(1, i, 100), false)]));
        if i % 5 == 0 {
            b.send(&frame(i as f64, None, &[(&sample(2, i, 7), false)]));
        }
    }
    assert_eq!(a.sync(), 500);
    assert_eq!(b.sync(), 100);
    // A stats round printed after the syncs (log lines have no sequence: wait for one whose
    // counts are final, and fail if none comes).
    let t0 = std::time::Instant::now();
    let fields = |log: &str, sensor: &str| -> Option<Vec<(String, String)>> {
        let line = log
            .lines()
            .rfind(|l| l.contains(&format!(" stats sensor={sensor} ")))?;
        let at = line.find(" stats ").unwrap() + 7;
        Some(
            line[at..]
                .split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
                .collect(),
        )
    };
    let get =
        |f: &[(String, String)], k: &str| f.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone());
    let trace = d.trace_dir();
    loop {
        let log = d.log();
        let (fa, fb) = (fields(&log, "a"), fields(&log, "b"));
        if let (Some(fa), Some(fb)) = (&fa, &fb) {
            if get(fa, "durable").as_deref() == Some("500")
                && get(fb, "durable").as_deref() == Some("100")
            {
                for (f, name, n) in [(fa, "a", 500usize), (fb, "b", 100)] {
                    let (ts, _) = read_sensor(&trace, name, "x");
                    assert_eq!(ts.len(), n);
                    assert_eq!(get(f, "samples"), Some(n.to_string()), "{f:?}");
                    assert_eq!(get(f, "drops").as_deref(), Some("0"), "{f:?}");
                    assert_eq!(get(f, "failed").as_deref(), Some(""), "{f:?}");
                    let st = d.status();
                    assert_eq!(st["sensors"][name]["samples"], n, "{st}");
                    assert_eq!(st["sensors"][name]["durable"], n, "{st}");
                }
                break;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no stats line with the final counts:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `rotate` without a label (the command, SIGHUP) starts the new trace "with the same label"
/// (docs/protocol.md 9), i.e. the label of the trace being rotated, not the config's default.
#[test]
fn rotation_keeps_the_label_of_the_current_trace() {
    let d = TestDaemon::start(json!({"autostart": false}));
    let r = d.ctl(json!({"cmd": "start", "label": "drive1"}));
    assert_eq!(r["ok"], true, "{r}");
    let name = |p: &std::path::Path| p.file_name().unwrap().to_str().unwrap().to_string();
    let first = d.trace_dir();
    let r = d.ctl(json!({"cmd": "rotate"}));
    assert_eq!(r["ok"], true, "{r}");
    let second = d.trace_dir();
    assert_ne!(first, second);
    assert!(
        name(&second).contains("-drive1"),
        "rotate dropped the label: {} -> {}",
        name(&first),
        name(&second)
    );
    d.signal(libc::SIGHUP);
    let t0 = std::time::Instant::now();
    while d.trace_dir() == second {
        assert!(t0.elapsed() < Duration::from_secs(10), "no rotation");
        std::thread::sleep(Duration::from_millis(20));
    }
    let third = d.trace_dir();
    assert!(
        name(&third).contains("-drive1"),
        "SIGHUP dropped the label: {} -> {}",
        name(&second),
        name(&third)
    );
}

/// A sensor lives until its trace closes with no connection attached: a rotation closes the
/// trace, so a sensor whose driver left is not carried into the new trace (no empty directory
/// there, no `max_sensors` place held for ever).
#[test]
fn rotation_forgets_sensors_without_a_connection() {
    let d = TestDaemon::start(json!({"max_sensors": 1}));
    let first = d.trace_dir();
    let (mut c, _) = d.connect(&raw_hello("gone", 4));
    for i in 0..3 {
        c.send(&frame(i as f64, None, &[(&sample(1, i, 4), false)]));
    }
    assert_eq!(c.sync(), 3);
    drop(c);
    d.wait_status("the driver left", |st| {
        st["sensors"]["gone"]["connected"] == false
    });
    let r = d.ctl(json!({"cmd": "rotate"}));
    assert_eq!(r["ok"], true, "{r}");
    let second = d.trace_dir();
    assert_ne!(first, second);
    assert!(
        !second.join("gone").exists(),
        "a sensor without a driver was carried into the new trace"
    );
    let (_c, r) = d.connect(&raw_hello("new", 4));
    assert_eq!(r["ok"], true, "{r}");
    let (ts, _) = read_sensor(&first, "gone", "x");
    assert_eq!(ts, [0.0, 1.0, 2.0]);
}

/// `stop` waits for every writer to finish; a driver whose hello arrives meanwhile must not
/// be left writing into the trace being stopped: what it sent before the stop is in that
/// trace, listed in the stop reply and synced, and what it sends after is discarded.
#[test]
fn a_sensor_connecting_while_stop_drains_is_stopped_too() {
    let d = TestDaemon::start(json!({"debug_write_delay_ms": 10}));
    let trace = d.trace_dir();
    let (mut a, _) = d.connect(&raw_hello("a", 4));
    for i in 0..200 {
        a.send(&frame(i as f64, None, &[(&sample(1, i, 4), false)]));
    }
    // The frames must be in the writer's queue before the stop, or the stop has nothing to
    // drain: 1200 bytes is 75 frames or more, at least 750 ms of writing at 10 ms a sample.
    d.wait_status("a's frames queued", |st| {
        st["sensors"]["a"]["queue_bytes"].as_u64() >= Some(1200)
    });
    let control = d.control_path();
    let stop = std::thread::spawn(move || {
        use std::io::{BufRead, Write};
        let mut s = std::os::unix::net::UnixStream::connect(control).unwrap();
        s.write_all(b"{\"cmd\": \"stop\"}\n").unwrap();
        let mut l = String::new();
        std::io::BufReader::new(s).read_line(&mut l).unwrap();
        serde_json::from_str::<Value>(&l).unwrap()
    });
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        d.status()["recording"],
        true,
        "the stop must still be draining"
    );
    let (mut b, r) = d.connect(&raw_hello("b", 4));
    assert_eq!(r["ok"], true, "{r}");
    let late = r["trace"].is_string();
    for i in 0..5 {
        b.send(&frame(i as f64, None, &[(&sample(2, i, 4), false)]));
    }
    b.send(&0u32.to_le_bytes());
    let first = b.read_reply();
    let stopped = stop.join().unwrap();
    assert_eq!(stopped["ok"], true, "{stopped}");
    assert_eq!(d.status()["recording"], false);
    // After the stop: discarded, not written anywhere.
    for i in 5..10 {
        b.send(&frame(i as f64, None, &[(&sample(2, i, 4), false)]));
    }
    b.send(&0u32.to_le_bytes());
    let after = b.read_reply();
    assert_eq!(after["recording"], false, "{after}");
    assert_eq!(after["durable"], 0, "written after the stop: {after}");
    if late && first["recording"] == true {
        // b joined the trace being stopped: it was stopped with it.
        let n = first["durable"].as_u64().unwrap();
        assert_eq!(stopped["sensors"]["b"]["samples"], n, "{stopped}");
        let (ts, _) = read_sensor(&trace, "b", "x");
        assert_eq!(ts.len() as u64, n);
    }
}

/// With `autostart`, a daemon started on a disk already under `min_free_bytes` is not
/// recording because of the disk guard, and status says so like when the guard trips later.
#[test]
fn autostart_refused_by_the_disk_guard_says_why_in_status() {
    let d = TestDaemon::start(json!({"min_free_bytes": u64::MAX / 2}));
    let st = d.status();
    assert_eq!(st["recording"], false, "{st}");
    assert_eq!(st["disk"]["low"], true, "{st}");
    assert!(
        st["stopped_reason"]
            .as_str()
            .is_some_and(|r| r.contains("disk low")),
        "{st}"
    );
}

#[test]
fn ctl_with_a_zero_timeout_is_bad_usage_not_an_unreachable_daemon() {
    let mut d = TestDaemon::start(json!({}));
    let (code, text) = ctl_cli(&d, &["--timeout", "0", "status"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("--timeout"), "{text}");
    assert!(d.stop().success(), "{}", d.log());
}

#[test]
fn ctl_status_into_a_closed_pipe_ends_quietly() {
    let mut d = TestDaemon::start(json!({}));
    // `roverlog ctl status | head -0`: the reader is gone before ctl prints.
    let out = Command::new(env!("CARGO_BIN_EXE_roverlog"))
        .arg("ctl")
        .arg("--socket")
        .arg(d.control_path())
        .arg("status")
        .stdout(closed_pipe())
        .output()
        .unwrap();
    assert_quiet_on_closed_pipe(&out);
    assert!(d.stop().success(), "{}", d.log());
}

/// The `status` reply is a typed struct inside the daemon: its JSON keys and their order are
/// the protocol's (docs/protocol.md), at the top, per sensor, for the disk and the ring, and
/// the same through `GET /api/status` (daemon_http checks that one matches this).
#[test]
fn the_status_reply_keeps_its_keys_and_their_order() {
    let d = TestDaemon::start(json!({}));
    let (mut c, r) = d.connect(&raw_hello("s", 2));
    assert_eq!(r["ok"], true, "{r}");
    c.send(&frame(1.0, None, &[(&[1, 1], false)]));
    c.sync();
    let st = d.status();
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(
        keys(&st),
        [
            "ok",
            "recording",
            "trace",
            "trace_dir",
            "stopped_reason",
            "alarms",
            "disk",
            "sensors",
            "snapshot",
            "absent_sensors"
        ],
        "{st}"
    );
    assert_eq!(
        keys(&st["disk"]),
        ["data_root", "free_bytes", "min_free_bytes", "low", "errors"]
    );
    assert_eq!(
        keys(&st["sensors"]["s"]),
        [
            "connected",
            "failed",
            "samples",
            "bytes",
            "rate_hz",
            "queue_bytes",
            "queue_high_water",
            "queue_limit",
            "drops",
            "gaps",
            "repeats",
            "clock_steps",
            "discarded",
            "snapshot_dropped",
            "durable",
            "last_fsync_age_ms",
            "clock_offset_s",
            "clock_jitter_s",
            "lzmaf_stored",
            "alarms"
        ],
        "{st}"
    );
    assert_eq!(
        keys(&st["snapshot"]),
        [
            "enabled",
            "bytes",
            "frames",
            "dropped_frames",
            "snapshot_bytes",
            "pre_trigger_seconds",
            "held_seconds",
            "trigger_stops_in_s"
        ]
    );
    assert_eq!(st["sensors"]["s"]["samples"], 1);
    assert!(st["sensors"]["s"]["alarms"].as_array().unwrap().is_empty());
}
