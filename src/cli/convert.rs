//! `roverlog convert <src> <dst> --channel sensor/channel=format ...`: a copy of a trace with
//! some channels stored in another format: `mjpg` <-> `jpg` (JPEG frames copied, never
//! re-encoded; no ffmpeg), and among the fixed-size formats `raw`, `lzmaf`, `lzma`. Upstream's
//! `blobify` (video -> `jpg` blobs), generalised. Blob files are numbered from `000000`;
//! `config.yaml`, the event log and sidecar files are copied. An existing `dst` is refused;
//! a failure leaves nothing.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::exit::outln;
use super::Outcome;
use roverlog_core::format::copy::{copy_trace, TracePlan};
use roverlog_core::format::ChannelFormat;

#[derive(Args)]
pub struct ConvertArgs {
    /// The trace to convert.
    pub src: PathBuf,
    /// The trace to create (must not exist).
    pub dst: PathBuf,
    /// `sensor/channel=format` (formats: raw, lzmaf, lzma, jpg, mjpg); repeatable.
    #[arg(long = "channel", required = true)]
    pub channels: Vec<String>,
}

fn parse(spec: &str) -> Result<(String, String, ChannelFormat)> {
    let Some((path, format)) = spec.split_once('=') else {
        bail!("--channel {spec:?}: expected sensor/channel=format");
    };
    let Some((sensor, channel)) = path.split_once('/') else {
        bail!("--channel {spec:?}: expected sensor/channel=format");
    };
    let f = ChannelFormat::parse(format);
    let known = matches!(
        f,
        ChannelFormat::Raw | ChannelFormat::Lzmaf | ChannelFormat::Lzma | ChannelFormat::Mjpg
    ) || f == ChannelFormat::Blob("jpg".into());
    if !known {
        bail!("--channel {spec:?}: unknown target format {format:?} (raw, lzmaf, lzma, jpg, mjpg)");
    }
    Ok((sensor.to_string(), channel.to_string(), f))
}

pub fn convert(args: ConvertArgs) -> Result<Outcome> {
    let mut formats: BTreeMap<String, BTreeMap<String, ChannelFormat>> = BTreeMap::new();
    for spec in &args.channels {
        let (s, c, f) = parse(spec)?;
        if formats.entry(s).or_default().insert(c, f).is_some() {
            bail!("--channel {spec:?}: that channel is named twice");
        }
    }
    let plan = TracePlan {
        ranges: BTreeMap::new(),
        formats,
        copy_events: true,
    };
    let pb = super::progress::bar("convert", "samples");
    let t0 = std::time::Instant::now();
    let done = copy_trace(&args.src, &args.dst, &plan, |d, t| {
        pb.set_length(t);
        pb.set_position(d);
    })
    .with_context(|| {
        format!(
            "converting {} into {}",
            args.src.display(),
            args.dst.display()
        )
    })?;
    pb.finish_and_clear();
    let samples = done.iter().map(|(_, n)| n).sum();
    eprintln!(
        "{}",
        super::progress::rate(
            "convert",
            samples,
            "samples",
            t0.elapsed().as_secs_f64(),
            None
        )
    );
    for (name, n) in done {
        outln!("{}: {n} samples", args.dst.join(name).display())?;
    }
    Ok(Outcome::Ok)
}
