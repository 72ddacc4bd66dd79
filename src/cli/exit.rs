//! The one place a command's result becomes an exit code (as ripgrep's `main.rs` does): every
//! verb returns `anyhow::Result<Outcome>`; [`code`] prints the error, if any, and picks the
//! code. The codes, documented in `--help`, README.md and docs/:
//!
//! - 0 ([`Outcome::Ok`]): success (`validate`: everything checked is sound; `daemon`: stopped
//!   cleanly; a driver: stopped by a signal). Also a reader of stdout that went away
//!   (`roverlog cat TRACE | head`): the command ends quietly, as other Unix tools do.
//! - 1 ([`Outcome::Problems`]): the command did its work and found problems, each printed
//!   (`validate`, `recover`, `checksum --compare`, `offload`; `ctl`: the daemon refused the
//!   command; `bench`: a scenario failed, lost data, or the disk does not hold the load); or
//!   [`Exit::Runtime`]: the daemon failed while running (or `bench`'s rig driver did).
//! - 2 ([`Exit::Usage`], any error not marked otherwise): the command could not do its work
//!   (bad arguments, an invalid config, unreadable input, an I/O error).
//! - 3 ([`Exit::Unavailable`]): `daemon`: its sockets or data_root are held by another running
//!   daemon; `ctl`: no daemon answered; a driver: its source ended or broke.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;

/// What a command that did its work reports.
pub enum Outcome {
    /// Exit code 0.
    Ok,
    /// Exit code 1: problems found and printed.
    Problems,
}

/// The exit code of a failed command, when it is not 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 1: the daemon failed while running (a shutdown past its deadline, an I/O error at
    /// start, a write or fsync of the data during the run); `bench-rig-driver` (`bench
    /// --only rig`'s own child) could not send its stream.
    Runtime,
    /// 2: bad usage, an invalid config, unreadable input (what an error is unless marked).
    Usage,
    /// 3: a peer is unavailable: another daemon holds the sockets, no daemon answers `ctl`, a
    /// driver's source ended.
    Unavailable,
}

impl Exit {
    fn code(self) -> u8 {
        match self {
            Exit::Runtime => 1,
            Exit::Usage => 2,
            Exit::Unavailable => 3,
        }
    }
}

/// An error with the exit code and the prefix its command documents (`roverlog daemon: `,
/// `roverlog ctl: `, `error: `; one made at run time, `roverlog bench-rig-driver imu: error`);
/// any other error is printed as `roverlog: error: ` and exits 2.
#[derive(Debug)]
pub struct Failure {
    pub exit: Exit,
    pub prefix: Cow<'static, str>,
    pub error: anyhow::Error,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.error)
    }
}

impl std::error::Error for Failure {}

/// Marks an error with its exit code and prefix (`.fail(Exit::Unavailable, "roverlog ctl")`).
pub trait Fail<T> {
    fn fail(self, exit: Exit, prefix: impl Into<Cow<'static, str>>) -> anyhow::Result<T>;
}

impl<T, E: Into<anyhow::Error>> Fail<T> for Result<T, E> {
    fn fail(self, exit: Exit, prefix: impl Into<Cow<'static, str>>) -> anyhow::Result<T> {
        self.map_err(|e| {
            Failure {
                exit,
                prefix: prefix.into(),
                error: e.into(),
            }
            .into()
        })
    }
}

/// Writing to stdout failed: the reader went away (`Closed`, exit 0 without a word), or
/// another I/O error (a full disk behind `> file`: exit 2).
#[derive(Debug)]
pub enum StdoutError {
    Closed,
    Failed(io::Error),
}

impl From<io::Error> for StdoutError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            StdoutError::Closed
        } else {
            StdoutError::Failed(e)
        }
    }
}

impl fmt::Display for StdoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StdoutError::Closed => f.write_str("writing to stdout: the reader closed it"),
            StdoutError::Failed(e) => write!(f, "writing to stdout: {e}"),
        }
    }
}

impl std::error::Error for StdoutError {}

/// One line to stdout, as `println!` without its panic on a closed pipe (Rust ignores SIGPIPE,
/// so a reader going away is an `EPIPE` error, ended quietly by [`code`]).
pub fn line(args: fmt::Arguments<'_>) -> Result<(), StdoutError> {
    let mut out = io::stdout().lock();
    out.write_fmt(args)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// Text to stdout, as `print!` without its panic (see [`line`](fn@line)).
pub fn text(s: &str) -> Result<(), StdoutError> {
    io::stdout().lock().write_all(s.as_bytes())?;
    Ok(())
}

/// `println!` that returns the write error instead of panicking: `outln!("{x}")?`.
macro_rules! outln {
    () => {
        $crate::cli::exit::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::cli::exit::line(format_args!($($arg)*))
    };
}
pub(crate) use outln;

/// Whether `e` (or an error it wraps) is stdout closed by its reader.
fn stdout_closed(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| matches!(c.downcast_ref::<StdoutError>(), Some(StdoutError::Closed)))
}

/// The exit code of a command's result, its error printed to stderr.
pub fn code(result: anyhow::Result<Outcome>) -> ExitCode {
    match result {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Problems) => ExitCode::from(1),
        Err(e) if stdout_closed(&e) => ExitCode::SUCCESS,
        Err(e) => match e.downcast_ref::<Failure>() {
            Some(f) => {
                eprintln!("{}: {f}", f.prefix);
                ExitCode::from(f.exit.code())
            }
            None => {
                eprintln!("roverlog: error: {e:#}");
                ExitCode::from(Exit::Usage.code())
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_stdout_is_found_under_context() {
        let e = anyhow::Error::from(StdoutError::from(io::Error::from(
            io::ErrorKind::BrokenPipe,
        )))
        .context("printing the report");
        assert!(stdout_closed(&e));
        let full = anyhow::Error::from(StdoutError::from(io::Error::from(
            io::ErrorKind::StorageFull,
        )));
        assert!(!stdout_closed(&full));
        let marked = Err::<(), _>(io::Error::from(io::ErrorKind::NotFound))
            .fail(Exit::Unavailable, "roverlog ctl")
            .unwrap_err();
        assert_eq!(
            marked.downcast_ref::<Failure>().map(|f| f.exit),
            Some(Exit::Unavailable)
        );
    }
}
