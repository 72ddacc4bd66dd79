//! `roverlog plot` on a trace the real daemon recorded with drops, a gap, a mark and an
//! alarm: the PNG decodes (OpenCV) with the expected size, the SVG names every sensor, a
//! directory of traces gives one image each, and bad input is refused.

use crate::support::common;
use crate::support::daemon;

use std::time::Duration;

use common::{roverlog, run_python};
use daemon::*;
use serde_json::json;

#[test]
fn a_recorded_trace_plots_with_its_drops_gaps_marks_and_alarms() {
    let mut d = TestDaemon::start(json!({
        "queue_policy": "drop", "queue_bytes": 4096, "max_frame_bytes": 2048, "debug_write_delay_ms": 2,
        "sensors": {"gps": {"expected_hz": 50.0}}, "silent_periods": 3, "health_interval_ms": 50,
    }));
    let (mut imu, _) = d.connect(&raw_hello("imu", 512));
    let (mut gps, _) = d.connect(&raw_hello("gps", 8));
    for i in 0..400u64 {
        // Wall-clock times: the daemon's events (marks, alarms) are on the same axis.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        // Bursts of 5 frames: more than the slowed writer keeps up with.
        for k in 0..5 {
            let j = i * 5 + k;
            imu.send(&frame(
                t + k as f64 * 0.001,
                None,
                &[(&sample(1, j, 512), false)],
            ));
        }
        // gps pauses for 0.6 s in the middle: a gap, and a silent alarm.
        if !(150..270).contains(&i) {
            gps.send(&frame(t, None, &[(&sample(2, i, 8), false)]));
        }
        if i == 200 {
            d.ctl(json!({"cmd": "mark", "text": "cone"}));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    imu.sync();
    gps.sync();
    let trace = d.trace_dir();
    assert!(d.stop().success(), "{}", d.log());
    let ev = events(&trace);
    assert!(
        ev.iter().any(|e| matches!(e.event, Event::Drop { .. })),
        "the load must drop: {ev:#?}"
    );
    assert!(
        ev.iter().any(|e| matches!(e.event, Event::Alarm { .. })),
        "{ev:#?}"
    );

    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("t.png");
    let r = roverlog(&[
        "plot".as_ref(),
        trace.as_os_str(),
        "-o".as_ref(),
        png.as_os_str(),
    ]);
    assert!(r.ok(), "{}", r.text());
    let size = run_python(
        "import cv2, sys; i = cv2.imread(sys.argv[1]); print(i.shape[1], i.shape[0], int(i.min()), int(i.max()))",
        &[png.as_os_str()],
    );
    let v: Vec<u32> = size
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(
        (v[0], v[1]),
        // The plot's size: 1600 wide; a 56 px header, a 64 px row per sensor, a 40 px axis.
        (1600, 56 + 64 * 2 + 40),
        "{size}"
    );
    assert!(v[2] < 50 && v[3] == 255, "an image with content: {size}");
    let svg = dir.path().join("t.svg");
    let r = roverlog(&[
        "plot".as_ref(),
        trace.as_os_str(),
        "-o".as_ref(),
        svg.as_os_str(),
    ]);
    assert!(r.ok(), "{}", r.text());
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.starts_with("<svg")
            && text.contains("\nimu\n")
            && text.contains("\ngps\n")
            && text.contains("cone"),
        "{}",
        &text[..text.len().min(1500)]
    );
    if let Ok(keep) = std::env::var("ROVERLOG_KEEP_PLOT") {
        std::fs::copy(&png, keep).unwrap();
    }

    // A directory of traces: one image each.
    let out = dir.path().join("images");
    let r = roverlog(&[
        "plot".as_ref(),
        d.data_root().as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert!(r.ok(), "{}", r.text());
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
    // Bad input.
    for (args, want) in [
        (
            vec![
                trace.clone().into_os_string(),
                "-o".into(),
                png.clone().into_os_string(),
            ],
            "already exists",
        ),
        (
            vec![
                trace.clone().into_os_string(),
                "-o".into(),
                dir.path().join("x.gif").into_os_string(),
            ],
            "unknown image type",
        ),
        (vec!["/nonexistent".into()], "/nonexistent"),
    ] {
        let mut a = vec![std::ffi::OsString::from("plot")];
        a.extend(args);
        let r = roverlog(&a);
        assert_eq!(r.code, 2, "{a:?}: {}", r.text());
        assert!(r.stderr.contains(want), "{a:?}: {}", r.stderr);
    }
}
