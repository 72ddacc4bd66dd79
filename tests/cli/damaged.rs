//! Damaged channels read up to the damage (issue 25): a trace written by the format library,
//! then damaged the way a crash, a full disk or a careless copy leaves it (an `lzmaf` data
//! file cut to 70%, a `raw` file cut inside a record, a `jpg` file deleted in the middle, an
//! AVI cut short, a JPEG zero-filled by a power cut). The library and `roverlog cat`/`extract`
//! give every intact sample as it was written; a sample `ts` counts that is damaged is an
//! error naming the channel, the sample and `roverlog recover`; `info` marks the channel and
//! `validate` reports the damage.

use crate::support::common;

use std::path::{Path, PathBuf};

use roverlog_core::error::{Damage, Error, XzProblem};
use roverlog_core::format::{self, ChannelFormat, DType, Sensor, SensorWriter, WriterOptions};

const N: u64 = 20;

/// Sample `i` of a channel: `n` bytes that differ per sample and compress poorly (so an
/// `lzmaf` frame's size grows with `n`).
fn sample(i: u64, n: usize) -> Vec<u8> {
    roverlog_core::noise(n, 0x5eed + i)
}

/// A fake JPEG frame (SOI, then bytes): what an `mjpg` channel stores, read back with `--jpeg`.
fn frame(i: u64) -> Vec<u8> {
    let mut v = vec![0xFF, 0xD8];
    v.extend(sample(i, 200 + i as usize * 3));
    v
}

/// A trace `<root>/t` with one sensor `s` holding channel `ch` of `format`, `N` samples
/// made by `make`; returns the trace and what was written.
fn trace(
    root: &Path,
    ch: &str,
    format: ChannelFormat,
    dtype: DType,
    shape: Vec<usize>,
    make: impl Fn(u64) -> Vec<u8>,
) -> (PathBuf, Vec<Vec<u8>>) {
    let t = root.join("t");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(t.join("config.yaml"), "{}\n").unwrap();
    let meta = common::sensor_meta(&[(ch, format, dtype, shape)], "");
    let mut w = SensorWriter::create(&t.join("s"), meta, &WriterOptions::default()).unwrap();
    let written: Vec<Vec<u8>> = (0..N).map(make).collect();
    for (i, s) in written.iter().enumerate() {
        w.append(100.0 + i as f64 * 0.1, &[s]).unwrap();
    }
    w.finish().unwrap();
    (t, written)
}

