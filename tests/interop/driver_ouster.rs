//! `roverlog driver ouster` against ouster-sdk (1.0.1, the project's venv): ouster-sdk makes a
//! sensor's metadata and the lidar packets of frames with known random images (its own packet
//! writer, `frame_to_packets`) and decodes those same packet bytes with its own
//! `FrameBatcher`; the packets go over UDP loopback to the driver, which stores them through
//! a real daemon. The trace's `rng`/`rfl`/`nir` must be ouster-sdk's decoding (range clipped
//! to 65535, as upstream's collector stores it), in both packet profiles. One frame loses three
//! packets on the way: it is counted and reported, never stored. IMU packets are checked
//! against ouster-sdk's `ImuPacket` the same way. The legacy case fetches the metadata over
//! HTTP (`--sensor-host`, Python's http.server serving it at the sensor's path).

use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::common;
use crate::support::daemon;

use daemon::*;
use roverlog_drivers::ouster::imu::Imu;
use serde_json::json;

const FRAMES: usize = 4;
/// The frame that loses packets 10, 11, 12 on the way.
const CUT: usize = 2;

/// ouster-sdk writes metadata.json, packets.bin (u32 length + bytes per packet) and sdk.bin
/// (its own decoding of those bytes: rng u2, rfl u1, nir u2 per frame); prints the shape.
const GEN: &str = r#"
import struct, sys, numpy as np, ouster.sdk.core as c
profile, out, frames = sys.argv[1], sys.argv[2], int(sys.argv[3])
info = c.SensorInfo.from_default(c.LidarMode._1024x10)
info.format.udp_profile_lidar = getattr(c.UDPProfileLidar, profile)
pf = c.PacketFormat.from_info(info)
open(f"{out}/metadata.json", "w").write(info.to_json_string())
rng = np.random.default_rng(37)
H, W = info.format.pixels_per_column, info.format.columns_per_frame
bits = pf.field_bitness("RANGE")
batcher = c.FrameBatcher(info)
decoded = []
with open(f"{out}/packets.bin", "wb") as pk:
    for k in range(frames):
        f = c.LidarFrame(info)
        f.field("RANGE")[:] = rng.integers(0, 1 << bits, (H, W), dtype=np.uint32)
        f.field("REFLECTIVITY")[:] = rng.integers(0, 256, (H, W), dtype=np.uint8)
        f.field("SIGNAL")[:] = rng.integers(0, 1 << 16, (H, W), dtype=np.uint16)
        f.field("NEAR_IR")[:] = rng.integers(0, 1 << 16, (H, W), dtype=np.uint16)
        f.timestamp[:] = 10**9 * (k + 1) + np.arange(W) * 97656
        f.measurement_id[:] = np.arange(W)
        f.status[:] = 1
        f.frame_id = 100 + k
        back = c.LidarFrame(info)
        for p in c.frame_to_packets(f, pf, 1, 992211000123):
            b = bytes(p.buf)
            pk.write(struct.pack("<I", len(b)) + b)
            q = c.LidarPacket(pf)
            q.buf[:] = np.frombuffer(b, np.uint8)
            batcher.batch(q, back)
        for field in ("RANGE", "REFLECTIVITY", "NEAR_IR"):
            assert np.array_equal(back.field(field), f.field(field)), f"sdk {field} frame {k}"
        decoded.append(back)
with open(f"{out}/sdk.bin", "wb") as dec:
    for f in decoded:
        dec.write(np.minimum(65535, f.field("RANGE")).astype("<u2").tobytes())
        dec.write(f.field("REFLECTIVITY").astype(np.uint8).tobytes())
        dec.write(f.field("NEAR_IR").astype("<u2").tobytes())
print(H, W, pf.lidar_packet_size)
"#;

