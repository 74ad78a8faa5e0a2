"""Parallax of raised disks: where the camera is, and where a disk's top seen on the table plane really lies.

The rectified image maps every pixel to the table plane, so the top of a disk `h` mm above the felt appears pushed
away from the camera's nadir by `h / (H - h)` of its distance from it (H: the camera's height). A 2 mm disk half a
metre from the nadir of a camera 1.5 m up moves by 0.7 mm, the top of a stack of three by 2 mm: more than the
centre accuracy the rules need. The camera's position follows from the table homography and the intrinsics
(plane-induced homography `K [r1 r2 t]`); without intrinsics the focal length is estimated from the homography
itself, assuming square pixels and the principal point at the image centre.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class CameraPosition:
    x_mm: float
    y_mm: float
    height_mm: float  # above the felt

    def correct(self, pts_mm: np.ndarray, heights_mm: np.ndarray) -> np.ndarray:
        """Table positions of points seen (projected onto the felt) at `heights_mm` above it."""
        p = np.asarray(pts_mm, np.float64).reshape(-1, 2)
        h = np.clip(np.asarray(heights_mm, np.float64).reshape(-1), 0.0, 0.5 * self.height_mm)
        c = np.array([self.x_mm, self.y_mm])
        return c + (p - c) * ((self.height_mm - h) / self.height_mm)[:, None]


def _focal_from_homography(g: np.ndarray, cx: float, cy: float) -> float | None:
    """Focal length from a plane -> image homography (square pixels, known principal point)."""
    t = np.array([[1.0, 0.0, -cx], [0.0, 1.0, -cy], [0.0, 0.0, 1.0]])
    m = t @ g
    h1, h2 = m[:, 0], m[:, 1]
    # r1 . r2 = 0 and |r1| = |r2| with K = diag(f, f, 1): two estimates of 1/f^2, take the better-conditioned.
    den1 = h1[2] * h2[2]
    den2 = h1[2] ** 2 - h2[2] ** 2
    cands = []
    if abs(den1) > 1e-18:
        v = -(h1[0] * h2[0] + h1[1] * h2[1]) / den1
        if v > 0:
            cands.append((abs(den1), math.sqrt(v)))
    if abs(den2) > 1e-18:
        v = -((h1[0] ** 2 + h1[1] ** 2) - (h2[0] ** 2 + h2[1] ** 2)) / den2
        if v > 0:
            cands.append((abs(den2), math.sqrt(v)))
    if not cands:
        return None
    return max(cands)[1]


def camera_position(calibration: Any) -> CameraPosition | None:
    """The camera's position over the table from a TableCalibration (None when it cannot be recovered)."""
    h = getattr(calibration, "homography", None)
    if h is None:
        return None
    h = np.asarray(h, np.float64)
    try:
        g = np.linalg.inv(h)  # table mm -> undistorted image px
    except np.linalg.LinAlgError:
        return None
    intr = getattr(calibration, "intrinsics", None)
    # a lens estimated from the table's markers has a nominal focal length: the homography tells the true one
    if intr is not None and getattr(intr, "source", "boards") != "markers":
        k = np.asarray(intr.camera_matrix, np.float64)
    else:
        w, hh = getattr(calibration, "image_size", (0, 0))
        if not w or not hh:
            return None
        f = _focal_from_homography(g, w / 2.0, hh / 2.0)
        if f is None or not (0.2 * w < f < 10 * w):
            return None
        k = np.array([[f, 0, w / 2.0], [0, f, hh / 2.0], [0, 0, 1.0]])
    m = np.linalg.inv(k) @ g
    lam = 0.5 * (np.linalg.norm(m[:, 0]) + np.linalg.norm(m[:, 1]))
    if lam <= 0:
        return None
    m = m / lam
    r1, r2, t = m[:, 0], m[:, 1], m[:, 2]
    # The table's middle must lie in front of the camera.
    bw, bh = getattr(calibration, "battlefield_mm", (900.0, 900.0))
    if (r1 * bw / 2 + r2 * bh / 2 + t)[2] < 0:
        r1, r2, t = -r1, -r2, -t
    r3 = np.cross(r1, r2)
    rot = np.column_stack([r1, r2, r3])
    c = -rot.T @ t
    height = abs(float(c[2]))
    if not math.isfinite(height) or height < 100.0:
        return None
    return CameraPosition(float(c[0]), float(c[1]), height)
