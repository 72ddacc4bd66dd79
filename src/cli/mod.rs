//! Command-line front end.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod ctl;
mod daemon;

/// roverlog: a sensor-data logger writing roverd traces.
#[derive(Parser)]
#[command(name = "roverlog", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Daemon(daemon::Args),
    Ctl(ctl::Args),
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Daemon(a) => daemon::main(a),
        Command::Ctl(a) => ctl::main(a),
    }
}
