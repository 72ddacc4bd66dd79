//! `multipart/x-mixed-replace` (an MJPEG stream over HTTP), part by part: each part's headers,
//! then its body by `Content-Length` when the part has one, else by scanning for the next
//! boundary line. Every size is bounded ([`Limits`]); the parser owns its buffer, so nothing
//! past a part is consumed before it is asked for.

use std::io::{self, Read};

/// Bounds on what one stream may make the parser hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The largest part body (a JPEG frame plus any padding).
    pub max_part: usize,
    /// The longest header line (the boundary line included).
    pub max_line: usize,
    /// The most header lines in one part.
    pub max_headers: usize,
    /// Bytes skipped looking for a boundary line (a preamble, junk between parts).
    pub max_skip: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_part: 16 << 20,
            max_line: 1024,
            max_headers: 32,
            max_skip: 64 << 10,
        }
    }
}

/// Why the stream cannot be read on.
#[derive(Debug, thiserror::Error)]
pub enum MultipartError {
    #[error("reading the stream: {0}")]
    Io(#[source] io::Error),
    #[error("a part's Content-Length {declared} is over the limit of {limit} bytes")]
    DeclaredTooLarge { declared: u64, limit: usize },
    #[error("a part without Content-Length ran past the limit of {limit} bytes with no boundary")]
    PartTooLarge { limit: usize },
    #[error("a header line is longer than {limit} bytes")]
    LineTooLong { limit: usize },
    #[error("a part has more than {limit} header lines")]
    TooManyHeaders { limit: usize },
    #[error("no boundary line {boundary:?} in {skipped} bytes")]
    NoBoundary { boundary: String, skipped: usize },
    #[error("the body is not multipart: its Content-Type has no boundary and its first line {first_line:?} is not `--BOUNDARY`")]
    NotMultipart { first_line: String },
    #[error("a part's Content-Length {0:?} is not a number")]
    BadContentLength(String),
    #[error("the stream ended inside a part ({got} of {expected} bytes)")]
    Truncated { got: usize, expected: usize },
}

/// The boundary of a `Content-Type: multipart/x-mixed-replace; boundary=...` value, or None
/// when it is not multipart or has no boundary. Quotes are removed; a leading `--` some
/// cameras put in the parameter is kept (the boundary line is then `----...`) and the
/// parser also accepts the line without the extra dashes.
pub fn boundary(content_type: &str) -> Option<String> {
    let mut parts = content_type.split(';');
    let mime = parts.next()?.trim();
    if !mime.to_ascii_lowercase().starts_with("multipart/") {
        return None;
    }
    parts
        .find_map(|p| {
            let (k, v) = p.split_once('=')?;
            (k.trim().eq_ignore_ascii_case("boundary"))
                .then(|| v.trim().trim_matches('"').to_string())
        })
        .filter(|b| !b.is_empty())
}

/// The parts of one stream.
pub struct Multipart<R> {
    inner: R,
    /// Bytes read are `buf[..filled]`; the rest is zeroed room for the next read.
    buf: Vec<u8>,
    filled: usize,
    pos: usize,
    eof: bool,
    /// `--boundary`.
    delimiter: Vec<u8>,
    boundary: String,
    limits: Limits,
    /// The boundary line before the next part has been read already ([`Multipart::sniff`]).
    at_part: bool,
}

/// Bytes asked of the reader at a time (at least).
const READ_CHUNK: usize = 64 << 10;

/// One part's body (the headers are not kept: only the length matters here).
pub type Part = Vec<u8>;

impl<R: Read> Multipart<R> {
    pub fn new(inner: R, boundary: &str, limits: Limits) -> Self {
        Multipart {
            inner,
            buf: Vec::new(),
            filled: 0,
            pos: 0,
            eof: false,
            delimiter: [b"--", boundary.as_bytes()].concat(),
            boundary: boundary.to_string(),
            limits,
            at_part: false,
        }
    }

    /// For a server that does not say its boundary (ffmpeg's `-listen 1` sends
    /// `Content-Type: application/octet-stream`): the stream's first line, `--BOUNDARY`,
    /// gives it.
    pub fn sniff(inner: R, limits: Limits) -> Result<Self, MultipartError> {
        let mut m = Multipart::new(inner, "", limits);
        let mut skipped = 0;
        let first = loop {
            match m.line()? {
                Some(l) if l.is_empty() && skipped < limits.max_skip => skipped += 2,
                Some(l) => break l,
                None => break Vec::new(),
            }
        };
        let Some(b) = first
            .strip_prefix(b"--".as_slice())
            .filter(|b| !b.is_empty())
        else {
            return Err(MultipartError::NotMultipart {
                first_line: String::from_utf8_lossy(&first[..first.len().min(64)]).into_owned(),
            });
        };
        let b = String::from_utf8_lossy(b).into_owned();
        m.delimiter = [b"--", b.as_bytes()].concat();
        m.boundary = b;
        m.at_part = true;
        Ok(m)
    }

    /// The boundary in use.
    pub fn boundary(&self) -> &str {
        &self.boundary
    }

