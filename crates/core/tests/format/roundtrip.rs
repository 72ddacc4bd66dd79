//! Round trips through the format library: every type code, odd shapes, every writable
//! format, empty channels, resume, and reading an upstream-style `lzma` channel.

use std::path::Path;

use roverlog_core::format::{
    self, lzma, ChannelFormat, ChannelMeta, DType, SensorMeta, SensorWriter, Trace, WriterOptions,
};

/// Deterministic sample bytes for (channel k, sample i).
fn pattern(k: usize, i: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|j| ((i * 31 + j * 7 + k * 13) % 251) as u8)
        .collect()
}

fn meta(channels: Vec<(&str, ChannelMeta)>) -> SensorMeta {
    SensorMeta {
        channels: channels
            .into_iter()
            .map(|(n, c)| (n.to_string(), c))
            .collect(),
    }
}

/// Writes `n` samples to a new sensor and returns, per data channel, every sample written.
fn write_sensor(dir: &Path, m: &SensorMeta, n: usize) -> Vec<Vec<Vec<u8>>> {
    let mut w = SensorWriter::create(dir, m.clone(), &WriterOptions::default()).unwrap();
    let chans: Vec<_> = m.data_channels().map(|(_, c)| c.clone()).collect();
    let mut written = vec![Vec::new(); chans.len()];
    for i in 0..n {
        let samples: Vec<Vec<u8>> = chans
            .iter()
            .enumerate()
            .map(|(k, c)| match c.format {
                ChannelFormat::Blob(_) => pattern(k, i, 10 + (i * 37) % 300),
                _ => pattern(k, i, c.sample_bytes()),
            })
            .collect();
        let refs: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
        w.append(1000.0 + i as f64 * 0.1, &refs).unwrap();
        for (k, s) in samples.into_iter().enumerate() {
            written[k].push(s);
        }
    }
    assert_eq!(w.finish().unwrap(), n as u64);
    written
}

fn read_back(dir: &Path, m: &SensorMeta, written: &[Vec<Vec<u8>>]) {
    let s = format::Sensor::open(dir).unwrap();
    let n = written.first().map_or(0, Vec::len);
    assert_eq!(s.len().unwrap(), n as u64);
    let ts = s.timestamps().unwrap();
    assert_eq!(
        ts,
        (0..n).map(|i| 1000.0 + i as f64 * 0.1).collect::<Vec<_>>()
    );
    for (k, (name, _)) in m.data_channels().enumerate() {
        let mut r = s.channel(name).unwrap();
        assert_eq!(r.len().unwrap(), n as u64, "{name}");
        for (i, want) in written[k].iter().enumerate() {
            assert_eq!(&*r.get(i as u64).unwrap(), want.as_slice(), "{name}[{i}]");
        }
        assert!(
            r.get(n as u64).is_err(),
            "{name}: reading past the end must fail"
        );
        assert_eq!(r.get_range(0..n as u64).unwrap(), written[k]);
    }
    let check = format::check_sensor(dir, format::Depth::Deep).unwrap();
    assert!(check.is_ok(), "{:?}", check.all_problems());
}

#[test]
fn every_type_code_and_odd_shapes_in_raw_and_lzmaf() {
    let tmp = tempfile::tempdir().unwrap();
    for (f, fmt) in [ChannelFormat::Raw, ChannelFormat::Lzmaf]
        .into_iter()
        .enumerate()
    {
        let mut chans = Vec::new();
        for dt in DType::ALL {
            for (s, shape) in [vec![], vec![3, 3], vec![1], vec![2, 1, 3]]
                .into_iter()
                .enumerate()
            {
                let name: &'static str = Box::leak(format!("c_{dt}_{s}").into_boxed_str());
                chans.push((name, ChannelMeta::new(fmt.clone(), dt, shape, "test")));
            }
        }
        let m = meta(chans);
        let dir = tmp.path().join(format!("sensor{f}"));
        let written = write_sensor(&dir, &m, 7);
        read_back(&dir, &m, &written);
        // meta.json is what we declared, with ts added first.
        let on_disk = SensorMeta::read(&dir).unwrap();
        assert_eq!(on_disk.channels[0].0, "ts");
        assert_eq!(&on_disk.channels[1..], &m.channels[..]);
    }
}

