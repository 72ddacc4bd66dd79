//! `roverlog info` and `roverlog cat` on a roverd trace: figures and bytes match what was
//! written.

use crate::support::common;

use std::process::Command;

use roverlog_core::format::{
    ChannelFormat, ChannelMeta, DType, SensorMeta, SensorWriter, WriterOptions,
};

/// A trace directory `<root>/<name>` with one raw sensor of `samples` samples.
fn small_trace(root: &std::path::Path, name: &str, samples: usize) -> std::path::PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.yaml"), "{}\n").unwrap();
    let m = SensorMeta {
        channels: vec![(
            "x".into(),
            ChannelMeta::new(ChannelFormat::Raw, DType::U1, vec![2], ""),
        )],
    };
    let mut w = SensorWriter::create(&dir.join("s"), m, &WriterOptions::default()).unwrap();
    for i in 0..samples {
        w.append(i as f64, &[&[i as u8, 0]]).unwrap();
    }
    w.finish().unwrap();
    dir
}

#[test]
fn info_on_a_data_root_describes_every_trace_below_it() {
    let tmp = tempfile::tempdir().unwrap();
    let a = small_trace(tmp.path(), "2026.11.22-08.00.00", 3);
    let b = small_trace(&tmp.path().join("day2"), "2026.11.23-08.00.00", 5);
    let r = common::roverlog(&["info".as_ref(), "--json".as_ref(), tmp.path().as_os_str()]);
    assert!(r.ok(), "{}", r.text());
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    let mut got: Vec<(String, u64)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let p = t["trace"].as_str().unwrap().to_string();
            (p, t["sensors"][0]["samples"].as_u64().unwrap())
        })
        .collect();
    got.sort();
    let want = [(a.display().to_string(), 3), (b.display().to_string(), 5)];
    assert_eq!(got, want);
    let r = common::roverlog(&["info".as_ref(), tmp.path().as_os_str()]);
    assert!(
        r.ok() && r.out().contains("2026.11.23-08.00.00"),
        "{}",
        r.text()
    );

    // A directory with no trace below it is still an error that says so.
    let empty = tempfile::tempdir().unwrap();
    let r = common::roverlog(&["info".as_ref(), empty.path().as_os_str()]);
    assert!(!r.ok() && r.text().contains("not a trace"), "{}", r.text());
}

