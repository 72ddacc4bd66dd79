//! The dashboard side of the daemon tests: a daemon with `http_listen` on a free loopback
//! port, its URL from `status`, and an HTTP client that returns every status with its body.

use std::time::Duration;

use serde_json::{json, Value};

use super::TestDaemon;

/// The token the dashboard tests configure.
pub const TOKEN: &str = "test-token-0123456789";

/// A daemon with the dashboard on 127.0.0.1 (a port the kernel picks) and `extra` keys.
pub fn start_with_dashboard(extra: Value) -> (TestDaemon, String) {
    let mut cfg = json!({"http_listen": "127.0.0.1:0", "http_token": TOKEN});
    for (k, v) in extra.as_object().unwrap() {
        cfg[k] = v.clone();
    }
    let d = TestDaemon::start(cfg);
    let url = dashboard_url(&d);
    (d, url)
}

/// The dashboard's base URL (without the trailing slash) as `status` reports it. The
/// dashboard's listener is bound on its own task after the control socket answers, so a
/// loaded machine may answer `status` first: waits up to 10 s for the URL.
pub fn dashboard_url(d: &TestDaemon) -> String {
    let t0 = std::time::Instant::now();
    loop {
        let st = d.status();
        if let Some(url) = st["http"]["url"].as_str() {
            return url.trim_end_matches('/').to_owned();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "status has no http.url 10 s after start: {st}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An HTTP client that does not turn 4xx/5xx into errors and never waits over 10 s.
pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into()
}

/// GET `url`: status and JSON body.
pub fn get_json(url: &str, token: Option<&str>) -> (u16, Value) {
    let mut req = agent().get(url);
    if let Some(t) = token {
        req = req.header("Authorization", format!("Bearer {t}"));
    }
    let mut res = req.call().unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let status = res.status().as_u16();
    (status, res.body_mut().read_json().unwrap())
}

/// POST a command to `/api/command`: status and JSON reply.
pub fn command(base: &str, token: Option<&str>, cmd: &Value) -> (u16, Value) {
    let url = format!("{base}/api/command");
    let mut req = agent()
        .post(&url)
        .header("Content-Type", "application/json");
    if let Some(t) = token {
        req = req.header("Authorization", format!("Bearer {t}"));
    }
    let mut res = req
        .send(serde_json::to_vec(cmd).unwrap())
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    let status = res.status().as_u16();
    (status, res.body_mut().read_json().unwrap())
}
