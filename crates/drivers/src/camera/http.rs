//! The HTTP side of an IP camera: `http://HOST[:PORT]/PATH` parsed, one `GET` sent as
//! HTTP/1.0 (so the server cannot answer with chunked transfer coding: the body is the raw
//! stream until the server closes), the response head read within bounds, and the body
//! handed on as a reader that gives up when the camera stalls or the driver is told to stop.

use std::io::{self, BufRead, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

pub use crate::stop_reader::StopReader;

/// The longest response head (status line and headers) read.
const MAX_HEAD: usize = 16 << 10;
/// How often a blocked read looks at the stop flag.
const POLL: Duration = Duration::from_millis(200);

/// Why the camera's stream could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("{url:?}: not an http://HOST[:PORT]/PATH URL ({why})")]
    BadUrl { url: String, why: &'static str },
    #[error("{url}: connecting: {error}")]
    Connect { url: String, error: io::Error },
    #[error("{url}: {error}")]
    Io { url: String, error: io::Error },
    #[error("{url}: the response head is over {MAX_HEAD} bytes or cut short")]
    BadHead { url: String },
    #[error("{url}: status {status:?} (want 200)")]
    Status { url: String, status: String },
}

/// A parsed `http://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub host: String,
    pub port: u16,
    /// The path and query, `/` at least.
    pub path: String,
}

impl Url {
    pub fn parse(url: &str) -> Result<Url, HttpError> {
        let bad = |why| HttpError::BadUrl {
            url: url.to_string(),
            why,
        };
        let rest = url
            .strip_prefix("http://")
            .ok_or(bad("only http:// is supported"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.contains('@') {
            return Err(bad("credentials in the URL are not supported"));
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => {
                (h, p.parse().map_err(|_| bad("the port is not a number"))?)
            }
            _ => (authority, 80),
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        Ok(Url {
            host: host.to_string(),
            port,
            path: path.to_string(),
        })
    }
}

/// The body of an open stream, and its multipart boundary.
pub struct Stream {
    /// The socket, through [`Chunked`] when the server chose chunked transfer coding (ffmpeg's
    /// `-listen 1` does, even to an HTTP/1.0 request).
    pub body: Box<dyn Read + Send>,
    /// From the Content-Type, when it is multipart with one.
    pub boundary: Option<String>,
    pub content_type: String,
}

/// Connects and sends the request; returns the body once the head says 200 and multipart.
pub fn open(
    url: &str,
    connect_timeout: Duration,
    stall: Duration,
    stop: Arc<AtomicBool>,
) -> Result<Stream, HttpError> {
    open_peer(url, connect_timeout, stall, stop, "the camera")
}

/// [`open`] for another peer than a camera (`peer` names it in a stall error).
pub fn open_peer(
    url: &str,
    connect_timeout: Duration,
    stall: Duration,
    stop: Arc<AtomicBool>,
    peer: &'static str,
) -> Result<Stream, HttpError> {
    let u = Url::parse(url)?;
    let io = |error| HttpError::Io {
        url: url.to_string(),
        error,
    };
    let connect = |error| HttpError::Connect {
        url: url.to_string(),
        error,
    };
    let host = u.host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<_> = (host, u.port).to_socket_addrs().map_err(connect)?.collect();
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the host has no address");
    let mut sock = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, connect_timeout) {
            Ok(s) => {
                sock = Some(s);
                break;
            }
            Err(e) => last = e,
        }
    }
    let mut sock = sock.ok_or_else(|| connect(last))?;
    sock.set_read_timeout(Some(POLL)).map_err(io)?;
    let request = format!(
        "GET {} HTTP/1.0\r\nHost: {}:{}\r\nUser-Agent: roverlog-driver\r\nAccept: multipart/x-mixed-replace, */*\r\n\r\n",
        u.path, u.host, u.port
    );
    sock.write_all(request.as_bytes()).map_err(io)?;
    let mut body = StopReader::new(sock, stop, stall, peer);
    let head = read_head(&mut body).map_err(|e| match e.kind() {
        io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof => HttpError::BadHead {
            url: url.to_string(),
        },
        _ => io(e),
    })?;
    let text = String::from_utf8_lossy(&head);
    let status = text.lines().next().unwrap_or_default().trim_end();
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(HttpError::Status {
            url: url.to_string(),
            status: status.to_string(),
        });
    }
    let content_type = header(&text, "content-type").unwrap_or_default();
    // None: the server did not say (ffmpeg's `-listen 1` says application/octet-stream);
    // the body's first line will tell.
    let boundary = super::multipart::boundary(&content_type);
    let chunked = header(&text, "transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let body: Box<dyn Read + Send> = if chunked {
        Box::new(Chunked::new(io::BufReader::with_capacity(64 << 10, body)))
    } else {
        Box::new(body)
    };
    Ok(Stream {
        body,
        boundary,
        content_type,
    })
}

