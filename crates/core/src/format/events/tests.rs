//! The typed events write the very lines the daemon wrote before they were typed (tools and
//! old traces depend on those bytes), and the reader's rules for damaged or foreign lines.

use super::*;
use serde_json::json;

/// How the daemon wrote a line before events were typed: `t`, `event`, then the fields in
/// the order of the `json!` at each call site (serde_json keeps insertion order).
fn untyped_line(t: f64, kind: &str, fields: Value) -> String {
    let mut m = Map::new();
    m.insert("t".into(), t.into());
    m.insert("event".into(), kind.into());
    if let Value::Object(f) = fields {
        m.extend(f);
    }
    Value::Object(m).to_string()
}

fn line(t: f64, event: Event) -> String {
    String::from_utf8(EventLine { t, event }.to_json()).unwrap()
}

fn s(x: &str) -> String {
    x.to_string()
}

#[test]
fn typed_events_write_the_exact_lines_of_the_untyped_writer() {
    let t = 1_764_000_000.123_456_7;
    let counts = Counts(vec![
        (s("imu"), Count::Samples { samples: 250 }),
        (
            s("cam"),
            Count::Error {
                error: s("finish failed: disk full"),
            },
        ),
    ]);
    // Each pair: the `json!` of the call site as it was (copied), and the typed event.
    let cases = [
        (
            "start",
            json!({"trace": "2026.11.25-10.00.00-drive", "reason": "command", "label": "drive", "sensors": ["imu", "cam"]}),
            Event::Start {
                trace: s("2026.11.25-10.00.00-drive"),
                reason: s("command"),
                label: Some(s("drive")),
                sensors: vec![s("imu"), s("cam")],
                from: None,
            },
        ),
        (
            "start",
            json!({"trace": "b", "reason": "rotate_seconds", "label": null, "sensors": [], "from": "a"}),
            Event::Start {
                trace: s("b"),
                reason: s("rotate_seconds"),
                label: None,
                sensors: vec![],
                from: Some(s("a")),
            },
        ),
        (
            "stop",
            json!({"trace": "a", "reason": "command", "sensors": {"imu": {"samples": 250}, "cam": {"error": "finish failed: disk full"}}}),
            Event::Stop {
                trace: s("a"),
                reason: s("command"),
                sensors: counts,
            },
        ),
        (
            "rotate",
            json!({"to": "b", "reason": "rotate_bytes"}),
            Event::Rotate {
                to: s("b"),
                reason: s("rotate_bytes"),
            },
        ),
        (
            "mark",
            json!({"text": "turning left"}),
            Event::Mark {
                text: s("turning left"),
            },
        ),
        (
            "alarm_clear",
            json!({"alarm": "disk_low", "sensor": "", "start": 1.5, "end": 2.25}),
            Event::AlarmClear {
                alarm: s("disk_low"),
                sensor: s(""),
                start: 1.5,
                end: 2.25,
            },
        ),
        (
            "clock_step",
            json!({"sensor": "imu", "frame": 7, "from": 10.5, "to": 9.25}),
            Event::ClockStep {
                sensor: s("imu"),
                frame: Some(7),
                kind: None,
                from: 10.5,
                to: 9.25,
                moves: None,
            },
        ),
        (
            "clock_step",
            json!({"sensor": "imu", "kind": "offset", "from": 0.001, "to": 3.2, "moves": 4}),
            Event::ClockStep {
                sensor: s("imu"),
                frame: None,
                kind: Some(ClockStepKind::Offset),
                from: 0.001,
                to: 3.2,
                moves: Some(4),
            },
        ),
        (
            "gap",
            json!({"sensor": "imu", "frame": 9, "missing": 3, "after_seq": 5, "seq": 9, "ts": 12.5}),
            Event::Gap {
                sensor: s("imu"),
                frame: 9,
                missing: 3,
                after_seq: 5,
                seq: 9,
                ts: 12.5,
            },
        ),
        (
            "seq_reset",
            json!({"sensor": "imu", "frame": 9, "after_seq": 50, "seq": 0}),
            Event::SeqReset {
                sensor: s("imu"),
                frame: 9,
                after_seq: 50,
                seq: 0,
            },
        ),
        (
            "repeat",
            json!({"sensor": "imu", "count": 3, "first_frame": 0, "first_seq": 7, "last_seq": 9}),
            Event::Repeat {
                sensor: s("imu"),
                count: 3,
                first_frame: 0,
                first_seq: 7,
                last_seq: 9,
            },
        ),
        (
            "drop",
            json!({"sensor": "cam", "count": 4, "first_frame": 100, "from_ts": 1.0, "to_ts": 1.75}),
            Event::Drop {
                sensor: s("cam"),
                count: 4,
                first_frame: 100,
                from_ts: 1.0,
                to_ts: 1.75,
            },
        ),
        (
            "partial_frame",
            json!({"sensor": "part", "frame": 3, "bytes": 7}),
            Event::PartialFrame {
                sensor: s("part"),
                frame: 3,
                bytes: 7,
            },
        ),
        (
            "snapshot",
            json!({"sensor": "cam", "frames": 10}),
            Event::Snapshot {
                sensor: s("cam"),
                frames: 10,
            },
        ),
        (
            "lzmaf_stored",
            json!({"sensor": "lidar", "frames": 12}),
            Event::LzmafStored {
                sensor: s("lidar"),
                frames: 12,
            },
        ),
        (
            "error",
            json!({"sensor": "cam", "error": "opening x: denied"}),
            Event::Error {
                sensor: s("cam"),
                error: s("opening x: denied"),
            },
        ),
        (
            "recovered",
            json!({"sensor": "imu", "len": 5, "cuts": ["imu/acc: cut 3 bytes"], "left_alone": [], "after": "write failure"}),
            Event::Recovered {
                sensor: s("imu"),
                len: 5,
                cuts: vec![s("imu/acc: cut 3 bytes")],
                left_alone: vec![],
                after: Some(s("write failure")),
            },
        ),
        (
            "recovered",
            json!({"sensor": "imu", "len": 5, "cuts": [], "left_alone": ["x: stray"]}),
            Event::Recovered {
                sensor: s("imu"),
                len: 5,
                cuts: vec![],
                left_alone: vec![s("x: stray")],
                after: None,
            },
        ),
        (
            "crash",
            json!({"note": "the daemon ended without stopping this trace"}),
            Event::Crash {
                note: s("the daemon ended without stopping this trace"),
            },
        ),
    ];
    for (kind, fields, event) in cases {
        let want = untyped_line(t, kind, fields);
        assert_eq!(event.kind(), kind);
        assert_eq!(line(t, event.clone()), want);
        let back: EventLine = serde_json::from_str(&want).unwrap();
        assert_eq!(back, EventLine { t, event }, "{want}");
    }
}

