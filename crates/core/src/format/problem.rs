//! What `validate` finds and `recover` does, as values: [`Problem`] (a typed finding whose
//! `Display` is the line users read), [`Cut`] (one change recovery made), and the [`Depth`]
//! a check goes to.
//!
//! It sits below the per-format checks (`raw`, `lzma`, `lzmaf::check`, `blob`,
//! `avi::repair`) and the orchestrator `check`, so every one of them can use it without
//! importing another back. Code decides on the variants, never on the text.

use std::fmt;
use std::path::PathBuf;

/// How deeply to check.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Depth {
    /// Sizes, indexes and file names only (fast: no decompression).
    #[default]
    Structure,
    /// Also decompress every `lzmaf` frame and check its size, and read every timestamp.
    Deep,
}

/// How far a deep check has got through one channel's samples, reported as it decodes
/// (for progress bars: `validate --deep` on an hour-long trace takes minutes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeepProgress<'a> {
    /// The channel being decoded.
    pub channel: &'a str,
    /// Samples (frames) decoded so far.
    pub done: u64,
    /// Samples (frames) the channel's index lists.
    pub total: u64,
    /// Compressed bytes read so far.
    pub bytes: u64,
}

/// Where a deep check reports [`DeepProgress`]: `(done, total, bytes)` of the channel at hand.
pub(crate) type OnFrames<'a> = &'a mut dyn FnMut(u64, u64, u64);

/// One thing found wrong (or worth a warning) in a sensor or one of its channels.
#[derive(Debug)]
#[non_exhaustive]
pub enum Problem {
    // ----- the sensor as a whole ------------------------------------------------------
    /// `meta.json` lists no `ts` channel.
    NoTsChannel,
    /// Channels disagree on their count: (channel, whole samples) of each counted one.
    CountsDiffer { counts: Vec<(String, u64)> },
    /// Samples past the durability watermark after a power cut or reboot.
    PastFsync { extra: u64, durable: u64 },
    /// A timestamp that is NaN or infinite.
    TsNotFinite { index: usize, value: f64 },
    /// Timestamps that go backwards (a warning: clocks step).
    TsBackwards {
        steps: usize,
        first: usize,
        from: f64,
        to: f64,
    },

    // ----- any channel ------------------------------------------------------------------
    /// The channel's data file does not exist.
    FileMissing,
    /// A `raw` file whose length is not whole samples.
    TornTail { bytes: u64, sample_bytes: u64 },
    /// A whole-file channel whose stream stops being readable.
    Unreadable(crate::Error),
    /// A format recovery neither counts nor cuts (reported as left alone).
    NotRecovered { format: String },

    // ----- lzmaf --------------------------------------------------------------------------
    /// The `.idx` offset file does not exist.
    IndexMissing,
    /// The index ends in a partial 8-byte entry.
    IndexTornEntry { bytes: usize },
    /// A non-empty data file whose index has no entry at all.
    IndexNoLeadingZero,
    /// An index whose first offset is not 0.
    IndexFirstOffset { first: u64 },
    /// Index entries that go backwards or past the data.
    IndexOutOfOrder {
        listed: usize,
        within: usize,
        data_len: u64,
    },
    /// A frame that decompresses to another size than one sample (`--deep`).
    FrameSize {
        frame: usize,
        got: usize,
        expected: usize,
    },
    /// A frame that does not decompress (`--deep`).
    FrameUndecodable { frame: usize, source: crate::Error },
    /// Whole frames past the last indexed one.
    FramesPastIndex { count: u64 },
    /// Bytes past the last whole frame.
    TornFrame { bytes: u64 },

    // ----- blob directories -------------------------------------------------------------
    /// The channel directory does not exist.
    DirMissing,
    /// What breaks the sample files' sequence (a gap, an empty or duplicate sample, a file
    /// that is not a sample, a crash's partial sample).
    Blob(crate::error::BlobProblem),

