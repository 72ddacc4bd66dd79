//! `roverlog driver camera` on its V4L2 path, without a kernel camera (this machine has no
//! `v4l2loopback`): the replay source (`replay:DIR`) hands out JPEG files ffmpeg encoded as
//! V4L2 buffers (a reused pool, zero padding after the EOI within `bytesused`, stale bytes
//! past it, CLOCK_MONOTONIC stamps) through the code the device uses above its ioctls, into a
//! real daemon. The trace's frames must be ffmpeg's files byte for byte, the buffer that is
//! not a JPEG and the one cut short (whose stale tail would complete it) counted and reported,
//! not stored; SIGTERM stops a replay that does not end with every frame durable. Then the
//! kernel devices there are: /dev/null is refused as not a V4L2 device, by name.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::support::common;
use crate::support::daemon;

use daemon::*;
use roverlog_drivers::camera::v4l2::replay::padding;
use serde_json::json;

const FRAMES: usize = 24;

/// FRAMES JPEGs of ffmpeg's test pattern (sizes vary frame to frame), as ffmpeg wrote them.
fn encoded_frames(dir: &Path) -> Vec<Vec<u8>> {
    common::video::mjpeg_frames(dir, FRAMES)
}

fn driver(d: &TestDaemon, source: &str, extra: &[&str]) -> Child {
    Command::new(common::roverlog_bin())
        .args(["driver", "camera", source, "--socket"])
        .arg(d.ingest_path())
        .args(extra)
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

#[test]
fn replayed_v4l2_buffers_are_stored_as_ffmpegs_jpegs_and_bad_buffers_are_counted_not_stored() {
    let scratch = tempfile::tempdir().unwrap();
    let jpegs = encoded_frames(scratch.path());
    // The replay's order: 8 frames; then the first half of frame 4 (0-based), which lands in
    // the buffer frame 4 left (4 buffers in turn): its tail past bytesused completes it;
    // 8 more; a buffer that is not a JPEG; the last 8.
    let replay = scratch.path().join("replay");
    std::fs::create_dir(&replay).unwrap();
    let mut order: Vec<Vec<u8>> = jpegs[..8].to_vec();
    order.push(jpegs[4][..jpegs[4].len() / 2].to_vec());
    order.extend_from_slice(&jpegs[8..16]);
    order.push(b"YUYV: not what the driver asked for".to_vec());
    order.extend_from_slice(&jpegs[16..]);
    for (i, bytes) in order.iter().enumerate() {
        std::fs::write(replay.join(format!("b{i:03}")), bytes).unwrap();
    }
    let source = format!("replay:{}", replay.display());

    let mut d = TestDaemon::start(json!({}));
    let before = now();
    let out = output_within(
        driver(&d, &source, &["--fps", "60", "--buffers", "4"]),
        60,
        "the camera driver at the replay's end",
    );
    let after = now();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "the source ended: {err}");
    assert!(
        err.contains(&format!(
            "{FRAMES} of {FRAMES} durable; 2 buffers were not whole JPEGs; 0 frames skipped"
        )),
        "{err}"
    );
    // Buffer 8: the half frame and its zero padding, bytesused long, and no EOI in them.
    let used = jpegs[4].len() / 2 + padding(8);
    assert!(
        err.contains(&format!(
            "buffer not stored (1 so far): ends at byte {used} before its EOI (FF D9): truncated"
        )),
        "{err}"
    );
    assert!(
        err.contains(
            "buffer not stored (2 so far): does not start with SOI (FF D8): starts with [59, 55, 59, 56]"
        ),
        "{err}"
    );
    let trace = d.trace_dir();
    assert!(d.stop().success(), "{}", d.log());
    let (ts, frames) = read_sensor(&trace, "camera", "video.avi");
    assert_eq!(frames.len(), FRAMES);
    for (k, (got, want)) in frames.iter().zip(&jpegs).enumerate() {
        assert!(
            got == want,
            "frame {k}: {} bytes, ffmpeg's {} (padding after the EOI must not be stored)",
            got.len(),
            want.len()
        );
    }
    // The buffers' CLOCK_MONOTONIC stamps mapped to the epoch: in order, inside the run, and
    // 1/60 s apart (26 buffers: 25 periods from the first to the last).
    assert!(ts.windows(2).all(|w| w[0] < w[1]), "{ts:?}");
    assert!(
        before <= ts[0] && ts[FRAMES - 1] <= after,
        "{before} {ts:?} {after}"
    );
    let span = ts[FRAMES - 1] - ts[0];
    assert!((span - 25.0 / 60.0).abs() < 0.1, "span {span} s: {ts:?}");
    let meta = roverlog_core::format::SensorMeta::read(&trace.join("camera")).unwrap();
    let ch = meta.get("video.avi").expect("channel video.avi");
    assert_eq!(ch.format.as_str(), "mjpg");
    assert_eq!(ch.shape, vec![240, 320, 3]);
    assert!(ch.desc.contains("replayed files"), "{}", ch.desc);

    // A replay that does not end (--loops 0): SIGTERM, exit 0, every frame sent durable.
    let mut d = TestDaemon::start(json!({}));
    let child = driver(
        &d,
        &format!("replay:{}", scratch.path().display()),
        &["--fps", "60", "--loops", "0", "--format", "jpg"],
    );
    let pid = child.id() as i32;
    d.wait_status("the driver's first 30 frames", |s| {
        s["sensors"]["camera"]["samples"].as_u64() >= Some(30)
    });
    // SAFETY: a signal to our own child, not yet reaped.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let out = output_within(child, 30, "the camera driver after SIGTERM");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let trace = d.trace_dir();
    assert!(d.stop().success(), "{}", d.log());
    let (_, frames) = read_sensor(&trace, "camera", "img");
    assert!(frames.len() >= 30, "{} frames", frames.len());
    assert!(
        err.contains(&format!("{n} of {n} durable", n = frames.len())),
        "{err}"
    );
    for (k, got) in frames.iter().enumerate() {
        assert!(got == &jpegs[k % FRAMES], "frame {k} of the looped replay");
    }
}

/// What is not a V4L2 camera, or not asked for properly, is refused naming it (exit 2), before
/// the daemon is reached.
#[test]
fn what_is_not_a_v4l2_camera_is_refused_by_name() {
    let refused = |args: &[&str], want: &str| {
        let child = Command::new(common::roverlog_bin())
            .args(["driver", "camera"])
            .args(args)
            .args(["--socket", "/nonexistent/ingest.sock"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = output_within(child, 30, "the camera driver refusing its source");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: want {want:?} in {err}");
    };
    refused(
        &["/dev/null"],
        "/dev/null: not a V4L2 device (VIDIOC_QUERYCAP: Inappropriate ioctl for device",
    );
    refused(
        &["/dev/video-absent"],
        "/dev/video-absent: opening: No such file or directory",
    );
    refused(
        &["/dev/null", "--size", "1920"],
        "--size \"1920\": want WIDTHxHEIGHT",
    );
    refused(
        &["/dev/null", "--loops", "2"],
        "--loops applies to a replay, not to a V4L2 device",
    );
    refused(
        &["http://127.0.0.1:9/cam.mjpg", "--fps", "30"],
        "--fps applies to a V4L2 device or a replay, not to http://127.0.0.1:9/cam.mjpg",
    );
    refused(
        &["replay:/nonexistent-dir"],
        "replay:/nonexistent-dir: listing the directory",
    );
}
