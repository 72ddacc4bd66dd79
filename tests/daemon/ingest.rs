//! The ingest protocol against the real daemon: several sensors, durability requests,
//! reconnect/resume, and every bad input answered with a clear error while the other sensors
//! keep writing and nothing accepted is lost.

use crate::support::daemon;

use daemon::*;
use serde_json::json;

#[test]
fn several_sensors_write_exactly_what_was_sent() {
    let d = TestDaemon::start(json!({}));
    let imu_hello = json!({"roverlog": 1, "sensor": "imu", "seq": true, "channels": [
        {"name": "acc", "format": "raw", "type": "f4", "shape": [3], "desc": "m/s^2"},
        {"name": "img", "format": "jpg", "type": "u1", "shape": [4, 4]}]});
    let (mut imu, r) = d.connect(&imu_hello);
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["samples"], 0);
    let (mut lidar, r) = d.connect(&raw_hello("lidar", 100));
    assert_eq!(r["ok"], true, "{r}");

    let n = 500u64;
    let mut imu_bytes = Vec::new();
    let mut lidar_bytes = Vec::new();
    for i in 0..n {
        let acc = sample(1, i, 12);
        let img = sample(2, i, (i % 7) as usize + 1);
        imu_bytes.extend(frame(
            1000.0 + i as f64,
            Some(i),
            &[(&acc, false), (&img, true)],
        ));
        lidar_bytes.extend(frame(
            2000.0 + i as f64,
            None,
            &[(&sample(3, i, 100), false)],
        ));
    }
    // Frames split at arbitrary points: the daemon must reassemble them.
    for chunk in imu_bytes.chunks(777) {
        imu.send(chunk);
    }
    lidar.send(&lidar_bytes);
    assert_eq!(imu.sync(), n);
    assert_eq!(lidar.sync(), n);

    let st = d.status();
    assert_eq!(st["sensors"]["imu"]["samples"], n);
    assert_eq!(st["sensors"]["imu"]["durable"], n);
    assert_eq!(st["sensors"]["lidar"]["bytes"], n * 108);
    assert_eq!(st["sensors"]["imu"]["gaps"], 0);

    let trace = d.trace_dir();
    let (ts, acc) = read_sensor(&trace, "imu", "acc");
    let (_, img) = read_sensor(&trace, "imu", "img");
    for i in 0..n as usize {
        assert_eq!(ts[i], 1000.0 + i as f64);
        assert_eq!(acc[i], sample(1, i as u64, 12));
        assert_eq!(img[i], sample(2, i as u64, i % 7 + 1));
    }
    let (ts, x) = read_sensor(&trace, "lidar", "x");
    assert_eq!(ts.len(), n as usize);
    assert_eq!(x[499], sample(3, 499, 100));
    // The raw sensor's files hold exactly the status's bytes.
    let on_disk: u64 = ["ts", "x"]
        .iter()
        .map(|f| {
            std::fs::metadata(trace.join("lidar").join(f))
                .unwrap()
                .len()
        })
        .sum();
    assert_eq!(on_disk, n * 108);
    assert!(trace.join("config.yaml").is_file());
    let ev = events(&trace);
    assert!(matches!(ev[0].event, Event::Start { .. }), "{ev:?}");
}

/// A driver that closes its connection and reconnects at once is accepted, also while the
/// daemon is still reading what the old connection sent: only a connection still open is
/// refused (protocol.md 7). It was refused with `sensor "cam" already has a live
/// connection` (`roverlog bench`'s dashboard scenario met it between rounds). Every frame
/// sent before a close is kept.
#[test]
fn a_reconnect_right_after_a_close_waits_for_the_old_connection_instead_of_being_refused() {
    let d = TestDaemon::start(json!({}));
    const N: u64 = 400;
    let mut total = 0u64;
    for round in 0..6 {
        let (mut a, r) = d.connect(&raw_hello("cam", 8192));
        assert_eq!(r["ok"], true, "round {round}: {r}");
        assert_eq!(r["samples"], total, "round {round}: {r}");
        // 3 MiB: more than the socket holds, so the daemon is still reading at the close.
        let mut batch = Vec::new();
        for i in total..total + N {
            batch.extend(frame(i as f64, None, &[(&sample(0, i, 8192), false)]));
        }
        a.send(&batch);
        total += N;
        drop(a);
    }
    let (mut a, r) = d.connect(&raw_hello("cam", 8192));
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(a.sync(), total);
}

