//! The live Foxglove feed through the real daemon: a Foxglove WebSocket client (subprotocol
//! `foxglove.sdk.v1`, the SDK server's) sees every sensor channel advertised with the export's schemas,
//! receives decimated messages whose payloads are samples that are on disk, and neither a
//! reading nor a stalled client changes what is written.

use crate::support::daemon;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use daemon::*;
use serde_json::{json, Value};
use tungstenite::client::IntoClientRequest;
use tungstenite::http::HeaderValue;
use tungstenite::{Message, WebSocket};

pub(crate) type Ws = WebSocket<TcpStream>;

fn imu_hello() -> Value {
    raw_hello("imu", 6)
}

fn cam_hello() -> Value {
    json!({"roverlog": 1, "sensor": "cam", "channels": [
        {"name": "img", "format": "jpg", "type": "u1", "shape": [240, 320, 3], "desc": "camera"}]})
}

/// A JPEG-framed sample (SOI ... EOI) of `n` bytes, distinct per `i`.
fn jpeg(i: u64, n: usize) -> Vec<u8> {
    let mut b = sample(7, i, n);
    b[..2].copy_from_slice(&[0xFF, 0xD8]);
    b[n - 2..].copy_from_slice(&[0xFF, 0xD9]);
    b
}

pub(crate) fn connect(url: &str) -> Ws {
    let mut req = url.into_client_request().unwrap();
    req.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        HeaderValue::from_static("foxglove.sdk.v1"),
    );
    let addr = url.trim_start_matches("ws://");
    let stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let (ws, _) =
        tungstenite::client(req, stream).unwrap_or_else(|e| panic!("connecting to {url}: {e}"));
    ws
}

/// Reads until the server has advertised `topics`; returns topic -> channel JSON.
pub(crate) fn advertised(
    ws: &mut Ws,
    topics: &[&str],
) -> std::collections::BTreeMap<String, Value> {
    let mut found = std::collections::BTreeMap::new();
    let t0 = Instant::now();
    while !topics.iter().all(|t| found.contains_key(*t)) {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "advertised within 20 s: {found:?}"
        );
        if let Message::Text(t) = ws.read().expect("a message before the read timeout") {
            let v: Value = serde_json::from_str(&t).unwrap();
            if v["op"] == "advertise" {
                for c in v["channels"].as_array().unwrap() {
                    found.insert(c["topic"].as_str().unwrap().to_owned(), c.clone());
                }
            }
        }
    }
    found
}

/// A `messageData` frame: (subscription id, log time ns, payload).
pub(crate) fn message_data(m: &Message) -> Option<(u32, u64, Vec<u8>)> {
    let Message::Binary(b) = m else { return None };
    if b.first() != Some(&1) {
        return None;
    }
    Some((
        u32::from_le_bytes(b[1..5].try_into().unwrap()),
        u64::from_le_bytes(b[5..13].try_into().unwrap()),
        b[13..].to_vec(),
    ))
}

