//! After a power cut a channel can hold samples past the last fsync whose bytes never reached
//! the disk (the new size did: they read as zeros). Recovery in a later boot cuts every
//! channel back to the durable watermark instead of keeping such samples (found by
//! tests/torture/powercut.rs: a `raw` sample of zeros, seq 0 where seq 162 belonged).
//! Its own binary: it sets the process's boot id.

use std::fs::OpenOptions;

use roverlog_core::format::durable::{self, BOOT_ID_ENV};
use roverlog_core::format::meta::{ChannelFormat, ChannelMeta, SensorMeta};
use roverlog_core::format::{
    check_sensor, recover_sensor, CutAction, DType, Depth, Sensor, SensorWriter, WriterOptions,
};

#[test]
fn a_later_boot_does_not_trust_samples_past_the_last_fsync() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("imu");
    let meta = SensorMeta {
        channels: vec![(
            "acc".into(),
            ChannelMeta::new(ChannelFormat::Raw, DType::U8, vec![], ""),
        )],
    };
    let mut w = SensorWriter::create(&s, meta, &WriterOptions::default()).unwrap();
    for i in 1..=10u64 {
        w.append(i as f64, &[&i.to_le_bytes()]).unwrap();
    }
    assert_eq!(w.sync().unwrap(), 10);
    for i in 11..=15u64 {
        w.append(i as f64, &[&i.to_le_bytes()]).unwrap();
    }
    w.flush().unwrap();
    drop(w);
    // What a power cut may leave: the sizes of the last 5 samples on disk, their bytes not.
    for ch in ["acc", "ts"] {
        let f = OpenOptions::new().write(true).open(s.join(ch)).unwrap();
        f.set_len(10 * 8).unwrap();
        f.set_len(15 * 8).unwrap();
    }
    // The same boot (a process crash): the page cache kept them; nothing is cut.
    assert!(check_sensor(&s, Depth::Structure).unwrap().is_ok());
    // Another boot: validate flags them, recover cuts them.
    std::env::set_var(BOOT_ID_ENV, "after-the-cut");
    let c = check_sensor(&s, Depth::Structure).unwrap();
    assert!(
        c.all_problems()
            .iter()
            .any(|p| p.contains("5 sample(s) past the last fsync")),
        "{:?}",
        c.all_problems()
    );
    let r = recover_sensor(&s).unwrap();
    assert_eq!(r.len, 10, "{:?}", r.cuts);
    assert!(
        r.cuts.iter().any(
            |c| matches!(c.what, CutAction::PowerCut { durable: 10, .. })
                && c.to_string().contains("power cut")
        ),
        "{:?}",
        r.cuts
    );
    let got = Sensor::open(&s)
        .unwrap()
        .channel("acc")
        .unwrap()
        .get_range(0..10)
        .unwrap();
    assert_eq!(
        got,
        (1..=10u64)
            .map(|i| i.to_le_bytes().to_vec())
            .collect::<Vec<_>>()
    );
    assert_eq!(durable::read(&s).unwrap().boot, "after-the-cut");
    assert!(check_sensor(&s, Depth::Structure).unwrap().is_ok());
    assert!(recover_sensor(&s).unwrap().cuts.is_empty(), "idempotent");
}
