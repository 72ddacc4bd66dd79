//! The two ROS messages `roverlog rosbag` writes, `sensor_msgs/Imu` and
//! `sensor_msgs/PointCloud2`, serialised for ROS 1 (bags) and as CDR (ROS 2); their
//! definitions and hashes are the message table's ([`crate::typesys::msgs`]).
//! `tests/cli/rosbag.rs` checks the serialised bytes against `rosbags`' serialisers.

pub use crate::typesys::msgs::MsgType;

/// `sensor_msgs/Imu`.
pub fn imu_type() -> MsgType {
    crate::typesys::msgs::msg_type("sensor_msgs/Imu").expect("in the table")
}

/// `sensor_msgs/PointCloud2`.
pub fn pointcloud2_type() -> MsgType {
    crate::typesys::msgs::msg_type("sensor_msgs/PointCloud2").expect("in the table")
}

/// A header stamp as upstream computes it from epoch seconds `t`: `sec = int(t)`,
/// `ns = int(t * 1e9)` (both truncated), `nanosec = ns mod 1e9`; `ns` is also the bag time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub sec: i64,
    pub nanosec: u32,
    pub ns: i64,
}

impl Stamp {
    pub fn from_secs(t: f64) -> Stamp {
        let ns = (t * 1e9) as i64;
        Stamp {
            sec: t as i64,
            nanosec: ns.rem_euclid(1_000_000_000) as u32,
            ns,
        }
    }
}

/// `sensor_msgs/Imu` with zero (unknown) covariances, frame [`IMU_FRAME`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Imu {
    pub stamp: Stamp,
    /// Quaternion `x, y, z, w`.
    pub orientation: [f64; 4],
    pub angular_velocity: [f64; 3],
    pub linear_acceleration: [f64; 3],
}

pub const IMU_FRAME: &str = "imu_link";
pub const POINTS_FRAME: &str = "os_sensor";
/// `sensor_msgs/PointField.FLOAT32`.
const FLOAT32: u8 = 7;

pub use crate::error::StampRange;

fn ros1_sec(sec: i64) -> Result<u32, StampRange> {
    u32::try_from(sec).map_err(|_| StampRange {
        sec,
        field: "uint32 secs (ROS 1)",
    })
}

fn ros2_sec(sec: i64) -> Result<i32, StampRange> {
    i32::try_from(sec).map_err(|_| StampRange {
        sec,
        field: "int32 sec (ROS 2)",
    })
}

fn f64s(out: &mut Vec<u8>, v: &[f64]) {
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

// ----- ROS 1 ----------------------------------------------------------------------------

fn ros1_header(out: &mut Vec<u8>, stamp: Stamp, frame: &str) -> Result<(), StampRange> {
    out.extend_from_slice(&0u32.to_le_bytes()); // seq
    out.extend_from_slice(&ros1_sec(stamp.sec)?.to_le_bytes());
    out.extend_from_slice(&stamp.nanosec.to_le_bytes());
    ros1_string(out, frame);
    Ok(())
}

fn ros1_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

impl Imu {
    /// Appends the ROS 1 serialisation.
    pub fn ros1(&self, out: &mut Vec<u8>) -> Result<(), StampRange> {
        ros1_header(out, self.stamp, IMU_FRAME)?;
        self.body(out);
        Ok(())
    }

    /// Orientation, angular velocity and acceleration with their covariances: the same bytes
    /// in both encodings once aligned (every field is a float64).
    fn body(&self, out: &mut Vec<u8>) {
        f64s(out, &self.orientation);
        f64s(out, &[0.0; 9]);
        f64s(out, &self.angular_velocity);
        f64s(out, &[0.0; 9]);
        f64s(out, &self.linear_acceleration);
        f64s(out, &[0.0; 9]);
    }

    /// Appends the CDR (little-endian) serialisation, encapsulation header included.
    pub fn cdr(&self, out: &mut Vec<u8>) -> Result<(), StampRange> {
        let mut c = Cdr::start(out);
        c.header(self.stamp, IMU_FRAME)?;
        c.align(8);
        self.body(c.out);
        Ok(())
    }
}

/// A `sensor_msgs/PointCloud2` of `x, y, z` float32 points (frame [`POINTS_FRAME`]) written in
/// place, so points go straight into it: [`CloudWriter::ros1`] or [`CloudWriter::cdr`]
/// (little-endian, encapsulation header included) appends everything before the points (their
/// counts left 0), the caller appends each point's 12 bytes (x, y, z float32 little-endian),
/// and [`CloudWriter::finish`] fills in the counts and appends `is_dense`. `width` is the
/// number of points and `row_step` the whole row (`width * 12`), as the message definition
/// says (upstream writes 1 and 12).
#[derive(Debug)]
pub struct CloudWriter {
    /// Where `width`, `row_step` and the data's length are (u32 little-endian each).
    width_at: usize,
    row_step_at: usize,
    len_at: usize,
}

impl CloudWriter {
    pub fn ros1(out: &mut Vec<u8>, stamp: Stamp) -> Result<CloudWriter, StampRange> {
        ros1_header(out, stamp, POINTS_FRAME)?;
        out.extend_from_slice(&1u32.to_le_bytes()); // height
        let width_at = out.len();
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&3u32.to_le_bytes());
        for (i, name) in ["x", "y", "z"].iter().enumerate() {
            ros1_string(out, name);
            out.extend_from_slice(&(4 * i as u32).to_le_bytes());
            out.push(FLOAT32);
            out.extend_from_slice(&1u32.to_le_bytes());
        }
        out.push(0); // is_bigendian
        out.extend_from_slice(&12u32.to_le_bytes());
        let row_step_at = out.len();
        out.extend_from_slice(&0u32.to_le_bytes());
        let len_at = out.len();
        out.extend_from_slice(&0u32.to_le_bytes());
        Ok(CloudWriter {
            width_at,
            row_step_at,
            len_at,
        })
    }

    pub fn cdr(out: &mut Vec<u8>, stamp: Stamp) -> Result<CloudWriter, StampRange> {
        let mut c = Cdr::start(out);
        c.header(stamp, POINTS_FRAME)?;
        c.u32(1);
        let width_at = c.at_u32();
        c.u32(0);
        c.u32(3);
        for (i, name) in ["x", "y", "z"].iter().enumerate() {
            c.string(name);
            c.u32(4 * i as u32);
            c.out.push(FLOAT32);
            c.u32(1);
        }
        c.out.push(0);
        c.u32(12);
        let row_step_at = c.at_u32();
        c.u32(0);
        let len_at = c.at_u32();
        c.u32(0);
        Ok(CloudWriter {
            width_at,
            row_step_at,
            len_at,
        })
    }

    /// Fills in the counts for the points appended since (`out` must hold nothing else after
    /// them) and appends `is_dense`; returns the number of points.
    pub fn finish(self, out: &mut Vec<u8>) -> usize {
        let data = out.len() - (self.len_at + 4);
        let points = data / 12;
        let mut put = |at: usize, v: usize| {
            out[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes());
        };
        put(self.width_at, points);
        put(self.row_step_at, data);
        put(self.len_at, data);
        out.push(1); // is_dense
        points
    }
}

