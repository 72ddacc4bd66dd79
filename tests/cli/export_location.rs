//! Issue 26: `roverlog export --location` writes a GPS's samples as `foxglove.LocationFix`
//! (Foxglove's map panel), and the trace's alarms and marks as `foxglove.Log` at their
//! levels, read back with the `mcap` Python package; a bad mapping is refused with a message
//! naming what is wrong, and no file.

use crate::support::common;

use std::path::Path;

use common::{roverlog, run_python};
use roverlog_core::format::meta::ChannelFormat;
use roverlog_core::format::{DType, SensorWriter, WriterOptions};
use serde_json::{json, Value};

const T0: f64 = 1.7e9;

/// Fix `i` of the gps: latitude, longitude, altitude.
fn fix(i: u32) -> [f64; 3] {
    let i = f64::from(i);
    [48.137_154 + i * 1e-5, 11.576_124 - i * 2e-5, 519.5 + i]
}

/// A trace with a gps (`pos` f8 [3], `sats` u1) and alarms, a clear and a mark in its log.
fn trace(root: &Path) -> std::path::PathBuf {
    let t = root.join("t");
    std::fs::create_dir_all(t.join("_roverlog")).unwrap();
    std::fs::write(t.join("config.yaml"), "{}\n").unwrap();
    let mut w = SensorWriter::create(
        &t.join("gps"),
        common::sensor_meta(
            &[
                ("pos", ChannelFormat::Raw, DType::F8, vec![3]),
                ("sats", ChannelFormat::Lzmaf, DType::U1, vec![]),
            ],
            "d",
        ),
        &WriterOptions::default(),
    )
    .unwrap();
    for i in 0..5 {
        let pos: Vec<u8> = fix(i).iter().flat_map(|v| v.to_le_bytes()).collect();
        w.append(T0 + f64::from(i) / 10.0, &[&pos, &[7 + i as u8]])
            .unwrap();
    }
    w.finish().unwrap();
    let lines = [
        json!({"t": T0 + 0.1, "event": "alarm", "alarm": "silent", "sensor": "gps",
               "start": T0 + 0.1, "expected_hz": 10.0, "silent_s": 0.5}),
        json!({"t": T0 + 0.2, "event": "alarm", "alarm": "rate_low", "sensor": "gps",
               "start": T0 + 0.2, "expected_hz": 10.0, "rate_hz": 4.0}),
        json!({"t": T0 + 0.3, "event": "alarm_clear", "alarm": "silent", "sensor": "gps",
               "start": T0 + 0.1, "end": T0 + 0.3}),
        json!({"t": T0 + 0.4, "event": "mark", "text": "cone on the left"}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(t.join("_roverlog/events.jsonl"), text).unwrap();
    t
}

/// `v` is `want` to an ULP (the values pass through Python's JSON and serde_json's float
/// parsing, which may be an ULP off).
fn close(v: &Value, want: f64) -> bool {
    (v.as_f64().unwrap() - want).abs() <= want.abs() * 1e-15
}

fn read(mcap: &Path) -> Value {
    let script = std::fs::read_to_string(common::root().join("tests/py/mcap_read.py")).unwrap();
    serde_json::from_str(&run_python(&script, &[mcap.as_os_str()])).unwrap()
}

#[test]
fn a_mapped_gps_exports_as_location_fixes_and_alarms_and_marks_as_logs_with_levels() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let out = dir.path().join("drive.mcap");
    let r = roverlog(&[
        "export".as_ref(),
        t.as_os_str(),
        out.as_os_str(),
        "--location".as_ref(),
        "gps:latitude=pos[0],longitude=pos[1],altitude=pos[2]".as_ref(),
    ]);
    assert!(r.ok(), "{}", r.text());
    assert!(
        r.out().contains("/gps/location: 5 messages"),
        "{}",
        r.text()
    );
    let m = read(&out);

    let loc = &m["/gps/location"];
    assert_eq!(loc["schema"], "foxglove.LocationFix");
    assert_eq!(loc["encoding"], "protobuf");
    assert_eq!(
        loc["metadata"],
        json!({"latitude": "pos[0]", "longitude": "pos[1]", "altitude": "pos[2]"})
    );
    let want_t: Vec<u64> = (0..5)
        .map(|i| ((T0 + f64::from(i) / 10.0) * 1e9).round() as u64)
        .collect();
    assert_eq!(loc["log_time"], json!(want_t));
    let fields = loc["fields"].as_array().unwrap();
    assert_eq!(fields.len(), 5);
    for (i, f) in (0..).zip(fields) {
        let [lat, lon, alt] = fix(i);
        assert!(
            close(&f["latitude"], lat) && close(&f["longitude"], lon) && close(&f["altitude"], alt),
            "fix {i}: {f}, want {:?}",
            fix(i)
        );
        assert_eq!(f["frame_id"], "gps");
        assert_eq!(f["sec"], 1_700_000_000u64);
        assert_eq!(f["position_covariance"], json!(vec![0.0; 9]));
        assert_eq!(f["position_covariance_type"], 0, "UNKNOWN");
    }
    // The channels are still there as themselves.
    assert_eq!(m["/gps/pos"]["values"][2], json!(fix(2)));
    assert_eq!(m["/gps/sats"]["values"][4], json!(11));

    // foxglove.Log levels: INFO 2, WARNING 3, ERROR 4.
    let ev = &m["/roverlog/events"];
    assert_eq!(ev["schema"], "foxglove.Log");
    let logs: Vec<(String, u64, String)> = ev["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_owned(),
                f["level"].as_u64().unwrap(),
                f["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(logs.len(), 4, "{logs:?}");
    assert_eq!(
        (logs[0].0.as_str(), logs[0].1),
        ("alarm", 4),
        "silent: an error"
    );
    assert!(
        logs[0].2.starts_with("alarm silent raised on gps: ")
            && logs[0].2.contains("\"silent_s\":0.5"),
        "{logs:?}"
    );
    assert_eq!(
        (logs[1].0.as_str(), logs[1].1),
        ("alarm", 3),
        "rate_low: a warning"
    );
    assert!(logs[1].2.contains("rate_low") && logs[1].2.contains("\"rate_hz\":4.0"));
    assert_eq!(
        (logs[2].0.as_str(), logs[2].1),
        ("alarm_clear", 2),
        "cleared: info"
    );
    assert!(
        logs[2]
            .2
            .starts_with("alarm silent cleared on gps after 0.2 s"),
        "{logs:?}"
    );
    assert_eq!(logs[3], ("mark".into(), 2, "cone on the left".into()));
    let want_t: Vec<u64> = (1..5)
        .map(|i| ((T0 + f64::from(i) / 10.0) * 1e9).round() as u64)
        .collect();
    assert_eq!(ev["log_time"], json!(want_t));

    // Without --location: no fixes.
    let plain = dir.path().join("plain.mcap");
    let r = roverlog(&["export".as_ref(), t.as_os_str(), plain.as_os_str()]);
    assert!(r.ok(), "{}", r.text());
    assert!(read(&plain).get("/gps/location").is_none());
}

#[test]
fn a_bad_location_mapping_is_refused_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    for (i, (flag, want)) in [
        (
            "gps:latitude=pos[3],longitude=pos[1]",
            "gps.latitude: \"pos[3]\": index 3 is out of range: channel pos has 3 elements (shape [3])",
        ),
        (
            "gps:latitude=fix[0],longitude=pos[1]",
            "gps.latitude: \"fix[0]\": sensor gps has no channel fix (its channels: pos, sats)",
        ),
        (
            "gps:latitude=pos,longitude=pos[1]",
            "gps.latitude: \"pos\": channel pos has 3 elements (shape [3]): name one, as \"pos[0]\"",
        ),
        (
            "gps:lat=pos[0],longitude=pos[1]",
            "gps.lat: unknown field (the fields: latitude, longitude, altitude)",
        ),
        (
            "gps:longitude=pos[1]",
            "gps.latitude: missing (latitude and longitude are required, altitude is optional)",
        ),
        (
            "gps:latitude=pos[x],longitude=pos[1]",
            "gps.latitude: \"pos[x]\" is not a channel element",
        ),
        ("gps", "--location \"gps\": expected SENSOR:"),
        (
            "gps:latitude",
            "\"latitude\" is not FIELD=ELEMENT (as latitude=pos[0])",
        ),
        ("gnss:latitude=pos[0],longitude=pos[1]", "no sensor \"gnss\""),
    ]
    .into_iter()
    .enumerate()
    {
        let out = dir.path().join(format!("bad{i}.mcap"));
        let args = vec![
            "export".into(),
            t.clone().into_os_string(),
            out.clone().into_os_string(),
            "--location".into(),
            std::ffi::OsString::from(flag),
        ];
        let r = roverlog(&args);
        assert_eq!(r.code, 2, "{flag}: {}", r.text());
        assert!(r.stderr.contains(want), "{flag}: {}", r.stderr);
        assert!(!out.exists(), "{flag}: a file was left");
    }
}

#[test]
fn the_mapping_recorded_with_the_trace_is_used_unless_it_does_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let export = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut args = vec![
            "export".into(),
            t.clone().into_os_string(),
            out.clone().into_os_string(),
        ];
        args.extend(extra.iter().map(std::ffi::OsString::from));
        let r = roverlog(&args);
        assert!(r.ok(), "{}", r.text());
        (r.out(), read(&out))
    };
    // The daemon's config as it records it: JSON, with every other key beside.
    let config = |gps: Value| {
        let c = json!({"data_root": "./data", "foxglove_max_hz": 10.0, "foxglove_location": {"gps": gps}});
        std::fs::write(
            t.join("config.yaml"),
            serde_json::to_vec_pretty(&c).unwrap(),
        )
        .unwrap();
    };
    config(json!({"latitude": "pos[0]", "longitude": "pos[1]"}));
    let (_, m) = export("recorded.mcap", &[]);
    let fixes = m["/gps/location"]["fields"].as_array().unwrap();
    assert_eq!(fixes.len(), 5);
    assert!(
        close(&fixes[3]["latitude"], fix(3)[0])
            && close(&fixes[3]["longitude"], fix(3)[1])
            && fixes[3]["altitude"] == 0.0,
        "{}",
        fixes[3]
    );
    // One that does not fit the trace: a note, and the rest exported.
    config(json!({"latitude": "pos[7]", "longitude": "pos[1]"}));
    let (out, m) = export("misfit.mcap", &[]);
    assert!(
        out.contains("skipped /gps/location: the trace's foxglove_location.gps.latitude: \"pos[7]\": index 7 is out of range: channel pos has 3 elements (shape [3])"),
        "{out}"
    );
    assert!(m.get("/gps/location").is_none());
    assert_eq!(m["/gps/pos"]["values"].as_array().unwrap().len(), 5);
    // --location is the one used.
    let (_, m) = export(
        "flag.mcap",
        &["--location", "gps:latitude=pos[1],longitude=pos[0]"],
    );
    assert!(close(
        &m["/gps/location"]["fields"][2]["latitude"],
        fix(2)[1]
    ));
    // An upstream trace's YAML config has none.
    std::fs::write(t.join("config.yaml"), "gps:\n  port: /dev/ttyACM0\n").unwrap();
    let (_, m) = export("yaml.mcap", &[]);
    assert!(m.get("/gps/location").is_none());
}
