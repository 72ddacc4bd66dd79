//! `roverlog bench --only soak [--minutes N]`: the crew's day, for `--minutes` (default 60),
//! against the real daemon (this executable), to see that nothing pages the crew falsely and
//! the daemon's memory stays flat. Not run in CI (a smoke test runs it for seconds).
//!
//! Everything is on at once:
//! - steady sensors, each with its `expected_hz`: `imu` 200 Hz (two `f4[3]` channels), `gps`
//!   10 Hz (`f8[3]`), `camera` 10 Hz (a JPEG-sized blob, [`CAMERA_BYTES`]);
//! - snapshot mode (`autostart: false`), a `trigger` every rotation period P
//!   (`minutes * 60 / 12` s, at most 5 minutes) whose trace stops itself after 0.75 P, and a
//!   `rotate` of that trace at 0.5 P: trigger, rotation, stop and armed-idle every period;
//! - the dashboard's `/api/status` and `/api/history` fetched every second over HTTP;
//! - a live Foxglove client subscribed to every channel;
//! - an `alarm_command` (a shell script appending the alarm's JSON to a file).
//!
//! It reports the false alarms (`alarm` events in every trace's `events.jsonl`, and
//! `alarm_command` invocations: every sensor is steady, so each is false and the run fails
//! unless both are 0) and the daemon's RSS at start (after the first period), middle and end.
//! On a starved machine the bench's own drivers can stall (two frames more than
//! [`STALL_S`] apart): an alarm for that sensor within [`STALL_EXPLAINS_S`] of the stall, or
//! raised once the bench has stopped its drivers (they sync, then disconnect, while a
//! triggered trace may still record), is true and reported apart, and a `rotate` that would race the trigger's own stop is skipped
//! and counted (the daemon's `trigger_stops_in_s` says how long the trace has left).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::procfs;
use roverlog_client::Driver;
use roverlog_core::format::events::{read_events, Event};
use roverlog_core::format::{ChannelFormat, ChannelMeta, DType, SensorMeta};
use roverlog_daemon::events::EVENTS_DIR;
use roverlog_daemon::Config;

use super::child::{ctl, DaemonChild};
use super::error::{DaemonError, Result, RunError, ScenarioError, UsageError, ViewerError};
use super::foxglove::Watcher;
use super::{make_work_dir, Options};

/// Bytes of one camera frame: a 640x480 JPEG at ordinary quality.
pub(super) const CAMERA_BYTES: usize = 60_000;
/// The longest rotation period (the "a rotation every 5 minutes").
const MAX_PERIOD_S: f64 = 300.0;

fn now_epoch() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// One steady sensor: its name, rate and hello.
struct Steady {
    name: &'static str,
    hz: f64,
    meta: SensorMeta,
    /// Bytes of each channel's sample.
    sizes: Vec<usize>,
}

fn sensors() -> Vec<Steady> {
    let ch = |name: &str, format: ChannelFormat, dtype: DType, shape: Vec<usize>| {
        (
            name.to_string(),
            ChannelMeta::new(format, dtype, shape, "soak"),
        )
    };
    vec![
        Steady {
            name: "imu",
            hz: 200.0,
            meta: SensorMeta {
                channels: vec![
                    ch("acc", ChannelFormat::Raw, DType::F4, vec![3]),
                    ch("gyro", ChannelFormat::Raw, DType::F4, vec![3]),
                ],
            },
            sizes: vec![12, 12],
        },
        Steady {
            name: "gps",
            hz: 10.0,
            meta: SensorMeta {
                channels: vec![ch("pos", ChannelFormat::Raw, DType::F8, vec![3])],
            },
            sizes: vec![24],
        },
        Steady {
            name: "camera",
            hz: 10.0,
            meta: SensorMeta {
                channels: vec![ch(
                    "img",
                    ChannelFormat::Blob("jpg".into()),
                    DType::U1,
                    vec![480, 640, 3],
                )],
            },
            sizes: vec![CAMERA_BYTES],
        },
    ]
}

/// A gap between two of a sender's frames longer than this is the machine starving the
/// driver (a loaded 2-core VM), not a steady sensor: alarms it explains are not false.
const STALL_S: f64 = 0.2;
/// How long after a driver's stall an alarm for its sensor counts as caused by it: the
/// longest a rate window (1 s) plus the 1 s an alarm needs out of bounds, and margin.
const STALL_EXPLAINS_S: f64 = 3.0;

