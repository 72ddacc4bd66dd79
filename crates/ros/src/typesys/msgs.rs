//! The one table of the standard messages we know, shared by the readers and the writers:
//! each type's fields as its `.msg` definition gives them (in the text the `rosbags`
//! package's type system generates: constants `NAME=value`, no default values), the root
//! types with the types they use, and the hashes of those we write.
//!
//! The readers use a ROS 2 definition ([`definition`]) only for a recording that stores none
//! (rosbag2's sqlite3 storage before Iron keeps only the type's name): one a recording
//! stores is always what is decoded. The writers (`roverlog rosbag`) put [`msg_type`]'s
//! definitions and hashes in every bag; `tests/cli/rosbag.rs` checks them against `rosbags`.
//! The layouts have not changed since Foxy (ROS 2) and Noetic (ROS 1).

use std::sync::OnceLock;

/// The field lines of each type, by its `pkg/Type` name.
const TYPES: [(&str, &str); 12] = [
    ("builtin_interfaces/Time", "int32 sec\nuint32 nanosec\n"),
    (
        "std_msgs/Header",
        "builtin_interfaces/Time stamp\nstring frame_id\n",
    ),
    (
        "geometry_msgs/Quaternion",
        "float64 x\nfloat64 y\nfloat64 z\nfloat64 w\n",
    ),
    ("geometry_msgs/Vector3", "float64 x\nfloat64 y\nfloat64 z\n"),
    (
        "sensor_msgs/Imu",
        "std_msgs/Header header\n\
         geometry_msgs/Quaternion orientation\n\
         float64[9] orientation_covariance\n\
         geometry_msgs/Vector3 angular_velocity\n\
         float64[9] angular_velocity_covariance\n\
         geometry_msgs/Vector3 linear_acceleration\n\
         float64[9] linear_acceleration_covariance\n",
    ),
    (
        "sensor_msgs/NavSatStatus",
        "int8 STATUS_UNKNOWN=-2\n\
         int8 STATUS_NO_FIX=-1\n\
         int8 STATUS_FIX=0\n\
         int8 STATUS_SBAS_FIX=1\n\
         int8 STATUS_GBAS_FIX=2\n\
         int8 status\n\
         uint16 SERVICE_GPS=1\n\
         uint16 SERVICE_GLONASS=2\n\
         uint16 SERVICE_COMPASS=4\n\
         uint16 SERVICE_GALILEO=8\n\
         uint16 service\n",
    ),
    (
        "sensor_msgs/NavSatFix",
        "std_msgs/Header header\n\
         sensor_msgs/NavSatStatus status\n\
         float64 latitude\n\
         float64 longitude\n\
         float64 altitude\n\
         float64[9] position_covariance\n\
         uint8 COVARIANCE_TYPE_UNKNOWN=0\n\
         uint8 COVARIANCE_TYPE_APPROXIMATED=1\n\
         uint8 COVARIANCE_TYPE_DIAGONAL_KNOWN=2\n\
         uint8 COVARIANCE_TYPE_KNOWN=3\n\
         uint8 position_covariance_type\n",
    ),
    (
        "sensor_msgs/Image",
        "std_msgs/Header header\n\
         uint32 height\n\
         uint32 width\n\
         string encoding\n\
         uint8 is_bigendian\n\
         uint32 step\n\
         uint8[] data\n",
    ),
    (
        "sensor_msgs/CompressedImage",
        "std_msgs/Header header\nstring format\nuint8[] data\n",
    ),
    (
        "sensor_msgs/PointField",
        "uint8 INT8=1\n\
         uint8 UINT8=2\n\
         uint8 INT16=3\n\
         uint8 UINT16=4\n\
         uint8 INT32=5\n\
         uint8 UINT32=6\n\
         uint8 FLOAT32=7\n\
         uint8 FLOAT64=8\n\
         string name\n\
         uint32 offset\n\
         uint8 datatype\n\
         uint32 count\n",
    ),
    (
        "sensor_msgs/PointCloud2",
        "std_msgs/Header header\n\
         uint32 height\n\
         uint32 width\n\
         sensor_msgs/PointField[] fields\n\
         bool is_bigendian\n\
         uint32 point_step\n\
         uint32 row_step\n\
         uint8[] data\n\
         bool is_dense\n",
    ),
    (
        "sensor_msgs/LaserScan",
        "std_msgs/Header header\n\
         float32 angle_min\n\
         float32 angle_max\n\
         float32 angle_increment\n\
         float32 time_increment\n\
         float32 scan_time\n\
         float32 range_min\n\
         float32 range_max\n\
         float32[] ranges\n\
         float32[] intensities\n",
    ),
];

/// The root types shipped, each with the types it uses.
const ROOTS: [(&str, &[&str]); 6] = [
    (
        "sensor_msgs/Imu",
        &[
            "std_msgs/Header",
            "builtin_interfaces/Time",
            "geometry_msgs/Quaternion",
            "geometry_msgs/Vector3",
        ],
    ),
    (
        "sensor_msgs/NavSatFix",
        &[
            "std_msgs/Header",
            "builtin_interfaces/Time",
            "sensor_msgs/NavSatStatus",
        ],
    ),
    (
        "sensor_msgs/Image",
        &["std_msgs/Header", "builtin_interfaces/Time"],
    ),
    (
        "sensor_msgs/CompressedImage",
        &["std_msgs/Header", "builtin_interfaces/Time"],
    ),
    (
        "sensor_msgs/PointCloud2",
        &[
            "std_msgs/Header",
            "builtin_interfaces/Time",
            "sensor_msgs/PointField",
        ],
    ),
    (
        "sensor_msgs/LaserScan",
        &["std_msgs/Header", "builtin_interfaces/Time"],
    ),
];

