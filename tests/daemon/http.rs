//! The dashboard's HTTP API through the real daemon: reads mirror the control socket,
//! commands need the token and a JSON POST, and every bad request (no token, a wrong one,
//! another Host, an oversized body or head, too many connections, a bad config) gets a
//! clear refusal and changes nothing.

use crate::support::daemon;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use daemon::http::*;
use daemon::*;
use serde_json::{json, Value};

/// A raw HTTP/1.1 exchange (for what a client library would not send): the whole answer.
fn raw(base: &str, request: &[u8]) -> String {
    let addr = base.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn recording(d: &TestDaemon) -> bool {
    d.status()["recording"] == true
}

#[test]
fn reads_mirror_the_control_socket_and_commands_need_the_token() {
    let (d, base) = start_with_dashboard(json!({}));
    let (mut c, r) = d.connect(&raw_hello("imu", 16));
    assert_eq!(r["ok"], true, "{r}");
    for i in 0..10 {
        c.send(&frame(i as f64, None, &[(&sample(1, i, 16), false)]));
    }
    d.wait_status("10 samples written", |st| {
        st["sensors"]["imu"]["samples"] == 10
    });

    // GET /api/status is the control protocol's status reply.
    let (code, web) = get_json(&format!("{base}/api/status"), None);
    let ctl = d.status();
    assert_eq!(code, 200, "{web}");
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&web), keys(&ctl));
    assert_eq!(keys(&web["sensors"]["imu"]), keys(&ctl["sensors"]["imu"]));
    for k in ["ok", "recording", "trace", "trace_dir", "http"] {
        assert_eq!(web[k], ctl[k], "{k}");
    }
    assert_eq!(web["sensors"]["imu"]["samples"], 10);
    assert_eq!(web["http"]["url"], format!("{base}/"));

    // The page and its assets are embedded; nothing else is served.
    let page = raw(
        &base,
        format!(
            "GET / HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            &base[7..]
        )
        .as_bytes(),
    );
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(
        page.contains("text/html") && page.contains("/app.js"),
        "{page}"
    );
    for asset in ["/app.js", "/style.css"] {
        let r = raw(
            &base,
            format!(
                "GET {asset} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                &base[7..]
            )
            .as_bytes(),
        );
        assert!(r.starts_with("HTTP/1.1 200"), "{asset}: {r}");
    }
    for path in ["/../../etc/passwd", "/data/", "/api", "/roverlog.json"] {
        let r = raw(
            &base,
            format!(
                "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                &base[7..]
            )
            .as_bytes(),
        );
        assert!(
            r.starts_with("HTTP/1.1 404") && r.contains("no such page"),
            "{path}: {r}"
        );
    }
    let (code, h) = get_json(&format!("{base}/api/history"), None);
    assert_eq!(code, 200, "{h}");
    assert!(h["t"].is_array() && h["sensors"].is_object(), "{h}");

    // Refused commands change nothing.
    let stop = json!({"cmd": "stop"});
    let (code, r) = command(&base, None, &stop);
    assert_eq!((code, r["ok"].clone()), (401, json!(false)), "{r}");
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("Authorization: Bearer"),
        "{r}"
    );
    let (code, r) = command(&base, Some("not-the-token-at-all"), &stop);
    assert_eq!(code, 403, "{r}");
    assert_eq!(r["error"], "wrong token");
    assert!(recording(&d), "a refused stop stopped the trace");

    // A form post (what another site could make a browser send) is not a command.
    let body = "{\"cmd\": \"stop\"}";
    let r = raw(&base, format!(
        "POST /api/command HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        &base[7..], body.len()).as_bytes());
    assert!(r.starts_with("HTTP/1.1 415"), "{r}");
    // Another Host (a DNS-rebinding page) is refused, even with the token.
    let r = raw(&base, format!(
        "POST /api/command HTTP/1.1\r\nHost: rebind.example:{}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        base.rsplit(':').next().unwrap(), body.len()).as_bytes());
    assert!(
        r.starts_with("HTTP/1.1 421") && r.contains("not this loopback dashboard"),
        "{r}"
    );
    // A loopback name through a port forward (`ssh -L 9000:127.0.0.1:<port>`: the browser
    // sends its own port) and a lower-case auth scheme are this dashboard's (issue 26: both
    // were refused, 421 and 401).
    let mark = "{\"cmd\": \"mark\", \"text\": \"forwarded\"}";
    let r = raw(&base, format!(
        "POST /api/command HTTP/1.1\r\nHost: localhost:9000\r\nAuthorization: bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{mark}",
        mark.len()).as_bytes());
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    // Commands are POSTs.
    let r = raw(
        &base,
        format!(
            "GET /api/command HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            &base[7..]
        )
        .as_bytes(),
    );
    assert!(
        r.starts_with("HTTP/1.1 405") && r.contains("commands are POST"),
        "{r}"
    );
    // Oversized body and head.
    let big = format!(
        "{{\"cmd\": \"mark\", \"text\": \"{}\"}}",
        "x".repeat(20_000)
    );
    let (code, r) = command(
        &base,
        Some(TOKEN),
        &serde_json::from_str::<Value>(&big).unwrap(),
    );
    assert_eq!(code, 413, "{r}");
    let r = raw(
        &base,
        format!(
            "GET /api/status HTTP/1.1\r\nHost: {}\r\nX-Big: {}\r\n\r\n",
            &base[7..],
            "y".repeat(20_000)
        )
        .as_bytes(),
    );
    assert!(
        r.is_empty() || r.starts_with("HTTP/1.1 431"),
        "an oversized head was answered: {}",
        &r[..r.len().min(200)]
    );
    let r = raw(&base, format!(
        "POST /api/command HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 9\r\nConnection: close\r\n\r\n{{\"cmd\": ]",
        &base[7..]).as_bytes());
    assert!(
        r.starts_with("HTTP/1.1 400") && r.contains("not valid JSON"),
        "{r}"
    );
    assert!(recording(&d), "a refused request stopped the trace");
    assert_eq!(d.status()["sensors"]["imu"]["samples"], 10);

    // With the token: the control socket's replies, 200 when ok and 422 when not.
    let (code, r) = command(&base, Some(TOKEN), &json!({"cmd": "fly"}));
    assert_eq!(code, 422);
    assert_eq!(r, d.ctl(json!({"cmd": "fly"})));
    let (code, r) = command(
        &base,
        Some(TOKEN),
        &json!({"cmd": "mark", "text": "from the dashboard"}),
    );
    assert_eq!((code, r["ok"].clone()), (200, json!(true)), "{r}");
    let trace = d.trace_dir();
    let (code, r) = command(&base, Some(TOKEN), &stop);
    assert_eq!(code, 200, "{r}");
    assert_eq!(r["sensors"]["imu"]["samples"], 10, "{r}");
    assert!(!recording(&d));
    assert!(events(&trace)
        .iter()
        .any(|e| matches!(&e.event, Event::Mark { text } if text == "from the dashboard")));
    let (code, r) = command(&base, Some(TOKEN), &stop);
    assert_eq!(
        (code, r),
        (422, json!({"ok": false, "error": "not recording"}))
    );
    let (code, r) = command(
        &base,
        Some(TOKEN),
        &json!({"cmd": "start", "label": "dash"}),
    );
    assert_eq!(code, 200, "{r}");
    assert!(r["trace"].as_str().unwrap().ends_with("dash"), "{r}");
    assert!(recording(&d));
}

#[test]
fn connections_over_the_limit_are_answered_busy_and_slots_come_back() {
    let (d, base) = start_with_dashboard(json!({}));
    let addr = base.trim_start_matches("http://").to_owned();
    // 32 idle connections take every slot.
    let held: Vec<TcpStream> = (0..32)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    // Each accept is handled in order, so once an extra connection is turned away the held
    // ones all have their slots.
    let t0 = Instant::now();
    loop {
        let r = raw(&base, b"GET /api/status HTTP/1.1\r\nHost: x\r\n\r\n");
        if r.starts_with("HTTP/1.1 503") {
            // A whole reply: the body is as long as its content-length says, and JSON.
            let (head, body) = r.split_once("\r\n\r\n").expect("a head and a body");
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .unwrap_or_else(|| panic!("no content-length: {r}"));
            assert_eq!(length.parse::<usize>().unwrap(), body.len(), "{r}");
            let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {r}"));
            assert_eq!(v["ok"], false, "{r}");
            assert!(
                v["error"]
                    .as_str()
                    .unwrap()
                    .contains("too many dashboard connections"),
                "{r}"
            );
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no connection was turned away: {r}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(held);
    let t0 = Instant::now();
    loop {
        let (code, st) = get_json(&format!("{base}/api/status"), None);
        if code == 200 {
            assert_eq!(st["ok"], true);
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "slots did not come back: {code} {st}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(recording(&d));
}

#[test]
fn without_a_token_the_dashboard_is_read_only() {
    let d = TestDaemon::start(json!({"http_listen": "127.0.0.1:0"}));
    let base = dashboard_url(&d);
    let (code, st) = get_json(&format!("{base}/api/status"), None);
    assert_eq!(code, 200);
    assert_eq!(st["http"]["read_only"], true, "{st}");
    for t in [None, Some(TOKEN)] {
        let (code, r) = command(&base, t, &json!({"cmd": "stop"}));
        assert_eq!(code, 403, "{r}");
        assert!(r["error"].as_str().unwrap().contains("read-only"), "{r}");
    }
    assert!(recording(&d));
}

#[test]
fn off_loopback_every_api_read_needs_the_token() {
    // 0.0.0.0 with a token: the page is public, the API is not.
    let d = TestDaemon::start(json!({"http_listen": "0.0.0.0:0", "http_token": TOKEN}));
    let port = dashboard_url(&d).rsplit(':').next().unwrap().to_owned();
    let base = format!("http://127.0.0.1:{port}");
    for path in ["/api/status", "/api/history"] {
        let (code, r) = get_json(&format!("{base}{path}"), None);
        assert_eq!(code, 401, "{path}: {r}");
        let (code, r) = get_json(&format!("{base}{path}"), Some("wrong-token-wrong-token"));
        assert_eq!(code, 403, "{path}: {r}");
        let (code, r) = get_json(&format!("{base}{path}"), Some(TOKEN));
        assert_eq!(code, 200, "{path}: {r}");
    }
    // Any Host is fine off loopback (the token is the guard).
    let r = raw(
        &base,
        b"GET / HTTP/1.1\r\nHost: rover.local\r\nConnection: close\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
}

#[test]
fn a_bad_dashboard_config_is_refused_at_start() {
    refused(
        json!({"http_listen": "0.0.0.0:8080"}),
        "not a loopback address: set http_token",
    );
    refused(
        json!({"http_listen": "localhost:8080"}),
        "is not an IP address with a port",
    );
    refused(
        json!({"http_listen": "127.0.0.1:0", "http_token": "short"}),
        "at least 16 characters",
    );
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    refused(json!({"http_listen": addr}), "cannot listen");
}

/// The reads say what their token allows (`x-roverlog-role`), so the page shows operators'
/// buttons only to operators and can say a token is wrong; a read-only dashboard has none.
#[test]
fn reads_say_whether_the_token_makes_an_operator() {
    let role = |base: &str, token: Option<&str>| {
        let mut req = agent().get(&format!("{base}/api/status"));
        if let Some(t) = token {
            req = req.header("Authorization", format!("bearer {t}"));
        }
        let res = req.call().unwrap();
        assert_eq!(res.status().as_u16(), 200);
        res.headers()
            .get("x-roverlog-role")
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let (_d, base) = start_with_dashboard(json!({}));
    assert_eq!(role(&base, None).as_deref(), Some("viewer"));
    assert_eq!(role(&base, Some("wrong")).as_deref(), Some("viewer"));
    assert_eq!(role(&base, Some(TOKEN)).as_deref(), Some("operator"));
    let ro = TestDaemon::start(json!({"http_listen": "127.0.0.1:0"}));
    let base = dashboard_url(&ro);
    assert_eq!(role(&base, Some(TOKEN)).as_deref(), Some("viewer"));
}
