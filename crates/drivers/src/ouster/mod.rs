//! The Ouster lidar driver: the sensor's UDP lidar packets assembled into frames by frame id
//! ([`scan`]) and stored as upstream's collector stores them: channels `rng` (u2, range in mm
//! clipped to 65535), `rfl` (u1, reflectivity), `nir` (u2, near-infrared), each `lzmaf`, shape
//! `[beams, columns]`, staggered (column `c` is measurement `c`, as ouster-sdk's
//! `LidarScan.field` gives them); `ts` is the host's epoch time at the frame's first packet.
//! Only complete frames are stored; incomplete ones are counted and reported ([`scan`]). The
//! IMU packets go to a sensor of their own ([`imu`]).
//!
//! The sensor's metadata (`sensor_info` JSON, [`metadata`]) gives the packet layout; it is
//! what upstream writes as the sensor's `lidar.json`, and the driver sends it with its hello
//! as that sidecar file (docs/protocol.md 2.6), so the daemon writes it, byte for byte, into
//! the sensor's directory of every trace before the frames. Two threads: one reads the lidar port
//! (a large receive buffer, [`udp`]) and assembles frames, handing them to the sending thread
//! through a bounded queue (a daemon that stalls costs frames, counted, never packets of the
//! frames after it); the IMU port has its own thread and connection.

pub mod imu;
pub mod metadata;
pub mod packet;
pub mod scan;
#[cfg(test)]
mod tests;
pub mod udp;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use roverlog_client::sidecar::MAX_FILES_BYTES;
use roverlog_client::{ResilientDriver, ResilientOptions, SidecarFile};
use roverlog_core::format::{ChannelFormat, ChannelMeta, DType, SensorMeta};

pub use metadata::{Metadata, MetadataError};
pub use packet::{Images, Layout, PacketError, Profile};
pub use scan::{Assembler, Counts, Finished};

/// The metadata's name in the sensor's directory, as upstream's collector writes it.
pub const LIDAR_JSON: &str = "lidar.json";

/// How often a blocked read looks at the stop flag.
const POLL: Duration = Duration::from_millis(200);
/// How long the sensor may pause (no packet at all) before the frame it was sending is
/// finished as it is: ten frame periods at 10 Hz, so that a sender stalled for a moment (a
/// loaded host replaying packets) does not cut a frame whose packets are still coming.
const EXPIRE: Duration = Duration::from_secs(1);

/// What [`run`] needs.
#[derive(Debug, Clone)]
pub struct OusterOptions {
    pub socket: PathBuf,
    pub sensor: String,
    /// The IMU's sensor name; None: the IMU port is not read.
    pub imu_sensor: Option<String>,
    /// The address the ports are bound on (the sensor sends to this host).
    pub bind: IpAddr,
    pub lidar_port: u16,
    pub imu_port: u16,
    /// The receive buffer asked for, bytes.
    pub rcvbuf: usize,
    /// Frames waiting for the daemon; one more is dropped and counted.
    pub queue_frames: usize,
    /// The sensor sending nothing this long ends the driver (exit code 3).
    pub stall_timeout: Duration,
    pub max_delay: Duration,
    pub sync_every: Duration,
    pub stop_timeout: Duration,
    pub client: ResilientOptions,
}

impl OusterOptions {
    pub fn new(socket: PathBuf, sensor: &str) -> Self {
        OusterOptions {
            socket,
            sensor: sensor.to_string(),
            imu_sensor: Some(format!("{sensor}_imu")),
            bind: IpAddr::from([0, 0, 0, 0]),
            lidar_port: 7502,
            imu_port: 7503,
            rcvbuf: 32 << 20,
            queue_frames: 32,
            stall_timeout: Duration::from_secs(30),
            max_delay: Duration::from_millis(50),
            sync_every: Duration::from_secs(1),
            stop_timeout: Duration::from_secs(10),
            client: ResilientOptions::default(),
        }
    }
}

