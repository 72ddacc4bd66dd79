"""l5kit's `l5kit.data.filter` and `l5kit.data.labels` (l5kit 1.5.0), re-exported by
`roverlog.l5kit`: the same names, signatures and results, without importing l5kit (whose
`l5kit.data` package pulls in its map API, protobuf and pymap3d).

Every function takes numpy arrays, as l5kit's do, and also the zarr arrays of a
`ChunkedDataset` (ours or zarr-python's), read in bulk: `filter_agents_by_frames` reads the
agents of all the frames in one read where they lie close together (l5kit reads them frame by
frame), and `filter_agents_by_track_id` reads the `track_id` column and then only the rows
that match."""
import numpy as np

PERCEPTION_LABELS = [
    "PERCEPTION_LABEL_NOT_SET",
    "PERCEPTION_LABEL_UNKNOWN",
    "PERCEPTION_LABEL_DONTCARE",
    "PERCEPTION_LABEL_CAR",
    "PERCEPTION_LABEL_VAN",
    "PERCEPTION_LABEL_TRAM",
    "PERCEPTION_LABEL_BUS",
    "PERCEPTION_LABEL_TRUCK",
    "PERCEPTION_LABEL_EMERGENCY_VEHICLE",
    "PERCEPTION_LABEL_OTHER_VEHICLE",
    "PERCEPTION_LABEL_BICYCLE",
    "PERCEPTION_LABEL_MOTORCYCLE",
    "PERCEPTION_LABEL_CYCLIST",
    "PERCEPTION_LABEL_MOTORCYCLIST",
    "PERCEPTION_LABEL_PEDESTRIAN",
    "PERCEPTION_LABEL_ANIMAL",
    "AVRESEARCH_LABEL_DONTCARE",
]
PERCEPTION_LABEL_TO_INDEX = {label: k for k, label in enumerate(PERCEPTION_LABELS)}

TL_FACE_LABELS = ["ACTIVE", "INACTIVE", "UNKNOWN"]
TL_FACE_LABEL_TO_INDEX = {label: k for k, label in enumerate(TL_FACE_LABELS)}

# The labels l5kit counts as agents: everything but the unset/unknown/don't-care ones.
PERCEPTION_LABELS_TO_KEEP = PERCEPTION_LABELS[3:16]
PERCEPTION_LABEL_INDICES_TO_KEEP = [PERCEPTION_LABEL_TO_INDEX[label] for label in PERCEPTION_LABELS_TO_KEEP]

# filter_agents_by_frames reads one block spanning all the frames' agents when that block
# holds at most this many times the rows the frames use (plus a little); else frame by frame.
_BLOCK_SLACK = 2
_BLOCK_EXTRA_ROWS = 4096


def _rows(a):
    """`a` as numpy: a zarr array (ours or zarr-python's) in one bulk read."""
    if isinstance(a, (np.ndarray, np.void)):
        return a
    return a[...]


def filter_agents_by_labels(agents, threshold=0.5):
    """The agents whose probabilities of the labels in `PERCEPTION_LABELS_TO_KEEP` sum to more
    than `threshold`."""
    agents = _rows(agents)
    keep = np.sum(agents["label_probabilities"][:, PERCEPTION_LABEL_INDICES_TO_KEEP], axis=1) > threshold
    return agents[keep]


def filter_agents_by_distance(agents, centroid, max_distance):
    """The agents closer than `max_distance` to `centroid`, nearest first."""
    agents = _rows(agents)
    dist = np.linalg.norm(agents["centroid"] - centroid, axis=-1)
    near = dist < max_distance
    agents, dist = agents[near], dist[near]
    return agents[np.argsort(dist)]


def filter_agents_by_track_id(agents, track_id):
    """The agents of track `track_id`, in row order. A zarr array is read column first, then
    only the rows that match (l5kit's own cannot take a zarr array)."""
    if isinstance(agents, (np.ndarray, np.void)):
        return agents[agents["track_id"] == track_id]
    rows = np.flatnonzero(agents["track_id"] == track_id)
    return agents.get_orthogonal_selection((rows,))


def _by_frames(frames, rows, field):
    """`rows[interval]` for the `field` interval of every frame: one read of the span the
    intervals cover when `rows` is a zarr array and the span is not much more than they use."""
    starts = frames[field][:, 0]
    ends = frames[field][:, 1]
    if isinstance(rows, np.ndarray) or len(frames) == 0 or (starts < 0).any() or (ends < 0).any():
        return [rows[slice(a, b)] for a, b in zip(starts, ends)]
    used = int(np.maximum(ends - starts, 0).sum())
    lo = int(starts.min())
    hi = max(int(ends.max()), lo)
    if hi - lo > _BLOCK_SLACK * used + _BLOCK_EXTRA_ROWS:
        return [rows[slice(a, b)] for a, b in zip(starts, ends)]
    block = rows[lo:hi]
    # An interval ending before it starts is empty, as the slice is in `rows`.
    return [block[a - lo:max(a, b) - lo] for a, b in zip(starts.tolist(), ends.tolist())]


def filter_agents_by_frames(frames, agents):
    """The agents of every frame (one array each, by `agent_index_interval`); one frame (a
    0-d row) gives a list of one."""
    frames = _rows(frames)
    if frames.shape == ():
        frames = frames[None]
    return _by_frames(frames, agents, "agent_index_interval")


def filter_tl_faces_by_frames(frames, tl_faces):
    """The traffic light faces of every frame (one array each, by
    `traffic_light_faces_index_interval`)."""
    frames = _rows(frames)
    if frames.shape == ():
        # l5kit iterates the row itself (its fields), and fails; so does this.
        return [tl_faces[get_tl_faces_slice_from_frames(f)] for f in frames]
    return _by_frames(frames, tl_faces, "traffic_light_faces_index_interval")


def filter_tl_faces_by_status(tl_faces, status):
    """The faces whose `status` ("ACTIVE", "INACTIVE", "UNKNOWN") is set."""
    tl_faces = _rows(tl_faces)
    return tl_faces[tl_faces["traffic_light_face_status"][:, TL_FACE_LABEL_TO_INDEX[status]] > 0]


def get_frames_slice_from_scenes(scene_a, scene_b=None):
    """The frames of `scene_a` (through `scene_b`) as a slice."""
    if scene_b is None:
        scene_b = scene_a
    return slice(scene_a["frame_index_interval"][0], scene_b["frame_index_interval"][1])


def get_agents_slice_from_frames(frame_a, frame_b=None):
    """The agents of `frame_a` (through `frame_b`) as a slice."""
    if frame_b is None:
        frame_b = frame_a
    return slice(frame_a["agent_index_interval"][0], frame_b["agent_index_interval"][1])


def get_tl_faces_slice_from_frames(frame_a, frame_b=None):
    """The traffic light faces of `frame_a` (through `frame_b`) as a slice."""
    if frame_b is None:
        frame_b = frame_a
    return slice(frame_a["traffic_light_faces_index_interval"][0],
                 frame_b["traffic_light_faces_index_interval"][1])


def get_other_agents_ids(all_agents_ids, priority_ids, selected_track_id, max_agents):
    """Up to `max_agents` track ids other than `selected_track_id`, `priority_ids` first, then
    `all_agents_ids`, as l5kit returns them (a list made from a set)."""
    taken = set()
    for track in np.concatenate([priority_ids, all_agents_ids]):
        if len(taken) >= max_agents:
            break
        if track != selected_track_id:
            taken.add(track)
    return list(taken)
