//! Command-line front end: argument parsing and human output. Every verb returns
//! `anyhow::Result<Outcome>`; [`exit::code`] is the one place a result becomes an exit code
//! (the codes are listed there).
//!
//! Exit codes (dataset subcommands: info, validate, recover, cat, list, extract, checksum,
//! convert, compact, import, export, rosbag, offload):
//! - 0: success (for `validate`: everything checked is sound);
//! - 1: `validate` found problems or channels it could not check, `recover` left something
//!   for a person, `checksum --compare` found a mismatch or a missing file (each printed),
//!   `offload` left a trace cut by a crash (or whose event log does not parse) or could not
//!   reach `--keep-free`;
//! - 2: the command could not do its work (bad arguments, unreadable input, I/O error);
//!   the error is printed to stderr.
//!
//! `daemon` and `ctl` add 3 (sockets in use by another daemon / daemon unreachable); see
//! their `--help`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
pub mod cat;
mod checksum;
mod compact;
mod convert;
mod ctl;
mod daemon;
mod driver;
mod exit;
mod export;
mod extract;
mod inplace;
mod list;
mod offload;
mod plot;
mod progress;
mod replay;
mod rosbag;
mod trace_cmds;

/// roverlog: a sensor-data logger writing roverd traces, and a reader for roverd, GulpIO2 and
/// L5Kit zarr datasets.
#[derive(Parser)]
#[command(name = "roverlog", version, about, long_about = None)]
#[command(
    after_help = "Exit codes: 0 success; 1 validate found problems, checksum --compare found \
differences, offload left a trace cut by a crash; 2 error (printed). \
daemon, ctl and driver document their own (see `roverlog daemon --help`, `roverlog ctl --help`, `roverlog driver --help`)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the logging daemon (the main job): data in ./data, sockets in ./run by default.
    Daemon(daemon::Args),
    /// Send a command to a running daemon (status, start, stop, rotate, mark).
    Ctl(ctl::Args),
    /// Describe a dataset: per sensor samples, duration, rate, size; per channel size,
    /// compression ratio and data rate; channels found damaged on opening (cut, an index past
    /// the data, missing sample files) are marked, `validate` says more.
    Info(trace_cmds::InfoArgs),
    /// Check traces for torn tails, channels that disagree, bad indexes. Directories are
    /// searched recursively for traces.
    Validate(trace_cmds::ValidateArgs),
    /// Cut every channel of every sensor of a trace to the count all its channels hold
    /// completely, and print exactly what was cut. Idempotent.
    Recover(trace_cmds::RecoverArgs),
    /// Write raw bytes of one item to stdout: a roverd channel's decoded samples, a gulp
    /// video's JPEG frames, or a zarr array's rows (as zarr-python's `tobytes()`).
    Cat(cat::CatArgs),
    /// Push a dataset into a running daemon, one driver per sensor, paced by its timestamps.
    Replay(replay::ReplayArgs),
    /// Write a dataset (gulp directory, L5Kit zarr, roverd trace, ROS bag/MCAP/rosbag2) straight
    /// to a new roverd trace.
    Import(replay::ImportArgs),
    /// Print every trace below a directory (holding `config.yaml`), one relative path per line.
    List(list::ListArgs),
    /// Copy a time window of a trace into a new trace (every channel format, sidecars too).
    Extract(extract::ExtractArgs),
    /// Write the `file,md5` CSV of a trace (as upstream), or compare two CSVs/directories.
    Checksum(checksum::ChecksumArgs),
    /// Send every sealed trace below DATA to an S3 bucket or a directory: journalled
    /// (resumable after kill -9 or a power cut), every object verified, optionally deleting
    /// what is verified (--delete, --keep-free) under a bandwidth cap (--rate).
    Offload(offload::OffloadArgs),
    /// Copy a trace with some channels in another format (mjpg <-> jpg, raw <-> lzmaf, ...).
    Convert(convert::ConvertArgs),
    /// Recompress in place the `lzmaf` frames the daemon stored uncompressed when compression
    /// fell behind (each sensor swapped in atomically; the trace reads the same).
    Compact(compact::CompactArgs),
    /// Write a trace as an MCAP file for Foxglove (images as CompressedImage/RawImage).
    Export(export::ExportArgs),
    /// Write a trace's lidar (point clouds) and IMU to a ROS 1 bag, or a ROS 2 (MCAP) bag,
    /// for SLAM tools (upstream's `roverd rosbag`).
    Rosbag(rosbag::RosbagArgs),
    /// Draw a trace's timeline: per sensor rate, gaps, drops, alarms, marks (PNG or SVG).
    Plot(plot::PlotArgs),
    /// Benchmark the daemon's ingest path against same-run baselines (dd, a socket sink, the
    /// upstream-style Python writer); checks that every sample sent is on disk.
    Bench(bench::Args),
    /// A sensor driver feeding the daemon's ingest socket (docs/drivers.md): `driver camera
    /// http://HOST:PORT/PATH`, an IP camera's MJPEG passed through unchanged.
    Driver(driver::Args),
    /// One stream of `bench --only rig` (started by it, one process per sensor).
    #[command(hide = true, name = "bench-rig-driver")]
    BenchRigDriver(bench::DriverArgs),
}

pub use exit::Outcome;

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // SIGPIPE stays ignored (Rust's default): a closed socket is an error a command reports,
    // and a reader of stdout that goes away (`| head`) is an EPIPE error that `exit::code`
    // ends quietly with 0, as other Unix tools do.
    // The verbs that decode or encode many frames on every core say how many they kept busy.
    let busy = match &cli.command {
        Command::Validate(_) => Some("validate"),
        Command::Replay(_) => Some("replay"),
        Command::Import(_) => Some("import"),
        Command::Convert(_) => Some("convert"),
        Command::Compact(_) => Some("compact"),
        Command::Export(_) => Some("export"),
        Command::Rosbag(_) => Some("rosbag"),
        _ => None,
    }
    .map(|verb| (verb, roverlog_core::cpus::CoresBusy::start()));
    let result = match cli.command {
        Command::Bench(a) => bench::main(a),
        Command::Daemon(a) => daemon::main(a),
        Command::Ctl(a) => ctl::main(a),
        Command::Driver(a) => driver::main(a),
        Command::BenchRigDriver(a) => bench::driver_main(a),
        Command::Info(a) => trace_cmds::info(a),
        Command::Validate(a) => trace_cmds::validate(a),
        Command::Recover(a) => trace_cmds::recover(a),
        Command::Cat(a) => cat::cat(a),
        Command::Replay(a) => replay::replay(a),
        Command::Import(a) => replay::import(a),
        Command::List(a) => list::list(a),
        Command::Offload(a) => offload::offload(a),
        Command::Extract(a) => extract::extract(a),
        Command::Checksum(a) => checksum::checksum(a),
        Command::Convert(a) => convert::convert(a),
        Command::Compact(a) => compact::compact(a),
        Command::Export(a) => export::export(a),
        Command::Rosbag(a) => rosbag::rosbag(a),
        Command::Plot(a) => plot::plot(a),
    };
    if let (Some((verb, busy)), Ok(_)) = (busy, &result) {
        eprintln!("{verb}: {}", busy.finish());
    }
    exit::code(result)
}
