//! `roverlog list <dir> [--follow-symlinks]`: every trace below `dir` (a directory holding
//! `config.yaml`, upstream's rule), one path relative to `dir` per line, sorted, for piping.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;

use super::exit::outln;
use super::Outcome;
use roverlog_core::format::trace::CONFIG_FILE;

#[derive(Args)]
pub struct ListArgs {
    /// The directory to search.
    pub dir: PathBuf,
    /// Descend into symbolic links to directories (each real directory once).
    #[arg(long)]
    pub follow_symlinks: bool,
}

/// Every directory at or below `root` that holds `config.yaml`, relative to `root`, sorted.
pub fn find(root: &Path, follow: bool) -> Result<Vec<PathBuf>> {
    if !root.is_dir() {
        bail!("{}: not a directory", root.display());
    }
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        // A link back up the tree must not loop.
        let real = dir
            .canonicalize()
            .with_context(|| format!("resolving {}", dir.display()))?;
        if !seen.insert(real) {
            continue;
        }
        if dir.join(CONFIG_FILE).is_file() {
            out.push(dir.strip_prefix(root).unwrap_or(&dir).to_path_buf());
        }
        let entries =
            std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
            let ft = entry.file_type()?;
            let is_dir = ft.is_dir() || (follow && ft.is_symlink() && entry.path().is_dir());
            if is_dir {
                stack.push(entry.path());
            }
        }
    }
    out.sort();
    Ok(out)
}

pub fn list(args: ListArgs) -> Result<Outcome> {
    if let Some(url) = super::inplace::url(&args.dir) {
        return super::inplace::list(url);
    }
    for t in find(&args.dir, args.follow_symlinks)? {
        let s = t.display().to_string();
        outln!("{}", if s.is_empty() { "." } else { &s })?;
    }
    Ok(Outcome::Ok)
}
