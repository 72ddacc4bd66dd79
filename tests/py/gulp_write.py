"""Writes a GulpIO2 directory with gulpio2 itself, then reads it back with gulpio2 and records
what gulpio2 returns, as ground truth for tests/interop/gulp.rs.

usage: gulp_write.py OUT_DIR EXPECTED_JSON

Three chunks; RGB and grayscale frames of several sizes (so every padding 0..3 occurs); ids
that look numeric and ids that do not. The expected JSON holds, per id, the chunk, the
metadata and each frame's length and sha256 as returned by gulpio2's reader with an identity
decoder (so the JPEG bytes exactly as gulpio2 slices them, padding removed).
"""
import hashlib
import json
import sys

import numpy as np
from gulpio2.fileio import GulpDirectory

out_dir, expected_path = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(4)

videos = [
    # (id, n_frames, height, width, gray)
    ("1001", 3, 24, 32, False),
    ("video_a", 5, 17, 23, False),
    ("0042", 1, 8, 8, True),
    ("clip with space", 4, 40, 16, True),
    ("7", 12, 31, 45, False),
    ("ünïcødé", 2, 64, 48, False),
    ("last", 6, 9, 130, True),
]
chunks_of = [0, 0, 1, 1, 1, 2, 2]

def frame(h, w, gray, i):
    # Smooth gradients plus noise: JPEGs of varied, non-multiple-of-4 lengths.
    y, x = np.mgrid[0:h, 0:w]
    base = (x * 255 // max(w - 1, 1) + y * 3 + i * 11) % 256
    shape = (h, w) if gray else (h, w, 3)
    noise = rng.integers(0, 40, size=shape)
    img = (base[..., None] if not gray else base) + noise
    if not gray:
        img = img + np.array([0, 60, 120])
    return (img % 256).astype(np.uint8)

gd = GulpDirectory(out_dir)
chunks = list(gd.new_chunks(3))
for c_index, chunk in enumerate(chunks):
    with chunk.open("wb"):
        for (id_, n, h, w, gray), c in zip(videos, chunks_of):
            if c != c_index:
                continue
            frames = [frame(h, w, gray, i) for i in range(n)]
            chunk.append(id_, {"id": id_, "n": n, "gray": gray, "shape": [h, w]}, frames)

# Read back with gulpio2, undecoded.
gd = GulpDirectory(out_dir, jpeg_decoder=lambda b: b)
ids = [id_ for chunk in gd.chunks() for id_ in chunk.meta_dict]
expected = {"ids": ids, "videos": {}}
for id_ in ids:
    frames, meta = gd[id_]
    expected["videos"][id_] = {
        "chunk": gd.chunk_lookup[id_],
        "meta": meta,
        "frames": [{"len": len(f), "sha256": hashlib.sha256(f).hexdigest()} for f in frames],
        "slice_1_5_2": [hashlib.sha256(f).hexdigest() for f in gd[id_, slice(1, 5, 2)][0]],
        "list_last_first": [
            hashlib.sha256(f).hexdigest() for f in gd[id_, [len(frames) - 1, 0]][0]
        ],
    }
with open(expected_path, "w") as f:
    json.dump(expected, f, ensure_ascii=False)