/// The one line whose key order changed: the untyped writer built `alarm` from the status
/// object and removed its `state` key with a swap, which moved the last detail before
/// `start`. The typed line keeps `start` before the details; both read as the same event.
#[test]
fn an_alarm_line_reads_the_same_in_its_old_and_its_new_key_order() {
    let mut details = Map::new();
    details.insert("free_bytes".into(), json!(1000));
    details.insert("bytes_per_s".into(), json!(50.0));
    details.insert("seconds_left".into(), json!(20.0));
    // As the untyped health monitor made it (its steps copied).
    let mut v = json!({"alarm": "disk_low", "sensor": "", "state": "raised", "start": 1.5});
    v.as_object_mut().unwrap().extend(details.clone());
    v.as_object_mut().unwrap().remove("state");
    let old = untyped_line(2.0, "alarm", v);
    assert_eq!(
        old,
        r#"{"t":2.0,"event":"alarm","alarm":"disk_low","sensor":"","seconds_left":20.0,"start":1.5,"free_bytes":1000,"bytes_per_s":50.0}"#
    );
    let event = Event::Alarm {
        alarm: s("disk_low"),
        sensor: s(""),
        start: 1.5,
        details,
    };
    let read: EventLine = serde_json::from_str(&old).unwrap();
    assert_eq!(read.event, event);
    assert_eq!(
        line(2.0, event),
        r#"{"t":2.0,"event":"alarm","alarm":"disk_low","sensor":"","start":1.5,"free_bytes":1000,"bytes_per_s":50.0,"seconds_left":20.0}"#
    );
}

#[test]
fn lines_as_the_untyped_writer_printed_them() {
    // Lines as the untyped writer put them in traces (t first, null label, counts by sensor).
    for want in [
        r#"{"t":1764064800.25,"event":"start","trace":"2026.11.25-10.00.00","reason":"resume","label":null,"sensors":["imu"]}"#,
        r#"{"t":1764064801.5,"event":"stop","trace":"2026.11.25-10.00.00","reason":"shutdown","sensors":{"imu":{"samples":12}}}"#,
        r#"{"t":1764064800.75,"event":"drop","sensor":"imu","count":2,"first_frame":5,"from_ts":1764064800.5,"to_ts":1764064800.51}"#,
        r#"{"t":1764064800.75,"event":"mark","text":"cone \"A\""}"#,
    ] {
        let e: EventLine = serde_json::from_str(want).unwrap();
        assert!(!matches!(e.event, Event::Other(_)), "{want}");
        assert_eq!(String::from_utf8(e.to_json()).unwrap(), want);
    }
}

