//! `mjpg` channels against their upstream peers: AVI files written by OpenCV's `VideoWriter`
//! (as upstream's collector writes its camera) read by us; our own files (one segment, and
//! OpenDML with several) read by OpenCV and ffmpeg; files cut at many offsets flagged by
//! `validate`, repaired by `recover`, and then read whole by OpenCV and ffmpeg.
//!
//! Needs `ffmpeg`/`ffprobe` (Debian's package; `scripts/test` installs it) and the venv's
//! opencv-python-headless: missing either is a failure naming it, never a skip.

use crate::support::common;

use std::path::{Path, PathBuf};

use common::roverlog;
use common::video::{
    assert_pixels_close, ffmpeg_packets, ffprobe_decoded_frames, hashes, opencv_read, opencv_write,
    our_frames,
};
use roverlog_core::format::avi::{MjpgReader, MjpgWriter};

#[test]
fn opencv_files_read_byte_identical_to_ffmpeg_and_decode_like_opencv() {
    let dir = tempfile::tempdir().unwrap();
    for (w, h, n) in [(64, 48, 25), (328, 244, 9), (1920, 1080, 3)] {
        let p = dir.path().join(format!("cv{w}x{h}.avi"));
        opencv_write(&p, w, h, n);
        let ours = our_frames(&p);
        assert_eq!(ours.len(), n, "{w}x{h}");
        assert_eq!(hashes(&ours), ffmpeg_packets(&p), "{w}x{h}: JPEG payloads");
        let r = MjpgReader::open(&p).unwrap();
        assert_eq!(
            r.layout().problems,
            Vec::<roverlog_core::format::avi::AviProblem>::new(),
            "{w}x{h}"
        );
        assert_eq!((r.layout().header.width, r.layout().header.height), (w, h));
        let (count, pixels) = opencv_read(&p);
        assert_eq!(count, n);
        assert_pixels_close(&ours, &pixels, dir.path(), &format!("{w}x{h}"));
    }
}

/// A trace with one camera sensor holding `avi` as `video.avi` and `n` timestamps.
fn camera_trace(root: &Path, avi: &Path, n: usize, w: u32, h: u32) -> PathBuf {
    let t = root.join("trace");
    let cam = t.join("camera");
    std::fs::create_dir_all(&cam).unwrap();
    std::fs::write(t.join("config.yaml"), "camera: {}\n").unwrap();
    std::fs::write(
        cam.join("meta.json"),
        format!(
            r#"{{"ts": {{"format": "raw", "type": "f8", "shape": [], "desc": "t"}},
                "video.avi": {{"format": "mjpg", "type": "u1", "shape": [{h}, {w}, 3],
                               "desc": "camera", "args": {{"fps": 30}}}}}}"#
        ),
    )
    .unwrap();
    let ts: Vec<u8> = (0..n)
        .flat_map(|i| (1.7e9 + i as f64 / 30.0).to_le_bytes())
        .collect();
    std::fs::write(cam.join("ts"), ts).unwrap();
    std::fs::copy(avi, cam.join("video.avi")).unwrap();
    t
}

