//! What `validate` finds and `recover` does, as values: [`Problem`] (a typed finding whose
//! `Display` is the line users read), [`Cut`] (one change recovery made), and the [`Depth`]
//! a check goes to.
//!
//! It sits below the per-format checks (`raw`, `lzma`, `lzmaf::check`, `blob`,
//! `avi::repair`) and the orchestrator `check`, so every one of them can use it without
//! importing another back. Code decides on the variants, never on the text.

use std::ffi::OsString;
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
    /// A file that is not a sample (recovery leaves it for a person).
    UnexpectedFile { name: OsString },
    /// Two files for one sample index.
    DuplicateSample { index: u64, path: PathBuf },
    /// An empty sample file (how a sample lost in a power cut looks).
    EmptySample { index: u64 },
    /// A gap in the sample numbers.
    SampleGap { missing: u64, found: u64 },
    /// The writer's temporary file, left by a crash.
    PartialSample { path: PathBuf },

    // ----- mjpg ---------------------------------------------------------------------------
    /// A file that is not AVI at all: neither counted nor cut.
    NotAvi,
    /// What the AVI parser found, in its words (`avi::parse::Layout::problems`).
    Avi(String),
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
            Problem::UnexpectedFile { name } => write!(f, "unexpected file {name:?}"),
            Problem::DuplicateSample { index, path } => {
                write!(f, "sample {index} appears twice ({})", path.display())
            }
            Problem::EmptySample { index } => write!(f, "sample {index} is an empty file"),
            Problem::SampleGap { missing, found } => {
                write!(f, "sample {missing} is missing but sample {found} exists")
            }
            Problem::PartialSample { path } => {
                write!(f, "partial sample {} left by a crash", path.display())
            }
            Problem::NotAvi => write!(f, "{}", crate::Error::NotAvi),
            Problem::Avi(what) => f.write_str(what),
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
    pub what: String,
}

impl Cut {
    pub(crate) fn new(path: impl Into<PathBuf>, what: impl Into<String>) -> Cut {
        Cut {
            path: path.into(),
            what: what.into(),
        }
    }
}

impl fmt::Display for Cut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.what)
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
