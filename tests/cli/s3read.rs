//! Reading traces in place on a real S3 server (Garage on 127.0.0.1, tests/support/garage.rs):
//! - one random 1080p `mjpg` frame and one `lzmaf` frame, once the channel is open, cost at
//!   most 3 GETs and at most the frame's size + 128 KiB (counted by the store handle), and
//!   equal what the local reader gives;
//! - `info`, `cat`, `list`, `validate` on `s3://` answer as on the local copy;
//! - a missing bucket, refused credentials, an endpoint that does not answer, a missing
//!   trace: each an error naming it (exit 2). `export` and `validate --deep`: s3export.rs.
//!
//! Cost: a 4 MB trace uploaded twice, about 10 s in an unoptimised build.

use crate::support::common::{roverlog_bin, sensor_meta};
use crate::support::garage::Garage;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use roverlog_core::format::{ChannelFormat, DType, SensorWriter, Trace, WriterOptions};
use roverlog_store::{open_trace_in, Store};

const FRAMES: u64 = 12;
/// The promise: per frame, after the channel is open.
const MAX_GETS: u64 = 3;
const SLACK: u64 = 128 << 10;

/// A trace with a 1080p camera (`mjpg`, frames of about 250 KB: what a 1080p JPEG takes), a
/// lidar-like `lzmaf` channel and a `raw` one.
fn trace(root: &Path, name: &str) -> PathBuf {
    let t = root.join(name);
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(t.join("config.yaml"), "{}\n").unwrap();
    let meta = sensor_meta(
        &[
            (
                "video.avi",
                ChannelFormat::Mjpg,
                DType::U1,
                vec![1080, 1920, 3],
            ),
            ("rng", ChannelFormat::Lzmaf, DType::U2, vec![64, 1024]),
            ("imu", ChannelFormat::Raw, DType::F4, vec![6]),
        ],
        "",
    );
    let mut w = SensorWriter::create(&t.join("cam"), meta, &WriterOptions::default()).unwrap();
    for i in 0..FRAMES {
        let mut jpeg = vec![0xFF, 0xD8];
        jpeg.extend(roverlog_core::noise(250_000 + 997 * i as usize, i + 1));
        jpeg.extend([0xFF, 0xD9]);
        // Half noise, half zeros: frames of about 64 KiB compressed.
        let mut rng = roverlog_core::noise(64 * 1024, !i);
        rng.resize(64 * 1024 * 2, 0);
        let imu = roverlog_core::noise(24, i + 99);
        w.append(1000.0 + i as f64 / 30.0, &[&jpeg, &rng, &imu])
            .unwrap();
    }
    w.finish().unwrap();
    t
}

/// Uploads every file of `dir` below `prefix` of `store`.
pub(crate) fn upload(store: &Store, dir: &Path, prefix: &str) {
    for rel in roverlog_core::format::checksum::files(dir).unwrap() {
        let key = format!("{prefix}/{}", rel.to_string_lossy());
        store
            .put(&key, std::fs::read(dir.join(&rel)).unwrap())
            .unwrap();
    }
}

pub(crate) fn roverlog(env: &[(String, String)], args: &[&str]) -> (i32, Vec<u8>, String) {
    let mut c = Command::new(roverlog_bin());
    c.args(args).envs(env.iter().map(|(k, v)| (k, v)));
    for (k, _) in std::env::vars() {
        if k.starts_with("AWS_") && !env.iter().any(|(e, _)| *e == k) {
            c.env_remove(k);
        }
    }
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), out.stdout, err)
}

