//! upstream roverd's CLI verbs, ours: `list`, `extract`, `checksum`, `convert`, checked
//! against upstream's rules written in Python (`tests/py/roverd_verbs.py`: os.walk for
//! `list`, numpy `searchsorted` windows for `extract`, hashlib md5 for `checksum`) on the same
//! traces, and every bad input answered with exit 2, a clear message and no output left.

use crate::support::common;

use std::path::{Path, PathBuf};

use common::{roverlog, run_python};
use roverlog_core::format::meta::{ChannelFormat, SensorMeta};
use roverlog_core::format::{DType, SensorWriter, WriterOptions};
use serde_json::Value;

fn verbs_py(args: &[&str]) -> Value {
    let script = std::fs::read_to_string(common::root().join("tests/py/roverd_verbs.py")).unwrap();
    let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    serde_json::from_str(&run_python(&script, &args)).unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn meta(chans: &[(&str, ChannelFormat, DType, Vec<usize>)]) -> SensorMeta {
    common::sensor_meta(chans, "")
}

/// A trace like a drive's: imu (raw, 100 Hz), lidar (lzmaf, 10 Hz, with `lidar.json`), camera
/// (jpg blobs, 15 Hz) and video (mjpg, 15 Hz); sensors start and end at different times.
fn drive(root: &Path, jpegs: &[Vec<u8>]) -> PathBuf {
    let t = root.join("drive");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(t.join("config.yaml"), "imu: {}\nlidar: {}\n").unwrap();
    let opts = WriterOptions::default();
    let t0 = 1.7e9;
    let mut w = SensorWriter::create(
        &t.join("imu"),
        meta(&[("acc", ChannelFormat::Raw, DType::F4, vec![3])]),
        &opts,
    )
    .unwrap();
    for i in 0..600 {
        let v: Vec<u8> = (0..3)
            .flat_map(|k| ((i * 3 + k) as f32).to_le_bytes())
            .collect();
        w.append(t0 + 0.3 + i as f64 * 0.01, &[&v]).unwrap();
    }
    w.finish().unwrap();
    let mut w = SensorWriter::create(
        &t.join("lidar"),
        meta(&[("rng", ChannelFormat::Lzmaf, DType::U2, vec![8, 16])]),
        &opts,
    )
    .unwrap();
    for i in 0..55u16 {
        let v: Vec<u8> = (0..128u16)
            .flat_map(|k| (k * 3 + i).to_le_bytes())
            .collect();
        w.append(t0 + i as f64 * 0.1, &[&v]).unwrap();
    }
    w.finish().unwrap();
    std::fs::write(t.join("lidar/lidar.json"), "{\"beams\": 8}").unwrap();
    for (name, f) in [
        ("camera", ChannelFormat::Blob("jpg".into())),
        ("video", ChannelFormat::Mjpg),
    ] {
        let mut w = SensorWriter::create(
            &t.join(name),
            meta(&[("img", f, DType::U1, vec![48, 64, 3])]),
            &opts,
        )
        .unwrap();
        for (i, j) in jpegs.iter().cycle().take(80).enumerate() {
            w.append(t0 + 0.1 + i as f64 / 15.0, &[j]).unwrap();
        }
        w.finish().unwrap();
    }
    t
}

fn jpegs(dir: &Path) -> Vec<Vec<u8>> {
    let src = dir.join("cv.avi");
    common::video::opencv_write(&src, 64, 48, 12);
    common::video::our_frames(&src)
}

/// Every sample of every channel of a sensor, as stored (lzmaf frames compressed).
fn stored(trace: &Path, sensor: &str) -> Vec<(f64, Vec<Vec<u8>>)> {
    let s = roverlog_core::format::Sensor::open(&trace.join(sensor)).unwrap();
    let ts = s.timestamps().unwrap();
    let names: Vec<String> = s
        .meta()
        .data_channels()
        .map(|(n, _)| n.to_string())
        .collect();
    let mut readers: Vec<_> = names.iter().map(|n| s.channel(n).unwrap()).collect();
    (0..ts.len())
        .map(|i| {
            let samples = readers
                .iter_mut()
                .map(|r| match r {
                    roverlog_core::format::ChannelReader::Lzmaf(l) => {
                        l.compressed(i as u64).unwrap().to_vec()
                    }
                    r => r.get(i as u64).unwrap().into_owned(),
                })
                .collect();
            (ts[i], samples)
        })
        .collect()
}

fn no_partials(dir: &Path) {
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.contains("partial")),
        "left behind: {names:?}"
    );
}

