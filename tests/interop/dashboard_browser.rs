//! The dashboard in a real browser: headless Chromium (Debian's `chromium` and
//! `chromium-driver`, installed by `scripts/test`) driven over WebDriver opens the page against a
//! running daemon with two drivers, sees both sensors with non-zero rates and their
//! sparklines, clicks Stop (and confirms), and the daemon stops recording. The screenshot it
//! takes is the one in `docs/dashboard.png`.

use crate::support::daemon;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use daemon::http::*;
use daemon::*;
use serde_json::{json, Value};

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";
/// The WebDriver key of an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// chromedriver, killed when dropped.
struct WebDriver {
    child: Child,
    base: String,
    session: String,
    _profile: tempfile::TempDir,
}

impl WebDriver {
    fn start() -> WebDriver {
        for exe in [CHROMEDRIVER, CHROMIUM] {
            assert!(
                Path::new(exe).exists(),
                "{exe} is missing: the dashboard test needs Debian's chromium and chromium-driver \
                 (apt-get install chromium chromium-driver; scripts/test installs them)"
            );
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let profile = tempfile::tempdir().unwrap();
        let mut wd = WebDriver {
            child,
            base: format!("http://127.0.0.1:{port}"),
            session: String::new(),
            _profile: profile,
        };
        let t0 = Instant::now();
        loop {
            if let Ok(mut r) = agent().get(&format!("{}/status", wd.base)).call() {
                let v: Value = r.body_mut().read_json().unwrap_or_default();
                if v["value"]["ready"] == true {
                    break;
                }
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "chromedriver did not become ready within 20 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        // The flags a closed network and a root user need (see the machine notes).
        let args = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1200,640",
            &format!("--user-data-dir={}", wd._profile.path().display()),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {"browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args}}}});
        let r = wd.call("POST", "/session", Some(&caps));
        wd.session = r["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {r}"))
            .to_owned();
        wd
    }

    /// One WebDriver command; returns its `value` (panics on a WebDriver error).
    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let url = if path == "/session" {
            format!("{}{path}", self.base)
        } else {
            format!("{}/session/{}{path}", self.base, self.session)
        };
        let a = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build();
        let a: ureq::Agent = a.into();
        let mut res = match (method, body) {
            ("GET", _) => a.get(&url).call(),
            ("DELETE", _) => a.delete(&url).call(),
            (_, b) => a.post(&url).send_json(b.cloned().unwrap_or(json!({}))),
        }
        .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let code = res.status().as_u16();
        let v: Value = res.body_mut().read_json().unwrap();
        assert_eq!(code, 200, "{method} {path}: {v}");
        v["value"].clone()
    }

    /// Runs `script` (a function body) in the page and returns what it returns.
    fn js(&self, script: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(&json!({"script": script, "args": []})),
        )
    }

    fn click(&self, css: &str) {
        let e = self.call(
            "POST",
            "/element",
            Some(&json!({"using": "css selector", "value": css})),
        );
        let id = e[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {e}"))
            .to_owned();
        self.call("POST", &format!("/element/{id}/click"), Some(&json!({})));
    }

    /// Polls `script` until it returns true (at most `secs`, then fails naming `what`).
    fn wait_for(&self, what: &str, secs: u64, script: &str) {
        let t0 = Instant::now();
        loop {
            if self.js(script) == true {
                return;
            }
            let dom = self.js("return document.body.innerText");
            assert!(
                t0.elapsed() < Duration::from_secs(secs),
                "{what} within {secs} s; the page shows:\n{dom}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for WebDriver {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = agent()
                .delete(&format!("{}/session/{}", self.base, self.session))
                .call();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A driver thread sending `sensor` frames of `n` bytes at about `hz` until `stop`.
fn drive(
    d: &TestDaemon,
    sensor: &'static str,
    n: usize,
    hz: f64,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    let (mut c, r) = d.connect(&raw_hello(sensor, n));
    assert_eq!(r["ok"], true, "{r}");
    std::thread::spawn(move || {
        let mut i = 0;
        while !stop.load(Ordering::Relaxed) {
            c.send(&frame(i as f64 / hz, None, &[(&sample(3, i, n), false)]));
            i += 1;
            std::thread::sleep(Duration::from_secs_f64(1.0 / hz));
        }
        i
    })
}

#[test]
fn the_page_shows_both_sensors_live_and_its_stop_button_stops_the_trace() {
    let (d, base) = start_with_dashboard(json!({}));
    let stop = Arc::new(AtomicBool::new(false));
    let imu = drive(&d, "imu", 48, 100.0, stop.clone());
    let cam = drive(&d, "camera", 64 << 10, 10.0, stop.clone());
    d.wait_status("both sensors have a rate", |st| {
        st["sensors"]["imu"]["rate_hz"].as_f64() > Some(0.0)
            && st["sensors"]["camera"]["rate_hz"].as_f64() > Some(0.0)
    });

    let wd = WebDriver::start();
    // The token travels in the fragment, which the browser never sends to the server.
    wd.call(
        "POST",
        "/url",
        Some(&json!({"url": format!("{base}/#token={TOKEN}")})),
    );
    wd.wait_for(
        "both sensors shown with a non-zero rate",
        30,
        r#"
        const rows = [...document.querySelectorAll('tr[data-sensor]')];
        const names = rows.map(r => r.dataset.sensor).sort().join(',');
        return names === 'camera,imu'
            && rows.every(r => parseFloat(r.querySelector('td.rate').textContent) > 0);"#,
    );
    wd.wait_for(
        "a sparkline for each sensor",
        30,
        r#"
        return document.querySelectorAll('tr[data-sensor] svg.spark polyline').length === 2
            && document.getElementById('state').textContent === 'recording';"#,
    );
    let imu_rate = wd
        .js("return parseFloat(document.querySelector('tr[data-sensor=imu] td.rate').textContent)");
    assert!(
        imu_rate.as_f64().unwrap() > 20.0,
        "imu rate on the page: {imu_rate}"
    );

    let png = base64::engine::general_purpose::STANDARD
        .decode(wd.call("GET", "/screenshot", None).as_str().unwrap())
        .unwrap();
    assert_eq!(
        &png[..8],
        b"\x89PNG\r\n\x1a\n",
        "the screenshot is not a PNG"
    );
    let (w, h) = (
        u32::from_be_bytes(png[16..20].try_into().unwrap()),
        u32::from_be_bytes(png[20..24].try_into().unwrap()),
    );
    assert!(w >= 800 && h >= 400, "screenshot {w}x{h}");
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard.png");
    std::fs::write(&shot, &png).unwrap();

    // Stop asks first; the daemon stops only after the confirmation.
    wd.click("#stop");
    let text = wd.call("GET", "/alert/text", None);
    assert_eq!(text, "Stop recording?");
    wd.call("POST", "/alert/accept", Some(&json!({})));
    d.wait_status("recording stopped by the page's Stop", |st| {
        st["recording"] == false
    });
    wd.wait_for(
        "the page showing it stopped",
        20,
        r#"
        return document.getElementById('state').textContent === 'not recording'
            && document.getElementById('result').textContent.startsWith('stop: ok');"#,
    );

    stop.store(true, Ordering::Relaxed);
    let sent = (imu.join().unwrap(), cam.join().unwrap());
    assert!(sent.0 > 0 && sent.1 > 0);
    drop(wd);
    eprintln!("screenshot: {}", shot.display());
}