#[test]
fn cut_opencv_files_are_flagged_recovered_and_then_read_whole_by_opencv_and_ffmpeg() {
    let dir = tempfile::tempdir().unwrap();
    let (w, h, n) = (160, 120, 20);
    let src = dir.path().join("cv.avi");
    opencv_write(&src, w, h, n);
    let whole = std::fs::read(&src).unwrap();
    let originals = our_frames(&src);
    let layout = MjpgReader::open(&src).unwrap().layout().clone();
    let first_frame = layout.frames[0].offset as usize;
    let frames_end = layout.frames_end(n) as usize;
    // Inside the header, at chunk boundaries, inside frames, inside the index.
    let mut cuts: Vec<usize> = (1..12)
        .map(|k| k * (whole.len() - first_frame) / 12 + first_frame)
        .collect();
    cuts.extend([
        first_frame - 100,
        first_frame + 3,
        whole.len() - 5,
        whole.len() - 16 * n - 8,
    ]);
    for cut in cuts {
        let case = dir.path().join(format!("cut{cut}"));
        std::fs::create_dir(&case).unwrap();
        let avi = case.join("in.avi");
        std::fs::write(&avi, &whole[..cut]).unwrap();
        let trace = camera_trace(&case, &avi, n, w, h);
        let v = roverlog(&["validate".as_ref(), trace.as_os_str()]);
        assert_eq!(
            v.code,
            1,
            "cut at {cut}: validate must flag it:\n{}",
            v.text()
        );
        assert!(
            v.text().contains("video.avi"),
            "cut at {cut}:\n{}",
            v.text()
        );
        let r = roverlog(&["recover".as_ref(), trace.as_os_str()]);
        assert!(r.code == 0, "cut at {cut}: recover:\n{}", r.text());
        let v = roverlog(&["validate".as_ref(), trace.as_os_str()]);
        assert_eq!(v.code, 0, "cut at {cut}: after recover:\n{}", v.text());
        let video = trace.join("camera/video.avi");
        let kept = our_frames(&video);
        // A cut after the last frame (in the index) loses no frame.
        let expected = if cut >= frames_end { n..n + 1 } else { 0..n };
        assert!(
            expected.contains(&kept.len()),
            "cut at {cut}: {} frames kept",
            kept.len()
        );
        assert_eq!(kept[..], originals[..kept.len()], "cut at {cut}");
        let ts_len = std::fs::metadata(trace.join("camera/ts")).unwrap().len();
        assert_eq!(ts_len, 8 * kept.len() as u64, "cut at {cut}: ts agrees");
        if kept.is_empty() {
            continue; // players refuse a video with no frame; we checked it parses.
        }
        assert_eq!(
            ffmpeg_packets(&video),
            hashes(&kept),
            "cut at {cut}: ffmpeg"
        );
        assert_eq!(ffprobe_decoded_frames(&video), kept.len(), "cut at {cut}");
        let (count, pixels) = opencv_read(&video);
        assert_eq!(count, kept.len(), "cut at {cut}: OpenCV frame count");
        assert_pixels_close(&kept, &pixels, &case, &format!("cut at {cut}"));
    }
}

#[test]
fn our_files_single_and_opendml_read_the_same_in_opencv_and_ffmpeg() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("cv.avi");
    let (w, h, n) = (320, 240, 40);
    opencv_write(&src, w, h, n);
    let frames = our_frames(&src);
    // One segment, and OpenDML segments of ~64 KiB (several `RIFF AVIX`, `ix00`, `indx`):
    // the layout of a file past 1 GiB, small enough for CI.
    for limit in [None, Some(64 << 10)] {
        let p = dir.path().join(format!("ours{}.avi", limit.unwrap_or(0)));
        let mut wr = MjpgWriter::create(&p, w, h, 30.0, 1 << 16).unwrap();
        if let Some(l) = limit {
            wr.set_riff_limit(l);
        }
        for f in &frames {
            wr.append(f).unwrap();
        }
        wr.finish().unwrap();
        let r = MjpgReader::open(&p).unwrap();
        assert_eq!(
            r.layout().problems,
            Vec::<roverlog_core::format::avi::AviProblem>::new()
        );
        if limit.is_some() {
            assert!(r.layout().segments.len() >= 3, "{:?}", r.layout().segments);
            assert_eq!(
                r.layout().source,
                roverlog_core::format::avi::IndexSource::OpenDml
            );
        }
        assert_eq!(our_frames(&p), frames);
        assert_eq!(
            ffmpeg_packets(&p),
            hashes(&frames),
            "ffmpeg reads ours ({limit:?})"
        );
        assert_eq!(ffprobe_decoded_frames(&p), n, "{limit:?}");
        let (count, pixels) = opencv_read(&p);
        assert_eq!(count, n, "OpenCV reads ours ({limit:?})");
        assert_pixels_close(&frames, &pixels, dir.path(), "ours");
    }
}

