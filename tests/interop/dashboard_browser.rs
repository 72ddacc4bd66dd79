//! The dashboard in a real browser: headless Chromium (Debian's `chromium` and
//! `chromium-driver`, installed by `scripts/test`) driven over WebDriver opens the page against a
//! running daemon with two drivers, sees both sensors with non-zero rates and their
//! sparklines, clicks Stop (and confirms), and the daemon stops recording. The rest of what
//! the page claims is checked in `dashboard_honest`, whose screenshots are in `docs/`.

use crate::support::daemon;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::webdriver::{WebDriver, DESKTOP};
use daemon::http::*;
use daemon::*;
use serde_json::json;

/// A driver thread sending `sensor` frames of `n` bytes at about `hz` until `stop`.
pub fn drive(
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

    let wd = WebDriver::start(DESKTOP);
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
        return document.querySelectorAll('tr[data-sensor] svg.spark path').length === 2
            && document.getElementById('state').textContent === 'recording';"#,
    );
    let imu_rate = wd
        .js("return parseFloat(document.querySelector('tr[data-sensor=imu] td.rate').textContent)");
    assert!(
        imu_rate.as_f64().unwrap() > 20.0,
        "imu rate on the page: {imu_rate}"
    );

    let png = wd.screenshot((800, 400));
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard-stop.png");
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