/// A header's value in a response head.
fn header(head: &str, name: &str) -> Option<String> {
    head.lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim().to_string())
}

/// The longest chunk-size line read.
const MAX_CHUNK_LINE: usize = 1024;

/// A chunked body (RFC 9112 7.1) read as the bytes it carries; trailers are ignored. A
/// malformed size line is an [`io::ErrorKind::InvalidData`] error.
pub struct Chunked<R> {
    inner: R,
    /// Bytes left in the current chunk; None before a size line.
    left: Option<u64>,
    done: bool,
}

impl<R: BufRead> Chunked<R> {
    pub fn new(inner: R) -> Self {
        Chunked {
            inner,
            left: None,
            done: false,
        }
    }

    fn size_line(&mut self) -> io::Result<u64> {
        let mut line = Vec::new();
        (&mut self.inner)
            .take(MAX_CHUNK_LINE as u64)
            .read_until(b'\n', &mut line)?;
        let bad = |why: &str| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "chunked body: size line {:?} {why}",
                    String::from_utf8_lossy(&line)
                ),
            )
        };
        if !line.ends_with(b"\n") {
            return Err(bad("is cut short or too long"));
        }
        let text = std::str::from_utf8(&line).map_err(|_| bad("is not text"))?;
        let hex = text.split(';').next().unwrap_or_default().trim();
        u64::from_str_radix(hex, 16).map_err(|_| bad("is not a hex size"))
    }
}

impl<R: BufRead> Read for Chunked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.done || buf.is_empty() {
                return Ok(0);
            }
            match self.left {
                None => {
                    let n = self.size_line()?;
                    if n == 0 {
                        self.done = true;
                        return Ok(0);
                    }
                    self.left = Some(n);
                }
                Some(0) => {
                    // The line break after a chunk's data.
                    let mut crlf = Vec::new();
                    (&mut self.inner).take(2).read_until(b'\n', &mut crlf)?;
                    if !crlf.ends_with(b"\n") {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            "chunked body: no line break after a chunk",
                        ));
                    }
                    self.left = None;
                }
                Some(left) => {
                    let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    let n = self.inner.read(&mut buf[..want])?;
                    if n == 0 {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                    self.left = Some(left - n as u64);
                    return Ok(n);
                }
            }
        }
    }
}

/// The head up to its blank line, a byte at a time (it is read once per connection; the
/// body's bytes stay in the socket).
fn read_head(r: &mut StopReader) -> io::Result<Vec<u8>> {
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !(head.ends_with(b"\r\n\r\n") || head.ends_with(b"\n\n")) {
        if head.len() >= MAX_HEAD {
            return Err(io::ErrorKind::InvalidData.into());
        }
        r.read_exact(&mut byte)?;
        head.push(byte[0]);
    }
    Ok(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_body_reads_as_its_bytes() {
        let body = b"4\r\nWiki\r\n7;ext=1\r\npedia i\r\nB\r\nn \r\nchunks.\r\n0\r\n\r\n";
        let mut out = String::new();
        Chunked::new(&body[..]).read_to_string(&mut out).unwrap();
        assert_eq!(out, "Wikipedia in \r\nchunks.");
        let e = Chunked::new(&b"zz\r\nab"[..])
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
        let e = Chunked::new(&b"10\r\nab"[..])
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{e}");
    }

    #[test]
    fn urls() {
        let u = Url::parse("http://127.0.0.1:8080/cam?x=1").unwrap();
        assert_eq!(
            u,
            Url {
                host: "127.0.0.1".into(),
                port: 8080,
                path: "/cam?x=1".into()
            }
        );
        assert_eq!(Url::parse("http://cam").unwrap().port, 80);
        assert_eq!(Url::parse("http://cam").unwrap().path, "/");
        assert_eq!(Url::parse("http://[::1]:81/").unwrap().host, "[::1]");
        for bad in [
            "https://cam/",
            "http://u:p@cam/",
            "http://cam:x/",
            "http:///",
        ] {
            assert!(
                matches!(Url::parse(bad), Err(HttpError::BadUrl { .. })),
                "{bad}"
            );
        }
    }
}