/// Why the driver stopped before the end it was asked for.
#[derive(Debug, thiserror::Error)]
pub enum OusterError {
    #[error(transparent)]
    Udp(#[from] udp::UdpError),
    #[error("UDP {addr}: {error}")]
    Recv {
        addr: SocketAddr,
        error: std::io::Error,
    },
    #[error("the sensor sent nothing to UDP {addr} for {waited:?}")]
    Silent { addr: SocketAddr, waited: Duration },
    #[error("the daemon ({sensor}): {error}")]
    Daemon {
        sensor: String,
        error: roverlog_client::Error,
    },
    #[error("{sensor}: after {waited:?}, {durable} of {expected} samples were durable")]
    NotDurable {
        sensor: String,
        waited: Duration,
        durable: u64,
        expected: u64,
    },
    #[error("starting the {what} thread: {error}")]
    Thread {
        what: &'static str,
        error: std::io::Error,
    },
}

/// Whether the `n`-th of a kind of trouble is reported: the first ten, then every hundredth
/// (a broken sensor does not flood the journal; the counters count every one).
fn often(n: u64) -> bool {
    n <= 10 || n.is_multiple_of(100)
}

/// What the driver hears while it runs (the command prints them): every capped buffer; of
/// incomplete frames and bad datagrams the first ten, then every hundredth.
#[derive(Debug)]
pub enum Event {
    /// The kernel gave the lidar or IMU socket less receive buffer than asked.
    RcvbufCapped {
        addr: SocketAddr,
        asked: usize,
        got: usize,
        rmem_max: u64,
    },
    /// A frame with columns missing: not stored. `count` is the incomplete frames so far.
    Incomplete {
        frame_id: u16,
        columns: usize,
        expected: usize,
        count: u64,
    },
    /// A datagram that was not a lidar packet of the metadata's layout (`count` so far).
    BadPacket { error: PacketError, count: u64 },
    /// A datagram on the IMU port that was not an IMU packet.
    BadImu {
        error: imu::ImuPacketSize,
        count: u64,
    },
    /// The metadata does not go into the trace as [`LIDAR_JSON`]: keep the file with it.
    NoLidarJson(NoLidarJson),
}

/// Why the trace gets no `lidar.json` from the driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoLidarJson {
    /// Over what a hello's files may hold.
    TooLarge { bytes: usize, max: usize },
    /// The daemon predates sidecar files (it refused the hello's `files`).
    DaemonTooOld,
}

/// The lidar's counts, what reached the daemon, and how the stream ended.
#[derive(Debug, Default)]
pub struct OusterReport {
    pub counts: Counts,
    /// Complete frames dropped because the daemon fell behind (the queue was full).
    pub queue_full: u64,
    /// Frames sent to the daemon.
    pub frames: u64,
    pub durable: u64,
    pub expected: u64,
    pub imu: Option<ImuReport>,
    /// None when told to stop.
    pub ended: Option<OusterError>,
}

/// The IMU's counts.
#[derive(Debug, Default)]
pub struct ImuReport {
    pub packets: u64,
    pub bad: u64,
    pub durable: u64,
    pub expected: u64,
    pub ended: Option<OusterError>,
}

/// The lidar sensor's channels for frames of `layout`.
pub fn sensor_meta(layout: &Layout) -> SensorMeta {
    let shape = vec![layout.pixels_per_column, layout.columns_per_frame];
    let ch = |dtype, desc| ChannelMeta::new(ChannelFormat::Lzmaf, dtype, shape.clone(), desc);
    SensorMeta {
        channels: vec![
            ("ts".into(), ChannelMeta::timestamps()),
            ("rng".into(), ch(DType::U2, "Range, in millimeters")),
            ("rfl".into(), ch(DType::U1, "Object NIR reflectivity")),
            ("nir".into(), ch(DType::U2, "Near infrared ambient photons")),
        ],
    }
}

/// What the receiving thread hands the sending one.
pub enum Msg {
    Frame { ts: f64, images: Images },
    Event(Event),
}

