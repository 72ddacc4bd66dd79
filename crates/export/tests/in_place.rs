//! Issue 34: `export_mcap_from` over a trace read in place (core's `RemoteTrace` over the
//! range-read seam; here `LocalFiles`, counted, where the binary wires the S3 store in:
//! tests/cli/s3export.rs runs it against Garage) writes the same bytes as `export_mcap` of
//! the local trace, with a location mapping and a window too, and reads small samples many to
//! a request: a couple of dozen requests for 1 200 samples, not one each.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use roverlog_core::format::meta::{ChannelFormat, ChannelMeta, SensorMeta};
use roverlog_core::format::{DType, SensorWriter, WriterOptions};
use roverlog_core::remote::{BackendError, LocalFiles, RangeFile, RemoteTrace, TraceFiles};
use roverlog_export::location::LocationMapping;
use roverlog_export::source::InPlace;
use roverlog_export::{export_mcap, export_mcap_from, ExportOptions};

const T0: f64 = 1.7e9;
const N: u32 = 300;

/// [`LocalFiles`], counting range requests.
struct Counted {
    inner: LocalFiles,
    gets: Arc<AtomicU64>,
}

struct CountedFile {
    inner: Box<dyn RangeFile>,
    gets: Arc<AtomicU64>,
}

impl RangeFile for CountedFile {
    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn read_range(&self, range: Range<u64>) -> Result<Vec<u8>, BackendError> {
        self.gets.fetch_add(1, Ordering::Relaxed);
        self.inner.read_range(range)
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
        }))
    }
}

/// An IMU of `N` samples: `raw` f4 [1024] (4 KiB), `lzmaf` u2 [64, 64] (8 KiB), a
/// position (`ll`, f8 [2]) and `ts_recv`; one event.
fn trace(t: &Path) {
    std::fs::create_dir_all(t.join("_roverlog")).unwrap();
    std::fs::write(t.join("config.yaml"), "{}\n").unwrap();
    let meta = SensorMeta {
        channels: [
            ("acc", ChannelFormat::Raw, DType::F4, vec![1024]),
            ("img", ChannelFormat::Lzmaf, DType::U2, vec![64, 64]),
            ("ll", ChannelFormat::Raw, DType::F8, vec![2]),
            ("ts_recv", ChannelFormat::Raw, DType::F8, vec![]),
        ]
        .into_iter()
        .map(|(n, f, d, s)| (n.to_string(), ChannelMeta::new(f, d, s, "")))
        .collect(),
    };
    let mut w = SensorWriter::create(&t.join("imu"), meta, &WriterOptions::default()).unwrap();
    for i in 0..N {
        let ts = T0 + f64::from(i) / 1000.0;
        let acc: Vec<u8> = (0..1024)
            .flat_map(|k| (i as f32 + k as f32 * 0.5).to_le_bytes())
            .collect();
        let img: Vec<u8> = (0..4096u32)
            .flat_map(|k| ((k * 3 + i) as u16).to_le_bytes())
            .collect();
        let ll: Vec<u8> = [48.1 + f64::from(i) * 1e-6, 11.5]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        w.append(ts, &[&acc, &img, &ll, &(ts + 0.002).to_le_bytes()])
            .unwrap();
    }
    w.finish().unwrap();
    let mark = serde_json::json!({"t": T0 + 1.0, "event": "mark", "text": "bridge"});
    std::fs::write(t.join("_roverlog/events.jsonl"), format!("{mark}\n")).unwrap();
}

#[test]
fn a_trace_read_in_place_exports_to_the_same_bytes_in_few_requests() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    trace(&t);
    let mapping =
        LocationMapping::from_pairs("imu", [("latitude", "ll[0]"), ("longitude", "ll[1]")])
            .unwrap();
    let with_location = ExportOptions {
        locations: BTreeMap::from([("imu".to_string(), mapping)]),
        ..ExportOptions::default()
    };
    let window = ExportOptions {
        window: Some(T0 + 0.05..T0 + 0.25),
        ..ExportOptions::default()
    };
    for (k, opts) in [with_location, window].iter().enumerate() {
        let here = dir.path().join(format!("here{k}.mcap"));
        let report = export_mcap(&t, &here, opts, |_, _| {}).unwrap();
        let gets = Arc::new(AtomicU64::new(0));
        let files = Counted {
            inner: LocalFiles::new(&t),
            gets: gets.clone(),
        };
        let in_place = InPlace::new(RemoteTrace::open(Arc::new(files)).unwrap());
        let there = dir.path().join(format!("there{k}.mcap"));
        let report2 = export_mcap_from(&in_place, &there, opts, |_, _| {}).unwrap();
        assert_eq!(format!("{report:?}"), format!("{report2:?}"));
        let (a, b) = (
            std::fs::read(&here).unwrap(),
            std::fs::read(&there).unwrap(),
        );
        assert!(a.len() > 50_000, "{} bytes", a.len());
        assert!(
            a == b,
            "{k}: the files differ ({} and {} bytes)",
            a.len(),
            b.len()
        );
        // meta.json, ts, the lzmaf index, config.yaml, the event log: 5; the samples in
        // batches of 256 KiB decoded: acc 5 of 64, img 10 of 32, ts_recv and ll 1 each,
        // and for the location its channel again (1). Per sample it would be 1 200.
        let gets = gets.load(Ordering::Relaxed);
        eprintln!("{k}: {gets} requests");
        assert!(gets <= 5 + 5 + 10 + 1 + 1 + 1, "{k}: {gets} requests");
    }
}
