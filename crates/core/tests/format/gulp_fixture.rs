//! The GulpIO2 reader against `tests/data/gulp_small/`, written by gulpio2 0.0.4; every
//! expected value comes from `tests/data/gulp_small.expected.json` (written by gulpio2 too).

use crate::support::common;

use roverlog_core::gulp::{sanity_check, FrameSelection, GulpDirectory, GulpOptions};
#[cfg(feature = "jpeg")]
use roverlog_core::jpeg::Backend;
use serde_json::Value;

/// The expected means come from gulpio2's decoder: simplejpeg with `fastdct=True`, i.e.
/// libjpeg-turbo's fast, less accurate integer IDCT (JDCT_IFAST). zune-jpeg and our
/// libjpeg-turbo path use an accurate IDCT; on these frames its means are 0.8 levels above gulpio2's and within 0.01 of
/// simplejpeg with `fastdct=False` (checked by hand with the venv). A tolerance of 1.0
/// levels covers the IDCT difference and still catches a wrong channel order, colour
/// conversion or frame. The largest difference seen is printed.
#[cfg(feature = "jpeg")]
const MEAN_TOLERANCE: f64 = 1.0;

fn fixture() -> (GulpDirectory, Value) {
    let root = common::root().join("tests/data");
    let dir = GulpDirectory::open(root.join("gulp_small")).unwrap();
    let text = std::fs::read_to_string(root.join("gulp_small.expected.json")).unwrap();
    (dir, serde_json::from_str(&text).unwrap())
}

fn sha_prefix(bytes: &[u8]) -> String {
    common::sha256_hex(bytes)[..16].to_string()
}