#[test]
fn an_unfinished_opendml_file_cut_anywhere_is_recovered_into_one_the_players_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("cv.avi");
    let (w, h, n) = (320, 240, 40);
    opencv_write(&src, w, h, n);
    let frames = our_frames(&src);
    // A writer that never finished (a crash): closed segments indexed, the last one not.
    let p = dir.path().join("crashed.avi");
    let mut wr = MjpgWriter::create(&p, w, h, 30.0, 1 << 16).unwrap();
    wr.set_riff_limit(64 << 10);
    for f in &frames {
        wr.append(f).unwrap();
    }
    wr.flush().unwrap();
    drop(wr);
    let whole = std::fs::read(&p).unwrap();
    let l = MjpgReader::open(&p).unwrap().layout().clone();
    assert!(l.segments.len() >= 3, "{:?}", l.segments);
    assert!(
        l.indexed > 0 && l.indexed < n,
        "closed segments are indexed: {}",
        l.indexed
    );
    let seg2 = l.segments[2].movi_pos as usize;
    for cut in [
        whole.len(),
        whole.len() - 7,
        seg2 + 5,
        seg2 - 3,
        l.frames[3].offset as usize + 9,
    ] {
        let case = dir.path().join(format!("cut{cut}"));
        std::fs::create_dir(&case).unwrap();
        let avi = case.join("in.avi");
        std::fs::write(&avi, &whole[..cut]).unwrap();
        let trace = camera_trace(&case, &avi, n, w, h);
        let r = roverlog(&["recover".as_ref(), trace.as_os_str()]);
        assert_eq!(r.code, 0, "cut at {cut}: {}", r.text());
        let v = roverlog(&["validate".as_ref(), trace.as_os_str()]);
        assert_eq!(v.code, 0, "cut at {cut}: {}", v.text());
        let video = trace.join("camera/video.avi");
        let kept = our_frames(&video);
        assert!(
            !kept.is_empty() && kept[..] == frames[..kept.len()],
            "cut at {cut}"
        );
        assert_eq!(
            ffmpeg_packets(&video),
            hashes(&kept),
            "cut at {cut}: ffmpeg"
        );
        assert_eq!(ffprobe_decoded_frames(&video), kept.len(), "cut at {cut}");
        assert_eq!(opencv_read(&video).0, kept.len(), "cut at {cut}: OpenCV");
    }
}

