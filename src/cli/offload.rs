//! `roverlog offload DATA DEST`: the thin front of `roverlog-offload` (options, progress on
//! stderr, the summary, exit codes). The job and what it guarantees are documented there
//! and in docs/offload.md.

use std::cell::Cell;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use clap::Args;
use indicatif::ProgressBar;

use super::exit::outln;
use super::Outcome;

#[derive(Args)]
#[command(after_help = "\
DEST is s3://bucket[/prefix] (endpoint, region and credentials from AWS_ENDPOINT_URL, \
AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY; plain http only for a loopback \
endpoint or with AWS_ALLOW_HTTP=true) or a directory (a NAS mount). Each trace goes to \
DEST/<trace>/ as it is on disk, its `file,md5` CSV to DEST/<trace>.md5.csv.

Exit codes: 0 every sealed trace is at DEST and verified (traces being recorded are skipped \
and listed); 1 something is left for a person: a trace cut by a crash (not sent: start the \
daemon on it to recover it), a trace whose event log has a line that does not parse (not \
sent; the line is named), or --keep-free could not be reached with verified traces; \
2 error (printed: a store that refuses or does not answer, an object that does not match \
its file, a file changed during the upload: the next run plans its trace again); the \
journal keeps what was done, and the same command continues. See docs/offload.md.")]
pub struct OffloadArgs {
    /// The data directory (a daemon's data_root, or any directory of traces, or one trace).
    pub data: PathBuf,
    /// s3://bucket[/prefix] or a directory.
    pub dest: String,
    /// The journal (default: DATA/_roverlog/offload/HASH.json, HASH a digest of DEST).
    #[arg(long)]
    pub journal: Option<PathBuf>,
    /// Delete each local trace once every one of its objects is verified.
    #[arg(long)]
    pub delete: bool,
    /// Delete the oldest verified traces while DATA's filesystem has less free space than
    /// this (e.g. 20%); never an unverified one.
    #[arg(long, value_name = "PERCENT")]
    pub keep_free: Option<String>,
    /// Bandwidth cap, e.g. 20MB/s, 500KiB/s: no 10 s window goes above it.
    #[arg(long)]
    pub rate: Option<String>,
    /// Files larger than this go in parts of this size (at least 5MiB, S3's minimum).
    #[arg(long, default_value = "8MiB")]
    pub part_size: String,
    /// Requests (parts of large files, or whole small files) in flight at a time; a kill
    /// re-sends at most this many parts. Memory: about this many parts plus one.
    #[arg(long, default_value_t = roverlog_offload::JOBS as u16, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,
}

/// `20MB/s`, `500KiB/s`, `1G`, `1000`: bytes (per second).
pub fn parse_bytes(text: &str) -> Result<u64> {
    Ok(roverlog_offload::rate::parse_bytes(text)?)
}

fn parse_percent(text: &str) -> Result<f64> {
    let n: f64 = text
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| anyhow::anyhow!("--keep-free {text:?}: not a percentage (e.g. 20%)"))?;
    if !(0.0..100.0).contains(&n) {
        bail!("--keep-free {text:?}: must be from 0% to under 100%");
    }
    Ok(n / 100.0)
}

/// Progress on stderr: a bar on a terminal, else a line every 10 s (bytes, rate, ETA).
struct Report {
    bar: ProgressBar,
    terminal: bool,
    total: Cell<u64>,
    done: Cell<u64>,
    started: Instant,
    last_line: Cell<Instant>,
}

impl roverlog_offload::Progress for Report {
    fn trace(&self, name: &str, bytes: u64, done: u64) {
        self.total.set(self.total.get() + bytes);
        self.done.set(self.done.get() + done);
        self.bar.set_length(self.total.get());
        self.bar.set_position(self.done.get());
        self.bar.set_message(name.to_string());
        if !self.terminal {
            eprintln!(
                "offload: {name}: {:.1} MB{}",
                bytes as f64 / 1e6,
                if done > 0 {
                    format!(", {:.1} MB sent before", done as f64 / 1e6)
                } else {
                    String::new()
                }
            );
        }
    }

    fn sent(&self, n: u64) {
        self.done.set(self.done.get() + n);
        self.bar.inc(n);
        if !self.terminal && self.last_line.get().elapsed() >= Duration::from_secs(10) {
            self.last_line.set(Instant::now());
            let secs = self.started.elapsed().as_secs_f64().max(1e-3);
            let rate = self.bar.position() as f64 / secs;
            let left = self.total.get().saturating_sub(self.done.get());
            eprintln!(
                "offload: {:.1}/{:.1} MB, {:.1} MB/s, eta {:.0} s",
                self.done.get() as f64 / 1e6,
                self.total.get() as f64 / 1e6,
                rate / 1e6,
                left as f64 / rate.max(1.0)
            );
        }
    }

    fn note(&self, line: &str) {
        self.bar.suspend(|| eprintln!("offload: {line}"));
    }
}

pub fn offload(args: OffloadArgs) -> Result<Outcome> {
    let mut opts = roverlog_offload::Options::new(&args.data, &args.dest);
    opts.journal = args.journal;
    opts.delete = args.delete;
    opts.keep_free = args.keep_free.as_deref().map(parse_percent).transpose()?;
    opts.rate = args.rate.as_deref().map(parse_bytes).transpose()?;
    opts.part_size = parse_bytes(&args.part_size)?;
    opts.jobs = usize::from(args.jobs);
    if opts.part_size < 5 << 20 {
        bail!(
            "--part-size {}: S3 needs parts of at least 5MiB",
            args.part_size
        );
    }
    let terminal = std::io::stderr().is_terminal();
    let bar = if terminal {
        let b = ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "offload {msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
            )
            .expect("template")
            .progress_chars("=> "),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    let report = Report {
        bar,
        terminal,
        total: Cell::new(0),
        done: Cell::new(0),
        started: Instant::now(),
        last_line: Cell::new(Instant::now()),
    };
    let s = roverlog_offload::run(&opts, &report)?;
    report.bar.finish_and_clear();
    let secs = s.elapsed.as_secs_f64();
    outln!(
        "offload: {} traces sent and verified ({} already), {} files, {:.1} MB sent in {:.1} s \
         ({:.1} MB/s), {:.1} MB re-sent; {} deleted; {} skipped",
        s.traces.len(),
        s.already,
        s.files,
        s.bytes_sent as f64 / 1e6,
        secs,
        s.bytes_sent as f64 / secs.max(1e-9) / 1e6,
        s.bytes_resent as f64 / 1e6,
        s.deleted.len(),
        s.skipped.len()
    )?;
    if !s.replaced.is_empty() {
        outln!(
            "offload: {} files changed after they were verified and were sent again (the \
             destination held an older version of each): {}",
            s.replaced.len(),
            s.replaced.join(", ")
        )?;
    }
    Ok(if s.left_something() {
        Outcome::Problems
    } else {
        Outcome::Ok
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_and_rates_parse() {
        assert_eq!(super::parse_bytes("20MB/s").unwrap(), 20_000_000);
        assert_eq!(super::parse_bytes("8MiB").unwrap(), 8 << 20);
        assert_eq!(super::parse_bytes("1.5GB").unwrap(), 1_500_000_000);
        assert!(super::parse_bytes("20 parsecs").is_err());
        assert!(super::parse_bytes("0MB/s").is_err());
        assert_eq!(super::parse_percent("20%").unwrap(), 0.2);
        assert!(super::parse_percent("120%").is_err());
    }
}
