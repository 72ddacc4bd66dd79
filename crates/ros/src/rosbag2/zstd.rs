//! rosbag2's zstd compression ([`crate::rosbag2::metadata::Compression`]): per-message frames
//! decompressed with a bound before they are decoded, and files compressed whole decompressed,
//! streaming, into a temporary directory that lives as long as the source reading them.
//!
//! Memory stays bounded either way: a frame's output is read through a limit (never sized by
//! what its header declares), and zstd refuses a frame whose window is over its default
//! maximum (128 MiB; only `zstd --long` writes such frames; rosbag2 and rosbags do not).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::error::{DecodeProblem, Error, IoContext, Result, RosProblem};

/// Decompresses messages stored one zstd frame each (`compression_mode: message`), reusing
/// its zstd context and output buffer from one message to the next.
pub struct FrameDecoder {
    ctx: zstd::zstd_safe::DCtx<'static>,
    out: Vec<u8>,
    limit: u64,
}

/// Output buffer capacity kept between messages; a larger one (after a big message) is let go.
const KEEP: usize = 64 << 20;

impl FrameDecoder {
    /// A decoder refusing any message that decompresses to more than `limit` bytes.
    pub fn new(limit: u64) -> FrameDecoder {
        FrameDecoder {
            ctx: zstd::zstd_safe::DCtx::create(),
            out: Vec::new(),
            limit,
        }
    }

    /// The message `frame` holds: its zstd frame(s) decompressed, at most the limit.
    pub fn decompress(&mut self, frame: &[u8]) -> Result<&[u8], DecodeProblem> {
        if self.out.capacity() > KEEP {
            self.out = Vec::new();
        }
        self.out.clear();
        let decoder = zstd::stream::read::Decoder::with_context(frame, &mut self.ctx);
        decoder
            .take(self.limit + 1)
            .read_to_end(&mut self.out)
            .map_err(|e| DecodeProblem::Frame {
                error: e.to_string(),
                frame_len: frame.len(),
            })?;
        if self.out.len() as u64 > self.limit {
            return Err(DecodeProblem::FrameTooLarge { limit: self.limit });
        }
        Ok(&self.out)
    }
}

/// The temporary directory files compressed whole (`compression_mode: file`) are
/// decompressed into: the system's (`TMPDIR`), removed with everything in it when dropped.
pub struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Result<Scratch> {
        let tmp = std::env::temp_dir();
        let dir = tempfile::Builder::new()
            .prefix("roverlog-rosbag2-")
            .tempdir_in(&tmp)
            .at(&tmp)?;
        Ok(Scratch { dir })
    }

    /// The directory the files go to.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Decompresses `src` (file number `no` of the recording) into the directory, streaming,
    /// calling `progress(compressed bytes read, compressed size)`. Returns the decompressed
    /// file's path. A file that does not decompress is an error naming `src` and how many bytes
    /// came out before it failed (the partial output is removed).
    pub fn decompress(
        &self,
        no: usize,
        src: &Path,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<PathBuf> {
        let name = src
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = name.strip_suffix(".zstd").unwrap_or(&name);
        // Numbered: two listed files may share a name in different subdirectories.
        let out = self.dir.path().join(format!("{no}_{name}"));
        let r = decompress_file(src, &out, progress);
        if r.is_err() {
            let _ = std::fs::remove_file(&out);
        }
        r.map(|()| out)
    }
}

/// Counts the bytes read through it.
struct Counting<R> {
    inner: R,
    read: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

fn decompress_file(src: &Path, out: &Path, progress: &mut dyn FnMut(u64, u64)) -> Result<()> {
    let f = std::fs::File::open(src).at(src)?;
    let total = f.metadata().at(src)?.len();
    let bad = |problem| Error::Ros {
        path: src.to_path_buf(),
        problem,
    };
    let zstd = |written, e: std::io::Error| {
        bad(RosProblem::CompressedFile {
            written,
            error: e.to_string(),
        })
    };
    let mut dec =
        zstd::stream::read::Decoder::new(Counting { inner: f, read: 0 }).map_err(|e| zstd(0, e))?;
    let mut w = std::fs::File::create(out).at(out)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut written = 0u64;
    loop {
        let n = match dec.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // The zstd crate's error for input that ends inside a frame.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(bad(RosProblem::CompressedFileCut {
                    written,
                    error: e.to_string(),
                }))
            }
            Err(e) => return Err(zstd(written, e)),
        };
        w.write_all(&buf[..n]).at(out)?;
        written += n as u64;
        progress(dec.get_ref().get_ref().read, total);
    }
    if written == 0 {
        return Err(bad(RosProblem::CompressedFileEmpty));
    }
    w.flush().at(out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_decompresses_within_its_limit_only() {
        let msg: Vec<u8> = (0..10_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let frame = zstd::bulk::compress(&msg, 3).unwrap();
        let mut d = FrameDecoder::new(msg.len() as u64);
        assert_eq!(d.decompress(&frame).unwrap(), &msg[..]);
        // Reused after a failure: the next frame is read from its own start.
        assert!(d.decompress(&frame[..frame.len() / 2]).is_err());
        assert!(d.decompress(b"not zstd").is_err());
        assert_eq!(d.decompress(&frame).unwrap(), &msg[..]);
        // One byte over the limit is refused, whatever the frame declares.
        let mut small = FrameDecoder::new(msg.len() as u64 - 1);
        let e = small.decompress(&frame).unwrap_err();
        assert!(e.to_string().contains("more than the limit"), "{e}");
        // A frame that does not declare its size (written streaming) is bounded the same way.
        let mut streamed = Vec::new();
        let mut enc = zstd::stream::write::Encoder::new(&mut streamed, 3).unwrap();
        enc.write_all(&msg).unwrap();
        enc.finish().unwrap();
        assert!(small.decompress(&streamed).is_err());
        assert_eq!(d.decompress(&streamed).unwrap(), &msg[..]);
    }

    #[test]
    fn a_file_decompresses_and_a_cut_one_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 253) as u8).collect();
        let src = dir.path().join("x_0.mcap.zstd");
        std::fs::write(&src, zstd::encode_all(&data[..], 1).unwrap()).unwrap();
        let s = Scratch::new().unwrap();
        let mut calls = 0;
        let out = s.decompress(0, &src, &mut |_, _| calls += 1).unwrap();
        assert_eq!(out.file_name().unwrap(), "0_x_0.mcap");
        assert_eq!(std::fs::read(&out).unwrap(), data);
        assert!(calls > 0);
        let whole = std::fs::read(&src).unwrap();
        for cut in [whole.len() / 2, whole.len() - 1, 3, 0] {
            std::fs::write(&src, &whole[..cut]).unwrap();
            let e = s
                .decompress(1, &src, &mut |_, _| {})
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("x_0.mcap.zstd") && e.contains("compression_mode: file"),
                "{e}"
            );
            assert!(
                !s.path().join("1_x_0.mcap").exists(),
                "{cut}: partial output left"
            );
        }
        let tmp = s.path().to_path_buf();
        drop(s);
        assert!(!tmp.exists(), "the directory outlives its Scratch");
    }
}
