//! `roverlog cat <dataset> <item> [--rows A:B] [--field NAME]`: raw bytes to stdout, for piping
//! into other tools and for checking against other readers.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::exit::StdoutError;
use super::Outcome;
use roverlog_core::format::{self, ChannelFormat, Sensor, TS_CHANNEL};
use roverlog_store::open_trace;

#[derive(Args)]
pub struct CatArgs {
    /// The dataset: a roverd trace, a gulp directory or a zarr group.
    pub dataset: PathBuf,
    /// What to write: `sensor/channel` for a roverd trace, a video id for a gulp directory, an
    /// array path for a zarr group.
    pub item: String,
    /// Which rows (samples, frames): `A:B`, `A:`, `:B`, `A:B:STEP` or a single index `A`
    /// (Python slice rules without negative numbers), among the samples `ts` counts: one
    /// that is damaged (cut, missing) fails, naming it. When absent: every intact sample (a
    /// damaged channel's count is what `ts` and its intact data agree on; a warning says so).
    #[arg(long)]
    pub rows: Option<String>,
    /// For zarr structured arrays: write only this field's values.
    #[arg(long)]
    pub field: Option<String>,
    /// For `mjpg` (video) channels: write the frames' JPEG bytes instead of decoded
    /// `height x width x 3` RGB samples.
    #[arg(long)]
    pub jpeg: bool,
    /// For a roverd `sensor/ts` channel: as recorded (`raw`), or through upstream's timestamp
    /// models `smooth` or `discretize` (computed over the whole channel, then `--rows`).
    #[arg(long, default_value = "raw")]
    pub timestamps: roverlog_core::timestamps::Model,
}

/// A row selection `start:stop:step` resolved against a length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rows {
    pub start: u64,
    pub stop: u64,
    pub step: u64,
}

impl Rows {
    /// Parses `spec` (see `--rows`) for a dataset of `len` rows; bounds past `len` are clamped
    /// like Python slices, a single index past the end is an error.
    pub fn parse(spec: Option<&str>, len: u64) -> Result<Rows> {
        let Some(spec) = spec else {
            return Ok(Rows {
                start: 0,
                stop: len,
                step: 1,
            });
        };
        if spec.is_empty() {
            bail!("--rows \"\": empty (expected A:B, A:B:STEP or A)");
        }
        let num = |s: &str, default: u64| -> Result<u64> {
            if s.is_empty() {
                Ok(default)
            } else {
                s.parse::<u64>().with_context(|| {
                    format!("--rows {spec:?}: {s:?} is not a non-negative integer")
                })
            }
        };
        let parts: Vec<&str> = spec.split(':').collect();
        let rows = match parts.as_slice() {
            [one] => {
                let i = num(one, 0)?;
                if i >= len {
                    bail!("--rows {spec}: index {i} is past the end ({len} rows)");
                }
                Rows {
                    start: i,
                    stop: i + 1,
                    step: 1,
                }
            }
            [a, b] => Rows {
                start: num(a, 0)?,
                stop: num(b, len)?,
                step: 1,
            },
            [a, b, s] => Rows {
                start: num(a, 0)?,
                stop: num(b, len)?,
                step: num(s, 1)?,
            },
            _ => bail!("--rows {spec:?}: expected A:B, A:B:STEP or A"),
        };
        if rows.step == 0 {
            bail!("--rows {spec:?}: step must not be 0");
        }
        Ok(Rows {
            start: rows.start.min(len),
            stop: rows.stop.min(len).max(rows.start.min(len)),
            step: rows.step,
        })
    }

    /// The selected indices.
    pub fn iter(self) -> impl Iterator<Item = u64> {
        (self.start..self.stop).step_by(self.step as usize)
    }
}

pub fn cat(args: CatArgs) -> Result<Outcome> {
    let stdout = io::stdout().lock();
    let mut out = BufWriter::with_capacity(1 << 20, stdout);
    let gulp = roverlog_core::gulp::is_gulp_dir(&args.dataset);
    let roverd_only = args.jpeg || args.timestamps != roverlog_core::timestamps::Model::Raw;
    if (gulp || is_zarr(&args.dataset)) && roverd_only {
        bail!("--jpeg and --timestamps apply to roverd traces only");
    }
    let done = if let Some(url) = super::inplace::url(&args.dataset) {
        cat_remote(&args, url, &mut out)
    } else if gulp {
        cat_gulp(&args, &mut out)
    } else if is_zarr(&args.dataset) {
        cat_zarr(&args, &mut out)
    } else {
        cat_roverd(&args, &mut out)
    };
    // Samples written before a failure (a damaged frame) still reach stdout.
    let flushed = out.flush().map_err(StdoutError::from);
    done.map_err(closed_stdout)?;
    flushed?;
    Ok(Outcome::Ok)
}

