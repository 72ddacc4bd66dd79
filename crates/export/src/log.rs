//! A trace event (`events.jsonl`) as a `foxglove.Log` message on [`EVENTS_TOPIC`]: shared by
//! `roverlog export` (every event of the trace) and the daemon's live feed (every event as
//! the daemon writes it), so an alarm or a mark reads the same in a live session and in the
//! exported file, and a Foxglove layout made for one works for the other.
//!
//! Levels: an alarm raised is `ERROR` when data is being lost or soon will be (`silent`,
//! `missing`, `disk_low`) and `WARNING` otherwise (`rate_low`, `rate_high`, `queue_high`, a
//! kind this version does not know); a writer `error` or a `crash` is `ERROR`; a `drop`,
//! `gap`, `clock_step` or `recovered` is `WARNING`; everything else (`alarm_clear`, `mark`,
//! `start`, `stop`, ...) is `INFO`. `name` is the event's kind. The text of a mark is its
//! own text; an alarm's says which alarm, which sensor and what was measured; any other
//! event's is its line as in the log, so nothing of it is lost.

use foxglove::messages::{log::Level, Log};
use foxglove::{Encode, Schema};

use roverlog_core::format::events::{Event, EventLine};

use crate::message::{encode, stamp};

/// The topic of the events, live and in an exported file.
pub const EVENTS_TOPIC: &str = "/roverlog/events";

/// Alarms raised at `ERROR`: the sensor's data is not arriving, recording will stop, or the
/// disk failed a write or fsync (`disk_error`: samples were lost).
const SEVERE_ALARMS: [&str; 4] = ["silent", "missing", "disk_low", "disk_error"];

/// The schema of [`EVENTS_TOPIC`] (`foxglove.Log`, protobuf).
pub fn schema() -> Schema {
    Log::get_schema().expect("SDK messages have schemas")
}

/// The level an event is shown at.
pub fn level(event: &Event) -> Level {
    match event {
        Event::Alarm { alarm, .. } if SEVERE_ALARMS.contains(&alarm.as_str()) => Level::Error,
        Event::Alarm { .. } => Level::Warning,
        Event::Error { .. } | Event::Crash { .. } => Level::Error,
        Event::Drop { .. }
        | Event::LzmafStored { .. }
        | Event::Gap { .. }
        | Event::ClockStep { .. }
        | Event::Recovered { .. } => Level::Warning,
        _ => Level::Info,
    }
}

/// The text shown for an event.
fn text(line: &EventLine) -> String {
    let on = |sensor: &str| {
        if sensor.is_empty() {
            String::new()
        } else {
            format!(" on {sensor}")
        }
    };
    match &line.event {
        Event::Mark { text } => text.clone(),
        Event::Alarm {
            alarm,
            sensor,
            details,
            ..
        } => {
            let measured = serde_json::to_string(details).expect("JSON of a map");
            format!("alarm {alarm} raised{}: {measured}", on(sensor))
        }
        Event::AlarmClear {
            alarm,
            sensor,
            start,
            end,
        } => format!(
            "alarm {alarm} cleared{} after {:.1} s (raised at {start}, cleared at {end})",
            on(sensor),
            end - start
        ),
        // The line as it is in the log.
        _ => String::from_utf8(line.to_json()).expect("JSON is UTF-8"),
    }
}

/// The `foxglove.Log` message of one event line.
pub fn message(line: &EventLine) -> Log {
    Log {
        timestamp: Some(stamp(line.t)),
        level: level(&line.event) as i32,
        message: text(line),
        name: line.event.kind().to_string(),
        file: String::new(),
        line: 0,
    }
}

/// [`message`] as protobuf bytes.
pub fn encode_event(line: &EventLine) -> Vec<u8> {
    encode(&message(line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(v: serde_json::Value) -> EventLine {
        let text = format!("{v}\n");
        let mut r =
            roverlog_core::format::events::EventReader::new("events.jsonl", text.as_bytes());
        r.next().unwrap().unwrap()
    }

    #[test]
    fn alarms_marks_and_problems_have_their_levels_and_texts() {
        let cases = [
            (
                json!({"t": 5.0, "event": "alarm", "alarm": "silent", "sensor": "gps", "start": 5.0, "expected_hz": 10.0}),
                Level::Error,
                "alarm silent raised on gps: {\"expected_hz\":10.0}",
            ),
            (
                json!({"t": 5.0, "event": "alarm", "alarm": "rate_low", "sensor": "imu", "start": 5.0, "rate_hz": 3.0}),
                Level::Warning,
                "alarm rate_low raised on imu: {\"rate_hz\":3.0}",
            ),
            (
                json!({"t": 5.0, "event": "alarm", "alarm": "disk_low", "sensor": "", "start": 5.0}),
                Level::Error,
                "alarm disk_low raised: {}",
            ),
            (
                json!({"t": 7.5, "event": "alarm_clear", "alarm": "silent", "sensor": "gps", "start": 5.0, "end": 7.5}),
                Level::Info,
                "alarm silent cleared on gps after 2.5 s (raised at 5, cleared at 7.5)",
            ),
            (
                json!({"t": 8.0, "event": "mark", "text": "cone at the left"}),
                Level::Info,
                "cone at the left",
            ),
            (
                json!({"t": 9.0, "event": "error", "sensor": "cam", "error": "disk full"}),
                Level::Error,
                r#"{"t":9.0,"event":"error","sensor":"cam","error":"disk full"}"#,
            ),
        ];
        for (v, lvl, want) in cases {
            let l = line(v.clone());
            let m = message(&l);
            assert_eq!(m.level, lvl as i32, "{v}");
            assert_eq!(m.message, want, "{v}");
            assert_eq!(m.name, v["event"].as_str().unwrap());
            assert_eq!(m.timestamp, Some(stamp(l.t)));
        }
    }
}
