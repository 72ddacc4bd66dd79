//! Replay and import through the real binaries: a recorded trace replayed into a fresh
//! daemon comes back byte-for-byte (timestamps included); the gulp fixture imports to a trace
//! whose every value matches gulpio2's expected output; merge order on a real trace.

use crate::support::common;
use crate::support::daemon;

use std::path::Path;

use daemon::TestDaemon;
use roverlog_core::format::{
    self, ChannelFormat, ChannelMeta, DType, SensorMeta, SensorWriter, WriterOptions,
};
use roverlog_core::replay::TimeMerge;
use serde_json::json;

fn sample(k: usize, i: usize, n: usize) -> Vec<u8> {
    (0..n)
        .map(|j| ((i * 29 + j * 3 + k * 71) % 256) as u8)
        .collect()
}

/// A trace with three sensors at interleaved, equal and out-of-order timestamps, covering raw,
/// lzmaf and jpg channels.
pub(crate) fn write_trace(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("config.yaml"), "{}\n").unwrap();
    let sensors: Vec<(&str, SensorMeta, Vec<f64>)> = vec![
        (
            "imu",
            SensorMeta {
                channels: vec![(
                    "acc".into(),
                    ChannelMeta::new(ChannelFormat::Raw, DType::F4, vec![3], "m/s^2"),
                )],
            },
            (0..50).map(|i| 1000.0 + i as f64 * 0.01).collect(),
        ),
        (
            "lidar",
            SensorMeta {
                channels: vec![
                    (
                        "rng".into(),
                        ChannelMeta::new(ChannelFormat::Lzmaf, DType::U2, vec![16, 32], ""),
                    ),
                    (
                        "nir".into(),
                        ChannelMeta::new(ChannelFormat::Raw, DType::U1, vec![16, 32], ""),
                    ),
                ],
            },
            // Equal to some imu times, and one clock step backwards.
            vec![1000.0, 1000.1, 1000.2, 1000.15, 1000.3, 1000.4],
        ),
        (
            "camera",
            SensorMeta {
                channels: vec![(
                    "img".into(),
                    ChannelMeta::new(
                        ChannelFormat::Blob("jpg".into()),
                        DType::U1,
                        vec![4, 4, 3],
                        "",
                    ),
                )],
            },
            (0..12).map(|i| 1000.005 + i as f64 * 1.0 / 30.0).collect(),
        ),
    ];
    for (k, (name, meta, ts)) in sensors.into_iter().enumerate() {
        let chans: Vec<ChannelMeta> = meta.data_channels().map(|(_, c)| c.clone()).collect();
        let mut w = SensorWriter::create(&dir.join(name), meta, &WriterOptions::default()).unwrap();
        for (i, t) in ts.iter().enumerate() {
            let bufs: Vec<Vec<u8>> = chans
                .iter()
                .enumerate()
                .map(|(c, ch)| match ch.format {
                    ChannelFormat::Blob(_) => sample(k * 3 + c, i, 100 + i * 13),
                    _ => sample(k * 3 + c, i, ch.sample_bytes()),
                })
                .collect();
            let refs: Vec<&[u8]> = bufs.iter().map(Vec::as_slice).collect();
            w.append(*t, &refs).unwrap();
        }
        w.finish().unwrap();
    }
}

/// `roverlog import SRC OUT ARGS...`, then `validate --deep` and the upstream-style reader
/// on the result.
fn import_and_check(src: &Path, out: &Path, args: &[&str]) {
    let mut all = vec!["import".as_ref(), src.as_os_str(), out.as_os_str()];
    all.extend(args.iter().map(std::ffi::OsStr::new));
    let r = common::roverlog(&all);
    assert!(r.ok(), "{}", r.text());
    let r = common::roverlog(&["validate".as_ref(), "--deep".as_ref(), out.as_os_str()]);
    assert!(r.ok(), "{}", r.text());
    common::assert_upstream_reads_same(out);
}