#[test]
fn blob_channels_hold_variable_sizes() {
    let tmp = tempfile::tempdir().unwrap();
    let m = meta(vec![
        (
            "img",
            ChannelMeta::new(
                ChannelFormat::Blob("jpg".into()),
                DType::U1,
                vec![4, 4, 3],
                "",
            ),
        ),
        (
            "acc",
            ChannelMeta::new(ChannelFormat::Raw, DType::F4, vec![3], "m/s^2"),
        ),
    ]);
    let dir = tmp.path().join("cam");
    let written = write_sensor(&dir, &m, 12);
    read_back(&dir, &m, &written);
    let names: Vec<String> = {
        let mut v: Vec<_> = std::fs::read_dir(dir.join("img"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names[0], "000000.jpg");
    assert_eq!(names[11], "000011.jpg");
    assert_eq!(names.len(), 12);
}

#[test]
fn empty_sensor_reads_as_empty_and_validates() {
    let tmp = tempfile::tempdir().unwrap();
    let m = meta(vec![
        (
            "a",
            ChannelMeta::new(ChannelFormat::Raw, DType::U2, vec![2], ""),
        ),
        (
            "b",
            ChannelMeta::new(ChannelFormat::Lzmaf, DType::F8, vec![], ""),
        ),
        (
            "c",
            ChannelMeta::new(ChannelFormat::Blob("jpg".into()), DType::U1, vec![], ""),
        ),
    ]);
    let dir = tmp.path().join("s");
    let written = write_sensor(&dir, &m, 0);
    assert!(written.iter().all(Vec::is_empty));
    read_back(&dir, &m, &written);
    let s = format::Sensor::open(&dir).unwrap();
    assert!(s.is_empty().unwrap());
    assert_eq!(s.index_at(5.0).unwrap(), 0);
    // lzmaf's index holds exactly the leading 0.
    assert_eq!(std::fs::read(dir.join("b_i")).unwrap(), 0u64.to_le_bytes());
}

#[test]
fn resume_appends_after_existing_samples_and_refuses_other_channels() {
    let tmp = tempfile::tempdir().unwrap();
    let m = meta(vec![
        (
            "a",
            ChannelMeta::new(ChannelFormat::Raw, DType::I4, vec![2], ""),
        ),
        (
            "z",
            ChannelMeta::new(ChannelFormat::Lzmaf, DType::U1, vec![64], ""),
        ),
        (
            "j",
            ChannelMeta::new(ChannelFormat::Blob("jpg".into()), DType::U1, vec![], ""),
        ),
    ]);
    let dir = tmp.path().join("s");
    let first = write_sensor(&dir, &m, 3);
    let (mut w, rec) = SensorWriter::resume(&dir, m.clone(), &WriterOptions::default()).unwrap();
    assert!(rec.cuts.is_empty());
    assert_eq!(w.len(), 3);
    let more: Vec<Vec<u8>> = vec![pattern(0, 3, 8), pattern(1, 3, 64), pattern(2, 3, 5)];
    let refs: Vec<&[u8]> = more.iter().map(Vec::as_slice).collect();
    w.append(1000.3, &refs).unwrap();
    w.finish().unwrap();
    let mut all = first;
    for (k, s) in more.into_iter().enumerate() {
        all[k].push(s);
    }
    read_back(&dir, &m, &all);

    let other = meta(vec![(
        "a",
        ChannelMeta::new(ChannelFormat::Raw, DType::I4, vec![3], ""),
    )]);
    let err = SensorWriter::resume(&dir, other, &WriterOptions::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("differ"), "{err}");
}

#[test]
fn wrong_sample_sizes_are_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let m = meta(vec![
        (
            "a",
            ChannelMeta::new(ChannelFormat::Raw, DType::F4, vec![3], ""),
        ),
        (
            "b",
            ChannelMeta::new(ChannelFormat::Raw, DType::U1, vec![2], ""),
        ),
    ]);
    let dir = tmp.path().join("s");
    let mut w = SensorWriter::create(&dir, m, &WriterOptions::default()).unwrap();
    let err = w.append(1.0, &[&[0u8; 12], &[0u8; 3]]).unwrap_err();
    assert!(err.to_string().contains("expected 2"), "{err}");
    assert!(w.append(f64::NAN, &[&[0u8; 12], &[0u8; 2]]).is_err());
    // Before anything is written: a wrong-size sample in a later channel.
    assert!(w.append(1.0, &[&[0u8; 12], &[0u8; 5]]).is_err());
    assert!(w.append(1.0, &[&[0u8; 12]]).is_err());
    w.finish().unwrap();
    assert_eq!(std::fs::metadata(dir.join("a")).unwrap().len(), 0);
    assert_eq!(std::fs::metadata(dir.join("ts")).unwrap().len(), 0);
}

#[test]
fn bad_lzmaf_or_empty_blob_samples_leave_no_partial_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let m = meta(vec![
        (
            "a",
            ChannelMeta::new(ChannelFormat::Raw, DType::U1, vec![2], ""),
        ),
        (
            "z",
            ChannelMeta::new(ChannelFormat::Lzmaf, DType::U1, vec![4], ""),
        ),
        (
            "j",
            ChannelMeta::new(ChannelFormat::Blob("jpg".into()), DType::U1, vec![], ""),
        ),
    ]);
    let dir = tmp.path().join("s");
    let mut w = SensorWriter::create(&dir, m, &WriterOptions::default()).unwrap();
    let err = w.append(1.0, &[&[1, 2], &[0u8; 3], &[9]]).unwrap_err();
    assert!(err.to_string().contains("expected 4"), "{err}");
    let err = w.append(1.0, &[&[1, 2], &[0u8; 4], &[]]).unwrap_err();
    assert!(err.to_string().contains("empty sample"), "{err}");
    w.append(2.0, &[&[1, 2], &[0u8; 4], &[9]]).unwrap();
    assert_eq!(w.finish().unwrap(), 1);
    let check = format::check_sensor(&dir, format::Depth::Deep).unwrap();
    assert!(check.is_ok(), "{:?}", check.all_problems());
    assert_eq!(check.consistent_len(), 1);
}

