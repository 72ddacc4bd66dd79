//! `--only offload`: [`crate::offload`]'s upload against `rclone copy`, in a fresh work
//! directory (it starts its own Garage; no daemon).

use super::child::make_work_dir;
use super::error::Result;
use super::Options;

pub(super) fn alone(args: &Options) -> Result<bool> {
    let work = make_work_dir(args.dir.as_deref())?;
    Ok(crate::offload::main(
        &work,
        args.quick,
        args.json,
        args.rounds,
    )?)
}
