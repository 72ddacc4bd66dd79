//! The daemon's background offload (config `offload`) through the real daemon against a real
//! S3 server (Garage on 127.0.0.1, tests/support/garage.rs): a rotation seals a trace, which
//! appears at the store byte for byte while the daemon records on; `status` (JSON and
//! `ctl status` text) shows the progress; a bucket that does not exist is its last error.

use std::collections::BTreeMap;
use std::path::Path;

use roverlog_store::Store;
use serde_json::json;

use crate::support::daemon::{frame, raw_hello, sample, TestDaemon};
use crate::support::garage::Garage;

fn digests(dir: &Path) -> BTreeMap<String, String> {
    roverlog_core::format::checksum::files(dir)
        .unwrap()
        .into_iter()
        .map(|rel| {
            let bytes = std::fs::read(dir.join(&rel)).unwrap();
            let md5 = roverlog_store::md5_hex(&bytes);
            (rel.to_string_lossy().into_owned(), md5)
        })
        .collect()
}

/// The daemon with `extra` config keys, the store's settings in its environment (and no
/// other `AWS_*`).
fn daemon(g: &Garage, extra: serde_json::Value) -> TestDaemon {
    let mut d = TestDaemon::create(extra);
    spawn(&mut d, g);
    d
}

fn spawn(d: &mut TestDaemon, g: &Garage) {
    let mut cmd = d.command();
    for (k, _) in std::env::vars() {
        if k.starts_with("AWS_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(g.envs());
    d.spawn_cmd(cmd);
}

#[test]
fn daemon_offloads_sealed_traces_in_the_background_and_shows_it() {
    let g = Garage::start();
    g.create_bucket("fleet");
    let mut d = daemon(
        &g,
        json!({"offload": {"dest": "s3://fleet/rover1", "when": "always", "interval_ms": 200}}),
    );
    let (mut imu, _) = d.connect(&raw_hello("imu", 64 << 10));
    for i in 0..100u64 {
        let s = sample(1, i, 64 << 10);
        imu.send(&frame(i as f64 * 0.01, None, &[(&s, false)]));
    }
    imu.sync();
    let first = d.trace_dir();
    assert_eq!(d.ctl(json!({"cmd": "rotate"}))["ok"], true, "{}", d.log());
    let live = d.trace_dir();
    assert_ne!(first, live);
    let st = d.wait_status("the sealed trace offloaded and verified", |s| {
        s["offload"]["verified_traces"] == 1 && s["offload"]["pending_traces"] == 0
    });
    let o = &st["offload"];
    assert_eq!(o["dest"], "s3://fleet/rover1", "{st}");
    assert_eq!(o["when"], "always", "{st}");
    assert_eq!(o["bytes_left"], 0, "{st}");
    assert_eq!(o["last_error"], serde_json::Value::Null, "{st}");
    // 100 samples of 64 KiB (and the trace's small files) went within the last seconds.
    let sent = o["sent_bytes"].as_u64().unwrap();
    assert!(sent > 100 * (64 << 10), "{st}");
    assert!(o["rate_bytes_per_s"].as_f64().unwrap() > 0.0, "{st}");
    // Ingest went on meanwhile: the live trace records, and is not sent.
    for i in 100..150u64 {
        let s = sample(1, i, 64 << 10);
        imu.send(&frame(i as f64 * 0.01, None, &[(&s, false)]));
    }
    imu.sync();
    assert_eq!(d.status()["recording"], true);

    // The objects are the files, byte for byte, with the MD5 CSV beside them.
    let store = Store::open_env("s3://fleet/rover1", &g.env()).unwrap();
    let name = |t: &Path| t.file_name().unwrap().to_str().unwrap().to_string();
    for (rel, md5) in digests(&first) {
        let key = format!("{}/{rel}", name(&first));
        let info = store.head(&key).unwrap().unwrap_or_else(|| panic!("{key}"));
        let got = roverlog_store::md5_hex(&store.get_range(&key, 0..info.size).unwrap());
        assert_eq!(got, md5, "{key}");
    }
    assert!(store
        .head(&format!("{}.md5.csv", name(&first)))
        .unwrap()
        .is_some());
    for rel in digests(&live).keys() {
        let key = format!("{}/{rel}", name(&live));
        assert!(
            store.head(&key).unwrap().is_none(),
            "the live trace went: {key}"
        );
    }

    // `ctl status` in text says it too.
    let r = crate::support::common::roverlog(&[
        "ctl",
        "--socket",
        d.control_path().to_str().unwrap(),
        "status",
    ]);
    assert_eq!(r.code, 0, "{}", r.text());
    assert!(
        r.text()
            .contains("offload (always): waiting to s3://fleet/rover1: 0 trace(s), 0.0 MB left")
            || r.text().contains(
                "offload (always): sending to s3://fleet/rover1: 0 trace(s), 0.0 MB left"
            ),
        "{}",
        r.text()
    );
    assert!(r.text().contains("1 trace(s) verified"), "{}", r.text());

    // Shutdown stops the job within its deadline; the last trace, sealed by it, goes at the
    // next start.
    drop(imu);
    assert!(d.stop().success(), "{}", d.log());
    spawn(&mut d, &g);
    d.wait_status("the last trace offloaded after a restart", |s| {
        s["offload"]["pending_traces"] == 0 && s["offload"]["verified_traces"] == 1
    });
    let key = format!("{}.md5.csv", name(&live));
    assert!(store.head(&key).unwrap().is_some(), "{key}");
    assert!(d.stop().success(), "{}", d.log());
}

#[test]
fn daemon_offload_waits_for_idle_and_a_missing_bucket_is_its_last_error() {
    let g = Garage::start();
    let mut d = daemon(
        &g,
        json!({"offload": {"dest": "s3://nosuchbucket/x", "interval_ms": 200},
               "http_listen": "127.0.0.1:0"}),
    );
    // `when: idle` (the default): nothing goes while recording.
    let st = d.wait_status("the offload paused while recording", |s| {
        s["offload"]["state"] == "paused"
    });
    assert_eq!(st["recording"], true, "{st}");
    assert_eq!(st["offload"]["when"], "idle", "{st}");
    assert_eq!(st["offload"]["last_error"], serde_json::Value::Null, "{st}");
    // What waits is counted meanwhile: nothing sealed yet.
    let st = d.wait_status("pending counted while paused", |s| {
        !s["offload"]["pending_traces"].is_null()
    });
    assert_eq!(st["offload"]["pending_traces"], 0, "{st}");
    assert_eq!(d.ctl(json!({"cmd": "stop"}))["ok"], true, "{}", d.log());
    let st = d.wait_status("the offload's error once idle", |s| {
        !s["offload"]["last_error"].is_null()
    });
    let e = st["offload"]["last_error"].as_str().unwrap();
    assert!(
        e.contains("bucket \"nosuchbucket\" does not exist at http://127.0.0.1"),
        "{st}"
    );
    // The dashboard's API carries it, and its page has the panel that shows it.
    let url = crate::support::daemon::http::dashboard_url(&d);
    let (code, api) = crate::support::daemon::http::get_json(&format!("{url}/api/status"), None);
    assert_eq!(code, 200, "{api}");
    assert!(
        api["offload"]["last_error"]
            .as_str()
            .unwrap()
            .contains("nosuchbucket"),
        "{api}"
    );
    let page = crate::support::daemon::http::agent()
        .get(format!("{url}/app.js"))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    assert!(
        page.contains("renderOffload(st.offload)"),
        "app.js without the offload panel"
    );
    // Recording again pauses it; the error stays shown until a run finishes.
    assert_eq!(d.ctl(json!({"cmd": "start"}))["ok"], true, "{}", d.log());
    let st = d.wait_status("the offload paused again", |s| {
        s["offload"]["state"] == "paused"
    });
    assert!(!st["offload"]["last_error"].is_null(), "{st}");
    assert!(d.stop().success(), "{}", d.log());
}

#[test]
fn daemon_shutdown_stops_a_capped_offload_and_the_next_start_finishes_it() {
    let g = Garage::start();
    g.create_bucket("fleet");
    // 200 KB/s for a trace of about 6.6 MB: half a minute of sending, cut by the shutdown.
    let mut d = daemon(
        &g,
        json!({"offload": {"dest": "s3://fleet", "when": "always", "rate": "200KB/s",
                           "interval_ms": 200}}),
    );
    let (mut imu, _) = d.connect(&raw_hello("imu", 64 << 10));
    for i in 0..100u64 {
        let s = sample(2, i, 64 << 10);
        imu.send(&frame(i as f64 * 0.01, None, &[(&s, false)]));
    }
    imu.sync();
    let first = d.trace_dir();
    assert_eq!(d.ctl(json!({"cmd": "rotate"}))["ok"], true, "{}", d.log());
    let st = d.wait_status("the capped offload under way", |s| {
        s["offload"]["state"] == "sending" && s["offload"]["sent_bytes"].as_u64() > Some(0)
    });
    assert!(
        st["offload"]["bytes_left"].as_u64() > Some(1_000_000),
        "{st}"
    );
    drop(imu);
    let t0 = std::time::Instant::now();
    assert!(d.stop().success(), "{}", d.log());
    // The job stopped in its rate wait, not at the end of the trace.
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        t0.elapsed()
    );
    let store = Store::open_env("s3://fleet", &g.env()).unwrap();
    let name = first.file_name().unwrap().to_str().unwrap().to_string();
    let csv = format!("{name}.md5.csv");
    assert!(
        store.head(&csv).unwrap().is_none(),
        "the trace was done before the stop"
    );

    // Without the cap and with `delete`, the next start finishes it from the journal, then
    // removes the local trace: every object is the file it was.
    let want = digests(&first);
    let cfg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&d.config).unwrap()).unwrap();
    let mut cfg = cfg;
    cfg["offload"]["rate"] = serde_json::Value::Null;
    cfg["offload"]["delete"] = true.into();
    std::fs::write(&d.config, serde_json::to_vec(&cfg).unwrap()).unwrap();
    spawn(&mut d, &g);
    d.wait_status("the cut trace finished after the restart", |s| {
        s["offload"]["verified_traces"].as_u64() >= Some(1) && s["offload"]["pending_traces"] == 0
    });
    let t0 = std::time::Instant::now();
    while first.exists() {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(30),
            "{} not deleted",
            first.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The trace being recorded is still there.
    assert!(d.trace_dir().exists());
    assert!(!want.is_empty());
    for (rel, md5) in want {
        let key = format!("{name}/{rel}");
        let info = store.head(&key).unwrap().unwrap_or_else(|| panic!("{key}"));
        let got = roverlog_store::md5_hex(&store.get_range(&key, 0..info.size).unwrap());
        assert_eq!(got, md5, "{key}");
    }
    assert!(store.head(&csv).unwrap().is_some(), "{csv}");
    assert!(d.stop().success(), "{}", d.log());
}

