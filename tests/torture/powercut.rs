//! Power-cut loop (issue 12): the real daemon writes its traces on the power-loss filesystem
//! (tests/support/powercut.rs) under the crash loop's mixed load (`raw`, `lzmaf`, `jpg`, and a
//! camera stored as `mjpg`; drivers asking for durability at random points); at random
//! moments the power is cut: the daemon dies with kill -9 and everything not fsynced is lost
//! (all of it, or a random part: some pages, a torn last one, some directories' operations).
//! The filesystem is mounted again, the daemon restarted; it recovers and resumes.
//!
//! After each cut:
//! - `recover` on a copy of the raw image (before the daemon touches it) repairs it into a
//!   trace `validate` accepts;
//! - after the daemon's own recovery every sensor validates and holds at least every sample
//!   acknowledged as durable and at most what was sent, sample `i` being seq `i` with its
//!   exact bytes (nothing duplicated, reordered or torn);
//! - `meta.json` and `config.yaml` parse, every line of `events.jsonl` is whole JSON;
//! - the loss (sent but not on disk, all above the acknowledged watermark) is printed.
//!
//! CI: 4 cuts. Long run: `ROVERLOG_TORTURE=long cargo test --release --test torture --
//! powercut:: --nocapture` (100 cuts; `ROVERLOG_TORTURE_CUTS=n`, `ROVERLOG_TORTURE_SEED=s` to replay).

use crate::support::common;
use crate::support::daemon;
use crate::support::powercut;
use crate::support::torture;

use std::path::Path;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::time::Duration;

use daemon::{events, TestDaemon};
use powercut::{Cut, PowerFs};
use serde_json::json;
use torture::*;

fn load() -> Vec<Spec> {
    vec![
        Spec::new("imu", 1, vec![Chan::Raw(64)], 1000.0, (50, 400)),
        Spec::new("cam", 2, vec![Chan::Jpg(2_000, 40_000)], 30.0, (5, 30)),
        // Stored as `mjpg` by the config below: one AVI file.
        Spec::new("video", 6, vec![Chan::Jpg(2_000, 40_000)], 30.0, (5, 30)),
        Spec::new("lidar", 3, vec![Chan::Lzmaf(32 << 10)], 20.0, (3, 20)),
        Spec::new(
            "rig",
            4,
            vec![Chan::Raw(1024), Chan::Lzmaf(4096), Chan::Jpg(16, 8_000)],
            100.0,
            (10, 100),
        ),
        Spec::new("quiet", 5, vec![Chan::Raw(200)], 200.0, (0, 0)),
    ]
}

/// The files that must be whole or absent: they parse.
fn check_whole_files(trace: &Path, k: u64) {
    let cfg = trace.join("config.yaml");
    if cfg.exists() {
        let text = std::fs::read_to_string(&cfg).unwrap();
        serde_json::from_str::<serde_json::Value>(&text)
            .unwrap_or_else(|e| panic!("cut {k}: config.yaml is torn ({e}): {text:?}"));
    }
    let ev = trace.join("_roverlog/events.jsonl");
    if ev.exists() {
        let text = std::fs::read_to_string(&ev).unwrap();
        for (i, line) in text.lines().enumerate() {
            serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|e| {
                panic!("cut {k}: events.jsonl line {i} is torn ({e}): {line:?}")
            });
        }
    }
    for e in std::fs::read_dir(trace).unwrap() {
        let meta = e.unwrap().path().join("meta.json");
        if meta.exists() {
            let bytes = std::fs::read(&meta).unwrap();
            roverlog_core::format::SensorMeta::parse(&bytes, &meta)
                .unwrap_or_else(|err| panic!("cut {k}: {} is torn: {err}", meta.display()));
        }
    }
}

/// `recover` then `validate` on a copy of the raw image of `trace`.
fn recover_raw_image(backing_trace: &Path, scratch: &Path, k: u64) {
    let copy = scratch.join(format!("image{k}"));
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(backing_trace)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success());
    let r = common::roverlog(&["recover".as_ref(), copy.as_os_str()]);
    assert!(
        r.code == 0 || r.code == 1,
        "cut {k}: recover on the raw image: {}",
        r.text()
    );
    let v = common::roverlog(&["validate".as_ref(), copy.as_os_str()]);
    assert_eq!(
        v.code,
        0,
        "cut {k}: the raw image after recover:\n{}\n{}",
        r.text(),
        v.text()
    );
    // Every `lzmaf` frame kept decodes (the test's camera frames are not JPEGs: only the
    // sensors with lzmaf channels get the deep check).
    for sensor in ["lidar", "rig"] {
        let dir = copy.join(sensor);
        if dir.exists() {
            let v = common::roverlog(&["validate".as_ref(), "--deep".as_ref(), dir.as_os_str()]);
            assert_eq!(
                v.code,
                0,
                "cut {k}: {sensor} in the raw image after recover: {}",
                v.text()
            );
        }
    }
    std::fs::remove_dir_all(&copy).unwrap();
}

