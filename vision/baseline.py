"""The plain baseline disk detector: cv2.HoughCircles on the rectified table, sizes by nearest diameter.

It is the yardstick the evaluation harness (benchmarks/eval_vision.py) compares the real detector against: no rim
fitting, no stacking (every disk gets z = 0), no owners, no parallax correction.
"""

from __future__ import annotations

from typing import Any, Sequence

import cv2
import numpy as np

from tablesight.errors import InputError
from tablesight.scene import DEFAULT_DISK_DIAMETERS_MM, SIZE_CLASSES, Disk, Scene


def _diameters(diameters_mm: Any) -> tuple[float, float, float]:
    if diameters_mm is None:
        return tuple(DEFAULT_DISK_DIAMETERS_MM[k] for k in SIZE_CLASSES)
    if isinstance(diameters_mm, dict):
        diameters_mm = [diameters_mm[k] for k in SIZE_CLASSES]
    d = tuple(float(v) for v in diameters_mm)
    if len(d) != 3 or not all(v > 0 for v in d):
        raise InputError(f"diameters_mm: expected three positive diameters, got {diameters_mm!r}")
    return d  # type: ignore[return-value]


def detect(frame_bgr: np.ndarray, calibration: Any, diameters_mm: Sequence[float] | None = None) -> Scene:
    """Disks found by cv2.HoughCircles in the rectified frame (1 px per mm unless the calibration says otherwise)."""
    if frame_bgr is None or not isinstance(frame_bgr, np.ndarray) or frame_bgr.size == 0:
        raise InputError("empty or unreadable frame")
    diam = _diameters(diameters_mm)
    rect = calibration.rectify(frame_bgr)
    ppm = float(calibration.rectified_px_per_mm)
    gray = cv2.cvtColor(rect, cv2.COLOR_BGR2GRAY) if rect.ndim == 3 else rect
    gray = cv2.medianBlur(gray, 5)
    rmin, rmax = diam[0] / 2 * ppm * 0.85, diam[2] / 2 * ppm * 1.12
    circles = cv2.HoughCircles(gray, cv2.HOUGH_GRADIENT, dp=1.0, minDist=diam[0] / 2 * ppm * 0.8, param1=100,
                               param2=30, minRadius=int(rmin), maxRadius=int(np.ceil(rmax)))
    disks = []
    if circles is not None:
        pts = circles.reshape(-1, 3)
        table = calibration.rectified_to_table(pts[:, :2])
        w, h = calibration.battlefield_mm
        for k, ((x, y), r_px) in enumerate(zip(table, pts[:, 2])):
            r = float(r_px) / ppm
            if not (-r <= x <= w + r and -r <= y <= h + r):
                continue  # off the battlefield (marker tiles, the table top)
            size = SIZE_CLASSES[int(np.argmin([abs(2 * r - d) for d in diam]))]
            disks.append(Disk(id=f"h{len(disks) + 1}", x_mm=float(x), y_mm=float(y), radius_mm=r, z=0, size=size))
    return Scene(disks=tuple(disks))
