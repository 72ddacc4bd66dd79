//! The real `roverlog daemon` process driven like drivers, `roverlog ctl` and systemd drive
//! it: ingest, control, crashes, the disk guard, health, receive timestamps, snapshots, the
//! dashboard's HTTP API, the Foxglove feed, sd_notify and `examples/driver.py`. Needs root
//! (the disk tests mount a tmpfs) and `python3`.

// The shared test helpers: the roverlog-testkit crate (crates/testkit).
mod support {
    pub use roverlog_testkit::{common, daemon};
}

mod alarms_steady;
mod client_resilient;
mod clock;
mod compress_pool;
mod control;
mod control_roles;
mod crash;
mod disk;
mod disk_fault;
mod disk_slow;
mod example_driver;
mod final_ack;
mod foxglove;
mod foxglove_log;
mod health;
mod http;
mod ingest;
mod lzmaf_bytes;
mod lzmaf_fallback;
mod malformed;
mod netns_warning;
mod notify;
mod open_files;
mod receive_ts;
mod sidecar;
mod snapshot;
