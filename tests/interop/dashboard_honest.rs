//! What the dashboard claims is true (issue 26, "an honest dashboard"), checked on the DOM of
//! headless Chromium against the real daemon, at desktop width and at phone width (412 px):
//!
//! - a configured `required` sensor that never connected has a greyed row (and its alarm);
//! - snapshot mode shows armed and the seconds the ring holds; operators get a Trigger button,
//!   viewers none; a triggered trace shows a countdown to its stop that runs down;
//! - a sensor that went away for a while has a gap in its sparkline (a second `M`), not a
//!   diagonal;
//! - time left is the free space above `min_free_bytes` over the trace's pace on disk;
//! - at 412 px nothing scrolls sideways and the state, alarms and buttons are on screen;
//! - the token field is there for a viewer and takes a correction after a wrong token, also
//!   off loopback where the page can read nothing without it;
//! - after the daemon is killed everything greys, the badge stops saying "recording", the
//!   buttons go, and a banner says the daemon is unreachable.
//!
//! The screenshots (`target/tmp/dashboard.png`, `dashboard-phone.png`) are the ones in `docs/`.

use crate::support::daemon;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::dashboard_browser::drive;
use crate::webdriver::{WebDriver, DESKTOP, PHONE};
use daemon::http::*;
use daemon::*;
use serde_json::{json, Value};

/// The free space the disk guard keeps (the page's time left is measured down to it).
const MIN_FREE: u64 = 64 << 20;

/// Whether the element `css` is shown (rendered, not under a `hidden` ancestor).
fn shown(css: &str) -> String {
    format!("(() => {{ const e = document.querySelector('{css}'); return !!e && e.getClientRects().length > 0; }})()")
}

/// The countdown's seconds on the page.
fn countdown(wd: &WebDriver) -> f64 {
    wd.js("return parseFloat(document.getElementById('countdown-s').textContent)")
        .as_f64()
        .expect("a countdown in seconds")
}