/// Runs `roverlog replay SRC --socket <the daemon's> ARGS...`.
fn replay_into(src: &Path, d: &TestDaemon, args: &[&str]) -> common::Run {
    let mut all = vec!["replay".as_ref(), src.as_os_str(), "--socket".as_ref()];
    let sock = d.ingest_path();
    all.push(sock.as_os_str());
    all.extend(args.iter().map(std::ffi::OsStr::new));
    common::roverlog(&all)
}

/// Every file of every sensor directory, relative path -> bytes.
fn files(sensor_dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![sensor_dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(sensor_dir).unwrap().display().to_string(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

/// With one decoding thread and with several (`--threads`, issue 35): the samples are read
/// in order, decoded ahead (the `lzmaf` frames on the threads) and sent in order.
#[test]
fn replayed_trace_comes_back_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("recorded");
    write_trace(&src);
    for threads in ["1", "3"] {
        let mut d = TestDaemon::start(json!({"receive_timestamps": false}));
        let r = replay_into(&src, &d, &["--max-speed", "--threads", threads]);
        assert!(r.ok(), "{}", r.text());
        assert!(r.out().contains("sent 68 samples"), "{}", r.text());
        assert!(r.stderr.contains("replay: ") && r.stderr.contains("cores busy"));
        let trace = d.trace_dir();
        assert!(d.stop().success(), "{}", d.log());
        common::assert_upstream_reads_same(&trace);
        for sensor in ["imu", "lidar", "camera"] {
            let want = files(&src.join(sensor));
            let got = files(&trace.join(sensor));
            assert_eq!(
                want.keys().collect::<Vec<_>>(),
                got.keys().collect::<Vec<_>>(),
                "{sensor}: same files"
            );
            for (name, bytes) in &want {
                if name == "meta.json" {
                    assert_eq!(
                        SensorMeta::read(&src.join(sensor)).unwrap(),
                        SensorMeta::read(&trace.join(sensor)).unwrap()
                    );
                    continue;
                }
                assert!(
                    bytes == &got[name],
                    "{sensor}/{name} differs after replay with {threads} threads"
                );
            }
        }
    }
}

#[test]
fn replay_at_real_time_is_paced_and_reports_lateness() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("recorded");
    write_trace(&src);
    let mut d = TestDaemon::start(json!({"receive_timestamps": false}));
    // 0.4 s of imu only, at double speed: about 0.2 s.
    let t0 = std::time::Instant::now();
    let r = replay_into(
        &src,
        &d,
        &[
            "--rate",
            "2",
            "--sensors",
            "imu",
            "--start",
            "0.05",
            "--duration",
            "0.4",
            "--json",
        ],
    );
    let took = t0.elapsed().as_secs_f64();
    assert!(r.ok(), "{}", r.text());
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    // imu samples at 1000.05 .. 1000.44 inclusive: 40 samples.
    assert_eq!(v["samples"], 40, "{v}");
    assert!(
        v["late_ms"]["p50"].as_f64().is_some() && v["late_ms"]["p99"].as_f64().is_some(),
        "{v}"
    );
    // The schedule spans 0.39 s / 2: the run cannot be shorter than that.
    assert!(
        took >= 0.39 / 2.0,
        "finished in {took} s, faster than its schedule"
    );
    let trace = d.trace_dir();
    assert!(d.stop().success());
    let s = format::Sensor::open(&trace.join("imu")).unwrap();
    let ts = s.timestamps().unwrap();
    assert_eq!(ts.len(), 40);
    assert!(
        (ts[0] - 1000.05).abs() < 1e-9 && (ts[39] - 1000.44).abs() < 1e-9,
        "{:?}",
        (ts[0], ts[39])
    );
}

#[test]
fn looped_replay_reports_no_sequence_gaps_between_loops() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("recorded");
    write_trace(&src);
    let mut d = TestDaemon::start(json!({"receive_timestamps": false}));
    let mut source = roverlog_core::replay::TraceSource::open(&src, &["imu".into()]).unwrap();
    let opts = roverlog_client::PlayOptions {
        rate: None,
        looped: true,
        ..Default::default()
    };
    // Stop after the second loop has been sent in full (progress reports each loop's end).
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut ends = 0;
    let r = roverlog_client::play(
        &mut source,
        &d.ingest_path(),
        &opts,
        &stop,
        |done, total| {
            if done == total {
                ends += 1;
                if ends == 2 {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                }
            }
        },
    )
    .unwrap();
    assert_eq!(r.samples, 100, "{r:?}");
    let st = d.status();
    assert_eq!(st["sensors"]["imu"]["samples"], 100, "{st}");
    assert_eq!(
        st["sensors"]["imu"]["gaps"], 0,
        "looping loses nothing: {st}"
    );
    assert!(d.stop().success(), "{}", d.log());
}

