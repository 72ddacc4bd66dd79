//! The Ouster driver's receiving side at the rig's packet rate: 1,280 lidar packets a second
//! of 12,608 bytes (LEGACY, 64 beams x 2048 columns at 10 Hz: 128 packets a frame) sent on
//! loopback for N seconds, received by the driver's own receiving thread (`ouster::receive`:
//! the 32 MiB socket buffer, frames assembled by frame id). The same-run baseline is the same
//! thread on a socket with the kernel's default buffer (what ouster-sdk had before its PR #81).
//! Prints, for each: packets sent and lost, frames complete of frames sent, incomplete frames,
//! and the receiving thread's CPU time per second of stream.
//!
//! `cargo bench -p roverlog-drivers --bench ouster -- [SECONDS]` (default 10; the issue's
//! target is 60 s: 0 lost, 600 of 600 frames).
//!
//! End to end, with a daemon and `roverlog driver ouster` started by hand:
//! `... --bench ouster -- SECONDS --to 127.0.0.1:7502 --metadata-out lidar.json` sends the same
//! stream to that address only (and first writes the matching sensor_info for `--metadata`).

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::sync_channel;
use std::time::{Duration, Instant};

use roverlog_drivers::ouster::packet::{encode_frame, EncodeFrame};
use roverlog_drivers::ouster::{self, udp, Assembler, Layout, Msg, Profile};

const RATE: f64 = 1280.0;

fn layout() -> Layout {
    Layout {
        profile: Profile::Legacy,
        pixels_per_column: 64,
        columns_per_frame: 2048,
        columns_per_packet: 16,
        column_window: (0, 2047),
    }
}

fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime into a timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

struct Outcome {
    rcvbuf: usize,
    sent: u64,
    received: u64,
    frames_sent: u64,
    complete: u64,
    incomplete: u64,
    stored: u64,
    cpu: Duration,
}

/// Frame `k`'s packets: one frame's packets with the frame id patched into every column.
fn packets_of(template: &[Vec<u8>], k: u64, out: &mut Vec<Vec<u8>>) {
    out.clear();
    let id = (k as u16).to_le_bytes();
    for p in template {
        let mut p = p.clone();
        for col in 0..16 {
            let at = col * (16 + 64 * 12 + 4) + 10;
            p[at..at + 2].copy_from_slice(&id);
        }
        out.push(p);
    }
}

fn run(seconds: f64, big_buffer: bool) -> Outcome {
    let l = layout();
    let addr = SocketAddr::from(([127, 0, 0, 1], 0));
    let poll = Duration::from_millis(200);
    let (sock, rcvbuf) = if big_buffer {
        let o = udp::open(addr, 32 << 20, poll).unwrap();
        if let Some(max) = o.capped_at {
            eprintln!("warning: the kernel capped the buffer at rmem_max = {max}");
        }
        (o.socket, o.rcvbuf)
    } else {
        let s = UdpSocket::bind(addr).unwrap();
        s.set_read_timeout(Some(poll)).unwrap();
        let def = std::fs::read_to_string("/proc/sys/net/core/rmem_default")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        (s, def)
    };
    let target = sock.local_addr().unwrap();
    let n = l.pixels();
    let range: Vec<u32> = (0..n as u32).map(|i| 1000 + i % 60000).collect();
    let rfl: Vec<u8> = (0..n).map(|i| i as u8).collect();
    let nir: Vec<u16> = (0..n).map(|i| i as u16).collect();
    let template = encode_frame(
        &l,
        &EncodeFrame {
            frame_id: 0,
            range: &range,
            rfl: &rfl,
            nir: &nir,
            timestamp: 0,
            column_ns: 48_828,
        },
    );
    assert_eq!(template.len(), 128);
    assert_eq!(template[0].len(), 12_608);
    let stop = AtomicBool::new(false);
    let (tx, rx) = sync_channel::<Msg>(16);
    std::thread::scope(|s| {
        let receiver = s.spawn(|| {
            let t0 = thread_cpu();
            let r = ouster::receive(
                sock,
                target,
                Assembler::new(l),
                Duration::from_secs(30),
                &stop,
                tx,
            );
            (r, thread_cpu() - t0)
        });
        let consumer =
            s.spawn(move || rx.iter().filter(|m| matches!(m, Msg::Frame { .. })).count() as u64);
        let out = UdpSocket::bind("127.0.0.1:0").unwrap();
        let total = (seconds * RATE) as u64;
        let period = Duration::from_secs_f64(1.0 / RATE);
        let start = Instant::now();
        let mut frame = Vec::new();
        for i in 0..total {
            if i % 128 == 0 {
                packets_of(&template, i / 128, &mut frame);
            }
            let due = start + period.mul_f64(i as f64);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            out.send_to(&frame[(i % 128) as usize], target).unwrap();
        }
        std::thread::sleep(Duration::from_millis(500));
        stop.store(true, Ordering::Relaxed);
        let ((counts, _queue_full, ended), cpu) = receiver.join().unwrap();
        assert!(ended.is_none(), "{ended:?}");
        let stored = consumer.join().unwrap();
        Outcome {
            rcvbuf,
            sent: total,
            received: counts.packets,
            frames_sent: total / 128,
            complete: counts.complete,
            incomplete: counts.incomplete,
            stored,
            cpu,
        }
    })
}