#[test]
fn typed_views_of_raw_channels() {
    let tmp = tempfile::tempdir().unwrap();
    let m = meta(vec![(
        "acc",
        ChannelMeta::new(ChannelFormat::Raw, DType::F4, vec![3], ""),
    )]);
    let dir = tmp.path().join("imu");
    let mut w = SensorWriter::create(&dir, m, &WriterOptions::default()).unwrap();
    let values: Vec<f32> = (0..30).map(|i| i as f32 * 0.5 - 3.0).collect();
    for (i, v) in values.chunks(3).enumerate() {
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        w.append(i as f64, &[&bytes]).unwrap();
    }
    w.finish().unwrap();
    let s = format::Sensor::open(&dir).unwrap();
    let format::ChannelReader::Raw(r) = s.channel("acc").unwrap() else {
        panic!("raw")
    };
    let typed = r.typed::<f32>(DType::F4).unwrap();
    assert!(
        matches!(typed, std::borrow::Cow::Borrowed(_)),
        "a page-aligned map is viewed in place"
    );
    assert_eq!(&*typed, values.as_slice());
    assert!(r.typed::<f64>(DType::F4).is_err());
    assert_eq!(r.range(2..4).unwrap().len(), 2 * 12);
    // index_at: first sample at or after a time.
    assert_eq!(s.index_at(-1.0).unwrap(), 0);
    assert_eq!(s.index_at(3.0).unwrap(), 3);
    assert_eq!(s.index_at(3.5).unwrap(), 4);
    assert_eq!(s.index_at(100.0).unwrap(), 10);
}