#[test]
fn reconnect_continues_the_sensor_and_refuses_other_channels() {
    let d = TestDaemon::start(json!({}));
    let (mut a, r) = d.connect(&raw_hello("cam", 8));
    assert_eq!(r["ok"], true);
    for i in 0..10 {
        a.send(&frame(i as f64, None, &[(&sample(0, i, 8), false)]));
    }
    assert_eq!(a.sync(), 10);

    // A second live connection for the same sensor is refused.
    let (_b, r) = d.connect(&raw_hello("cam", 8));
    assert_eq!(r["ok"], false);
    assert!(
        r["error"].as_str().unwrap().contains("live connection"),
        "{r}"
    );
    drop(a);
    std::thread::sleep(std::time::Duration::from_millis(100));

    // Different channels are refused, with an error naming the difference (protocol.md 7).
    let (_c, r) = d.connect(&raw_hello("cam", 9));
    assert_eq!(r["ok"], false);
    let msg = r["error"].as_str().unwrap();
    assert!(msg.contains("different channels"), "{r}");
    assert!(
        msg.contains("\"x\"") && msg.contains("[9]") && msg.contains("[8]"),
        "{r}"
    );

    // Same channels continue.
    let (mut e, r) = d.connect(&raw_hello("cam", 8));
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["samples"], 10);
    for i in 10..15 {
        e.send(&frame(i as f64, None, &[(&sample(0, i, 8), false)]));
    }
    assert_eq!(e.sync(), 15);
    let (ts, x) = read_sensor(&d.trace_dir(), "cam", "x");
    assert_eq!(ts, (0..15).map(|i| i as f64).collect::<Vec<_>>());
    assert_eq!(x[14], sample(0, 14, 8));
}

/// Sends `good` valid frames then `bad` bytes; expects an error containing `want`, then checks
/// that exactly the good frames were written.
fn bad_frame_case(d: &TestDaemon, sensor: &str, bad: &[u8], want: &str) {
    let (mut c, r) = d.connect(&raw_hello(sensor, 4));
    assert_eq!(r["ok"], true, "{r}");
    for i in 0..3 {
        c.send(&frame(i as f64, None, &[(&[i as u8; 4], false)]));
    }
    c.send(bad);
    let reply = c.read_reply();
    assert_eq!(reply["ok"], false, "{sensor}: {reply}");
    let msg = reply["error"].as_str().unwrap();
    assert!(msg.contains(want), "{sensor}: {msg}");
    assert!(
        msg.contains("frame 3"),
        "{sensor}: error names the frame: {msg}"
    );
    assert_eq!(c.read_to_end(), "", "connection closed after the error");
    // The three good frames are kept, nothing partial.
    let (mut c2, r) = d.connect(&raw_hello(sensor, 4));
    assert_eq!(r["samples"], 3, "{sensor}: {r}");
    assert_eq!(c2.sync(), 3);
}

#[test]
fn bad_frames_are_refused_and_earlier_frames_kept() {
    let d = TestDaemon::start(json!({"max_frame_bytes": 1024}));
    // Another sensor writes all along: it must not notice.
    let (mut steady, _) = d.connect(&raw_hello("steady", 4));

    let mut short = frame(5.0, None, &[(&[1; 3], false)]);
    bad_frame_case(&d, "short", &short, "shorter than");
    short = frame(5.0, None, &[(&[1; 5], false)]);
    bad_frame_case(&d, "long", &short, "after the last channel");
    bad_frame_case(&d, "huge", &u32::MAX.to_le_bytes(), "over max_frame_bytes");
    bad_frame_case(
        &d,
        "nan",
        &frame(f64::NAN, None, &[(&[1; 4], false)]),
        "not finite",
    );
    bad_frame_case(
        &d,
        "inf",
        &frame(f64::INFINITY, None, &[(&[1; 4], false)]),
        "not finite",
    );

    for i in 0..100 {
        steady.send(&frame(i as f64, None, &[(&[7; 4], false)]));
    }
    assert_eq!(steady.sync(), 100);
    let st = d.status();
    assert_eq!(st["sensors"]["steady"]["samples"], 100);
    assert!(st["sensors"]["steady"]["failed"].is_null());
}

