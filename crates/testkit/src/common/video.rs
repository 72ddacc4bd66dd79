//! The video peers of the `mjpg` tests: OpenCV (`tests/py/avi_peer.py` in the venv) and
//! ffmpeg/ffprobe (Debian's package; `scripts/test` installs it). A missing peer is a failure
//! naming it, never a skip.

use std::path::Path;
use std::process::Command;

use super::{run_python, sha256_hex};
use roverlog_core::format::avi::MjpgReader;

pub fn peer() -> String {
    std::fs::read_to_string(super::root().join("tests/py/avi_peer.py")).unwrap()
}

/// OpenCV writes `n` frames of `w` x `h` to `path`.
pub fn opencv_write(path: &Path, w: u32, h: u32, n: usize) {
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
pub fn opencv_read(path: &Path) -> (usize, Vec<u8>) {
    let rgb = path.with_extension("rgb");
    let out = run_python(
        &peer(),
        &["read".as_ref(), path.as_os_str(), rgb.as_os_str()],
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let pixels = std::fs::read(&rgb).unwrap();
    (v["frames"].as_u64().unwrap() as usize, pixels)
}

pub fn tool(name: &str) -> Command {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {name}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        found,
        "{name} is not installed: the mjpg interop tests need Debian's `ffmpeg` package \
         (`apt-get install ffmpeg`; scripts/test installs it)"
    );
    Command::new(name)
}

/// `n` JPEGs of ffmpeg's test pattern at 320x240 as ffmpeg wrote them (`f001.jpg`... in
/// `dir`), their sizes varying frame to frame: what the camera driver tests feed it.
pub fn mjpeg_frames(dir: &Path, n: usize) -> Vec<Vec<u8>> {
    let st = tool("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i"])
        .arg(format!(
            "testsrc=size=320x240:rate=30:duration={}",
            n as f64 / 30.0
        ))
        .args(["-c:v", "mjpeg", "-q:v", "5", "-f", "image2"])
        .arg(dir.join("f%03d.jpg"))
        .status()
        .unwrap();
    assert!(st.success(), "ffmpeg encoding the test frames: {st}");
    let frames: Vec<Vec<u8>> = (1..=n)
        .map(|i| std::fs::read(dir.join(format!("f{i:03}.jpg"))).unwrap())
        .collect();
    let sizes: std::collections::BTreeSet<usize> = frames.iter().map(Vec::len).collect();
    assert!(sizes.len() > 1, "the frames should vary in size: {sizes:?}");
    frames
}

/// The sha256 of every video packet as ffmpeg demuxes it (`-c copy`: the bytes in the file).
pub fn ffmpeg_packets(path: &Path) -> Vec<String> {
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
pub fn ffprobe_decoded_frames(path: &Path) -> usize {
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

pub fn our_frames(path: &Path) -> Vec<Vec<u8>> {
    let r = MjpgReader::open(path).unwrap();
    r.frames().map(<[u8]>::to_vec).collect()
}

pub fn hashes(frames: &[Vec<u8>]) -> Vec<String> {
    frames.iter().map(|f| sha256_hex(f)).collect()
}

/// Mean and worst absolute difference of two decodings of the same frames.
pub fn difference(a: &[u8], b: &[u8], what: &str) -> (f64, u8) {
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
pub fn opencv_imdecode(frames: &[Vec<u8>], scratch: &Path) -> Vec<u8> {
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
pub fn assert_pixels_close(frames: &[Vec<u8>], videocapture: &[u8], scratch: &Path, what: &str) {
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

pub fn decode_all(frames: &[Vec<u8>]) -> Vec<u8> {
    frames
        .iter()
        .flat_map(|f| roverlog_core::format::avi::decode_rgb(f).unwrap())
        .collect()
}