/// A thread sending one sensor's frames on an even schedule until stopped.
struct Sender {
    name: &'static str,
    sent: Arc<AtomicU64>,
    /// Epoch intervals between two frames sent more than [`STALL_S`] apart.
    stalls: Arc<std::sync::Mutex<Vec<(f64, f64)>>>,
    thread: JoinHandle<Result<()>>,
}

fn start_sender(socket: PathBuf, s: Steady, stop: Arc<AtomicBool>) -> Result<Sender> {
    let (mut d, reply) =
        Driver::connect(&socket, s.name, &s.meta, false).map_err(|e| ScenarioError::Connect {
            sensor: s.name,
            error: Box::new(e),
        })?;
    drop(reply);
    let sent = Arc::new(AtomicU64::new(0));
    let count = sent.clone();
    let stalls = Arc::new(std::sync::Mutex::new(Vec::new()));
    let stalled = stalls.clone();
    let thread = std::thread::spawn(move || -> Result<()> {
        let mut last: Option<f64> = None;
        let mut bufs: Vec<Vec<u8>> = s
            .sizes
            .iter()
            .map(|&n| (0..n).map(|i| (i * 7 + 3) as u8).collect())
            .collect();
        let period = Duration::from_secs_f64(1.0 / s.hz);
        let mut next = Instant::now();
        let mut i = 0u64;
        while !stop.load(Relaxed) {
            for b in &mut bufs {
                b[0] = i as u8;
            }
            let samples: Vec<&[u8]> = bufs.iter().map(Vec::as_slice).collect();
            let now = now_epoch();
            if let Some(prev) = last.filter(|&p| now - p > STALL_S) {
                stalled.lock().expect("stalls lock").push((prev, now));
            }
            last = Some(now);
            d.send(now, None, &samples)
                .map_err(|e| ScenarioError::Send {
                    sensor: s.name,
                    frame: i,
                    error: Box::new(e),
                })?;
            i += 1;
            count.store(i, Relaxed);
            next += period;
            // Late (the machine is busy): no sleep, catch up at once as a driver with a backlog.
            if let Some(wait) = next.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
        d.sync().map_err(|e| ScenarioError::Sync {
            sensor: s.name,
            error: Box::new(e),
        })?;
        Ok(())
    });
    Ok(Sender {
        name: s.name,
        sent,
        stalls,
        thread,
    })
}

/// The dashboard fetched every second until stopped: (answered, failed, first failure).
fn start_poller(addr: String, stop: Arc<AtomicBool>) -> JoinHandle<(u64, u64, Option<String>)> {
    std::thread::spawn(move || {
        let (mut ok, mut failed, mut first) = (0u64, 0u64, None);
        let mut next = Instant::now();
        while !stop.load(Relaxed) {
            for path in ["/api/status", "/api/history"] {
                match super::dashboard::get(&addr, path) {
                    Ok(()) => ok += 1,
                    Err(e) => {
                        failed += 1;
                        first.get_or_insert(e.to_string());
                    }
                }
            }
            next += Duration::from_secs(1);
            while !stop.load(Relaxed) && Instant::now() < next {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        (ok, failed, first)
    })
}

fn write_config(work: &Path, alarms_file: &Path) -> Result<(Config, PathBuf)> {
    let script = work.join("alarm.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n{{ cat; echo; }} >> '{}'\n",
            alarms_file.display()
        ),
    )
    .map_err(|e| RunError::io("writing", &script, e))?;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| RunError::io("making executable", &script, e))?;
    let mut expect = serde_json::Map::new();
    for s in sensors() {
        expect.insert(
            s.name.into(),
            json!({"expected_hz": s.hz, "required": true}),
        );
    }
    let v = json!({
        "_doc": "written by roverlog bench --only soak",
        "data_root": work.join("data-soak"),
        "ingest_socket": work.join("run/ingest.sock"),
        "control_socket": work.join("run/control.sock"),
        "http_listen": "127.0.0.1:0",
        "foxglove_listen": "127.0.0.1:0",
        "autostart": false,
        "snapshot": true,
        "sensors": expect,
        "alarm_command": [script],
        "shutdown_deadline_ms": 60000,
    });
    let path = work.join("roverlog-soak.json");
    let bytes = serde_json::to_vec_pretty(&v).expect("a JSON value serialises");
    std::fs::write(&path, bytes).map_err(|e| RunError::io("writing", &path, e))?;
    let cfg = Config::load(&path)?;
    Ok((cfg, path))
}

/// Every trace under `root` (a directory holding `events/`), however deep.
fn traces(root: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(root) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.join(EVENTS_DIR).is_dir() {
                out.push(p);
            } else {
                traces(&p, out);
            }
        }
    }
}

