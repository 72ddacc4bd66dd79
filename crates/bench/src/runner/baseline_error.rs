//! Why a baseline of the bench could not be measured: kept in its row and shown in the
//! report in place of the baseline's figure (the daemon's own figure still counts).

use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::Arc;

/// A baseline's failure. `Clone` (io and JSON errors behind `Arc`) because one failure, such
/// as a missing Python writer, stands in for every round and row that needed it.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum BaselineError {
    /// A baseline of [`crate::baselines`] failed (a sink short of records, an I/O error).
    #[error(transparent)]
    Baseline(Arc<crate::error::Error>),
    /// The directory a baseline writes into could not be made.
    #[error("{error}")]
    Dir {
        path: PathBuf,
        error: Arc<io::Error>,
    },
    /// A file of the repository the baseline needs is not there (`hint`: what to do).
    #[error("{file} not found{hint}")]
    NotFound {
        file: &'static str,
        hint: &'static str,
    },
    /// `scripts/py-env.sh` (which makes the Python venv) could not be started.
    #[error("running scripts/py-env.sh: {0}")]
    PyEnvStart(Arc<io::Error>),
    /// `scripts/py-env.sh` exited unsuccessfully (`stderr`: what it printed, trimmed).
    #[error("scripts/py-env.sh failed: {stderr}")]
    PyEnvFailed { status: ExitStatus, stderr: String },
    /// The Python interpreter could not start the writer.
    #[error("starting {}: {error}", python.display())]
    WriterStart {
        python: PathBuf,
        error: Arc<io::Error>,
    },
    /// Waiting for a Python writer process failed.
    #[error("{0}")]
    WriterWait(Arc<io::Error>),
    /// A Python writer exited unsuccessfully (`stderr`: what it printed, trimmed).
    #[error("python writer failed: {stderr}")]
    WriterFailed { status: ExitStatus, stderr: String },
    /// The writer's last line of output is not JSON.
    #[error("python writer output {line:?}: {error}")]
    WriterOutput {
        line: String,
        error: Arc<serde_json::Error>,
    },
    /// The writer's JSON lacks a number it must give (`key`).
    #[error("python writer: no {key:?}")]
    WriterField { key: &'static str },
}

impl From<crate::error::Error> for BaselineError {
    fn from(e: crate::error::Error) -> Self {
        BaselineError::Baseline(Arc::new(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report shows a failed baseline by its Display: the texts it had as strings.
    #[test]
    fn the_report_text_is_unchanged() {
        let missing = BaselineError::NotFound {
            file: "scripts/bench/python_writer.py",
            hint: " (run from the repository)",
        };
        assert_eq!(
            missing.to_string(),
            "scripts/bench/python_writer.py not found (run from the repository)"
        );
        let line = "not json".to_string();
        let error = Arc::new(serde_json::from_str::<serde_json::Value>(&line).unwrap_err());
        let e = BaselineError::WriterOutput {
            line,
            error: error.clone(),
        };
        assert_eq!(
            e.to_string(),
            format!("python writer output \"not json\": {error}")
        );
        let io = io::Error::new(io::ErrorKind::NotFound, "no such file");
        let e = BaselineError::WriterStart {
            python: "/venv/bin/python".into(),
            error: Arc::new(io),
        };
        assert_eq!(e.to_string(), "starting /venv/bin/python: no such file");
        let short = crate::error::Error::Short {
            what: "socket sink",
            got: 1,
            sent: 2,
        };
        let text = short.to_string();
        assert_eq!(BaselineError::from(short).clone().to_string(), text);
    }
}