/// The sensor_info of `layout()`: the unit tests' 64 x 1024 file widened to 2048 columns.
fn metadata() -> String {
    let mut doc: serde_json::Value =
        serde_json::from_str(include_str!("../testdata/ouster_64x1024_legacy.json")).unwrap();
    doc["lidar_data_format"]["columns_per_frame"] = 2048.into();
    doc["lidar_data_format"]["column_window"] = serde_json::json!([0, 2047]);
    doc["config_params"]["lidar_mode"] = "2048x10".into();
    doc.to_string()
}

/// Only sends the stream to `to` for `seconds` (see the module doc).
fn send_only(seconds: f64, to: &str) {
    let l = layout();
    let n = l.pixels();
    let range: Vec<u32> = (0..n as u32).map(|i| 1000 + i % 60000).collect();
    let rfl: Vec<u8> = (0..n).map(|i| i as u8).collect();
    let nir: Vec<u16> = (0..n).map(|i| i as u16).collect();
    let template = encode_frame(
        &l,
        &EncodeFrame {
            frame_id: 0,
            range: &range,
            rfl: &rfl,
            nir: &nir,
            timestamp: 0,
            column_ns: 48_828,
        },
    );
    let out = UdpSocket::bind("127.0.0.1:0").unwrap();
    let total = (seconds * RATE) as u64;
    let period = Duration::from_secs_f64(1.0 / RATE);
    let start = Instant::now();
    let mut frame = Vec::new();
    for i in 0..total {
        if i % 128 == 0 {
            packets_of(&template, i / 128, &mut frame);
        }
        let due = start + period.mul_f64(i as f64);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        out.send_to(&frame[(i % 128) as usize], to).unwrap();
    }
    println!(
        "sent {total} packets ({} frames) to {to} in {:.1} s",
        total / 128,
        start.elapsed().as_secs_f64()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .map(|i| args[i + 1].clone())
    };
    let seconds: f64 = args
        .iter()
        .enumerate()
        .find(|(i, a)| {
            !a.starts_with('-')
                && (*i == 0 || !["--to", "--metadata-out"].contains(&args[i - 1].as_str()))
        })
        .map(|(_, a)| a.parse().expect("SECONDS: a number"))
        .unwrap_or(10.0);
    if let Some(path) = flag("--metadata-out") {
        std::fs::write(&path, metadata()).unwrap();
    }
    if let Some(to) = flag("--to") {
        return send_only(seconds, &to);
    }
    println!(
        "ouster receive: {RATE} packets/s of 12608 bytes (LEGACY 64 x 2048, 10 Hz) on loopback, {seconds} s each"
    );
    println!("| socket buffer | bytes | packets sent | lost | lost % | frames complete | incomplete | handed on | CPU-s per s |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (name, big) in [("32 MiB (the driver)", true), ("kernel default", false)] {
        let o = run(seconds, big);
        let lost = o.sent - o.received.min(o.sent);
        println!(
            "| {name} | {} | {} | {lost} | {:.3} | {} of {} | {} | {} | {:.4} |",
            o.rcvbuf,
            o.sent,
            100.0 * lost as f64 / o.sent as f64,
            o.complete,
            o.frames_sent,
            o.incomplete,
            o.stored,
            o.cpu.as_secs_f64() / seconds
        );
    }
}
