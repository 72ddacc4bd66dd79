//! The `.xz` codec (via `lzma-rust2`) and `lzma` channels: one `.xz` container (possibly
//! several concatenated streams) holding all samples.
//!
//! `lzma-rs`, named in the design card, stores data uncompressed in its `.xz` writer and
//! cannot read multi-stream files; `lzma-rust2` does both (see BENCHMARKS.md).

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

use lzma_rust2::{XzOptions, XzReader, XzWriter};

use super::bounds::{self, Expected};
use super::problem::{Checked, Cut, CutAction, Problem};
use crate::error::{CorruptProblem, Damage, Error, IoContext, Result, XzProblem};

/// The preset upstream uses for per-frame compression.
pub const DEFAULT_PRESET: u32 = 0;

/// Compresses `data` into one `.xz` container (CRC64 check, as Python's `lzma` does).
pub fn compress(data: &[u8], preset: u32) -> Vec<u8> {
    compress_with_progress(data, preset, &mut || {})
}

/// Bytes fed to the encoder between two calls of `progress` in [`compress_with_progress`]:
/// small enough that even a slow core reports well under a second apart.
pub const PROGRESS_STEP: usize = 256 << 10;

/// [`compress`], calling `progress` after every [`PROGRESS_STEP`] bytes of input are fed to
/// the encoder (which encodes as it is fed) and once at the end. The daemon's watchdog counts
/// these calls as progress, so a single huge frame does not look like a stuck writer. The
/// output is the same bytes as [`compress`].
pub fn compress_with_progress(data: &[u8], preset: u32, progress: &mut dyn FnMut()) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() / 2 + 64);
    encode_into(&mut out, data, preset, progress).expect("writing to a Vec");
    out
}

/// Encodes `data` as one `.xz` container into `out`, calling `progress` as
/// [`compress_with_progress`] says.
fn encode_into<W: Write>(
    out: W,
    data: &[u8],
    preset: u32,
    progress: &mut dyn FnMut(),
) -> std::io::Result<()> {
    let mut w = XzWriter::new(out, XzOptions::with_preset(preset.min(9)))?;
    for piece in data.chunks(PROGRESS_STEP) {
        w.write_all(piece)?;
        progress();
    }
    w.finish()?;
    progress();
    Ok(())
}

/// The most memory the `.xz` decoder of [`decompress`] may take (its dictionary): what
/// preset 9 needs (64 MiB) with room; a frame whose header asks more is refused instead of
/// allocated.
pub const DECODER_MEMLIMIT: u64 = 128 << 20;

/// Decompresses `.xz` bytes (all streams), refusing more than `limit` decompressed bytes.
pub fn decompress(data: &[u8], limit: usize, what: &Path) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    decompress_into(data, limit, what, &mut out)?;
    Ok(out)
}

/// [`decompress`] into `out` (cleared first; its allocation is reused).
///
/// Decoding is liblzma's (xz-utils' C library, built static from its vendored source by the
/// `liblzma` crate): 1.35x `lzma-rust2`'s speed per core on the collector's 128 x 2048 lidar
/// frames (`cargo bench -p roverlog-bench --bench lzma_decode`), and decoding `lzmaf` frames
/// is most of what reading a lidar costs. Encoding stays `lzma-rust2`'s.
pub fn decompress_into(data: &[u8], limit: usize, what: &Path, out: &mut Vec<u8>) -> Result<()> {
    decode_into(data, limit, out).map_err(|p| Error::corrupt(what, CorruptProblem::Xz(p)))
}

/// [`decompress_into`], saying why the data does not decode without naming a file.
pub(crate) fn decode_into(
    data: &[u8],
    limit: usize,
    out: &mut Vec<u8>,
) -> std::result::Result<(), XzProblem> {
    use liblzma::stream::{Action, Status, Stream, CONCATENATED};
    let xz = |e: liblzma::stream::Error| XzProblem::Decoder(e.to_string());
    let over = || XzProblem::TooLong { limit };
    out.clear();
    // Room for `limit` and one byte more (which says the data is longer); grown as the
    // output comes, from at most 64 MiB, so a small input cannot make a large allocation.
    let room = limit.saturating_add(1);
    out.reserve(room.min(64 << 20));
    let mut s = Stream::new_stream_decoder(DECODER_MEMLIMIT, CONCATENATED).map_err(xz)?;
    loop {
        let (was_in, was_out) = (s.total_in(), s.total_out());
        let status = s
            .process_vec(&data[was_in as usize..], out, Action::Finish)
            .map_err(xz)?;
        if out.len() > limit {
            return Err(over());
        }
        if status == Status::StreamEnd {
            return Ok(());
        }
        if out.len() == out.capacity() {
            out.reserve((out.capacity()).min(room - out.len()).max(1));
        } else if s.total_in() == was_in && s.total_out() == was_out {
            return Err(XzProblem::EndsInStream);
        }
    }
}

