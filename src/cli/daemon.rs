//! `roverlog daemon`: loads the config, binds the sockets, installs signal handling and runs
//! the library's daemon. SIGTERM/SIGINT drain and stop; SIGHUP rotates.

use std::path::PathBuf;

use anyhow::{Context, Result};

use roverlog_daemon::{Config, Daemon, RawConfig, Request};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use super::exit::{outln, Exit, Fail, Outcome};

/// Run the logging daemon.
///
/// With no arguments it records into ./data with sockets in ./run (see config/README.md).
///
/// The exit codes are in `after_help` (the subcommand's own doc line replaces this text in
/// `--help`).
#[derive(clap::Args)]
#[command(
    after_help = "Exit codes: 0 stopped cleanly (SIGTERM/SIGINT: queues drained, files \
fsynced); 1 runtime failure (shutdown deadline exceeded, I/O error at start, a write or fsync of the \
data failed during the run: the stop drained, but it was not clean); 2 bad usage or invalid \
config; 3 the sockets or data_root are in use by another running daemon."
)]
pub struct Args {
    /// JSON config file (every key optional; see config/roverlog.example.json).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Override `data_root`.
    #[arg(long)]
    data_root: Option<PathBuf>,
    /// Override the ingest socket path.
    #[arg(long)]
    ingest_socket: Option<PathBuf>,
    /// Override the control socket path.
    #[arg(long)]
    control_socket: Option<PathBuf>,
    /// Print the effective config as JSON and exit.
    #[arg(long)]
    print_config: bool,
}

pub fn main(args: Args) -> Result<Outcome> {
    const WHO: &str = "roverlog daemon";
    // Before any thread starts: glibc's thresholds (RSS vs the encoder's per-frame tables).
    roverlog_daemon::malloc_policy::apply();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        // Colour codes only on a terminal: journald and log files get plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    let mut raw = match &args.config {
        Some(p) => RawConfig::load(p).fail(Exit::Usage, WHO)?,
        None => RawConfig::default(),
    };
    // The flags override the file's keys before anything is checked, so the checks see
    // (and `--print-config` prints) what the daemon will run with.
    if let Some(d) = args.data_root {
        raw.data_root = d;
    }
    if let Some(s) = args.ingest_socket {
        raw.ingest_socket = s;
    }
    if let Some(s) = args.control_socket {
        raw.control_socket = s;
    }
    let cfg = Config::try_from(raw).fail(Exit::Usage, WHO)?;
    if args.print_config {
        outln!(
            "{}",
            serde_json::to_string_pretty(&cfg).expect("config as JSON")
        )?;
        return Ok(Outcome::Ok);
    }
    let mut daemon = match Daemon::bind(cfg) {
        Ok(d) => d,
        Err(e) => {
            // A config that cannot work (a missing socket_group, a socket path naming
            // something else, an address nobody may listen on) is the operator's to fix: 2,
            // not a runtime failure.
            use roverlog_daemon::error::Error;
            let exit = match e {
                Error::InUse { .. } => Exit::Unavailable,
                Error::Config(_) | Error::Socket(_) | Error::Listen { .. } => Exit::Usage,
                _ => Exit::Runtime,
            };
            return Err(e).fail(exit, WHO);
        }
    };
    daemon.set_watchdog(roverlog_daemon::notify::watchdog_interval());
    daemon.set_notifier(|state| {
        if let Err(e) = roverlog_daemon::notify::notify(state) {
            tracing::warn!("sd_notify {state:?}: {e}");
        }
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("roverlog-io")
        .build()
        .context("cannot start the runtime")
        .fail(Exit::Runtime, WHO)?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let requests = daemon.requests();
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])
        .context("cannot install signal handlers")
        .fail(Exit::Runtime, WHO)?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut stop_tx = Some(stop_tx);
            for sig in signals.forever() {
                match sig {
                    SIGHUP => {
                        let _ = requests.send(Request::Rotate);
                    }
                    _ => {
                        if let Some(tx) = stop_tx.take() {
                            tracing::info!("signal {sig}: stopping");
                            let _ = tx.send(());
                        }
                    }
                }
            }
        })
        .expect("spawning the signal thread");
    let shutdown = async move {
        let _ = stop_rx.await;
    };
    rt.block_on(daemon.run(shutdown)).fail(Exit::Runtime, WHO)?;
    Ok(Outcome::Ok)
}