#[test]
fn info_reports_samples_duration_rate_and_sizes() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("config.yaml"), "{}\n").unwrap();
    let m = SensorMeta {
        channels: vec![
            (
                "acc".into(),
                ChannelMeta::new(ChannelFormat::Raw, DType::F4, vec![3], "m/s^2"),
            ),
            (
                "rng".into(),
                ChannelMeta::new(ChannelFormat::Lzmaf, DType::U2, vec![64, 64], ""),
            ),
        ],
    };
    let mut w =
        SensorWriter::create(&tmp.path().join("lidar"), m, &WriterOptions::default()).unwrap();
    let zeros = vec![0u8; 64 * 64 * 2];
    for i in 0..101 {
        w.append(100.0 + i as f64 * 0.05, &[&[7u8; 12], &zeros])
            .unwrap();
    }
    w.finish().unwrap();
    let r = common::roverlog(&["info".as_ref(), "--json".as_ref(), tmp.path().as_os_str()]);
    assert!(r.ok(), "{}", r.text());
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    let s = &v["sensors"][0];
    assert_eq!(s["sensor"], "lidar");
    assert_eq!(s["samples"], 101);
    assert!(
        (s["duration_s"].as_f64().unwrap() - 5.0).abs() < 1e-9,
        "{s}"
    );
    assert!((s["rate_hz"].as_f64().unwrap() - 20.0).abs() < 1e-9, "{s}");
    let ch = |name: &str| {
        s["channels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(ch("acc")["bytes"], 101 * 12);
    assert_eq!(ch("acc")["compression_ratio"], 1.0);
    assert_eq!(ch("ts")["bytes"], 101 * 8);
    let rng = ch("rng");
    let disk = std::fs::metadata(tmp.path().join("lidar/rng"))
        .unwrap()
        .len()
        + std::fs::metadata(tmp.path().join("lidar/rng_i"))
            .unwrap()
            .len();
    assert_eq!(rng["bytes"], disk);
    let ratio = rng["compression_ratio"].as_f64().unwrap();
    assert!(
        (ratio - (101.0 * 8192.0 / disk as f64)).abs() < 1e-9 && ratio > 10.0,
        "{rng}"
    );
    assert!((rng["bytes_per_second"].as_f64().unwrap() - disk as f64 / 5.0).abs() < 1e-6);
    // Nothing is damaged (tests/cli/damaged.rs marks what is).
    assert_eq!(v["damaged"], false, "{v}");
    assert!(s["channels"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["damage"].is_null()));

    // The table form names every channel.
    let out = Command::new(common::roverlog_bin())
        .arg("info")
        .arg(tmp.path())
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for word in ["lidar", "101 samples", "acc", "rng", "lzmaf", "20.00 Hz"] {
        assert!(text.contains(word), "{word} missing from:\n{text}");
    }
    assert!(
        !text.contains("DAMAGED") && !text.contains("damaged"),
        "{text}"
    );
}

#[test]
fn cat_writes_decoded_samples_of_any_format() {
    let tmp = tempfile::tempdir().unwrap();
    let m = SensorMeta {
        channels: vec![
            (
                "a".into(),
                ChannelMeta::new(ChannelFormat::Raw, DType::U2, vec![2], ""),
            ),
            (
                "z".into(),
                ChannelMeta::new(ChannelFormat::Lzmaf, DType::U1, vec![5], ""),
            ),
            (
                "j".into(),
                ChannelMeta::new(ChannelFormat::Blob("jpg".into()), DType::U1, vec![], ""),
            ),
        ],
    };
    let mut w = SensorWriter::create(&tmp.path().join("s"), m, &WriterOptions::default()).unwrap();
    let sample =
        |k: u8, i: u8, n: usize| -> Vec<u8> { (0..n as u8).map(|j| k * 50 + i * 7 + j).collect() };
    for i in 0..6u8 {
        w.append(
            i as f64,
            &[
                &sample(0, i, 4),
                &sample(1, i, 5),
                &sample(2, i, 1 + i as usize),
            ],
        )
        .unwrap();
    }
    w.finish().unwrap();
    let cat = |item: &str, rows: Option<&str>| {
        let mut c = Command::new(common::roverlog_bin());
        c.arg("cat").arg(tmp.path()).arg(item);
        if let Some(r) = rows {
            c.args(["--rows", r]);
        }
        let out = c.output().unwrap();
        (
            out.status.code(),
            out.stdout,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let concat = |k: u8, n: fn(u8) -> usize, idx: &[u8]| -> Vec<u8> {
        idx.iter().flat_map(|&i| sample(k, i, n(i))).collect()
    };
    assert_eq!(cat("s/a", None).1, concat(0, |_| 4, &[0, 1, 2, 3, 4, 5]));
    assert_eq!(cat("s/z", Some("2:4")).1, concat(1, |_| 5, &[2, 3]));
    assert_eq!(
        cat("s/j", Some("1:6:2")).1,
        concat(2, |i| 1 + i as usize, &[1, 3, 5])
    );
    let ts: Vec<u8> = (0..6).flat_map(|i| (i as f64).to_le_bytes()).collect();
    assert_eq!(cat("s/ts", None).1, ts);
    let (code, _, err) = cat("s/nope", None);
    assert_eq!(code, Some(2));
    assert!(err.contains("nope"), "{err}");
    let (code, _, err) = cat("s/a", Some("9"));
    assert_eq!(code, Some(2));
    assert!(err.contains("past the end"), "{err}");
}

#[test]
fn cat_refuses_an_empty_rows_spec() {
    let tmp = tempfile::tempdir().unwrap();
    let t = small_trace(tmp.path(), "t", 3);
    let r = common::roverlog(&[
        "cat".as_ref(),
        t.as_os_str(),
        "s/x".as_ref(),
        "--rows".as_ref(),
        "".as_ref(),
    ]);
    assert_eq!(
        r.code,
        2,
        "row 0 was written for an empty --rows: {}",
        r.text()
    );
    assert!(
        r.stdout.is_empty() && r.text().contains("--rows"),
        "{}",
        r.text()
    );
}

#[test]
fn info_does_not_mark_a_channel_of_a_format_it_cannot_read_as_damaged() {
    let tmp = tempfile::tempdir().unwrap();
    let t = small_trace(tmp.path(), "t", 3);
    let meta = t.join("s/meta.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
    m["x"]["format"] = "blosc".into();
    std::fs::write(&meta, serde_json::to_vec(&m).unwrap()).unwrap();
    let r = common::roverlog(&["info".as_ref(), "--json".as_ref(), t.as_os_str()]);
    assert!(r.ok(), "{}", r.text());
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v["damaged"], false, "{v}");
    let x = &v["sensors"][0]["channels"][1];
    assert_eq!(
        (&x["name"], &x["format"]),
        (&"x".into(), &"blosc".into()),
        "{v}"
    );
}
