//! The `roverlog` binary: argument parsing and exit codes only; the work is in the library.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