#[test]
fn the_dashboard_tells_the_truth_at_desktop_and_phone_width() {
    let (mut d, base) = start_with_dashboard(json!({
        "autostart": false, "snapshot": true, "pre_trigger_seconds": 5,
        "min_free_bytes": MIN_FREE, "missing_after_ms": 1000,
        "sensors": {"camera": {"required": true, "expected_hz": 10},
                    "imu": {"expected_hz": 100}, "gps": {"expected_hz": 10}}}));
    let stop = Arc::new(AtomicBool::new(false));
    let imu = drive(&d, "imu", 48, 100.0, stop.clone());
    let gps_stop = Arc::new(AtomicBool::new(false));
    let gps = drive(&d, "gps", 32, 10.0, gps_stop.clone());

    let wd = WebDriver::start(DESKTOP);
    wd.open(&format!("{base}/#token={TOKEN}"));
    // Snapshot armed, holding seconds; the absent camera greyed; Trigger for the operator.
    wd.wait_for(
        "snapshot armed, holding at least a second",
        30,
        r#"return document.getElementById('snap-state').textContent === 'armed'
            && parseFloat(document.getElementById('snap-held').textContent) >= 1;"#,
    );
    wd.wait_for(
        "a greyed row for the absent required camera",
        10,
        r#"const r = document.querySelector('tr[data-sensor=camera]');
           return !!r && r.classList.contains('absent')
             && r.querySelector('td.conn').textContent === 'absent, required'
             && getComputedStyle(r.querySelector('td.name')).color
                  !== getComputedStyle(document.querySelector('tr[data-sensor=imu] td.name')).color;"#,
    );
    assert_eq!(wd.js(&format!("return {}", shown("#trigger"))), true);
    assert_eq!(
        wd.js("return document.getElementById('role-note').textContent"),
        "operator"
    );

    // Trigger for 60 s: recording, and a countdown that runs down from at most 60 s.
    wd.type_into("#after", "60");
    wd.click("#trigger");
    d.wait_status("the trigger's trace recording", |st| {
        st["recording"] == true
    });
    wd.wait_for(
        "the countdown to the triggered trace's stop",
        10,
        &format!(
            "return document.getElementById('state').textContent === 'recording' && {}",
            shown("#countdown")
        ),
    );
    let first = countdown(&wd);
    std::thread::sleep(Duration::from_millis(1500));
    let second = countdown(&wd);
    assert!(
        first <= 60.0 && second < first - 1.0 && second > 50.0,
        "countdown {first} s then {second} s 1.5 s later"
    );
    wd.wait_for(
        "MISSING camera in the alarms and on its greyed row",
        15,
        r#"return document.getElementById('alarms').textContent.includes('MISSING camera')
            && document.querySelector('tr[data-sensor=camera].absent td.alarms').textContent === 'missing';"#,
    );

    // gps goes away for 4 s while recording (its row stays, not connected), then comes back.
    gps_stop.store(true, Ordering::Relaxed);
    assert!(gps.join().unwrap() > 0);
    d.wait_status("gps not connected", |st| {
        st["sensors"]["gps"]["connected"] == false
    });
    std::thread::sleep(Duration::from_secs(4));
    let gps = drive(&d, "gps", 32, 10.0, stop.clone());
    wd.wait_for(
        "a gap in gps's sparkline: two lines, no diagonal across the missing seconds",
        30,
        r#"const p = document.querySelector('tr[data-sensor=gps] svg.spark path');
           return !!p && (p.getAttribute('d').match(/M/g) || []).length >= 2;"#,
    );
    let imu_moves = wd.js(
        "return (document.querySelector('tr[data-sensor=imu] svg.spark path').getAttribute('d').match(/M/g) || []).length",
    );
    assert_eq!(imu_moves, 1, "imu sent throughout: one line");

    // Time left: the free space above min_free_bytes over the trace's pace on disk.
    wd.wait_for(
        "time left shown",
        30,
        r#"return /^\d/.test(document.getElementById('time-left').textContent);"#,
    );
    let (code, h) = get_json(&format!("{base}/api/history"), None);
    assert_eq!(code, 200, "{h}");
    let st = d.status();
    let (rate, left) = (
        h["disk_bytes_per_s"].as_f64().unwrap(),
        h["seconds_left"].as_f64().unwrap(),
    );
    let free = st["disk"]["free_bytes"].as_u64().unwrap();
    let want = (free - MIN_FREE) as f64 / rate;
    assert!(rate > 0.0, "{h}");
    assert!(
        (left - want).abs() <= 0.02 * want,
        "seconds_left {left}, (free {free} - min_free {MIN_FREE}) / {rate} B/s = {want}"
    );
    assert_eq!(h["min_free_bytes"], MIN_FREE);

    let png = wd.screenshot((DESKTOP.0, 400));
    std::fs::write(
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard.png"),
        &png,
    )
    .unwrap();

    // A phone, first as a viewer: the token field, no Trigger; a wrong token, then the right one.
    let phone = WebDriver::start(PHONE);
    phone.open(&format!("{base}/"));
    phone.wait_for(
        "a viewer: token field, no operators' buttons",
        20,
        &format!(
            "return document.getElementById('state').textContent === 'recording' && {} && !{} && !{}",
            shown("#token"),
            shown("#trigger"),
            shown("#stop")
        ),
    );
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::write(
        tmp.join("dashboard-phone-viewer.png"),
        phone.screenshot((PHONE.0, 400)),
    )
    .unwrap();
    phone.type_into("#token", "not-the-token");
    phone.click("#token-use");
    phone.wait_for(
        "a wrong token said so, the field still there",
        10,
        &format!(
            "return document.getElementById('role-note').textContent.startsWith('wrong token') && {} && !{}",
            shown("#token"),
            shown("#trigger")
        ),
    );
    phone.type_into("#token", TOKEN);
    phone.click("#token-use");
    phone.wait_for(
        "the corrected token makes an operator",
        10,
        &format!(
            "return document.getElementById('role-note').textContent === 'operator' && {}",
            shown("#trigger")
        ),
    );
    phone.wait_for(
        "the phone page's sparklines",
        10,
        "return document.querySelectorAll('tr[data-sensor] svg.spark path').length === 2",
    );
    let fit = phone.js(
        r#"const w = window.innerWidth;
           const out = [...document.querySelectorAll('#state, #alarms li, #controls button, #token, #sensors td.alarms, #countdown')]
             .filter(e => e.getClientRects().length > 0)
             .filter(e => { const r = e.getBoundingClientRect(); return r.left < 0 || r.right > w; })
             .map(e => e.id || e.textContent);
           return {w, scroll: document.documentElement.scrollWidth, out};"#,
    );
    assert_eq!(fit["w"], PHONE.0, "{fit}");
    assert!(
        fit["scroll"].as_u64().unwrap() <= PHONE.0 as u64,
        "the page scrolls sideways at 412 px: {fit}"
    );
    assert_eq!(fit["out"], json!([]), "off screen at 412 px: {fit}");
    let png = phone.screenshot((PHONE.0, 400));
    std::fs::write(tmp.join("dashboard-phone.png"), &png).unwrap();

    // The daemon dies: both pages grey out and say so; nothing claims to be recording.
    d.kill9();
    for (name, page) in [("desktop", &wd), ("phone", &phone)] {
        page.wait_for(
            &format!("the {name} page greyed with the unreachable banner"),
            15,
            &format!(
                r#"return document.body.classList.contains('offline')
                    && document.getElementById('unreachable').textContent.includes('unreachable')
                    && {} && document.getElementById('state').textContent === 'unreachable'
                    && !{} && !{} && !{}
                    && getComputedStyle(document.querySelector('main')).opacity < 0.5;"#,
                shown("#unreachable"),
                shown("#stop"),
                shown("#trigger"),
                shown("#countdown")
            ),
        );
    }
    let png = wd.screenshot((DESKTOP.0, 400));
    std::fs::write(tmp.join("dashboard-unreachable.png"), &png).unwrap();

    stop.store(true, Ordering::Relaxed);
    let _ = (imu.join(), gps.join());
    eprintln!("screenshots in {}", tmp.display());
}

/// Off loopback the page can read nothing without the token: it says so and shows the field
/// (it used to show neither), and the typed token brings the page to life.
#[test]
fn off_loopback_the_page_asks_for_the_token() {
    let d = TestDaemon::start(json!({"http_listen": "0.0.0.0:0", "http_token": TOKEN}));
    let port = dashboard_url(&d).rsplit(':').next().unwrap().to_owned();
    let base = format!("http://127.0.0.1:{port}");
    let wd = WebDriver::start(PHONE);
    wd.open(&format!("{base}/"));
    wd.wait_for(
        "the refusal explained and the token field",
        20,
        &format!(
            "return document.getElementById('unreachable').textContent.includes('missing token') && {} && document.getElementById('state').textContent === 'no access'",
            shown("#token")
        ),
    );
    wd.type_into("#token", TOKEN);
    wd.click("#token-use");
    let t0 = Instant::now();
    wd.wait_for(
        "the page live after the token",
        20,
        &format!(
            "return !{} && document.getElementById('state').textContent === 'recording' && {}",
            shown("#unreachable"),
            shown("#stop")
        ),
    );
    let v: Value = wd.js("return document.getElementById('role-note').textContent");
    assert_eq!(v, "operator", "after {:?}", t0.elapsed());
}