#[test]
fn daemon_offload_with_keep_free_deletes_only_verified_traces_oldest_first() {
    let g = Garage::start();
    g.create_bucket("fleet");
    // data_root on a 48 MiB filesystem (tmpfs: root), so `keep_free` is about it alone.
    let mnt = crate::support::common::mount::Mounted::tmpfs("48m");
    let data = mnt.path().join("data");
    let samples = |d: &TestDaemon, salt: u8| {
        let (mut imu, _) = d.connect(&raw_hello("imu", 64 << 10));
        for i in 0..80u64 {
            let s = sample(salt, i, 64 << 10);
            imu.send(&frame(i as f64 * 0.01, None, &[(&s, false)]));
        }
        imu.sync();
        imu
    };
    // Two traces of 5 MiB recorded and sealed (a rotation, then the daemon's stop), with no
    // offload yet: their files are known before anything may delete them.
    let mut d = daemon(&g, json!({"data_root": data}));
    let imu = samples(&d, 1);
    let first = d.trace_dir();
    assert_eq!(d.ctl(json!({"cmd": "rotate"}))["ok"], true, "{}", d.log());
    drop(imu);
    let imu = samples(&d, 2);
    let second = d.trace_dir();
    assert_ne!(first, second);
    drop(imu);
    assert!(d.stop().success(), "{}", d.log());
    let want = [digests(&first), digests(&second)];
    // Then the offload with `keep_free: 95%`, which the trace being recorded keeps out of
    // reach: every verified trace goes, oldest first, and never the one being recorded.
    let mut cfg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&d.config).unwrap()).unwrap();
    cfg["offload"] = json!({"dest": "s3://fleet", "when": "always", "keep_free": "95%",
                            "interval_ms": 200});
    std::fs::write(&d.config, serde_json::to_vec(&cfg).unwrap()).unwrap();
    spawn(&mut d, &g);
    let imu = samples(&d, 3);
    let live = d.trace_dir();
    let journal = roverlog_offload::journal::default_path(&data, "s3://fleet");
    let name = |t: &Path| t.file_name().unwrap().to_str().unwrap().to_string();
    // Each trace is verified in the journal whenever it is seen gone (even partly).
    let t0 = std::time::Instant::now();
    let mut gone = [None, None];
    while gone.iter().any(Option::is_none) {
        for (k, t) in [&first, &second].iter().enumerate() {
            if gone[k].is_none() && !t.join("config.yaml").exists() {
                let j: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(&journal).unwrap()).unwrap();
                assert_eq!(
                    j["traces"][name(t)]["verified"],
                    true,
                    "{} deleted unverified: {j}",
                    t.display()
                );
                gone[k] = Some(t0.elapsed());
            }
        }
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(60),
            "the verified traces were not deleted within 60 s: {}",
            d.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(gone[0] <= gone[1], "oldest first: {gone:?}");
    // Deleted only once every object was its file.
    let store = Store::open_env("s3://fleet", &g.env()).unwrap();
    for (t, files) in [&first, &second].iter().zip(&want) {
        assert!(!files.is_empty());
        for (rel, md5) in files {
            let key = format!("{}/{rel}", name(t));
            let info = store.head(&key).unwrap().unwrap_or_else(|| panic!("{key}"));
            let got = roverlog_store::md5_hex(&store.get_range(&key, 0..info.size).unwrap());
            assert_eq!(&got, md5, "{key}");
        }
    }
    // The trace being recorded: neither deleted nor sent, though free space is short.
    let (free, total) = roverlog_offload::free::free_space(&data).unwrap();
    assert!((free as f64) < 0.95 * total as f64, "{free} of {total}");
    assert!(live.join("config.yaml").exists() && live.join("imu").exists());
    assert!(store
        .head(&format!("{}/config.yaml", name(&live)))
        .unwrap()
        .is_none());
    assert_eq!(d.status()["recording"], true);
    drop(imu);
    assert!(d.stop().success(), "{}", d.log());
}