#[test]
fn bad_hellos_are_refused_with_clear_errors() {
    let d = TestDaemon::start(json!({"max_hello_bytes": 4096, "max_channels": 4}));
    let ch = |name: &str| json!({"name": name, "format": "raw", "type": "u1", "shape": [1]});
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"not json\n".to_vec(), "not valid JSON"),
        (b"[1, 2]\n".to_vec(), "JSON object"),
        (format!("{}\n", json!({"roverlog": 1, "sensor": "../etc", "channels": [ch("a")]})).into_bytes(), "path separator"),
        (format!("{}\n", json!({"roverlog": 1, "sensor": "..", "channels": [ch("a")]})).into_bytes(), "invalid sensor name"),
        (format!("{}\n", json!({"roverlog": 1, "sensor": "_virt", "channels": [ch("a")]})).into_bytes(), "virtual"),
        (format!("{}\n", json!({"roverlog": 1, "sensor": "s", "channels": [ch("a/b")]})).into_bytes(), "invalid channel name"),
        (format!("{}\n", json!({"roverlog": 1, "sensor": "s", "channels": [ch("ts")]})).into_bytes(), "implicit"),
        (format!("{}\n", json!({"roverlog": 1, "sensor": "s", "channels": [ch("a"), ch("a")]})).into_bytes(), "declared twice"),
        (format!("{}\n", json!({"roverlog": 1, "sensor": "s", "channels": [ch("a"), ch("b"), ch("c"), ch("d"), ch("e")]})).into_bytes(), "max_channels"),
        (format!("{}\n", json!({"roverlog": 7, "sensor": "s", "channels": [ch("a")]})).into_bytes(), "protocol version"),
        (vec![b'{'; 5000], "max_hello_bytes"),
    ];
    for (hello, want) in cases {
        let (mut c, r) = Driver::connect_raw(&d.ingest_path(), &hello);
        assert_eq!(r["ok"], false, "{r}");
        let msg = r["error"].as_str().unwrap();
        assert!(
            msg.contains(want),
            "{}: {msg}",
            String::from_utf8_lossy(&hello[..hello.len().min(80)])
        );
        assert_eq!(c.read_to_end(), "");
    }
    // Nothing was created for refused sensors; no directory escaped data_root.
    let trace = d.trace_dir();
    let names: Vec<_> = std::fs::read_dir(&trace)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        names.iter().all(|n| n == "config.yaml" || n == "_roverlog"),
        "{names:?}"
    );
    assert!(!d.dir.path().join("etc").exists());
}

#[test]
fn lzmaf_override_and_sequence_gaps_and_clock_steps() {
    let d = TestDaemon::start(json!({"formats": {"rng": {"img": "lzmaf"}}}));
    let hello = json!({"roverlog": 1, "sensor": "rng", "seq": true,
        "channels": [{"name": "img", "format": "raw", "type": "u2", "shape": [16, 16]}]});
    let (mut c, r) = d.connect(&hello);
    assert_eq!(r["ok"], true, "{r}");
    let seqs = [0u64, 1, 2, 5, 6, 10];
    let tss = [1.0, 2.0, 3.0, 2.5, 4.0, 5.0];
    for (k, (&s, &t)) in seqs.iter().zip(&tss).enumerate() {
        c.send(&frame(t, Some(s), &[(&sample(9, k as u64, 512), false)]));
    }
    assert_eq!(c.sync(), 6);
    let st = d.status();
    assert_eq!(st["sensors"]["rng"]["gaps"], 2 + 3);
    assert_eq!(st["sensors"]["rng"]["clock_steps"], 1);
    let trace = d.trace_dir();
    let meta = std::fs::read_to_string(trace.join("rng/meta.json")).unwrap();
    assert!(meta.contains("lzmaf"), "{meta}");
    let (ts, img) = read_sensor(&trace, "rng", "img");
    assert_eq!(ts, tss);
    assert_eq!(img[3], sample(9, 3, 512));
    let ev = events(&trace);
    let gaps: Vec<u64> = ev
        .iter()
        .filter_map(|e| match e.event {
            Event::Gap { missing, .. } => Some(missing),
            _ => None,
        })
        .collect();
    assert_eq!(gaps, [2, 3]);
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(e.event, Event::ClockStep { .. }))
            .count(),
        1
    );
}

