//! The `roverlog` verbs end to end on real files: `info`, `cat`, `validate` on traces, gulp
//! and zarr; upstream's verbs (`list`, `extract`, `checksum`, `convert`); `compact` killed
//! mid-way; `plot`, `export`, `replay`/`import` and `bench --quick`; damaged traces read up
//! to the damage; an OS error printed once (on a tmpfs the test mounts: root). Some check their
//! output with the Python peers (`.venv`) and ffmpeg.

// The shared test helpers are the roverlog-testkit crate (crates/testkit); the helpers
// only this binary uses stay in tests/support/.
#[path = "../support"]
mod support {
    pub use roverlog_testkit::{common, daemon};
    pub mod garage;
}

mod bench_smoke;
mod closed_stdout;
mod compact;
mod crash;
mod damaged;
mod export_location;
mod export_mcap;
mod gulp;
mod help;
mod hour_trace;
mod import_threads;
mod import_trace;
mod offload;
mod offload_changes;
mod offload_daemon;
mod offload_limits;
mod os_errors;
mod plot;
mod replay;
mod rosbag;
mod s3export;
mod s3read;
mod trace;
mod verbs;
mod zarr;
