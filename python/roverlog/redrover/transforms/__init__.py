"""Transforms of samples, as upstream `roverd.transforms`: `ouster` and `ros` (import them
explicitly, `from roverlog.redrover.transforms import ouster`). `ros.rover_to_rosbag` runs the
`roverlog rosbag` command."""