/// Runs the soak for `minutes` in `work`; the report, and whether it passed.
pub(super) fn run(work: &Path, minutes: f64) -> Result<(Value, bool)> {
    if !(minutes.is_finite() && minutes > 0.0 && minutes <= 24.0 * 60.0) {
        return Err(UsageError::Minutes { got: minutes }.into());
    }
    let total = Duration::from_secs_f64(minutes * 60.0);
    let period = (minutes * 60.0 / 12.0).min(MAX_PERIOD_S);
    let alarms_file = work.join("alarm-commands.jsonl");
    let (cfg, cfg_path) = write_config(work, &alarms_file)?;
    let mut daemon = DaemonChild::start_when(&cfg, &cfg_path, work, "soak", false)?;
    let pid = daemon.child.id();
    let status = ctl(&cfg.sockets.control, json!({"cmd": "status"}))?;
    let (Some(http), Some(feed)) = (
        status["http"]["url"].as_str(),
        status["foxglove"]["url"].as_str(),
    ) else {
        return Err(DaemonError::NoUrl {
            scenario: "soak",
            keys: "http.url or foxglove.url",
            status,
        }
        .into());
    };
    let http = http.trim_start_matches("http://").trim_end_matches('/');

    let stop = Arc::new(AtomicBool::new(false));
    let mut senders = Vec::new();
    for s in sensors() {
        senders.push(start_sender(cfg.sockets.ingest.clone(), s, stop.clone())?);
    }
    let poller = start_poller(http.to_owned(), stop.clone());
    let watcher = Watcher::start(feed)?;

    let cycles = run_cycles(&cfg.sockets.control, pid, total, period);
    // From here the drivers stop sending (and sync) while the daemon still records: a
    // `silent` raised now is true.
    let drivers_stopped = now_epoch();
    stop.store(true, Relaxed);
    let mut failures: Vec<String> = Vec::new();
    let mut sent = serde_json::Map::new();
    let mut stalls: Vec<(&str, Vec<(f64, f64)>)> = Vec::new();
    for s in senders {
        let n = s.sent.load(Relaxed);
        sent.insert(s.name.into(), json!(n));
        stalls.push((s.name, s.stalls.lock().expect("stalls lock").clone()));
        match s.thread.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failures.push(e.to_string()),
            Err(_) => failures.push(format!("sensor {} panicked", s.name)),
        }
    }
    let (polled, poll_failed, poll_error) = poller.join().map_err(|_| ViewerError::Panicked {
        client: "dashboard poller",
    })?;
    let feed_messages = watcher.stop().unwrap_or_else(|e| {
        failures.push(e.to_string());
        0
    });
    let exit = daemon.stop()?;
    if exit != Some(0) {
        failures.push(format!(
            "daemon exit status {exit:?} after SIGTERM (want 0); see {}",
            daemon.log.display()
        ));
    }
    if poll_failed > 0 {
        failures.push(format!(
            "{poll_failed} dashboard requests failed, the first: {}",
            poll_error.unwrap_or_default()
        ));
    }
    failures.extend(
        cycles
            .refused
            .iter()
            .map(|r| format!("command refused: {r}")),
    );

    let alarms = classify_alarms(work, &alarms_file, drivers_stopped, &stalls)?;
    let (alarm_events, invocations) = (&alarms.events, &alarms.commands);
    let false_alarms = alarm_events.len() + invocations.len();
    if false_alarms > 0 {
        failures.push(format!(
            "{false_alarms} false alarms: {} alarm events, {} alarm_command runs",
            alarm_events.len(),
            invocations.len()
        ));
    }
    let (r0, r1, r2) = rss_figures(&cycles, period, total);
    let ok = failures.is_empty();
    let report = json!({
        "scenario": "soak",
        "ok": ok,
        "minutes": minutes,
        "rotation_period_s": period,
        "sensors": sensors().iter().map(|s| json!({"sensor": s.name, "expected_hz": s.hz})).collect::<Vec<_>>(),
        "frames_sent": sent,
        "triggers": cycles.triggers,
        "rotations": cycles.rotations,
        "rotations_skipped_late": cycles.rotations_skipped,
        "driver_stalls": stalls.iter().map(|(n, g)| (n.to_string(), json!(g.len()))).collect::<serde_json::Map<_, _>>(),
        "alarms_after_driver_stalls": {"alarm_events": alarms.explained_events, "alarm_command_runs": alarms.explained_commands},
        "traces": alarms.traces,
        "dashboard_requests": polled,
        "feed_messages": feed_messages,
        "false_alarms": {"total": false_alarms, "alarm_events": alarm_events.len(),
                         "alarm_command_runs": invocations.len(),
                         "events": alarm_events, "commands": invocations},
        "rss_bytes": {"start": r0, "middle": r1, "end": r2,
                      "end_over_start": if r0 > 0 { r2 as f64 / r0 as f64 } else { 0.0 }},
        "daemon_exit": exit,
        "failures": failures,
    });
    Ok((report, ok))
}

