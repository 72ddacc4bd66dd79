//! sd_notify through the real daemon process, with a `UnixDatagram` as `$NOTIFY_SOCKET`:
//! READY=1 only once both sockets accept connections, WATCHDOG=1 only while every writer makes
//! progress (a writer stuck in I/O stops the pings, so systemd restarts the daemon), STATUS=
//! lines, STOPPING=1 on SIGTERM.

use crate::support::daemon;

use std::os::unix::net::{UnixDatagram, UnixStream};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use daemon::*;
use roverlog_bench::noise;
use serde_json::json;

/// Every datagram received, with its arrival time.
type Received = Arc<Mutex<Vec<(Instant, String)>>>;

/// Whether both sockets accepted a connection the moment READY=1 arrived.
type ReadyCheck = Arc<Mutex<Option<Result<(), String>>>>;

fn listen(d: &TestDaemon) -> (std::path::PathBuf, Received, ReadyCheck) {
    let path = d.dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&path).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let got: Received = Arc::default();
    let ready: ReadyCheck = Arc::default();
    let (g, r) = (got.clone(), ready.clone());
    let (ingest, control) = (d.ingest_path(), d.control_path());
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        loop {
            match sock.recv(&mut buf) {
                Ok(n) => {
                    let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
                    if msg == "READY=1" {
                        let check = [&ingest, &control].iter().try_for_each(|p| {
                            UnixStream::connect(p)
                                .map(drop)
                                .map_err(|e| format!("{}: {e}", p.display()))
                        });
                        *r.lock().unwrap() = Some(check);
                    }
                    g.lock().unwrap().push((Instant::now(), msg));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(_) => return,
            }
            if Arc::strong_count(&g) == 1 {
                return; // the test is over
            }
        }
    });
    (path, got, ready)
}

fn pings_between(got: &Received, from: Instant, to: Instant) -> usize {
    got.lock()
        .unwrap()
        .iter()
        .filter(|(t, m)| *t >= from && *t < to && m == "WATCHDOG=1")
        .count()
}

fn wait_until(what: &str, secs: u64, mut ok: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !ok() {
        assert!(t0.elapsed() < Duration::from_secs(secs), "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ready_watchdog_only_while_writers_progress_status_and_stopping() {
    // debug_write_delay_ms (test only): every sample takes 5 s to write, so one frame stalls
    // its writer past the 1 s watchdog bound, while an idle writer is healthy.
    let mut d = TestDaemon::create(json!({"debug_write_delay_ms": 5000, "stats_interval_ms": 300}));
    let (notify, got, ready) = listen(&d);
    spawn_under_watchdog(&mut d, &notify, 1_000_000);

    wait_until("READY=1", 20, || ready.lock().unwrap().is_some());
    let r = ready.lock().unwrap().clone().unwrap();
    assert_eq!(r, Ok(()), "READY=1 before both sockets accept connections");
    let first: Vec<String> = got
        .lock()
        .unwrap()
        .iter()
        .map(|(_, m)| m.clone())
        .filter(|m| !m.starts_with("EXTEND_TIMEOUT_USEC="))
        .collect();
    assert_eq!(
        first[0], "READY=1",
        "READY=1 comes first (after start-time extensions)"
    );

    // Healthy and idle: pinged every half second.
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_millis(2600));
    let healthy = pings_between(&got, t0, Instant::now());
    assert!(healthy >= 3, "{healthy} pings in 2.6 s while healthy");

    // A writer stuck 5 s in one sample write: after its 1 s bound, no ping at all.
    let (mut c, r) = d.connect(&raw_hello("slow", 4));
    assert_eq!(r["ok"], true, "{r}");
    c.send(&frame(1.0, None, &[(&[1, 2, 3, 4], false)]));
    let stall = Instant::now();
    std::thread::sleep(Duration::from_millis(4600));
    let stalled = pings_between(&got, stall + Duration::from_millis(1700), Instant::now());
    assert_eq!(stalled, 0, "pinged while a writer was stuck");
    assert!(
        d.log().contains("withholding the watchdog ping"),
        "{}",
        d.log()
    );
    // Once the writes finish, the pings resume.
    wait_until("pings resume", 10, || {
        pings_between(&got, stall + Duration::from_millis(5000), Instant::now()) > 0
    });
    assert_eq!(c.sync(), 1);

    let status: Vec<String> = got
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, m)| m.starts_with("STATUS="))
        .map(|(_, m)| m.clone())
        .collect();
    assert!(
        status
            .iter()
            .any(|m| m.starts_with("STATUS=recording ") && m.contains("1 sensor(s), 1 connected")),
        "{status:?}"
    );
    assert!(status
        .iter()
        .all(|m| m.contains("samples/s") && m.contains("dropped")));

    assert!(d.stop().success(), "{}", d.log());
    wait_until("STOPPING=1", 5, || {
        got.lock().unwrap().iter().any(|(_, m)| m == "STOPPING=1")
    });
}

