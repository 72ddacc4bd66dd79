//! The in-place readers over [`LocalFiles`] against the mapped readers, and what one frame
//! costs in requests and bytes (counted by a wrapper around the same seam).

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::*;
use crate::format::{
    ChannelFormat, ChannelMeta, DType, SensorMeta, SensorWriter, Trace, WriterOptions,
};

/// [`LocalFiles`], counting range requests and the bytes they return.
struct Counted {
    inner: LocalFiles,
    gets: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
}

struct CountedFile {
    inner: Box<dyn RangeFile>,
    gets: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
}

impl RangeFile for CountedFile {
    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn read_range(&self, range: Range<u64>) -> Result<Vec<u8>, BackendError> {
        self.gets.fetch_add(1, Ordering::Relaxed);
        let b = self.inner.read_range(range)?;
        self.bytes.fetch_add(b.len() as u64, Ordering::Relaxed);
        Ok(b)
    }
}

impl TraceFiles for Counted {
    fn location(&self) -> String {
        self.inner.location()
    }

    fn list(&self) -> Result<Vec<(String, u64)>, BackendError> {
        self.inner.list()
    }

    fn open(&self, path: &str, len: u64) -> Result<Box<dyn RangeFile>, BackendError> {
        Ok(Box::new(CountedFile {
            inner: self.inner.open(path, len)?,
            gets: self.gets.clone(),
            bytes: self.bytes.clone(),
        }))
    }
}

fn jpeg_like(i: u64, n: usize) -> Vec<u8> {
    let mut f = vec![0xFF, 0xD8];
    f.extend(crate::noise(n - 4, i + 1));
    f.extend([0xFF, 0xD9]);
    f
}

/// A trace with a camera (`mjpg`), a lidar (`lzmaf`), a `raw` and a `jpg` blob channel.
fn write_trace(dir: &std::path::Path, frames: u64) {
    std::fs::write(dir.join("config.yaml"), "{}\n").unwrap();
    let mut meta = SensorMeta::default();
    meta.channels.push((
        "video.avi".into(),
        ChannelMeta::new(ChannelFormat::Mjpg, DType::U1, vec![64, 96, 3], ""),
    ));
    meta.channels.push((
        "rng".into(),
        ChannelMeta::new(ChannelFormat::Lzmaf, DType::U2, vec![16, 32], ""),
    ));
    meta.channels.push((
        "imu".into(),
        ChannelMeta::new(ChannelFormat::Raw, DType::F4, vec![6], ""),
    ));
    let mut w = SensorWriter::create(&dir.join("cam"), meta, &WriterOptions::default()).unwrap();
    for i in 0..frames {
        let jpeg = jpeg_like(i, 3000 + (i as usize * 37) % 500);
        let rng: Vec<u8> = (0..16 * 32 * 2)
            .map(|k| ((k as u64 * i) % 7) as u8)
            .collect();
        let imu = crate::noise(24, i + 7);
        w.append(i as f64 * 0.1, &[&jpeg, &rng, &imu]).unwrap();
    }
    w.finish().unwrap();
    let mut meta = SensorMeta::default();
    meta.channels.push((
        "img".into(),
        ChannelMeta::new(ChannelFormat::Blob("jpg".into()), DType::U1, vec![], ""),
    ));
    let mut w = SensorWriter::create(&dir.join("snap"), meta, &WriterOptions::default()).unwrap();
    for i in 0..3 {
        w.append(i as f64, &[&jpeg_like(i, 100)]).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn every_sample_read_in_place_equals_the_mapped_readers() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(dir.path(), 20);
    let local = Trace::open(dir.path()).unwrap();
    let remote = RemoteTrace::open(Arc::new(LocalFiles::new(dir.path()))).unwrap();
    assert_eq!(remote.sensor_names(), local.sensor_names());
    for name in local.sensor_names() {
        let ls = local.sensor(name).unwrap();
        let rs = remote.sensor(name).unwrap();
        assert_eq!(rs.len(), ls.len().unwrap());
        assert_eq!(rs.timestamps(), &ls.timestamps().unwrap()[..]);
        for (ch, _) in ls.meta().channels.iter() {
            let mut lc = ls.channel(ch).unwrap();
            let rc = rs.channel(ch).unwrap();
            assert_eq!(rc.len(), lc.len().unwrap(), "{name}/{ch}");
            for i in 0..rc.len() {
                assert_eq!(rc.get(i).unwrap(), &*lc.get(i).unwrap(), "{name}/{ch} {i}");
            }
            let past = rc.get(rc.len()).unwrap_err();
            assert!(matches!(past, RemoteError::PastEnd { .. }), "{past}");
        }
    }
}

#[test]
fn one_frame_costs_one_request_of_about_its_size_once_the_channel_is_open() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(dir.path(), 40);
    let gets = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let files = Counted {
        inner: LocalFiles::new(dir.path()),
        gets: gets.clone(),
        bytes: bytes.clone(),
    };
    let t = RemoteTrace::open(Arc::new(files)).unwrap();
    let s = t.sensor("cam").unwrap();
    let local = Trace::open(dir.path()).unwrap().sensor("cam").unwrap();
    for ch in ["video.avi", "rng"] {
        let c = s.channel(ch).unwrap();
        let mut lc = local.channel(ch).unwrap();
        for i in [17, 3, 39] {
            let (g0, b0) = (gets.load(Ordering::Relaxed), bytes.load(Ordering::Relaxed));
            let got = c.get(i).unwrap();
            let (g, b) = (
                gets.load(Ordering::Relaxed) - g0,
                bytes.load(Ordering::Relaxed) - b0,
            );
            assert_eq!(g, 1, "{ch} frame {i}: requests");
            let stored = match ch {
                "rng" => {
                    let ChannelReader::Lzmaf(r) = &lc else {
                        panic!()
                    };
                    r.compressed(i).unwrap().len() as u64
                }
                _ => got.len() as u64 + 8,
            };
            assert_eq!(b, stored, "{ch} frame {i}: bytes");
            assert_eq!(got, &*lc.get(i).unwrap());
        }
    }
}

