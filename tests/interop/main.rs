//! Our files and readers against the upstream tools themselves: numpy and `lzma`, gulpio2,
//! zarr-python (the Python peers in `.venv`, `tests/py/`), OpenCV and ffmpeg for `mjpg`
//! video, and the dashboard in headless Chromium. A missing peer fails the test naming it.

// The helpers of tests/support/ this binary uses, compiled once for all its modules.
// `common` and `daemon`: shared by several test binaries, each using its own part (the rest is not dead).
#[path = "../support"]
mod support {
    #[allow(dead_code)]
    pub mod common;
    #[allow(dead_code)]
    pub mod daemon;
}

mod daemon_mjpg;
mod dashboard_browser;
mod dashboard_honest;
mod driver_camera;
mod driver_gps;
mod driver_ouster;
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
