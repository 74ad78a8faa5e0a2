"""Disks seen arriving: a smaller disk put wholly on a resting one, found from what changed between two commits.

From above, a small disk lying wholly on a larger one looks like a ring printed in the larger one's art; in a
single frame the eye finds few of them (`benchmarks/results/misses.md`). The live table has more to go on: it saw
the lower disk before, and where the new disk came to lie, the lower disk's face changed inside a circle of a
size class and nowhere around it. Printed art does not change between two settled tables. So, for each disk that
rests where it was measured at the last commit, the change inside it is tested against each smaller size class: a
circle whose inside changed nearly all over (`min_cover`) with next to no change in a ring just outside it
(`max_spill`; the face around it that only darkened is the new disk's shadow, not change) is a disk that arrived
there. Its inside is read at a lower colour step than the change map's (`level`): a disk laid on art of its own
tones changes it only faintly; the ring around it and the change it leaves unexplained are read at the change
map's own.
Where the new disk's art matches the face it covers (disks of one unit share their art) only its border
changes: the change's enclosed holes are filled, a band just inside the circle (where a border lies) that changed
nearly all round covers it as well as its whole inside, and each circle is placed where it fits the change best
while lying wholly on the lower disk, not at the change's centroid. Its centre is then fitted on the rim map
where the map shows enough of its outline, and kept where the change put it otherwise.

Such a change is not always a disk arriving: a disk the eye had missed lying there and taken away leaves the same
change, and so does a disk turned over where it lies, whose new face may hold a smaller circle's worth of change.
What tells them apart is where the disk came from: in play a disk comes to lie on another from somewhere else on
the table, so a disk of its size left its place since the last commit (a disk of that commit not found now).
Each such disk explains one arrival; with none, nothing arrived. (The image cannot say it: a disk put on one with
a border of its own colour shows no more edge than the art it covers, and the maps no more outline.)

Not looked for: a disk the previous scene had there (it left, or was lifted and put back: the eye's history rule
judges it), one already found, and disks arriving partly off the lower disk (the eye sees their open outline: a
disk of the circle's size it found across the circle is that disk).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import cv2
import numpy as np

from vision.facemap import FaceMaps
from vision.fit import DetectorConfig, DiskFit, fit_circles


@dataclass(frozen=True)
class ArrivalConfig:
    """What a disk seen arriving on a resting one must show (chosen on the tuning seeds' stack clips)."""

    min_cover: float = 0.75      # share of its inside (1.5 mm in from its outline) that changed, holes closed
    max_spill: float = 0.35      # share of a ring 1.5-4 mm outside its outline that changed (its own shadow falls
                                 # there: 0.1-0.3 on the tuning clips; a disk turned over: 1)
    rest_mm: float = 3.0         # the lower disk lies within this of where it was measured: it rests (its fit
                                 # wanders 1.5-3 mm between commits on blurred hard-tier tuning clips; a disk
                                 # moved further changes its whole face, which `max_spill` refuses; at 1 mm the
                                 # hard tier's tuning clips found 33 instead of 47 of 60 in one family's rooms)
    rim_share: float = 0.3       # share of its outline the rim map must show for its centre to be fitted there
    max_shift_mm: float = 3.0    # the rim fit may move the centre the change gave this far
    confidence: float = 0.8      # the new disk's reported confidence
    level: float | None = 20.0   # the colour step read as change inside a new disk (None: the change map's own,
                                 # `ChangeConfig.level`, 30); the ring around it and the change it leaves
                                 # unexplained are read at the change map's. A disk's art on art of its own tones
                                 # changes 15-30 levels (tuning stack clips, 12 training rooms: disks put on
                                 # others found 1039 -> 1073 of 1152 at 20, 1081 at 15 with 8 more made up; all
                                 # of it read at 20: 1011, the ring around the disk changes too)

    def __post_init__(self) -> None:
        for name in ("min_cover", "max_spill", "rim_share", "confidence"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be within 0..1")
        if self.level is not None and not 0.0 < self.level <= 255.0:
            raise ValueError(f"level must be within (0, 255] or None, got {self.level!r}")
        for name in ("rest_mm", "max_shift_mm"):
            if not 0.0 <= getattr(self, name) <= 20.0:
                raise ValueError(f"{name} must be within 0..20")


DEFAULT_ARRIVAL = ArrivalConfig()
_INNER_MM, _RING_MM = 1.5, (1.5, 4.0)
_BORDER_MM = (0.5, 3.0)   # the band inside a disk's outline where its border lies
_SHADOW = (0.25, 0.92)   # a shadow keeps this share of the light in every channel
_SHADOW_TINT = 0.2       # ... alike in all three (their spread within this share of their mean)
_UNEXPLAINED = 0.25   # share of the change on the lower face an arrived disk may leave beyond its ring
INSIDE_MM = 1.5  # an arrived disk's outline lies at least this far inside the lower one's (vision.stacking reads
                 # a circle within its `lens_inside_mm`, 1 mm, of the other's outline as crossing it)


def _disk_mask(shape: tuple[int, int], cx: float, cy: float, r: float) -> np.ndarray:
    """0/1 of the pixels within `r` of (cx, cy), pixel centres, in an image of `shape`."""
    h, w = shape
    y, x = np.ogrid[:h, :w]
    return ((x - cx) ** 2 + (y - cy) ** 2 <= r * r)


def arrived_disks(mask: np.ndarray, fits: Sequence[DiskFit], reference_fits: Sequence[DiskFit],
                  radii_px: dict[str, float], rect: np.ndarray, reference_rect: np.ndarray, maps: FaceMaps,
                  scale: float, ppm: float, cfg: DetectorConfig, arrival: ArrivalConfig = DEFAULT_ARRIVAL,
                  faint: np.ndarray | None = None) -> list[DiskFit]:
    """New disks (rectified px) lying wholly on disks that rest where the last commit measured them.

    `mask`: the half-resolution change map since the reference (`vision.incremental.change_mask`); `fits`: the
    disks found now, `reference_fits` those of the last commit (seeded with the committed ids); `radii_px`: each
    size class's radius in rectified px; `rect` the rectified frame, `reference_rect` the last commit's pixels at
    its exposure; `maps`: the face / rim / height maps (`scale` rectified px per map px); `ppm`: rectified px per
    mm. `faint`: the change map at `arrival.level`, where a new disk's inside is read (None: `mask`)."""
    by_id = {f.seed_id: f for f in reference_fits if f.seed_id is not None}
    px_mm = 0.5 * ppm      # half-resolution px per mm
    mm = ppm / scale       # map px per mm
    found: list[DiskFit] = []
    taken = list(fits)
    # disks of the last commit not there now, by size: a disk carried onto another left its place
    now_ids = {f.seed_id for f in fits if f.seed_id is not None}
    left = Counter(f.size for f in reference_fits if f.seed_id is not None and f.seed_id not in now_ids)
    for low in fits:
        before = by_id.get(low.seed_id) if low.seed_id is not None else None
        if before is None or math.hypot(low.cx - before.cx, low.cy - before.cy) > arrival.rest_mm * ppm:
            continue
        got = _arrived_on(mask, low, radii_px, px_mm, arrival, rect, reference_rect, faint)
        if got is None:
            continue
        size, r_full, cx, cy = got
        if any(math.hypot(o.cx - cx, o.cy - cy) < 0.5 * r_full for o in list(taken) + list(reference_fits)
               if o is not low and o.seed_id != low.seed_id):
            continue   # found already, or a disk was there before (it left, or was put back)
        if any(o.size == size and math.hypot(o.cx - cx, o.cy - cy) < r_full for o in taken if o is not low):
            continue   # the eye found a disk of its size across it: one hanging over the lower disk's edge
        if left[size] == 0:
            continue   # no disk of its size left its place: one taken off, or a face turned over
        left[size] -= 1
        # the rim map's outline, where it shows enough of it, places the circle better than the change does
        u, v = np.array([(cx + 0.5) / scale - 0.5]), np.array([(cy + 0.5) / scale - 0.5])
        reading = fit_circles(maps.rim, u, v, np.array([r_full / scale]), cfg, mm)
        shown = (reading.peak[0] >= cfg.rim_level) & (np.abs(reading.offset[0]) <= cfg.rim_tolerance_mm * mm)
        fu, fv = (reading.u[0] + 0.5) * scale - 0.5, (reading.v[0] + 0.5) * scale - 0.5
        if shown.mean() >= arrival.rim_share and math.hypot(fu - cx, fv - cy) <= arrival.max_shift_mm * ppm:
            cx, cy = float(fu), float(fv)
        # It lies wholly on the lower disk (the change says so): its circle is kept `INSIDE_MM` inside the lower
        # one's, where the stacking reads it as lying within it, not crossing its outline.
        off = math.hypot(cx - low.cx, cy - low.cy)
        room = low.r_px - r_full - INSIDE_MM * ppm
        if off > max(room, 0.0):
            k = max(room, 0.0) / off
            cx, cy = low.cx + (cx - low.cx) * k, low.cy + (cy - low.cy) * k
        ring = _ring_colour(rect, cx, cy, r_full - cfg.ring_depth_mm * ppm)
        new = DiskFit(cx=float(cx), cy=float(cy), r_px=float(r_full), size=size, rim_fraction=float(shown.mean()),
                      open_consistency=1.0, residual_px=0.0, ring_bgr=ring, confidence=arrival.confidence)
        found.append(new)
        taken.append(new)
    return found


def _arrived_on(mask: np.ndarray, low: DiskFit, radii_px: dict[str, float], px_mm: float, arrival: ArrivalConfig,
                rect: np.ndarray, reference_rect: np.ndarray, faint: np.ndarray | None = None
                ) -> tuple[str, float, float, float] | None:
    """(size, radius, cx, cy) in rectified px of a circle of a size class that changed on the face of `low` and
    hardly around it, or None. `mask`: the half-resolution change map; `px_mm`: its px per mm; `rect` and
    `reference_rect`: the frame and the last commit's pixels (full resolution), which tell a shadow from new
    colours.

    Each size class's circle is placed where its cover less its spill is highest among the centres that keep it
    wholly on the lower disk (a matched filter on the change map). The change blob's centroid is not its centre:
    where the new disk's art matches the old face no change shows, and its shadow changes one side of it."""
    lx, ly, lr = (low.cx + 0.5) / 2 - 0.5, (low.cy + 0.5) / 2 - 0.5, low.r_px / 2
    grow = int(math.ceil(_RING_MM[1] * px_mm)) + 3     # the ring around a circle may reach past the lower disk
    x0, y0 = max(int(lx - lr) - grow, 0), max(int(ly - lr) - grow, 0)
    x1, y1 = min(int(lx + lr) + grow + 1, mask.shape[1]), min(int(ly + lr) + grow + 1, mask.shape[0])
    if x1 - x0 < 4 or y1 - y0 < 4:
        return None
    shape = (y1 - y0, x1 - x0)
    face = _disk_mask(shape, lx - x0, ly - y0, lr - 0.5 * px_mm)
    window = mask[y0:y1, x0:x1].astype(np.uint8)
    inner = window if faint is None else faint[y0:y1, x0:x1].astype(np.uint8)   # where its inside is read
    if (inner.astype(bool) & face).sum() < 10:
        return None
    # where the new art matches the old, no change shows: close such holes (about 3 mm)
    k = max(3, int(round(3.0 * px_mm)) | 1)
    element = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))
    closed = _fill_holes(cv2.morphologyEx(window, cv2.MORPH_CLOSE, element)).astype(np.float32)
    covered = closed if faint is None else \
        _fill_holes(cv2.morphologyEx(inner, cv2.MORPH_CLOSE, element)).astype(np.float32)
    # around the disk its own shadow darkens the face it lies on (a thick disk's, on one side): that is no change
    spilled = closed * (1.0 - _shadowed(rect, reference_rect, x0, y0, x1, y1))
    in_view = np.ones(shape, np.float32)   # a window cut by the frame's edge: shares of what is in view
    best = None
    for size, r_full in radii_px.items():
        r = r_full / 2
        if r + 0.5 * px_mm > lr:
            continue
        reach = lr + 0.5 * px_mm - r     # centres this close to the lower one's keep the circle wholly on it
        # change all over its inside, and next to none around it, on the lower disk or past its edge (a disk
        # hanging over the edge changed the cloth there too)
        cover = np.maximum(_share_map(covered, in_view, _kernel(max(r - _INNER_MM * px_mm, 1.0)), unseen=0.0),
                           _share_map(covered, in_view, _kernel(r - _BORDER_MM[0] * px_mm, r - _BORDER_MM[1] * px_mm),
                                      unseen=0.0))
        spill = _share_map(spilled, in_view, _kernel(r + _RING_MM[1] * px_mm, r + _RING_MM[0] * px_mm), unseen=1.0)
        score = cover - spill
        ok = (cover >= arrival.min_cover) & (spill <= arrival.max_spill) & _disk_mask(shape, lx - x0, ly - y0, reach)
        if not ok.any():
            continue
        top = float(score[ok].max())
        if best is not None and top <= best[0]:
            continue
        # the centre of the best placements (a disk whose change fills a plateau of them lies at its middle)
        ys, xs = np.nonzero(ok & (score >= top - 0.02))
        best = (top, size, r_full, float(xs.mean()), float(ys.mean()))
    if best is None:
        return None
    _, size, r_full, bx, by = best
    # the circle must explain the change on the lower face: a larger disk arrived, or more than a disk changed,
    # when much of it lies beyond the circle's ring (a smaller circle fits inside any larger change)
    on_face = (closed > 0) & face
    beyond = on_face & ~_disk_mask(shape, bx, by, r_full / 2 + _RING_MM[1] * px_mm)
    if beyond.sum() > _UNEXPLAINED * on_face.sum():
        return None
    return size, r_full, 2 * (bx + x0 + 0.5) - 0.5, 2 * (by + y0 + 0.5) - 0.5


