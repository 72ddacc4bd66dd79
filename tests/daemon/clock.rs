//! The host clock (issue 37): each trace records the clock's synchronisation state
//! (`_roverlog/clock.jsonl`), and a wall-clock step during a recording raises `clock_step` on
//! every surface alarms go to.
//!
//! The step is made without touching the host's clock: the daemon runs under libfaketime
//! (`LD_PRELOAD`, Debian's `libfaketime`, installed by `scripts/test`), whose offset file the
//! test rewrites, so only the daemon's `CLOCK_REALTIME` jumps; its `CLOCK_MONOTONIC` and
//! `CLOCK_BOOTTIME` are left alone (`FAKETIME_DONT_FAKE_MONOTONIC`), as a step by an NTP
//! daemon or `date -s` leaves them. (A time namespace, `unshare --time`, cannot stand in: it
//! offsets only the monotonic and boot clocks, and only before its first process starts.)

use crate::support::daemon;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use daemon::*;
use serde_json::{json, Value};

/// libfaketime's multithreaded library, or a failure naming the package.
fn libfaketime() -> PathBuf {
    let found = std::fs::read_dir("/usr/lib")
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("faketime/libfaketimeMT.so.1"))
        .find(|p| p.exists());
    found.expect("libfaketime is missing: install Debian's libfaketime (scripts/test does)")
}

/// The daemon, under libfaketime with its wall-clock offset read from `offset` (rewritten
/// by the test; read again at most every second).
fn start_under_faketime(offset: &Path) -> TestDaemon {
    std::fs::write(offset, "+0\n").unwrap();
    let mut d = TestDaemon::create(json!({"health_interval_ms": 100}));
    let mut cmd = d.command();
    cmd.env("LD_PRELOAD", libfaketime())
        .env("FAKETIME_TIMESTAMP_FILE", offset)
        .env("FAKETIME_CACHE_DURATION", "1")
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
    d.spawn_cmd(cmd);
    d
}

fn clock_alarm(st: &Value) -> Option<Value> {
    st["alarms"]
        .as_array()?
        .iter()
        .find(|a| a["alarm"] == "clock_step")
        .cloned()
}

#[test]
fn a_wall_clock_step_while_recording_raises_clock_step() {
    let tmp = tempfile::tempdir().unwrap();
    let offset = tmp.path().join("faketime");
    let d = start_under_faketime(&offset);
    let trace = d.trace_dir();
    // Steady ticks first: an unchanged clock raises nothing.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(clock_alarm(&d.status()), None, "{}", d.log());

    let before = std::time::SystemTime::now();
    std::fs::write(&offset, "+30\n").unwrap();
    let st = d.wait_status("the clock_step alarm", |st| clock_alarm(st).is_some());
    let a = clock_alarm(&st).unwrap();
    let step = a["step_s"].as_f64().unwrap();
    assert!((step - 30.0).abs() < 0.5, "{a}");
    assert_eq!(a["sensor"], "", "{a}");
    assert_eq!(a["threshold_s"], 0.1, "{a}");
    // Raised at the daemon's (stepped) time.
    let host = before
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(a["start"].as_f64().unwrap() > host + 29.0, "{a}");

    // In the trace's events, and cleared (10 s after the step) once the clock is steady.
    let t0 = Instant::now();
    let kinds = loop {
        let kinds: Vec<(String, String)> = events(&trace)
            .into_iter()
            .filter_map(|e| match e.event {
                Event::Alarm { alarm, .. } if alarm == "clock_step" => {
                    Some(("alarm".into(), alarm))
                }
                Event::AlarmClear { alarm, .. } if alarm == "clock_step" => {
                    Some(("alarm_clear".into(), alarm))
                }
                _ => None,
            })
            .collect();
        if kinds.len() >= 2 || t0.elapsed() > Duration::from_secs(20) {
            break kinds;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(
        kinds,
        [
            ("alarm".to_string(), "clock_step".to_string()),
            ("alarm_clear".to_string(), "clock_step".to_string())
        ],
        "waited 20 s for the raise and the clear\n{}",
        d.log()
    );
    // A step back is one too.
    std::fs::write(&offset, "+0\n").unwrap();
    let st = d.wait_status("the clock_step alarm for a step back", |st| {
        clock_alarm(st).is_some()
    });
    let step = clock_alarm(&st).unwrap()["step_s"].as_f64().unwrap();
    assert!((step + 30.0).abs() < 0.5, "{st:#}");
}

/// The state the trace records is this host's, as `adjtimex` reads it.
#[test]
fn each_trace_records_the_clock_s_synchronisation_state() {
    let d = TestDaemon::start(json!({}));
    let trace = d.trace_dir();
    assert_eq!(d.ctl(json!({"cmd": "rotate"}))["ok"], true);
    let rotated = d.trace_dir();
    assert_ne!(rotated, trace);
    for (dir, opened) in [(&trace, "start"), (&rotated, "rotate")] {
        let file = dir.join("_roverlog/clock.jsonl");
        let t0 = Instant::now();
        while !file.exists() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "{} not written within 10 s\n{}",
                file.display(),
                d.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let line: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(line["opened"], opened, "{line}");
        let k = roverlog_daemon::clock_sync::kernel().unwrap();
        assert_eq!(line["kernel"]["state"], k.state, "{line}");
        assert_eq!(line["kernel"]["synchronised"], k.synchronised, "{line}");
        let summary = line["summary"].as_str().unwrap();
        if line["synchronised"] == true {
            assert!(summary.starts_with("synchronised ("), "{line}");
        } else {
            assert!(summary.starts_with("unsynchronised ("), "{line}");
        }
        // chrony's view, or why there is none (not installed here).
        assert!(
            line["chrony"].get("stratum").is_some() || line["chrony"].get("error").is_some(),
            "{line}"
        );
        assert!(line["ptp"].is_array(), "{line}");
    }
}