#[test]
fn an_empty_jpg_sample_is_refused_before_anything_is_written() {
    let d = TestDaemon::start(json!({}));
    let hello = json!({"roverlog": 1, "sensor": "cam", "channels": [
        {"name": "img", "format": "jpg", "type": "u1", "shape": []}]});
    let (mut c, r) = d.connect(&hello);
    assert_eq!(r["ok"], true, "{r}");
    c.send(&frame(1.0, None, &[(b"\xff\xd8one\xff\xd9", true)]));
    c.send(&frame(2.0, None, &[(b"\xff\xd8two\xff\xd9", true)]));
    c.send(&frame(3.0, None, &[(b"", true)]));
    let reply = c.read_reply();
    let msg = reply["error"].as_str().unwrap_or_default().to_string();
    assert!(
        msg.contains("empty sample") && msg.contains("frame 2"),
        "{reply}"
    );
    let (mut c2, r) = d.connect(&hello);
    assert_eq!(r["samples"], 2, "{r}");
    assert_eq!(c2.sync(), 2);
    let check = roverlog_core::format::check_sensor(
        &d.trace_dir().join("cam"),
        roverlog_core::format::Depth::Deep,
    )
    .unwrap();
    assert!(check.is_ok(), "{:?}", check.all_problems());
    assert!(d.status()["sensors"]["cam"]["failed"].is_null());
}

#[test]
fn large_frames_split_across_writes_and_a_truncated_one() {
    // Frames of 256 KiB and more are received into pooled buffers (daemon::ingest): written
    // in odd pieces, two frames in one write, a sync in between, and a frame cut short.
    let d = TestDaemon::start(json!({}));
    let n = 400_000;
    let (mut c, _) = d.connect(&raw_hello("big", n));
    let frames: Vec<Vec<u8>> = (0..6)
        .map(|i| frame(i as f64, None, &[(&sample(5, i, n), false)]))
        .collect();
    let mut stream = Vec::new();
    stream.extend_from_slice(&frames[0]);
    stream.extend_from_slice(&frames[1][..3]);
    c.send(&stream);
    c.send(&frames[1][3..300_001]);
    let mut rest = frames[1][300_001..].to_vec();
    rest.extend_from_slice(&frames[2]);
    rest.extend_from_slice(&frames[3]);
    c.send(&rest);
    assert_eq!(c.sync(), 4);
    c.send(&frames[4]);
    c.send(&frames[5][..123_456]);
    drop(c);
    // The daemon notices the end of the stream by itself.
    d.wait_status("the connection ends", |st| {
        st["sensors"]["big"]["connected"] == false
    });

    let (mut again, r) = d.connect(&raw_hello("big", n));
    assert_eq!(r["samples"], 5, "{r}");
    assert_eq!(again.sync(), 5);
    let trace = d.trace_dir();
    let (ts, x) = read_sensor(&trace, "big", "x");
    assert_eq!(ts, [0.0, 1.0, 2.0, 3.0, 4.0]);
    for (i, s) in x.iter().enumerate() {
        assert!(*s == sample(5, i as u64, n), "sample {i} differs");
    }
    let ev = events(&trace);
    assert!(
        ev.iter().any(|e| matches!(&e.event,
            Event::PartialFrame { sensor, frame: 5, bytes: 123_456 } if sensor == "big")),
        "{ev:?}"
    );
}