    /// The next part's body; None at the closing boundary or at the end of the stream
    /// between parts.
    pub fn next_part(&mut self) -> Result<Option<Part>, MultipartError> {
        if !std::mem::take(&mut self.at_part) && !self.skip_to_boundary()? {
            return Ok(None);
        }
        let mut content_length = None;
        let mut headers = 0;
        loop {
            let line = self.line()?.ok_or(MultipartError::Truncated {
                got: 0,
                expected: 1,
            })?;
            if line.is_empty() {
                break;
            }
            headers += 1;
            if headers > self.limits.max_headers {
                return Err(MultipartError::TooManyHeaders {
                    limit: self.limits.max_headers,
                });
            }
            let text = String::from_utf8_lossy(&line);
            if let Some((k, v)) = text.split_once(':') {
                if k.trim().eq_ignore_ascii_case("content-length") {
                    let v = v.trim();
                    let n: u64 = v
                        .parse()
                        .map_err(|_| MultipartError::BadContentLength(v.to_string()))?;
                    content_length = Some(n);
                }
            }
        }
        match content_length {
            Some(n) => {
                if n > self.limits.max_part as u64 {
                    return Err(MultipartError::DeclaredTooLarge {
                        declared: n,
                        limit: self.limits.max_part,
                    });
                }
                self.take(n as usize).map(Some)
            }
            None => self.until_boundary().map(Some),
        }
    }

    /// Skips to just past the next boundary line; false at the closing one or the end.
    fn skip_to_boundary(&mut self) -> Result<bool, MultipartError> {
        let mut skipped = 0;
        loop {
            let Some(line) = self.line()? else {
                return Ok(false);
            };
            let bare = line.strip_prefix(b"--".as_slice()).unwrap_or(&line);
            for d in [self.delimiter.as_slice(), self.boundary.as_bytes()] {
                if line == d || bare == d {
                    return Ok(true);
                }
                if line.strip_suffix(b"--".as_slice()) == Some(d) {
                    return Ok(false);
                }
            }
            skipped += line.len() + 1;
            if skipped > self.limits.max_skip {
                return Err(MultipartError::NoBoundary {
                    boundary: String::from_utf8_lossy(&self.delimiter).into_owned(),
                    skipped,
                });
            }
        }
    }

    /// Reads more into the buffer; false at the end of the stream.
    fn fill(&mut self) -> Result<bool, MultipartError> {
        if self.eof {
            return Ok(false);
        }
        if self.pos > 0 && self.pos >= self.filled / 2 {
            self.buf.copy_within(self.pos..self.filled, 0);
            self.filled -= self.pos;
            self.pos = 0;
        }
        if self.buf.len() - self.filled < READ_CHUNK {
            self.buf.resize(self.filled + READ_CHUNK, 0);
        }
        let n = loop {
            match self.inner.read(&mut self.buf[self.filled..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(MultipartError::Io(e)),
            }
        };
        self.filled += n;
        self.eof = n == 0;
        Ok(n > 0)
    }

    /// One line without its `\r\n` or `\n`; None at the end of the stream (a last line
    /// without a newline is returned).
    fn line(&mut self) -> Result<Option<Vec<u8>>, MultipartError> {
        let mut searched = 0;
        loop {
            let avail = &self.buf[self.pos..self.filled];
            if let Some(i) = avail[searched..].iter().position(|&b| b == b'\n') {
                let end = searched + i;
                if end > self.limits.max_line {
                    break;
                }
                let line = avail[..end].strip_suffix(b"\r").unwrap_or(&avail[..end]);
                let line = line.to_vec();
                self.pos += end + 1;
                return Ok(Some(line));
            }
            searched = avail.len();
            if searched > self.limits.max_line {
                break;
            }
            if !self.fill()? {
                let rest = self.buf[self.pos..self.filled].to_vec();
                self.pos = self.filled;
                return Ok((!rest.is_empty()).then_some(rest));
            }
        }
        Err(MultipartError::LineTooLong {
            limit: self.limits.max_line,
        })
    }

    /// Exactly `n` bytes.
    fn take(&mut self, n: usize) -> Result<Part, MultipartError> {
        while self.filled - self.pos < n {
            if !self.fill()? {
                return Err(MultipartError::Truncated {
                    got: self.filled - self.pos,
                    expected: n,
                });
            }
        }
        let part = self.buf[self.pos..self.pos + n].to_vec();
        self.pos += n;
        Ok(part)
    }

    /// The bytes up to the line break before the next boundary line (left unread), or to
    /// the end of the stream.
    fn until_boundary(&mut self) -> Result<Part, MultipartError> {
        let needle = [b"\n".as_slice(), &self.delimiter].concat();
        // A boundary parameter that already starts with `--` may be used bare (see
        // [`boundary`]).
        let bare = [b"\n".as_slice(), self.boundary.as_bytes()].concat();
        let bare = self.boundary.starts_with("--").then_some(bare.as_slice());
        let mut searched = 0;
        loop {
            let avail = &self.buf[self.pos..self.filled];
            let hay = &avail[searched..];
            let found = match (find(hay, &needle), bare.and_then(|b| find(hay, b))) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if let Some(i) = found {
                let end = searched + i;
                let body = avail[..end].strip_suffix(b"\r").unwrap_or(&avail[..end]);
                let body = body.to_vec();
                self.pos += end + 1;
                return Ok(body);
            }
            searched = avail.len().saturating_sub(needle.len() - 1);
            if avail.len() > self.limits.max_part + needle.len() + 1 {
                return Err(MultipartError::PartTooLarge {
                    limit: self.limits.max_part,
                });
            }
            if !self.fill()? {
                // The end of the stream: the rest is the last part, less the line break
                // that would have preceded a boundary.
                let rest = &self.buf[self.pos..self.filled];
                let rest = rest.strip_suffix(b"\n").unwrap_or(rest);
                let body = rest.strip_suffix(b"\r").unwrap_or(rest).to_vec();
                self.pos = self.filled;
                return Ok(body);
            }
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
