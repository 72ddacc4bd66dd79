//! `roverlog export` against the `mcap` Python package (with `mcap-protobuf-support` decoding
//! the Foxglove protobuf messages): the right topics, schemas, message counts, times, and the
//! payloads of every sample (JPEG and raw image bytes, JSON values) equal to the trace's.

use crate::support::common;

use std::path::Path;

use common::{roverlog, run_python, sha256_hex};
use roverlog_core::format::meta::{ChannelFormat, SensorMeta};
use roverlog_core::format::{DType, SensorWriter, WriterOptions};
use serde_json::{json, Value};

const T0: f64 = 1.7e9;

fn meta(chans: &[(&str, ChannelFormat, DType, Vec<usize>)]) -> SensorMeta {
    common::sensor_meta(chans, "d")
}

/// A trace with images of every kind and a vector sensor; returns the JPEGs.
fn trace(root: &Path) -> Vec<Vec<u8>> {
    let t = root.join("t");
    std::fs::create_dir_all(t.join("_roverlog")).unwrap();
    std::fs::write(t.join("config.yaml"), "{}\n").unwrap();
    let src = root.join("cv.avi");
    common::video::opencv_write(&src, 64, 48, 6);
    let jpegs = common::video::our_frames(&src);
    let opts = WriterOptions::default();
    for (name, f) in [
        ("camera", ChannelFormat::Blob("jpg".into())),
        ("video", ChannelFormat::Mjpg),
    ] {
        let mut w = SensorWriter::create(
            &t.join(name),
            meta(&[("img", f, DType::U1, vec![48, 64, 3])]),
            &opts,
        )
        .unwrap();
        for (i, j) in jpegs.iter().enumerate() {
            w.append(T0 + i as f64 / 10.0, &[j]).unwrap();
        }
        w.finish().unwrap();
    }
    let mut w = SensorWriter::create(
        &t.join("lidar"),
        meta(&[
            ("rng", ChannelFormat::Raw, DType::U2, vec![8, 16]),
            ("nir", ChannelFormat::Lzmaf, DType::U1, vec![8, 16]),
            ("rgb", ChannelFormat::Raw, DType::U1, vec![4, 6, 3]),
        ]),
        &opts,
    )
    .unwrap();
    for i in 0..5u16 {
        let rng: Vec<u8> = (0..128u16)
            .flat_map(|k| (k * 7 + i).to_le_bytes())
            .collect();
        let nir: Vec<u8> = (0..128u16).map(|k| (k + i) as u8).collect();
        let rgb: Vec<u8> = (0..72u16).map(|k| (k * 3 + i) as u8).collect();
        w.append(T0 + 0.05 + f64::from(i) * 0.1, &[&rng, &nir, &rgb])
            .unwrap();
    }
    w.finish().unwrap();
    let mut w = SensorWriter::create(
        &t.join("imu"),
        meta(&[
            ("acc", ChannelFormat::Raw, DType::F4, vec![3]),
            ("iq", ChannelFormat::Raw, DType::C8, vec![]),
            ("ok", ChannelFormat::Lzmaf, DType::B1, vec![2]),
        ]),
        &opts,
    )
    .unwrap();
    for i in 0..8u8 {
        let acc: Vec<u8> = [f32::from(i), -0.5, 1.25]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let iq: Vec<u8> = [0.25f32, f32::from(i)]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        w.append(T0 + f64::from(i) * 0.05, &[&acc, &iq, &[i % 2, 1]])
            .unwrap();
    }
    w.finish().unwrap();
    std::fs::write(
        t.join("_roverlog/events.jsonl"),
        format!(
            "{}\n{}\n",
            json!({"t": T0 + 0.1, "event": "mark", "text": "cone"}),
            // Every field the daemon writes: a line missing some reads as an unknown event.
            json!({"t": T0 + 0.2, "event": "drop", "sensor": "imu", "count": 3,
                   "first_frame": 2, "from_ts": T0 + 0.1, "to_ts": T0 + 0.2})
        ),
    )
    .unwrap();
    jpegs
}

fn read(mcap: &Path) -> Value {
    let script = std::fs::read_to_string(common::root().join("tests/py/mcap_read.py")).unwrap();
    serde_json::from_str(&run_python(&script, &[mcap.as_os_str()])).unwrap()
}

