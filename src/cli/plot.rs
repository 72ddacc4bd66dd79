//! `roverlog plot <trace|dir> [-o timeline.png|.svg]`: a trace's timeline as an image (see
//! `roverlog::plot`). On a directory of traces, `-o` names a directory that gets one image
//! per trace (`<trace path with / as _>.png`). An existing output file is refused.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::exit::outln;
use super::Outcome;
use roverlog_core::format::trace::is_trace;

#[derive(Args)]
pub struct PlotArgs {
    /// A trace, or a directory to search for traces.
    pub path: PathBuf,
    /// The image (`.png` or `.svg`; default `<trace name>.timeline.png` here), or for a
    /// directory of traces a directory for the images (default `.`).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
}

pub fn plot(args: PlotArgs) -> Result<Outcome> {
    if is_trace(&args.path) {
        let name = args
            .path
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_owned()));
        let out = match args.out {
            Some(o) => o,
            None => PathBuf::from(format!(
                "{}.timeline.png",
                name.unwrap_or_default().to_string_lossy()
            )),
        };
        if out.exists() {
            bail!(
                "{} already exists (refusing to overwrite it)",
                out.display()
            );
        }
        let (w, h) = crate::plot::plot_trace(&args.path, &out)
            .with_context(|| format!("plotting {}", args.path.display()))?;
        outln!("{}: {w}x{h}", out.display())?;
        return Ok(Outcome::Ok);
    }
    if !args.path.is_dir() {
        bail!("{}: not a trace or a directory", args.path.display());
    }
    let traces = super::list::find(&args.path, false)?;
    if traces.is_empty() {
        bail!("{}: no roverd trace found", args.path.display());
    }
    let dir = args.out.unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for rel in traces {
        let name = rel.to_string_lossy().replace('/', "_");
        let name = if name.is_empty() || name == "." {
            "trace".to_string()
        } else {
            name
        };
        let out = dir.join(format!("{name}.timeline.png"));
        if out.exists() {
            bail!(
                "{} already exists (refusing to overwrite it)",
                out.display()
            );
        }
        let (w, h) = crate::plot::plot_trace(&args.path.join(&rel), &out)
            .with_context(|| format!("plotting {}", args.path.join(&rel).display()))?;
        outln!("{}: {w}x{h}", out.display())?;
    }
    Ok(Outcome::Ok)
}
