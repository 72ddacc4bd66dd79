//! `export` and `validate --deep` of traces on a real S3 server (Garage on 127.0.0.1,
//! tests/support/garage.rs), against the same verbs on the local copy:
//! - `export s3://...` writes the same MCAP file, byte for byte, as `export` of the local
//!   trace (every message kind: JPEG frames of a video and of `jpg` files, an `lzmaf` image,
//!   JSON samples, `ts_recv` publish times, positions by channel names and from the recorded
//!   `config.yaml`, the event log; and a window of one sensor); a missing trace, a missing
//!   sensor and a channel cut short on the store are errors naming them (exit 2), no file;
//! - `validate --deep s3://...`: a good trace passes; one garbled `lzmaf` frame, or one
//!   garbled JPEG in an `mjpg` video, is named (sensor, channel, sample), exit 1, as the local
//!   `--deep` names it (and neither is found without `--deep`).
//!
//! Cost: two Garage servers and under 1 MB uploaded; about 10 s in an unoptimised build.

use crate::s3read::{roverlog, upload};
use crate::support::common::{self, sensor_meta};
use crate::support::garage::Garage;

use std::path::{Path, PathBuf};

use roverlog_core::format::{ChannelFormat, DType, SensorWriter, WriterOptions};
use roverlog_store::Store;
use serde_json::json;

const T0: f64 = 1.7e9;
const FRAMES: u64 = 12;

fn jpeg_like(i: u64) -> Vec<u8> {
    let mut j = vec![0xFF, 0xD8];
    j.extend(roverlog_core::noise(3000 + 97 * i as usize, i + 1));
    j.extend([0xFF, 0xD9]);
    j
}