#[test]
fn list_finds_what_upstream_finds() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("data");
    for t in [
        "2026.11.01-08.00.00",
        "b/2026.11.02-09.00.00",
        "b/c/d/e",
        "z",
    ] {
        std::fs::create_dir_all(root.join(t).join("imu")).unwrap();
        std::fs::write(root.join(t).join("config.yaml"), "").unwrap();
    }
    std::fs::create_dir_all(root.join("not-a-trace/imu")).unwrap();
    let elsewhere = dir.path().join("elsewhere/linked");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("config.yaml"), "").unwrap();
    std::os::unix::fs::symlink(dir.path().join("elsewhere"), root.join("link")).unwrap();
    for follow in [false, true] {
        let mut args = vec!["list", s(&root)];
        let mut py = vec!["list", s(&root)];
        if follow {
            args.push("--follow-symlinks");
            py.push("follow");
        }
        let r = roverlog(&args);
        assert!(r.ok(), "{}", r.text());
        let ours: Vec<&str> = r
            .out()
            .lines()
            .map(|l| l.to_string().leak() as &str)
            .collect();
        let theirs: Vec<String> = serde_json::from_value(verbs_py(&py)).unwrap();
        assert_eq!(ours, theirs, "follow symlinks: {follow}");
        assert_eq!(ours.contains(&"link/linked"), follow);
    }
    // A trace given itself is "."; a link loop ends; bad input is an error.
    let r = roverlog(&["list", s(&root.join("z"))]);
    assert_eq!(r.out(), ".\n");
    std::os::unix::fs::symlink(&root, root.join("b/loop")).unwrap();
    let r = roverlog(&["list", s(&root), "--follow-symlinks"]);
    assert!(r.ok(), "{}", r.text());
    let r = roverlog(&["list", s(&dir.path().join("missing"))]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("not a directory"), "{}", r.stderr);
}

#[test]
fn extract_takes_upstreams_window_and_copies_every_format_as_stored() {
    let dir = tempfile::tempdir().unwrap();
    let src = drive(dir.path(), &jpegs(dir.path()));
    // (our arguments, the same window for upstream's rules: relative or epoch).
    let cases: [(&[&str], &[&str]); 4] = [
        // Offsets from the span's start (latest first sample: imu at t0 + 0.3) and back from
        // its end (earliest last sample: camera and video at t0 + 0.1 + 79/15), both between
        // sample times so the window does not hang on the last bit of a sum.
        (
            &["--start", "1.005", "--length", "2"],
            &["epoch", "1700000001.305", "1700000003.305"],
        ),
        (
            &["--end", "-0.5", "--length", "1.25"],
            &["epoch", "1700000003.616667", "1700000004.866667"],
        ),
        (
            &["--relative", "--start", "0.25", "--end", "0.75"],
            &["relative", "0.25", "0.75"],
        ),
        (
            &[
                "--epoch",
                "--start",
                "1700000002.0",
                "--end",
                "1700000004.5",
            ],
            &["epoch", "1700000002.0", "1700000004.5"],
        ),
    ];
    for (k, (ours, theirs)) in cases.iter().enumerate() {
        let dst = dir.path().join(format!("out{k}"));
        let mut args = vec!["extract", s(&src), s(&dst)];
        args.extend_from_slice(ours);
        let r = roverlog(&args);
        assert!(r.ok(), "{ours:?}: {}", r.text());
        let mut py = vec!["extract", s(&src)];
        py.extend_from_slice(theirs);
        let want = verbs_py(&py);
        for sensor in ["imu", "lidar", "camera", "video"] {
            let a = want[sensor][0].as_u64().unwrap() as usize;
            let b = want[sensor][1].as_u64().unwrap() as usize;
            let got = stored(&dst, sensor);
            assert_eq!(got.len(), b - a, "{ours:?}: {sensor}");
            assert!(
                got[..] == stored(&src, sensor)[a..b],
                "{ours:?}: {sensor}: samples differ"
            );
        }
        let v = roverlog(&["validate", s(&dst)]);
        assert!(v.ok(), "{}", v.text());
        assert_eq!(
            std::fs::read(dst.join("lidar/lidar.json")).unwrap(),
            b"{\"beams\": 8}",
            "sidecars are copied"
        );
        assert!(dst.join("config.yaml").is_file());
    }
    let l = roverlog(&["list", s(dir.path())]);
    assert_eq!(l.out().lines().count(), 1 + cases.len(), "{}", l.out());

    // Bad input: exit 2, a message naming it, nothing written.
    let existing = dir.path().join("out0");
    let before = stored(&existing, "imu");
    let bad: [(&[&str], &str); 6] = [
        (
            &[
                "extract",
                s(&src),
                s(&existing),
                "--start",
                "0",
                "--length",
                "1",
            ],
            "already exists",
        ),
        (&["extract", s(&src), "NEW", "--start", "1"], "exactly two"),
        (
            &[
                "extract",
                s(&src),
                "NEW",
                "--start",
                "1",
                "--end",
                "2",
                "--length",
                "1",
            ],
            "exactly two",
        ),
        (
            &["extract", s(&src), "NEW", "--start", "3", "--end", "2"],
            "empty window",
        ),
        (
            &[
                "extract",
                s(&src),
                "NEW",
                "--epoch",
                "--start",
                "5",
                "--end",
                "6",
            ],
            "holds no sample",
        ),
        (
            &[
                "extract",
                "/nonexistent/trace",
                "NEW",
                "--start",
                "1",
                "--end",
                "2",
            ],
            "/nonexistent/trace",
        ),
    ];
    for (args, want) in bad {
        let args: Vec<String> = args
            .iter()
            .map(|a| {
                if *a == "NEW" {
                    s(&dir.path().join("new")).to_string()
                } else {
                    a.to_string()
                }
            })
            .collect();
        let r = roverlog(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.text());
        assert!(r.stderr.contains(want), "{args:?}: {}", r.stderr);
        assert!(!dir.path().join("new").exists());
    }
    assert!(
        stored(&existing, "imu") == before,
        "an existing dst is untouched"
    );
    no_partials(dir.path());
}

