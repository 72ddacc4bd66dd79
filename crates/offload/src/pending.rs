//! What is left to send: the sealed traces below DATA that the journal does not call
//! verified, and their bytes. Read-only (the journal is read, never written), for a
//! daemon's `status` before and between runs of the job.

use std::path::PathBuf;

use crate::journal::{self, FileState, Journal};
use crate::select::{self, TraceState};
use crate::{plan, OffloadError, Options};

/// The sealed traces not verified at the destination yet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pending {
    pub traces: u64,
    /// Their bytes not yet acknowledged by the store (parts acknowledged before count as sent).
    pub bytes: u64,
}

/// What [`crate::run`] with `opts` would send now.
pub fn pending(opts: &Options) -> Result<Pending, OffloadError> {
    let path: PathBuf = opts
        .journal
        .clone()
        .unwrap_or_else(|| journal::default_path(&opts.data, &opts.dest));
    let journal = Journal::load(&path, &opts.dest)?;
    let mut out = Pending::default();
    for (dir, name) in plan::traces(&opts.data)? {
        if !matches!(select::trace_state(&dir), TraceState::Sealed) {
            continue;
        }
        match journal.traces.get(&name) {
            Some(t) if t.verified => continue,
            Some(t) if !t.files.is_empty() => {
                out.bytes += t
                    .files
                    .iter()
                    .map(|f| match &f.state {
                        FileState::Done { .. } => 0,
                        FileState::Uploading {
                            part_size, parts, ..
                        } => f
                            .size
                            .saturating_sub(*part_size * parts.iter().flatten().count() as u64),
                        FileState::Pending => f.size,
                    })
                    .sum::<u64>();
            }
            _ => out.bytes += plan::plan(&dir)?.bytes,
        }
        out.traces += 1;
    }
    Ok(out)
}