fn daemon_err(sensor: &str) -> impl Fn(roverlog_client::Error) -> OusterError + '_ {
    move |error| OusterError::Daemon {
        sensor: sensor.to_string(),
        error,
    }
}

/// Runs until `stop` is set or the sensor goes silent; `on_event` hears what goes wrong on
/// the way. The daemon is reached before the first packet is read.
pub fn run(
    opts: &OusterOptions,
    meta: &Metadata,
    stop: Arc<AtomicBool>,
    on_event: &mut dyn FnMut(&Event),
) -> Result<OusterReport, OusterError> {
    let lidar_addr = SocketAddr::new(opts.bind, opts.lidar_port);
    let lidar = udp::open(lidar_addr, opts.rcvbuf, POLL)?;
    capped(lidar_addr, opts.rcvbuf, &lidar, on_event);
    let imu_sock = match &opts.imu_sensor {
        Some(_) => {
            let addr = SocketAddr::new(opts.bind, opts.imu_port);
            let s = udp::open(addr, 1 << 20, POLL)?;
            capped(addr, 1 << 20, &s, on_event);
            Some((addr, s.socket))
        }
        None => None,
    };
    let mut client = opts.client.clone();
    if meta.text.len() <= MAX_FILES_BYTES {
        client.files = vec![SidecarFile::new(LIDAR_JSON, meta.text.clone())];
    } else {
        on_event(&Event::NoLidarJson(NoLidarJson::TooLarge {
            bytes: meta.text.len(),
            max: MAX_FILES_BYTES,
        }));
    }
    let mut d = ResilientDriver::connect(
        &opts.socket,
        &opts.sensor,
        sensor_meta(&meta.layout),
        false,
        &client,
    )
    .map_err(daemon_err(&opts.sensor))?;
    if !client.files.is_empty() && !d.files_taken() {
        on_event(&Event::NoLidarJson(NoLidarJson::DaemonTooOld));
    }
    let (tx, rx) = sync_channel(opts.queue_frames);
    let (imu_tx, imu_rx) = sync_channel(64);
    std::thread::scope(|s| {
        let receiver = std::thread::Builder::new()
            .name("ouster-lidar".into())
            .spawn_scoped(s, || {
                receive(
                    lidar.socket,
                    lidar_addr,
                    Assembler::new(meta.layout),
                    opts.stall_timeout,
                    &stop,
                    tx,
                )
            })
            .map_err(|error| OusterError::Thread {
                what: "lidar",
                error,
            })?;
        let imu = match (imu_sock, &opts.imu_sensor) {
            (Some((addr, sock)), Some(name)) => Some(
                std::thread::Builder::new()
                    .name("ouster-imu".into())
                    .spawn_scoped(s, {
                        let stop = &stop;
                        move || imu_loop(opts, name, sock, addr, stop, imu_tx)
                    })
                    .map_err(|error| {
                        // The lidar thread runs until told: the scope waits for it.
                        stop.store(true, Ordering::Relaxed);
                        OusterError::Thread { what: "imu", error }
                    })?,
            ),
            _ => None,
        };
        let mut report = OusterReport::default();
        let sent = send_frames(opts, &mut d, &rx, &imu_rx, &mut report, on_event);
        // Whatever happened to the daemon, the threads are told to stop and joined.
        stop.store(true, Ordering::Relaxed);
        let (counts, queue_full, ended) = receiver.join().expect("the lidar thread panicked");
        drop(rx);
        let imu_report = imu.map(|h| h.join().expect("the IMU thread panicked"));
        for m in imu_rx.try_iter() {
            on_event(&m);
        }
        sent?;
        (report.counts, report.queue_full, report.imu) = (counts, queue_full, imu_report);
        report.ended = ended;
        let (durable, expected) = finish(&mut d, &opts.sensor, opts.stop_timeout)?;
        (report.durable, report.expected) = (durable, expected);
        Ok(report)
    })
}

