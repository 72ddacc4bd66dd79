"""Transforms of samples, as upstream `roverd.transforms`: `ouster` (import it explicitly,
`from roverlog.redrover.transforms import ouster`). Upstream's `ros` (ROS bag export) is
not here."""
