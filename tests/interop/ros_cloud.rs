//! `roverlog import` and `replay` of unorganized `sensor_msgs/PointCloud2` topics whose width
//! changes from message to message (issue 28), as lidar drivers publish them:
//! `tests/py/ros_cloud_write.py` writes them with rosbags (rosbag2 MCAP storage, and a ROS 1
//! bag) and the values importing must give, padding included, computed with numpy. Clouds
//! whose fields change, and organized clouds that change size, are still skipped and said.

use crate::ros_import::{
    assert_same_samples, import, replay_gives_what_import_gives, values, write_with, Bags,
};
use crate::support::common;

use std::path::{Path, PathBuf};

use roverlog_core::format::events::{read_events, Event};
use roverlog_core::format::Trace;
use serde_json::Value;

fn check(c: &Bags, name: &str) -> PathBuf {
    let out = c.dir.join(format!("out-{name}"));
    let src = c.dir.join(name);
    let r = import(&src, &out, &[]);
    assert!(r.ok(), "import {name}: {}", r.text());
    let trace = Trace::open(&out).unwrap();
    let topics = c.expected["topics"].as_object().unwrap();
    assert_eq!(trace.sensor_names().len(), topics.len(), "{}", r.text());
    for (topic, e) in topics {
        let what = format!("{name} {topic}");
        let sensor = trace.sensor(e["sensor"].as_str().unwrap()).unwrap();
        let ts = sensor.timestamps().unwrap();
        let stamps = e["stamps"].as_array().unwrap();
        assert_eq!(ts.len(), stamps.len(), "{what}: samples");
        for (a, b) in ts.iter().zip(stamps) {
            assert!((a - b.as_f64().unwrap()).abs() < 1e-6, "{what}: {a} {b}");
        }
        // Exactly the channels said: a fixed-width cloud has no count channel.
        let mut names: Vec<&str> = sensor.meta().data_channels().map(|(n, _)| n).collect();
        let mut want: Vec<&str> = e["channels"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        names.sort();
        want.sort();
        assert_eq!(names, want, "{what}");
        for (ch, spec) in e["channels"].as_object().unwrap() {
            let meta = sensor.meta().get(ch).unwrap().clone();
            assert_eq!(meta.dtype.code(), spec["dtype"], "{what}/{ch}");
            assert_eq!(serde_json::json!(meta.shape), spec["shape"], "{what}/{ch}");
            let mut reader = sensor.channel(ch).unwrap();
            for (k, want) in spec["values"].as_array().unwrap().iter().enumerate() {
                let got = values(meta.dtype, &reader.get(k as u64).unwrap());
                let want = want.as_array().unwrap();
                assert_eq!(got.len(), want.len(), "{what}/{ch} sample {k}");
                for (i, (g, w)) in got.iter().zip(want).enumerate() {
                    // null: the NaN a float field is padded with. Otherwise exact but for
                    // the last bit serde_json's fast float parsing may differ by.
                    let ok = match w.as_f64() {
                        Some(w) => (g - w).abs() <= 4.0 * f64::EPSILON * w.abs(),
                        None => g.is_nan(),
                    };
                    assert!(ok, "{what}/{ch} sample {k} value {i}: {g} vs {w}");
                }
            }
        }
        let ros: Value = serde_json::from_slice(
            &std::fs::read(out.join(sensor_dir(e)).join("ros.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(ros["padded_to"], e["padded_to"], "{what}: ros.json {ros}");
        if !e["padded_to"].is_null() {
            assert_eq!(ros["points_channel"], e["count_channel"], "{what}: {ros}");
        } else {
            assert!(ros.get("points_channel").is_none(), "{what}: {ros}");
        }
    }
    let text = r.out();
    let events = read_events(&out).unwrap();
    for (topic, s) in c.expected["skipped"].as_object().unwrap() {
        let (word, n) = (
            s["reason"].as_str().unwrap(),
            s["messages"].as_u64().unwrap(),
        );
        assert!(
            text.lines().any(|l| l.contains(&format!("{topic} ("))
                && l.contains(&format!("{n} messages"))
                && l.contains(word)),
            "{name}: {topic} ({word}) not reported:\n{text}"
        );
        assert!(
            events.iter().any(|e| matches!(&e.event, Event::Other(m)
                if m["event"] == "import_skipped" && m["topic"] == topic.as_str()
                    && m["reason"].as_str().unwrap().contains(word))),
            "{name}: {topic} not in the events: {events:?}"
        );
    }
    common::assert_upstream_reads_same(&out);
    out
}

fn sensor_dir(e: &Value) -> &Path {
    Path::new(e["sensor"].as_str().unwrap())
}

#[test]
fn clouds_of_changing_width_import_padded_from_mcap_and_ros1() {
    let c = write_with("ros_cloud_write.py");
    let mcap = check(&c, "rosbag2");
    let bag = check(&c, "ros1.bag");
    assert_same_samples(&mcap, &bag);
}

/// `replay` pushes the padded samples `import` writes.
#[test]
fn replay_of_clouds_of_changing_width_gives_what_import_gives() {
    let c = write_with("ros_cloud_write.py");
    let src = c.dir.join("rosbag2");
    let imported = c.dir.join("imported");
    let r = import(&src, &imported, &[]);
    assert!(r.ok(), "{}", r.text());
    let r = replay_gives_what_import_gives(&src, &imported, &[]);
    // 4 + 3 + 3 messages of the imported topics.
    assert!(r.out().contains("sent 10 samples"), "{}", r.text());
    for topic in c.expected["skipped"].as_object().unwrap().keys() {
        assert!(
            r.stderr.contains(&format!("skipped topic {topic} ")),
            "{}",
            r.stderr
        );
    }
}