#[test]
fn s3_traces_read_in_place_within_three_gets_a_frame() {
    let g = Garage::start();
    let env = g.env();
    let tmp = tempfile::tempdir().unwrap();
    let local = trace(tmp.path(), "run1");
    let fleet = Store::open_env("s3://traces/fleet", &env).unwrap();
    upload(&fleet, &local, "run1");
    upload(&fleet, &local, "day2/run2");

    // The library: what one random frame costs once its channel is open.
    let store = Arc::new(Store::open_env("s3://traces/fleet/run1", &env).unwrap());
    let t = open_trace_in(store.clone()).unwrap();
    assert_eq!(t.sensor_names(), ["cam"]);
    let s = t.sensor("cam").unwrap();
    let ls = Trace::open(&local).unwrap().sensor("cam").unwrap();
    assert_eq!(s.timestamps(), &ls.timestamps().unwrap()[..]);
    for ch in ["video.avi", "rng"] {
        let c = s.channel(ch).unwrap();
        let mut lc = ls.channel(ch).unwrap();
        assert_eq!(c.len(), FRAMES);
        for i in [7, 2, 11, 0] {
            let before = store.requests();
            let got = c.get(i).unwrap();
            let after = store.requests();
            let (gets, bytes) = (after.gets - before.gets, after.got_bytes - before.got_bytes);
            // The frame as stored: the JPEG, or the compressed lzmaf frame.
            let stored = match &lc {
                roverlog_core::format::ChannelReader::Lzmaf(r) => r.compressed(i).unwrap().len(),
                _ => got.len(),
            } as u64;
            eprintln!("{ch} frame {i}: {gets} GET(s), {bytes} bytes for a {stored}-byte frame");
            assert!(gets <= MAX_GETS, "{ch} frame {i}: {gets} GETs");
            assert!(
                bytes <= stored + SLACK,
                "{ch} frame {i}: {bytes} bytes for {stored}"
            );
            assert_eq!(after.heads, before.heads);
            assert_eq!(after.lists, before.lists);
            assert_eq!(got, &*lc.get(i).unwrap(), "{ch} frame {i}");
        }
    }

    // The verbs on s3:// answer as on the local copy.
    let url = "s3://traces/fleet/run1";
    let lpath = local.to_str().unwrap();
    for (item, extra) in [
        ("cam/video.avi", vec!["--jpeg", "--rows", "3:9:2"]),
        ("cam/rng", vec!["--rows", "5:8"]),
        ("cam/imu", vec![]),
        ("cam/ts", vec![]),
    ] {
        let mut a = vec!["cat", url, item];
        a.extend(&extra);
        let (code, remote, err) = roverlog(&env, &a);
        assert_eq!(code, 0, "{a:?}: {err}");
        a[1] = lpath;
        let (code, here, err) = roverlog(&env, &a);
        assert_eq!(code, 0, "{a:?}: {err}");
        assert!(!here.is_empty());
        assert_eq!(remote, here, "cat {item} {extra:?}");
    }
    let (code, out, err) = roverlog(&env, &["info", url, "--json"]);
    assert_eq!(code, 0, "{err}");
    let remote: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let (_, out, _) = roverlog(&env, &["info", lpath, "--json"]);
    let here: serde_json::Value = serde_json::from_slice(&out).unwrap();
    for key in [
        "sensor",
        "samples",
        "start",
        "duration_s",
        "rate_hz",
        "bytes",
    ] {
        assert_eq!(remote["sensors"][0][key], here["sensors"][0][key], "{key}");
    }
    let names = |v: &serde_json::Value| -> Vec<(String, String, u64)> {
        v["sensors"][0]["channels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let s = |k: &str| c[k].as_str().unwrap().to_string();
                (s("name"), s("format"), c["bytes"].as_u64().unwrap())
            })
            .collect()
    };
    assert_eq!(names(&remote), names(&here));
    let (code, out, err) = roverlog(&env, &["list", "s3://traces/fleet"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(String::from_utf8_lossy(&out), "day2/run2\nrun1\n");
    let (code, out, err) = roverlog(&env, &["validate", "s3://traces/fleet/"]);
    assert_eq!(code, 0, "{err}");
    let out = String::from_utf8_lossy(&out);
    assert!(
        out.contains(&format!(
            "s3://traces/fleet/run1/cam: ok ({FRAMES} samples)"
        )),
        "{out}"
    );
    assert!(out.contains("s3://traces/fleet/day2/run2/cam: ok"), "{out}");

    // A channel cut short on the store: `validate` names it (exit 1), `cat` writes the
    // samples it holds and says why not the rest.
    let whole = Store::open_env("s3://traces", &env).unwrap();
    let imu = std::fs::read(local.join("cam/imu")).unwrap();
    whole
        .put("fleet/run1/cam/imu", imu[..imu.len() - 2 * 24 - 5].to_vec())
        .unwrap();
    let (code, out, err) = roverlog(&env, &["validate", url]);
    assert_eq!(code, 1, "{err}");
    let out = String::from_utf8_lossy(&out);
    let want = format!(
        "{url}/cam: imu: holds {} of the {FRAMES} samples ts counts",
        FRAMES - 3
    );
    assert!(out.contains(&want), "{out}");
    let (code, got, err) = roverlog(&env, &["cat", url, "cam/imu"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(got, &imu[..(FRAMES as usize - 3) * 24]);
    assert!(
        err.contains(
            "writing the 9 intact of the 12 samples `ts` counts: \
             s3://traces/fleet/run1/cam/imu: sample 9 is damaged: \
             the sensor's ts counts it, but the channel holds only 9 samples"
        ),
        "{err}"
    );

    // A video frame whose bytes changed on the store behind the index: named.
    let key = "fleet/run1/cam/video.avi";
    let mut avi = whole
        .get_range(key, 0..whole.head(key).unwrap().unwrap().size)
        .unwrap();
    let l = roverlog_core::format::avi::parse::parse(&avi).unwrap();
    let f = l.frames[4];
    avi[f.offset as usize - 4] ^= 1; // frame 4's chunk size
    whole.put(key, avi).unwrap();
    let (code, _, err) = roverlog(
        &env,
        &["cat", url, "cam/video.avi", "--jpeg", "--rows", "4"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("video.avi: sample 4 is damaged: the chunk at byte"),
        "{err}"
    );
}

#[test]
fn s3_reads_name_a_missing_bucket_bad_credentials_no_answer_and_a_missing_trace() {
    let g = Garage::start();
    let env = g.env();
    let tmp = tempfile::tempdir().unwrap();
    let local = trace(tmp.path(), "run1");
    upload(
        &Store::open_env("s3://traces", &env).unwrap(),
        &local,
        "run1",
    );
    let with = |k: &str, v: &str| -> Vec<(String, String)> {
        let mut e: Vec<_> = env.iter().filter(|(n, _)| n != k).cloned().collect();
        e.push((k.to_string(), v.to_string()));
        e
    };
    let expect = |env: &[(String, String)], args: &[&str], want: &str| {
        let (code, _, err) = roverlog(env, args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    };
    for verb in ["info", "validate", "list"] {
        expect(
            &env,
            &[verb, "s3://nosuchbucket/run1"],
            "bucket \"nosuchbucket\" does not exist at http://127.0.0.1",
        );
        expect(
            &with("AWS_SECRET_ACCESS_KEY", &"0".repeat(64)),
            &[verb, "s3://traces/run1"],
            "refused the credentials for bucket \"traces\"",
        );
        expect(
            &env,
            &[verb, "s3://traces/nosuchtrace"],
            "s3://traces/nosuchtrace at http://127.0.0.1",
        );
    }
    expect(
        &env,
        &["cat", "s3://traces/nosuchtrace", "cam/ts"],
        "s3://traces/nosuchtrace at http://127.0.0.1",
    );
    expect(
        &env,
        &["cat", "s3://traces/run1", "lidar/ts"],
        "no sensor \"lidar\" (sensors: cam)",
    );
    expect(
        &env,
        &["cat", "s3://traces/run1", "cam/depth"],
        "no channel \"depth\"",
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let t0 = Instant::now();
    expect(
        &with("AWS_ENDPOINT_URL", &format!("http://127.0.0.1:{port}")),
        &["info", "s3://traces/run1"],
        &format!("http://127.0.0.1:{port} (bucket \"traces\") did not answer"),
    );
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
}