#[test]
fn a_channel_named_like_the_meta_temporary_file_does_not_corrupt_meta_json() {
    // `meta.json` is written as `meta.json.tmp` then renamed: a raw channel of that name had
    // its file truncated, filled with the meta and renamed over `meta.json`, and its samples
    // were then appended to `meta.json`, making the whole sensor unreadable.
    let d = TestDaemon::start(json!({}));
    let hello = json!({"roverlog": 1, "sensor": "odd", "channels": [
        {"name": "meta.json.tmp", "format": "raw", "type": "u1", "shape": [4]}]});
    let (mut c, r) = d.connect(&hello);
    assert_eq!(r["ok"], true, "{r}");
    for i in 0..3 {
        c.send(&frame(i as f64, None, &[(&sample(4, i, 4), false)]));
    }
    assert_eq!(c.sync(), 3);
    let (ts, x) = read_sensor(&d.trace_dir(), "odd", "meta.json.tmp");
    assert_eq!(ts, [0.0, 1.0, 2.0]);
    assert_eq!(x[2], sample(4, 2, 4));
}

#[test]
fn drops_before_a_bad_large_frame_are_in_the_event_log() {
    // Frames of 256 KiB and more take their own path (daemon::ingest): a bad one there ended
    // the connection without writing the pending `drop` event, so `status` counted drops
    // that events.jsonl never named.
    let d = TestDaemon::start(json!({
        "queue_policy": "drop", "queue_bytes": 1 << 20, "max_frame_bytes": 512 << 10,
        "debug_write_delay_ms": 500,
    }));
    let n = 300_000;
    let (mut c, r) = d.connect(&raw_hello("big", n));
    assert_eq!(r["ok"], true, "{r}");
    // Three frames fill the 1 MiB queue while the writer sleeps on the first: 3 and 4 drop.
    for i in 0..5 {
        c.send(&frame(i as f64, None, &[(&sample(6, i, n), false)]));
    }
    c.send(&frame(f64::NAN, None, &[(&sample(6, 5, n), false)]));
    let reply = c.read_reply();
    let msg = reply["error"].as_str().unwrap_or_default().to_string();
    assert!(
        msg.contains("frame 5") && msg.contains("not finite"),
        "{reply}"
    );
    let st = d.status();
    assert_eq!(st["sensors"]["big"]["drops"], 2, "{st}");
    let ev = events(&d.trace_dir());
    let drops: Vec<_> = ev
        .iter()
        .filter_map(|e| match e.event {
            Event::Drop {
                count,
                first_frame,
                from_ts,
                to_ts,
                ..
            } => Some((count, first_frame, from_ts, to_ts)),
            _ => None,
        })
        .collect();
    assert_eq!(drops, [(2, 3, 3.0, 4.0)], "{ev:?}");
}

#[test]
fn a_channel_named_like_a_jpg_partial_file_keeps_both_channels() {
    // A jpg sample is written to `<sensor>/.<channel>.partial` and renamed into place: a raw
    // channel of that name had its file truncated by each jpg sample and renamed away.
    let d = TestDaemon::start(json!({}));
    let hello = json!({"roverlog": 1, "sensor": "cam", "channels": [
        {"name": "img", "format": "jpg", "type": "u1", "shape": []},
        {"name": ".img.partial", "format": "raw", "type": "u1", "shape": [4]}]});
    let (mut c, r) = d.connect(&hello);
    assert_eq!(r["ok"], true, "{r}");
    for i in 0..3 {
        let jpg = sample(7, i, 10 + i as usize);
        c.send(&frame(
            i as f64,
            None,
            &[(&jpg, true), (&sample(8, i, 4), false)],
        ));
    }
    assert_eq!(c.sync(), 3);
    let trace = d.trace_dir();
    let (ts, img) = read_sensor(&trace, "cam", "img");
    let (_, x) = read_sensor(&trace, "cam", ".img.partial");
    assert_eq!(ts, [0.0, 1.0, 2.0]);
    for i in 0..3 {
        assert_eq!(img[i], sample(7, i as u64, 10 + i));
        assert_eq!(x[i], sample(8, i as u64, 4));
    }
}