#[test]
fn index_at_keeps_ts_mapped_and_sees_it_grow() {
    let tmp = tempfile::tempdir().unwrap();
    let m = meta(vec![(
        "v",
        ChannelMeta::new(ChannelFormat::Raw, DType::U1, vec![1], ""),
    )]);
    let dir = tmp.path().join("s");
    let mut w = SensorWriter::create(&dir, m, &WriterOptions::default()).unwrap();
    for i in 0..4 {
        w.append(i as f64, &[&[i as u8]]).unwrap();
    }
    w.flush().unwrap();
    let s = format::Sensor::open(&dir).unwrap();
    assert_eq!(s.index_at(2.5).unwrap(), 3);
    assert_eq!(s.index_at(10.0).unwrap(), 4);
    for i in 4..8 {
        w.append(i as f64, &[&[i as u8]]).unwrap();
    }
    w.flush().unwrap();
    // Inside the kept mapping: the same answer; past it: `ts` is looked at again.
    assert_eq!(s.index_at(2.5).unwrap(), 3);
    assert_eq!(s.index_at(6.0).unwrap(), 6);
    assert_eq!(s.index_at(10.0).unwrap(), 8);
    w.finish().unwrap();
}

#[test]
fn lzma_channel_with_several_streams_reads_whole_and_streamed() {
    // Upstream `lzma` channels are one .xz file; appending sessions can leave several streams.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    std::fs::create_dir(&dir).unwrap();
    let m = meta(vec![
        ("ts", ChannelMeta::timestamps()),
        (
            "v",
            ChannelMeta::new(ChannelFormat::Lzma, DType::U2, vec![5], ""),
        ),
    ]);
    m.write_atomic(&dir).unwrap();
    let samples: Vec<Vec<u8>> = (0..9).map(|i| pattern(0, i, 10)).collect();
    let mut file = lzma::compress(&samples[..4].concat(), 6);
    file.extend(lzma::compress(&samples[4..].concat(), 0));
    std::fs::write(dir.join("v"), file).unwrap();
    let ts: Vec<u8> = (0..9).flat_map(|i| (i as f64).to_le_bytes()).collect();
    std::fs::write(dir.join("ts"), ts).unwrap();

    let s = format::Sensor::open(&dir).unwrap();
    let mut streamed = Vec::new();
    s.channel("v")
        .unwrap()
        .visit(2..9, |_, b| {
            streamed.push(b.to_vec());
            Ok(())
        })
        .unwrap();
    assert_eq!(streamed, samples[2..], "visit decodes lzma as a stream");
    let mut r = s.channel("v").unwrap();
    assert_eq!(r.len().unwrap(), 9);
    assert_eq!(&*r.get(7).unwrap(), samples[7].as_slice());
    let format::ChannelReader::Lzma(lz) = r else {
        panic!("lzma")
    };
    let streamed: Vec<Vec<u8>> = lz.stream().unwrap().map(Result::unwrap).collect();
    assert_eq!(streamed, samples);
    assert!(format::check_sensor(&dir, format::Depth::Deep)
        .unwrap()
        .is_ok());
}

#[test]
fn trace_lists_real_and_virtual_sensors() {
    let tmp = tempfile::tempdir().unwrap();
    let m = meta(vec![(
        "a",
        ChannelMeta::new(ChannelFormat::Raw, DType::U1, vec![], ""),
    )]);
    write_sensor(&tmp.path().join("lidar"), &m, 2);
    write_sensor(&tmp.path().join("_processed"), &m, 1);
    write_sensor(&tmp.path().join("imu"), &m, 3);
    std::fs::create_dir(tmp.path().join("_roverlog")).unwrap();
    let t = Trace::open(tmp.path()).unwrap();
    assert_eq!(t.sensor_names(), ["imu", "lidar"]);
    assert_eq!(t.all_sensor_names(), ["_processed", "imu", "lidar"]);
    assert_eq!(t.sensor("imu").unwrap().len().unwrap(), 3);
    assert!(Trace::open(&tmp.path().join("imu/ts")).is_err());
    let nested = tempfile::tempdir().unwrap();
    assert!(
        Trace::open(nested.path()).is_err(),
        "an empty directory is not a trace"
    );
}

