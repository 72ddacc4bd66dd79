//! The sensor's IMU packets (profile `LEGACY`, 48 bytes, one measurement each, about 100 a
//! second): system, accelerometer and gyroscope timestamps (u64 ns), then acceleration x y z
//! (f32, g) and angular velocity x y z (f32, deg/s), little-endian. Stored as a sensor of its
//! own: `acc` (m/s^2) and `avel` (rad/s), `f4 [3]`, upstream's IMU channel names, converted as
//! ouster-sdk's `ImuPacket.accel()`/`gyro()` convert them (standard gravity 9.80665, pi/180),
//! and `sensor_ts` (`u8`, the accelerometer's timestamp, ns on the sensor's clock).

use roverlog_core::format::{ChannelFormat, ChannelMeta, DType, SensorMeta};

/// Standard gravity, m/s^2 per g.
pub const G: f32 = 9.80665;

/// Bytes of a legacy IMU packet.
pub const IMU_PACKET_BYTES: usize = 48;

/// One IMU measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Imu {
    pub sys_ts: u64,
    pub accel_ts: u64,
    pub gyro_ts: u64,
    /// g.
    pub acc: [f32; 3],
    /// deg/s.
    pub avel: [f32; 3],
}

/// A datagram on the IMU port that is not a legacy IMU packet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{got} bytes, not the {IMU_PACKET_BYTES} of a LEGACY IMU packet")]
pub struct ImuPacketSize {
    pub got: usize,
}

fn f32s(b: &[u8], at: usize) -> [f32; 3] {
    std::array::from_fn(|i| f32::from_le_bytes(b[at + 4 * i..at + 4 * i + 4].try_into().unwrap()))
}

impl Imu {
    pub fn parse(b: &[u8]) -> Result<Imu, ImuPacketSize> {
        if b.len() != IMU_PACKET_BYTES {
            return Err(ImuPacketSize { got: b.len() });
        }
        let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        Ok(Imu {
            sys_ts: u64_at(0),
            accel_ts: u64_at(8),
            gyro_ts: u64_at(16),
            acc: f32s(b, 24),
            avel: f32s(b, 36),
        })
    }

    /// Acceleration in m/s^2.
    pub fn acc_si(&self) -> [f32; 3] {
        self.acc.map(|v| v * G)
    }

    /// Angular velocity in rad/s.
    pub fn avel_si(&self) -> [f32; 3] {
        self.avel.map(f32::to_radians)
    }

    /// The packet the sensor sends for this measurement.
    pub fn encode(&self) -> [u8; IMU_PACKET_BYTES] {
        let mut p = [0u8; IMU_PACKET_BYTES];
        p[0..8].copy_from_slice(&self.sys_ts.to_le_bytes());
        p[8..16].copy_from_slice(&self.accel_ts.to_le_bytes());
        p[16..24].copy_from_slice(&self.gyro_ts.to_le_bytes());
        for i in 0..3 {
            p[24 + 4 * i..28 + 4 * i].copy_from_slice(&self.acc[i].to_le_bytes());
            p[36 + 4 * i..40 + 4 * i].copy_from_slice(&self.avel[i].to_le_bytes());
        }
        p
    }
}

/// The IMU sensor's channels (see the module doc).
pub fn sensor_meta() -> SensorMeta {
    let vec3 = |desc| ChannelMeta::new(ChannelFormat::Raw, DType::F4, vec![3], desc);
    SensorMeta {
        channels: vec![
            ("ts".into(), ChannelMeta::timestamps()),
            (
                "acc".into(),
                vec3("linear acceleration x y z, m/s^2 (Ouster IMU)"),
            ),
            (
                "avel".into(),
                vec3("angular velocity x y z, rad/s (Ouster IMU)"),
            ),
            (
                "sensor_ts".into(),
                ChannelMeta::new(
                    ChannelFormat::Raw,
                    DType::U8,
                    vec![],
                    "accelerometer timestamp, ns (sensor clock)",
                ),
            ),
        ],
    }
}