#[test]
fn watchdog_pings_go_on_while_a_rotation_waits_for_busy_but_progressing_writers() {
    // Every sample takes 400 ms to write: the writer makes progress well within the 2 s
    // watchdog bound, but a backlog of 60 samples takes 24 s to drain, and a rotation (SIGHUP)
    // waits for it.
    let mut d = TestDaemon::create(json!({"debug_write_delay_ms": 400}));
    let (notify, got, _ready) = listen(&d);
    spawn_under_watchdog(&mut d, &notify, 2_000_000);

    let (mut c, r) = d.connect(&raw_hello("busy", 4));
    assert_eq!(r["ok"], true, "{r}");
    feed_one_by_one(&d, &mut c, "busy", 60);
    d.signal(libc::SIGHUP);
    let hup = Instant::now();
    std::thread::sleep(Duration::from_millis(7000));
    let end = Instant::now();
    // The rotation is still waiting for the backlog...
    let st = d.status();
    assert!(
        st["sensors"]["busy"]["queue_bytes"].as_u64().unwrap() > 0,
        "backlog drained already: {st}"
    );
    // ...and every writer made progress all along: the pings must not stop.
    let pings = pings_between(&got, hup + Duration::from_millis(3000), end);
    assert!(
        pings >= 2,
        "{pings} pings in 4 s while the writer progressed\n{}",
        d.log()
    );
    assert!(
        !d.log().contains("withholding the watchdog ping"),
        "{}",
        d.log()
    );
}

