//! Why a JPEG frame did not decode ([`super::Error::Jpeg`]), as values. Beside the error type,
//! below `jpeg`, which produces them.

use std::fmt;

/// Why a JPEG frame did not decode.
#[derive(Debug)]
#[non_exhaustive]
pub enum JpegProblem {
    /// What the decoder refused.
    #[cfg(feature = "jpeg")]
    Decode(zune_jpeg::errors::DecodeErrors),
    /// What libjpeg-turbo refused, or why it could not decode.
    #[cfg(feature = "jpeg")]
    Turbo(TurboError),
    /// A decoder name other than `auto`, `zune`, `turbo`.
    UnknownBackend { name: String },
    /// An environment variable (`ROVERLOG_JPEG`) naming no decoder.
    BadEnv { var: &'static str, value: String },
    /// libjpeg-turbo asked for, but `library` did not load (`why`: the loader's error, kept
    /// for the process).
    #[cfg(feature = "jpeg")]
    TurboUnavailable {
        library: &'static str,
        why: &'static TurboError,
    },
    /// Headers that give no image size.
    NoDimensions,
    /// A frame of `len` bytes that starts as a JPEG but has no end-of-image marker.
    Truncated { len: usize },
    /// An image of more than `max_pixels` pixels (refused before allocating).
    TooLarge {
        width: usize,
        height: usize,
        max_pixels: usize,
    },
    /// An output buffer of another size than the image.
    OutputSize {
        len: usize,
        height: usize,
        width: usize,
        channels: usize,
    },
}

impl fmt::Display for JpegProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            #[cfg(feature = "jpeg")]
            JpegProblem::Decode(e) => write!(f, "{e}"),
            #[cfg(feature = "jpeg")]
            JpegProblem::Turbo(e) => write!(f, "{e}"),
            JpegProblem::UnknownBackend { name } => write!(
                f,
                "no JPEG decoder {name:?}: auto, zune (pure Rust) or turbo (libjpeg-turbo)"
            ),
            JpegProblem::BadEnv { var, value } => write!(
                f,
                "{var}={value:?}: expected auto, zune (pure Rust) or turbo (libjpeg-turbo)"
            ),
            #[cfg(feature = "jpeg")]
            JpegProblem::TurboUnavailable { library, why } => write!(
                f,
                "libjpeg-turbo was asked for but {library} does not load ({why}); install it \
                 (Debian: apt-get install libturbojpeg0) or use ROVERLOG_JPEG=auto or zune"
            ),
            JpegProblem::Truncated { len } => write!(
                f,
                "truncated: no end-of-image marker (FF D9) at the end of its {len} bytes"
            ),
            JpegProblem::NoDimensions => {
                f.write_str("no image dimensions after reading the headers")
            }
            JpegProblem::TooLarge {
                width,
                height,
                max_pixels,
            } => write!(
                f,
                "{width}x{height} image is over the limit of {max_pixels} pixels"
            ),
            JpegProblem::OutputSize {
                len,
                height,
                width,
                channels,
            } => write!(
                f,
                "output of {len} bytes for a {height}x{width}x{channels} image"
            ),
        }
    }
}

/// Why libjpeg-turbo could not be loaded or could not decode a frame ([`JpegProblem::Turbo`]).
#[cfg(feature = "jpeg")]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TurboError {
    /// `library` did not load: the dynamic loader's error.
    #[error("{0}")]
    Load(libloading::Error),
    /// A TurboJPEG function missing from `library`.
    #[error("{library}: {error}")]
    Symbol {
        library: &'static str,
        error: libloading::Error,
    },
    /// `tjInitDecompress` gave no handle.
    #[error("tjInitDecompress failed (out of memory?)")]
    Init,
    /// A frame of more bytes than the library's length type holds.
    #[error("frame too large")]
    FrameTooLarge { len: usize },
    /// An image larger than the library's dimension type holds.
    #[error("{width}x{height}: too large for libjpeg-turbo")]
    TooLarge { width: usize, height: usize },
    /// libjpeg-turbo refused the frame: its own message (`tjGetErrorStr2`).
    #[error("{0}")]
    Refused(String),
}
