//! `mjpg` channels against their upstream peers: AVI files written by OpenCV's `VideoWriter`
//! (as upstream's collector writes its camera) read by us; our own files (one segment, and
//! OpenDML with several) read by OpenCV and ffmpeg; files cut at many offsets flagged by
//! `validate`, repaired by `recover`, and then read whole by OpenCV and ffmpeg.
//!
//! Needs `ffmpeg`/`ffprobe` (Debian's package; `.ci/run` installs it) and the venv's
//! opencv-python-headless: missing either is a failure naming it, never a skip.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{roverlog, run_python, sha256_hex};
use roverlog::format::avi::{MjpgReader, MjpgWriter};

fn peer() -> String {
    std::fs::read_to_string(common::root().join("tests/py/avi_peer.py")).unwrap()
}

/// OpenCV writes `n` frames of `w` x `h` to `path`.
fn opencv_write(path: &Path, w: u32, h: u32, n: usize) {
    let (w, h, n) = (w.to_string(), h.to_string(), n.to_string());
    run_python(
        &peer(),
        &[
            "write".as_ref(),
            path.as_os_str(),
            w.as_ref(),
            h.as_ref(),
            n.as_ref(),
        ],
    );
}

/// What OpenCV's `VideoCapture` reads: the frame count and every frame as RGB.
fn opencv_read(path: &Path) -> (usize, Vec<u8>) {
    let rgb = path.with_extension("rgb");
    let out = run_python(
        &peer(),
        &["read".as_ref(), path.as_os_str(), rgb.as_os_str()],
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let pixels = std::fs::read(&rgb).unwrap();
    (v["frames"].as_u64().unwrap() as usize, pixels)
}

fn tool(name: &str) -> Command {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {name}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        found,
        "{name} is not installed: the mjpg interop tests need Debian's `ffmpeg` package \
         (`apt-get install ffmpeg`; .ci/run installs it)"
    );
    Command::new(name)
}

/// The sha256 of every video packet as ffmpeg demuxes it (`-c copy`: the bytes in the file).
fn ffmpeg_packets(path: &Path) -> Vec<String> {
    let out = tool("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(path)
        .args([
            "-map",
            "0:v",
            "-c",
            "copy",
            "-f",
            "framehash",
            "-hash",
            "sha256",
            "-",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ffmpeg could not read {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.rsplit(',').next().unwrap().trim().to_string())
        .collect()
}

/// Frames ffprobe counts by decoding every one (errors make it fail).
fn ffprobe_decoded_frames(path: &Path) -> usize {
    let out = tool("ffprobe")
        .args(["-v", "error", "-count_frames", "-select_streams", "v:0"])
        .args(["-show_entries", "stream=nb_read_frames", "-of", "csv=p=0"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ffprobe could not decode {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

fn our_frames(path: &Path) -> Vec<Vec<u8>> {
    let r = MjpgReader::open(path).unwrap();
    r.frames().map(<[u8]>::to_vec).collect()
}

fn hashes(frames: &[Vec<u8>]) -> Vec<String> {
    frames.iter().map(|f| sha256_hex(f)).collect()
}

/// Mean and worst absolute difference of two decodings of the same frames.
fn difference(a: &[u8], b: &[u8], what: &str) -> (f64, u8) {
    assert_eq!(a.len(), b.len(), "{what}: decoded sizes differ");
    let sum: u64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| u64::from(x.abs_diff(*y)))
        .sum();
    let worst = a.iter().zip(b).map(|(x, y)| x.abs_diff(*y)).max();
    (sum as f64 / a.len().max(1) as f64, worst.unwrap_or(0))
}

/// libjpeg-turbo's decoding of `frames` (cv2.imdecode), RGB.
fn opencv_imdecode(frames: &[Vec<u8>], scratch: &Path) -> Vec<u8> {
    let d = scratch.join("jpegs");
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir(&d).unwrap();
    for (i, f) in frames.iter().enumerate() {
        std::fs::write(d.join(format!("{i:06}.jpg")), f).unwrap();
    }
    let out = scratch.join("imdecode.rgb");
    run_python(
        &peer(),
        &["imdecode".as_ref(), d.as_os_str(), out.as_os_str()],
    );
    std::fs::read(out).unwrap()
}

/// Our decoded pixels against OpenCV's: within a JPEG decoder's tolerance of libjpeg-turbo
/// on the same bytes, and no further from `VideoCapture`'s frames (whose YUV -> RGB path
/// differs from libjpeg's on its own) than libjpeg-turbo is.
fn assert_pixels_close(frames: &[Vec<u8>], videocapture: &[u8], scratch: &Path, what: &str) {
    let ours = decode_all(frames);
    let libjpeg = opencv_imdecode(frames, scratch);
    let (mean, worst) = difference(&ours, &libjpeg, what);
    assert!(
        mean < 1.0 && worst <= 40,
        "{what}: ours vs libjpeg-turbo: mean {mean:.3}, worst {worst}"
    );
    let (ours_vc, _) = difference(&ours, videocapture, what);
    let (theirs_vc, _) = difference(&libjpeg, videocapture, what);
    assert!(
        ours_vc <= theirs_vc + 0.5,
        "{what}: ours vs VideoCapture {ours_vc:.3}, libjpeg-turbo vs VideoCapture {theirs_vc:.3}"
    );
}

fn decode_all(frames: &[Vec<u8>]) -> Vec<u8> {
    frames
        .iter()
        .flat_map(|f| roverlog::format::avi::decode_rgb(f).unwrap())
        .collect()
}

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
        assert_eq!(r.layout().problems, Vec::<String>::new(), "{w}x{h}");
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
        assert_eq!(r.layout().problems, Vec::<String>::new());
        if limit.is_some() {
            assert!(r.layout().segments.len() >= 3, "{:?}", r.layout().segments);
            assert_eq!(
                r.layout().source,
                roverlog::format::avi::IndexSource::OpenDml
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