/// Cuts the file at `path` to `len` bytes.
fn cut(path: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// Asserts that `e` is the damaged-sample error for sample `index` of the channel at `path`,
/// and that its message names both and `roverlog recover`; returns the damage.
fn assert_damaged(e: Error, path: &Path, index: u64) -> Damage {
    let msg = e.to_string();
    for part in [
        path.display().to_string(),
        format!("sample {index} is damaged"),
        "roverlog recover".into(),
    ] {
        assert!(msg.contains(&part), "{part:?} not in: {msg}");
    }
    match e {
        Error::DamagedSample {
            path: p,
            index: i,
            damage,
        } => {
            assert_eq!((p.as_path(), i), (path, index), "{msg}");
            damage
        }
        other => panic!("expected a damaged sample, got: {other}"),
    }
}

/// The library reads the `intact` samples as written (by `len` and one by one), and the
/// samples in `damaged` fail naming themselves; one past `ts` is out of range.
fn assert_library_reads(
    t: &Path,
    ch: &str,
    written: &[Vec<u8>],
    len: u64,
    damaged: &[u64],
) -> Vec<Damage> {
    let s = Sensor::open(&t.join("s")).unwrap();
    assert_eq!(s.len().unwrap(), N, "ts is untouched");
    let mut r = s.channel(ch).unwrap();
    assert_eq!(
        r.len().unwrap(),
        len,
        "{ch}: the count ts and the data agree on"
    );
    for i in 0..N {
        if damaged.contains(&i) {
            continue;
        }
        if i < len || r.get(i).is_ok() {
            assert_eq!(&*r.get(i).unwrap(), &written[i as usize][..], "{ch}[{i}]");
        }
    }
    let path = t.join("s").join(ch);
    let found = damaged
        .iter()
        .map(|&i| assert_damaged(r.get(i).unwrap_err(), &path, i))
        .collect();
    assert!(
        matches!(r.get(N), Err(Error::OutOfRange { .. })),
        "{ch}[{N}]: past ts is out of range"
    );
    found
}

/// `roverlog cat` with optional `--rows`/`--jpeg`: (exit code, stdout, stderr).
fn cat(t: &Path, item: &str, rows: Option<&str>, jpeg: bool) -> common::Run {
    let mut args: Vec<std::ffi::OsString> = vec!["cat".into(), t.into(), item.into()];
    if let Some(r) = rows {
        args.extend(["--rows".into(), r.into()]);
    }
    if jpeg {
        args.push("--jpeg".into());
    }
    common::roverlog(&args)
}

/// The binary on the damaged trace: `cat` writes the intact samples (warning about the
/// damage when the channel holds fewer than `ts` counts), `cat --rows` of a damaged sample
/// fails naming it, `info` describes the trace, `validate` reports `problem`, `extract` of
/// a window before the damage copies it and one over it fails naming the sample.
#[allow(clippy::too_many_arguments)] // each case's expectations, named where it calls
fn assert_binary(
    t: &Path,
    ch: &str,
    written: &[Vec<u8>],
    len: u64,
    first_damaged: u64,
    jpeg: bool,
    problem: &str,
    in_info: Option<&str>,
) {
    let item = format!("s/{ch}");
    let path = t.join("s").join(ch);
    let names = |text: &str, index: u64| {
        for part in [
            path.display().to_string(),
            format!("sample {index} is damaged"),
            "roverlog recover".into(),
        ] {
            assert!(text.contains(&part), "{part:?} not in: {text}");
        }
    };

    let all = cat(t, &item, None, jpeg);
    let upto = if len == N { first_damaged } else { len };
    assert_eq!(
        all.stdout,
        written[..upto as usize].concat(),
        "cat {item}: {}",
        all.stderr
    );
    if len < N {
        assert_eq!(all.code, 0, "cat {item}: {}", all.stderr);
        assert!(all.stderr.contains("warning"), "{}", all.stderr);
        names(&all.stderr, len);
    } else {
        // A hole before the channel's end: the samples before it, then the error.
        assert_eq!(all.code, 2, "cat {item}: {}", all.stderr);
        names(&all.stderr, first_damaged);
    }

    let one = cat(t, &item, Some(&first_damaged.to_string()), jpeg);
    assert_eq!(one.code, 2, "cat --rows {first_damaged}: {}", one.text());
    names(&one.stderr, first_damaged);
    if first_damaged > 0 {
        let before = cat(t, &item, Some(&format!(":{first_damaged}")), jpeg);
        assert_eq!(before.code, 0, "{}", before.stderr);
        assert_eq!(before.stdout, written[..first_damaged as usize].concat());
    }

    let info = common::roverlog(&["info".as_ref(), t.as_os_str()]);
    assert_eq!(info.code, 0, "info: {}", info.text());
    assert!(info.out().contains(&N.to_string()), "{}", info.out());
    // The channel is marked, with what its reader found on opening, and the way on; damage
    // an opening cannot see (`None`: an entry in the middle of an `lzmaf` index) is left to
    // `validate`, and `info` marks nothing.
    let parts = in_info.map_or(vec![], |i| {
        vec!["DAMAGED", i, "roverlog validate", "roverlog recover"]
    });
    for part in parts {
        assert!(
            info.out().contains(part),
            "{part:?} not in info:\n{}",
            info.out()
        );
    }
    let json = common::roverlog(&["info".as_ref(), "--json".as_ref(), t.as_os_str()]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("info --json");
    assert_eq!(v["damaged"], in_info.is_some(), "{v}");
    for c in v["sensors"][0]["channels"].as_array().unwrap() {
        let damage = c["damage"].as_str();
        if let (true, Some(in_info)) = (c["name"] == ch, in_info) {
            assert!(damage.is_some_and(|d| d.contains(in_info)), "{c}");
            // A raw channel's ratio counts only the samples it holds (a cut one read x1.6).
            if c["format"] == "raw" {
                assert_eq!(
                    c["compression_ratio"].as_f64().map(|r| r <= 1.0),
                    Some(true),
                    "{c}"
                );
            }
        } else {
            assert_eq!(damage, None, "{c}");
        }
    }

    let v = common::roverlog(&["validate".as_ref(), t.as_os_str()]);
    assert_eq!(v.code, 1, "validate: {}", v.text());
    assert!(
        v.out().contains(problem),
        "{problem:?} not in:\n{}",
        v.out()
    );

    // ts runs 100.0, 100.1, ...: [100.0, 100.0 + 0.1 k) holds samples 0..k.
    let extract = |name: &str, end: u64| {
        let dst = t.with_file_name(name);
        let run = common::roverlog(&[
            "extract".as_ref(),
            t.as_os_str(),
            dst.as_os_str(),
            "--epoch".as_ref(),
            "--start".as_ref(),
            "100".as_ref(),
            "--end".as_ref(),
            format!("{}", 100.0 + 0.1 * end as f64 - 0.05).as_ref(),
        ]);
        (run, dst)
    };
    if first_damaged > 0 {
        let (run, dst) = extract("before", first_damaged);
        assert_eq!(run.code, 0, "extract before the damage: {}", run.text());
        let s = Sensor::open(&dst.join("s")).unwrap();
        let mut r = s.channel(ch).unwrap();
        assert_eq!(r.len().unwrap(), first_damaged);
        for i in 0..first_damaged {
            assert_eq!(
                &*r.get(i).unwrap(),
                &written[i as usize][..],
                "copied {ch}[{i}]"
            );
        }
    }
    let (run, _) = extract("over", N);
    assert_eq!(run.code, 2, "extract over the damage: {}", run.text());
    names(&run.stderr, first_damaged);
}

#[test]
fn an_lzmaf_channel_cut_to_70_percent_reads_its_whole_frames() {
    let tmp = tempfile::tempdir().unwrap();
    let (t, written) = trace(
        tmp.path(),
        "rng",
        ChannelFormat::Lzmaf,
        DType::U2,
        vec![128],
        |i| sample(i, 256),
    );
    let data = t.join("s/rng");
    let size = std::fs::metadata(&data).unwrap().len();
    let offsets = format::lzmaf::read_index(&format::lzmaf::index_path(&data)).unwrap();
    // About 70%, inside a frame (every frame here is the same size: 70% is a boundary).
    let at = size * 7 / 10 + 7;
    cut(&data, at);
    // The frames upstream reads too: those whose bytes all lie before the cut.
    let intact = offsets[1..].iter().filter(|&&end| end <= at).count() as u64;
    assert!(0 < intact && intact < N, "{intact} intact frames");

    let damages = assert_library_reads(&t, "rng", &written, intact, &[intact, N - 1]);
    assert!(
        matches!(damages[0], Damage::Cut { have, need } if have > 0 && have < need),
        "{:?}",
        damages[0]
    );
    assert!(
        matches!(damages[1], Damage::PastData { data_len, .. } if data_len == at),
        "{:?}",
        damages[1]
    );
    assert_binary(
        &t,
        "rng",
        &written,
        intact,
        intact,
        false,
        "lie within the",
        Some(&format!("holds {intact} of the {N} samples")),
    );
}

/// An `lzmaf` channel opens without walking its index when the last entry lies within the
/// data (issue 25: open costs the same for an hour): each read checks its own entries.
fn lzmaf_trace(root: &Path) -> (PathBuf, Vec<Vec<u8>>, PathBuf) {
    let (t, written) = trace(
        root,
        "rng",
        ChannelFormat::Lzmaf,
        DType::U2,
        vec![128],
        |i| sample(i, 256),
    );
    let index = format::lzmaf::index_path(&t.join("s/rng"));
    (t, written, index)
}

#[test]
fn an_lzmaf_channel_with_a_torn_index_reads_up_to_the_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let (t, written, index) = lzmaf_trace(tmp.path());
    // A torn last entry (a disk that lost the index's last write): the frame it ended is
    // not indexed, every frame before it reads.
    cut(&index, std::fs::metadata(&index).unwrap().len() - 3);
    let damages = assert_library_reads(&t, "rng", &written, N - 1, &[N - 1]);
    assert_eq!(damages, [Damage::NotIndexed { frames: N - 1 }]);
    let holds = format!("holds {} of the {N} samples", N - 1);
    assert_binary(
        &t,
        "rng",
        &written,
        N - 1,
        N - 1,
        false,
        "torn entry",
        Some(&holds),
    );
}

#[test]
fn an_lzmaf_index_entry_out_of_order_damages_only_the_frames_it_bounds() {
    let tmp = tempfile::tempdir().unwrap();
    let (t, written, index) = lzmaf_trace(tmp.path());
    // Entry 6 (the end of frame 5, the start of frame 6) points far past the data; the last
    // entry is still within it, so the count is every listed frame and the reads of frames
    // 5 and 6 find the entry (as upstream, which reads each frame from its own entries).
    let mut bytes = std::fs::read(&index).unwrap();
    bytes[6 * 8..7 * 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    std::fs::write(&index, &bytes).unwrap();
    let damages = assert_library_reads(&t, "rng", &written, N, &[5, 6]);
    for d in &damages {
        assert!(matches!(d, Damage::BadIndex { .. }), "{d:?}");
    }
    assert_binary(&t, "rng", &written, N, 5, false, "in order", None);
}

#[test]
fn a_raw_channel_cut_inside_a_record_reads_its_whole_records() {
    let tmp = tempfile::tempdir().unwrap();
    let (t, written) = trace(
        tmp.path(),
        "iq",
        ChannelFormat::Raw,
        DType::I2,
        vec![4, 8],
        |i| sample(i, 64),
    );
    // 12 whole records and half of the 13th; ts still counts 20.
    cut(&t.join("s/iq"), 12 * 64 + 32);
    let damages = assert_library_reads(&t, "iq", &written, 12, &[12, 13, N - 1]);
    assert_eq!(damages[0], Damage::Cut { have: 32, need: 64 });
    assert_eq!(damages[1], Damage::Cut { have: 0, need: 64 });
    assert_binary(
        &t,
        "iq",
        &written,
        12,
        12,
        false,
        "torn tail: 32 bytes",
        Some("holds 12 of the 20 samples"),
    );
}

#[test]
fn a_jpg_channel_missing_a_file_in_the_middle_keeps_its_count_and_later_frames() {
    let tmp = tempfile::tempdir().unwrap();
    let (t, written) = trace(
        tmp.path(),
        "img",
        ChannelFormat::Blob("jpg".into()),
        DType::U1,
        vec![],
        frame,
    );
    let dir = t.join("s/img");
    std::fs::remove_file(dir.join("000007.jpg")).unwrap();
    // An empty file: what a power cut leaves of a sample whose data never reached the disk.
    std::fs::write(dir.join("000011.jpg"), b"").unwrap();
    let damages = assert_library_reads(&t, "img", &written, N, &[7, 11]);
    assert_eq!(
        damages,
        [
            Damage::FileMissing {
                file: dir.join("000007.jpg")
            },
            Damage::FileEmpty {
                file: dir.join("000011.jpg")
            }
        ]
    );
    // The frames after the hole are still there for `cat`.
    let later = cat(&t, "s/img", Some("12:"), false);
    assert_eq!(later.code, 0, "{}", later.stderr);
    assert_eq!(later.stdout, written[12..].concat());
    assert_binary(
        &t,
        "img",
        &written,
        N,
        7,
        false,
        "sample 7 is missing but sample 8 exists",
        Some("2 of the 20 sample files ts counts are missing or empty"),
    );
    // Every hole, not only the first.
    let v = common::roverlog(&["validate".as_ref(), t.as_os_str()]);
    assert!(
        v.out().contains("sample 11 is an empty file"),
        "{}",
        v.out()
    );

    // The last files gone: the count is what ts and the listing agree on.
    for i in 15..N {
        std::fs::remove_file(dir.join(format!("{i:06}.jpg"))).unwrap();
    }
    assert_library_reads(&t, "img", &written, 15, &[7, 11, 15, N - 1]);
}

#[test]
fn an_mjpg_video_cut_short_reads_its_whole_frames() {
    let tmp = tempfile::tempdir().unwrap();
    let (t, written) = trace(
        tmp.path(),
        "video.avi",
        ChannelFormat::Mjpg,
        DType::U1,
        vec![48, 64, 3],
        frame,
    );
    let video = t.join("s/video.avi");
    let frames = format::avi::MjpgReader::open(&video)
        .unwrap()
        .layout()
        .frames
        .clone();
    // Inside frame 9's chunk: frames 0..9 are whole.
    let f9 = &frames[9];
    cut(&video, f9.offset + u64::from(f9.len) / 2);
    let damages = assert_library_reads(&t, "video.avi", &written, 9, &[9, N - 1]);
    assert_eq!(damages[0], Damage::NoFrame { frames: 9 });
    assert_binary(
        &t,
        "video.avi",
        &written,
        9,
        9,
        true,
        "cut by the end of the file",
        Some("holds 9 of the 20 samples"),
    );

    // Cut to 100 bytes: inside the header, no frame; every one ts counts is damaged.
    cut(&video, 100);
    let damages = assert_library_reads(&t, "video.avi", &written, 0, &[0, N - 1]);
    assert_eq!(damages[0], Damage::NoFrame { frames: 0 });
    let one = cat(&t, "s/video.avi", Some("0"), true);
    assert_eq!(one.code, 2, "{}", one.text());
    assert!(one.stderr.contains("sample 0 is damaged"), "{}", one.stderr);
}

#[test]
fn a_whole_file_lzma_channel_cut_short_reads_what_decodes() {
    // `lzma` is not appendable: written as upstream's tools write it, one `.xz` for all.
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().join("t");
    let dir = t.join("s");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(t.join("config.yaml"), "{}\n").unwrap();
    let mut meta = common::sensor_meta(&[("h", ChannelFormat::Lzma, DType::U4, vec![64])], "");
    meta.channels
        .insert(0, ("ts".into(), format::ChannelMeta::timestamps()));
    meta.write_atomic(&dir).unwrap();
    let written: Vec<Vec<u8>> = (0..N).map(|i| sample(i, 256)).collect();
    let ts: Vec<u8> = (0..N)
        .flat_map(|i| (100.0 + i as f64 * 0.1).to_le_bytes())
        .collect();
    std::fs::write(dir.join("ts"), ts).unwrap();
    // Two streams, as upstream's `lzma.open(path, "ab")` appends them; cut inside the second.
    // (Our decoder hands out an LZMA2 chunk only whole: the torn chunk's samples are lost,
    // where liblzma may give a few of them.)
    let mut file = format::lzma::compress(&written[..12].concat(), 0);
    let second = format::lzma::compress(&written[12..].concat(), 0);
    file.extend_from_slice(&second[..second.len() / 2]);
    std::fs::write(dir.join("h"), &file).unwrap();

    let n = Sensor::open(&dir)
        .unwrap()
        .channel("h")
        .unwrap()
        .len()
        .unwrap();
    assert!((12..N).contains(&n), "{n} samples decode");
    let damages = assert_library_reads(&t, "h", &written, n, &[n, N - 1]);
    assert!(
        matches!(&damages[0], Damage::Undecodable(XzProblem::Decoder(_))),
        "{:?}",
        damages[0]
    );
    assert_binary(
        &t,
        "h",
        &written,
        n,
        n,
        false,
        "xz:",
        Some(".xz indexes do not read"),
    );
}

/// `n` bytes of zeros over `len` bytes at `offset` of the file at `path`: what a power cut
/// leaves of data whose blocks were allocated but never written.
fn zero_fill(path: &Path, offset: u64, len: u64) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(&vec![0u8; len as usize], offset).unwrap();
}

/// A trace of real JPEGs (the gulp fixture's 31 frames, imported): `camera/img`, `jpg`.
fn jpeg_trace(root: &Path) -> PathBuf {
    let t = root.join("t");
    let src = common::root().join("tests/data/gulp_small");
    let r = common::roverlog(&["import".as_ref(), src.as_os_str(), t.as_os_str()]);
    assert_eq!(r.code, 0, "import: {}", r.text());
    t
}

#[test]
fn a_zero_filled_jpg_file_is_reported_and_recover_cuts_it() {
    let tmp = tempfile::tempdir().unwrap();
    let t = jpeg_trace(tmp.path());
    let file = t.join("camera/img/000005.jpg");
    let len = std::fs::metadata(&file).unwrap().len();
    zero_fill(&file, 0, len);

    let v = common::roverlog(&["validate".as_ref(), t.as_os_str()]);
    assert_eq!(v.code, 1, "{}", v.text());
    assert!(v.out().contains("sample 5 is zero-filled"), "{}", v.out());
    let r = common::roverlog(&["recover".as_ref(), t.as_os_str()]);
    assert_eq!(r.code, 0, "recover: {}", r.text());
    let s = Sensor::open(&t.join("camera")).unwrap();
    assert_eq!(s.len().unwrap(), 5, "cut back to the samples before it");
    assert!(!file.exists(), "{}", r.out());
    let v = common::roverlog(&["validate".as_ref(), t.as_os_str()]);
    assert_eq!(v.code, 0, "{}", v.text());
}

#[test]
fn a_zero_filled_mjpg_frame_names_the_sample_and_recover_cuts_it() {
    let tmp = tempfile::tempdir().unwrap();
    let t = jpeg_trace(tmp.path());
    let mjpg = tmp.path().join("v");
    let r = common::roverlog(&[
        "convert".as_ref(),
        "--channel".as_ref(),
        "camera/img=mjpg".as_ref(),
        t.as_os_str(),
        mjpg.as_os_str(),
    ]);
    assert_eq!(r.code, 0, "convert: {}", r.text());
    let video = mjpg.join("camera/img");
    let frames = format::avi::MjpgReader::open(&video)
        .unwrap()
        .layout()
        .frames
        .clone();
    assert!(frames.len() > 6, "{} frames", frames.len());
    // The fixture's videos differ in size: the first five frames' pixels, as decoded intact.
    let before = cat(&mjpg, "camera/img", Some(":5"), false);
    assert_eq!(before.code, 0, "{}", before.text());
    let before = before.stdout;
    // Frame 5's bytes zeroed from its second half on: its chunk header and SOI are there.
    let f5 = &frames[5];
    zero_fill(
        &video,
        f5.offset + u64::from(f5.len) / 2,
        u64::from(f5.len) / 2 + 1,
    );

    // Decoding (cat's default for video) stops at frame 5, naming it and the way on.
    let c = cat(&mjpg, "camera/img", None, false);
    assert_eq!(c.code, 2, "{}", c.stderr);
    for part in [
        video.display().to_string(),
        "sample 5 is damaged".into(),
        "zero-filled".into(),
        "roverlog recover".into(),
    ] {
        assert!(c.stderr.contains(&part), "{part:?} not in: {}", c.stderr);
    }
    assert!(
        c.stdout == before,
        "the frames before it: {} bytes, expected {}",
        c.stdout.len(),
        before.len()
    );

    let v = common::roverlog(&["validate".as_ref(), mjpg.as_os_str()]);
    assert_eq!(v.code, 1, "{}", v.text());
    assert!(v.out().contains("frame 5 is zero-filled"), "{}", v.out());
    let r = common::roverlog(&["recover".as_ref(), mjpg.as_os_str()]);
    assert_eq!(r.code, 0, "recover: {}", r.text());
    let c = cat(&mjpg, "camera/img", None, false);
    assert_eq!(c.code, 0, "{}", c.text());
    assert!(
        c.stdout == before,
        "recover kept frames 0..5: {} bytes, expected {}",
        c.stdout.len(),
        before.len()
    );
}