/// ouster-sdk's reading of IMU packets (u32 length + bytes each): one line per packet,
/// `accel_ts ax ay az gx gy gz` (m/s^2, rad/s).
/// ouster-sdk reads the trace's `lidar.json` (argv 1) as it reads the sensor's own metadata
/// (argv 2): the same sensor info, and a frame destaggered the same way.
const READ_LIDAR_JSON: &str = r#"
import sys, numpy as np, ouster.sdk.core as c
ours, orig = (c.SensorInfo(open(p).read()) for p in sys.argv[1:3])
assert ours.format.columns_per_frame == orig.format.columns_per_frame
assert ours.format.pixels_per_column == orig.format.pixels_per_column
assert ours.format.udp_profile_lidar == orig.format.udp_profile_lidar
for k in ("beam_altitude_angles", "beam_azimuth_angles", "lidar_to_sensor_transform"):
    assert np.array_equal(getattr(ours, k), getattr(orig, k)), k
assert np.array_equal(ours.format.pixel_shift_by_row, orig.format.pixel_shift_by_row)
frame = np.random.default_rng(3).integers(0, 1 << 16, (ours.format.pixels_per_column, ours.format.columns_per_frame), dtype=np.uint16)
assert np.array_equal(c.destagger(ours, frame), c.destagger(orig, frame))
print(ours.format.pixels_per_column, ours.format.columns_per_frame)
"#;

const IMU: &str = r#"
import struct, sys, numpy as np, ouster.sdk.core as c
info = c.SensorInfo(open(sys.argv[1]).read())
pf = c.PacketFormat.from_info(info)
data = open(sys.argv[2], "rb").read()
at = 0
while at < len(data):
    (n,) = struct.unpack_from("<I", data, at)
    q = c.ImuPacket(pf)
    q.buf[:] = np.frombuffer(data[at + 4 : at + 4 + n], np.uint8)
    at += 4 + n
    print(q.accel_ts(), *q.accel()[0].tolist(), *q.gyro()[0].tolist())
"#;

/// A helper process ended however the test ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn framed(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let n = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        out.push(bytes[at + 4..at + 4 + n].to_vec());
        at += 4 + n;
    }
    out
}

fn imu_packets() -> Vec<Imu> {
    (0..5u64)
        .map(|i| Imu {
            sys_ts: 5_000 + i,
            accel_ts: 1_000_000 * i + 7,
            gyro_ts: 1_000_000 * i + 9,
            acc: [0.25 * i as f32, -1.0, 1.0 + 0.5 * i as f32],
            avel: [10.0, -20.5 * i as f32, 0.125],
        })
        .collect()
}

