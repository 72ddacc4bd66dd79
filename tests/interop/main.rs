//! Our files and readers against the upstream tools themselves: numpy and `lzma`, gulpio2,
//! zarr-python (the Python peers in `.venv`, `tests/py/`), OpenCV and ffmpeg for `mjpg`
//! video, and the dashboard in headless Chromium. A missing peer fails the test naming it.

// The shared test helpers: the roverlog-testkit crate (crates/testkit).
mod support {
    pub use roverlog_testkit::{common, daemon};
}

mod daemon_mjpg;
mod dashboard_browser;
mod dashboard_honest;
mod driver_camera;
mod driver_gps;
mod driver_ouster;
mod driver_v4l2;
mod format;
mod gulp;
mod mjpg;
mod ros_cloud;
mod ros_import;
mod ros_wstring;
mod ros_zstd;
mod timestamps;
mod webdriver;
mod zarr;
