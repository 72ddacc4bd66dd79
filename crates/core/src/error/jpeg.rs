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
    /// What libjpeg-turbo refused (its message).
    Turbo(String),
    /// A decoder name other than `auto`, `zune`, `turbo`.
    UnknownBackend { name: String },
    /// An environment variable (`ROVERLOG_JPEG`) naming no decoder.
    BadEnv { var: &'static str, value: String },
    /// libjpeg-turbo asked for, but `library` did not load.
    TurboUnavailable { library: &'static str, why: String },
    /// Headers that give no image size.
    NoDimensions,
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
            JpegProblem::Turbo(msg) => write!(f, "{msg}"),
            JpegProblem::UnknownBackend { name } => write!(
                f,
                "no JPEG decoder {name:?}: auto, zune (pure Rust) or turbo (libjpeg-turbo)"
            ),
            JpegProblem::BadEnv { var, value } => write!(
                f,
                "{var}={value:?}: expected auto, zune (pure Rust) or turbo (libjpeg-turbo)"
            ),
            JpegProblem::TurboUnavailable { library, why } => write!(
                f,
                "libjpeg-turbo was asked for but {library} does not load ({why}); install it \
                 (Debian: apt-get install libturbojpeg0) or use ROVERLOG_JPEG=auto or zune"
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
