//! An option of a library operation that is not valid ([`super::Error::Config`]), as values:
//! a copy's plan (`format::copy`), a replay's sensors (`replay::source`), a gulp source's
//! frame rate (`gulp::source`). Each variant's `Display` is the message users read after
//! `config: `. (The daemon's config document has its own problems, in the daemon crate.)

use std::fmt;
use std::path::PathBuf;

/// Why an option of a copy, a replay or an import cannot be used.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ConfigProblem {
    /// A copy's destination that exists already.
    DestinationExists { path: PathBuf },
    /// A copy's format override for a channel the sensor of trace `trace` does not have
    /// (or for `ts`).
    NoSuchChannel {
        sensor: String,
        channel: String,
        trace: PathBuf,
    },
    /// A copy's destination without a final name to put a temporary directory beside.
    NotADirectoryName { path: PathBuf },
    /// A sensor named twice in `--sensors`.
    SensorTwice { sensor: String },
    /// A replay source whose sensor declares `ts` itself.
    DeclaresTs { sensor: String },
    /// A frame rate that is not a positive number.
    Fps { fps: f64 },
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ConfigProblem as P;
        match self {
            P::DestinationExists { path } => write!(
                f,
                "{} already exists (refusing to write into it)",
                path.display()
            ),
            P::NoSuchChannel {
                sensor,
                channel,
                trace,
            } => write!(
                f,
                "{sensor}/{channel}: no such data channel in {}",
                trace.display()
            ),
            P::NotADirectoryName { path } => write!(f, "{}: not a directory name", path.display()),
            P::SensorTwice { sensor } => write!(f, "--sensors names {sensor:?} twice"),
            P::DeclaresTs { sensor } => write!(f, "source sensor {sensor:?} declares \"ts\""),
            P::Fps { fps } => write!(f, "--fps must be a positive number, got {fps}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use std::path::Path;

    /// The messages users and tests read, exactly as they were when they were free text
    /// (the old format strings, filled with the same values).
    #[test]
    fn messages_are_the_ones_users_read() {
        let (dst, src) = (Path::new("out/t2"), Path::new("in/t1"));
        let (sensor, name) = ("cam", "image");
        for (problem, want) in [
            (
                ConfigProblem::DestinationExists { path: dst.into() },
                format!(
                    "{} already exists (refusing to write into it)",
                    dst.display()
                ),
            ),
            (
                ConfigProblem::NoSuchChannel {
                    sensor: sensor.into(),
                    channel: name.into(),
                    trace: src.into(),
                },
                format!("{sensor}/{name}: no such data channel in {}", src.display()),
            ),
            (
                ConfigProblem::NotADirectoryName { path: "/".into() },
                format!("{}: not a directory name", Path::new("/").display()),
            ),
            (
                ConfigProblem::SensorTwice {
                    sensor: sensor.into(),
                },
                format!("--sensors names {sensor:?} twice"),
            ),
            (
                ConfigProblem::DeclaresTs {
                    sensor: sensor.into(),
                },
                format!("source sensor {:?} declares \"ts\"", sensor),
            ),
            (
                ConfigProblem::Fps { fps: -1.5 },
                format!("--fps must be a positive number, got {}", -1.5),
            ),
        ] {
            assert_eq!(Error::from(problem).to_string(), format!("config: {want}"));
        }
    }
}