fn capped(addr: SocketAddr, asked: usize, s: &udp::Opened, on_event: &mut dyn FnMut(&Event)) {
    if let Some(rmem_max) = s.capped_at {
        on_event(&Event::RcvbufCapped {
            addr,
            asked,
            got: s.rcvbuf / 2,
            rmem_max,
        });
    }
}

/// The sending side: frames (and events) from the receiver to the daemon until the receiver
/// hangs up; IMU events are passed on as they come.
fn send_frames(
    opts: &OusterOptions,
    d: &mut ResilientDriver,
    rx: &Receiver<Msg>,
    imu_events: &Receiver<Event>,
    report: &mut OusterReport,
    on_event: &mut dyn FnMut(&Event),
) -> Result<(), OusterError> {
    let err = daemon_err(&opts.sensor);
    let mut last_sync = Instant::now();
    loop {
        match rx.recv_timeout(POLL) {
            Ok(Msg::Frame { ts, images }) => {
                let samples: [&[u8]; 3] =
                    [as_bytes(&images.rng), &images.rfl, as_bytes(&images.nir)];
                d.send(ts, None, &samples).map_err(&err)?;
                report.frames += 1;
            }
            Ok(Msg::Event(e)) => on_event(&e),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Ok(()),
        }
        for e in imu_events.try_iter() {
            on_event(&e);
        }
        if d.oldest_pending()
            .is_some_and(|t| t.elapsed() >= opts.max_delay)
        {
            d.flush().map_err(&err)?;
        }
        if last_sync.elapsed() >= opts.sync_every {
            d.sync().map_err(&err)?;
            last_sync = Instant::now();
        }
    }
}

