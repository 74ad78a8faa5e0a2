"""Disks seen arriving: a smaller disk put wholly on a resting one, found from what changed between two commits.

From above, a small disk lying wholly on a larger one looks like a ring printed in the larger one's art; in a
single frame the eye finds few of them (`benchmarks/results/misses.md`). The live table has more to go on: it saw
the lower disk before, and where the new disk came to lie, the lower disk's face changed inside a circle of a
size class and nowhere around it. Printed art does not change between two settled tables. So, for each disk that
rests where it was measured at the last commit, the change inside it is tested against each smaller size class: a
circle whose inside changed nearly all over (`min_cover`) with next to no change in a ring just outside it on the
lower disk's face (`max_spill`) is a disk that arrived there. Its centre is then fitted on the rim map where the
map shows enough of its outline, and kept where the change put it otherwise.

Not looked for: a disk the previous scene had there (it left, or was lifted and put back: the eye's history rule
judges it), one already found, and disks arriving partly off the lower disk (the eye sees their open outline).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import cv2
import numpy as np

from vision.fit import DetectorConfig, DiskFit, fit_circles


@dataclass(frozen=True)
class ArrivalConfig:
    """What a disk seen arriving on a resting one must show (chosen on the tuning seeds' stack clips)."""

    min_cover: float = 0.75      # share of its inside (1.5 mm in from its outline) that changed, holes closed
    max_spill: float = 0.35      # share of the lower disk's face 1.5-4 mm outside its outline that changed (its
                                 # own shadow falls there: 0.1-0.3 on the tuning clips; a disk turned over: 1)
    rest_mm: float = 1.0         # the lower disk lies within this of where it was measured: it rests
    rim_share: float = 0.3       # share of its outline the rim map must show for its centre to be fitted there
    max_shift_mm: float = 3.0    # the rim fit may move the centre the change gave this far
    confidence: float = 0.8      # the new disk's reported confidence

    def __post_init__(self) -> None:
        for name in ("min_cover", "max_spill", "rim_share", "confidence"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be within 0..1")
        for name in ("rest_mm", "max_shift_mm"):
            if not 0.0 <= getattr(self, name) <= 20.0:
                raise ValueError(f"{name} must be within 0..20")


DEFAULT_ARRIVAL = ArrivalConfig()
_INNER_MM, _RING_MM = 1.5, (1.5, 4.0)


def _disk_mask(shape: tuple[int, int], cx: float, cy: float, r: float) -> np.ndarray:
    """0/1 of the pixels within `r` of (cx, cy), pixel centres, in an image of `shape`."""
    h, w = shape
    y, x = np.ogrid[:h, :w]
    return ((x - cx) ** 2 + (y - cy) ** 2 <= r * r)


def _shares(changed: np.ndarray, cx: float, cy: float, r: float, lower: np.ndarray, px_mm: float
            ) -> tuple[float, float]:
    """(cover, spill) of a circle (half-resolution px) on `changed`: its inside that changed, and the ring just
    outside it, on the lower disk's face (`lower`), that changed."""
    inside = _disk_mask(changed.shape, cx, cy, max(r - _INNER_MM * px_mm, 1.0))
    ring = (_disk_mask(changed.shape, cx, cy, r + _RING_MM[1] * px_mm)
            & ~_disk_mask(changed.shape, cx, cy, r + _RING_MM[0] * px_mm) & lower)
    cover = float(changed[inside].mean()) if inside.any() else 0.0
    spill = float(changed[ring].mean()) if ring.sum() >= 8 else 1.0
    return cover, spill


def arrived_disks(mask: np.ndarray, fits: Sequence[DiskFit], reference_fits: Sequence[DiskFit],
                  radii_px: dict[str, float], rect: np.ndarray, rim: np.ndarray, scale: float, ppm: float,
                  cfg: DetectorConfig, arrival: ArrivalConfig = DEFAULT_ARRIVAL) -> list[DiskFit]:
    """New disks (rectified px) lying wholly on disks that rest where the last commit measured them.

    `mask`: the half-resolution change map since the reference (`vision.incremental.change_mask`); `fits`: the
    disks found now, `reference_fits` those of the last commit (seeded with the committed ids); `radii_px`: each
    size class's radius in rectified px; `rim`: the rim map (`scale` rectified px per map px); `ppm`: rectified px
    per mm."""
    by_id = {f.seed_id: f for f in reference_fits if f.seed_id is not None}
    px_mm = 0.5 * ppm      # half-resolution px per mm
    found: list[DiskFit] = []
    taken = list(fits)
    for low in fits:
        before = by_id.get(low.seed_id) if low.seed_id is not None else None
        if before is None or math.hypot(low.cx - before.cx, low.cy - before.cy) > arrival.rest_mm * ppm:
            continue
        lx, ly, lr = (low.cx + 0.5) / 2 - 0.5, (low.cy + 0.5) / 2 - 0.5, low.r_px / 2
        x0, y0 = max(int(lx - lr) - 2, 0), max(int(ly - lr) - 2, 0)
        x1, y1 = min(int(lx + lr) + 3, mask.shape[1]), min(int(ly + lr) + 3, mask.shape[0])
        if x1 - x0 < 4 or y1 - y0 < 4:
            continue
        face = _disk_mask((y1 - y0, x1 - x0), lx - x0, ly - y0, lr - 0.5 * px_mm)
        changed = mask[y0:y1, x0:x1].astype(bool) & face
        if changed.sum() < 10:
            continue
        # where the new art matches the old, no change shows: close such holes (about 3 mm)
        k = max(3, int(round(3.0 * px_mm)) | 1)
        closed = cv2.morphologyEx(changed.astype(np.uint8), cv2.MORPH_CLOSE,
                                  cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))).astype(bool) & face
        n, labels, stats, centroids = cv2.connectedComponentsWithStats(closed.astype(np.uint8), connectivity=8)
        if n < 2:
            continue
        blob = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
        bx, by = centroids[blob]
        best = None
        for size, r_full in radii_px.items():
            r = r_full / 2
            if r + 0.5 * px_mm > lr or math.hypot(bx + x0 - lx, by + y0 - ly) + r > lr + 0.5 * px_mm:
                continue   # not wholly on the lower disk
            cover, spill = _shares(closed, bx, by, r, face, px_mm)
            if cover >= arrival.min_cover and spill <= arrival.max_spill and (best is None or cover - spill > best[0]):
                best = (cover - spill, size, r_full)
        if best is None:
            continue
        _, size, r_full = best
        cx, cy = 2 * (bx + x0 + 0.5) - 0.5, 2 * (by + y0 + 0.5) - 0.5
        if any(math.hypot(o.cx - cx, o.cy - cy) < 0.5 * r_full for o in list(taken) + list(reference_fits)
               if o is not low and o.seed_id != low.seed_id):
            continue   # found already, or a disk was there before (it left, or was put back)
        # the rim map's outline, where it shows enough of it, places the circle better than the change does
        u, v = np.array([(cx + 0.5) / scale - 0.5]), np.array([(cy + 0.5) / scale - 0.5])
        mm = ppm / scale
        reading = fit_circles(rim, u, v, np.array([r_full / scale]), cfg, mm)
        shown = (reading.peak[0] >= cfg.rim_level) & (np.abs(reading.offset[0]) <= cfg.rim_tolerance_mm * mm)
        fu, fv = (reading.u[0] + 0.5) * scale - 0.5, (reading.v[0] + 0.5) * scale - 0.5
        if shown.mean() >= arrival.rim_share and math.hypot(fu - cx, fv - cy) <= arrival.max_shift_mm * ppm:
            cx, cy = float(fu), float(fv)
        ring = _ring_colour(rect, cx, cy, r_full - cfg.ring_depth_mm * ppm)
        new = DiskFit(cx=float(cx), cy=float(cy), r_px=float(r_full), size=size, rim_fraction=float(shown.mean()),
                      open_consistency=1.0, residual_px=0.0, ring_bgr=ring, confidence=arrival.confidence)
        found.append(new)
        taken.append(new)
    return found


def _ring_colour(rect: np.ndarray, cx: float, cy: float, r: float) -> tuple[float, float, float]:
    """The median colour on a circle (the tracker's identity cue, as `vision.locate` reads it for every disk)."""
    ang = np.arange(48) * (2 * math.pi / 48)
    xs = (cx + max(r, 1.0) * np.cos(ang)).astype(np.float32)[None]
    ys = (cy + max(r, 1.0) * np.sin(ang)).astype(np.float32)[None]
    cols = cv2.remap(rect, xs, ys, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE).reshape(-1, 3)
    m = np.median(cols.astype(np.float64), axis=0)
    return float(m[0]), float(m[1]), float(m[2])

