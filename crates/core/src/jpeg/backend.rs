//! Which decoder turns JPEG frames into pixels: libjpeg-turbo where it loads, else zune-jpeg,
//! unless the environment variable `ROVERLOG_JPEG` or [`set_backend`] says otherwise.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

use super::turbo;
use crate::error::{JpegProblem, TurboError};
use crate::{Error, Result};

/// The environment variable that picks the decoder: `auto` (the default), `zune` or `turbo`.
pub const ENV: &str = "ROVERLOG_JPEG";

/// A JPEG decoder choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// libjpeg-turbo if `libturbojpeg.so.0` loads, else zune-jpeg.
    Auto,
    /// zune-jpeg (pure Rust, always there).
    Zune,
    /// libjpeg-turbo; an error on every frame where the library does not load.
    Turbo,
}

impl Backend {
    /// The name `ROVERLOG_JPEG` and Python's `set_jpeg_decoder` take.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Auto => "auto",
            Backend::Zune => "zune",
            Backend::Turbo => "turbo",
        }
    }

    /// Parses a name (`auto`, `zune`, `turbo`), naming what is accepted if it is none.
    pub fn parse(name: &str) -> Result<Backend> {
        match name.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Ok(Backend::Auto),
            "zune" => Ok(Backend::Zune),
            "turbo" => Ok(Backend::Turbo),
            _ => Err(Error::Jpeg(JpegProblem::UnknownBackend {
                name: name.to_string(),
            })),
        }
    }

    /// The decoder this choice uses now: `Auto` becomes `Turbo` or `Zune`; `Turbo` without
    /// the library is an error saying why it did not load.
    pub fn resolve(self) -> Result<Backend> {
        match self {
            Backend::Zune => Ok(Backend::Zune),
            Backend::Auto => Ok(if turbo::get().is_ok() {
                Backend::Turbo
            } else {
                Backend::Zune
            }),
            Backend::Turbo => turbo::get().map(|_| Backend::Turbo).map_err(|why| {
                Error::Jpeg(JpegProblem::TurboUnavailable {
                    library: turbo::LIBRARY,
                    why,
                })
            }),
        }
    }
}

/// Why libjpeg-turbo cannot be used here, or `None` where it loads.
pub fn turbo_unavailable() -> Option<&'static TurboError> {
    turbo::get().err()
}

/// 0: not set (the environment decides); else 1 + the `Backend`'s place.
static CHOSEN: AtomicU8 = AtomicU8::new(0);
static FROM_ENV: OnceLock<Result<Backend, UnknownEnv>> = OnceLock::new();

/// A `ROVERLOG_JPEG` value naming no decoder (kept to name it on every frame).
#[derive(Clone, Debug)]
struct UnknownEnv {
    value: String,
}

fn encode(b: Backend) -> u8 {
    match b {
        Backend::Auto => 1,
        Backend::Zune => 2,
        Backend::Turbo => 3,
    }
}

/// Makes `b` the decoder of every later frame in this process (over `ROVERLOG_JPEG`).
/// Refuses `Turbo` where the library does not load, saying why.
pub fn set_backend(b: Backend) -> Result<()> {
    b.resolve()?;
    CHOSEN.store(encode(b), Ordering::Relaxed);
    Ok(())
}

/// The choice in force: [`set_backend`]'s, else `ROVERLOG_JPEG`'s (read once), else `Auto`.
/// An unknown `ROVERLOG_JPEG` value is an error (on every frame), naming the variable.
pub fn backend() -> Result<Backend> {
    match CHOSEN.load(Ordering::Relaxed) {
        1 => Ok(Backend::Auto),
        2 => Ok(Backend::Zune),
        3 => Ok(Backend::Turbo),
        _ => FROM_ENV
            .get_or_init(|| match std::env::var(ENV) {
                Ok(value) => Backend::parse(&value).map_err(|_| UnknownEnv { value }),
                Err(_) => Ok(Backend::Auto),
            })
            .clone()
            .map_err(|UnknownEnv { value }| Error::Jpeg(JpegProblem::BadEnv { var: ENV, value })),
    }
}
