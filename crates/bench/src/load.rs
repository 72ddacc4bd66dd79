//! A load generator that speaks the ingest protocol: N synthetic sensors, each on its own
//! connection and thread, sending as fast as the daemon takes them.
//!
//! Frames are built once per sensor and only their timestamp and sequence number are patched
//! before each `write()`, so the client costs little next to the daemon it measures.
//! Timing starts when every sensor's hello has been answered and ends when each sensor's
//! final durability request is answered: a figure is for samples *on disk*, not samples
//! accepted into buffers.

use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::Throughput;
use crate::error::{Error, Result, SpecProblem};
use roverlog_client::Driver;
use roverlog_core::format::{ChannelFormat, ChannelMeta, DType, SensorMeta};

/// How long to wait for any one reply (a final fsync of a large backlog can be slow).
const REPLY_TIMEOUT: Duration = Duration::from_secs(120);

/// What each synthetic sensor sends. Every workload declares `"seq": true`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workload {
    /// IMU-like: `acc` and `gyro`, `raw` `f4` `[3]`; 44-byte frames, one `write()` each.
    /// The per-sample overhead case.
    Imu,
    /// The same frames, `per_write` of them in each `write()` (how a sensible high-rate
    /// driver sends).
    ImuBatched { per_write: usize },
    /// One `raw` `u1` channel of `bytes` per sample (radar cubes, lidar images), one
    /// `write()` per frame. The bandwidth case.
    Large { bytes: usize },
    /// Lidar-like: one `rng` channel, `raw` `u2` `[bytes / 2]`, a smooth range image with 4
    /// bits of noise (compresses about 1.6x with `.xz` preset 0, like the frames in
    /// `benches/lzma_codec.rs`), one `write()` per frame. Store it as `lzmaf` (config
    /// `formats`) to measure compression.
    Lidar { bytes: usize },
    /// One `jpg` channel whose sample sizes spread over `[min_bytes, max_bytes]`: the
    /// variable-size path, one file per sample on the daemon's side.
    Blob { min_bytes: usize, max_bytes: usize },
}

/// A load to put on a daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadSpec {
    /// Concurrent sensors (one connection and one thread each).
    pub sensors: usize,
    pub workload: Workload,
    /// Samples each sensor sends.
    pub samples_per_sensor: u64,
    /// Sensor names are `<prefix><index>`, e.g. `bench0`, `bench1`.
    pub prefix: String,
    /// Also ask for durability every this many samples (0: only once, at the end).
    pub sync_every: u64,
}

impl LoadSpec {
    /// `sensors` sensors of `workload`, `samples_per_sensor` each, synced only at the end.
    pub fn new(sensors: usize, workload: Workload, samples_per_sensor: u64) -> LoadSpec {
        LoadSpec {
            sensors,
            workload,
            samples_per_sensor,
            prefix: "bench".into(),
            sync_every: 0,
        }
    }
}

/// What one sensor did.
#[derive(Debug, Clone, PartialEq)]
pub struct SensorReport {
    pub sensor: String,
    /// `samples` from the hello reply (non-zero when the sensor already existed).
    pub resumed_from: u64,
    /// Samples sent on this connection.
    pub samples: u64,
    /// Wire bytes sent after the hello (framing included).
    pub bytes: u64,
    /// `durable` from the final reply.
    pub durable: u64,
    /// From the common start until the final durable reply.
    pub elapsed: Duration,
}

/// The result of [`drive`].
#[derive(Debug, Clone, PartialEq)]
pub struct LoadReport {
    /// All sensors together, from the common start until the last durable reply.
    pub total: Throughput,
    pub sensors: Vec<SensorReport>,
}

