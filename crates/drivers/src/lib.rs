//! roverlog-drivers: the rig's sensor drivers, each a client of the public ingest protocol
//! (`docs/protocol.md`) through [`roverlog_client::ResilientDriver`] (reconnects with back-off
//! when the daemon restarts, retains frames until they are durable). `roverlog driver KIND`
//! (src/cli/driver.rs) is the command; docs/drivers.md the manual.
//!
//! - [`camera`]: an IP camera's MJPEG over HTTP, or a V4L2/UVC camera's MJPG buffers
//!   ([`camera::v4l2`]), JPEG bytes passed through unchanged.
//! - [`gps`]: gpsd's TPV reports (position, velocity, fix quality, GPS time).
//! - [`ouster`]: an Ouster lidar's UDP lidar and IMU packets, frames assembled by frame id.
//!
//! Dependencies: `roverlog-client`, `roverlog-core` and `libc` (socket options, the V4L2
//! ioctls); no tokio (blocking std; one thread per driver process, the Ouster driver's three).

pub mod camera;
pub mod gps;
pub mod ouster;
mod stop_reader;

/// The host clock as epoch seconds, the `ts` of a sample stamped at receipt.
pub(crate) fn epoch_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
