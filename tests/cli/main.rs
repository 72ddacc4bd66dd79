//! The `roverlog` verbs end to end on real files: `info`, `cat`, `validate` on traces, gulp
//! and zarr; upstream's verbs (`list`, `extract`, `checksum`, `convert`); `compact` killed
//! mid-way; `plot`, `export`, `replay`/`import` and `bench --quick`; damaged traces read up
//! to the damage; an OS error printed once (on a tmpfs the test mounts: root). Some check their
//! output with the Python peers (`.venv`) and ffmpeg.

// The helpers of tests/support/ this binary uses, compiled once for all its modules.
// `common` and `daemon`: shared by several test binaries, each using its own part (the rest is not dead).
#[path = "../support"]
mod support {
    #[allow(dead_code)]
    pub mod common;
    #[allow(dead_code)]
    pub mod daemon;
    pub mod garage;
}

mod bench_smoke;
mod compact;
mod damaged;
mod export_location;
mod export_mcap;
mod gulp;
mod help;
mod hour_trace;
mod import_trace;
mod offload;
mod offload_daemon;
mod offload_limits;
mod os_errors;
mod plot;
mod replay;
mod rosbag;
mod trace;
mod verbs;
mod zarr;