#[test]
fn ids_chunks_meta_and_frame_bytes_match_gulpio2() {
    let (dir, expected) = fixture();
    let videos = expected["videos"].as_object().unwrap();
    // The expected file lists ids as gulpio2 iterates them: chunk by chunk, file order.
    let want_ids: Vec<&str> = videos.keys().map(String::as_str).collect();
    assert_eq!(dir.ids().collect::<Vec<_>>(), want_ids);
    for (id, want) in videos {
        let v = dir.video(id).unwrap();
        assert_eq!(v.chunk(), want["chunk"].as_u64().unwrap(), "{id}");
        assert_eq!(dir.meta(id).unwrap(), &want["meta"], "{id}");
        assert_eq!(
            v.frame_count() as u64,
            want["frames"].as_u64().unwrap(),
            "{id}"
        );
        let shas: Vec<String> = dir
            .frames(id, &FrameSelection::All)
            .unwrap()
            .iter()
            .map(|f| sha_prefix(f))
            .collect();
        let want_shas: Vec<&str> = want["jpeg_sha256_prefix"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        assert_eq!(shas, want_shas, "{id}");
        // The iterator and the selection agree.
        assert!(v.frames().eq(dir.frames(id, &FrameSelection::All).unwrap()));
    }
}

#[cfg(feature = "jpeg")]
#[test]
fn decoded_frames_match_simplejpeg() {
    // Both decoders: zune-jpeg, and libjpeg-turbo (scripts/test installs it; a machine
    // without it fails here, as `jpeg_decoders::libjpeg_turbo_loads_and_auto_picks_it` says).
    for with in [Backend::Zune, Backend::Turbo] {
        decoded_frames_match_simplejpeg_with(with);
    }
}

#[cfg(feature = "jpeg")]
fn decoded_frames_match_simplejpeg_with(with: Backend) {
    use roverlog_core::gulp::decode_jpeg_with;
    use roverlog_core::jpeg::DEFAULT_MAX_PIXELS;
    let (dir, expected) = fixture();
    let mut worst = 0.0f64;
    for (id, want) in expected["videos"].as_object().unwrap() {
        let means = want["decoded_mean_per_frame"].as_array().unwrap();
        let v = dir.video(id).unwrap();
        assert_eq!(means.len(), v.frame_count());
        for (i, (frame, mean)) in v.frames().zip(means).enumerate() {
            let img = decode_jpeg_with(frame, DEFAULT_MAX_PIXELS, with).unwrap();
            assert_eq!(img.height as u64, want["height"].as_u64().unwrap(), "{id}");
            assert_eq!(img.width as u64, want["width"].as_u64().unwrap(), "{id}");
            assert_eq!(img.channels, 3, "{id}");
            assert_eq!(img.pixels.len(), img.width * img.height * 3);
            let diff = (img.mean() - mean.as_f64().unwrap()).abs();
            worst = worst.max(diff);
            assert!(
                diff <= MEAN_TOLERANCE,
                "{with:?}: {id} frame {i}: mean {} vs {mean}",
                img.mean()
            );
        }
    }
    println!("{with:?}: largest |mean - simplejpeg mean| = {worst:.4}");
    // The pixel limit is checked from the header, before decoding.
    let frame = dir.video("video001").unwrap().frame(0).unwrap();
    let err = decode_jpeg_with(frame, 48 * 32 - 1, with).unwrap_err();
    assert!(err.to_string().contains("48x32"), "{with:?}: {err}");
    assert!(decode_jpeg_with(frame, 48 * 32, with).is_ok());
}

#[test]
fn slice_example() {
    let (dir, expected) = fixture();
    let ex = &expected["slice_example"];
    let id = ex["id"].as_str().unwrap();
    let sel: FrameSelection = ex["slice"].as_str().unwrap().parse().unwrap();
    let want: Vec<usize> = ex["frames_selected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(
        sel.resolve(dir.video(id).unwrap().frame_count()).unwrap(),
        want
    );
    let got = dir.frames(id, &sel).unwrap();
    let v = dir.video(id).unwrap();
    let by_index: Vec<&[u8]> = want.iter().map(|&i| v.frame(i).unwrap()).collect();
    assert_eq!(got, by_index);
    let idx = FrameSelection::Indices(want.iter().map(|&i| i as i64).collect());
    assert_eq!(dir.frames(id, &idx).unwrap(), by_index);
}

#[test]
fn cat_writes_frames_back_to_back() {
    let (dir, _) = fixture();
    let sel = FrameSelection::range(1, 3);
    let mut out = Vec::new();
    let n = dir.write_frames("1002", &sel, &mut out).unwrap();
    assert_eq!(n as usize, out.len());
    assert_eq!(out, dir.frames("1002", &sel).unwrap().concat());
    // JPEG start and end markers at the seams: the padding is gone.
    let first = dir.video("1002").unwrap().frame(1).unwrap();
    assert_eq!(&out[..2], &[0xff, 0xd8]);
    assert_eq!(
        &out[first.len() - 2..first.len() + 2],
        &[0xff, 0xd9, 0xff, 0xd8]
    );
}

#[test]
fn sanity_check_and_describe() {
    let (dir, expected) = fixture();
    let report = sanity_check(dir.path(), &GulpOptions::default()).unwrap();
    assert!(report.is_ok(), "{report}");
    let videos = expected["videos"].as_object().unwrap();
    assert_eq!(report.ids, videos.len());
    let s = dir.describe();
    let frames: u64 = videos.values().map(|v| v["frames"].as_u64().unwrap()).sum();
    assert_eq!(s.frames as u64, frames);
    assert_eq!(s.ids, videos.len());
    assert_eq!(s.chunks.len(), 2);
    assert_eq!(s.data_bytes, 23480 + 14368);
    assert_eq!((s.frames_per_id_min, s.frames_per_id_max), (5, 7));
    let text = s.to_string();
    assert!(text.contains("2 chunks, 5 ids, 31 frames"), "{text}");
    assert!(roverlog_core::gulp::is_gulp_dir(dir.path()));
    assert!(!roverlog_core::gulp::is_gulp_dir(
        common::root().join("src")
    ));
}

#[test]
fn read_all_gives_every_frame_once_with_any_thread_count() {
    let (dir, _) = fixture();
    let want: Vec<(String, usize, Vec<u8>)> = dir
        .videos()
        .flat_map(|v| {
            v.frames()
                .enumerate()
                .map(move |(i, f)| (v.id().to_string(), i, f.to_vec()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(want.len() > 3);
    for threads in [1, 2, 8] {
        let got = std::sync::Mutex::new(Vec::new());
        dir.read_all(threads, |v, i, bytes| {
            got.lock()
                .unwrap()
                .push((v.id().to_string(), i, bytes.to_vec()))
        })
        .unwrap();
        let mut got = got.into_inner().unwrap();
        got.sort();
        let mut want = want.clone();
        want.sort();
        assert!(got == want, "{threads} threads: frames differ");
    }
}

#[test]
fn read_all_reports_a_data_file_that_shrank_after_open() {
    let tmp = tempfile::tempdir().unwrap();
    let src = common::root().join("tests/data/gulp_small");
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), tmp.path().join(e.file_name())).unwrap();
    }
    let dir = GulpDirectory::open(tmp.path()).unwrap();
    let data = tmp.path().join("data_0.gulp");
    let len = std::fs::metadata(&data).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&data)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let err = dir.read_all(2, |_, _, _| {}).unwrap_err().to_string();
    assert!(
        err.contains("data_0.gulp") && err.contains("shorter than when opened"),
        "{err}"
    );
}

#[test]
fn read_all_handles_large_scattered_and_reordered_records() {
    // Records as a hand-made .gmeta may lay them out: one frame larger than a read group,
    // a gap between records, frames listed out of file order, pads of 0..3.
    let tmp = tempfile::tempdir().unwrap();
    let frame = |n: usize, seed: u8| -> Vec<u8> { (0..n).map(|i| (i as u8) ^ seed).collect() };
    let want = [
        frame(roverlog_core::gulp::READ_GROUP as usize + 12_345, 1),
        frame(5_000, 2),
        frame(70_001, 3),
        frame(9, 4),
    ];
    let (mut data, mut at) = (Vec::new(), Vec::new());
    for (i, f) in want.iter().enumerate() {
        if i == 2 {
            data.extend_from_slice(&[0xee; 4096]); // a gap no record covers
        }
        let pad = (4 - f.len() % 4) % 4;
        at.push(serde_json::json!([data.len(), pad, f.len() + pad]));
        data.extend_from_slice(f);
        data.extend(std::iter::repeat_n(0u8, pad));
    }
    // Video "a" lists its frames in the order 2, 3, 0, 1 of the file: 2 and 3 are adjacent
    // (one read), 0 and 1 too but 0 alone is more than a read group.
    let order = [2usize, 3, 0, 1];
    let infos: Vec<_> = order.iter().map(|&i| at[i].clone()).collect();
    let meta = serde_json::json!({"a": {"frame_info": infos, "meta_data": [{}]}});
    std::fs::write(tmp.path().join("data_0.gulp"), &data).unwrap();
    std::fs::write(tmp.path().join("meta_0.gmeta"), meta.to_string()).unwrap();

    let dir = GulpDirectory::open(tmp.path()).unwrap();
    let got = std::sync::Mutex::new(Vec::new());
    dir.read_all(1, |v, i, bytes| {
        got.lock()
            .unwrap()
            .push((v.id().to_string(), i, bytes.to_vec()))
    })
    .unwrap();
    let got = got.into_inner().unwrap();
    assert_eq!(got.len(), 4);
    for (k, (id, i, bytes)) in got.iter().enumerate() {
        assert_eq!((id.as_str(), *i), ("a", k));
        assert!(*bytes == want[order[k]], "frame {k}: {} bytes", bytes.len());
    }
}

#[cfg(feature = "jpeg")]
#[test]
fn a_frame_decodes_into_a_callers_buffer_as_decode_jpeg_decodes_it() {
    use roverlog_core::gulp::{decode_jpeg_with, JpegFrame};
    use roverlog_core::jpeg::DEFAULT_MAX_PIXELS;
    let (dir, _) = fixture();
    let frame = dir.video("video001").unwrap().frame(0).unwrap();
    for with in [Backend::Zune, Backend::Turbo] {
        let want = decode_jpeg_with(frame, DEFAULT_MAX_PIXELS, with).unwrap();
        let f = JpegFrame::open_with(frame, DEFAULT_MAX_PIXELS, with).unwrap();
        assert_eq!(f.decoder(), with);
        assert_eq!(
            (f.width(), f.height(), f.channels()),
            (want.width, want.height, 3)
        );
        assert_eq!(f.len(), want.pixels.len());
        // The buffer is not zeroed first by the decoder: every byte must be written.
        let mut out = vec![0xa5; f.len()];
        f.decode_into(&mut out).unwrap();
        assert_eq!(out, want.pixels, "{with:?}");
        // A buffer of the wrong size is refused, not partly written.
        let f = JpegFrame::open_with(frame, DEFAULT_MAX_PIXELS, with).unwrap();
        let mut short = vec![0; f.len() - 1];
        assert!(f.decode_into(&mut short).is_err(), "{with:?}");
        assert!(JpegFrame::open_with(frame, 48 * 32 - 1, with).is_err());
    }
}