#[test]
fn replay_refuses_a_trace_with_a_non_finite_timestamp() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("recorded");
    write_trace(&src);
    // A NaN in imu's ts (sample 3), as a torn or foreign writer could leave it.
    let ts_path = src.join("imu").join("ts");
    let mut ts = std::fs::read(&ts_path).unwrap();
    ts[24..32].copy_from_slice(&f64::NAN.to_le_bytes());
    std::fs::write(&ts_path, ts).unwrap();
    let mut d = TestDaemon::start(json!({"receive_timestamps": false}));
    let r = replay_into(&src, &d, &["--max-speed"]);
    assert!(!r.ok(), "a sample was silently left out: {}", r.text());
    assert!(r.text().contains("sample 3"), "{}", r.text());
    assert!(d.stop().success(), "{}", d.log());
}

#[test]
fn replay_into_a_daemon_that_records_nothing_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("recorded");
    write_trace(&src);
    let mut d = TestDaemon::start(json!({"receive_timestamps": false}));
    assert_eq!(d.ctl(json!({"cmd": "stop"}))["ok"], true);
    let r = replay_into(&src, &d, &["--max-speed"]);
    assert!(!r.ok(), "the samples were discarded: {}", r.text());
    let sock = d.ingest_path().display().to_string();
    assert!(
        r.text()
            .contains(&format!("the roverlog daemon at {sock} is not recording")),
        "{}",
        r.text()
    );
    assert!(d.stop().success(), "{}", d.log());
}

#[test]
fn merge_over_a_real_trace_orders_by_time_and_keeps_each_sensors_order() {
    let tmp = tempfile::tempdir().unwrap();
    write_trace(tmp.path());
    let t = format::Trace::open(tmp.path()).unwrap();
    let m = TimeMerge::new(&t, &["lidar", "imu"]).unwrap();
    assert_eq!(m.sensors(), ["lidar", "imu"]);
    let got: Vec<_> = m.collect();
    assert_eq!(got.len(), 56);
    // Equal times: the first selected sensor (lidar) first.
    assert_eq!((got[0].sensor, got[0].index), (0, 0));
    assert_eq!((got[1].sensor, got[1].index), (1, 0));
    // lidar's samples keep their order despite the clock step.
    let lidar: Vec<u64> = got
        .iter()
        .filter(|s| s.sensor == 0)
        .map(|s| s.index)
        .collect();
    assert_eq!(lidar, [0, 1, 2, 3, 4, 5]);
    // Otherwise times never go backwards.
    let imu_ts: Vec<f64> = got.iter().filter(|s| s.sensor == 1).map(|s| s.ts).collect();
    assert!(imu_ts.windows(2).all(|w| w[0] <= w[1]));
    let mut m = TimeMerge::new(&t, &[]).unwrap();
    assert_eq!(m.sensors(), ["camera", "imu", "lidar"]);
    m.seek(1000.3);
    let first = m.next().unwrap();
    assert!(first.ts >= 1000.3 - 1e-12, "{first:?}");
}

