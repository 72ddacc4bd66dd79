//! Issue 26, the live feed's alarms, marks and positions, through the real daemon and a
//! Foxglove WebSocket client: an alarm raised (a gps going silent) arrives as a
//! `foxglove.Log` at `ERROR`, its clearing and an operator's mark at `INFO`, each the line
//! written to `events.jsonl`; the gps, mapped by `foxglove_location`, arrives as
//! `foxglove.LocationFix` with the latitude, longitude and altitude it sent; a mapping that
//! does not fit its sensor is listed in `status` and the sensor records as ever.

use crate::foxglove::{advertised, connect, message_data, Ws};
use crate::support::daemon;

use std::time::{Duration, Instant};

use daemon::*;
use foxglove::messages::{LocationFix, Log};
use foxglove::Decode;
use serde_json::{json, Value};
use tungstenite::Message;

fn gps_hello(sensor: &str) -> Value {
    json!({"roverlog": 1, "sensor": sensor, "channels": [
        {"name": "pos", "format": "raw", "type": "f8", "shape": [3], "desc": "lat lon alt"}]})
}

/// Fix `i`: latitude, longitude, altitude.
fn fix(i: u64) -> [f64; 3] {
    let i = i as f64;
    [48.137_154 + i * 1e-5, 11.576_124 - i * 2e-5, 519.5 + i]
}

fn fix_frame(i: u64) -> Vec<u8> {
    let pos: Vec<u8> = fix(i).iter().flat_map(|v| v.to_le_bytes()).collect();
    frame(1.8e9 + i as f64 / 10.0, None, &[(&pos, false)])
}

/// Reads `messageData` frames until `done` holds for what was read, or 30 s.
pub(crate) fn read_until(
    ws: &mut Ws,
    done: impl Fn(&[(u32, u64, Vec<u8>)]) -> bool,
) -> Vec<(u32, u64, Vec<u8>)> {
    ws.get_ref()
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut got = Vec::new();
    let t0 = Instant::now();
    while !done(&got) {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the awaited messages within 30 s; got {} messages",
            got.len()
        );
        match ws.read() {
            Ok(m) => got.extend(message_data(&m)),
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("reading the feed: {e}"),
        }
    }
    got
}

pub(crate) fn logs(got: &[(u32, u64, Vec<u8>)]) -> Vec<(u64, Log)> {
    got.iter()
        .filter(|m| m.0 == 2)
        .map(|(_, t, b)| (*t, Log::decode(b.as_slice()).expect("a foxglove.Log")))
        .collect()
}

const INFO: i32 = 2;
pub(crate) const ERROR: i32 = 4;