def _shadowed(rect: np.ndarray, reference: np.ndarray, x0: int, y0: int, x1: int, y1: int) -> np.ndarray:
    """Half-resolution window (x0..x1, y0..y1) 0/1 of where the frame only darkened against the reference: a
    shadow (every channel's ratio alike and under one), not new colours. `rect`, `reference`: full resolution."""
    a = cv2.resize(rect[2 * y0:2 * y1, 2 * x0:2 * x1], (x1 - x0, y1 - y0), interpolation=cv2.INTER_AREA)
    b = cv2.resize(reference[2 * y0:2 * y1, 2 * x0:2 * x1], (x1 - x0, y1 - y0), interpolation=cv2.INTER_AREA)
    ratio = (a.astype(np.float32) + 1.0) / (b.astype(np.float32) + 1.0)
    hi, lo = ratio.max(axis=2), ratio.min(axis=2)
    return ((hi <= _SHADOW[1]) & (lo >= _SHADOW[0]) & (hi - lo <= _SHADOW_TINT * ratio.mean(axis=2))
            ).astype(np.float32)


def _kernel(r_out: float, r_in: float = -1.0) -> np.ndarray:
    """0/1 float kernel of the pixels within `r_out` of its centre and beyond `r_in` (a disk, or a ring)."""
    k = int(math.ceil(r_out))
    y, x = np.ogrid[-k:k + 1, -k:k + 1]
    d2 = x * x + y * y
    return ((d2 <= r_out * r_out) & (d2 > r_in * r_in if r_in >= 0 else True)).astype(np.float32)