use crate::format::ChannelReader;

#[test]
fn a_location_without_a_trace_and_a_missing_sensor_are_errors_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let e = RemoteTrace::open(Arc::new(LocalFiles::new(&dir.path().join("nothing"))))
        .err()
        .unwrap();
    assert!(matches!(e, RemoteError::NoTrace { .. }), "{e}");
    assert!(e.to_string().contains("nothing"), "{e}");
    write_trace(dir.path(), 2);
    let t = RemoteTrace::open(Arc::new(LocalFiles::new(dir.path()))).unwrap();
    let e = t.sensor("lidar").err().unwrap();
    assert!(
        e.to_string().contains("\"lidar\"") && e.to_string().contains("cam, snap"),
        "{e}"
    );
    let e = t.sensor("cam").unwrap().channel("depth").err().unwrap();
    assert!(e.to_string().contains("\"depth\""), "{e}");
}

#[test]
fn a_video_of_several_riff_segments_is_read_through_its_opendml_indexes() {
    use crate::format::avi::{MjpgReader, MjpgWriter};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("video.avi");
    let mut w = MjpgWriter::create(&p, 96, 64, 30.0, 4096).unwrap();
    // RIFF segments of 64 KiB (1 GiB in real files): an OpenDML file that fits a test.
    w.set_riff_limit(64 << 10);
    for i in 0..60 {
        w.append(&jpeg_like(i, 3000 + (i as usize * 53) % 700))
            .unwrap();
    }
    w.finish().unwrap();
    let local = MjpgReader::open(&p).unwrap();
    assert_eq!(
        local.layout().source,
        crate::format::avi::IndexSource::OpenDml
    );
    assert!(local.layout().segments.len() > 2);
    let gets = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let files = Counted {
        inner: LocalFiles::new(dir.path()),
        gets: gets.clone(),
        bytes: bytes.clone(),
    };
    let len = std::fs::metadata(&p).unwrap().len();
    let file = files.open("video.avi", len).unwrap();
    let avi = super::avi::RemoteAvi::open(file, "video.avi").ok().unwrap();
    assert_eq!(avi.count(), 60);
    for k in [59, 0, 31, 17] {
        let (g0, b0) = (gets.load(Ordering::Relaxed), bytes.load(Ordering::Relaxed));
        let got = avi.frame(k).ok().unwrap();
        assert_eq!(gets.load(Ordering::Relaxed) - g0, 1, "frame {k}");
        assert_eq!(bytes.load(Ordering::Relaxed) - b0, got.len() as u64 + 8);
        assert_eq!(got, local.frame(k).unwrap(), "frame {k}");
    }
}

#[test]
fn a_channel_read_through_in_batches_is_its_samples_in_one_request_a_batch() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(dir.path(), 40);
    let gets = Arc::new(AtomicU64::new(0));
    let files = Counted {
        inner: LocalFiles::new(dir.path()),
        gets: gets.clone(),
        bytes: Arc::new(AtomicU64::new(0)),
    };
    let t = RemoteTrace::open(Arc::new(files)).unwrap();
    let s = t.sensor("cam").unwrap();
    let local = Trace::open(dir.path()).unwrap().sensor("cam").unwrap();
    for (ch, batch) in [
        ("imu", BATCH_BYTES / 24),
        ("rng", BATCH_BYTES / 1024),
        ("video.avi", 1),
    ] {
        let c = s.channel(ch).unwrap();
        assert_eq!(c.batch_len(), batch, "{ch}");
        let mut lc = local.channel(ch).unwrap();
        // Batches of 7 (the last short): one request each for raw and lzmaf.
        let g0 = gets.load(Ordering::Relaxed);
        let mut got = Vec::new();
        for a in (0..40).step_by(7) {
            got.extend(c.get_range(a..(a + 7).min(40)).unwrap());
        }
        let requests = gets.load(Ordering::Relaxed) - g0;
        assert_eq!(requests, if batch == 1 { 40 } else { 6 }, "{ch}");
        assert_eq!(got.len(), 40, "{ch}");
        for (i, g) in got.iter().enumerate() {
            assert_eq!(g, &*lc.get(i as u64).unwrap(), "{ch} {i}");
        }
        // Past the end: the error `get` gives for the first sample it lacks.
        let e = c.get_range(35..45).unwrap_err();
        assert!(
            matches!(e, RemoteError::PastEnd { index: 40, .. }),
            "{ch}: {e}"
        );
    }
}

use super::channel::BATCH_BYTES;