#[test]
fn max_hello_bytes_counts_the_newline() {
    // protocol.md 2.5: the limit is on the hello line including its `\n`.
    let d = TestDaemon::start(json!({"max_hello_bytes": 4096}));
    let line = |sensor: &str, total: usize| {
        let mut h = raw_hello(sensor, 4);
        h["channels"][0]["desc"] = json!("");
        let base = serde_json::to_vec(&h).unwrap().len() + 1;
        h["channels"][0]["desc"] = json!("d".repeat(total - base));
        let mut l = serde_json::to_vec(&h).unwrap();
        l.push(b'\n');
        assert_eq!(l.len(), total);
        l
    };
    let (_a, r) = Driver::connect_raw(&d.ingest_path(), &line("fits", 4096));
    assert_eq!(r["ok"], true, "{r}");
    let (_b, r) = Driver::connect_raw(&d.ingest_path(), &line("over", 4097));
    assert_eq!(r["ok"], false, "{r}");
    assert!(
        r["error"].as_str().unwrap().contains("max_hello_bytes"),
        "{r}"
    );
}

#[test]
fn seq_is_not_part_of_the_sensor_identity() {
    // protocol.md 4 and 7: sequence numbers are not stored and not part of the sensor's
    // identity; a reconnect with the same channels continues the sensor, seq on or off.
    let d = TestDaemon::start(json!({}));
    let (mut a, r) = d.connect(&raw_hello("imu", 4));
    assert_eq!(r["ok"], true, "{r}");
    for i in 0..2 {
        a.send(&frame(i as f64, None, &[(&sample(1, i, 4), false)]));
    }
    assert_eq!(a.sync(), 2);
    drop(a);
    d.wait_status("the connection ends", |st| {
        st["sensors"]["imu"]["connected"] == false
    });
    let mut with_seq = raw_hello("imu", 4);
    with_seq["seq"] = json!(true);
    let (mut b, r) = d.connect(&with_seq);
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["samples"], 2);
    for i in 2..4 {
        b.send(&frame(i as f64, Some(i), &[(&sample(1, i, 4), false)]));
    }
    assert_eq!(b.sync(), 4);
    drop(b);
    d.wait_status("the connection ends", |st| {
        st["sensors"]["imu"]["connected"] == false
    });
    let (mut c, r) = d.connect(&raw_hello("imu", 4));
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["samples"], 4);
    c.send(&frame(4.0, None, &[(&sample(1, 4, 4), false)]));
    assert_eq!(c.sync(), 5);
    let (ts, x) = read_sensor(&d.trace_dir(), "imu", "x");
    assert_eq!(ts, [0.0, 1.0, 2.0, 3.0, 4.0]);
    for (i, s) in x.iter().enumerate() {
        assert_eq!(*s, sample(1, i as u64, 4), "sample {i}");
    }
}

#[test]
fn a_hello_answered_during_a_rotation_names_the_trace_its_samples_count() {
    // The hello's barrier waits behind the previous connection's backlog; a rotation meanwhile
    // makes the new trace current before this sensor's writer switches. The reply named the
    // new trace with the old trace's count, so the driver's numbering was off by that count.
    let d = TestDaemon::start(json!({"debug_write_delay_ms": 100}));
    let old = d.status()["trace"].as_str().unwrap().to_string();
    let (mut a, r) = d.connect(&raw_hello("cam", 4));
    assert_eq!(r["ok"], true, "{r}");
    for i in 0..20 {
        a.send(&frame(i as f64, None, &[(&sample(2, i, 4), false)]));
    }
    drop(a);
    d.wait_status("the connection ends", |st| {
        st["sensors"]["cam"]["connected"] == false
    });
    let path = d.ingest_path();
    let hello = std::thread::spawn(move || Driver::connect(&path, &raw_hello("cam", 4)));
    std::thread::sleep(std::time::Duration::from_millis(300));
    let rot = d.ctl(json!({"cmd": "rotate"}));
    assert_eq!(rot["ok"], true, "{rot}");
    let new = rot["trace"].as_str().unwrap().to_string();
    assert_ne!(new, old);
    let (mut b, r) = hello.join().unwrap();
    assert_eq!(r["ok"], true, "{r}");
    // Either answer is right, as long as trace and count belong together.
    if r["trace"] == old.as_str() {
        assert_eq!(r["samples"], 20, "{r}");
    } else {
        assert_eq!(r["trace"], new.as_str(), "{r}");
        assert_eq!(r["samples"], 0, "{r} (20 samples are in {old})");
    }
    b.send(&frame(20.0, None, &[(&sample(2, 20, 4), false)]));
    assert_eq!(b.sync(), 1, "the frame after the hello went to {new}");
}
