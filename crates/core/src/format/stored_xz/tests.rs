//! Stored frames must read back as what was stored through every decoder a trace meets: ours
//! (`lzma::decompress`, liblzma), lzma-rust2's (the crate our encoder is from) and upstream's
//! (Python's `lzma`).

use super::*;
use crate::format::lzma;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// Sizes around the chunk and padding boundaries, and a lidar image's.
fn samples() -> Vec<Vec<u8>> {
    [
        0usize,
        1,
        3,
        4,
        5,
        100,
        CHUNK - 1,
        CHUNK,
        CHUNK + 1,
        3 * CHUNK + 7,
        512 << 10,
    ]
    .iter()
    .map(|&n| crate::noise(n, n as u64 + 1))
    .collect()
}

#[test]
fn checks_match_the_standard_check_values() {
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    assert_eq!(crc64(b"123456789"), 0x995D_C9BB_DF19_39FA);
    // Slice-by-8 and byte-wise agree on every remainder length.
    let data = crate::noise(1000, 9);
    for n in 0..40 {
        let bytewise = !data[..n].iter().fold(!0u64, |c, &b| {
            CRC64[0][((c ^ u64::from(b)) & 0xFF) as usize] ^ (c >> 8)
        });
        assert_eq!(crc64(&data[..n]), bytewise, "{n} bytes");
    }
}

#[test]
fn our_decoder_reads_stored_frames() {
    for s in samples() {
        let frame = store(&s);
        let back = lzma::decompress(&frame, s.len(), Path::new("stored")).unwrap();
        assert_eq!(back, s, "{} bytes", s.len());
        assert_eq!(is_stored(&frame), !s.is_empty(), "{} bytes", s.len());
    }
}

#[test]
fn lzma_rust2_reads_stored_frames() {
    for s in samples() {
        let frame = store(&s);
        let mut back = Vec::new();
        lzma_rust2::XzReader::new(&frame[..], true)
            .read_to_end(&mut back)
            .unwrap_or_else(|e| panic!("{} bytes: {e}", s.len()));
        assert_eq!(back, s, "{} bytes", s.len());
    }
}

/// Upstream reads every `lzmaf` frame with `lzma.decompress(frame)`: feed Python the frames
/// concatenated with their sizes, and compare a digest of what it decoded for each.
#[test]
fn python_lzma_reads_stored_frames() {
    let samples = samples();
    let frames: Vec<Vec<u8>> = samples.iter().map(|s| store(s)).collect();
    let script = "import lzma,sys,hashlib\n\
        d=sys.stdin.buffer.read()\n\
        p=0\n\
        while p<len(d):\n\
        \x20   n=int.from_bytes(d[p:p+8],'little'); p+=8\n\
        \x20   print(hashlib.sha256(lzma.decompress(d[p:p+n])).hexdigest()); p+=n\n";
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 (its standard library's lzma reads what upstream reads)");
    let mut input = Vec::new();
    for f in &frames {
        input.extend_from_slice(&(f.len() as u64).to_le_bytes());
        input.extend_from_slice(f);
    }
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "python: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let digests: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(digests.len(), samples.len());
    for (s, d) in samples.iter().zip(&digests) {
        assert_eq!(*d, sha256_hex(s), "{} bytes", s.len());
    }
}

/// Python's sha256 of `data`, asked of Python itself would prove nothing: compute it here.
fn sha256_hex(data: &[u8]) -> String {
    let out = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(data)?;
            c.wait_with_output()
        })
        .expect("sha256sum");
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

#[test]
fn compressed_and_damaged_frames_are_not_stored() {
    let smooth: Vec<u8> = (0..200_000u32).map(|i| (i / 300) as u8).collect();
    assert!(!is_stored(&lzma::compress(&smooth, 0)));
    let frame = store(&smooth);
    assert!(is_stored(&frame));
    // Cut inside the chunks, or not .xz at all.
    assert!(!is_stored(&frame[..frame.len() / 2]));
    assert!(!is_stored(&frame[..14]));
    assert!(!is_stored(b"not an xz frame at all"));
    assert!(!is_stored(&store(&[])));
}