/// An `lzma` channel: decompressed on demand, streamed or whole.
///
/// A stream that stops decoding (a file cut short, corrupt bytes) gives the samples decoded
/// before it, as upstream's `lzma.open` reads do; a sample the sensor's `ts` counts past them
/// is a [`Error::DamagedSample`].
pub struct LzmaReader {
    pub(crate) path: PathBuf,
    sample_bytes: usize,
    /// Decompressed contents, filled on first random access.
    pub(crate) whole: Option<Vec<u8>>,
    /// Why the stream stopped decoding before its end (the decoder's words).
    torn: Option<XzProblem>,
    expected: Expected,
}

impl LzmaReader {
    /// Opens `path`; nothing is decompressed until asked for.
    pub fn open(path: &Path, sample_bytes: usize) -> Result<LzmaReader> {
        File::open(path).at(path)?;
        Ok(LzmaReader {
            path: path.to_path_buf(),
            sample_bytes,
            whole: None,
            torn: None,
            expected: None,
        })
    }

    /// Reads the channel against the sensor's `ts` count (see [`Expected`]).
    pub fn expecting(mut self, expected: Expected) -> LzmaReader {
        self.expected = expected;
        self
    }

    /// Bytes per sample.
    pub fn sample_bytes(&self) -> usize {
        self.sample_bytes
    }

    /// Decompresses the whole channel (once) and returns its bytes: as far as the stream
    /// decodes.
    pub fn bytes(&mut self) -> Result<&[u8]> {
        if self.whole.is_none() {
            let mut out = Vec::new();
            let file = File::open(&self.path).at(&self.path)?;
            // What decoded before an error stays in `out`.
            if let Err(e) = XzReader::new(BufReader::new(file), true).read_to_end(&mut out) {
                self.torn = Some(XzProblem::Decoder(e.to_string()));
            }
            self.whole = Some(out);
        }
        Ok(self.whole.as_deref().unwrap_or_default())
    }

    /// Number of samples: the whole ones that decode, no more than `ts` counts. From the
    /// `.xz` indexes when they are sound (a few reads at the end of the file, see
    /// [`super::xz_index`]), else by decompressing the channel (a torn file: the samples
    /// before the tear).
    #[allow(clippy::len_without_is_empty)] // reading the length may need I/O; no cheap is_empty
    pub fn len(&mut self) -> Result<u64> {
        let s = self.sample_bytes as u64;
        let indexed = match self.whole {
            None => super::xz_index::uncompressed_len(&self.path)?,
            Some(_) => None,
        };
        let decoded = match indexed {
            Some(n) => n / s,
            None => self.bytes()?.len() as u64 / s,
        };
        Ok(bounds::agreed(decoded, self.expected))
    }