#[test]
fn a_kind_from_a_newer_writer_is_kept_as_its_json() {
    let want = r#"{"t":5.5,"event":"teleport","sensor":"imu","to":[1,2]}"#;
    let e: EventLine = serde_json::from_str(want).unwrap();
    assert_eq!(e.t, 5.5);
    assert_eq!(e.event.kind(), "teleport");
    let Event::Other(m) = &e.event else {
        panic!("{e:?}")
    };
    assert_eq!(m["to"], json!([1, 2]));
    assert_eq!(String::from_utf8(e.to_json()).unwrap(), want);
    // A known kind with fields this version cannot read, too (a hand-written drop).
    let e: EventLine = serde_json::from_str(r#"{"t":1,"event":"drop","count":"many"}"#).unwrap();
    assert!(matches!(&e.event, Event::Other(m) if m["count"] == "many"));
    assert_eq!(e.event.kind(), "drop");
    // New fields of a known kind are ignored.
    let e: EventLine =
        serde_json::from_str(r#"{"t":1,"event":"mark","text":"x","by":"web"}"#).unwrap();
    assert_eq!(e.event, Event::Mark { text: s("x") });
}

#[test]
fn fields_older_writers_left_out_have_defaults() {
    let e: EventLine =
        serde_json::from_str(r#"{"t":1,"event":"stop","trace":"a","reason":"rotate"}"#).unwrap();
    assert_eq!(
        e.event,
        Event::Stop {
            trace: s("a"),
            reason: s("rotate"),
            sensors: Counts::default()
        }
    );
}

fn read(text: &[u8]) -> Vec<Result<EventLine>> {
    EventReader::new("trace/_roverlog/events.jsonl", text).collect()
}

#[test]
fn the_reader_names_the_file_and_line_of_a_line_that_is_not_an_event() {
    let text = b"{\"t\":1,\"event\":\"mark\",\"text\":\"a\"}\n\n{\"t\":2,\"event\"\n{\"t\":3,\"event\":\"mark\",\"text\":\"b\"}\n";
    let got = read(text);
    assert_eq!(got.len(), 3);
    assert!(got[0].is_ok() && got[2].is_ok());
    let msg = got[1].as_ref().unwrap_err().to_string();
    assert!(
        msg.starts_with("trace/_roverlog/events.jsonl: line 3: "),
        "{msg}"
    );
    for (bad, why) in [
        (&b"[1]\n"[..], "invalid type"),
        (b"{\"event\":\"mark\"}\n", "missing field `t`"),
        (b"{\"t\":\"x\",\"event\":\"mark\"}\n", "not a number"),
        (b"{\"t\":1}\n", "no `event`"),
        (b"\0\0\0\n", "line 1"),
    ] {
        let msg = read(bad).remove(0).unwrap_err().to_string();
        assert!(msg.contains(why), "{msg}");
    }
}

#[test]
fn a_torn_last_line_is_skipped_and_an_over_long_line_is_an_error() {
    let got = read(b"{\"t\":1,\"event\":\"mark\",\"text\":\"a\"}\n{\"t\":2,\"ev");
    assert_eq!(got.len(), 1);
    assert!(got[0].is_ok());

    let mut text = b"{\"t\":1,\"event\":\"mark\",\"text\":\"".to_vec();
    text.extend(std::iter::repeat_n(b'x', MAX_EVENT_LINE));
    text.extend(b"\"}\n{\"t\":2,\"event\":\"mark\",\"text\":\"after\"}\n");
    let got = read(&text);
    assert_eq!(got.len(), 2);
    let msg = got[0].as_ref().unwrap_err().to_string();
    assert!(msg.contains("line 1 is longer than the limit"), "{msg}");
    assert_eq!(
        got[1].as_ref().unwrap().event,
        Event::Mark { text: s("after") }
    );
}

#[test]
fn read_events_of_a_trace_without_a_log_is_empty() {
    let dir = tempfile::tempdir().unwrap();
    assert!(read_events(dir.path()).unwrap().is_empty());
    std::fs::create_dir(dir.path().join(EVENTS_DIR)).unwrap();
    std::fs::write(
        events_path(dir.path()),
        "{\"t\":1,\"event\":\"crash\",\"note\":\"n\"}\nnope\n",
    )
    .unwrap();
    let e = read_events(dir.path()).unwrap_err().to_string();
    assert!(e.contains("events.jsonl: line 2: "), "{e}");
}
