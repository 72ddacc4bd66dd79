//! `roverlog import` of a custom ROS 2 message with `wstring` fields (issue 28), in both wire
//! forms ROS 2 writers use: `tests/py/ros_wstring_write.py` builds the CDR by hand (no Python
//! ROS serializer writes a wstring) into an MCAP file with the `mcap` package's writer. The
//! numbers after each wstring come out right only when its bytes were read in the right form;
//! a message that fits neither form, a topic whose form changes after its first non-empty
//! wstring told it, and a ROS 1 definition with a wstring are skipped with the reason said.

use crate::support::common;

use roverlog_core::format::events::{read_events, Event};
use roverlog_core::format::{DType, Trace};

#[test]
fn imports_wstring_messages_in_both_wire_forms() {
    let bags = crate::ros_import::write_with("ros_wstring_write.py");
    let (dir, expected) = (&bags.dir, &bags.expected);
    let trace_dir = dir.join("trace");
    let r = common::roverlog(&[
        "import".as_ref(),
        dir.join("wstring.mcap").as_os_str(),
        trace_dir.as_os_str(),
    ]);
    assert!(r.ok(), "import: {}", r.text());

    let trace = Trace::open(&trace_dir).unwrap();
    let topics = expected["topics"].as_object().unwrap();
    assert_eq!(trace.sensor_names().len(), topics.len(), "{}", r.text());
    for (topic, e) in topics {
        let sensor = trace.sensor(e["sensor"].as_str().unwrap()).unwrap();
        let ts = sensor.timestamps().unwrap();
        let want: Vec<f64> = e["stamps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(ts.len(), want.len(), "{topic}: samples");
        for (a, b) in ts.iter().zip(&want) {
            assert!((a - b).abs() < 1e-6, "{topic}: ts {a} vs {b}");
        }
        // The wstrings themselves are left out, as strings are; the numbers stay.
        let mut names: Vec<_> = sensor
            .meta()
            .channels
            .iter()
            .map(|(n, _)| n.clone())
            .collect();
        names.sort();
        assert_eq!(names, ["count", "score", "ts"], "{topic}");
        for (ch, dtype) in [("score", DType::F8), ("count", DType::U4)] {
            assert_eq!(sensor.meta().get(ch).unwrap().dtype, dtype, "{topic}/{ch}");
            let mut reader = sensor.channel(ch).unwrap();
            for (k, w) in e[ch].as_array().unwrap().iter().enumerate() {
                let b = reader.get(k as u64).unwrap();
                let got = match dtype {
                    DType::F8 => f64::from_le_bytes(b[..].try_into().unwrap()),
                    _ => u32::from_le_bytes(b[..].try_into().unwrap()) as f64,
                };
                assert_eq!(got, w.as_f64().unwrap(), "{topic}/{ch} sample {k}");
            }
        }
    }

    let text = r.out();
    let events = read_events(&trace_dir).unwrap();
    for (topic, word) in expected["skipped"].as_object().unwrap() {
        let word = word.as_str().unwrap();
        assert!(
            text.lines()
                .any(|l| l.contains(topic.as_str()) && l.contains(word)),
            "{topic} ({word}) not reported:\n{text}"
        );
        assert!(
            events.iter().any(|e| matches!(&e.event, Event::Other(m)
                if m["event"] == "import_skipped" && m["topic"] == topic.as_str()
                    && m["reason"].as_str().unwrap().contains(word))),
            "{topic} not in the events: {events:?}"
        );
    }
    common::assert_upstream_reads_same(&trace_dir);
}
