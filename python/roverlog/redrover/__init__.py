"""Upstream red-rover `roverd`'s reading API over roverlog's native readers: red-rover code
runs after changing its import.

    import roverd                                  ->  from roverlog import redrover as roverd
    from roverd import Dataset, Trace, sensors     ->  from roverlog.redrover import Dataset, Trace, sensors
    from roverd.sensors import XWRRadar            ->  from roverlog.redrover.sensors import XWRRadar

    from abstract_dataloader import generic
    dataset = Dataset.from_config(
        Dataset.find_traces("/data/grt"),
        sync=generic.Nearest("lidar", tol=0.1),
        sensors={"radar": sensors.XWRRadar, "lidar": sensors.OSLidar})
    dataset[42]        # {'radar': XWRRadarIQ(...), 'lidar': OSData(...)}

- `Trace`, `Dataset`, `split`: abstract-dataloader's `abstract.Trace`/`abstract.Dataset`
  with upstream's `Trace.from_config`, `Trace.find_sensors`, `trace.indices`, `filesize`,
  `datarate`, `Dataset.find_traces`, `Dataset.from_config`.
- `sensors`: `XWRRadar`, `OSLidarDepth`, `OSLidar`, `Camera`, `Semseg`, `IMU`, `Pose`,
  `DynamicSensor`, `from_config`; their samples are the dataclasses of `types`, each array
  with a leading `(1, window, ...)` (a `DynamicSensor` gives `{channel: (window, ...)}`,
  `ts` included), and their timestamps corrected as upstream's (`correction="auto"`).
- `timestamps`: `identity`, `smooth`, `discretize`, equal to upstream's to the last bit.
- `channels`: upstream's channel classes, modules (`abstract`, `utils`, `raw`, `lzma`,
  `video`, `blob`) and `from_config`, reading and writing (`write`, `consume`);
  `DynamicSensor(create=True).create(...)` writes `meta.json`.

Needs abstract-dataloader (`pip install 'roverlog[redrover]'`), as upstream roverd does.
- `transforms.ouster` (import it explicitly): `Destagger` and `PointCloud` from `lidar.json`.

- `transforms.ros` (import it explicitly): `rover_to_rosbag(out, imu, lidar, min_range)`,
  which runs the `roverlog rosbag` command (`ROVERLOG_BIN` or `roverlog` on `PATH`).
- `remote`: `s3://bucket/prefix/trace` paths (and `Dataset.find_traces("s3://...")`) read
  in place on object storage, by range requests (one `GET` a frame once its channel is
  open); writing there raises `io.UnsupportedOperation` (not in upstream).

Not here: upstream's runtime type checks (jaxtyping/beartype). Differences from upstream, all where upstream fails or
disagrees with itself: errors are `roverlog.Error`s naming the file; a video read starting
at frame `i > 0` gives frame `i` (upstream seeks OpenCV to `i - 1` and gives that frame);
`Camera` resizes `jpg` channels too; a video channel whose `args` hold `fps` (as roverlog's
`convert` and ROS `import` write) opens (upstream raises `TypeError`); `len(Pose)` works; the
timestamp corrections raise a `ValueError` for fewer than two timestamps or an interval holding no sample (upstream
divides by zero or loops forever).

`roverlog.Trace` (module `roverlog.trace`) is roverlog's own, lower-level reader; this
module is for code written against upstream roverd.
"""
try:
    import abstract_dataloader  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "roverlog.redrover needs abstract-dataloader, as upstream roverd does: "
        "pip install 'roverlog[redrover]' (or pip install abstract-dataloader)"
    ) from e

from . import channels, sensors, timestamps, types
from .trace import Dataset, Trace, split

__all__ = ["channels", "timestamps", "sensors", "types", "Dataset", "Trace", "split"]