#[test]
fn gulp_fixture_imports_with_every_expected_value() {
    let tmp = tempfile::tempdir().unwrap();
    let out_trace = tmp.path().join("imported");
    let fixture = common::root().join("tests/data/gulp_small");
    import_and_check(&fixture, &out_trace, &["--fps", "25"]);

    let expected: serde_json::Value = serde_json::from_slice(
        &std::fs::read(common::root().join("tests/data/gulp_small.expected.json")).unwrap(),
    )
    .unwrap();
    let s = format::Sensor::open(&out_trace.join("camera")).unwrap();
    let videos: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_trace.join("camera/videos.json")).unwrap())
            .unwrap();
    let mut img = s.channel("img").unwrap();
    let format::ChannelReader::Raw(video) = s.channel("video").unwrap() else {
        panic!("raw")
    };
    let format::ChannelReader::Raw(frame) = s.channel("frame").unwrap() else {
        panic!("raw")
    };
    let video = video.typed::<u32>(DType::U4).unwrap();
    let frame = frame.typed::<u32>(DType::U4).unwrap();
    let ts = s.timestamps().unwrap();
    let mut k = 0usize;
    let listed = videos["videos"].as_array().unwrap();
    assert_eq!(listed.len(), expected["videos"].as_object().unwrap().len());
    for (pos, entry) in listed.iter().enumerate() {
        let id = entry["id"].as_str().unwrap();
        let want = &expected["videos"][id];
        assert_eq!(entry["meta"], want["meta"], "{id}");
        assert_eq!(entry["frames"], want["frames"], "{id}");
        for (f, prefix) in want["jpeg_sha256_prefix"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            assert_eq!(
                &common::sha256_hex(&img.get(k as u64).unwrap())[..16],
                prefix.as_str().unwrap(),
                "{id}[{f}]"
            );
            assert_eq!(video[k] as usize, pos);
            assert_eq!(frame[k] as usize, f);
            assert!((ts[k] - k as f64 / 25.0).abs() < 1e-12);
            k += 1;
        }
    }
    assert_eq!(k as u64, s.len().unwrap());
    // The jpg channel's shape is the first frame's (video001: 32x48 RGB).
    assert_eq!(s.meta().get("img").unwrap().shape, [32, 48, 3]);
}