#[test]
fn visit_streams_every_format_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let m = meta(vec![
        (
            "r",
            ChannelMeta::new(ChannelFormat::Raw, DType::U2, vec![3], ""),
        ),
        (
            "z",
            ChannelMeta::new(ChannelFormat::Lzmaf, DType::U1, vec![9], ""),
        ),
        (
            "j",
            ChannelMeta::new(ChannelFormat::Blob("jpg".into()), DType::U1, vec![], ""),
        ),
    ]);
    let dir = tmp.path().join("s");
    let written = write_sensor(&dir, &m, 5);
    let s = format::Sensor::open(&dir).unwrap();
    for (k, (name, _)) in m.data_channels().enumerate() {
        let mut r = s.channel(name).unwrap();
        let mut seen = Vec::new();
        r.visit(1..4, |i, bytes| {
            seen.push((i, bytes.to_vec()));
            Ok(())
        })
        .unwrap();
        let want: Vec<_> = (1..4).map(|i| (i as u64, written[k][i].clone())).collect();
        assert_eq!(seen, want, "{name}");
        assert!(
            r.visit(4..6, |_, _| Ok(())).is_err(),
            "{name}: past the end"
        );
    }
}

#[test]
fn a_reader_of_a_live_sensor_never_sees_a_timestamp_before_its_data() {
    // 1-byte samples: the 8-byte timestamps fill their buffer first. Whatever reaches the
    // kernel (a reader, a crash) must never hold a timestamp whose data is still buffered.
    let tmp = tempfile::tempdir().unwrap();
    let m = meta(vec![(
        "a",
        ChannelMeta::new(ChannelFormat::Raw, DType::U1, vec![], ""),
    )]);
    let dir = tmp.path().join("s");
    let opts = WriterOptions {
        buffer_bytes: 4096,
        ..WriterOptions::default()
    };
    let mut w = SensorWriter::create(&dir, m, &opts).unwrap();
    for i in 0..2000usize {
        w.append(1000.0 + i as f64, &[&[i as u8]]).unwrap();
        let s = format::Sensor::open(&dir).unwrap();
        let n = s.len().unwrap();
        let mut a = s.channel("a").unwrap();
        assert!(
            a.len().unwrap() >= n,
            "after sample {i}: ts holds {n} samples, a only {}",
            a.len().unwrap()
        );
        if n > 0 {
            assert_eq!(&*a.get(n - 1).unwrap(), &[(n - 1) as u8]);
        }
    }
    assert_eq!(w.finish().unwrap(), 2000);
}

#[test]
fn a_resumed_writer_counts_nothing_durable_before_its_first_sync() {
    // What resume finds was flushed by the writer before, maybe never fsynced (a kill -9): it
    // is not known to be on disk until this writer syncs it.
    let tmp = tempfile::tempdir().unwrap();
    let m = meta(vec![(
        "a",
        ChannelMeta::new(ChannelFormat::Raw, DType::U1, vec![2], ""),
    )]);
    let dir = tmp.path().join("s");
    let mut w = SensorWriter::create(&dir, m.clone(), &WriterOptions::default()).unwrap();
    for i in 0..3 {
        w.append(i as f64, &[&[1, 2]]).unwrap();
    }
    w.flush().unwrap();
    assert_eq!(w.durable_len(), 0);
    drop(w); // a crash after a flush, before any fsync
    let (mut w, _) = SensorWriter::resume(&dir, m, &WriterOptions::default()).unwrap();
    assert_eq!(w.len(), 3);
    assert_eq!(w.durable_len(), 0, "nothing was fsynced");
    assert_eq!(w.sync().unwrap(), 3);
    assert_eq!(w.durable_len(), 3);
}

#[test]
fn a_blob_channel_with_a_huge_declared_shape_reads() {
    // Blob samples are variable-size: their declared shape is informative only, and no size
    // is computed from it (meta.json is untrusted input).
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    std::fs::create_dir_all(dir.join("img")).unwrap();
    std::fs::write(
        dir.join("meta.json"),
        r#"{"ts": {"format": "raw", "type": "f8", "shape": [], "desc": ""},
            "img": {"format": "jpg", "type": "u1", "shape": [4294967296, 4294967296, 3], "desc": ""}}"#,
    )
    .unwrap();
    std::fs::write(dir.join("ts"), 1.0f64.to_le_bytes()).unwrap();
    std::fs::write(dir.join("img/000000.jpg"), b"jpeg").unwrap();
    let s = format::Sensor::open(&dir).unwrap();
    assert_eq!(&*s.channel("img").unwrap().get(0).unwrap(), b"jpeg");
    assert!(format::check_sensor(&dir, format::Depth::Deep)
        .unwrap()
        .is_ok());
}