/// Starts the daemon as systemd would with `WatchdogSec`: `NOTIFY_SOCKET`, `WATCHDOG_USEC`
/// and a `WATCHDOG_PID` naming the daemon (the shell execs it, so its pid is the daemon's).
fn spawn_under_watchdog(d: &mut TestDaemon, notify: &std::path::Path, usec: u64) {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(r#"WATCHDOG_PID=$$; export WATCHDOG_PID; exec "$0" "$@""#)
        .arg(d.command().get_program())
        .args(d.command().get_args())
        .env("NOTIFY_SOCKET", notify)
        .env("WATCHDOG_USEC", usec.to_string());
    d.spawn_cmd(cmd);
}

/// Start-up recovery of unfinished traces can take long on large traces: the daemon asks the
/// service manager for more start time (`EXTEND_TIMEOUT_USEC=`) before it and while it runs,
/// so systemd does not kill it before READY=1.
#[test]
fn a_long_start_up_recovery_extends_the_start_timeout() {
    let mut d = TestDaemon::create(json!({"debug_recovery_delay_ms": 1500}));
    let (notify, got, _) = listen(&d);
    let mut cmd = d.command();
    cmd.env("NOTIFY_SOCKET", &notify);
    let t0 = Instant::now();
    d.spawn_cmd(cmd);
    wait_until("READY=1 within 20 s", 20, || {
        got.lock().unwrap().iter().any(|(_, m)| m == "READY=1")
    });
    let msgs = got.lock().unwrap().clone();
    let ext = msgs
        .iter()
        .position(|(_, m)| m == "EXTEND_TIMEOUT_USEC=30000000");
    let ready = msgs.iter().position(|(_, m)| m == "READY=1");
    assert!(ext.is_some() && ext < ready, "{msgs:?}");
    assert!(msgs[ready.unwrap()].0 - t0 >= Duration::from_millis(1500));
    assert!(d.stop().success(), "{}", d.log());
}

/// One huge `lzmaf` frame takes seconds to compress (longer than the 1 s watchdog bound
/// here): the encoder reports progress every `lzma::PROGRESS_STEP` bytes of input, so the
/// writer is not taken for stuck and the pings go on while it compresses.
#[test]
fn watchdog_pings_go_on_while_one_huge_lzmaf_frame_compresses() {
    let mut d = TestDaemon::create(json!({}));
    let (notify, got, ready) = listen(&d);
    spawn_under_watchdog(&mut d, &notify, 1_000_000);
    wait_until("READY=1", 20, || ready.lock().unwrap().is_some());

    const N: usize = 10 << 20;
    let hello = json!({"roverlog": 1, "sensor": "lidar", "channels": [
        {"name": "rng", "format": "lzmaf", "type": "u1", "shape": [N]}]});
    let (mut c, r) = d.connect(&hello);
    assert_eq!(r["ok"], true, "{r}");
    let data = noise(N, 0x2545_f491_4f6c_dd1d);
    // The frame takes ~8 s to compress in a debug build on an idle machine, over 30 s (the
    // support driver's read bound) at load 20.
    c.stream
        .set_read_timeout(Some(Duration::from_secs(180)))
        .unwrap();
    let sent = Instant::now();
    c.send(&frame(1.0, None, &[(&data, false)]));
    assert_eq!(c.sync(), 1);
    let done = Instant::now();
    let took = done - sent;
    assert!(
        took >= Duration::from_millis(2500),
        "the frame was compressed and written in {took:?}: too fast to outlast the 1 s \
         watchdog bound, so this test proves nothing (make the frame larger)"
    );
    // From 1.5 s after sending (past the bound) until it was durable: pings every half
    // second. A loaded machine stretches the ticks (41 of 45 at load 12 in a 24 s frame), so
    // three quarters of them, less two at the ends, are required: a withheld ping stops
    // them all, which this still catches.
    let pings = pings_between(&got, sent + Duration::from_millis(1500), done);
    let expect = ((took.as_millis() as usize - 1500) / 500 * 3 / 4)
        .saturating_sub(2)
        .max(1);
    assert!(
        pings >= expect,
        "{pings} pings in the {took:?} one frame took to compress (expected >= {expect})\n{}",
        d.log()
    );
    assert!(
        !d.log().contains("withholding the watchdog ping"),
        "{}",
        d.log()
    );
    let (_, back) = read_sensor(&d.trace_dir(), "lidar", "rng");
    assert_eq!(back, vec![data], "the frame read back differs");
    assert!(d.stop().success(), "{}", d.log());
}

/// Active alarms lead the `STATUS=` line (what `systemctl status` shows), and leave it when
/// they clear.
#[test]
fn active_alarms_lead_the_status_line() {
    let mut d = TestDaemon::create(json!({
        "sensors": {"gps": {"required": true}},
        "missing_after_ms": 200, "health_interval_ms": 50, "stats_interval_ms": 200,
    }));
    let (notify, got, ready) = listen(&d);
    spawn_under_watchdog(&mut d, &notify, 10_000_000);
    wait_until("READY=1", 20, || ready.lock().unwrap().is_some());
    let status_lines = |got: &Received| -> Vec<String> {
        got.lock()
            .unwrap()
            .iter()
            .filter(|(_, m)| m.starts_with("STATUS="))
            .map(|(_, m)| m.clone())
            .collect()
    };
    wait_until("a STATUS= line with the missing gps alarm", 10, || {
        status_lines(&got)
            .iter()
            .any(|m| m.starts_with("STATUS=ALARM (1): missing gps; recording "))
    });
    let (_gps, r) = d.connect(&raw_hello("gps", 4));
    assert_eq!(r["ok"], true, "{r}");
    let cleared = Instant::now();
    wait_until(
        "a STATUS= line without the alarm once gps connected",
        10,
        || {
            got.lock()
                .unwrap()
                .iter()
                .any(|(t, m)| *t > cleared && m.starts_with("STATUS=recording "))
        },
    );
    assert!(d.stop().success(), "{}", d.log());
}
