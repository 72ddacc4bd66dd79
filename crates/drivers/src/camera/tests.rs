//! The multipart parser and the JPEG check on a replayed stream: parts of varying sizes,
//! with and without Content-Length, padding after EOI, a truncated part, a part that is not
//! a JPEG, junk before the first boundary.

use super::jpeg::{whole_jpeg, NotJpeg};
use super::multipart::{boundary, Limits, Multipart, MultipartError};

/// A minimal well-formed JPEG: SOI, an APP1 holding a thumbnail's EOI, SOF0 (16x8, 3
/// components), SOS, entropy data with a stuffed FF and a restart marker, `extra` more
/// entropy bytes (varying the size), EOI.
pub(crate) fn tiny_jpeg_sized(extra: usize) -> Vec<u8> {
    let mut j = vec![0xFF, 0xD8];
    j.extend([0xFF, 0xE1, 0x00, 0x06, 0xFF, 0xD8, 0xFF, 0xD9]);
    j.extend([0xFF, 0xC0, 0x00, 0x11, 8, 0x00, 0x08, 0x00, 0x10, 3]);
    j.extend([1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
    j.extend([
        0xFF, 0xDA, 0x00, 0x0C, 3, 1, 0, 2, 0x11, 3, 0x11, 0, 0x3F, 0,
    ]);
    j.extend([0x12, 0xFF, 0x00, 0x34, 0xFF, 0xD0, 0x56]);
    j.extend((0..extra).map(|i| (i % 251) as u8 & 0x7F));
    j.extend([0xFF, 0xD9]);
    j
}

pub(crate) fn tiny_jpeg() -> Vec<u8> {
    tiny_jpeg_sized(0)
}

fn part(out: &mut Vec<u8>, body: &[u8], with_length: bool) {
    out.extend(b"--cam\r\nContent-Type: image/jpeg\r\n");
    if with_length {
        out.extend(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    out.extend(b"\r\n");
    out.extend(body);
    out.extend(b"\r\n");
}

#[test]
fn a_replayed_stream_gives_each_part_and_only_whole_jpegs_are_frames() {
    let sizes = [0, 1, 1000, 70_000, 5, 200_000];
    let mut stream = b"preamble the client ignores\r\n".to_vec();
    let mut want = Vec::new();
    for (i, &n) in sizes.iter().enumerate() {
        let j = tiny_jpeg_sized(n);
        part(&mut stream, &j, i % 2 == 0);
        want.push(Ok(j));
    }
    // Padding after the EOI: the frame is the JPEG without it.
    let j = tiny_jpeg_sized(300);
    let mut padded = j.clone();
    padded.extend([0u8; 4096]);
    part(&mut stream, &padded, true);
    want.push(Ok(j));
    // Not a JPEG at all; a truncated JPEG (scanned: no Content-Length).
    part(&mut stream, b"<html>503</html>", false);
    want.push(Err(NotJpeg::NoSoi(b"<htm".to_vec())));
    let cut = tiny_jpeg_sized(50);
    part(&mut stream, &cut[..40], false);
    want.push(Err(NotJpeg::Truncated(40)));
    let last = tiny_jpeg_sized(7);
    part(&mut stream, &last, false);
    want.push(Ok(last));
    stream.extend(b"--cam--\r\n");

    // Read through a reader that hands out 7 bytes at a time: boundaries fall anywhere.
    let mut parts = Multipart::new(Trickle(&stream[..]), "cam", Limits::default());
    let mut got = Vec::new();
    while let Some(p) = parts.next_part().unwrap() {
        got.push(whole_jpeg(&p).map(|info| p[..info.len].to_vec()));
    }
    assert_eq!(got.len(), want.len());
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "part {k}");
    }
}

#[test]
fn sizes_are_bounded_and_a_cut_stream_is_an_error() {
    let limits = Limits {
        max_part: 1000,
        ..Limits::default()
    };
    let mut s = Vec::new();
    part(&mut s, &tiny_jpeg_sized(2000), true);
    let e = Multipart::new(&s[..], "cam", limits)
        .next_part()
        .unwrap_err();
    assert!(
        matches!(e, MultipartError::DeclaredTooLarge { declared, limit: 1000 } if declared > 1000),
        "{e}"
    );
    let mut s = Vec::new();
    part(&mut s, &tiny_jpeg_sized(2000), false);
    let e = Multipart::new(&s[..], "cam", limits)
        .next_part()
        .unwrap_err();
    assert!(
        matches!(e, MultipartError::PartTooLarge { limit: 1000 }),
        "{e}"
    );

    let mut s = b"--cam\r\nX-Long: ".to_vec();
    s.extend([b'a'; 5000]);
    let e = Multipart::new(&s[..], "cam", limits)
        .next_part()
        .unwrap_err();
    assert!(
        matches!(e, MultipartError::LineTooLong { limit: 1024 }),
        "{e}"
    );

    let e = Multipart::new(&[b'x'; 100_000][..], "cam", limits)
        .next_part()
        .unwrap_err();
    assert!(matches!(e, MultipartError::LineTooLong { .. }), "{e}");
    let junk = b"junk\n".repeat(20_000);
    let e = Multipart::new(&junk[..], "cam", limits)
        .next_part()
        .unwrap_err();
    assert!(matches!(e, MultipartError::NoBoundary { .. }), "{e}");

    let s = b"--cam\r\nContent-Length: 100\r\n\r\nshort";
    let e = Multipart::new(&s[..], "cam", limits)
        .next_part()
        .unwrap_err();
    assert!(
        matches!(
            e,
            MultipartError::Truncated {
                got: 5,
                expected: 100
            }
        ),
        "{e}"
    );
    let s = b"--cam\r\nContent-Length: ten\r\n\r\n";
    let e = Multipart::new(&s[..], "cam", limits)
        .next_part()
        .unwrap_err();
    assert!(
        matches!(e, MultipartError::BadContentLength(ref v) if v == "ten"),
        "{e}"
    );
}

#[test]
fn the_boundary_comes_from_the_content_type() {
    assert_eq!(
        boundary("multipart/x-mixed-replace;boundary=ffmpeg").as_deref(),
        Some("ffmpeg")
    );
    assert_eq!(
        boundary("multipart/x-mixed-replace; boundary=\"--myboundary\"").as_deref(),
        Some("--myboundary")
    );
    assert_eq!(boundary("image/jpeg"), None);
    assert_eq!(boundary("multipart/x-mixed-replace"), None);
    // A camera that puts the dashes in the parameter: its lines are `--myboundary`.
    let mut s = Vec::new();
    s.extend(b"--myboundary\r\n\r\n");
    s.extend(tiny_jpeg());
    s.extend(b"\r\n--myboundary--\r\n");
    let mut parts = Multipart::new(&s[..], "--myboundary", Limits::default());
    assert_eq!(parts.next_part().unwrap(), Some(tiny_jpeg()));
    assert_eq!(parts.next_part().unwrap(), None);
}

struct Trickle<'a>(&'a [u8]);

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(7).min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn a_boundary_the_server_did_not_name_is_read_from_the_first_line() {
    let mut s = b"\r\n".to_vec();
    part(&mut s, &tiny_jpeg(), true);
    part(&mut s, &tiny_jpeg_sized(9), false);
    let mut parts = Multipart::sniff(&s[..], Limits::default()).unwrap();
    assert_eq!(parts.boundary(), "cam");
    assert_eq!(parts.next_part().unwrap(), Some(tiny_jpeg()));
    assert_eq!(parts.next_part().unwrap(), Some(tiny_jpeg_sized(9)));
    assert_eq!(parts.next_part().unwrap(), None);
    let e = Multipart::sniff(&b"\xff\xd8 raw jpeg"[..], Limits::default())
        .err()
        .unwrap();
    assert!(matches!(e, MultipartError::NotMultipart { .. }), "{e}");
}
