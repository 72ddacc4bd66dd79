//! The `roverlog` binary: argument parsing, human output and exit codes; the work is in the
//! workspace's library crates (`roverlog-core`, `-client`, `-export`, `-daemon`, `-bench`).
//! `plot` (a trace's timeline as PNG/SVG) is the one piece of work that lives here: nothing
//! else uses it.

mod cli;
mod plot;

fn main() -> std::process::ExitCode {
    cli::main()
}