    // ----- mjpg ---------------------------------------------------------------------------
    /// A file that is not AVI at all: neither counted nor cut.
    NotAvi,
    /// What the AVI parser found (`avi::parse::Layout::problems`).
    Avi(crate::format::avi::AviProblem),
    /// A frame zero-filled at its end (as a blob's `BlobProblem::ZeroFilledSample`).
    ZeroFilledFrame { frame: usize },
    /// A frame without JPEG start/end markers (`--deep`).
    FrameNotJpeg { frame: usize },
    /// A frame that does not decode as JPEG (`--deep`, feature `jpeg`).
    JpegUndecodable { frame: usize, source: crate::Error },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::NoTsChannel => f.write_str("no \"ts\" channel in meta.json"),
            Problem::CountsDiffer { counts } => {
                f.write_str("channels hold different sample counts: ")?;
                for (i, (name, n)) in counts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{name} {n}")?;
                }
                Ok(())
            }
            Problem::PastFsync { extra, durable } => write!(
                f,
                "{extra} sample(s) past the last fsync ({durable} samples durable) were written before a power cut or reboot: they may be garbage (recover cuts them)"
            ),
            Problem::TsNotFinite { index, value } => {
                write!(f, "ts: sample {index} is not a finite time ({value})")
            }
            Problem::TsBackwards {
                steps,
                first,
                from,
                to,
            } => write!(
                f,
                "ts goes backwards {steps} time(s), first after sample {first} ({from} -> {to})"
            ),
            Problem::FileMissing => f.write_str("channel file is missing"),
            Problem::TornTail {
                bytes,
                sample_bytes,
            } => write!(
                f,
                "torn tail: {bytes} bytes past the last whole {sample_bytes}-byte sample"
            ),
            Problem::Unreadable(e) => write!(f, "{e}"),
            Problem::NotRecovered { format } => {
                write!(f, "{format} channel not checked or cut by recovery")
            }
            Problem::IndexMissing => f.write_str("offset index file is missing"),
            Problem::IndexTornEntry { bytes } => write!(
                f,
                "index has a torn entry ({bytes} bytes past the last whole offset)"
            ),
            Problem::IndexNoLeadingZero => f.write_str("index lacks its leading 0"),
            Problem::IndexFirstOffset { first } => write!(f, "first offset is {first}, not 0"),
            Problem::IndexOutOfOrder {
                listed,
                within,
                data_len,
            } => write!(
                f,
                "index lists {listed} frames but only {within} lie within the {data_len}-byte data file in order"
            ),
            Problem::FrameSize {
                frame,
                got,
                expected,
            } => write!(
                f,
                "frame {frame} decompresses to {got} bytes, expected {expected}"
            ),
            Problem::FrameUndecodable { frame, source } => {
                write!(f, "frame {frame} does not decompress: {source}")
            }
            Problem::FramesPastIndex { count } => write!(
                f,
                "{count} whole frame(s) past the index (their offsets were lost; recover re-indexes them)"
            ),
            Problem::TornFrame { bytes } => write!(
                f,
                "{bytes} bytes of data past the last whole frame (a torn frame)"
            ),
            Problem::DirMissing => f.write_str("channel directory is missing"),
            Problem::Blob(what) => write!(f, "{what}"),
            Problem::ZeroFilledFrame { frame } => write!(
                f,
                "frame {frame} is zero-filled, not a JPEG (a power cut left its data unwritten)"
            ),
            Problem::NotAvi => write!(f, "{}", crate::Error::NotAvi),
            Problem::Avi(what) => write!(f, "{what}"),
            Problem::FrameNotJpeg { frame } => write!(
                f,
                "frame {frame} is not a whole JPEG (no SOI or EOI marker)"
            ),
            Problem::JpegUndecodable { frame, source } => {
                write!(f, "frame {frame} does not decode: {source}")
            }
        }
    }
}

/// A problem of one channel, as recovery reports what it left alone.
#[derive(Debug)]
pub struct ChannelProblem {
    pub channel: String,
    pub problem: Problem,
}

impl fmt::Display for ChannelProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.channel, self.problem)
    }
}

/// Written as its line of text: the daemon's event log records what recovery left alone as
/// the lines `roverlog recover` prints.
impl serde::Serialize for ChannelProblem {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One change recovery made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    pub path: PathBuf,
    pub what: CutAction,
}

impl Cut {
    pub(crate) fn new(path: impl Into<PathBuf>, what: CutAction) -> Cut {
        Cut {
            path: path.into(),
            what,
        }
    }
}

impl fmt::Display for Cut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.what)
    }
}

