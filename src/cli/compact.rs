//! `roverlog compact TRACE`: recompresses, in place, the `lzmaf` frames the daemon stored
//! uncompressed when compression fell behind (config `lzmaf_store_above`; `lzmaf_stored` in
//! `status` and `events.jsonl`). Meant for when the vehicle is parked. Each sensor is
//! rewritten beside itself and swapped in atomically (`format::lzmaf::compact`), so a crash
//! at any point leaves a trace that reads whole, and the trace reads identically afterwards.
//! A trace still being recorded (its event log has a `start` without a `stop`) is refused.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::exit::{outln, StdoutError};
use super::Outcome;
use roverlog_core::format::events::{read_events, Event};
use roverlog_core::format::lzmaf::compact::{compact_sensor, stored_frames};
use roverlog_core::format::Trace;

#[derive(Args)]
pub struct CompactArgs {
    /// The trace whose stored-uncompressed `lzmaf` frames to recompress.
    pub trace: PathBuf,
    /// `.xz` preset (0-9) of the recompressed frames (upstream and the daemon use 0).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=9))]
    pub preset: u32,
    /// Frames compressed in parallel; 0: one per CPU.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

pub fn compact(args: CompactArgs) -> Result<Outcome> {
    let trace = Trace::open(&args.trace)
        .with_context(|| format!("opening the trace {}", args.trace.display()))?;
    refuse_if_recording(&args)?;
    let threads = roverlog_core::cpus::threads(args.threads);
    // First the count, so the progress line knows its end.
    let mut todo = Vec::new();
    let mut total = 0;
    for sensor in trace.all_sensor_names() {
        let frames = stored_frames(&args.trace.join(sensor))
            .with_context(|| format!("reading {}", args.trace.join(sensor).display()))?;
        let stored: u64 = frames.iter().map(|c| c.stored).sum();
        if stored > 0 {
            total += frames
                .iter()
                .filter(|c| c.stored > 0)
                .map(|c| c.frames)
                .sum::<u64>();
            todo.push(sensor.to_string());
        }
    }
    if todo.is_empty() {
        outln!(
            "{}: no stored-uncompressed lzmaf frames, nothing to compact",
            args.trace.display()
        )?;
        return Ok(Outcome::Ok);
    }
    let pb = super::progress::bar("compact", "frames");
    pb.set_length(total);
    let mut before = 0;
    for sensor in &todo {
        let done = compact_sensor(&args.trace, sensor, args.preset, threads, &mut |n| {
            pb.set_position(before + n)
        })
        .with_context(|| format!("compacting {}", args.trace.join(sensor).display()))?;
        pb.suspend(|| -> Result<(), StdoutError> {
            for c in done.iter().filter(|c| c.recompressed > 0) {
                before += c.frames;
                outln!(
                    "{}/{}: {} of {} frames recompressed, {:.1} MB -> {:.1} MB",
                    sensor,
                    c.channel,
                    c.recompressed,
                    c.frames,
                    c.bytes_before as f64 / 1e6,
                    c.bytes_after as f64 / 1e6
                )?;
            }
            Ok(())
        })?;
    }
    pb.finish_and_clear();
    Ok(Outcome::Ok)
}

/// A trace the daemon is still recording must not be rewritten under it.
fn refuse_if_recording(args: &CompactArgs) -> Result<()> {
    let events = read_events(&args.trace)
        .with_context(|| format!("reading the event log of {}", args.trace.display()))?;
    let open = events
        .iter()
        .rev()
        .find_map(|e| match e.event {
            Event::Start { .. } => Some(true),
            Event::Stop { .. } => Some(false),
            _ => None,
        })
        .unwrap_or(false);
    if open {
        bail!(
            "{} is still being recorded (its event log has a `start` without a `stop`): stop \
             the recording first (after a crash, the daemon's next start closes it)",
            args.trace.display()
        );
    }
    Ok(())
}