/// Rebuilds each array's rows from the imported channels (fields back to back, in order) and
/// checks them against zarr-python's sha256, plus the fixture's spot values.
#[test]
fn l5kit_fixture_imports_with_every_expected_value_and_replays_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    let out_trace = tmp.path().join("imported");
    let fixture = common::root().join("tests/data/l5kit_single_scene.zarr");
    import_and_check(&fixture, &out_trace, &[]);

    let expected: serde_json::Value = serde_json::from_slice(
        &std::fs::read(common::root().join("tests/data/l5kit_single_scene.expected.json")).unwrap(),
    )
    .unwrap();
    let t = format::Trace::open(&out_trace).unwrap();
    let column = |sensor: &str, ch: &str| -> Vec<u8> {
        let s = t.sensor(sensor).unwrap();
        let format::ChannelReader::Raw(r) = s.channel(ch).unwrap() else {
            panic!("raw")
        };
        r.bytes().to_vec()
    };
    for (sensor, array) in [
        ("ego", "frames"),
        ("agents", "agents"),
        ("traffic_light_faces", "traffic_light_faces"),
    ] {
        let a = &expected["arrays"][array];
        let n = a["shape"][0].as_u64().unwrap() as usize;
        let fields: Vec<&str> = a["dtype_fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f[0].as_str().unwrap())
            .collect();
        let cols: Vec<Vec<u8>> = fields.iter().map(|f| column(sensor, f)).collect();
        let mut rows = Vec::new();
        for i in 0..n {
            for c in &cols {
                let w = c.len() / n;
                rows.extend_from_slice(&c[i * w..(i + 1) * w]);
            }
        }
        assert_eq!(
            rows.len(),
            n * a["itemsize"].as_u64().unwrap() as usize,
            "{sensor}"
        );
        assert_eq!(
            common::sha256_hex(&rows),
            a["sha256_of_all_rows_raw_bytes"].as_str().unwrap(),
            "{sensor}"
        );
    }
    let spot = &expected["spot_values"];
    let f64s = |b: &[u8]| -> Vec<f64> {
        b.chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let i64s = |b: &[u8]| -> Vec<i64> {
        b.chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let ego_ns = i64s(&column("ego", "timestamp"));
    assert_eq!(ego_ns[0], spot["frames[0].timestamp"].as_i64().unwrap());
    assert_eq!(ego_ns[247], spot["frames[247].timestamp"].as_i64().unwrap());
    let ego_ts = t.sensor("ego").unwrap().timestamps().unwrap();
    for (ns, s) in ego_ns.iter().zip(&ego_ts) {
        assert!((*ns as f64 * 1e-9 - s).abs() < 1e-6, "ts {s} for {ns} ns");
    }
    assert_eq!(
        f64s(&column("ego", "ego_translation"))[30..33],
        spot["frames[10].ego_translation"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect::<Vec<_>>()[..]
    );
    let intervals = i64s(&column("ego", "agent_index_interval"));
    assert_eq!(intervals[20..22], [1004, 1102]);
    assert_eq!(
        f64s(&column("agents", "centroid"))[2 * 20001..2 * 20001 + 2],
        [-837.826416015625, 1256.425537109375]
    );
    assert_eq!(i64s(&column("agents", "track_id"))[20001], 548);
    // Every agent carries its frame and that frame's time.
    let frame_of = i64s(&column("agents", "frame"));
    let agent_ts = t.sensor("agents").unwrap().timestamps().unwrap();
    for f in [0usize, 10, 247] {
        let (a, b) = (intervals[2 * f] as usize, intervals[2 * f + 1] as usize);
        assert!(frame_of[a..b].iter().all(|&x| x as usize == f));
        assert!(agent_ts[a..b].iter().all(|&x| x == ego_ts[f]));
    }
    let face: Vec<u32> = column("traffic_light_faces", "face_id")[5 * 64..6 * 64]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .take_while(|&c| c != 0)
        .collect();
    assert_eq!(
        String::from_iter(face.into_iter().map(|c| char::from_u32(c).unwrap())),
        spot["traffic_light_faces[5].face_id"].as_str().unwrap()
    );

    // Replaying the dataset into a daemon writes the same files as importing it.
    let mut d = TestDaemon::start(json!({"receive_timestamps": false}));
    let r = replay_into(&fixture, &d, &["--max-speed"]);
    assert!(r.ok(), "{}", r.text());
    let trace = d.trace_dir();
    assert!(d.stop().success(), "{}", d.log());
    for sensor in ["ego", "agents", "traffic_light_faces"] {
        let (a, b) = (files(&out_trace.join(sensor)), files(&trace.join(sensor)));
        assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
        for (k, v) in &a {
            if k != "meta.json" {
                assert!(v == &b[k], "{sensor}/{k}: replay and import differ");
            }
        }
    }
}

#[test]
fn replay_refuses_a_start_or_duration_that_is_not_a_usable_number() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("recorded");
    write_trace(&src);
    let mut d = TestDaemon::start(json!({"receive_timestamps": false}));
    for (args, names) in [
        (&["--start", "nan"][..], "--start"),
        (&["--start=-1e300"][..], "--start"),
        (&["--duration", "nan"][..], "--duration"),
        (&["--duration=-1"][..], "--duration"),
        (&["--rate", "1e-300"][..], "--rate"),
    ] {
        let r = replay_into(&src, &d, args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.text());
        assert!(r.text().contains(names), "{args:?}: {}", r.text());
    }
    assert!(d.stop().success(), "{}", d.log());
}

#[test]
fn import_refuses_a_sensor_named_twice_before_writing_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("recorded");
    write_trace(&src);
    let out = tmp.path().join("out");
    let r = common::roverlog(&[
        "import".as_ref(),
        src.as_os_str(),
        out.as_os_str(),
        "--sensors".as_ref(),
        "imu,imu".as_ref(),
    ]);
    assert_eq!(r.code, 2, "{}", r.text());
    assert!(
        r.text().contains("--sensors") && r.text().contains("imu"),
        "{}",
        r.text()
    );
    assert!(!out.exists(), "a half-written trace was left behind");
}

/// `roverlog import ... | head -0` and `roverlog replay ... | head -0`: the work is done (the
/// trace is whole, the daemon holds every sample), then the summary meets a reader that is
/// gone, and the command ends quietly instead of panicking.
#[test]
fn import_and_replay_into_a_closed_pipe_finish_their_work_and_end_quietly() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("recorded");
    write_trace(&src);
    let out = tmp.path().join("imported");
    let run = std::process::Command::new(common::roverlog_bin())
        .arg("import")
        .arg(common::root().join("tests/data/gulp_small"))
        .arg(&out)
        .stdout(daemon::closed_pipe())
        .output()
        .unwrap();
    daemon::assert_quiet_on_closed_pipe(&run);
    let v = common::roverlog(&["validate".as_ref(), out.as_os_str()]);
    assert!(v.ok(), "{}", v.text());

    let d = TestDaemon::start(json!({"receive_timestamps": false}));
    let run = std::process::Command::new(common::roverlog_bin())
        .arg("replay")
        .arg(&src)
        .arg("--socket")
        .arg(d.ingest_path())
        .arg("--max-speed")
        .stdout(daemon::closed_pipe())
        .output()
        .unwrap();
    daemon::assert_quiet_on_closed_pipe(&run);
    let st = d.status();
    let sensors = st["sensors"].as_object().unwrap();
    assert!(!sensors.is_empty(), "{st}");
    for (name, s) in sensors {
        let want = format::Sensor::open(&src.join(name))
            .unwrap()
            .len()
            .unwrap();
        assert_eq!(s["durable"].as_u64(), Some(want), "{name}: {st}");
    }
}