/// What recovery did to one file ([`Cut`]); its `Display` is the line users read. Sizes are
/// in bytes, `from -> to`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CutAction {
    /// A missing file created empty.
    CreatedEmpty,
    /// A missing blob directory created empty.
    CreatedEmptyDir,
    /// A stray or surplus file removed.
    Removed,
    /// The durable-count file says fewer samples were fsynced than were written: the ones
    /// after them are cut.
    PowerCut { durable: u64, cut: u64 },
    /// A write or fsync failed after the last good fsync: the samples written since are not
    /// trusted (after a failed fsync the kernel may have dropped their pages and reports the
    /// next fsync good), so the ones after the `durable` made durable are cut.
    FailedWrite { durable: u64, cut: u64 },
    /// A raw file cut to whole samples.
    CutSamples {
        samples: u64,
        torn: u64,
        from: u64,
        to: u64,
    },
    /// An lzma file re-encoded with its first `target` samples.
    Reencoded {
        target: u64,
        complete: u64,
        from: u64,
        to: u64,
    },
    /// An lzmaf data file cut to whole frames.
    CutFrames {
        frames: u64,
        torn: u64,
        from: u64,
        to: u64,
    },
    /// An lzmaf offset index cut by `cut` bytes to the frames kept.
    CutOffsets {
        cut: u64,
        offsets: u64,
        torn: u64,
        from: u64,
        to: u64,
    },
    /// An lzmaf offset index rewritten, `reindexed` frames of it found from the data.
    Reindexed {
        offsets: u64,
        reindexed: u64,
        was: u64,
    },
    /// An AVI file replaced by an empty, finished video.
    EmptyVideo { why: EmptyVideoCause },
    /// An AVI file cut to its first `kept` frames and given an index and sizes.
    AviRebuilt {
        kept: usize,
        whole: usize,
        from: u64,
        to: u64,
        torn_at: Option<u64>,
    },
}

/// Why recovery wrote an empty video ([`CutAction::EmptyVideo`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmptyVideoCause {
    Missing,
    /// The file ended inside its header, at `len` bytes.
    HeaderCut {
        len: u64,
    },
}

impl fmt::Display for CutAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CutAction::CreatedEmpty => f.write_str("created empty (was missing)"),
            CutAction::CreatedEmptyDir => f.write_str("created empty directory (was missing)"),
            CutAction::Removed => f.write_str("removed"),
            CutAction::PowerCut { durable, cut } => write!(
                f,
                "a power cut or reboot since the last fsync: keeping the {durable} samples made durable, cutting the {cut} written after them"
            ),
            CutAction::FailedWrite { durable, cut } => write!(
                f,
                "a write or fsync failed after the last good fsync: keeping the {durable} samples made durable, cutting the {cut} written after them"
            ),
            CutAction::CutSamples {
                samples,
                torn,
                from,
                to,
            } => write!(
                f,
                "cut {} bytes ({samples} whole sample(s) and {torn} torn bytes): {from} -> {to} bytes",
                from - to
            ),
            CutAction::Reencoded {
                target,
                complete,
                from,
                to,
            } => write!(
                f,
                "re-encoded with its first {target} of {complete} sample(s): {from} -> {to} bytes"
            ),
            CutAction::CutFrames {
                frames,
                torn,
                from,
                to,
            } => write!(
                f,
                "cut {} bytes ({frames} whole frame(s) and {torn} bytes of a torn frame): {from} -> {to} bytes",
                from - to
            ),
            CutAction::CutOffsets {
                cut,
                offsets,
                torn,
                from,
                to,
            } => write!(
                f,
                "cut {cut} bytes ({offsets} offset(s), {torn} torn bytes): {from} -> {to} bytes"
            ),
            CutAction::Reindexed {
                offsets,
                reindexed,
                was,
            } => write!(
                f,
                "rewritten with {offsets} offset(s) ({reindexed} frame(s) re-indexed from the data; was {was} bytes)"
            ),
            CutAction::EmptyVideo { why } => {
                let why = match why {
                    EmptyVideoCause::Missing => "was missing".to_string(),
                    EmptyVideoCause::HeaderCut { len } => format!("header cut ({len} bytes)"),
                };
                write!(f, "{why}: written as an empty video")
            }
            CutAction::AviRebuilt {
                kept,
                whole,
                from,
                to,
                torn_at,
            } => {
                write!(
                    f,
                    "kept {kept} of {whole} whole frame(s), rebuilt the index and sizes: {from} -> {to} bytes"
                )?;
                if let Some(at) = torn_at {
                    write!(f, " (cut a torn chunk at {at})")?;
                }
                Ok(())
            }
        }
    }
}

/// What a format's check found in one channel: its whole samples, its bytes on disk, and
/// what its recovery must know (`P`).
#[derive(Debug)]
pub(crate) struct Checked<P> {
    pub complete: u64,
    pub disk_bytes: u64,
    pub plan: P,
}