#[test]
fn power_cut_loop_keeps_every_acknowledged_sample() {
    let seed = seed("torture_powercut");
    let cuts = knob("ROVERLOG_TORTURE_CUTS", 4, 100);
    let mut rng = Rng::new(seed);
    let scratch = tempfile::tempdir().unwrap();
    let backing = scratch.path().join("disk");
    let mut pfs = PowerFs::mount(&backing, &scratch.path().join("mnt"));
    let data = pfs.mountpoint.join("data");
    let mut d = TestDaemon::create(json!({
        "data_root": data, "fsync_interval_ms": 200, "flush_interval_ms": 50,
        "compress_threads": 2, "formats": {"video": {"c0": "mjpg"}},
    }));
    // Each power-up is a new boot (what tells recovery a power cut happened).
    let boot = |d: &TestDaemon, k: u64| {
        let mut c = d.command();
        c.env(
            roverlog_core::format::durable::BOOT_ID_ENV,
            format!("boot-{k}"),
        );
        c
    };
    let cmd = boot(&d, 0);
    d.spawn_cmd(cmd);
    let trace = d.trace_dir();
    let name = trace.file_name().unwrap().to_owned();
    let ctl = Arc::new(Control::default());
    let mut drivers: Vec<DriverThread> = load()
        .into_iter()
        .map(|s| spawn_driver(&d.ingest_path(), s, seed, ctl.clone(), None, true))
        .collect();

    let mut loss = Vec::new();
    let mut verified = vec![0u64; drivers.len()];
    for k in 0..cuts {
        let ms = match rng.range(0, 9) {
            0 => rng.range(0, 50),
            _ => rng.range(150, 1500),
        };
        std::thread::sleep(Duration::from_millis(ms));
        let cut = if rng.range(0, 2) == 0 {
            Cut::Clean
        } else {
            Cut::Partial(rng.next_u64())
        };
        let g = ctl.gen.load(SeqCst);
        ctl.killing.store(g, SeqCst);
        d.kill9();
        wait_parked(&drivers, g);
        pfs.cut(cut);
        recover_raw_image(&backing.join("data").join(&name), scratch.path(), k);

        let cmd = boot(&d, k + 1);
        d.spawn_cmd(cmd);
        assert_eq!(
            d.trace_dir(),
            trace,
            "cut {k}: the restart must resume the trace"
        );
        check_whole_files(&trace, k);
        let mut lost = 0;
        let mut line = Vec::new();
        for (i, dr) in drivers.iter().enumerate() {
            let acked = dr.state.acked.load(SeqCst);
            let sent = dr.state.sent.load(SeqCst);
            let from = verified[i].min(acked);
            let on_disk = verify_sensor(&trace, &dr.spec, Some(0), from, 1).unwrap_or_else(|e| {
                panic!("cut {k} ({cut:?}): {e}\n{:#?}\n{}", events(&trace), d.log())
            });
            assert!(
                on_disk.len >= acked,
                "cut {k} ({cut:?}): {} has {} samples on disk, {acked} were acknowledged durable",
                dr.spec.name,
                on_disk.len
            );
            assert!(
                on_disk.len <= sent,
                "cut {k}: {} has more than sent",
                dr.spec.name
            );
            verified[i] = on_disk.len;
            lost += sent - on_disk.len;
            line.push(format!(
                "{} {}/{} (acked {acked})",
                dr.spec.name, on_disk.len, sent
            ));
        }
        eprintln!(
            "cut {k} ({cut:?}) after {ms} ms: lost {lost}: {}",
            line.join(", ")
        );
        loss.push(lost);
        ctl.gen.fetch_add(1, SeqCst);
    }

    std::thread::sleep(Duration::from_millis(300));
    stop_drivers(&ctl, &mut drivers);
    let v = violations(&drivers);
    assert!(v.is_empty(), "{v:#?}");
    assert!(d.stop().success(), "{}", d.log());
    let mut total = 0;
    for dr in &drivers {
        let sent = dr.state.sent.load(SeqCst);
        let on_disk = verify_sensor(&trace, &dr.spec, Some(0), 0, 1).unwrap();
        assert_eq!(
            on_disk.len, sent,
            "{}: clean stop after the cuts",
            dr.spec.name
        );
        total += sent;
    }
    let video = roverlog_core::format::avi::MjpgReader::open(&trace.join("video/c0")).unwrap();
    assert_eq!(
        video.layout().problems,
        Vec::<roverlog_core::format::avi::AviProblem>::new(),
        "the video is finished at stop"
    );
    let st = pfs.stats();
    let (lo, med, hi) = min_med_max(&loss);
    eprintln!(
        "torture_powercut: seed {seed}, {cuts} cuts, {total} samples kept over {} sensors; \
         lost per cut (all above the acknowledged watermark) min {lo} median {med} max {hi}; \
         filesystem since the last mount: {st:?}",
        drivers.len()
    );
}