fn f8s(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A trace with every kind of message the export writes: a camera (`mjpg` video, `jpg`
/// files, an `lzmaf` u2 image, a `raw` f4 vector, `ts_recv`, an `npz` channel it skips), a
/// gps with `latitude`/`longitude` channels, a gnss whose mapping is in `config.yaml`, and an
/// event log.
fn trace(root: &Path) -> PathBuf {
    let t = root.join("run1");
    std::fs::create_dir_all(t.join("_roverlog")).unwrap();
    let config = json!({"data_root": "./data",
        "foxglove_location": {"gnss": {"latitude": "pos[0]", "longitude": "pos[1]",
                                       "altitude": "pos[2]"}}});
    std::fs::write(t.join("config.yaml"), config.to_string()).unwrap();
    let opts = WriterOptions::default();
    let meta = sensor_meta(
        &[
            ("video.avi", ChannelFormat::Mjpg, DType::U1, vec![48, 64, 3]),
            ("img", ChannelFormat::Blob("jpg".into()), DType::U1, vec![]),
            ("rng", ChannelFormat::Lzmaf, DType::U2, vec![8, 16]),
            ("imu", ChannelFormat::Raw, DType::F4, vec![6]),
            ("ts_recv", ChannelFormat::Raw, DType::F8, vec![]),
            (
                "cloud",
                ChannelFormat::Blob("npz".into()),
                DType::U1,
                vec![],
            ),
        ],
        "d",
    );
    let mut w = SensorWriter::create(&t.join("cam"), meta, &opts).unwrap();
    for i in 0..FRAMES {
        let ts = T0 + i as f64 / 10.0;
        let rng: Vec<u8> = (0..128u16)
            .flat_map(|k| (k * 7 + i as u16).to_le_bytes())
            .collect();
        let imu = roverlog_core::noise(24, i + 99);
        let jpeg = jpeg_like(i);
        let small = jpeg_like(i + 50);
        w.append(
            ts,
            &[&jpeg, &small, &rng, &imu, &f8s(&[ts + 0.003]), b"npz"],
        )
        .unwrap();
    }
    w.finish().unwrap();
    for (name, chans) in [
        (
            "gps",
            vec![
                ("latitude", ChannelFormat::Raw, DType::F8, vec![]),
                ("longitude", ChannelFormat::Lzmaf, DType::F8, vec![]),
            ],
        ),
        (
            "gnss",
            vec![("pos", ChannelFormat::Raw, DType::F8, vec![3])],
        ),
    ] {
        let two = chans.len() == 2;
        let mut w = SensorWriter::create(&t.join(name), sensor_meta(&chans, "d"), &opts).unwrap();
        for i in 0..FRAMES {
            let (lat, lon) = (48.1 + i as f64 * 1e-5, 11.5 - i as f64 * 2e-5);
            let ts = T0 + 0.05 + i as f64 / 10.0;
            if two {
                w.append(ts, &[&f8s(&[lat]), &f8s(&[lon])]).unwrap();
            } else {
                w.append(ts, &[&f8s(&[lat, lon, 519.5])]).unwrap();
            }
        }
        w.finish().unwrap();
    }
    let lines = [
        json!({"t": T0 + 0.1, "event": "alarm", "alarm": "silent", "sensor": "gps",
               "start": T0 + 0.1, "expected_hz": 10.0, "silent_s": 0.5}),
        json!({"t": T0 + 0.4, "event": "mark", "text": "cone on the left"}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(t.join("_roverlog/events.jsonl"), text).unwrap();
    t
}

/// `roverlog export <trace> <out> <extra>` with the store's variables: (exit code, stdout,
/// stderr, the file's bytes when there is one).
fn export(
    env: &[(String, String)],
    trace: &str,
    out: &Path,
    extra: &[&str],
) -> (i32, String, String, Option<Vec<u8>>) {
    let mut args = vec!["export", trace, out.to_str().unwrap()];
    args.extend(extra);
    let (code, stdout, err) = roverlog(env, &args);
    let file = std::fs::read(out).ok();
    (
        code,
        String::from_utf8_lossy(&stdout).into_owned(),
        err,
        file,
    )
}

#[test]
fn s3_export_writes_the_same_mcap_as_the_local_copy_and_names_what_is_missing() {
    let g = Garage::start();
    let env = g.env();
    let tmp = tempfile::tempdir().unwrap();
    let local = trace(tmp.path());
    let store = Store::open_env("s3://traces", &env).unwrap();
    upload(&store, &local, "fleet/run1");
    let url = "s3://traces/fleet/run1";
    let lpath = local.to_str().unwrap();

    for (k, extra) in [
        vec![],
        vec!["--sensors", "cam", "--start", "0.15", "--end", "-0.25"],
    ]
    .into_iter()
    .enumerate()
    {
        let (code, here_out, err, here) =
            export(&env, lpath, &tmp.path().join(format!("l{k}.mcap")), &extra);
        assert_eq!(code, 0, "local {extra:?}: {err}");
        let (code, remote_out, err, remote) =
            export(&env, url, &tmp.path().join(format!("r{k}.mcap")), &extra);
        assert_eq!(code, 0, "s3 {extra:?}: {err}");
        let (here, remote) = (here.unwrap(), remote.unwrap());
        assert!(here.len() > 10_000, "{extra:?}: {} bytes", here.len());
        // The MCAP holds nothing of where the trace was read from: the same bytes.
        assert!(
            here == remote,
            "{extra:?}: the files differ ({} and {} bytes)",
            here.len(),
            remote.len()
        );
        assert_eq!(remote_out, here_out, "{extra:?}");
        if extra.is_empty() {
            for line in [
                format!("/cam/video.avi: {FRAMES} messages"),
                format!("/cam/img: {FRAMES} messages"),
                format!("/cam/rng: {FRAMES} messages"),
                format!("/gps/location: {FRAMES} messages"),
                format!("/gnss/location: {FRAMES} messages"),
                "/roverlog/events: 2 messages".into(),
                "skipped cam/cloud: npz channels are not exported".into(),
            ] {
                assert!(remote_out.contains(&line), "{line}: {remote_out}");
            }
        } else {
            // 0.15 s .. 1.15 - 0.25 s (the gps's last sample) of the camera's samples
            // every 0.1 s from 0: 0.2 .. 0.8.
            assert!(
                remote_out.contains("/cam/video.avi: 7 messages"),
                "{remote_out}"
            );
            assert!(!remote_out.contains("/gps/"), "{remote_out}");
        }
    }

    // Bad input: named, exit 2, no file (nor a partial one) left.
    let expect = |args: &[&str], want: &str| {
        let out = tmp.path().join("bad.mcap");
        let (code, _, err, file) = export(&env, args[0], &out, &args[1..]);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(file.is_none(), "{args:?} left {}", out.display());
    };
    expect(
        &["s3://traces/fleet/nosuchtrace"],
        "s3://traces/fleet/nosuchtrace at http://127.0.0.1",
    );
    expect(
        &[url, "--sensors", "cam,lidar"],
        "s3://traces/fleet/run1: no sensor \"lidar\" (sensors: cam, gnss, gps)",
    );
    expect(
        &["s3://nosuchbucket/run1"],
        "bucket \"nosuchbucket\" does not exist at http://127.0.0.1",
    );
    // A channel cut short on the store: the sample it lacks is named.
    let imu = std::fs::read(local.join("cam/imu")).unwrap();
    store
        .put("fleet/run1/cam/imu", imu[..imu.len() - 24 - 5].to_vec())
        .unwrap();
    expect(
        &[url],
        "s3://traces/fleet/run1/cam/imu: sample 10 is damaged: \
         the sensor's ts counts it, but the channel holds only 10 samples",
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// The gulp fixture's 31 real JPEGs, imported and converted: `camera/img` an `mjpg` video,
/// `camera/frame` an `lzmaf` channel.
fn real_trace(root: &Path) -> PathBuf {
    let imported = root.join("imported");
    let src = common::root().join("tests/data/gulp_small");
    let r = common::roverlog(&["import".as_ref(), src.as_os_str(), imported.as_os_str()]);
    assert_eq!(r.code, 0, "import: {}", r.text());
    let t = root.join("deep");
    let r = common::roverlog(&[
        "convert".as_ref(),
        "--channel".as_ref(),
        "camera/img=mjpg".as_ref(),
        "--channel".as_ref(),
        "camera/frame=lzmaf".as_ref(),
        imported.as_os_str(),
        t.as_os_str(),
    ]);
    assert_eq!(r.code, 0, "convert: {}", r.text());
    t
}

/// Every file of trace `from` copied to `to`.
fn copy(from: &Path, to: &Path) {
    for rel in roverlog_core::format::checksum::files(from).unwrap() {
        std::fs::create_dir_all(to.join(&rel).parent().unwrap()).unwrap();
        std::fs::copy(from.join(&rel), to.join(&rel)).unwrap();
    }
}

/// `validate` (`--deep` when `deep`) of `path`: exit code and stdout.
fn validate(env: &[(String, String)], path: &str, deep: bool) -> (i32, String) {
    let mut args = vec!["validate", path];
    if deep {
        args.push("--deep");
    }
    let (code, out, err) = roverlog(env, &args);
    assert!(code == 0 || code == 1, "{args:?}: {err}");
    (code, String::from_utf8_lossy(&out).into_owned())
}

#[test]
fn s3_validate_deep_passes_a_good_trace_and_names_a_garbled_lzmaf_or_jpeg_frame() {
    let g = Garage::start();
    let env = g.env();
    let tmp = tempfile::tempdir().unwrap();
    let good = real_trace(tmp.path());
    let store = Store::open_env("s3://traces", &env).unwrap();
    upload(&store, &good, "good");
    let (code, out) = validate(&env, "s3://traces/good", true);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("s3://traces/good/camera: ok (31 samples)"),
        "{out}"
    );

    // Frame 5 of the lzmaf channel: one byte inside its xz stream.
    let lz = {
        let i = std::fs::read(good.join("camera/frame_i")).unwrap();
        let at = |k: usize| u64::from_le_bytes(i[8 * k..8 * k + 8].try_into().unwrap()) as usize;
        let mut data = std::fs::read(good.join("camera/frame")).unwrap();
        data[(at(5) + at(6)) / 2] ^= 0xFF;
        (
            "camera/frame",
            data,
            "frame 5 does not decompress",
            "s3://traces/bad/camera/frame: sample 5 is damaged",
        )
    };
    // Frame 7 of the video: its JPEG's header bytes, the chunk and idx1 left as they were.
    let jpeg = {
        let mut avi = std::fs::read(good.join("camera/img")).unwrap();
        let l = roverlog_core::format::avi::parse::parse(&avi).unwrap();
        let f = l.frames[7];
        avi[f.offset as usize + 2..f.offset as usize + 40].fill(0x55);
        (
            "camera/img",
            avi,
            "img: frame 7 does not decode",
            "s3://traces/bad/camera: img: frame 7 does not decode",
        )
    };
    for (file, bytes, local_says, s3_says) in [lz, jpeg] {
        let bad = tmp.path().join("bad");
        let _ = std::fs::remove_dir_all(&bad);
        copy(&good, &bad);
        std::fs::write(bad.join(file), &bytes).unwrap();
        upload(&store, &bad, "bad");

        // Only reading every sample finds it, here and there.
        let (code, out) = validate(&env, bad.to_str().unwrap(), false);
        assert_eq!(code, 0, "{file}: {out}");
        let (code, out) = validate(&env, "s3://traces/bad", false);
        assert_eq!(code, 0, "{file}: {out}");
        let (code, out) = validate(&env, bad.to_str().unwrap(), true);
        assert_eq!(code, 1, "{file}: {out}");
        assert!(out.contains(local_says), "{file}: {out}");
        let (code, out) = validate(&env, "s3://traces/bad", true);
        assert_eq!(code, 1, "{file}: {out}");
        assert!(out.contains(s3_says), "{file}: {out}");
        assert!(!out.contains(": ok"), "{file}: {out}");
    }
}
