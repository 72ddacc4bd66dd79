"""Writes seeds for the `jpeg` fuzz target in fuzz/corpus-seeds/jpeg/: small JPEGs from
OpenCV's encoder (libjpeg-turbo) in the layouts frames come in: colour 4:2:0 and 4:4:4, gray,
progressive, with restart markers, and one with zero padding after its end marker (as AVI
chunks and gulp records pad them).

usage: .venv/bin/python fuzz/jpeg_seeds.py   (from the repository root)
"""

from pathlib import Path

import cv2
import numpy as np

out = Path("fuzz/corpus-seeds/jpeg")
out.mkdir(parents=True, exist_ok=True)
y, x = np.mgrid[0:24, 0:40]
rgb = np.stack([(x * 6) % 256, (y * 10) % 256, ((x + y) * 3) % 256], axis=-1).astype(np.uint8)
gray = rgb[..., 0]


def enc(img, *params):
    ok, b = cv2.imencode(".jpg", img, list(params))
    assert ok
    return b.tobytes()


seeds = {
    "rgb420": enc(rgb, cv2.IMWRITE_JPEG_QUALITY, 80),
    "rgb444": enc(rgb, cv2.IMWRITE_JPEG_SAMPLING_FACTOR, cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444),
    "gray": enc(gray),
    "progressive": enc(rgb, cv2.IMWRITE_JPEG_PROGRESSIVE, 1),
    "restarts": enc(rgb, cv2.IMWRITE_JPEG_RST_INTERVAL, 1),
}
seeds["padded"] = seeds["rgb420"] + b"\0" * 3
for name, data in seeds.items():
    (out / name).write_bytes(data)