#[test]
fn cat_decodes_video_frames_and_validate_names_channels_it_cannot_check() {
    let dir = tempfile::tempdir().unwrap();
    let (w, h, n) = (64, 48, 5);
    let src = dir.path().join("cv.avi");
    opencv_write(&src, w, h, n);
    let frames = our_frames(&src);
    let trace = camera_trace(dir.path(), &src, n, w, h);
    let arg = |s: &str| std::ffi::OsString::from(s);
    let cat = |extra: &[&str]| {
        let mut a = vec![
            arg("cat"),
            trace.clone().into_os_string(),
            arg("camera/video.avi"),
        ];
        a.extend(extra.iter().map(|s| arg(s)));
        roverlog(&a)
    };
    let decoded = cat(&["--rows", "1:3"]);
    assert!(decoded.ok(), "{}", decoded.text());
    let want: Vec<u8> = frames[1..3]
        .iter()
        .flat_map(|f| roverlog_core::format::avi::decode_rgb(f).unwrap())
        .collect();
    assert_eq!(decoded.stdout.len(), 2 * (w * h * 3) as usize);
    assert!(
        decoded.stdout == want,
        "cat decodes frames 1 and 2 to HxWx3"
    );
    let jpeg = cat(&["--jpeg"]);
    assert!(jpeg.ok(), "{}", jpeg.text());
    assert_eq!(jpeg.stdout, frames.concat());
    let info = roverlog(&[arg("info"), trace.clone().into_os_string()]);
    assert!(info.ok(), "{}", info.text());
    assert!(info.out().contains(&n.to_string()), "{}", info.out());

    // `validate --deep` looks into every frame.
    let v = roverlog(&[
        arg("validate"),
        arg("--deep"),
        trace.clone().into_os_string(),
    ]);
    assert_eq!(v.code, 0, "{}", v.text());
    let video = trace.join("camera/video.avi");
    let third = MjpgReader::open(&video).unwrap().layout().frames[2].offset;
    let mut bytes = std::fs::read(&video).unwrap();
    bytes[third as usize..third as usize + 2].copy_from_slice(b"XX");
    std::fs::write(&video, &bytes).unwrap();
    let v = roverlog(&[arg("validate"), trace.clone().into_os_string()]);
    assert_eq!(v.code, 0, "the structure is sound: {}", v.text());
    let v = roverlog(&[
        arg("validate"),
        arg("--deep"),
        trace.clone().into_os_string(),
    ]);
    assert_eq!(v.code, 1, "{}", v.text());
    assert!(
        v.text().contains("frame 2 is not a whole JPEG"),
        "{}",
        v.text()
    );

    // A channel in a format roverlog cannot read is listed, and fails validate unless allowed.
    let meta = trace.join("camera/meta.json");
    let text = std::fs::read_to_string(&meta).unwrap();
    std::fs::write(&meta, text.replace("\"mjpg\"", "\"h265\"")).unwrap();
    let v = roverlog(&[arg("validate"), trace.clone().into_os_string()]);
    assert_eq!(v.code, 1, "{}", v.text());
    assert!(v.text().contains("video.avi: unchecked"), "{}", v.text());
    let v = roverlog(&[
        arg("validate"),
        arg("--allow-unchecked"),
        trace.into_os_string(),
    ]);
    assert_eq!(v.code, 0, "{}", v.text());
    assert!(v.text().contains("unchecked"), "{}", v.text());
}

/// `validate --deep` decodes every frame strictly: OpenCV's frames pass, and two frames whose
/// scan data a bad disk garbled (SOI and EOI intact, so a lenient decoder fills the damage
/// with grey and goes on, and `validate --deep` said ok) are each named with libjpeg's
/// warning, and only they (issue 36).
#[test]
fn validate_deep_names_frames_whose_scan_data_is_garbled() {
    // libjpeg-turbo's warnings are what find garbled scan data (zune-jpeg's strict mode finds
    // less): scripts/test installs it.
    if let Some(why) = roverlog_core::jpeg::turbo_unavailable() {
        panic!("libturbojpeg0 is needed (scripts/test installs it): {why}");
    }
    let dir = tempfile::tempdir().unwrap();
    let (w, h, n) = (320, 240, 12);
    let src = dir.path().join("cv.avi");
    opencv_write(&src, w, h, n);
    let trace = camera_trace(dir.path(), &src, n, w, h);
    let arg = |s: &str| std::ffi::OsString::from(s);
    let deep = || {
        roverlog(&[
            arg("validate"),
            arg("--deep"),
            trace.clone().into_os_string(),
        ])
    };
    let v = deep();
    assert_eq!(v.code, 0, "OpenCV's frames decode strictly: {}", v.text());
    let video = trace.join("camera/video.avi");
    let frames = MjpgReader::open(&video).unwrap().layout().frames.clone();
    let mut bytes = std::fs::read(&video).unwrap();
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    for k in [4, 9] {
        let f = frames[k];
        let at = (f.offset + u64::from(f.len) / 2) as usize;
        for b in &mut bytes[at..at + 96] {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
    }
    std::fs::write(&video, &bytes).unwrap();
    let v = roverlog(&[arg("validate"), trace.clone().into_os_string()]);
    assert_eq!(v.code, 0, "the structure is sound: {}", v.text());
    let v = deep();
    assert_eq!(v.code, 1, "{}", v.text());
    for k in 0..n {
        let named = v.text().contains(&format!("frame {k} does not decode"));
        assert_eq!(named, k == 4 || k == 9, "frame {k}: {}", v.text());
    }
}
