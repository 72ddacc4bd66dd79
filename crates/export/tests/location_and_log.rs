//! Issue 26: `export_mcap` read back with the Rust `mcap` reader (the Python one reads the
//! CLI's file in tests/cli/export_location.rs): a sensor with a position mapping has
//! `foxglove.LocationFix` messages with its values, including an `f4` scalar altitude
//! channel and a `ts_recv` publish time; the events are `foxglove.Log` at their levels.

use std::collections::BTreeMap;

use foxglove::messages::{LocationFix, Log};
use foxglove::Decode;
use roverlog_core::format::meta::{ChannelFormat, ChannelMeta, SensorMeta};
use roverlog_core::format::{DType, SensorWriter, WriterOptions};
use roverlog_export::location::LocationMapping;
use roverlog_export::{export_mcap, ExportOptions};

const T0: f64 = 1.7e9;

#[test]
fn location_fixes_and_event_logs_read_back_with_the_rust_mcap_reader() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    std::fs::create_dir_all(t.join("_roverlog")).unwrap();
    let meta = SensorMeta {
        channels: [
            ("ll", ChannelFormat::Raw, DType::F8, vec![2]),
            ("alt", ChannelFormat::Lzmaf, DType::F4, vec![]),
            ("ts_recv", ChannelFormat::Raw, DType::F8, vec![]),
        ]
        .into_iter()
        .map(|(n, f, d, s)| (n.to_string(), ChannelMeta::new(f, d, s, "")))
        .collect(),
    };
    let mut w = SensorWriter::create(&t.join("gnss"), meta, &WriterOptions::default()).unwrap();
    for i in 0..4 {
        let k = f64::from(i);
        let ll: Vec<u8> = [-33.8568 - k * 1e-4, 151.2153 + k * 1e-4]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let ts = T0 + k * 0.2;
        w.append(
            ts,
            &[
                &ll,
                &(12.5f32 + k as f32).to_le_bytes(),
                &(ts + 0.01).to_le_bytes(),
            ],
        )
        .unwrap();
    }
    w.finish().unwrap();
    std::fs::write(
        t.join("_roverlog/events.jsonl"),
        format!(
            "{}\n{}\n{}\n",
            serde_json::json!({"t": T0, "event": "alarm", "alarm": "queue_high", "sensor": "gnss", "start": T0, "fill": 0.9}),
            serde_json::json!({"t": T0 + 0.5, "event": "alarm_clear", "alarm": "queue_high", "sensor": "gnss", "start": T0, "end": T0 + 0.5}),
            serde_json::json!({"t": T0 + 0.6, "event": "mark", "text": "bridge"}),
        ),
    )
    .unwrap();
    let mapping = LocationMapping::from_pairs(
        "gnss",
        [
            ("latitude", "ll[0]"),
            ("longitude", "ll[1]"),
            ("altitude", "alt"),
        ],
    )
    .unwrap();
    let out = dir.path().join("x.mcap");
    let opts = ExportOptions {
        locations: BTreeMap::from([("gnss".to_string(), mapping)]),
        ..ExportOptions::default()
    };
    let report = export_mcap(&t, &out, &opts, |_, _| {}).unwrap();
    assert!(
        report.topics.contains(&("/gnss/location".to_string(), 4)),
        "{report:?}"
    );

    let bytes = std::fs::read(&out).unwrap();
    let (mut fixes, mut logs) = (Vec::new(), Vec::new());
    for m in mcap::MessageStream::new(&bytes).unwrap() {
        let m = m.unwrap();
        let schema = m.channel.schema.as_ref().map(|s| s.name.clone());
        match m.channel.topic.as_str() {
            "/gnss/location" => {
                assert_eq!(schema.as_deref(), Some("foxglove.LocationFix"));
                assert_eq!(m.channel.message_encoding, "protobuf");
                fixes.push((
                    m.log_time,
                    m.publish_time,
                    LocationFix::decode(&*m.data).unwrap(),
                ));
            }
            "/roverlog/events" => {
                assert_eq!(schema.as_deref(), Some("foxglove.Log"));
                logs.push(Log::decode(&*m.data).unwrap());
            }
            _ => {}
        }
    }
    assert_eq!(fixes.len(), 4);
    for (i, (log_time, publish_time, f)) in (0..).zip(&fixes) {
        let k = f64::from(i);
        let ts = T0 + k * 0.2;
        assert_eq!(*log_time, (ts * 1e9).round() as u64);
        assert_eq!(*publish_time, ((ts + 0.01) * 1e9).round() as u64, "ts_recv");
        assert_eq!(
            (f.latitude, f.longitude, f.altitude),
            (
                -33.8568 - k * 1e-4,
                151.2153 + k * 1e-4,
                f64::from(12.5f32 + k as f32)
            )
        );
        assert_eq!(f.frame_id, "gnss");
    }
    let got: Vec<(&str, i32, &str)> = logs
        .iter()
        .map(|l| (l.name.as_str(), l.level, l.message.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("alarm", 3, "alarm queue_high raised on gnss: {\"fill\":0.9}"),
            (
                "alarm_clear",
                2,
                "alarm queue_high cleared on gnss after 0.5 s (raised at 1700000000, cleared at 1700000000.5)"
            ),
            ("mark", 2, "bridge"),
        ]
    );
}