def _share_map(changed: np.ndarray, in_view: np.ndarray, kernel: np.ndarray, unseen: float) -> np.ndarray:
    """At every centre, the share of `kernel`'s pixels in view that changed (`unseen` where fewer than 8 are)."""
    hit = cv2.filter2D(changed, -1, kernel, borderType=cv2.BORDER_CONSTANT)
    seen = cv2.filter2D(in_view, -1, kernel, borderType=cv2.BORDER_CONSTANT)
    return np.where(seen >= 8, hit / np.maximum(seen, 1.0), unseen)


def _fill_holes(mask: np.ndarray) -> np.ndarray:
    """`mask` (0/1 uint8) with every unchanged region it encloses filled: a disk put down changes the face all
    round its outline, but inside it its art may match what it covers (disks of one unit share their art)."""
    outside = np.pad(mask, 1).copy()
    cv2.floodFill(outside, None, (0, 0), 2)
    return (outside[1:-1, 1:-1] != 2).astype(np.uint8)


def _ring_colour(rect: np.ndarray, cx: float, cy: float, r: float) -> tuple[float, float, float]:
    """The median colour on a circle (the tracker's identity cue, as `vision.locate` reads it for every disk)."""
    ang = np.arange(48) * (2 * math.pi / 48)
    xs = (cx + max(r, 1.0) * np.cos(ang)).astype(np.float32)[None]
    ys = (cy + max(r, 1.0) * np.sin(ang)).astype(np.float32)[None]
    cols = cv2.remap(rect, xs, ys, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE).reshape(-1, 3)
    m = np.median(cols.astype(np.float64), axis=0)
    return float(m[0]), float(m[1]), float(m[2])