fn fields(name: &str) -> &'static str {
    TYPES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
        .expect("every dependency is in TYPES")
}

/// The names of the root types shipped (for messages that say which are known).
pub fn known() -> impl Iterator<Item = &'static str> {
    ROOTS.iter().map(|(n, _)| *n)
}

/// ROS 1's `std_msgs/Header`: a `seq`, and the builtin `time` for the stamp (ROS 2's, in
/// [`TYPES`], has neither).
const HEADER_ROS1: &str = "uint32 seq\ntime stamp\nstring frame_id\n";

/// Which ROS a definition is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ros {
    /// ROS 1 (`message_definition` of a bag's connection): `std_msgs/Header` with its `seq`,
    /// `time` builtin.
    One,
    /// ROS 2 (`ros2msg`, as rosbag2 stores it).
    Two,
}

/// The definition of `msgtype` (`pkg/Type` or `pkg/msg/Type`) as a recording of `ros` stores
/// one: the root's fields, then each type it uses after a line of `=` and `MSG: pkg/Type`.
/// `None` for a type not shipped.
pub fn definition_for(msgtype: &str, ros: Ros) -> Option<String> {
    let name = crate::typesys::schema::normalize_type(msgtype);
    let (root, deps) = ROOTS.iter().find(|(n, _)| *n == name)?;
    let mut text = fields(root).to_string();
    for &d in *deps {
        let body = match (ros, d) {
            (Ros::One, "builtin_interfaces/Time") => continue,
            (Ros::One, "std_msgs/Header") => HEADER_ROS1,
            _ => fields(d),
        };
        text.push_str(&"=".repeat(80));
        text.push_str(&format!("\nMSG: {d}\n"));
        text.push_str(body);
    }
    Some(text)
}

/// The ROS 2 definition of `msgtype` (see [`definition_for`]), for a recording that stores
/// none.
pub fn definition(msgtype: &str) -> Option<String> {
    definition_for(msgtype, Ros::Two)
}

/// A message type the writers write: its name in each ROS, definitions and hashes.
#[derive(Debug, Clone, Copy)]
pub struct MsgType {
    /// ROS 1 name (`sensor_msgs/Imu`).
    pub ros1_name: &'static str,
    /// ROS 2 name (`sensor_msgs/msg/Imu`).
    pub ros2_name: &'static str,
    pub ros1_md5: &'static str,
    pub ros1_definition: &'static str,
    pub ros2_rihs01: &'static str,
    pub ros2_definition: &'static str,
}

/// The hashes of the types we write: ROS 1 md5sum (the standard ones) and ROS 2 type hash
/// (RIHS01, rosbags' `hash_rihs01`), by `pkg/Type`.
const HASHES: [(&str, &str, &str); 2] = [
    (
        "sensor_msgs/Imu",
        "6a62c6daae103f4ff57a132d6f95cec2",
        "RIHS01_7d9a00ff131080897a5ec7e26e315954b8eae3353c3f995c55faf71574000b5b",
    ),
    (
        "sensor_msgs/PointCloud2",
        "1158d486dd51d683ce2f1be655c3c181",
        "RIHS01_9198cabf7da3796ae6fe19c4cb3bdd3525492988c70522628af5daa124bae2b5",
    ),
];

/// `pkg/Type` as a type we write, with its definitions and hashes; `None` for one we have no
/// hashes for.
pub fn msg_type(name: &str) -> Option<MsgType> {
    static TYPES_WRITTEN: OnceLock<Vec<MsgType>> = OnceLock::new();
    let all = TYPES_WRITTEN.get_or_init(|| {
        HASHES
            .iter()
            .map(|&(name, md5, rihs01)| {
                let (pkg, ty) = name.split_once('/').expect("pkg/Type");
                let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
                MsgType {
                    ros1_name: name,
                    ros2_name: leak(format!("{pkg}/msg/{ty}")),
                    ros1_md5: md5,
                    ros1_definition: leak(definition_for(name, Ros::One).expect("shipped")),
                    ros2_rihs01: rihs01,
                    ros2_definition: leak(definition_for(name, Ros::Two).expect("shipped")),
                }
            })
            .collect()
    });
    all.iter().find(|t| t.ros1_name == name).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::typesys::schema::{Dialect, Schema};

    #[test]
    fn every_shipped_definition_parses_with_its_dependencies() {
        for root in known() {
            let text = definition(root).unwrap();
            let s = Schema::parse(root, &text, Dialect::Ros2)
                .unwrap_or_else(|e| panic!("{root}: {e:?}\n{text}"));
            assert_eq!(s.types[0].name, root);
            // Every type the root uses was given (none left undefined).
            assert!(s.types.len() > 1, "{root}");
        }
        assert_eq!(
            definition("sensor_msgs/msg/Imu"),
            definition("sensor_msgs/Imu")
        );
        assert!(definition("geometry_msgs/msg/PoseStamped").is_none());
        assert!(definition("std_msgs/Header").is_none(), "only the roots");
    }
}