/// `validate --deep` draws its per-channel bar from this: a deep check reports each channel
/// whose frames it decodes from 0 up to its whole count, with the compressed bytes read so
/// far (frames are decoded in chunks on every core, so the steps between are the chunks');
/// a structure check decodes nothing and reports nothing.
#[test]
fn deep_check_reports_progress_through_each_decoded_channel() {
    let tmp = tempfile::tempdir().unwrap();
    let m = meta(vec![
        (
            "a",
            ChannelMeta::new(ChannelFormat::Raw, DType::U1, vec![2], ""),
        ),
        (
            "z",
            ChannelMeta::new(ChannelFormat::Lzmaf, DType::U1, vec![64], ""),
        ),
    ]);
    let dir = tmp.path().join("s");
    write_sensor(&dir, &m, 7);

    let mut seen = Vec::new();
    let check = format::check_sensor_with_progress(&dir, format::Depth::Deep, &mut |p| {
        seen.push((p.channel.to_string(), p.done, p.total, p.bytes))
    })
    .unwrap();
    assert!(check.is_ok(), "{:?}", check.all_problems());
    assert!(
        seen.iter().all(|(c, _, total, _)| c == "z" && *total == 7),
        "only the lzmaf channel is decoded, and its total is its count: {seen:?}"
    );
    let first = seen.first().expect("progress was reported");
    let last = seen.last().expect("progress was reported");
    assert_eq!((first.1, first.3), (0, 0), "starts at nothing: {seen:?}");
    let data = std::fs::metadata(dir.join("z")).unwrap().len();
    assert_eq!(
        (last.1, last.3),
        (7, data),
        "ends at every frame and byte: {seen:?}"
    );
    assert!(
        seen.windows(2)
            .all(|w| w[1].1 >= w[0].1 && w[1].3 >= w[0].3),
        "frames and bytes never go back: {seen:?}"
    );

    let mut structure = 0;
    format::check_sensor_with_progress(&dir, format::Depth::Structure, &mut |_| structure += 1)
        .unwrap();
    assert_eq!(structure, 0, "a structure check decodes nothing");
}

/// A driver (or `convert`) may declare `args.fps` for an `mjpg` channel: it sets the AVI
/// header's rate, stays out of `meta.json` (upstream refuses an unknown channel argument),
/// and resuming with the same declaration is not a mismatch.
#[test]
fn mjpg_fps_hint_is_not_kept_and_resume_still_matches() {
    let tmp = tempfile::tempdir().unwrap();
    let mut video = ChannelMeta::new(ChannelFormat::Mjpg, DType::U1, vec![8, 8, 3], "");
    let mut args = serde_json::Map::new();
    args.insert("fps".into(), serde_json::json!(10.0));
    video.args = Some(args);
    let m = meta(vec![("video.avi", video)]);
    let dir = tmp.path().join("camera");
    SensorWriter::create(&dir, m.clone(), &WriterOptions::default())
        .unwrap()
        .finish()
        .unwrap();
    let text = std::fs::read_to_string(dir.join("meta.json")).unwrap();
    assert!(!text.contains("fps") && !text.contains("args"), "{text}");
    let avi = std::fs::read(dir.join("video.avi")).unwrap();
    // avih's first field: microseconds per frame.
    let at = avi.windows(4).position(|w| w == b"avih").unwrap() + 8;
    let us = u32::from_le_bytes(avi[at..at + 4].try_into().unwrap());
    assert_eq!(us, 100_000, "10 fps in the header");
    let (w, rec) = SensorWriter::resume(&dir, m, &WriterOptions::default()).unwrap();
    assert!(rec.cuts.is_empty());
    assert_eq!(w.len(), 0);
}
