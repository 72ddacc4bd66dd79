//! `roverlog import` of a roverd trace copies each `lzmaf` frame as stored: no decoding and no
//! compressing again (what made importing an hour's lidar take minutes), so the frames come
//! out byte for byte even when the source compressed them at another preset than import's.

use crate::support::common;

use std::path::Path;

use roverlog_core::format::{
    lzma, ChannelFormat, ChannelMeta, DType, Sensor, SensorMeta, SensorWriter, WriterOptions,
};

/// A lidar sensor with an `lzmaf` channel compressed at `preset` and a `raw` one.
fn write_lidar(dir: &Path, preset: u32) -> Vec<Vec<u8>> {
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    std::fs::write(dir.parent().unwrap().join("config.yaml"), "{}\n").unwrap();
    let meta = SensorMeta {
        channels: vec![
            (
                "rng".into(),
                ChannelMeta::new(ChannelFormat::Lzmaf, DType::U2, vec![8, 32], ""),
            ),
            (
                "nir".into(),
                ChannelMeta::new(ChannelFormat::Raw, DType::U1, vec![4], ""),
            ),
        ],
    };
    let opts = WriterOptions {
        lzmaf_preset: preset,
        ..WriterOptions::default()
    };
    let mut w = SensorWriter::create(dir, meta, &opts).unwrap();
    let mut rng_samples = Vec::new();
    for i in 0..40u32 {
        let rng: Vec<u8> = (0..512u32)
            .map(|j| ((j * 7 + i * 13) % 251) as u8)
            .collect();
        let nir = i.to_le_bytes();
        w.append(1000.0 + f64::from(i) * 0.1, &[&rng, &nir])
            .unwrap();
        rng_samples.push(rng);
    }
    w.finish().unwrap();
    rng_samples
}

#[test]
fn import_copies_lzmaf_frames_as_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let out = tmp.path().join("out");
    // Not import's preset: compressing again would give other bytes.
    let preset = 6;
    assert_ne!(preset, WriterOptions::default().lzmaf_preset);
    let samples = write_lidar(&src.join("lidar"), preset);

    let r = common::roverlog(&["import".as_ref(), src.as_os_str(), out.as_os_str()]);
    assert!(r.ok(), "{}", r.text());
    for file in ["rng", "rng_i", "nir", "ts"] {
        let want = std::fs::read(src.join("lidar").join(file)).unwrap();
        let got = std::fs::read(out.join("lidar").join(file)).unwrap();
        assert!(want == got, "lidar/{file} differs after import");
    }
    // What is stored still decodes to the samples written, and the frames are the
    // preset-6 ones, not what preset 0 makes of the first sample.
    let s = Sensor::open(&out.join("lidar")).unwrap();
    let mut c = s.channel("rng").unwrap();
    assert_eq!(c.len().unwrap(), 40);
    for (i, want) in samples.iter().enumerate() {
        assert_eq!(
            c.get(i as u64).unwrap().as_ref(),
            want.as_slice(),
            "sample {i}"
        );
    }
    let rng = std::fs::read(out.join("lidar/rng")).unwrap();
    let first = lzma::compress(&samples[0], WriterOptions::default().lzmaf_preset);
    let stored = lzma::compress(&samples[0], preset);
    assert!(rng.starts_with(&stored), "frame 0 is not the stored one");
    assert!(
        first != stored,
        "the presets give the same frame: the test shows nothing"
    );

    let r = common::roverlog(&["validate".as_ref(), "--deep".as_ref(), out.as_os_str()]);
    assert!(r.ok(), "{}", r.text());
}
