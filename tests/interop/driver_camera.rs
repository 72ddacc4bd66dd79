//! `roverlog driver camera` against the real peers: ffmpeg serving MJPEG over HTTP on
//! loopback (`-f mpjpeg -listen 1`, the frames copied from JPEG files ffmpeg encoded, so the
//! served bytes are exactly those files) and a real daemon. The trace's frames must be those
//! files byte for byte, in order, with epoch timestamps taken at receipt. Then a stream that
//! does not end: SIGTERM stops the driver with exit 0, every frame it sent durable and in
//! the trace.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::support::common;
use crate::support::daemon;

use common::video::tool;
use daemon::*;
use serde_json::json;

const FRAMES: usize = 45;

/// FRAMES JPEGs of ffmpeg's test pattern (sizes vary frame to frame), as ffmpeg wrote them.
fn encoded_frames(dir: &Path) -> Vec<Vec<u8>> {
    common::video::mjpeg_frames(dir, FRAMES)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Whether a socket listens on 127.0.0.1:`port` (read from /proc: a probe connection would
/// be ffmpeg's one client).
fn listening(port: u16) -> bool {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let want = format!("0100007F:{port:04X}");
    table.lines().skip(1).any(|l| {
        l.split_whitespace().nth(1) == Some(&want) && l.split_whitespace().nth(3) == Some("0A")
    })
}

/// ffmpeg serving the frame files as one MJPEG HTTP stream at 30 fps (`loops` more times
/// over; -1 forever), once it listens.
fn serve(dir: &Path, port: u16, loops: i32) -> Child {
    let child = tool("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-re", "-stream_loop"])
        .arg(loops.to_string())
        .args(["-framerate", "30", "-f", "image2", "-i"])
        .arg(dir.join("f%03d.jpg"))
        .args(["-c:v", "copy", "-f", "mpjpeg", "-listen", "1"])
        .arg(format!("http://127.0.0.1:{port}/cam.mjpg"))
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !listening(port) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "ffmpeg did not listen on 127.0.0.1:{port} within 20 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn driver(d: &TestDaemon, port: u16) -> Child {
    Command::new(common::roverlog_bin())
        .args(["driver", "camera"])
        .arg(format!("http://127.0.0.1:{port}/cam.mjpg"))
        .arg("--socket")
        .arg(d.ingest_path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn trace_frames(d: &mut TestDaemon) -> (PathBuf, Vec<f64>, Vec<Vec<u8>>) {
    let trace = d.trace_dir();
    assert!(d.stop().success(), "{}", d.log());
    let (ts, frames) = read_sensor(&trace, "camera", "video.avi");
    (trace, ts, frames)
}

#[test]
fn an_ip_cameras_mjpeg_is_stored_byte_identical_and_sigterm_stops_with_every_frame_durable() {
    let scratch = tempfile::tempdir().unwrap();
    let jpegs = encoded_frames(scratch.path());

    // A stream that ends: every frame stored, then exit 3 (the camera went away).
    let mut d = TestDaemon::start(json!({}));
    let port = free_port();
    let mut ffmpeg = serve(scratch.path(), port, 0);
    let before = now();
    let out = output_within(
        driver(&d, port),
        60,
        "the camera driver at the stream's end",
    );
    let after = now();
    let _ = ffmpeg.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!("{FRAMES} of {FRAMES} durable")),
        "{err}"
    );
    let (trace, ts, frames) = trace_frames(&mut d);
    assert_eq!(frames.len(), FRAMES);
    for (k, (got, want)) in frames.iter().zip(&jpegs).enumerate() {
        assert!(
            got == want,
            "frame {k}: {} bytes, ffmpeg's {}",
            got.len(),
            want.len()
        );
    }
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{ts:?}");
    assert!(
        before <= ts[0] && ts[FRAMES - 1] <= after,
        "{before} {ts:?} {after}"
    );
    // ffmpeg -re paces at 30 fps: receipt times span about 1.5 s, not an instant.
    assert!(ts[FRAMES - 1] - ts[0] > 1.0, "{ts:?}");
    let meta = roverlog_core::format::SensorMeta::read(&trace.join("camera")).unwrap();
    let ch = meta.get("video.avi").expect("channel video.avi");
    assert_eq!(ch.format.as_str(), "mjpg");
    assert_eq!(
        ch.shape,
        vec![240, 320, 3],
        "the shape from the first frame's header"
    );

    // A stream that does not end: SIGTERM, exit 0, what was sent is in the trace.
    let mut d = TestDaemon::start(json!({}));
    let port = free_port();
    let mut ffmpeg = serve(scratch.path(), port, -1);
    let child = driver(&d, port);
    let pid = child.id() as i32;
    d.wait_status("the driver's first 30 frames", |s| {
        s["sensors"]["camera"]["samples"].as_u64() >= Some(30)
    });
    // SAFETY: a signal to our own child, not yet reaped.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let out = output_within(child, 30, "the camera driver after SIGTERM");
    let _ = ffmpeg.kill();
    let _ = ffmpeg.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let (_, _, frames) = trace_frames(&mut d);
    assert!(frames.len() >= 30, "{} frames", frames.len());
    assert!(
        err.contains(&format!("{n} frames", n = frames.len()))
            && err.contains(&format!("{n} of {n} durable", n = frames.len())),
        "{err}"
    );
    for (k, got) in frames.iter().enumerate() {
        assert!(got == &jpegs[k % FRAMES], "frame {k} of the looped stream");
    }
}