#[test]
fn replay_rides_out_a_daemon_killed_and_restarted_midway() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("recorded");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("config.yaml"), "{}\n").unwrap();
    let meta = SensorMeta {
        channels: vec![(
            "x".into(),
            ChannelMeta::new(ChannelFormat::Raw, DType::U1, vec![16], ""),
        )],
    };
    // 400 samples 5 ms apart: two seconds at real time, so the kill lands midway.
    let n = 400;
    let mut w = SensorWriter::create(&src.join("imu"), meta, &WriterOptions::default()).unwrap();
    for i in 0..n {
        w.append(1000.0 + i as f64 * 0.005, &[&sample(0, i, 16)])
            .unwrap();
    }
    w.finish().unwrap();
    let mut d = TestDaemon::start(json!({"receive_timestamps": false}));
    let replay = std::process::Command::new(env!("CARGO_BIN_EXE_roverlog"))
        .arg("replay")
        .arg(&src)
        .arg("--socket")
        .arg(d.ingest_path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    d.wait_status("replay under way", |st| {
        st["sensors"]["imu"]["samples"].as_u64() >= Some(50)
    });
    let trace = d.trace_dir();
    d.kill9();
    d.spawn();
    let out = daemon::output_within(replay, 120, "the replay finishing after the restart");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}\n{}", d.log());
    assert!(
        text.contains(&format!("{n} sent, {n:>10} durable")),
        "{text}"
    );
    assert_eq!(d.trace_dir(), trace, "kill -9 resumes the same trace");
    assert!(d.stop().success(), "{}", d.log());
    let s = format::Sensor::open(&trace.join("imu")).unwrap();
    let ts = s.timestamps().unwrap();
    let want: Vec<f64> = (0..n).map(|i| 1000.0 + i as f64 * 0.005).collect();
    assert_eq!(ts, want, "every sample once, in order");
    let mut x = s.channel("x").unwrap();
    assert!((0..n).all(|i| x.get(i as u64).unwrap().into_owned() == sample(0, i, 16)));
}
