//! The buffer handling above the ioctls, on the replay source: `bytesused`, never the buffer's
//! length; padding after the EOI dropped; flagged and overrun buffers refused; the replay's
//! pool, padding, rate, end and stop.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::replay::{padding, Replay, ReplayOptions, MAX_PADDING};
use super::{sys, Dequeued, FrameSource, Next};
use crate::camera::jpeg::NotJpeg;
use crate::camera::tests::tiny_jpeg_sized;
use crate::camera::NotStored;

fn buffer(mem: &[u8], bytesused: usize, flags: u32) -> Dequeued<'_> {
    Dequeued {
        mem,
        bytesused: bytesused as u32,
        flags,
        sequence: 7,
        timestamp: Duration::ZERO,
    }
}

#[test]
fn a_buffer_is_its_bytesused_bytes_up_to_the_eoi() {
    let j = tiny_jpeg_sized(500);
    // The buffer: the JPEG, 300 bytes of zero padding (within bytesused), then what an
    // earlier, longer frame left (past bytesused).
    let mut mem = j.clone();
    mem.extend([0u8; 300]);
    let used = mem.len();
    mem.extend(&tiny_jpeg_sized(2000)[..1500]);
    let (frame, info) = buffer(&mem, used, 0).jpeg().unwrap();
    assert_eq!(frame, &j[..]);
    assert_eq!((info.width, info.height), (16, 8));

    // A truncated frame whose stale tail would complete it: taking the buffer's length
    // (usb_cam #389) would store a whole-looking JPEG; bytesused says it is cut.
    let whole = tiny_jpeg_sized(900);
    let mut mem = whole.clone();
    mem.extend([0u8; 64]);
    let cut = 400;
    assert_eq!(
        buffer(&mem, cut, 0).jpeg().unwrap_err(),
        NotStored::NotJpeg(NotJpeg::Truncated(cut))
    );
    assert!(
        buffer(&mem, mem.len(), 0).jpeg().is_ok(),
        "the same bytes taken whole are a JPEG: the cut is what refuses it"
    );

    assert_eq!(
        buffer(&mem, mem.len() + 1, 0).jpeg().unwrap_err(),
        NotStored::Overrun {
            sequence: 7,
            bytesused: mem.len() as u32 + 1,
            length: mem.len()
        }
    );
    assert_eq!(
        buffer(&mem, mem.len(), sys::V4L2_BUF_FLAG_ERROR)
            .jpeg()
            .unwrap_err(),
        NotStored::Flagged { sequence: 7 }
    );
    assert_eq!(
        buffer(b"YUYV....", 8, 0).jpeg().unwrap_err(),
        NotStored::NotJpeg(NotJpeg::NoSoi(b"YUYV".to_vec()))
    );
}

/// A directory of its own under the temp dir, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "roverlog-v4l2-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn replay_dir(payloads: &[Vec<u8>]) -> Scratch {
    let dir = Scratch::new("replay");
    for (i, p) in payloads.iter().enumerate() {
        std::fs::write(dir.path().join(format!("f{i:03}.jpg")), p).unwrap();
    }
    std::fs::create_dir(dir.path().join("a-subdirectory-is-skipped")).unwrap();
    dir
}

#[test]
fn the_replay_hands_out_each_file_padded_in_a_reused_buffer_at_its_rate() {
    let payloads: Vec<Vec<u8>> = [10, 3000, 40, 7000, 5]
        .iter()
        .map(|&n| tiny_jpeg_sized(n))
        .collect();
    let dir = replay_dir(&payloads);
    let stop = Arc::new(AtomicBool::new(false));
    let opts = ReplayOptions {
        fps: 50,
        loops: 2,
        buffers: 3,
    };
    let mut r = Replay::open(dir.path(), opts, stop).unwrap();
    let largest = payloads.iter().map(Vec::len).max().unwrap();
    let length = r.buffer_len();
    assert!(length >= largest + MAX_PADDING);
    let start = Instant::now();
    let mut pads = std::collections::BTreeSet::new();
    let mut stamps = Vec::new();
    for n in 0..10u64 {
        let Next::Buffer(b) = r.next().unwrap() else {
            panic!("buffer {n}")
        };
        let want = &payloads[n as usize % payloads.len()];
        let used = b.bytesused as usize;
        assert_eq!(used, want.len() + padding(n), "buffer {n}");
        assert_eq!(&b.mem[..want.len()], &want[..]);
        assert!(b.mem[want.len()..used].iter().all(|&x| x == 0));
        assert_eq!(b.mem.len(), length, "every buffer is as long");
        assert_eq!(b.sequence, n as u32);
        assert_eq!(
            b.flags & sys::V4L2_BUF_FLAG_TIMESTAMP_MASK,
            sys::V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC
        );
        let (frame, _) = b.jpeg().unwrap();
        assert_eq!(frame, &want[..]);
        pads.insert(padding(n));
        stamps.push(b.timestamp);
    }
    assert!(matches!(r.next().unwrap(), Next::Ended));
    assert!(pads.len() > 5, "the padding varies: {pads:?}");
    // 10 frames at 50 fps: the last is handed out 180 ms after the first, not at once.
    let span = stamps[9] - stamps[0];
    assert!(span >= Duration::from_millis(175), "{span:?}");
    assert!(start.elapsed() >= Duration::from_millis(175));
}

#[test]
fn the_replay_stops_when_told_and_refuses_what_it_cannot_replay() {
    let dir = replay_dir(&[tiny_jpeg_sized(1)]);
    let stop = Arc::new(AtomicBool::new(false));
    let opts = ReplayOptions {
        fps: 1,
        loops: 0,
        buffers: 4,
    };
    let mut r = Replay::open(dir.path(), opts, stop.clone()).unwrap();
    assert!(matches!(r.next().unwrap(), Next::Buffer(_)));
    // The next is due in a second; the stop is seen within one poll.
    let s = stop.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        s.store(true, Ordering::Relaxed);
    });
    let start = Instant::now();
    assert!(matches!(r.next().unwrap(), Next::Stopped));
    assert!(start.elapsed() < Duration::from_millis(600));
    t.join().unwrap();

    let empty = Scratch::new("empty");
    let e = Replay::open(empty.path(), opts, stop.clone())
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        format!("replay:{}: no files to replay", empty.path().display())
    );
    let e = Replay::open(&empty.path().join("nope"), opts, stop.clone())
        .err()
        .unwrap();
    assert!(e.to_string().contains("listing the directory"), "{e}");
    let e = Replay::open(dir.path(), ReplayOptions { fps: 0, ..opts }, stop)
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .ends_with("--fps 0: want at least 1 frame per second"),
        "{e}"
    );
}

#[test]
fn gaps_in_the_sequence_are_frames_the_camera_dropped() {
    let mut last = None;
    let got: Vec<u64> = [5, 6, 7, 10, 11, 11, 3, u32::MAX, 1]
        .iter()
        .map(|&s| super::skipped(&mut last, s))
        .collect();
    // 7 -> 10: two dropped; a repeat or a step back: none; MAX -> 1 wraps: one (0) dropped.
    assert_eq!(got, vec![0, 0, 0, 2, 0, 0, 0, 0, 1]);
}
