//! Ingest benchmark runner (`harness = false`): baselines now, the daemon once it exists.
//!
//! ```text
//! cargo bench --bench ingest -- baselines --dir /mnt/data/tmp [--mib 1024] [--records 1000000]
//! cargo bench --bench ingest -- drive --socket ./run/ingest.sock [--sensors 4] \
//!     [--workload imu|batched|large|blob] [--samples 100000] [--bytes 4194304] [--per-write 256]
//! ```
//!
//! `baselines` writes into `--dir` (use the directory the daemon will write to: the figures
//! are about that disk). `drive` needs a running `roverlog daemon`. Arguments are parsed by
//! hand to keep this file free of anything but the library.

use std::path::PathBuf;
use std::process::ExitCode;

use roverlog_bench::baselines::{self, Input, Leave};
use roverlog_bench::load;

fn main() -> ExitCode {
    // `cargo bench` appends `--bench`; ignore it.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ingest bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let Some(cmd) = args.first() else {
        return Err("usage: ingest (baselines --dir DIR | drive --socket PATH) [options]".into());
    };
    let opt = |name: &str| -> Option<&str> {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map(String::as_str)
    };
    let num = |name: &str, default: u64| -> Result<u64, String> {
        opt(name).map_or(Ok(default), |v| {
            v.parse()
                .map_err(|_| format!("{name}: not a number: {v:?}"))
        })
    };
    match cmd.as_str() {
        "baselines" => {
            let dir = PathBuf::from(opt("--dir").ok_or("baselines needs --dir DIR")?);
            let mib = num("--mib", 1024)?;
            let records = num("--records", 1_000_000)?;
            println!("target directory: {}", dir.display());
            for r in [
                baselines::dd_fdatasync(&dir, mib, Input::Zeros, Leave::Removed),
                baselines::dd_direct(&dir, mib, Input::Zeros, Leave::Removed),
                baselines::socket_sink(&dir, records, 44, Leave::Removed),
                baselines::socket_sink(&dir, (mib / 4).max(1), 4 << 20, Leave::Removed),
            ] {
                match r {
                    Ok(t) => println!("{t}"),
                    Err(e) => println!("(failed: {e})"),
                }
            }
            Ok(())
        }
        "drive" => {
            let socket = PathBuf::from(opt("--socket").unwrap_or("./run/ingest.sock"));
            let workload = match opt("--workload").unwrap_or("imu") {
                "imu" => load::Workload::Imu,
                "batched" => load::Workload::ImuBatched {
                    per_write: num("--per-write", 256)? as usize,
                },
                "large" => load::Workload::Large {
                    bytes: num("--bytes", 4 << 20)? as usize,
                },
                "blob" => load::Workload::Blob {
                    min_bytes: num("--min-bytes", 1 << 20)? as usize,
                    max_bytes: num("--bytes", 6 << 20)? as usize,
                },
                other => return Err(format!("unknown workload {other:?}")),
            };
            let mut spec = load::LoadSpec::new(
                num("--sensors", 4)? as usize,
                workload,
                num("--samples", 100_000)?,
            );
            spec.sync_every = num("--sync-every", 0)?;
            let report = load::drive(&socket, &spec).map_err(|e| e.to_string())?;
            println!("{}", report.total);
            for s in &report.sensors {
                println!(
                    "  {:<10} {:>10} samples  durable {:>10}  {:.3} s",
                    s.sensor,
                    s.samples,
                    s.durable,
                    s.elapsed.as_secs_f64()
                );
            }
            Ok(())
        }
        other => Err(format!("unknown command {other:?} (baselines | drive)")),
    }
}
