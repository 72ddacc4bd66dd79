//! Whether bytes are one whole JPEG (SOI ... EOI), found by walking its marker segments, not
//! by decoding: the segments' lengths up to each scan, then the entropy-coded data to the next
//! marker (a `0xFF` there is stuffed as `FF 00`, restart markers `FF D0..D7` are part of it).
//! A thumbnail's `FF D9` inside an APP segment is thus not taken for the end.

/// What the frame header says (the decoded image's shape), and where the JPEG ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JpegInfo {
    /// Bytes from SOI to EOI inclusive; what follows (padding) is not the JPEG's.
    pub len: usize,
    pub width: u16,
    pub height: u16,
    /// Colour components (1 grey, 3 colour).
    pub components: u8,
}

/// Why bytes are not one whole JPEG.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotJpeg {
    #[error("does not start with SOI (FF D8): starts with {0:02X?}")]
    NoSoi(Vec<u8>),
    #[error("ends at byte {0} before its EOI (FF D9): truncated")]
    Truncated(usize),
    #[error("byte {at}: {found:#04X} where a marker (FF xx) was expected")]
    NotAMarker { at: usize, found: u8 },
    #[error("segment at byte {at} has length {len} (at least 2)")]
    BadSegmentLength { at: usize, len: usize },
    #[error("no frame header (SOF) before the first scan")]
    NoFrameHeader,
}

/// Walks `buf` from its SOI to its EOI (see the module doc).
pub fn whole_jpeg(buf: &[u8]) -> Result<JpegInfo, NotJpeg> {
    if buf.len() < 2 || buf[0] != 0xFF || buf[1] != 0xD8 {
        return Err(NotJpeg::NoSoi(buf[..buf.len().min(4)].to_vec()));
    }
    let mut frame: Option<(u16, u16, u8)> = None;
    let mut at = 2;
    loop {
        if at >= buf.len() {
            return Err(NotJpeg::Truncated(buf.len()));
        }
        if buf[at] != 0xFF {
            return Err(NotJpeg::NotAMarker { at, found: buf[at] });
        }
        // Fill bytes: any number of FF before the marker code.
        while at < buf.len() && buf[at] == 0xFF {
            at += 1;
        }
        let Some(&code) = buf.get(at) else {
            return Err(NotJpeg::Truncated(buf.len()));
        };
        let marker_at = at - 1;
        at += 1;
        match code {
            0xD9 => {
                let (width, height, components) = frame.ok_or(NotJpeg::NoFrameHeader)?;
                return Ok(JpegInfo {
                    len: at,
                    width,
                    height,
                    components,
                });
            }
            // Markers without a length: TEM, RSTn (outside a scan they carry nothing).
            0x01 | 0xD0..=0xD7 => continue,
            _ => {}
        }
        let Some(seg) = buf.get(at..at + 2) else {
            return Err(NotJpeg::Truncated(buf.len()));
        };
        let len = usize::from(u16::from_be_bytes([seg[0], seg[1]]));
        if len < 2 {
            return Err(NotJpeg::BadSegmentLength { at: marker_at, len });
        }
        let end = at + len;
        if end > buf.len() {
            return Err(NotJpeg::Truncated(buf.len()));
        }
        // SOF0..SOF15 but DHT (C4), JPG (C8), DAC (CC): height, width, components.
        if matches!(code, 0xC0..=0xCF) && !matches!(code, 0xC4 | 0xC8 | 0xCC) && len >= 8 {
            let s = &buf[at + 2..end];
            frame = Some((
                u16::from_be_bytes([s[3], s[4]]),
                u16::from_be_bytes([s[1], s[2]]),
                s[5],
            ));
        }
        at = end;
        if code == 0xDA {
            if frame.is_none() {
                return Err(NotJpeg::NoFrameHeader);
            }
            at = scan_end(buf, at)?;
        }
    }
}

/// The offset of the first marker after entropy-coded data starting at `at`.
fn scan_end(buf: &[u8], mut at: usize) -> Result<usize, NotJpeg> {
    loop {
        let Some(i) = buf[at..].iter().position(|&b| b == 0xFF) else {
            return Err(NotJpeg::Truncated(buf.len()));
        };
        at += i;
        match buf.get(at + 1) {
            None => return Err(NotJpeg::Truncated(buf.len())),
            // Stuffed FF, or a restart marker: still the scan.
            Some(0x00) | Some(0xD0..=0xD7) => at += 2,
            // Fill byte before a marker: the marker starts here.
            Some(_) => return Ok(at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::camera::tests::tiny_jpeg;

    #[test]
    fn walks_to_the_eoi_past_a_thumbnail_stuffing_and_restarts() {
        let j = tiny_jpeg();
        let info = whole_jpeg(&j).unwrap();
        assert_eq!(
            info,
            JpegInfo {
                len: j.len(),
                width: 16,
                height: 8,
                components: 3
            }
        );
        let mut padded = j.clone();
        padded.extend([0u8; 37]);
        assert_eq!(whole_jpeg(&padded).unwrap().len, j.len());
    }

    #[test]
    fn refuses_what_is_not_a_whole_jpeg() {
        let j = tiny_jpeg();
        for cut in [3, 5, 12, j.len() - 5, j.len() - 1] {
            assert_eq!(
                whole_jpeg(&j[..cut]),
                Err(NotJpeg::Truncated(cut)),
                "cut at {cut}"
            );
        }
        assert_eq!(whole_jpeg(b"GIF89a"), Err(NotJpeg::NoSoi(b"GIF8".to_vec())));
        let mut no_sof = j[..10].to_vec();
        no_sof.extend(&j[29..]);
        assert_eq!(whole_jpeg(&no_sof), Err(NotJpeg::NoFrameHeader));
    }
}