/// Every `messageData` frame the client receives for `how_long`; a quiet moment is a short
/// read timeout, not an error.
fn read_for(ws: &mut Ws, how_long: Duration) -> Vec<(u32, u64, Vec<u8>)> {
    ws.get_ref()
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut got = Vec::new();
    let t0 = Instant::now();
    while t0.elapsed() < how_long {
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

/// A daemon with the live feed on (`feed`: its foxglove keys besides the listen address), an
/// imu and a camera driver connected, and a client subscribed to both (`/imu/x` as
/// subscription 1, `/cam/img` as 2), the subscription given time to land.
struct Watched {
    d: TestDaemon,
    url: String,
    imu: Driver,
    cam: Driver,
    ws: Ws,
    /// What the server advertised: topic -> channel JSON.
    chans: std::collections::BTreeMap<String, Value>,
}

fn watched(feed: Value) -> Watched {
    let mut cfg = json!({"foxglove_listen": "127.0.0.1:0"});
    for (k, v) in feed.as_object().unwrap() {
        cfg[k] = v.clone();
    }
    let d = TestDaemon::start(cfg);
    // The control socket answers before the feed listens: wait for its address.
    let url = d.wait_status("status has foxglove.url", |st| {
        st["foxglove"]["url"].is_string()
    })["foxglove"]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let (imu, r) = d.connect(&imu_hello());
    assert_eq!(r["ok"], true, "{r}");
    let (cam, r) = d.connect(&cam_hello());
    assert_eq!(r["ok"], true, "{r}");
    let mut ws = connect(&url);
    let chans = advertised(&mut ws, &["/imu/x", "/cam/img"]);
    let sub = json!({"op": "subscribe", "subscriptions": [
        {"id": 1, "channelId": chans["/imu/x"]["id"]}, {"id": 2, "channelId": chans["/cam/img"]["id"]}]});
    ws.send(Message::text(sub.to_string())).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    Watched {
        d,
        url,
        imu,
        cam,
        ws,
        chans,
    }
}

#[test]
fn a_client_sees_decimated_messages_that_are_on_disk_and_a_stalled_one_slows_nothing() {
    let Watched {
        mut d,
        url,
        mut imu,
        mut cam,
        mut ws,
        chans,
    } = watched(json!({"foxglove_max_hz": 1000.0, "foxglove_sensor_hz": {"imu": 10.0}}));
    assert!(url.starts_with("ws://127.0.0.1:"), "{url}");
    assert_eq!(chans["/imu/x"]["encoding"], "json");
    assert_eq!(chans["/imu/x"]["schemaName"], "roverlog.Sample");
    assert_eq!(chans["/cam/img"]["encoding"], "protobuf");
    assert_eq!(chans["/cam/img"]["schemaName"], "foxglove.CompressedImage");
    assert!(!chans.contains_key("/imu/ts_recv"), "{chans:?}");

    // 3 s of imu at 200 Hz and camera at 30 Hz; the client reads throughout.
    let ws_reader = std::thread::spawn(move || {
        // Reads for 5 s (the 3 s of sending and what trails it).
        let got = read_for(&mut ws, Duration::from_secs(5));
        ws.get_ref()
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        (ws, got)
    });
    let t0 = Instant::now();
    let (mut n_imu, mut n_cam) = (0u64, 0u64);
    while t0.elapsed() < Duration::from_secs(3) {
        imu.send(&frame(
            1.8e9 + n_imu as f64 / 200.0,
            None,
            &[(&sample(1, n_imu, 6), false)],
        ));
        n_imu += 1;
        if n_imu % 7 == 0 {
            cam.send(&frame(
                1.8e9 + n_cam as f64 / 30.0,
                None,
                &[(&jpeg(n_cam, 4000), true)],
            ));
            n_cam += 1;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(imu.sync(), n_imu);
    assert_eq!(cam.sync(), n_cam);
    let (mut ws, got) = ws_reader.join().unwrap();

    // A second client subscribes and never reads; big camera frames go on, every one offered
    // to the feed (the camera's rate limit is 1000 a second).
    let mut stalled = connect(&url);
    let chans2 = advertised(&mut stalled, &["/cam/img"]);
    let sub = json!({"op": "subscribe", "subscriptions": [{"id": 9, "channelId": chans2["/cam/img"]["id"]}]});
    stalled.send(Message::text(sub.to_string())).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let big = 512 << 10;
    let t0 = Instant::now();
    let first_big = n_cam;
    while n_cam < first_big + 300 {
        cam.send(&frame(
            1.8e9 + n_cam as f64 / 30.0,
            None,
            &[(&jpeg(n_cam, big), true)],
        ));
        n_cam += 1;
    }
    assert_eq!(
        cam.sync(),
        n_cam,
        "a stalled Foxglove client held the writer back"
    );
    assert!(
        t0.elapsed() < Duration::from_secs(60),
        "300 frames took {:?}",
        t0.elapsed()
    );
    let st = d.status();
    let live = &st["foxglove"];
    assert_eq!(live["clients"], 2, "{st}");
    assert!(live["sent"].as_u64().unwrap() > 0, "{st}");
    eprintln!("feed after the stalled client: {live}");
    drop(stalled);
    let _ = ws.close(None);

    let trace = d.trace_dir();
    assert!(
        d.stop().success(),
        "the daemon did not exit 0 with a Foxglove client\n{}",
        d.log()
    );
    let (imu_ts, imu_data) = read_sensor(&trace, "imu", "x");
    let (cam_ts, cam_data) = read_sensor(&trace, "cam", "img");
    assert_eq!(imu_ts.len() as u64, n_imu, "imu samples on disk");
    assert_eq!(cam_ts.len() as u64, n_cam, "camera samples on disk");
    let nanos = |t: f64| (t * 1e9).round() as u64;

    let imu_msgs: Vec<_> = got.iter().filter(|m| m.0 == 1).collect();
    let cam_msgs: Vec<_> = got.iter().filter(|m| m.0 == 2).collect();
    // Decimated: ~600 imu samples in 3 s, at most 10 a second; the camera (1000 a second
    // allowed) has every frame of the window shown.
    assert!(
        (5..=40).contains(&imu_msgs.len()),
        "imu messages: {}",
        imu_msgs.len()
    );
    assert!(
        cam_msgs.len() >= 3 && cam_msgs.len() as u64 <= first_big,
        "camera messages: {}",
        cam_msgs.len()
    );
    for (_, t, payload) in imu_msgs {
        let i = imu_ts
            .iter()
            .position(|&x| nanos(x) == *t)
            .expect("an imu message's time is a sample's ts");
        let v: Value = serde_json::from_slice(payload).unwrap();
        assert_eq!(v, json!({"value": imu_data[i]}), "imu sample {i}");
    }
    for (_, t, payload) in cam_msgs {
        let i = cam_ts
            .iter()
            .position(|&x| nanos(x) == *t)
            .expect("a camera message's time is a sample's ts");
        let jpg = &cam_data[i];
        assert!(
            payload.windows(jpg.len()).any(|w| w == jpg.as_slice()),
            "frame {i}'s JPEG bytes in its message"
        );
        assert!(payload.windows(3).any(|w| w == b"cam"), "frame_id");
    }
}

#[test]
fn a_bad_foxglove_config_is_refused_at_start() {
    refused(
        json!({"foxglove_listen": "0.0.0.0:8765"}),
        "not a loopback address",
    );
    refused(
        json!({"foxglove_listen": "localhost:8765"}),
        "not an IP address with a port",
    );
    refused(
        json!({"foxglove_listen": "127.0.0.1:0", "foxglove_max_hz": 0}),
        "foxglove_max_hz must be a positive number",
    );
    refused(
        json!({"foxglove_sensor_hz": {"imu": -1}}),
        "foxglove_sensor_hz.imu must be a positive number",
    );
    refused(
        json!({"foxglove_location": {"gps": {"lat": "pos[0]", "longitude": "pos[1]"}}}),
        "config: foxglove_location.gps.lat: unknown field (the fields: latitude, longitude, altitude)",
    );
    refused(
        json!({"foxglove_location": {"gps": {"latitude": "pos[0", "longitude": "pos[1]"}}}),
        "config: foxglove_location.gps.latitude: \"pos[0\" is not a channel element",
    );
}

/// Issue 26: a camera at exactly its cap reaches the feed whole (>= 95% of its frames; the
/// old `next = t + period` let through 6.3-6.8 of 10 Hz), and an imu over its cap arrives
/// at the cap (a 200 Hz imu capped at 50 Hz arrived at 43.6 Hz).
#[test]
fn at_the_cap_every_frame_arrives_and_over_it_the_cap_is_the_rate() {
    let Watched {
        // Bound to the end of the test: dropping it stops the daemon.
        d: _daemon,
        mut imu,
        mut cam,
        mut ws,
        ..
    } = watched(json!({"foxglove_max_hz": 10.0, "foxglove_sensor_hz": {"imu": 50.0}}));
    let secs = 4.0;
    let reader = std::thread::spawn(move || read_for(&mut ws, Duration::from_secs_f64(secs + 1.5)));
    // imu at 200 Hz, the camera at 10 Hz, on a schedule against one start (a late frame goes
    // at once, so the rates hold on a busy machine).
    let t0 = Instant::now();
    let (mut n_imu, mut n_cam) = (0u64, 0u64);
    while n_imu < (secs * 200.0) as u64 {
        let due = t0 + Duration::from_secs_f64(n_imu as f64 / 200.0);
        if let Some(w) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(w);
        }
        imu.send(&frame(
            1.8e9 + n_imu as f64 / 200.0,
            None,
            &[(&sample(1, n_imu, 6), false)],
        ));
        if n_imu % 20 == 0 {
            cam.send(&frame(
                1.8e9 + n_cam as f64 / 10.0,
                None,
                &[(&jpeg(n_cam, 4000), true)],
            ));
            n_cam += 1;
        }
        n_imu += 1;
    }
    let elapsed = t0.elapsed().as_secs_f64();
    assert_eq!(imu.sync(), n_imu);
    assert_eq!(cam.sync(), n_cam);
    let got = reader.join().unwrap();
    let count = |id| got.iter().filter(|(s, _, _)| *s == id).count() as f64;
    let (got_imu, got_cam) = (count(1), count(2));
    assert!(
        got_cam >= 0.95 * n_cam as f64,
        "camera at its cap: {got_cam} of {n_cam} frames reached the feed"
    );
    let want = 50.0 * elapsed;
    assert!(
        got_imu >= 0.9 * want && got_imu <= 1.05 * want + 2.0,
        "imu capped at 50 Hz: {got_imu} messages in {elapsed:.2} s (want about {want:.0})"
    );
}
