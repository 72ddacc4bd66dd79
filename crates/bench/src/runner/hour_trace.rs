//! `roverlog bench --only hour-trace`: writes the red-rover rig's one-hour trace
//! ([`crate::hour::write_rig_trace`], the trace `--only full-size` reads) and keeps
//! it, for benches outside this binary (`python/benches/dataloader.py` samples it from
//! Python, ours against upstream `roverd`). Prints the trace's path on stdout.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::error::Result;

use crate::hour::{self, RigShape};

use super::{make_work_dir, Options};

/// Writes the rig trace as `work/hour-rig` (two minutes of the rig with `quick`, the full
/// hour otherwise) and returns its path.
pub(super) fn run(work: &Path, quick: bool) -> Result<PathBuf> {
    let shape = if quick {
        RigShape::seconds(120)
    } else {
        RigShape::HOUR
    };
    let dir = work.join("hour-rig");
    let total = shape.total();
    let t = Instant::now();
    let mut last = Instant::now();
    hour::write_rig_trace(&dir, &shape, &mut |done| {
        if last.elapsed() > Duration::from_secs(5) {
            eprintln!("bench hour-trace: {done} of {total} samples");
            last = Instant::now();
        }
    })?;
    eprintln!(
        "bench hour-trace: {total} samples written in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    Ok(dir)
}

/// `--only hour-trace`: writes the trace in a fresh working directory and prints its path.
pub(super) fn alone(args: &Options) -> Result<bool> {
    let work = make_work_dir(args.dir.as_deref())?;
    println!("{}", run(&work, args.quick)?.display());
    Ok(true)
}