/// What the soak's control loop did and saw.
struct Cycles {
    /// The daemon's `VmRSS` about every second: (seconds since the start, bytes).
    rss: Vec<(f64, u64)>,
    /// Commands the daemon refused, with its answer.
    refused: Vec<String>,
    /// When the first trigger was sent, from the start.
    start_at: Duration,
    triggers: u64,
    rotations: u64,
    /// Rotations skipped because the triggered trace was about to stop.
    rotations_skipped: u64,
}

/// The control loop for `total`: a trigger at the start of each period, a rotation in its
/// middle, the daemon's RSS sampled every second.
fn run_cycles(control: &Path, pid: u32, total: Duration, period: f64) -> Cycles {
    let t0 = Instant::now();
    let mut rss = Vec::new(); // (seconds, bytes)
    let mut refused = Vec::new();
    let mut cycle = 0u64;
    let mut rotated = true;
    let (mut triggers, mut rotations, mut rotations_skipped) = (0u64, 0u64, 0u64);
    let cmd = |c: Value, refused: &mut Vec<String>| match ctl(control, c.clone()) {
        Ok(r) if r["ok"] == true => true,
        Ok(r) => {
            refused.push(format!("{c} -> {r}"));
            false
        }
        Err(e) => {
            refused.push(e.to_string());
            false
        }
    };
    // A moment for the ring to fill and the rates to be measured before the first trigger.
    std::thread::sleep(Duration::from_secs_f64((period / 2.0).min(3.0)));
    let start_at = t0.elapsed();
    while t0.elapsed() < total {
        let t = t0.elapsed().as_secs_f64() - start_at.as_secs_f64();
        let k = (t / period).floor() as u64;
        if k >= cycle {
            cycle = k + 1;
            rotated = false;
            if cmd(
                json!({"cmd": "trigger", "label": "soak", "after": 0.75 * period}),
                &mut refused,
            ) {
                triggers += 1;
            }
        } else if !rotated && t - k as f64 * period >= 0.5 * period {
            rotated = true;
            // On a starved machine this loop (or the daemon) can wake so late that the
            // triggered trace is about to stop: a rotate then races the stop. Skip it
            // (counted) unless the daemon says the trace has a fifth of a period left.
            let left = ctl(control, json!({"cmd": "status"}))
                .ok()
                .and_then(|st| st["snapshot"]["trigger_stops_in_s"].as_f64());
            if left.is_some_and(|l| l >= 0.2 * period) {
                if cmd(json!({"cmd": "rotate"}), &mut refused) {
                    rotations += 1;
                }
            } else {
                rotations_skipped += 1;
            }
        }
        if rss
            .last()
            .is_none_or(|&(s, _)| t0.elapsed().as_secs_f64() - s >= 1.0)
        {
            if let Some(b) = procfs::status_bytes(pid, "VmRSS") {
                rss.push((t0.elapsed().as_secs_f64(), b));
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Cycles {
        rss,
        refused,
        start_at,
        triggers,
        rotations,
        rotations_skipped,
    }
}

/// The soak's alarms, false and explained.
struct Alarms {
    /// Its traces (one per trigger, rotation, ...).
    traces: usize,
    /// Alarm events no driver stall explains: false alarms.
    events: Vec<Value>,
    /// Alarm events after a driver stalled or stopped.
    explained_events: Vec<Value>,
    /// `alarm_command` runs no driver stall explains: false alarms.
    commands: Vec<Value>,
    explained_commands: u64,
}

/// Reads the alarm events of every trace and the `alarm_command` runs. An alarm for a sensor
/// whose driver had just stalled (see STALL_S), or raised after the bench stopped its drivers,
/// is true: the driver did stop sending. Every other alarm is false (the sensors are steady).
fn classify_alarms(
    work: &Path,
    alarms_file: &Path,
    drivers_stopped: f64,
    stalls: &[(&str, Vec<(f64, f64)>)],
) -> Result<Alarms> {
    let mut dirs = Vec::new();
    traces(&work.join("data-soak"), &mut dirs);
    dirs.sort();
    let explained = |sensor: &str, start: f64| {
        start >= drivers_stopped
            || stalls.iter().any(|(name, gaps)| {
                *name == sensor
                    && gaps
                        .iter()
                        .any(|&(a, b)| a <= start && start <= b + STALL_EXPLAINS_S)
            })
    };
    let mut alarm_events = Vec::new();
    let mut explained_alarms = Vec::new();
    for d in &dirs {
        let events = read_events(d).map_err(|e| ScenarioError::Events {
            trace: d.clone(),
            error: Box::new(e),
        })?;
        for e in events {
            if let Event::Alarm { sensor, start, .. } = &e.event {
                let line = json!(format!("{}: {:?}", d.display(), e));
                if explained(sensor, *start) {
                    explained_alarms.push(line);
                } else {
                    alarm_events.push(line);
                }
            }
        }
    }
    let (mut invocations, mut explained_runs) = (Vec::new(), 0u64);
    for l in std::fs::read_to_string(alarms_file)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        let v: Value = serde_json::from_str(l).unwrap_or_else(|_| json!(l));
        match (v["sensor"].as_str(), v["start"].as_f64()) {
            (Some(s), Some(t)) if explained(s, t) => explained_runs += 1,
            _ => invocations.push(v),
        }
    }
    Ok(Alarms {
        traces: dirs.len(),
        events: alarm_events,
        explained_events: explained_alarms,
        commands: invocations,
        explained_commands: explained_runs,
    })
}

/// The daemon's RSS after the first period (the ring, queues and pools warmed up), mid-run,
/// and last.
fn rss_figures(c: &Cycles, period: f64, total: Duration) -> (u64, u64, u64) {
    let rss = &c.rss;
    let at = |s: f64| {
        rss.iter()
            .find(|&&(x, _)| x >= s)
            .or(rss.last())
            .map_or(0, |&(_, b)| b)
    };
    let first = (c.start_at.as_secs_f64() + period).min(total.as_secs_f64() / 4.0);
    (
        at(first),
        at(total.as_secs_f64() / 2.0),
        rss.last().map_or(0, |&(_, b)| b),
    )
}

/// The report as a few lines.
pub(super) fn print(r: &Value) {
    let mib = |v: &Value| format!("{:.1} MiB", v.as_f64().unwrap_or(0.0) / (1 << 20) as f64);
    println!(
        "soak: {} min, a trigger and a rotation every {:.0} s: {} triggers, {} rotations, {} traces",
        r["minutes"], r["rotation_period_s"].as_f64().unwrap_or(0.0), r["triggers"], r["rotations"], r["traces"]
    );
    println!("frames sent: {}", r["frames_sent"]);
    println!(
        "dashboard requests answered: {}, Foxglove feed messages: {}",
        r["dashboard_requests"], r["feed_messages"]
    );
    let f = &r["false_alarms"];
    println!(
        "false alarms: {} ({} alarm events, {} alarm_command runs)",
        f["total"], f["alarm_events"], f["alarm_command_runs"]
    );
    let e = &r["alarms_after_driver_stalls"];
    let n = e["alarm_events"].as_array().map_or(0, Vec::len);
    if n > 0 || r["rotations_skipped_late"].as_u64().unwrap_or(0) > 0 {
        println!(
            "true alarms, not counted: {n} after a driver stalled (stalls: {}) or after the bench stopped its drivers; {} rotations skipped (the trace was about to stop)",
            r["driver_stalls"], r["rotations_skipped_late"]
        );
    }
    let m = &r["rss_bytes"];
    println!(
        "daemon RSS: start {}, middle {}, end {} (end/start {:.2})",
        mib(&m["start"]),
        mib(&m["middle"]),
        mib(&m["end"]),
        m["end_over_start"].as_f64().unwrap_or(0.0)
    );
    for f in r["failures"].as_array().into_iter().flatten() {
        println!("FAILED: {}", f.as_str().unwrap_or_default());
    }
}

/// `--only soak`: the soak in a fresh working directory, its report as a table or JSON.
pub(super) fn alone(args: &Options) -> Result<bool> {
    let work = make_work_dir(args.dir.as_deref())?;
    super::progress(&format!(
        "working in {}; soak for {} min",
        work.display(),
        args.minutes
    ));
    let (report, ok) = run(&work, args.minutes)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("json"));
    } else {
        print(&report);
    }
    super::finish(&work, args.keep, ok);
    Ok(ok)
}