#[test]
fn checksum_writes_upstreams_csv_and_compares_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let src = drive(dir.path(), &jpegs(dir.path()));
    let csv = dir.path().join("sums.csv");
    let r = roverlog(&["checksum", s(&src), s(&csv)]);
    assert!(r.ok(), "{}", r.text());
    let want = verbs_py(&["checksum", s(&src)]);
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        want.as_str().unwrap()
    );
    let r = roverlog(&["checksum", s(&src), s(&csv)]);
    assert_eq!(
        r.code,
        2,
        "an existing CSV is not overwritten: {}",
        r.text()
    );

    let copy = dir.path().join("copy");
    let r = roverlog(&["convert", s(&src), s(&copy), "--channel", "imu/acc=raw"]);
    assert!(r.ok(), "{}", r.text());
    std::fs::remove_dir_all(copy.join("_roverlog")).ok();
    for (a, b) in [(&csv, &copy), (&src, &copy)] {
        let r = roverlog(&["checksum", "--compare", s(a), s(b)]);
        assert_eq!(r.code, 0, "{}", r.text());
    }
    std::fs::write(copy.join("imu/acc"), b"changed").unwrap();
    std::fs::remove_file(copy.join("lidar/lidar.json")).unwrap();
    std::fs::write(copy.join("extra.txt"), b"x").unwrap();
    let r = roverlog(&["checksum", "--compare", s(&csv), s(&copy)]);
    assert_eq!(r.code, 1, "{}", r.text());
    let out = r.out();
    assert!(out.contains("Mismatch: imu/acc; expected "), "{out}");
    assert!(out.contains("Missing: lidar/lidar.json"), "{out}");
    assert!(
        out.contains("Missing: extra.txt"),
        "files only in the copy count too: {out}"
    );

    let b3 = dir.path().join("b3.csv");
    let r = roverlog(&["checksum", "--hash", "blake3", s(&src), s(&b3)]);
    assert!(r.ok(), "{}", r.text());
    assert!(std::fs::read_to_string(&b3)
        .unwrap()
        .starts_with("file,blake3\n"));
    let r = roverlog(&["checksum", "--compare", s(&b3), s(&src)]);
    assert_eq!(r.code, 0, "{}", r.text());
    let r = roverlog(&["checksum", "--compare", s(&b3), s(&csv)]);
    assert_eq!(r.code, 2, "{}", r.text());
    let r = roverlog(&["checksum", "--compare", s(&csv), "/nonexistent"]);
    assert_eq!(r.code, 2, "{}", r.text());
}

