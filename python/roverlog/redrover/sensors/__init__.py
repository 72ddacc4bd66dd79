"""Sensors, as upstream `roverd.sensors`.

| name    | class          | sample            | `correction="auto"`               |
| ------- | -------------- | ----------------- | --------------------------------- |
| radar   | `XWRRadar`     | `types.XWRRadarIQ`| `smooth(interval=30.)`            |
| lidar   | `OSLidarDepth` | `types.OSDepth`   | `discretize(interval=10., eps=.05)`|
|         | `OSLidar`      | `types.OSData`    | `discretize(interval=10., eps=.05)`|
| camera  | `Camera`       | `types.CameraData`| `smooth(interval=30.)`            |
| _camera | `Semseg`       | `types.CameraSemseg` | `smooth(interval=30.)`         |
| imu     | `IMU`          | `types.IMUData`   | `smooth(interval=30.)`            |
| pose    | `Pose`         | `types.Pose`      | (none)                            |
| (other) | `DynamicSensor`| `{channel: array}`| (none)                            |

`from_config(path, type)` opens a sensor from a name above, a constructor, an instance, or
`None` (`DynamicSensor`).
"""
from ...errors import quoted, quoted_list
from .camera import Camera, Semseg
from .generic import DynamicSensor, Sensor
from .lidar import LidarMetadata, OSLidar, OSLidarDepth
from .pose import IMU, Pose
from .radar import RadarMetadata, XWRRadar

SENSOR_TYPES = {
    "radar": XWRRadar,
    "lidar": OSLidarDepth,
    "camera": Camera,
    "_camera": Semseg,
    "imu": IMU,
    "pose": Pose,
}


def from_config(path, type):
    """The sensor at `path`: `type` is a `Sensor` (returned as is), `None` (a
    `DynamicSensor`), a name in `SENSOR_TYPES`, or a constructor called with `path`."""
    if isinstance(type, Sensor):
        return type
    if type is None:
        return DynamicSensor(path)
    if isinstance(type, str):
        if type not in SENSOR_TYPES:
            raise ValueError(f"{path}: unknown sensor type {quoted(type)} (known: {quoted_list(SENSOR_TYPES)})")
        return SENSOR_TYPES[type](path)
    return type(path)


__all__ = [
    "DynamicSensor", "Sensor", "XWRRadar", "OSLidarDepth", "OSLidar", "IMU", "Pose", "Camera", "Semseg",
    "LidarMetadata", "RadarMetadata", "SENSOR_TYPES", "from_config",
]
