//! `roverlog driver gps` against the real gpsd: `gpsfake` (Debian's gpsd-clients) replays an
//! NMEA log written here (a known path: RMC + GGA once a second, due north-east at 5 knots)
//! through a real gpsd, the driver takes its TPV reports into a real daemon, and the trace's
//! values are checked against the log. The sensor's channels are the ones export's and the
//! live feed's map default picks (`location::by_channel_names`).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::common;
use crate::support::daemon;

use daemon::*;
use serde_json::json;

const FIXES: usize = 25;

/// Fix `i` of the path: latitude, longitude (degrees), altitude (m).
fn point(i: usize) -> [f64; 3] {
    [
        52.5 + i as f64 * 0.0001,
        13.25 + i as f64 * 0.0002,
        34.5 + i as f64 * 0.5,
    ]
}

/// Its epoch time: 2026-11-28 10:00:00 UTC + i s.
fn time(i: usize) -> f64 {
    1_795_860_000.0 + i as f64
}

fn nmea(body: &str) -> String {
    let sum = body.bytes().fold(0u8, |a, b| a ^ b);
    format!("${body}*{sum:02X}\r\n")
}

fn nmea_log() -> String {
    let mut log = String::new();
    for i in 0..FIXES {
        let [lat, lon, alt] = point(i);
        let lat_s = format!("{:02}{:07.4}", lat.trunc(), (lat - lat.trunc()) * 60.0);
        let lon_s = format!("{:03}{:07.4}", lon.trunc(), (lon - lon.trunc()) * 60.0);
        let hms = format!("1000{:02}.00", i);
        log += &nmea(&format!(
            "GPRMC,{hms},A,{lat_s},N,{lon_s},E,5.0,45.0,281126,,,A"
        ));
        log += &nmea(&format!(
            "GPGGA,{hms},{lat_s},N,{lon_s},E,1,08,0.9,{alt:.1},M,47.0,M,,"
        ));
    }
    log
}

fn gpsfake() -> Command {
    let found = Command::new("sh")
        .args(["-c", "command -v gpsfake && command -v gpsd"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "gpsfake/gpsd are not installed: this test needs Debian's `gpsd` and `gpsd-clients` \
         (scripts/test installs them)"
    );
    Command::new("gpsfake")
}

/// Whether something listens on 127.0.0.1:`port` or [::]/[::1]:`port`.
fn listening(port: u16) -> bool {
    let p = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f)
            .unwrap_or_default()
            .lines()
            .skip(1)
            .any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.len() > 3 && cols[1].ends_with(&p) && cols[3] == "0A"
            })
    })
}

/// The gpsd gpsfake started on `port` (gpsfake leaves it running when it is killed).
fn kill_gpsd(port: u16) {
    let flag = format!("-S\0{port}\0");
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if cmd.starts_with(b"/usr/sbin/gpsd\0")
            && cmd.windows(flag.len()).any(|w| w == flag.as_bytes())
        {
            // SAFETY: a signal to the gpsd our gpsfake started on our port.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
    }
}

fn serve(log: &Path, port: u16) -> Child {
    let child = gpsfake()
        .args(["-1", "-q", "-c", "0.05", "-P"])
        .arg(port.to_string())
        .arg(log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !listening(port) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "gpsfake's gpsd did not listen on port {port} within 20 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

#[test]
fn gpsd_fixes_replayed_by_gpsfake_are_in_the_trace_as_the_log_says() {
    let scratch = tempfile::tempdir().unwrap();
    let log = scratch.path().join("path.nmea");
    std::fs::write(&log, nmea_log()).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut d = TestDaemon::start(json!({}));
    let mut fake = serve(&log, port);
    let driver = Command::new(common::roverlog_bin())
        .args(["driver", "gps", "--gpsd"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--socket")
        .arg(d.ingest_path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The log replayed: the fix count stops growing (gpsd outlives gpsfake -1, so the
    // connection does not end); then SIGTERM, which must leave every fix durable.
    let (mut seen, mut still) = (0, Instant::now());
    let start = Instant::now();
    loop {
        let n = d.status()["sensors"]["gps"]["samples"]
            .as_u64()
            .unwrap_or(0);
        if n != seen {
            (seen, still) = (n, Instant::now());
        } else if n >= 12 && still.elapsed() > Duration::from_secs(2) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the replayed fixes within 60 s: {n} so far"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: a signal to our own child, not yet reaped.
    unsafe { libc::kill(driver.id() as i32, libc::SIGTERM) };
    let out = output_within(driver, 30, "the gps driver after SIGTERM");
    let _ = fake.kill();
    let _ = fake.wait();
    kill_gpsd(port);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let trace = d.trace_dir();
    assert!(d.stop().success(), "{}", d.log());

    let col = |ch: &str| -> Vec<f64> {
        read_sensor(&trace, "gps", ch)
            .1
            .iter()
            .map(|b| f64::from_le_bytes(b[..8].try_into().unwrap()))
            .collect()
    };
    let (lat, lon, alt) = (col("latitude"), col("longitude"), col("altitude"));
    let (speed, track, gps_time) = (col("speed"), col("track"), col("gps_time"));
    let mode: Vec<u8> = read_sensor(&trace, "gps", "mode")
        .1
        .iter()
        .map(|b| b[0])
        .collect();
    assert!(
        err.contains(&format!("{n} of {n} durable", n = lat.len())),
        "{err}"
    );
    // Every 3D fix with a time (gpsd omits it until it knows the date) is a point of the log,
    // at its time, in order; about two thirds of the log
    // is there (gpsd drops cycles while it learns the device and when sentences come fast).
    let fixes: Vec<usize> = (0..lat.len())
        .filter(|&k| mode[k] == 3 && gps_time[k].is_finite())
        .collect();
    assert!(
        fixes.len() >= 12,
        "{} 3D fixes of {FIXES}: {err}",
        fixes.len()
    );
    let mut last = None;
    for &k in &fixes {
        let i = (gps_time[k] - time(0)).round() as usize;
        assert!(
            i < FIXES && (gps_time[k] - time(i)).abs() < 1e-3,
            "fix {k} at {}",
            gps_time[k]
        );
        assert!(last < Some(i), "fix {k}: time {i} after {last:?}");
        last = Some(i);
        let [la, lo, al] = point(i);
        assert!(
            (lat[k] - la).abs() < 1e-7,
            "fix {k}: latitude {} want {la}",
            lat[k]
        );
        assert!(
            (lon[k] - lo).abs() < 1e-7,
            "fix {k}: longitude {} want {lo}",
            lon[k]
        );
        assert!(
            (alt[k] - al).abs() < 1e-3,
            "fix {k}: altitude {} want {al}",
            alt[k]
        );
        assert!(
            (speed[k] - 5.0 * 1852.0 / 3600.0).abs() < 1e-3,
            "fix {k}: speed {}",
            speed[k]
        );
        assert!(
            (track[k] - 45.0).abs() < 1e-6,
            "fix {k}: track {}",
            track[k]
        );
    }

    // The map shows it without configuration: export's and the live feed's default mapping
    // picks the channels, and export writes /gps/location.
    let t = roverlog_core::format::Trace::open(&trace).unwrap();
    let meta = t.sensor("gps").unwrap().meta().clone();
    assert!(roverlog_export::location::by_channel_names("gps", &meta).is_some());
    let mcap = scratch.path().join("gps.mcap");
    let r = common::roverlog(&["export".as_ref(), trace.as_os_str(), mcap.as_os_str()]);
    assert!(r.ok(), "{}", r.text());
    assert!(r.text().contains("/gps/location"), "{}", r.text());
}