#[test]
fn alarms_and_marks_arrive_as_logs_with_levels_and_a_mapped_gps_as_location_fixes() {
    let d = TestDaemon::start(json!({
        "foxglove_listen": "127.0.0.1:0",
        "foxglove_max_hz": 100.0,
        "foxglove_location": {
            "gps": {"latitude": "pos[0]", "longitude": "pos[1]", "altitude": "pos[2]"},
            "gps2": {"latitude": "pos[5]", "longitude": "pos[1]"}
        },
        "sensors": {"gps": {"expected_hz": 10.0}},
    }));
    // The control socket answers before the feed listens: wait for its address.
    let url = d.wait_status("status has foxglove.url", |st| {
        st["foxglove"]["url"].is_string()
    })["foxglove"]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let (mut gps, r) = d.connect(&gps_hello("gps"));
    assert_eq!(r["ok"], true, "{r}");
    let mut ws = connect(&url);
    let chans = advertised(&mut ws, &["/gps/location", "/roverlog/events", "/gps/pos"]);
    assert_eq!(chans["/gps/location"]["schemaName"], "foxglove.LocationFix");
    assert_eq!(chans["/gps/location"]["encoding"], "protobuf");
    assert_eq!(chans["/roverlog/events"]["schemaName"], "foxglove.Log");
    let sub = json!({"op": "subscribe", "subscriptions": [
        {"id": 1, "channelId": chans["/gps/location"]["id"]},
        {"id": 2, "channelId": chans["/roverlog/events"]["id"]}]});
    ws.send(Message::text(sub.to_string())).unwrap();
    std::thread::sleep(Duration::from_millis(300));

    // A gps whose mapping names an element its channel does not have: listed, and recorded.
    let (mut gps2, r) = d.connect(&gps_hello("gps2"));
    assert_eq!(r["ok"], true, "{r}");
    let st = d.status();
    assert_eq!(
        st["foxglove"]["problems"],
        json!(["foxglove_location.gps2.latitude: \"pos[5]\": index 5 is out of range: channel pos has 3 elements (shape [3])"]),
        "{st}"
    );

    let reader = std::thread::spawn(move || {
        read_until(&mut ws, |got| {
            logs(got)
                .iter()
                .any(|(_, l)| l.name == "mark" && l.message == "cone on the left")
        })
    });
    // 1 s of fixes at 10 Hz, 1.5 s of silence (`silent` after 0.5 s), 2.5 s of fixes again
    // (the alarm clears once the gps has been back for 1 s), then a mark.
    let mut i = 0u64;
    let mut send_for = |gps: &mut Driver, secs: f64| {
        let t0 = Instant::now();
        while t0.elapsed().as_secs_f64() < secs {
            gps.send(&fix_frame(i));
            i += 1;
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    send_for(&mut gps, 1.0);
    std::thread::sleep(Duration::from_millis(1500));
    send_for(&mut gps, 2.5);
    gps2.send(&fix_frame(0));
    assert_eq!(gps2.sync(), 1);
    let r = d.ctl(json!({"cmd": "mark", "text": "cone on the left"}));
    assert_eq!(r["ok"], true, "{r}");
    let got = reader.join().unwrap();
    let sent = gps.sync();
    assert_eq!(sent, i);

    // The fixes: each one the gps sent at that time, every one of them at this rate.
    let fixes: Vec<(u64, LocationFix)> = got
        .iter()
        .filter(|m| m.0 == 1)
        .map(|(_, t, b)| {
            (
                *t,
                LocationFix::decode(b.as_slice()).expect("a LocationFix"),
            )
        })
        .collect();
    assert!(
        fixes.len() as u64 >= sent * 9 / 10,
        "{} of {sent} fixes on the feed",
        fixes.len()
    );
    for (t, f) in &fixes {
        let k = ((*t as f64 / 1e9 - 1.8e9) * 10.0).round() as u64;
        assert_eq!(*t, ((1.8e9 + k as f64 / 10.0) * 1e9).round() as u64);
        assert_eq!([f.latitude, f.longitude, f.altitude], fix(k), "fix {k}");
        assert_eq!(f.frame_id, "gps");
        assert_eq!(f.position_covariance, vec![0.0; 9]);
    }

    // The logs: each a line of events.jsonl, at its time (to a microsecond: serde_json reads
    // a float back to within an ULP, 0.24 us at this epoch); the silence raised (ERROR), then
    // cleared (INFO), then the mark (INFO).
    let logs = logs(&got);
    let trace = d.trace_dir();
    let on_disk = events(&trace);
    for (t, l) in &logs {
        assert!(
            on_disk
                .iter()
                .any(|e| (e.t * 1e9 - *t as f64).abs() < 1e3 && e.event.kind() == l.name),
            "{l:?} is not a line of events.jsonl"
        );
    }
    let mark = logs
        .iter()
        .position(|(_, l)| l.name == "mark")
        .expect("the mark");
    assert_eq!(logs[mark].1.level, INFO);
    // The last raise of `silent` on the gps before the mark (one may also come before the
    // first fix), and a clear after it.
    let raised = logs[..mark]
        .iter()
        .rposition(|(_, l)| {
            l.name == "alarm" && l.message.starts_with("alarm silent raised on gps")
        })
        .unwrap_or_else(|| panic!("silent raised before the mark: {logs:?}"));
    assert_eq!(logs[raised].1.level, ERROR, "{:?}", logs[raised]);
    let cleared = logs[raised..mark]
        .iter()
        .find(|(_, l)| l.name == "alarm_clear")
        .unwrap_or_else(|| panic!("silent cleared before the mark: {logs:?}"));
    assert_eq!(cleared.1.level, INFO, "{cleared:?}");
    assert!(
        cleared
            .1
            .message
            .starts_with("alarm silent cleared on gps after"),
        "{cleared:?}"
    );

    // gps2 recorded its fix though its mapping did not fit.
    assert_eq!(read_sensor(&trace, "gps2", "pos").0.len(), 1);

    // `roverlog export` of the trace takes the mapping the daemon recorded with it: every
    // fix, as the feed showed them; gps2's is skipped with a note.
    let mut d = d;
    assert!(d.stop().success(), "{}", d.log());
    let out = d.dir.path().join("drive.mcap");
    let r =
        crate::support::common::roverlog(&["export".as_ref(), trace.as_os_str(), out.as_os_str()]);
    assert!(r.ok(), "{}", r.text());
    assert!(
        r.out()
            .contains("skipped /gps2/location: the trace's foxglove_location.gps2.latitude"),
        "{}",
        r.text()
    );
    let script =
        std::fs::read_to_string(crate::support::common::root().join("tests/py/mcap_read.py"))
            .unwrap();
    let m: Value = serde_json::from_str(&crate::support::common::run_python(
        &script,
        &[out.as_os_str()],
    ))
    .unwrap();
    let exported = m["/gps/location"]["fields"].as_array().unwrap();
    assert_eq!(exported.len() as u64, sent);
    // To an ULP: the values pass through Python's JSON and serde_json's float parsing.
    let close = |v: &Value, want: f64| (v.as_f64().unwrap() - want).abs() <= want.abs() * 1e-15;
    for (k, f) in (0..).zip(exported) {
        let [lat, lon, alt] = fix(k);
        assert!(
            close(&f["latitude"], lat) && close(&f["longitude"], lon) && close(&f["altitude"], alt),
            "exported fix {k}: {f}, want {:?}",
            fix(k)
        );
    }
    assert!(m.get("/gps2/location").is_none());
}
