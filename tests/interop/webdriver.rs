//! Headless Chromium (Debian's `chromium` and `chromium-driver`, installed by `scripts/test`)
//! over WebDriver, for the dashboard's browser tests: open a page at a window size, run
//! JavaScript in it, click, type, wait for a condition (bounded, naming what it waited for),
//! take a PNG screenshot. chromedriver is killed when the [`WebDriver`] is dropped.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

use crate::support::daemon::http::agent;

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";
/// The WebDriver key of an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Desktop and phone (a Pixel 7's CSS width) window sizes.
pub const DESKTOP: (u32, u32) = (1200, 760);
pub const PHONE: (u32, u32) = (412, 915);

/// chromedriver, killed when dropped.
pub struct WebDriver {
    child: Child,
    base: String,
    session: String,
    _profile: tempfile::TempDir,
}

impl WebDriver {
    /// A browser whose page is `size` (width, height) CSS pixels; a width under 500 is
    /// emulated as a phone (touch, `device-width` of that width).
    pub fn start(size: (u32, u32)) -> WebDriver {
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
            "--hide-scrollbars",
            &format!("--window-size={},{}", size.0, size.1),
            &format!("--user-data-dir={}", wd._profile.path().display()),
        ];
        let mut options = json!({"binary": CHROMIUM, "args": args});
        if size.0 < 500 {
            options["mobileEmulation"] = json!({"deviceMetrics":
                {"width": size.0, "height": size.1, "pixelRatio": 1.0, "touch": true}});
        }
        let caps = json!({"capabilities": {"alwaysMatch": {"browserName": "chrome",
            "goog:chromeOptions": options}}});
        let r = wd.call("POST", "/session", Some(&caps));
        wd.session = r["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {r}"))
            .to_owned();
        wd
    }

    /// One WebDriver command; returns its `value` (panics on a WebDriver error).
    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
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

    /// Opens `url`.
    pub fn open(&self, url: &str) {
        self.call("POST", "/url", Some(&json!({ "url": url })));
    }

    /// Runs `script` (a function body) in the page and returns what it returns.
    pub fn js(&self, script: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(&json!({"script": script, "args": []})),
        )
    }

    fn element(&self, css: &str) -> String {
        let e = self.call(
            "POST",
            "/element",
            Some(&json!({"using": "css selector", "value": css})),
        );
        e[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {e}"))
            .to_owned()
    }

    pub fn click(&self, css: &str) {
        let id = self.element(css);
        self.call("POST", &format!("/element/{id}/click"), Some(&json!({})));
    }

    /// Replaces the text of the input `css` with `text`.
    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css);
        self.call("POST", &format!("/element/{id}/clear"), Some(&json!({})));
        self.call(
            "POST",
            &format!("/element/{id}/value"),
            Some(&json!({ "text": text })),
        );
    }

    /// Polls `script` until it returns true (at most `secs`, then fails naming `what`).
    pub fn wait_for(&self, what: &str, secs: u64, script: &str) {
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

    /// A PNG of the page as shown; fails unless it is a PNG at least `min` (w, h) pixels.
    pub fn screenshot(&self, min: (u32, u32)) -> Vec<u8> {
        let png = base64::engine::general_purpose::STANDARD
            .decode(self.call("GET", "/screenshot", None).as_str().unwrap())
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
        assert!(w >= min.0 && h >= min.1, "screenshot {w}x{h}");
        png
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