#[test]
fn convert_moves_frames_between_video_and_blobs_and_fixed_formats_through_samples() {
    let dir = tempfile::tempdir().unwrap();
    let frames = jpegs(dir.path());
    let src = drive(dir.path(), &frames);
    let a = dir.path().join("a");
    let r = roverlog(&[
        "convert",
        s(&src),
        s(&a),
        "--channel",
        "video/img=jpg",
        "--channel",
        "camera/img=mjpg",
        "--channel",
        "lidar/rng=raw",
        "--channel",
        "imu/acc=lzmaf",
    ]);
    assert!(r.ok(), "{}", r.text());
    let v = roverlog(&["validate", s(&a)]);
    assert!(v.ok(), "{}", v.text());
    assert!(
        a.join("video/img/000000.jpg").is_file(),
        "blob files numbered from 000000"
    );
    assert!(a.join("camera/img").is_file());
    let decoded = |t: &Path, sensor: &str| -> Vec<Vec<u8>> {
        let s = roverlog_core::format::Sensor::open(&t.join(sensor)).unwrap();
        let mut r = s
            .channel(s.meta().data_channels().next().unwrap().0)
            .unwrap();
        (0..r.len().unwrap())
            .map(|i| r.get(i).unwrap().into_owned())
            .collect()
    };
    for sensor in ["video", "camera", "lidar", "imu"] {
        assert_eq!(decoded(&a, sensor), decoded(&src, sensor), "{sensor}");
    }
    assert_eq!(
        decoded(&a, "camera")[..12],
        frames[..],
        "JPEG frames copied, not re-encoded"
    );
    // The video converted back is what ffmpeg and OpenCV play.
    let b = dir.path().join("b");
    let r = roverlog(&["convert", s(&a), s(&b), "--channel", "video/img=mjpg"]);
    assert!(r.ok(), "{}", r.text());
    let video = b.join("video/img");
    assert_eq!(
        common::video::ffmpeg_packets(&video),
        common::video::hashes(&decoded(&src, "video"))
    );
    assert_eq!(common::video::opencv_read(&video).0, 80);
    // The median rate of `ts` (15 Hz) is in the AVI header, not in `meta.json`: upstream
    // passes a channel's `args` to its class, whose constructor takes no `fps`.
    let meta = std::fs::read_to_string(b.join("video/meta.json")).unwrap();
    assert!(!meta.contains("fps"), "{meta}");
    let avi = std::fs::read(&video).unwrap();
    let at = avi.windows(4).position(|w| w == b"avih").unwrap() + 8;
    let us = u32::from_le_bytes(avi[at..at + 4].try_into().unwrap());
    assert_eq!(us, 66_667, "15 fps in the AVI header");
    // A trace of fixed-size and jpg channels reads the same upstream.
    std::fs::remove_dir_all(a.join("camera")).unwrap();
    common::assert_upstream_reads_same(&a);

    for (args, want) in [
        (vec!["--channel", "imu/acc=jpg"], "not a conversion"),
        (vec!["--channel", "imu/acc=h264"], "unknown target format"),
        (vec!["--channel", "imu/nope=raw"], "no such data channel"),
        (vec!["--channel", "imu/acc"], "sensor/channel=format"),
    ] {
        let out = dir.path().join("bad");
        let mut a = vec!["convert", s(&src), s(&out)];
        a.extend(args.iter());
        let r = roverlog(&a);
        assert_eq!(r.code, 2, "{args:?}: {}", r.text());
        assert!(r.stderr.contains(want), "{args:?}: {}", r.stderr);
        assert!(!out.exists(), "{args:?}: nothing left behind");
    }
    no_partials(dir.path());
}

/// `convert` and `extract` with paths relative to the working directory, the destination a
/// bare name (its parent is `""`, which no system call opens: the fsync of the directory
/// holding it once failed with "converting t into c: : No such file or directory").
#[test]
fn convert_and_extract_take_relative_paths() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(common::roverlog_bin())
            .args(args)
            .current_dir(dir.path())
            .output()
            .expect("running roverlog");
        let text = format!(
            "{args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "{text}");
    };
    let gulp = common::root().join("tests/data/gulp_small");
    run(&["import", s(&gulp), "t"]);
    run(&["convert", "t", "c", "--channel", "camera/img=mjpg"]);
    run(&["convert", "./c", "./d", "--channel", "camera/img=jpg"]);
    run(&[
        "extract",
        "t",
        "e",
        "--relative",
        "--start",
        "0",
        "--end",
        "1",
    ]);
    for name in ["c", "d", "e"] {
        run(&["validate", name]);
    }
    let count = |t: &str| {
        let s = roverlog_core::format::Sensor::open(&dir.path().join(t).join("camera")).unwrap();
        s.len().unwrap()
    };
    assert_eq!(count("c"), count("t"));
    assert_eq!(count("d"), count("t"));
    assert!(count("e") > 0);
    no_partials(dir.path());
}
