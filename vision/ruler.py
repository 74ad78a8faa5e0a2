"""Where the range ruler lies in a frame (table mm), found from its tags: no disk is read on it at other scales.

The face network learned the 300 x 30 mm ruler at 1 px/mm among its training tables and reads its edges as no
disk's outline. Shown the table larger (small chips, `vision.detect.network_px_per_mm`), the strip is wider than
anything it saw and its long edges read like the outline of a disk about as wide as it: on training families'
tuning frames of 20 / 26 / 34 mm disks, most of the circles that were no disk lay along it (precision 87 %; 94 %
with the circles centred on the ruler left out, recall unchanged). A disk does not lie centred on the ruler, so
at such scales the eye leaves out circles whose centre lies on the strip the ruler's tags place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np


@dataclass(frozen=True)
class RulerStrip:
    """The ruler's strip on the table: `to_ruler` maps table mm to the ruler's own frame (u along, v across, mm)."""

    to_ruler: np.ndarray   # 2x3 affine
    length_mm: float
    width_mm: float

    def contains(self, pts_mm: np.ndarray) -> np.ndarray:
        """Which table points (N x 2, mm) lie on the strip."""
        p = np.asarray(pts_mm, np.float64).reshape(-1, 2)
        uv = p @ self.to_ruler[:, :2].T + self.to_ruler[:, 2]
        return (uv[:, 0] >= 0) & (uv[:, 0] <= self.length_mm) & (uv[:, 1] >= 0) & (uv[:, 1] <= self.width_mm)


def find_ruler(frame_bgr: np.ndarray, calibration: Any) -> RulerStrip | None:
    """The ruler in a camera frame, from whichever of its tags are in view (None: none is, or no layout)."""
    from calibration.aruco import detect_markers

    layout = getattr(calibration, "layout", None)
    if layout is None:
        return None
    tags = {m.id: m for m in layout.ruler_markers}
    found = detect_markers(frame_bgr, layout.dictionary, ids=set(tags))
    if not found:
        return None
    uv = np.concatenate([np.asarray(tags[i].corners_mm, np.float64) for i in found])
    mm = np.concatenate([calibration.image_to_table(found[i].corners_px) for i in found])
    # the tags lie on one rigid ruler: a similarity from its frame to the table's (one tag is enough)
    m, _ = cv2.estimateAffinePartial2D(mm.astype(np.float32), uv.astype(np.float32), method=cv2.LMEDS)
    if m is None:
        return None
    return RulerStrip(m.astype(np.float64), float(layout.ruler_length_mm), float(layout.ruler_width_mm))