fn wait_samples(d: &TestDaemon, sensor: &str, n: u64, what: &str) {
    let start = Instant::now();
    loop {
        let got = d.status()["sensors"][sensor]["samples"]
            .as_u64()
            .unwrap_or(0);
        if got >= n {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{what}: {got} of {n} samples of {sensor} within 60 s\n{}",
            d.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn profile_round_trip(profile: &str, fetch: bool) {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let shape = common::run_python(GEN, &[profile.as_ref(), dir.as_os_str(), "4".as_ref()]);
    let dims: Vec<usize> = shape
        .split_whitespace()
        .map(|s| s.parse().unwrap())
        .collect();
    let (h, w, size) = (dims[0], dims[1], dims[2]);
    let packets = framed(&std::fs::read(dir.join("packets.bin")).unwrap());
    let per_frame = packets.len() / FRAMES;
    assert_eq!(per_frame * FRAMES, packets.len());
    assert!(packets.iter().all(|p| p.len() == size));

    let (lidar_port, imu_port) = (free_udp_port(), free_udp_port());
    let mut d = TestDaemon::start(json!({}));
    let mut driver = Command::new(common::roverlog_bin());
    driver.args(["driver", "ouster", "--bind", "127.0.0.1"]);
    // The metadata from a file, or fetched over HTTP as the sensor serves it (Python's
    // http.server serving the same file at the sensor's path).
    let server = fetch.then(|| {
        let api = dir.join("www/api/v1/sensor");
        std::fs::create_dir_all(&api).unwrap();
        std::fs::copy(dir.join("metadata.json"), api.join("metadata")).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(common::python())
            .args([
                "-m",
                "http.server",
                "--bind",
                "127.0.0.1",
                &port.to_string(),
            ])
            .arg("--directory")
            .arg(dir.join("www"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "python's http.server listening on {port} within 20 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        driver.args(["--sensor-host", &format!("127.0.0.1:{port}")]);
        KillOnDrop(child)
    });
    if !fetch {
        driver.arg("--metadata").arg(dir.join("metadata.json"));
    }
    let driver = driver
        .arg("--socket")
        .arg(d.ingest_path())
        .args(["--lidar-port", &lidar_port.to_string()])
        .args(["--imu-port", &imu_port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The driver binds its ports before it says hello to the daemon.
    let start = Instant::now();
    while d.status()["sensors"]["lidar_imu"].is_null() || d.status()["sensors"]["lidar"].is_null() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the driver's sensors in the daemon within 30 s\n{}",
            d.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    for (k, frame) in packets.chunks(per_frame).enumerate() {
        for (i, p) in frame.iter().enumerate() {
            if k == CUT && (10..13).contains(&i) {
                continue;
            }
            tx.send_to(p, ("127.0.0.1", lidar_port)).unwrap();
            std::thread::sleep(Duration::from_micros(300));
        }
    }
    let imu = imu_packets();
    let mut imu_bin = Vec::new();
    for m in &imu {
        let p = m.encode();
        tx.send_to(&p, ("127.0.0.1", imu_port)).unwrap();
        imu_bin.extend((p.len() as u32).to_le_bytes());
        imu_bin.extend(p);
    }
    wait_samples(&d, "lidar", FRAMES as u64 - 1, "the complete frames");
    wait_samples(&d, "lidar_imu", imu.len() as u64, "the IMU packets");
    // SAFETY: a signal to our own child, not yet reaped.
    unsafe { libc::kill(driver.id() as i32, libc::SIGTERM) };
    let out = output_within(driver, 30, "the ouster driver after SIGTERM");
    drop(server);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let trace = d.trace_dir();
    assert!(d.stop().success(), "{}", d.log());

    // The cut frame: reported, counted, not stored.
    let missing = 3 * (w / per_frame);
    assert!(
        err.contains(&format!(
            "frame {} incomplete, {} of {w} columns: not stored (1 so far)",
            100 + CUT,
            w - missing
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{} frames complete, 1 incomplete (not stored, {missing} columns missing), 0 missing \
             entirely, 0 not packets",
            FRAMES - 1
        )),
        "{err}"
    );
    assert!(err.contains("3 of 3 durable"), "{err}");

    // The stored frames are ouster-sdk's decoding of the same packets.
    let sdk = std::fs::read(dir.join("sdk.bin")).unwrap();
    let px = h * w;
    let frame_bytes = 5 * px;
    let stored: Vec<usize> = (0..FRAMES).filter(|&k| k != CUT).collect();
    for (ch, from, len) in [
        ("rng", 0, 2 * px),
        ("rfl", 2 * px, px),
        ("nir", 3 * px, 2 * px),
    ] {
        let (ts, data) = read_sensor(&trace, "lidar", ch);
        assert_eq!(data.len(), stored.len(), "{profile} {ch}");
        for (i, &k) in stored.iter().enumerate() {
            let want = &sdk[k * frame_bytes + from..k * frame_bytes + from + len];
            assert!(
                data[i] == want,
                "{profile}: {ch} of frame {k} differs from ouster-sdk's decoding"
            );
        }
        assert!(ts.windows(2).all(|t| t[0] <= t[1]), "{ts:?}");
    }
    let t = roverlog_core::format::Trace::open(&trace).unwrap();
    let meta = t.sensor("lidar").unwrap().meta().clone();
    for (ch, ty) in [("rng", "u2"), ("rfl", "u1"), ("nir", "u2")] {
        let m = meta.get(ch).unwrap();
        assert_eq!(m.format.as_str(), "lzmaf", "{ch}");
        assert_eq!(m.dtype.to_string(), ty, "{ch}");
        assert_eq!(m.shape, vec![h, w], "{ch}");
    }

    // The sensor's metadata is the trace's lidar.json, byte for byte, beside the frames as
    // upstream's collector leaves it (the driver sent it with its hello, protocol.md 2.6)...
    assert!(!err.contains("is not written into the trace"), "{err}");
    let lidar_json = trace.join("lidar").join("lidar.json");
    assert_eq!(
        std::fs::read(&lidar_json).unwrap(),
        std::fs::read(dir.join("metadata.json")).unwrap(),
        "{profile}: the trace's lidar.json is the sensor's metadata"
    );
    // ... and readers take it: ouster-sdk as it takes the sensor's own, and our reader (what
    // `roverlog.redrover`'s lidar sensors project `points` with) builds its table from it.
    let shape = common::run_python(
        READ_LIDAR_JSON,
        &[
            lidar_json.as_os_str(),
            dir.join("metadata.json").as_os_str(),
        ],
    );
    assert_eq!(shape.trim(), format!("{h} {w}"));
    let intrinsics = roverlog_core::ouster::LidarIntrinsics::open(&lidar_json).unwrap();
    assert_eq!(
        roverlog_core::ouster::XyzLut::new(&intrinsics).shape(),
        (h, w)
    );

    // The IMU: as ouster-sdk reads the same packets.
    std::fs::write(dir.join("imu.bin"), &imu_bin).unwrap();
    let sdk_imu = common::run_python(
        IMU,
        &[
            dir.join("metadata.json").as_os_str(),
            dir.join("imu.bin").as_os_str(),
        ],
    );
    let (_, acc) = read_sensor(&trace, "lidar_imu", "acc");
    let (_, avel) = read_sensor(&trace, "lidar_imu", "avel");
    let (_, sts) = read_sensor(&trace, "lidar_imu", "sensor_ts");
    let f4 = |b: &[u8]| -> Vec<f64> {
        b.chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
            .collect()
    };
    let lines: Vec<&str> = sdk_imu.lines().collect();
    assert_eq!(lines.len(), imu.len());
    assert_eq!(acc.len(), imu.len());
    for (i, line) in lines.iter().enumerate() {
        let v: Vec<f64> = line
            .split_whitespace()
            .map(|s| s.parse().unwrap())
            .collect();
        assert_eq!(
            u64::from_le_bytes(sts[i][..8].try_into().unwrap()),
            v[0] as u64
        );
        let ours: Vec<f64> = f4(&acc[i]).into_iter().chain(f4(&avel[i])).collect();
        for (a, b) in ours.iter().zip(&v[1..]) {
            assert!(
                (a - b).abs() <= 1e-6 * b.abs().max(1.0),
                "IMU packet {i}: ours {ours:?}, ouster-sdk {v:?}"
            );
        }
    }
}

#[test]
fn rng19_frames_are_stored_as_ouster_sdk_decodes_them_and_a_cut_frame_is_counted() {
    profile_round_trip("RNG19_RFL8_SIG16_NIR16", false);
}

#[test]
fn legacy_frames_are_stored_as_ouster_sdk_decodes_them_and_a_cut_frame_is_counted() {
    // With the metadata fetched from the "sensor" over HTTP.
    profile_round_trip("LEGACY", true);
}

/// A metadata file that is not the sensor's: exit 2, naming the file and what is wrong.
#[test]
fn metadata_that_is_not_sensor_info_is_refused_naming_it() {
    let scratch = tempfile::tempdir().unwrap();
    let path = scratch.path().join("legacy.json");
    std::fs::write(
        &path,
        r#"{"lidar_mode": "1024x10", "beam_altitude_angles": []}"#,
    )
    .unwrap();
    let r = common::roverlog(&[
        "driver".as_ref(),
        "ouster".as_ref(),
        "--metadata".as_ref(),
        path.as_os_str(),
        "--socket".as_ref(),
        scratch.path().join("none.sock").as_os_str(),
    ]);
    assert_eq!(r.code, 2, "{}", r.text());
    assert!(r.text().contains("legacy.json"), "{}", r.text());
    assert!(r.text().contains("no `lidar_data_format`"), "{}", r.text());
}