    /// Whether the channel holds no whole sample (see [`LzmaReader::len`]).
    pub fn is_empty(&mut self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Sample `index` (decompresses the channel). Every sample that decodes can be read,
    /// also one past `ts`.
    pub fn sample(&mut self, index: u64) -> Result<&[u8]> {
        let s = self.sample_bytes;
        self.bytes()?;
        let len = self.len()?;
        let bytes = self.whole.as_deref().unwrap_or_default();
        let decoded = (bytes.len() / s) as u64;
        if index < decoded {
            let a = index as usize * s;
            return Ok(&bytes[a..a + s]);
        }
        let listed = decoded + u64::from(self.torn.is_some() || !bytes.len().is_multiple_of(s));
        let have = bytes.len().saturating_sub(index as usize * s).min(s) as u64;
        Err(bounds::unreadable(
            &self.path,
            index,
            len,
            listed,
            self.expected,
            || match &self.torn {
                Some(why) => Damage::Undecodable(why.clone()),
                None => Damage::Cut {
                    have,
                    need: s as u64,
                },
            },
        ))
    }

    /// The error for sample `index` of a stream ([`LzmaReader::stream`]) that ended before
    /// it (`failed`: `None`) or failed at it.
    pub(crate) fn stream_error(&self, index: u64, failed: Option<Error>) -> Error {
        // A stream fails only as undecodable xz ([`LzmaStream`]); anything else is said as
        // it is.
        let failed = match failed {
            Some(Error::Corrupt {
                problem: CorruptProblem::Xz(why),
                ..
            }) => Some(why),
            Some(other) => return other,
            None => None,
        };
        let listed = index + u64::from(failed.is_some());
        bounds::unreadable(
            &self.path,
            index,
            index,
            listed,
            self.expected,
            || match failed {
                Some(why) => Damage::Undecodable(why),
                None => Damage::Cut {
                    have: 0,
                    need: self.sample_bytes as u64,
                },
            },
        )
    }

    /// A streaming iterator over samples, decompressing as it goes (constant memory).
    pub fn stream(&self) -> Result<LzmaStream> {
        let file = File::open(&self.path).at(&self.path)?;
        Ok(LzmaStream {
            path: self.path.clone(),
            inner: XzReader::new(BufReader::new(file), true),
            sample_bytes: self.sample_bytes,
            done: false,
        })
    }
}

/// Samples of an `lzma` channel in order.
pub struct LzmaStream {
    path: PathBuf,
    inner: XzReader<BufReader<File>>,
    sample_bytes: usize,
    done: bool,
}

impl Iterator for LzmaStream {
    type Item = Result<Vec<u8>>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut buf = vec![0u8; self.sample_bytes];
        let mut filled = 0;
        while filled < buf.len() {
            match self.inner.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.done = true;
                    return Some(Err(Error::corrupt(
                        &self.path,
                        CorruptProblem::Xz(XzProblem::Decoder(e.to_string())),
                    )));
                }
            }
        }
        if filled < buf.len() {
            self.done = true;
            return (filled > 0).then(|| {
                Err(Error::corrupt(
                    &self.path,
                    CorruptProblem::Xz(XzProblem::PartialSample { bytes: filled }),
                ))
            });
        }
        Some(Ok(buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    /// Counts the bytes the encoder has emitted so far.
    struct Counting(Rc<Cell<usize>>);

    impl Write for Counting {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.set(self.0.get() + b.len());
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Poorly compressible bytes, so the encoder has real work.
    fn noise(n: usize) -> Vec<u8> {
        crate::noise(n, 0x9e37_79b9_7f4a_7c15)
    }

    #[test]
    fn progress_output_is_the_same_bytes_as_compress() {
        let data = noise(3 * PROGRESS_STEP + 1234);
        let mut calls = 0;
        let chunked = compress_with_progress(&data, 6, &mut || calls += 1);
        assert_eq!(chunked, compress(&data, 6));
        // One call per started step, and one after finishing.
        assert_eq!(calls, 4 + 1);
        let back = decompress(&chunked, data.len(), Path::new("test")).unwrap();
        assert_eq!(back, data);
    }

    #[test]
    fn decoding_reads_every_stream_and_refuses_what_is_over_or_cut() {
        let (a, b) = (noise(70_000), b"tail".repeat(1000));
        let mut two = compress(&a, 0);
        two.extend_from_slice(&compress(&b, 0));
        let p = Path::new("f");
        let mut out = vec![1, 2, 3];
        decompress_into(&two, a.len() + b.len(), p, &mut out).unwrap();
        assert_eq!(out, [&a[..], &b[..]].concat());
        // Exactly at the limit is fine; one byte under it is not.
        let one = compress(&a, 0);
        assert_eq!(decompress(&one, a.len(), p).unwrap(), a);
        let e = decompress(&one, a.len() - 1, p).unwrap_err().to_string();
        assert!(e.contains("more than 69999 bytes"), "{e}");
        // Cut anywhere, or damaged: an error naming xz, never a panic or a short Ok.
        for cut in [0, 5, 12, one.len() / 2, one.len() - 1] {
            let e = decompress(&one[..cut], a.len(), p).unwrap_err().to_string();
            assert!(e.contains("xz"), "cut at {cut}: {e}");
        }
        let mut bad = one.clone();
        let mid = bad.len() / 2;
        bad[mid] ^= 0x55;
        assert!(decompress(&bad, a.len(), p).is_err());
        // A big limit does not allocate it up front.
        let mut out = Vec::new();
        decompress_into(&compress(b"x", 0), 1 << 40, p, &mut out).unwrap();
        assert!(out.capacity() <= 64 << 20);
    }

    /// The watchdog beats mean something only if the encoder works while it is fed, not all
    /// at `finish`: by the last progress call before finishing, most of a large incompressible
    /// frame (at the daemon's default preset) must already have come out of the encoder.
    #[test]
    fn a_huge_frame_is_encoded_while_it_is_fed() {
        let data = noise(4 << 20);
        let emitted = Rc::new(Cell::new(0));
        let mut seen = Vec::new();
        let counter = emitted.clone();
        encode_into(
            Counting(emitted.clone()),
            &data,
            DEFAULT_PRESET,
            &mut || seen.push(counter.get()),
        )
        .unwrap();
        let total = emitted.get();
        assert!(total >= data.len(), "noise should not compress: {total}");
        assert_eq!(seen.len(), data.len() / PROGRESS_STEP + 1);
        let before_finish = seen[seen.len() - 2];
        assert!(
            before_finish >= total / 2,
            "only {before_finish} of {total} bytes were emitted before finish: the encoder \
             buffers the whole frame, so progress calls would not prove any work"
        );
        // And the output grows steadily, not in one burst.
        let halfway = seen[seen.len() / 2];
        assert!(
            halfway >= total / 4,
            "only {halfway} of {total} bytes emitted halfway through the input"
        );
    }
}

/// What recovery must know to cut a whole-file `.xz` channel.
#[derive(Debug)]
pub(crate) struct LzmaPlan {
    exists: bool,
    sample_bytes: usize,
}

/// Counts a whole-file channel's samples. Counting means decompressing (streamed, constant
/// memory): such a channel has no other way to tell its length.
pub(crate) fn check(
    path: &Path,
    sample_bytes: usize,
    problems: &mut Vec<Problem>,
) -> Result<Checked<LzmaPlan>> {
    let size = crate::io::file_len(path)?;
    let mut n = 0;
    match size {
        None => problems.push(Problem::FileMissing),
        Some(_) => {
            let r = LzmaReader::open(path, sample_bytes)?;
            for sample in r.stream()? {
                match sample {
                    Ok(_) => n += 1,
                    Err(e) => {
                        problems.push(Problem::Unreadable(e));
                        break;
                    }
                }
            }
        }
    }
    Ok(Checked {
        complete: n,
        disk_bytes: size.unwrap_or(0),
        plan: LzmaPlan {
            exists: size.is_some(),
            sample_bytes,
        },
    })
}

impl LzmaPlan {
    /// Re-encodes the channel with its first `target` samples when it holds more, or when the
    /// check found it damaged; `complete` and `disk_bytes` are what the check counted.
    pub(crate) fn recover(
        &self,
        path: &Path,
        complete: u64,
        disk_bytes: u64,
        had_problems: bool,
        target: u64,
        cuts: &mut Vec<Cut>,
    ) -> Result<()> {
        if !self.exists {
            std::fs::write(path, compress(&[], DEFAULT_PRESET)).at(path)?;
            cuts.push(Cut::new(path, CutAction::CreatedEmpty));
        } else if complete > target || had_problems {
            let r = LzmaReader::open(path, self.sample_bytes)?;
            let mut keep = Vec::new();
            for sample in r.stream()?.take(target as usize) {
                keep.extend_from_slice(&sample?);
            }
            let bytes = compress(&keep, 6);
            super::meta::write_file_atomic(path, &bytes)?;
            cuts.push(Cut::new(
                path,
                CutAction::Reencoded {
                    target,
                    complete,
                    from: disk_bytes,
                    to: bytes.len() as u64,
                },
            ));
        }
        Ok(())
    }
}