#[test]
fn every_channel_reads_back_from_the_mcap_file_as_foxglove_messages() {
    let dir = tempfile::tempdir().unwrap();
    let jpegs = trace(dir.path());
    let t = dir.path().join("t");
    let out = dir.path().join("drive.mcap");
    let r = roverlog(&["export".as_ref(), t.as_os_str(), out.as_os_str()]);
    assert!(r.ok(), "{}", r.text());
    // Issue 35: the verb says how many cores it kept busy (getrusage over wall time).
    let busy = r
        .stderr
        .lines()
        .find(|l| l.starts_with("export: ") && l.contains(" cores busy ("))
        .unwrap_or_else(|| panic!("no cores-busy line: {}", r.stderr));
    let cores: f64 = busy["export: ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(cores > 0.0 && cores.is_finite(), "{busy}");
    let m = read(&out);
    let mut topics: Vec<&String> = m.as_object().unwrap().keys().collect();
    topics.sort();
    assert_eq!(
        topics,
        [
            "/camera/img",
            "/imu/acc",
            "/imu/iq",
            "/imu/ok",
            "/lidar/nir",
            "/lidar/rgb",
            "/lidar/rng",
            "/roverlog/events",
            "/video/img"
        ]
    );
    for topic in ["/camera/img", "/video/img"] {
        let c = &m[topic];
        assert_eq!(c["schema"], "foxglove.CompressedImage");
        assert_eq!(c["encoding"], "protobuf");
        let want: Vec<String> = jpegs.iter().map(|j| sha256_hex(j)).collect();
        assert_eq!(
            c["payload_sha256"],
            json!(want),
            "{topic}: JPEG bytes as stored"
        );
        assert_eq!(c["fields"][3]["format"], "jpeg");
        let want_t: Vec<u64> = (0..6)
            .map(|i| ((T0 + i as f64 / 10.0) * 1e9).round() as u64)
            .collect();
        assert_eq!(c["log_time"], json!(want_t), "{topic}");
        assert_eq!(c["fields"][2]["sec"], 1_700_000_000u64);
    }
    let s = roverlog_core::format::Sensor::open(&t.join("lidar")).unwrap();
    for (ch, enc, w, h, step) in [
        ("rng", "16UC1", 16, 8, 32),
        ("nir", "mono8", 16, 8, 16),
        ("rgb", "rgb8", 6, 4, 18),
    ] {
        let c = &m[format!("/lidar/{ch}").as_str()];
        assert_eq!(c["schema"], "foxglove.RawImage", "{ch}");
        let mut r = s.channel(ch).unwrap();
        let want: Vec<String> = (0..5).map(|i| sha256_hex(&r.get(i).unwrap())).collect();
        assert_eq!(c["payload_sha256"], json!(want), "{ch}: the samples' bytes");
        assert_eq!(c["fields"][0]["encoding"], enc);
        assert_eq!(
            (
                c["fields"][0]["width"].as_u64(),
                c["fields"][0]["height"].as_u64()
            ),
            (Some(w), Some(h))
        );
        assert_eq!(c["fields"][0]["step"], step);
        assert_eq!(
            c["metadata"]["shape"],
            serde_json::to_string(&s.meta().get(ch).unwrap().shape).unwrap()
        );
    }
    assert_eq!(m["/imu/acc"]["schema"], "roverlog.Sample");
    assert_eq!(m["/imu/acc"]["encoding"], "json");
    assert_eq!(m["/imu/acc"]["values"][3], json!([3.0, -0.5, 1.25]));
    assert_eq!(m["/imu/iq"]["values"][5], json!([0.25, 5.0]));
    assert_eq!(m["/imu/ok"]["values"][1], json!([true, true]));
    assert_eq!(m["/imu/ok"]["values"].as_array().unwrap().len(), 8);
    let ev = &m["/roverlog/events"];
    assert_eq!(ev["schema"], "foxglove.Log");
    assert_eq!(ev["fields"][0]["name"], "mark");
    assert_eq!(ev["fields"][1]["name"], "drop");
    assert_eq!(ev["fields"][1]["level"], 3, "a drop is a warning");

    // A window and a sensor subset.
    let part = dir.path().join("part.mcap");
    let r = roverlog(&[
        "export".as_ref(),
        t.as_os_str(),
        part.as_os_str(),
        "--sensors".as_ref(),
        "imu".as_ref(),
        "--start".as_ref(),
        "0.1".as_ref(),
        "--end".as_ref(),
        "0.3".as_ref(),
    ]);
    assert!(r.ok(), "{}", r.text());
    let p = read(&part);
    // imu samples at 0.00, 0.05, ..., 0.35: [0.1, 0.3) holds 0.10 .. 0.25 (4 samples).
    assert_eq!(p["/imu/acc"]["values"].as_array().unwrap().len(), 4);
    assert!(p.get("/camera/img").is_none());
    assert_eq!(p["/roverlog/events"]["fields"].as_array().unwrap().len(), 2);

    // Bad input: exit 2, a clear message, no file.
    let arg = |s: &str| std::ffi::OsString::from(s);
    for (args, want) in [
        (
            vec![
                arg("export"),
                arg("/nonexistent/trace"),
                dir.path().join("x.mcap").into_os_string(),
            ],
            "/nonexistent/trace",
        ),
        (
            vec![
                arg("export"),
                t.clone().into_os_string(),
                out.clone().into_os_string(),
            ],
            "already exists",
        ),
        (
            vec![
                arg("export"),
                t.clone().into_os_string(),
                dir.path().join("y.mcap").into_os_string(),
                arg("--sensors"),
                arg("gps"),
            ],
            "no sensor \"gps\"",
        ),
        (
            vec![
                arg("export"),
                t.clone().into_os_string(),
                arg("/nonexistent/dir/z.mcap"),
            ],
            "z.mcap",
        ),
    ] {
        let r = roverlog(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.text());
        assert!(r.stderr.contains(want), "{args:?}: {}", r.stderr);
    }
    assert!(!dir.path().join("x.mcap").exists() && !dir.path().join("y.mcap").exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().to_string_lossy().into_owned();
            n.contains("partial").then_some(n)
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
