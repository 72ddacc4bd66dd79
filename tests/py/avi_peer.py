"""OpenCV's side of the mjpg interop tests (opencv-python-headless from scripts/requirements.txt).

    avi_peer.py write OUT.avi WIDTH HEIGHT FRAMES   # cv2.VideoWriter, fourcc MJPG, 30 fps
    avi_peer.py read IN.avi OUT.rgb                  # cv2.VideoCapture: every frame, RGB
    avi_peer.py imdecode DIR OUT.rgb                 # cv2.imdecode of DIR/000000.jpg, ...
    avi_peer.py bench IN.avi REPEATS                 # best time of VideoCapture reading all

`write` draws frames that change from one to the next (so JPEG sizes vary, odd and even);
`read` writes the decoded frames back to back as HxWx3 RGB (upstream's reader converts BGR to
RGB) and prints {"frames": n, "width": w, "height": h} as JSON. `imdecode` decodes JPEG files
with libjpeg-turbo (no video path: the reference for a JPEG decoder's tolerance) the same way.
"""
import os
import json
import sys

import cv2
import numpy as np


def write(out, w, h, n):
    vw = cv2.VideoWriter(out, cv2.VideoWriter_fourcc(*"MJPG"), 30, (w, h))
    if not vw.isOpened():
        sys.exit(f"cv2.VideoWriter could not open {out}")
    y, x = np.mgrid[0:h, 0:w]
    rng = np.random.default_rng(n)
    for i in range(n):
        img = np.empty((h, w, 3), np.uint8)
        img[..., 0] = (x * 255 // max(w - 1, 1) + 7 * i) % 256
        img[..., 1] = (y * 255 // max(h - 1, 1) + 3 * i) % 256
        img[..., 2] = ((x + y + 11 * i) % 64) * 4
        s = max(4, min(w, h) // 4)
        cx, cy = (5 * i) % max(w - s, 1), (3 * i) % max(h - s, 1)
        img[cy:cy + s, cx:cx + s] = rng.integers(0, 256, (s, s, 3), dtype=np.uint8)
        vw.write(img)
    vw.release()


def read(path, out):
    cap = cv2.VideoCapture(path)
    if not cap.isOpened():
        sys.exit(f"cv2.VideoCapture could not open {path}")
    n, w, h = 0, 0, 0
    with open(out, "wb") as f:
        while True:
            ok, img = cap.read()
            if not ok:
                break
            h, w = img.shape[:2]
            f.write(cv2.cvtColor(img, cv2.COLOR_BGR2RGB).tobytes())
            n += 1
    print(json.dumps({"frames": n, "width": w, "height": h}))


def imdecode(d, out):
    names = sorted(os.listdir(d))
    with open(out, "wb") as f:
        for name in names:
            img = cv2.imdecode(np.fromfile(os.path.join(d, name), np.uint8), cv2.IMREAD_COLOR)
            f.write(cv2.cvtColor(img, cv2.COLOR_BGR2RGB).tobytes())
    print(json.dumps({"frames": len(names)}))


def bench(path, repeats):
    """Best wall time of opening `path` and reading every frame with VideoCapture, as
    upstream's reader does (BGR -> RGB included), and the frame count."""
    import time
    best, n = float("inf"), 0
    for _ in range(repeats):
        t = time.perf_counter()
        cap = cv2.VideoCapture(path)
        n = 0
        while True:
            ok, img = cap.read()
            if not ok:
                break
            cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
            n += 1
        best = min(best, time.perf_counter() - t)
    print(json.dumps({"seconds": best, "frames": n, "threads": cv2.getNumThreads()}))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    elif sys.argv[1] == "read":
        read(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "bench":
        bench(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "imdecode":
        imdecode(sys.argv[2], sys.argv[3])
    else:
        sys.exit(f"unknown command {sys.argv[1]!r}")
