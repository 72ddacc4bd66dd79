//! The ROS 2 definitions (`ros2msg` text) of the standard messages the default mapping
//! understands, for recordings that store none: rosbag2's sqlite3 storage before Iron keeps
//! only the type's name. Written from the ROS 2 interface definitions (`sensor_msgs`,
//! `std_msgs`, `geometry_msgs`, `builtin_interfaces`; their layout has not changed since
//! Foxy); constants are kept, comments are not. Used only when a recording lacks the
//! definition: one it stores is always what is decoded.

/// The field lines of each type, by its `pkg/Type` name.
const TYPES: [(&str, &str); 12] = [
    ("builtin_interfaces/Time", "int32 sec\nuint32 nanosec\n"),
    (
        "std_msgs/Header",
        "builtin_interfaces/Time stamp\nstring frame_id\n",
    ),
    (
        "geometry_msgs/Quaternion",
        "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n",
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
        "int8 STATUS_UNKNOWN = -2\n\
         int8 STATUS_NO_FIX = -1\n\
         int8 STATUS_FIX = 0\n\
         int8 STATUS_SBAS_FIX = 1\n\
         int8 STATUS_GBAS_FIX = 2\n\
         int8 status\n\
         uint16 SERVICE_GPS = 1\n\
         uint16 SERVICE_GLONASS = 2\n\
         uint16 SERVICE_COMPASS = 4\n\
         uint16 SERVICE_GALILEO = 8\n\
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
         uint8 COVARIANCE_TYPE_UNKNOWN = 0\n\
         uint8 COVARIANCE_TYPE_APPROXIMATED = 1\n\
         uint8 COVARIANCE_TYPE_DIAGONAL_KNOWN = 2\n\
         uint8 COVARIANCE_TYPE_KNOWN = 3\n\
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
        "uint8 INT8 = 1\n\
         uint8 UINT8 = 2\n\
         uint8 INT16 = 3\n\
         uint8 UINT16 = 4\n\
         uint8 INT32 = 5\n\
         uint8 UINT32 = 6\n\
         uint8 FLOAT32 = 7\n\
         uint8 FLOAT64 = 8\n\
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

/// The `ros2msg` definition of `msgtype` (`pkg/Type` or `pkg/msg/Type`) as rosbag2 stores
/// one: the root's fields, then each type it uses after a line of `=` and `MSG: pkg/Type`.
/// `None` for a type not shipped.
pub fn definition(msgtype: &str) -> Option<String> {
    let name = crate::typesys::schema::normalize_type(msgtype);
    let (root, deps) = ROOTS.iter().find(|(n, _)| *n == name)?;
    let mut text = fields(root).to_string();
    for d in *deps {
        text.push_str(&"=".repeat(80));
        text.push_str(&format!("\nMSG: {d}\n"));
        text.push_str(fields(d));
    }
    Some(text)
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
