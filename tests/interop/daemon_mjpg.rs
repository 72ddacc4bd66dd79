//! A camera's `jpg` channel stored as one MJPEG AVI (`formats` override to `mjpg`) through
//! the real daemon: after a clean stop the file is finished (indexed) and plays whole in
//! OpenCV and ffmpeg; after kill -9 every frame acknowledged as durable is there, `validate`
//! flags the unfinished file, `recover` finishes it, and the players read every kept frame.

use crate::support::common;
use crate::support::daemon;

use common::roverlog;
use common::video::{ffmpeg_packets, hashes, opencv_read, opencv_write, our_frames};
use daemon::*;
use roverlog_core::format::avi::MjpgReader;
use serde_json::{json, Value};

fn camera_hello() -> Value {
    json!({"roverlog": 1, "sensor": "cam", "channels": [
        {"name": "img", "format": "jpg", "type": "u1", "shape": [240, 320, 3], "desc": "camera"}]})
}

fn send_frames(c: &mut Driver, jpegs: &[Vec<u8>], from: usize) {
    for (i, j) in jpegs.iter().enumerate() {
        let ts = 1.7e9 + (from + i) as f64 / 30.0;
        c.send(&frame(ts, None, &[(j, true)]));
    }
}

#[test]
fn a_jpg_camera_stored_as_mjpg_is_a_finished_video_after_stop_and_a_recoverable_one_after_kill9() {
    let scratch = tempfile::tempdir().unwrap();
    let src = scratch.path().join("cv.avi");
    opencv_write(&src, 320, 240, 30);
    let jpegs = our_frames(&src);
    let n = jpegs.len();
    let cfg = json!({"formats": {"cam": {"img": "mjpg"}}});

    // A clean stop writes the trailer.
    let mut d = TestDaemon::start(cfg.clone());
    let (mut c, r) = d.connect(&camera_hello());
    assert_eq!(r["ok"], true, "{r}");
    send_frames(&mut c, &jpegs, 0);
    assert_eq!(c.sync(), n as u64);
    let trace = d.trace_dir();
    assert!(d.stop().success(), "{}", d.log());
    let meta = std::fs::read_to_string(trace.join("cam/meta.json")).unwrap();
    assert!(meta.contains("\"mjpg\""), "{meta}");
    let video = trace.join("cam/img");
    let r = MjpgReader::open(&video).unwrap();
    assert_eq!(
        r.layout().problems,
        Vec::<roverlog_core::format::avi::AviProblem>::new()
    );
    assert_eq!(r.layout().indexed, n, "the trailer indexes every frame");
    assert_eq!(our_frames(&video), jpegs);
    assert_eq!(ffmpeg_packets(&video), hashes(&jpegs));
    assert_eq!(opencv_read(&video).0, n);
    let v = roverlog(&["validate".as_ref(), trace.as_os_str()]);
    assert_eq!(v.code, 0, "{}", v.text());

    // kill -9: what was acknowledged as durable survives; recover finishes the file.
    let mut d = TestDaemon::start(cfg);
    let (mut c, r) = d.connect(&camera_hello());
    assert_eq!(r["ok"], true, "{r}");
    let durable = 12;
    send_frames(&mut c, &jpegs[..durable], 0);
    assert_eq!(c.sync(), durable as u64);
    send_frames(&mut c, &jpegs[durable..], durable);
    let trace = d.trace_dir();
    d.kill9();
    let video = trace.join("cam/img");
    let unfinished = MjpgReader::open(&video).unwrap();
    assert!(unfinished.len() >= durable as u64);
    assert_eq!(unfinished.layout().indexed, 0, "no trailer after kill -9");
    drop(unfinished);
    let v = roverlog(&["validate".as_ref(), trace.as_os_str()]);
    assert_eq!(v.code, 1, "an unfinished video is flagged:\n{}", v.text());
    assert!(v.text().contains("index"), "{}", v.text());
    let r = roverlog(&["recover".as_ref(), trace.as_os_str()]);
    assert_eq!(r.code, 0, "{}", r.text());
    let v = roverlog(&["validate".as_ref(), trace.as_os_str()]);
    assert_eq!(v.code, 0, "{}", v.text());
    let (ts, frames) = read_sensor(&trace, "cam", "img");
    assert!(frames.len() >= durable, "{} < {durable}", frames.len());
    assert_eq!(frames[..], jpegs[..frames.len()]);
    assert_eq!(ts.len(), frames.len());
    assert_eq!(ffmpeg_packets(&video), hashes(&frames));
    assert_eq!(opencv_read(&video).0, frames.len());
}
