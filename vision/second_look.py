"""A second look, at twice the scale, where a disk may lie on another.

Seen from above at the network's own scale, a small disk lying wholly on a larger one looks much like a ring
printed in the larger one's art, and the verdict turns most such circles down; the likeliest of them stay as
suspicions (`vision.fit.SuspectedDisk`). Shown the place again at twice its scale, the network marks a disk's own
outline all round it far more often than a printed ring's: its border, its side wall and its shadow are then
several pixels wide, where at 1 px/mm they were one or two. A suspicion whose circle, within `reach_mm` of where it
was judged, has the rim map showing the outline on `min_rim` of its rays is taken for a disk (on the tuning frames'
suspicions, 10 of 17 disks and 2 of 20 printed rings). Only suspicions are looked at again, a crop round each, so a
frame without any costs nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import cv2
import numpy as np

from vision.facemap import STRIDE, face_maps, sample
from vision.fit import DEFAULT_CONFIG, DetectorConfig, DiskFit, ray_angles
from vision.locate import ring_colours


@dataclass(frozen=True)
class SecondLook:
    """How a suspicion is looked at again."""

    zoom: float = 2.0          # the crop is shown to the network at this many times its own scale
    margin_mm: float = 20.0    # the crop reaches this far beyond the suspected circle (the network's context)
    reach_mm: float = 3.0      # the circle may lie this far from where the verdict judged it (1 mm steps)
    min_rim: float = 0.8       # share of its rays whose rim map shows the outline, to be a disk

    def __post_init__(self) -> None:
        if not 1.0 <= self.zoom <= 4.0:
            raise ValueError("zoom must be within 1..4")
        if not 5.0 <= self.margin_mm <= 60.0 or not 0.0 <= self.reach_mm <= 10.0:
            raise ValueError("need 5 <= margin_mm <= 60 and 0 <= reach_mm <= 10")
        if not 0.0 < self.min_rim <= 1.0:
            raise ValueError("min_rim must be within (0, 1]")


DEFAULT_SECOND_LOOK = SecondLook()


def rim_share(rect: np.ndarray, cx: float, cy: float, r_px: float, ppm: float, network_ppm: float,
              config: DetectorConfig = DEFAULT_CONFIG, look: SecondLook = DEFAULT_SECOND_LOOK
              ) -> tuple[float, float, float]:
    """(share, cx, cy): the largest share of a circle's rays whose rim map shows its outline, with the crop round it
    read at `look.zoom` times the network's scale, over the circle's places within `look.reach_mm` (rectified px:
    `ppm` per mm; the network reads `network_ppm`)."""
    h, w = rect.shape[:2]
    half = (r_px + look.margin_mm * ppm)
    x0, y0 = max(int(cx - half), 0), max(int(cy - half), 0)
    x1, y1 = min(int(math.ceil(cx + half)), w), min(int(math.ceil(cy + half)), h)
    if x1 - x0 < 8 or y1 - y0 < 8:
        return 0.0, cx, cy
    f = look.zoom * network_ppm / ppm                  # crop px per rectified px
    big = cv2.resize(rect[y0:y1, x0:x1], None, fx=f, fy=f, interpolation=cv2.INTER_CUBIC)
    rim = face_maps(big, config.model_path, one_off=True).rim
    ang = ray_angles(config.rays)
    steps = np.arange(-look.reach_mm, look.reach_mm + 1e-9, 1.0) * ppm
    dx, dy = (a.ravel() for a in np.meshgrid(steps, steps))
    # each place's rays in map px (a rectified px's centre x lies at (x - x0 + 0.5) * f crop px)
    u = ((cx + dx - x0 + 0.5) * f / STRIDE - 0.5)[:, None] + (r_px * f / STRIDE) * np.cos(ang)
    v = ((cy + dy - y0 + 0.5) * f / STRIDE - 0.5)[:, None] + (r_px * f / STRIDE) * np.sin(ang)
    share = (sample(rim, u, v) > config.rim_level).mean(1)
    k = int(np.argmax(share))
    return float(share[k]), float(cx + dx[k]), float(cy + dy[k])


def confirmed(rect: np.ndarray, fits: Sequence[DiskFit], ppm: float, network_ppm: float,
              config: DetectorConfig = DEFAULT_CONFIG, look: SecondLook = DEFAULT_SECOND_LOOK) -> list[DiskFit]:
    """`fits` with every suspicion the second look confirms added as a disk (and no longer a suspicion); `fits`
    as they are when `config.second_look` is off."""
    if not config.second_look:
        return list(fits)
    out = list(fits)
    for k, f in enumerate(fits):
        s = f.suspect
        if s is None:
            continue
        share, x, y = rim_share(rect, s.cx, s.cy, s.r_px, ppm, network_ppm, config, look)
        if share < look.min_rim:
            continue
        shown = np.ones((1, config.rays), bool)
        ring = ring_colours(rect, np.array([x]), np.array([y]), np.array([s.r_px - config.ring_depth_mm * ppm]),
                            shown)[0]
        out[k] = replace(f, suspect=None)
        out.append(DiskFit(cx=x, cy=y, r_px=s.r_px, size=s.size, rim_fraction=share, open_consistency=1.0,
                           residual_px=0.0, ring_bgr=(float(ring[0]), float(ring[1]), float(ring[2])),
                           confidence=min(share, 0.999)))
    return out