// ----- CDR ------------------------------------------------------------------------------

/// A little-endian CDR stream: alignment counts from the end of the 4-byte encapsulation
/// header.
struct Cdr<'a> {
    out: &'a mut Vec<u8>,
    origin: usize,
}

impl<'a> Cdr<'a> {
    fn start(out: &'a mut Vec<u8>) -> Cdr<'a> {
        out.extend_from_slice(&[0, 1, 0, 0]); // CDR_LE, no options
        let origin = out.len();
        Cdr { out, origin }
    }

    fn align(&mut self, n: usize) {
        let pad = (n - (self.out.len() - self.origin) % n) % n;
        self.out.resize(self.out.len() + pad, 0);
    }

    fn u32(&mut self, v: u32) {
        self.align(4);
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    /// Where the next `u32` will be written (after its alignment).
    fn at_u32(&mut self) -> usize {
        self.align(4);
        self.out.len()
    }

    /// Length with the terminating NUL, the bytes, the NUL.
    fn string(&mut self, s: &str) {
        self.u32(s.len() as u32 + 1);
        self.out.extend_from_slice(s.as_bytes());
        self.out.push(0);
    }

    fn header(&mut self, stamp: Stamp, frame: &str) -> Result<(), StampRange> {
        self.align(4);
        self.out
            .extend_from_slice(&ros2_sec(stamp.sec)?.to_le_bytes());
        self.u32(stamp.nanosec);
        self.string(frame);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_truncate_like_numpy() {
        assert_eq!(
            Stamp::from_secs(1.5),
            Stamp {
                sec: 1,
                nanosec: 500_000_000,
                ns: 1_500_000_000
            }
        );
        let s = Stamp::from_secs(1_700_000_000.123_456_7);
        assert_eq!(s.sec, 1_700_000_000);
        assert_eq!(s.ns / 1_000_000_000, s.sec);
        assert_eq!((s.ns % 1_000_000_000) as u32, s.nanosec);
    }

    #[test]
    fn cdr_aligns_from_after_the_encapsulation_header() {
        let imu = Imu {
            stamp: Stamp::from_secs(1.0),
            orientation: [0.0, 0.0, 0.0, 1.0],
            angular_velocity: [0.0; 3],
            linear_acceleration: [0.0; 3],
        };
        let mut b = Vec::new();
        imu.cdr(&mut b).unwrap();
        // 4 (encapsulation) + 8 (stamp) + 4 + 9 ("imu_link\0") = 25, padded to 24 + 4 = 28
        // after the header, then 4 + 9 + 4 + 9 + 3 + 9 float64s.
        assert_eq!(b.len(), 4 + 24 + 8 * (4 + 9 + 3 + 9 + 3 + 9));
        let mut r1 = Vec::new();
        imu.ros1(&mut r1).unwrap();
        assert_eq!(r1.len(), 4 + 8 + 4 + 8 + 8 * 37);
        assert!(Imu {
            stamp: Stamp::from_secs(-1.0),
            ..imu
        }
        .ros1(&mut r1)
        .is_err());
    }
}