/// Connects `spec.sensors` sensors to the ingest socket at `socket`, sends the load, asks
/// for durability, and reports throughput. Fails when any sensor is refused or the final
/// `durable` count does not cover what was sent.
pub fn drive(socket: &Path, spec: &LoadSpec) -> Result<LoadReport> {
    if spec.sensors == 0 {
        return Err(Error::Spec(SpecProblem::NoSensor));
    }
    check_workload(&spec.workload)?;
    // Everyone connects and says hello first; the clock starts when all are ready.
    let barrier = Arc::new(Barrier::new(spec.sensors + 1));
    let mut handles = Vec::with_capacity(spec.sensors);
    for i in 0..spec.sensors {
        let name = format!("{}{i}", spec.prefix);
        let socket = socket.to_path_buf();
        let spec = spec.clone();
        let barrier = Arc::clone(&barrier);
        handles.push(std::thread::spawn(move || {
            run_sensor(&socket, &name, &spec, &barrier)
        }));
    }
    barrier.wait();
    let start = Instant::now();
    let mut sensors = Vec::with_capacity(spec.sensors);
    let mut first_err = None;
    for h in handles {
        match h.join().expect("bench sensor thread panicked") {
            Ok((report, end)) => sensors.push(SensorReport {
                elapsed: end.saturating_duration_since(start),
                ..report
            }),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    let elapsed = sensors.iter().map(|s| s.elapsed).max().unwrap_or_default();
    let total = Throughput {
        name: format!(
            "ingest {} x {}",
            spec.sensors,
            workload_name(&spec.workload)
        ),
        bytes: sensors.iter().map(|s| s.bytes).sum(),
        samples: sensors.iter().map(|s| s.samples).sum(),
        elapsed,
    };
    Ok(LoadReport { total, sensors })
}

/// A short name for a workload, used in reports.
pub fn workload_name(w: &Workload) -> String {
    match w {
        Workload::Imu => "imu (1 frame/write)".into(),
        Workload::ImuBatched { per_write } => format!("imu ({per_write} frames/write)"),
        Workload::Large { bytes } => format!("raw {bytes} B frames"),
        Workload::Lidar { bytes } => format!("lidar {bytes} B frames"),
        Workload::Blob {
            min_bytes,
            max_bytes,
        } => format!("jpg {min_bytes}-{max_bytes} B"),
    }
}

fn check_workload(w: &Workload) -> Result<()> {
    let bad = |problem| Err(Error::Spec(problem));
    match *w {
        Workload::ImuBatched { per_write: 0 } => bad(SpecProblem::PerWrite),
        Workload::Large { bytes: 0 } => bad(SpecProblem::LargeEmpty),
        Workload::Lidar { bytes } if bytes == 0 || bytes % 2 == 1 => {
            bad(SpecProblem::LidarBytes { bytes })
        }
        Workload::Blob {
            min_bytes,
            max_bytes,
        } if min_bytes > max_bytes || max_bytes == 0 => bad(SpecProblem::BlobBytes {
            min_bytes,
            max_bytes,
        }),
        _ => Ok(()),
    }
}

/// The hello for a workload.
/// The channels each workload declares (`ts` is implicit).
fn meta(w: &Workload) -> SensorMeta {
    let ch = |name: &str, format: ChannelFormat, dtype: DType, shape: Vec<usize>, desc: &str| {
        (
            name.to_string(),
            ChannelMeta::new(format, dtype, shape, desc),
        )
    };
    let channels = match *w {
        Workload::Imu | Workload::ImuBatched { .. } => vec![
            ch("acc", ChannelFormat::Raw, DType::F4, vec![3], "m/s^2"),
            ch("gyro", ChannelFormat::Raw, DType::F4, vec![3], "rad/s"),
        ],
        Workload::Large { bytes } => vec![ch(
            "data",
            ChannelFormat::Raw,
            DType::U1,
            vec![bytes],
            "bench",
        )],
        Workload::Lidar { bytes } => vec![ch(
            "rng",
            ChannelFormat::Raw,
            DType::U2,
            vec![bytes / 2],
            "mm",
        )],
        Workload::Blob { .. } => vec![ch(
            "img",
            ChannelFormat::Blob("jpg".into()),
            DType::U1,
            vec![480, 640, 3],
            "bench",
        )],
    };
    SensorMeta { channels }
}

/// Bytes after `len` and before the channels: ts + seq.
const HEAD: usize = 8 + 8;

/// Frames of one sensor, built once and patched per sample.
struct FrameBuilder {
    /// `count` frames back to back (IMU batches), or one frame of the largest size (blobs).
    buf: Vec<u8>,
    /// Bytes of one fixed-size frame (`len` field included); 0 for blobs.
    frame: usize,
    workload: Workload,
}

impl FrameBuilder {
    fn new(w: &Workload) -> FrameBuilder {
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        match *w {
            Workload::Imu | Workload::ImuBatched { .. } => {
                let per = match *w {
                    Workload::ImuBatched { per_write } => per_write,
                    _ => 1,
                };
                let body = HEAD + 24;
                let mut one = Vec::with_capacity(4 + body);
                one.extend_from_slice(&(body as u32).to_le_bytes());
                one.extend_from_slice(&[0; HEAD]);
                for v in [0.1f32, -0.2, 9.81, 0.01, -0.02, 0.0] {
                    one.extend_from_slice(&v.to_le_bytes());
                }
                FrameBuilder {
                    buf: one.repeat(per),
                    frame: one.len(),
                    workload: w.clone(),
                }
            }
            Workload::Large { bytes } => {
                let mut buf = Vec::with_capacity(4 + HEAD + bytes);
                buf.extend_from_slice(&((HEAD + bytes) as u32).to_le_bytes());
                buf.extend_from_slice(&[0; HEAD]);
                buf.resize(4 + HEAD + bytes, 0);
                rng.fill(&mut buf[4 + HEAD..]);
                FrameBuilder {
                    frame: buf.len(),
                    buf,
                    workload: w.clone(),
                }
            }
            Workload::Lidar { bytes } => {
                let mut buf = Vec::with_capacity(4 + HEAD + bytes);
                buf.extend_from_slice(&((HEAD + bytes) as u32).to_le_bytes());
                buf.extend_from_slice(&[0; HEAD]);
                for i in 0..bytes / 2 {
                    let (row, col) = ((i / 1024) as f64, (i % 1024) as f64);
                    let base = 4000.0 + 3000.0 * (col / 90.0 + row / 20.0).sin();
                    let noise = (rng.next() >> 60) as f64 - 8.0;
                    buf.extend_from_slice(&((base + noise) as u16).to_le_bytes());
                }
                FrameBuilder {
                    frame: buf.len(),
                    buf,
                    workload: w.clone(),
                }
            }
            Workload::Blob { max_bytes, .. } => {
                let mut buf = vec![0; 4 + HEAD + 4 + max_bytes];
                rng.fill(&mut buf[4 + HEAD + 4..]);
                FrameBuilder {
                    buf,
                    frame: 0,
                    workload: w.clone(),
                }
            }
        }
    }

    /// Frames per `write()`.
    fn per_write(&self) -> usize {
        match self.workload {
            Workload::ImuBatched { per_write } => per_write,
            _ => 1,
        }
    }

    /// Fills in `n` frames starting at sequence number `seq`; returns the bytes to write.
    fn frames(&mut self, seq: u64, n: usize) -> &[u8] {
        let ts = now();
        if let Workload::Blob {
            min_bytes,
            max_bytes,
        } = self.workload
        {
            // Sizes spread over the range without a pattern the daemon could benefit from.
            let span = (max_bytes - min_bytes + 1) as u64;
            let size = min_bytes + (seq.wrapping_mul(0x9e37_79b9) % span) as usize;
            let len = HEAD + 4 + size;
            self.buf[0..4].copy_from_slice(&(len as u32).to_le_bytes());
            self.buf[4..12].copy_from_slice(&ts.to_le_bytes());
            self.buf[12..20].copy_from_slice(&seq.to_le_bytes());
            self.buf[20..24].copy_from_slice(&(size as u32).to_le_bytes());
            return &self.buf[..4 + len];
        }
        for k in 0..n {
            let at = k * self.frame;
            self.buf[at + 4..at + 12].copy_from_slice(&ts.to_le_bytes());
            self.buf[at + 12..at + 20].copy_from_slice(&(seq + k as u64).to_le_bytes());
        }
        &self.buf[..n * self.frame]
    }
}

/// One sensor's session; returns its report and when its final reply arrived.
fn run_sensor(
    socket: &Path,
    sensor: &str,
    spec: &LoadSpec,
    barrier: &Barrier,
) -> Result<(SensorReport, Instant)> {
    // Whatever happens, release the barrier once so `drive` never waits forever.
    let mut barrier = Some(barrier);
    let result = session(socket, sensor, spec, &mut barrier);
    if let Some(b) = barrier.take() {
        b.wait();
    }
    result
}

fn session(
    socket: &Path,
    sensor: &str,
    spec: &LoadSpec,
    barrier: &mut Option<&Barrier>,
) -> Result<(SensorReport, Instant)> {
    let (mut driver, hello) = Driver::connect(socket, sensor, &meta(&spec.workload), true)?;
    driver.set_reply_timeout(REPLY_TIMEOUT)?;
    let resumed_from = hello.samples;

    let mut frames = FrameBuilder::new(&spec.workload);
    let per_write = frames.per_write() as u64;
    if let Some(b) = barrier.take() {
        b.wait();
    }

    let (mut sent, mut bytes) = (0u64, 0u64);
    let mut next_sync = if spec.sync_every > 0 {
        spec.sync_every
    } else {
        u64::MAX
    };
    while sent < spec.samples_per_sensor {
        let n = per_write.min(spec.samples_per_sensor - sent);
        let buf = frames.frames(resumed_from + sent, n as usize);
        driver.send_encoded(buf, n)?;
        sent += n;
        bytes += buf.len() as u64;
        if sent >= next_sync {
            driver.sync()?;
            bytes += 4;
            next_sync = next_sync.saturating_add(spec.sync_every);
        }
    }
    let durable = driver.sync()?;
    let end = Instant::now();
    bytes += 4;
    if durable < resumed_from + sent {
        return Err(Error::NotDurable {
            sensor: sensor.to_string(),
            durable,
            sent,
            resumed_from,
        });
    }
    Ok((
        SensorReport {
            sensor: sensor.to_string(),
            resumed_from,
            samples: sent,
            bytes,
            durable,
            elapsed: Duration::ZERO,
        },
        end,
    ))
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Cheap deterministic filler bytes (incompressible enough to be honest).
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let x = self.next();
            chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use std::collections::BTreeMap;
    use std::io::Read;
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::net::UnixListener;
    use std::os::unix::net::UnixStream;
    use std::path::PathBuf;
    use std::sync::Mutex;

    /// What the fake daemon saw of one sensor.
    #[derive(Debug, Default, Clone, PartialEq)]
    struct Seen {
        frames: u64,
        payload: u64,
        syncs: u64,
    }

    /// How the fake daemon behaves.
    #[derive(Clone, Copy)]
    enum Fake {
        Ok,
        /// Every sensor already has this many samples.
        Resume(u64),
        RefuseHello,
        /// Refuse the frame with this index.
        RefuseFrame(u64),
    }

    /// A minimal ingest server: parses the hello, checks every frame against it (len, seq
    /// increasing by one, variable-size lengths), answers durability requests.
    fn fake_daemon(
        dir: &Path,
        connections: usize,
        mode: Fake,
    ) -> (PathBuf, std::thread::JoinHandle<BTreeMap<String, Seen>>) {
        let path = dir.join("ingest.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let handle = std::thread::spawn(move || {
            let seen = Arc::new(Mutex::new(BTreeMap::new()));
            let mut conns = Vec::new();
            for _ in 0..connections {
                let (stream, _) = listener.accept().unwrap();
                let seen = Arc::clone(&seen);
                conns.push(std::thread::spawn(move || serve(stream, mode, &seen)));
            }
            for c in conns {
                c.join().unwrap();
            }
            let seen = seen.lock().unwrap().clone();
            seen
        });
        (path, handle)
    }

    fn serve(stream: UnixStream, mode: Fake, seen: &Mutex<BTreeMap<String, Seen>>) {
        let mut out = stream.try_clone().unwrap();
        let mut r = BufReader::new(stream);
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let hello: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(hello["roverlog"], 1);
        assert_eq!(hello["seq"], true);
        let sensor = hello["sensor"].as_str().unwrap().to_string();
        // (fixed size in bytes, or None for variable) per channel
        let chans: Vec<Option<u64>> = hello["channels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let item = match c["type"].as_str().unwrap() {
                    "u1" => 1,
                    "u2" => 2,
                    "f4" => 4,
                    t => panic!("type {t}"),
                };
                let n: u64 = c["shape"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d.as_u64().unwrap())
                    .product();
                (c["format"] == "raw").then_some(n * item)
            })
            .collect();
        let reply = |out: &mut UnixStream, v: Value| {
            let mut b = serde_json::to_vec(&v).unwrap();
            b.push(b'\n');
            out.write_all(&b).unwrap();
        };
        let base = match mode {
            Fake::RefuseHello => {
                reply(
                    &mut out,
                    json!({"ok": false, "error": "channel \"acc\": no"}),
                );
                return;
            }
            Fake::Resume(n) => n,
            _ => 0,
        };
        reply(&mut out, json!({"ok": true, "trace": "t", "samples": base}));
        let mut s = Seen::default();
        loop {
            let mut len = [0u8; 4];
            if r.read_exact(&mut len).is_err() {
                break; // EOF at a frame boundary: normal end
            }
            let len = u32::from_le_bytes(len) as usize;
            if len == 0 {
                s.syncs += 1;
                reply(&mut out, json!({"ok": true, "durable": base + s.frames}));
                continue;
            }
            let mut body = vec![0; len];
            r.read_exact(&mut body).unwrap();
            if let Fake::RefuseFrame(k) = mode {
                if s.frames == k {
                    reply(
                        &mut out,
                        json!({"ok": false, "error": format!("frame {k}: bad")}),
                    );
                    break;
                }
            }
            let seq = u64::from_le_bytes(body[8..16].try_into().unwrap());
            assert_eq!(seq, base + s.frames, "{sensor}: seq");
            let ts = f64::from_le_bytes(body[0..8].try_into().unwrap());
            assert!(ts > 1.6e9, "{sensor}: ts {ts}");
            let mut at = 16;
            for c in &chans {
                let n = match c {
                    Some(n) => *n as usize,
                    None => {
                        let n = u32::from_le_bytes(body[at..at + 4].try_into().unwrap());
                        at += 4;
                        n as usize
                    }
                };
                at += n;
                s.payload += n as u64;
            }
            assert_eq!(at, len, "{sensor}: len does not match the channels");
            s.frames += 1;
        }
        seen.lock().unwrap().insert(sensor, s);
    }

    fn run(spec: &LoadSpec, mode: Fake) -> (Result<LoadReport>, BTreeMap<String, Seen>) {
        let dir = tempfile::tempdir().unwrap();
        let (sock, fake) = fake_daemon(dir.path(), spec.sensors, mode);
        let report = drive(&sock, spec);
        (report, fake.join().unwrap())
    }

    #[test]
    fn imu_one_frame_per_write() {
        let spec = LoadSpec::new(3, Workload::Imu, 500);
        let (report, seen) = run(&spec, Fake::Ok);
        let report = report.unwrap();
        assert_eq!(report.total.samples, 1500);
        // 44-byte frames plus one 4-byte durability request per sensor.
        assert_eq!(report.total.bytes, 3 * (500 * 44 + 4));
        for i in 0..3 {
            let s = &seen[&format!("bench{i}")];
            assert_eq!((s.frames, s.payload, s.syncs), (500, 500 * 24, 1));
        }
        assert!(report.sensors.iter().all(|s| s.durable == 500));
    }

    #[test]
    fn imu_batched_with_periodic_syncs() {
        let mut spec = LoadSpec::new(2, Workload::ImuBatched { per_write: 64 }, 1000);
        spec.sync_every = 300;
        let (report, seen) = run(&spec, Fake::Ok);
        let report = report.unwrap();
        assert_eq!(report.total.samples, 2000);
        for s in seen.values() {
            // synced after 320, 640, 960 (batch boundaries) and at the end
            assert_eq!((s.frames, s.syncs), (1000, 4));
        }
    }

    #[test]
    fn large_fixed_frames() {
        let spec = LoadSpec::new(2, Workload::Large { bytes: 3 << 20 }, 4);
        let (report, seen) = run(&spec, Fake::Ok);
        let report = report.unwrap();
        assert_eq!(report.total.samples, 8);
        assert!(seen.values().all(|s| s.payload == 4 * (3 << 20)));
        assert!(report.total.mb_per_sec() > 0.0);
    }

    #[test]
    fn lidar_frames_are_u2_images_that_compress() {
        let bytes = 64 * 1024 * 2;
        let spec = LoadSpec::new(1, Workload::Lidar { bytes }, 3);
        let (report, seen) = run(&spec, Fake::Ok);
        assert_eq!(report.unwrap().total.samples, 3);
        assert_eq!(seen["bench0"].payload, 3 * bytes as u64);
        let frame = FrameBuilder::new(&Workload::Lidar { bytes });
        let image = &frame.buf[4 + HEAD..];
        let packed = roverlog_core::format::lzma::compress(image, 0);
        assert!(
            packed.len() < image.len() * 3 / 4,
            "{} of {}",
            packed.len(),
            image.len()
        );
        assert!(drive(
            Path::new("/x"),
            &LoadSpec::new(1, Workload::Lidar { bytes: 3 }, 1)
        )
        .is_err());
    }

    #[test]
    fn variable_size_blobs() {
        let w = Workload::Blob {
            min_bytes: 1 << 20,
            max_bytes: 6 << 20,
        };
        let (report, seen) = run(&LoadSpec::new(1, w, 6), Fake::Ok);
        report.unwrap();
        let s = &seen["bench0"];
        assert_eq!(s.frames, 6);
        assert!(s.payload >= 6 << 20 && s.payload <= 36 << 20, "{s:?}");
    }

    #[test]
    fn resumed_sensor_continues_its_count() {
        let (report, seen) = run(&LoadSpec::new(1, Workload::Imu, 10), Fake::Resume(90));
        let r = &report.unwrap().sensors[0];
        assert_eq!((r.resumed_from, r.samples, r.durable), (90, 10, 100));
        assert_eq!(seen["bench0"].frames, 10);
    }

    #[test]
    fn a_refused_hello_is_reported_with_the_daemons_message() {
        let (report, _) = run(&LoadSpec::new(2, Workload::Imu, 10), Fake::RefuseHello);
        let msg = report.unwrap_err().to_string();
        assert!(msg.contains("channel \"acc\": no"), "{msg}");
    }

    #[test]
    fn a_refused_frame_fails_the_run() {
        let spec = LoadSpec::new(1, Workload::Large { bytes: 1 << 20 }, 50);
        let (report, seen) = run(&spec, Fake::RefuseFrame(3));
        let msg = report.unwrap_err().to_string();
        assert!(msg.contains("frame 3: bad"), "{msg}");
        assert_eq!(seen["bench0"].frames, 3);
    }

    #[test]
    fn nonsense_specs_are_refused_before_connecting() {
        let nowhere = Path::new("/nonexistent/ingest.sock");
        assert!(drive(nowhere, &LoadSpec::new(0, Workload::Imu, 1)).is_err());
        let w = Workload::ImuBatched { per_write: 0 };
        let err = drive(nowhere, &LoadSpec::new(1, w, 1)).unwrap_err();
        assert!(matches!(err, Error::Spec(_)), "{err}");
    }
}