/// Whether `path` is a zarr v2 group or array.
pub fn is_zarr(path: &std::path::Path) -> bool {
    path.join(".zgroup").is_file() || path.join(".zarray").is_file()
}

/// Rows of a zarr array as zarr-python's `array[a:b].tobytes()` (or one field's values).
fn cat_zarr(args: &CatArgs, out: &mut impl Write) -> Result<()> {
    let path =
        if args.dataset.join(".zarray").is_file() && (args.item.is_empty() || args.item == ".") {
            args.dataset.clone()
        } else {
            args.dataset.join(&args.item)
        };
    if !path.join(".zarray").is_file() {
        bail!(
            "{}: no zarr array {:?} (no .zarray)",
            args.dataset.display(),
            args.item
        );
    }
    let len = roverlog_core::zarr::ZarrArray::open(&path)?.len();
    let rows = Rows::parse(args.rows.as_deref(), len)?;
    if rows.step != 1 {
        bail!("--rows: zarr arrays take A:B ranges without a step");
    }
    roverlog_core::zarr::cat(&path, rows.start..rows.stop, args.field.as_deref(), out)?;
    Ok(())
}

/// A gulp video's frames, JPEG bytes without padding, back to back.
fn cat_gulp(args: &CatArgs, out: &mut impl Write) -> Result<()> {
    if args.field.is_some() {
        bail!("--field applies to zarr arrays only");
    }
    let g = roverlog_core::gulp::GulpDirectory::open(&args.dataset)?;
    let sel = match &args.rows {
        None => roverlog_core::gulp::FrameSelection::All,
        Some(r) => r.parse().map_err(|e| anyhow::anyhow!("--rows: {e}"))?,
    };
    if g.video(&args.item).is_none() {
        bail!(
            "{}: no video with id {:?}",
            args.dataset.display(),
            args.item
        );
    }
    for frame in g.frames(&args.item, &sel)? {
        write_all(out, frame)?;
    }
    Ok(())
}

fn cat_roverd(args: &CatArgs, out: &mut impl Write) -> Result<()> {
    if args.field.is_some() {
        bail!("--field applies to zarr arrays only");
    }
    let Some((sensor, channel)) = args.item.split_once('/') else {
        bail!(
            "{:?}: for a roverd trace the item is sensor/channel (e.g. imu/acc)",
            args.item
        );
    };
    if !format::trace::is_trace(&args.dataset) {
        bail!(
            "{}: not a roverd trace, gulp directory or zarr group",
            args.dataset.display()
        );
    }
    let s = Sensor::open(&args.dataset.join(sensor))?;
    if args.timestamps != roverlog_core::timestamps::Model::Raw {
        if channel != format::TS_CHANNEL {
            bail!("--timestamps applies to the `ts` channel (e.g. {sensor}/ts)");
        }
        let ts = args.timestamps.apply(&s.timestamps()?)?;
        let rows = Rows::parse(args.rows.as_deref(), ts.len() as u64)?;
        for i in rows.iter() {
            write_all(out, &ts[i as usize].to_le_bytes())?;
        }
        return Ok(());
    }
    let mut r = s.channel(channel)?;
    let len = r.len()?;
    // Rows are chosen among the samples `ts` counts, so that asking for a damaged one says
    // what is wrong with it; all rows are the samples the channel holds intact.
    let counted = match channel {
        format::TS_CHANNEL => len,
        _ => s.len()?.max(len),
    };
    let rows = match &args.rows {
        Some(_) => Rows::parse(args.rows.as_deref(), counted)?,
        None => {
            if len < counted {
                warn_damaged(&mut r, len, counted);
            }
            Rows::parse(None, len)?
        }
    };
    if let format::ChannelReader::Mjpg(video) = &r {
        if !args.jpeg {
            for i in rows.iter() {
                write_all(out, &video.decode(i)?)?;
            }
            return Ok(());
        }
    } else if args.jpeg {
        bail!("--jpeg applies to mjpg (video) channels only");
    }
    if rows.step == 1 {
        r.visit(rows.start..rows.stop, |_, b| write_all(out, b))?;
    } else {
        for i in rows.iter() {
            write_all(out, &r.get(i)?)?;
        }
    }
    Ok(())
}

