//! `roverlog plot` on a trace the real daemon recorded with drops, a gap, a mark and an
//! alarm: the PNG decodes (OpenCV) with the expected size, the SVG names every sensor, a
//! directory of traces gives one image each, and bad input is refused. A steady sensor is a
//! flat line at any trace length, with a legend, a rate axis, no label off the image and a
//! real font family in the SVG.

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
        // The plot's size: 1600 wide; a 56 px header, a 64 px row per sensor, a 70 px axis
        // and legend.
        (1600, 56 + 64 * 2 + 70),
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
            &*format!(
                "config: {}: unknown image type \"gif\" (.png or .svg)",
                dir.path().join("x.gif").display()
            ),
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

/// A trace of steady sensors written directly (`ts` files and events), `secs` long.
fn steady_trace(dir: &std::path::Path, secs: f64) -> std::path::PathBuf {
    let trace = dir.join(format!("steady-{secs}"));
    let t0 = 1.7e9;
    for (name, hz) in [("camera", 10.0), ("imu", 200.0)] {
        let s = trace.join(name);
        std::fs::create_dir_all(&s).unwrap();
        std::fs::write(
            s.join("meta.json"),
            r#"{"ts": {"format": "raw", "type": "f8", "shape": [], "desc": "t"}}"#,
        )
        .unwrap();
        let n = (secs * hz) as usize + 1;
        let bytes: Vec<u8> = (0..n)
            .flat_map(|i| (t0 + i as f64 / hz).to_le_bytes())
            .collect();
        std::fs::write(s.join("ts"), bytes).unwrap();
    }
    std::fs::create_dir_all(trace.join("_roverlog")).unwrap();
    let events = [
        json!({"t": t0, "event": "start", "trace": "steady", "reason": "command", "resumed_from": null}),
        json!({"t": t0 + secs, "event": "stop", "trace": "steady", "reason": "command"}),
    ];
    let text: String = events.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(trace.join("_roverlog/events.jsonl"), text).unwrap();
    trace
}

/// The rate line's points of the row whose name is `sensor`: the `<polyline>`s in the rate
/// colour within that row's band (64 px from 10 px above its name).
fn rate_points(svg: &str, sensor: &str) -> Vec<(f64, f64)> {
    let name = svg
        .find(&format!("\n{sensor}\n"))
        .unwrap_or_else(|| panic!("no row {sensor} in the SVG"));
    let tag = &svg[svg[..name].rfind("<text").unwrap()..name];
    let y: f64 = tag
        .split("y=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let band = (y - 10.0)..(y - 10.0 + 64.0);
    let mut pts = Vec::new();
    for line in svg.split("<polyline").skip(1) {
        if !line.contains("#1E64C8") {
            continue;
        }
        let p = line
            .split("points=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        let line: Vec<(f64, f64)> = p
            .split_whitespace()
            .map(|xy| {
                let (x, y) = xy.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect();
        if line.iter().all(|p| band.contains(&p.1)) {
            pts.extend(line);
        }
    }
    pts
}

#[test]
fn a_steady_sensor_plots_flat_with_a_legend_axes_and_labels_inside() {
    let dir = tempfile::tempdir().unwrap();
    // The issue's cases: a 214 s trace (a zigzag before) and an 8 s one (a comb of spikes).
    for secs in [214.0, 8.0] {
        let trace = steady_trace(dir.path(), secs);
        let svg_path = dir.path().join(format!("{secs}.svg"));
        let r = roverlog(&[
            "plot".as_ref(),
            trace.as_os_str(),
            "-o".as_ref(),
            svg_path.as_os_str(),
        ]);
        assert!(r.ok(), "{}", r.text());
        let svg = std::fs::read_to_string(&svg_path).unwrap();
        for sensor in ["camera", "imu"] {
            let pts = rate_points(&svg, sensor);
            assert!(pts.len() >= 10, "{secs} s, {sensor}: a rate line: {pts:?}");
            let ys: Vec<f64> = pts.iter().map(|p| p.1).collect();
            let (lo, hi) = ys
                .iter()
                .fold((f64::MAX, f64::MIN), |(a, b), &y| (a.min(y), b.max(y)));
            // The row's plot is 50 px high: 2% of it is one pixel.
            assert!(
                hi - lo <= 1.0,
                "{secs} s, {sensor}: the line spans y {lo}..{hi}"
            );
            let xs: Vec<f64> = pts.iter().map(|p| p.0).collect();
            assert!(
                xs[xs.len() - 1] - xs[0] > 1000.0,
                "{secs} s, {sensor}: the line runs across the trace: {xs:?}"
            );
        }
        for label in [
            "sample rate",
            "gap in ts",
            "dropped",
            "alarm",
            "error",
            "mark",
            "start / stop / rotate",
            "250 Hz",
            "20 Hz",
        ] {
            assert!(
                svg.contains(label),
                "{secs} s: the legend or an axis lacks {label:?}"
            );
        }
        assert!(
            svg.contains(
                "font-family=\"'DejaVu Sans Mono', Menlo, Consolas, 'Liberation Mono', monospace\""
            ) && !svg.contains("roverlog-mono"),
            "a real font family with fallbacks"
        );
        // Every text ends inside the image (DejaVu Sans Mono: 0.6 em per glyph; the SVG's
        // font-size is the pixel size over 1.24).
        for t in svg.split("<text").skip(1) {
            let attr = |name: &str| -> f64 {
                t.split(&format!("{name}=\""))
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            };
            let body = t
                .split('>')
                .nth(1)
                .unwrap()
                .split('<')
                .next()
                .unwrap()
                .trim();
            let right = attr("x") + body.chars().count() as f64 * 0.6 * attr("font-size") * 1.24;
            assert!(
                right <= 1600.0 + 1.0,
                "{secs} s: {body:?} ends at x {right}"
            );
        }
        assert!(svg.contains("\nstop\n"), "the stop label is drawn");
    }
}
