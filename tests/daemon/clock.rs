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

use std::os::unix::fs::PermissionsExt;
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

/// A real chronyd, told not to touch the clock (`-x`), synchronised to its own `local stratum
/// 10`, on a private command socket (so it is nobody else's chronyd and moves no clock):
/// killed when dropped.
struct PrivateChronyd {
    child: std::process::Child,
    dir: tempfile::TempDir,
}

impl PrivateChronyd {
    fn start() -> PrivateChronyd {
        let chronyd = ["/usr/sbin/chronyd", "/sbin/chronyd"]
            .into_iter()
            .map(Path::new)
            .find(|p| p.exists())
            .expect("chronyd is missing: install Debian's chrony (scripts/test does)");
        // chronyd refuses a socket directory others may read.
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let conf = dir.path().join("chrony.conf");
        std::fs::write(
            &conf,
            format!(
                "local stratum 10\nbindcmdaddress {0}/chronyd.sock\ncmdport 0\nport 0\n\
                 pidfile {0}/chronyd.pid\ndriftfile {0}/drift\n",
                dir.path().display()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.path().join("chronyd.log")).unwrap();
        let child = std::process::Command::new(chronyd)
            .args(["-x", "-d", "-u", "root", "-f"])
            .arg(&conf)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut c = PrivateChronyd { child, dir };
        let t0 = Instant::now();
        while c.tracking().is_none() {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "chronyd answering `chronyc -c tracking` on its socket within 20 s: {}",
                std::fs::read_to_string(c.dir.path().join("chronyd.log")).unwrap_or_default()
            );
            if let Some(st) = c.child.try_wait().unwrap() {
                panic!(
                    "chronyd exited at start ({st}): {}",
                    std::fs::read_to_string(c.dir.path().join("chronyd.log")).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        c
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("chronyd.sock")
    }

    /// `chronyc -c tracking` against this chronyd, once it has a reference.
    fn tracking(&self) -> Option<String> {
        let out = std::process::Command::new("chronyc")
            .arg("-h")
            .arg(self.socket())
            .args(["-c", "tracking"])
            .output()
            .ok()?;
        let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && line.starts_with("7F7F0101,")).then_some(line)
    }

    /// A directory with a `chronyc` that is the real one asked on this chronyd's socket, for
    /// the daemon's PATH (the daemon runs plain `chronyc -c tracking`, which asks the
    /// system's chronyd).
    fn chronyc_dir(&self) -> PathBuf {
        let bin = self.dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let chronyc = bin.join("chronyc");
        std::fs::write(
            &chronyc,
            format!(
                "#!/bin/sh\nexec /usr/bin/chronyc -h {} \"$@\"\n",
                self.socket().display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&chronyc, std::fs::Permissions::from_mode(0o755)).unwrap();
        bin
    }
}

impl Drop for PrivateChronyd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// With chrony running, each trace's clock.jsonl carries chrony's own tracking fields (a
/// real chronyd's, `local stratum 10`): its reference, stratum and leap status, and the
/// verdict names chrony.
#[test]
fn each_trace_records_a_running_chronyd_s_tracking() {
    let chrony = PrivateChronyd::start();
    let want = chrony.tracking().unwrap();
    let mut d = TestDaemon::create(json!({}));
    let mut cmd = d.command();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![chrony.chronyc_dir()];
    dirs.extend(std::env::split_paths(&path));
    cmd.env("PATH", std::env::join_paths(dirs).unwrap());
    d.spawn_cmd(cmd);
    let file = d.trace_dir().join("_roverlog/clock.jsonl");
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
    let c = &line["chrony"];
    // chrony's line for its local reference: reference id 7F7F0101 (no name), stratum 10,
    // leap status Normal; the daemon's parse of it is core to the record.
    let ours = roverlog_daemon::clock_sync::parse_tracking(&want).unwrap();
    assert_eq!(c["reference"], "7F7F0101", "{line}\nchronyc: {want}");
    assert_eq!(c["stratum"], 10, "{line}");
    assert_eq!(c["leap"], "Normal", "{line}");
    assert_eq!(c["frequency_ppm"], json!(ours.frequency_ppm), "{line}");
    for key in [
        "system_time_s",
        "last_offset_s",
        "rms_offset_s",
        "root_delay_s",
        "root_dispersion_s",
    ] {
        assert!(c[key].is_f64() || c[key].is_i64(), "{key}: {line}");
    }
    assert!(
        line["summary"]
            .as_str()
            .unwrap()
            .contains("chrony: 7F7F0101 stratum 10, offset "),
        "the verdict names chrony: {line}"
    );
}