/// u16 pixels as the little-endian bytes the channel holds.
fn as_bytes(v: &[u16]) -> &[u8] {
    #[cfg(target_endian = "big")]
    compile_error!("the lidar images are sent in host order, which must be little-endian");
    // SAFETY: u16 has no padding and alignment 2 >= 1; the length covers the same memory.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}

/// The receiving thread's work (also the benchmark's): datagrams into frames until `stop` is
/// set, the sensor is silent for `stall`, or `tx`'s receiver hangs up. Returns the counts, the
/// complete frames the full queue dropped, and why it ended.
pub fn receive(
    sock: std::net::UdpSocket,
    addr: SocketAddr,
    mut asm: Assembler,
    stall: Duration,
    stop: &AtomicBool,
    tx: SyncSender<Msg>,
) -> (Counts, u64, Option<OusterError>) {
    let mut buf = vec![0u8; 65536];
    let mut done = Vec::new();
    let mut queue_full = 0u64;
    let mut incomplete_seen = 0u64;
    let mut last = Instant::now();
    let ended = loop {
        if stop.load(Ordering::Relaxed) {
            break None;
        }
        match sock.recv(&mut buf) {
            Ok(n) => {
                last = Instant::now();
                if let Err(error) = asm.push(&buf[..n], crate::epoch_now(), &mut done) {
                    let count = asm.counts.bad_packets;
                    if often(count) {
                        // A full queue loses the report, never a frame; the count stays.
                        let _ = tx.try_send(Msg::Event(Event::BadPacket { error, count }));
                    }
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                if last.elapsed() >= EXPIRE {
                    done.extend(asm.expire());
                }
                if last.elapsed() >= stall {
                    break Some(OusterError::Silent {
                        addr,
                        waited: last.elapsed(),
                    });
                }
            }
            Err(error) => break Some(OusterError::Recv { addr, error }),
        }
        for f in done.drain(..) {
            let msg = match f {
                Finished::Complete { ts, images, .. } => Msg::Frame { ts, images },
                Finished::Incomplete {
                    frame_id,
                    columns,
                    expected,
                } => {
                    // Every incomplete frame is counted; only some are reported.
                    incomplete_seen += 1;
                    if !often(incomplete_seen) {
                        continue;
                    }
                    Msg::Event(Event::Incomplete {
                        frame_id,
                        columns,
                        expected,
                        count: incomplete_seen,
                    })
                }
            };
            match tx.try_send(msg) {
                Ok(()) => {}
                Err(TrySendError::Full(Msg::Frame { .. })) => queue_full += 1,
                Err(TrySendError::Full(_)) => {}
                // The sender ended (the daemon failed): stop reading.
                Err(TrySendError::Disconnected(_)) => return (asm.counts, queue_full, None),
            }
        }
    };
    // A frame cut off by the stop is not complete: counted, as any other.
    if let Some(Finished::Incomplete {
        frame_id,
        columns,
        expected,
    }) = asm.expire()
    {
        // Reported whatever its number: the last one.
        let count = asm.counts.incomplete;
        let _ = tx.try_send(Msg::Event(Event::Incomplete {
            frame_id,
            columns,
            expected,
            count,
        }));
    }
    (asm.counts, queue_full, ended)
}

/// The IMU thread: packets to its own sensor until stopped; its own durability wait.
fn imu_loop(
    opts: &OusterOptions,
    sensor: &str,
    sock: std::net::UdpSocket,
    addr: SocketAddr,
    stop: &AtomicBool,
    events: SyncSender<Event>,
) -> ImuReport {
    let mut report = ImuReport::default();
    let err = daemon_err(sensor);
    let mut d = match ResilientDriver::connect(
        &opts.socket,
        sensor,
        imu::sensor_meta(),
        false,
        &opts.client,
    ) {
        Ok(d) => d,
        Err(e) => {
            report.ended = Some(err(e));
            return report;
        }
    };
    let mut buf = [0u8; 2048];
    let mut last_sync = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let n = match sock.recv(&mut buf) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                0
            }
            Err(error) => {
                report.ended = Some(OusterError::Recv { addr, error });
                break;
            }
        };
        if n > 0 {
            report.packets += 1;
            match imu::Imu::parse(&buf[..n]) {
                Ok(m) => {
                    let acc: Vec<u8> = m.acc_si().iter().flat_map(|v| v.to_le_bytes()).collect();
                    let avel: Vec<u8> = m.avel_si().iter().flat_map(|v| v.to_le_bytes()).collect();
                    let sts = m.accel_ts.to_le_bytes();
                    if let Err(e) = d.send(crate::epoch_now(), None, &[&acc, &avel, &sts]) {
                        report.ended = Some(err(e));
                        return report;
                    }
                }
                Err(error) => {
                    report.bad += 1;
                    if often(report.bad) {
                        let _ = events.try_send(Event::BadImu {
                            error,
                            count: report.bad,
                        });
                    }
                }
            }
        }
        let step = (|| {
            if d.oldest_pending()
                .is_some_and(|t| t.elapsed() >= opts.max_delay)
            {
                d.flush()?;
            }
            if last_sync.elapsed() >= opts.sync_every {
                d.sync()?;
                last_sync = Instant::now();
            }
            Ok(())
        })();
        if let Err(e) = step {
            report.ended = Some(err(e));
            return report;
        }
    }
    match finish(&mut d, sensor, opts.stop_timeout) {
        Ok((durable, expected)) => (report.durable, report.expected) = (durable, expected),
        Err(e) => report.ended = Some(e),
    }
    report
}

/// Flushes, then asks until every sample is durable or `timeout` passed.
fn finish(
    d: &mut ResilientDriver,
    sensor: &str,
    timeout: Duration,
) -> Result<(u64, u64), OusterError> {
    let start = Instant::now();
    loop {
        let durable = d.sync().map_err(daemon_err(sensor))?;
        let expected = d.expected_durable();
        if durable >= expected {
            return Ok((durable, expected));
        }
        if start.elapsed() >= timeout {
            return Err(OusterError::NotDurable {
                sensor: sensor.to_string(),
                waited: start.elapsed(),
                durable,
                expected,
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