/// Says on stderr that the channel holds `len` of the `counted` samples, and why the first
/// one past them cannot be read (`roverlog cat` still writes the intact ones).
fn warn_damaged(r: &mut format::ChannelReader, len: u64, counted: u64) {
    let why = match r.get(len) {
        Err(e) => e.to_string(),
        Ok(_) => format!("sample {len} reads, but past the channel's count"),
    };
    eprintln!("warning: writing the {len} intact of the {counted} samples `ts` counts: {why}");
}

/// A write to stdout that failed inside a reader (a library error), as [`StdoutError`], so
/// that a reader going away (`| head`) ends the command quietly (`exit::code`).
fn closed_stdout(e: anyhow::Error) -> anyhow::Error {
    // `cat` writes to no pipe but stdout (the zarr reader names it `<output>`).
    let closed = e.chain().any(|c| {
        c.downcast_ref::<roverlog_core::Error>()
            .and_then(roverlog_core::Error::io_error)
            .or_else(|| c.downcast_ref::<io::Error>())
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    });
    if closed {
        StdoutError::Closed.into()
    } else {
        e
    }
}

/// What [`write_all`] names stdout in its errors.
const STDOUT: &str = "<stdout>";

/// Writes to stdout (inside the readers' callbacks: a library error, see [`closed_stdout`]).
fn write_all(out: &mut impl Write, bytes: &[u8]) -> roverlog_core::Result<()> {
    out.write_all(bytes)
        .map_err(|e| roverlog_core::Error::io(STDOUT, e))
}

/// `roverlog cat s3://.../trace sensor/channel`: as for a local trace.
fn cat_remote(args: &CatArgs, url: &str, out: &mut impl Write) -> Result<()> {
    if args.field.is_some() {
        bail!("--field applies to zarr arrays only");
    }
    let Some((sensor, channel)) = args.item.split_once('/') else {
        bail!(
            "{:?}: for a roverd trace the item is sensor/channel (e.g. imu/acc)",
            args.item
        );
    };
    let (trace, _) = open_trace(url)?;
    let s = trace.sensor(sensor)?;
    let write = |out: &mut dyn Write, b: &[u8]| out.write_all(b).context("writing to stdout");
    if args.timestamps != roverlog_core::timestamps::Model::Raw {
        if channel != TS_CHANNEL {
            bail!("--timestamps applies to the `ts` channel (e.g. {sensor}/ts)");
        }
        let ts = args.timestamps.apply(s.timestamps())?;
        for i in Rows::parse(args.rows.as_deref(), ts.len() as u64)?.iter() {
            write(out, &ts[i as usize].to_le_bytes())?;
        }
        return Ok(());
    }
    let c = s.channel(channel)?;
    let video = s.meta().get(channel).map(|m| &m.format) == Some(&ChannelFormat::Mjpg);
    if args.jpeg && !video {
        bail!("--jpeg applies to mjpg (video) channels only");
    }
    let counted = if channel == TS_CHANNEL {
        c.len()
    } else {
        s.len().max(c.len())
    };
    let rows = match &args.rows {
        Some(_) => Rows::parse(args.rows.as_deref(), counted)?,
        None => {
            if c.len() < counted {
                let why = c.get(c.len()).err().map(|e| e.to_string());
                eprintln!(
                    "warning: writing the {} intact of the {counted} samples `ts` counts: {}",
                    c.len(),
                    why.unwrap_or_default()
                );
            }
            Rows::parse(None, c.len())?
        }
    };
    for i in rows.iter() {
        let b = c.get(i)?;
        if video && !args.jpeg {
            write(out, &roverlog_core::format::avi::decode_rgb(&b)?)?;
        } else {
            write(out, &b)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Rows;

    #[test]
    fn rows_follow_python_slices() {
        let r = |s: &str| Rows::parse(Some(s), 10).map(|r| r.iter().collect::<Vec<_>>());
        assert_eq!(r("2:5").unwrap(), [2, 3, 4]);
        assert_eq!(r("8:").unwrap(), [8, 9]);
        assert_eq!(r(":2").unwrap(), [0, 1]);
        assert_eq!(r("1:4:2").unwrap(), [1, 3]);
        assert_eq!(r("3").unwrap(), [3]);
        assert_eq!(r("5:100").unwrap(), [5, 6, 7, 8, 9]);
        assert_eq!(r("7:3").unwrap(), Vec::<u64>::new());
        assert!(r("10").is_err());
        assert!(r("1:2:0").is_err());
        assert!(r("a:b").is_err());
        assert!(r("-1:").is_err());
        assert_eq!(Rows::parse(None, 3).unwrap().iter().count(), 3);
    }
}
