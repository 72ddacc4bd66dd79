//! Unit tests of `writer` (kept apart so the module stays readable).

use super::trace_files::remove_unfinished_sensor_dir;
use super::*;
use crate::protocol::accept_hello;

/// A batch that breaks the ingest's invariant (a jpg length past the frame) makes
/// `write_batch` panic: the sensor is failed with the message, the batch's permits come
/// back, later requests are answered with the failure, and the thread ends normally.
#[test]
fn a_panic_fails_the_sensor_returns_permits_and_keeps_answering() {
    let hello = br#"{"roverlog": 1, "sensor": "cam", "channels": [{"name": "img", "format": "jpg", "type": "u1", "shape": [4]}]}"#;
    let (hello, layout) = accept_hello(hello, 8, 1 << 20).unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    let budget = Arc::new(Semaphore::new(1000));
    let stats = Arc::new(SensorStats::new(1000));
    let (notices, _notices_rx) = mpsc::unbounded_channel();
    let settings = WriterSettings {
        snapshot: None,
        opts: WriterOptions::default(),
        flush_interval: Duration::from_millis(100),
        fsync: FsyncPolicy::OnRequest,
        debug_delay: Duration::ZERO,
        pool: crate::compress::CompressPool::new(1, 1 << 20),
        lzmaf_store_above: 0.5,
        compress_delay: Duration::ZERO,
        epoch: Instant::now(),
        heartbeat: Duration::from_secs(1),
        live: None,
        faults: Default::default(),
    };
    let w = Writer::new(
        "cam".into(),
        hello.channels.clone(),
        layout,
        settings,
        rx,
        budget.clone(),
        stats.clone(),
        notices,
    );
    let thread = std::thread::spawn(move || w.run());
    let dir = tempfile::tempdir().unwrap();
    let events = Arc::new(EventLog::open(dir.path()).unwrap());
    let ask = |make: &dyn Fn(CountReply) -> WriterMsg| {
        let (reply, rx) = oneshot::channel();
        tx.send(make(reply)).unwrap();
        rx.blocking_recv().unwrap()
    };
    let opened = ask(&|reply| WriterMsg::Open {
        trace: dir.path().to_path_buf(),
        events: events.clone(),
        files: Arc::from(Vec::new()),
        reply,
        left: None,
    });
    assert!(matches!(opened, Ok(0)), "{opened:?}");

    // len 16: ts (8), then a jpg length of 1000 with 4 bytes after it.
    let mut bad = 16u32.to_le_bytes().to_vec();
    bad.extend(1.0f64.to_le_bytes());
    bad.extend(1000u32.to_le_bytes());
    bad.extend([1, 2, 3, 4]);
    budget.try_acquire_many(20).unwrap().forget();
    tx.send(WriterMsg::Batch {
        data: Bytes::from(bad),
        frames: 1,
        cost: 20,
        seq: false,
        recv: vec![0.0],
    })
    .unwrap();
    let (reply, synced) = oneshot::channel();
    tx.send(WriterMsg::Sync(reply)).unwrap();
    let synced = synced.blocking_recv().unwrap();
    let failure = stats.failure().expect("the sensor is failed");
    assert!(
        matches!(*failure, SensorFailure::Panic { .. }),
        "{failure:?}"
    );
    assert!(
        failure
            .to_string()
            .starts_with("internal error: the writer panicked: "),
        "{failure}"
    );
    assert!(
        matches!(&synced, Err(WriterError::Failed(f)) if Arc::ptr_eq(f, &failure)),
        "{synced:?}"
    );
    assert_eq!(budget.available_permits(), 1000);
    let (reply, barrier) = oneshot::channel();
    tx.send(WriterMsg::Barrier(reply)).unwrap();
    let barrier = barrier.blocking_recv().unwrap();
    assert!(
        matches!(&barrier, Err(WriterError::Failed(f)) if Arc::ptr_eq(f, &failure)),
        "{barrier:?}"
    );
    tx.send(WriterMsg::Exit).unwrap();
    thread.join().unwrap();
    // Whoever still waits for queue space learns that the writer has ended.
    assert!(budget.is_closed());
}

/// A kill during `SensorWriter::create`, after the zero watermark and before `meta.json`,
/// leaves a directory the next hello must be able to start again (the kill-9 torture test
/// found every sensor refused with "Directory not empty" after such a kill). Anything the
/// creation cannot have written is left alone, with an error.
#[test]
fn an_interrupted_sensor_creation_is_cleared_and_nothing_else() {
    use roverlog_core::format::{ChannelFormat, ChannelMeta, DType, SensorMeta, SensorWriter};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("lidar");
    let meta = SensorMeta {
        channels: vec![
            (
                "rng".into(),
                ChannelMeta::new(ChannelFormat::Lzmaf, DType::U2, vec![4], ""),
            ),
            (
                "acc".into(),
                ChannelMeta::new(ChannelFormat::Raw, DType::F4, vec![3], ""),
            ),
            (
                "img".into(),
                ChannelMeta::new(ChannelFormat::Blob("jpg".into()), DType::U1, vec![], ""),
            ),
            (
                "video.avi".into(),
                ChannelMeta::new(ChannelFormat::Mjpg, DType::U1, vec![48, 64, 3], ""),
            ),
        ],
    };
    SensorWriter::create(&dir, meta, &WriterOptions::default())
        .unwrap()
        .finish()
        .unwrap();
    // What the kill left: everything but meta.json, the zero watermark included, and the
    // sidecar written before it (one whole, one cut in its temporary file).
    std::fs::remove_file(dir.join(META_FILE)).unwrap();
    assert!(roverlog_core::format::durable::path(&dir).exists());
    std::fs::write(dir.join("lidar.json"), b"{\"lidar_mode\": \"2048x10\"}").unwrap();
    std::fs::write(dir.join("beams.json..tmp"), b"{\"be").unwrap();
    let sidecars = [crate::sidecar::Sidecar {
        name: "lidar.json".into(),
        bytes: b"{}".to_vec(),
    }];
    if let Err(e) = remove_unfinished_sensor_dir(&dir, &sidecars) {
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.file_name(), e.metadata().unwrap().len())
            })
            .collect();
        panic!("{e}: left {left:?}");
    }
    assert!(!dir.exists());

    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), b"not ours").unwrap();
    // Not one of the connection's sidecars: someone else's.
    assert!(remove_unfinished_sensor_dir(&dir, &sidecars).is_err());
    assert_eq!(std::fs::read(dir.join("notes.txt")).unwrap(), b"not ours");
}
