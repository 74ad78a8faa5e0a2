"""Measuring the three disk diameters from disks laid apart on the table (their sizes are not published).

Candidates are found in the rectified view (disks stand out from the felt's colour), then each rim is measured
in the raw frame along radial rays laid out in table mm, so the frame is sampled once and the rim position is
sub-pixel: along every ray the rim is where the difference from the felt colour falls fastest. A robust circle
fit gives each diameter; the diameters fall into three size clusters, whose medians are the answer.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import cv2
import numpy as np

from tablesight.errors import InputError
from tablesight.scene import DEFAULT_DISK_DIAMETERS_MM, SIZE_CLASSES

MIN_DIAMETER_MM = 20.0
MAX_DIAMETER_MM = 140.0
RAYS = 120


@dataclass(frozen=True)
class MeasuredDisk:
    x_mm: float
    y_mm: float
    diameter_mm: float
    fit_rms_mm: float  # rim points' scatter about the fitted circle
    size: str  # small | medium | large

    def to_json(self) -> dict:
        return {"x_mm": round(self.x_mm, 2), "y_mm": round(self.y_mm, 2), "diameter_mm": round(self.diameter_mm, 2),
                "fit_rms_mm": round(self.fit_rms_mm, 3), "size": self.size}


@dataclass(frozen=True)
class DiskSizeMeasurement:
    diameters_mm: tuple[float, float, float]  # small, medium, large; the default where a size was not seen
    measured: tuple[bool, bool, bool]  # which sizes were measured (the others are defaults)
    counts: tuple[int, int, int]
    spread_mm: tuple[float | None, float | None, float | None]  # max - min diameter within each size
    disks: tuple[MeasuredDisk, ...]

    def as_argument(self) -> str:
        """The value for `--disk-diameters-mm`, e.g. "44.1,64.0,89.2"."""
        return ",".join(f"{d:.1f}" for d in self.diameters_mm)

    def to_json(self) -> dict:
        return {
            "diameters_mm": dict(zip(SIZE_CLASSES, (round(d, 2) for d in self.diameters_mm))),
            "measured": dict(zip(SIZE_CLASSES, self.measured)),
            "counts": dict(zip(SIZE_CLASSES, self.counts)),
            "spread_mm": dict(zip(SIZE_CLASSES, (None if s is None else round(s, 2) for s in self.spread_mm))),
            "argument": self.as_argument(),
            "disks": [d.to_json() for d in self.disks],
        }


def _felt_distance(img_bgr: np.ndarray, felt_bgr: np.ndarray) -> np.ndarray:
    # Plain BGR distance: across a blurred rim the colour is a linear mix of disk and felt, so this distance
    # rises linearly with the mix and the steepest point is the rim itself (Lab's cube root would skew it).
    diff = img_bgr.astype(np.float32) - felt_bgr.astype(np.float32)
    return np.sqrt((diff * diff).sum(axis=2))


def _candidates(cal, frame_bgr: np.ndarray) -> tuple[list[tuple[float, float, float]], np.ndarray]:
    """(x_mm, y_mm, r_mm) of disk-like blobs on the battlefield, and the felt's colour (BGR)."""
    rect = cal.rectify(frame_bgr)
    w, h = cal.battlefield_mm
    (x0, y0), (x1, y1) = cal.table_to_rectified([[0.0, 0.0], [w, h]]).astype(int)
    field = rect[max(y0, 0):y1, max(x0, 0):x1]
    felt = np.median(field.reshape(-1, 3), axis=0).astype(np.float32)  # the felt covers most of the battlefield
    dist = _felt_distance(field, felt)
    spread = float(np.median(np.abs(dist - np.median(dist)))) + 1e-3
    mask = (dist > max(12.0, np.median(dist) + 8 * spread)).astype(np.uint8) * 255
    k = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (5, 5))
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, k)
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, k)
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    ppm = cal.rectified_px_per_mm
    out = []
    for c in contours:
        area = cv2.contourArea(c) / ppm ** 2
        (cx, cy), r = cv2.minEnclosingCircle(c)
        r_mm = r / ppm
        if not (MIN_DIAMETER_MM / 2 <= r_mm <= MAX_DIAMETER_MM / 2):
            continue
        if area < 0.8 * np.pi * r_mm ** 2:  # not round (two touching disks, a ruler, a hand)
            continue
        xm, ym = cal.rectified_to_table([[cx + max(x0, 0), cy + max(y0, 0)]])[0]
        out.append((float(xm), float(ym), float(r_mm)))
    return out, felt


def _fit_circle(pts: np.ndarray) -> tuple[float, float, float]:
    a = np.column_stack([2 * pts[:, 0], 2 * pts[:, 1], np.ones(len(pts))])
    b = (pts ** 2).sum(axis=1)
    (cx, cy, c), *_ = np.linalg.lstsq(a, b, rcond=None)
    return float(cx), float(cy), float(np.sqrt(max(c + cx * cx + cy * cy, 0.0)))


def _measure_rim(cal, dist_raw: np.ndarray, x: float, y: float, r: float) -> tuple[float, float, float, float] | None:
    """Refine one disk from the raw frame: rim points along radial rays, robust circle fit (all in table mm)."""
    step = 0.1
    radii = np.arange(0.6 * r, 1.4 * r + 3.0, step)
    angles = np.linspace(0, 2 * np.pi, RAYS, endpoint=False)
    for _ in range(2):
        pts_mm = np.stack([x + np.outer(np.cos(angles), radii), y + np.outer(np.sin(angles), radii)], axis=-1)
        px = cal.table_to_image(pts_mm.reshape(-1, 2)).astype(np.float32).reshape(RAYS, len(radii), 2)
        prof = cv2.remap(dist_raw, px[..., 0], px[..., 1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
        prof = cv2.GaussianBlur(prof, (0, 0), sigmaX=3.0, sigmaY=0.01)  # along the ray only
        grad = np.diff(prof, axis=1)
        edges = []
        for k in range(RAYS):
            j = int(np.argmin(grad[k]))  # steepest fall from disk to felt
            if j == 0 or j >= grad.shape[1] - 1 or grad[k, j] > -0.5:
                continue
            g0, g1, g2 = grad[k, j - 1:j + 2]
            den = g0 - 2 * g1 + g2
            off = 0.5 * (g0 - g2) / den if abs(den) > 1e-9 else 0.0
            rr = radii[0] + (j + 0.5 + np.clip(off, -1, 1)) * step
            edges.append((x + rr * np.cos(angles[k]), y + rr * np.sin(angles[k])))
        if len(edges) < RAYS // 3:
            return None
        e = np.array(edges)
        for _ in range(3):
            cx, cy, rad = _fit_circle(e)
            res = np.hypot(e[:, 0] - cx, e[:, 1] - cy) - rad
            mad = float(np.median(np.abs(res - np.median(res)))) + 1e-3
            keep = np.abs(res) < max(3.0 * 1.4826 * mad, 0.15)
            if keep.all() or keep.sum() < RAYS // 3:
                break
            e = e[keep]
        x, y, r = cx, cy, rad
    res = np.hypot(e[:, 0] - x, e[:, 1] - y) - r
    return x, y, r, float(np.sqrt(np.mean(res ** 2)))


def _size_classes(diameters: np.ndarray, defaults: tuple[float, float, float]) -> np.ndarray:
    """Index 0/1/2 (small/medium/large) per diameter.

    The sorted diameters are split at their widest gaps (at most two); the groups, in order of size, are named
    by the increasing choice of sizes closest to the defaults (so two sizes laid out are still named right).
    """
    order = np.argsort(diameters)
    d = diameters[order]
    cuts = []
    if len(d) > 1:
        gaps = np.diff(d)
        for g in np.argsort(-gaps)[:2]:
            if gaps[g] > max(4.0, 0.08 * d[g]):
                cuts.append(int(g) + 1)
    groups = np.split(np.arange(len(d)), sorted(cuts))
    medians = [float(np.median(d[g])) for g in groups]
    best = min(itertools.combinations(range(3), len(groups)),
               key=lambda names: sum(abs(np.log(m / defaults[n])) for m, n in zip(medians, names)))
    labels = np.empty(len(d), int)
    for grp, name in zip(groups, best):
        labels[grp] = name
    out = np.empty(len(d), int)
    out[order] = labels
    return out


def measure_disk_diameters(frame_bgr: np.ndarray, calibration,
                           defaults: tuple[float, float, float] | None = None) -> DiskSizeMeasurement:
    """Measure disks lying apart on the table (not touching, not stacked) in one frame.

    Lay out a few disks of each size anywhere on the battlefield; sizes not laid out keep their defaults.
    Raises InputError when no disk is found.
    """
    calibration.check_frame(frame_bgr)
    defaults = defaults or tuple(DEFAULT_DISK_DIAMETERS_MM[s] for s in SIZE_CLASSES)
    cands, felt = _candidates(calibration, frame_bgr)
    if not cands:
        raise InputError("no disks found on the battlefield: lay some disks apart on the felt, in good light")
    dist_raw = _felt_distance(frame_bgr, felt)
    fits = [f for f in (_measure_rim(calibration, dist_raw, *c) for c in cands) if f is not None]
    if not fits:
        raise InputError("disks were seen but no rim could be measured (blur, glare or touching disks?)")
    diam = np.array([2 * f[2] for f in fits])
    cls = _size_classes(diam, defaults)
    disks = tuple(MeasuredDisk(f[0], f[1], 2 * f[2], f[3], SIZE_CLASSES[c]) for f, c in zip(fits, cls))
    values, measured, counts, spread = [], [], [], []
    for k in range(3):
        ds = diam[cls == k]
        measured.append(bool(len(ds)))
        counts.append(int(len(ds)))
        values.append(float(np.median(ds)) if len(ds) else float(defaults[k]))
        spread.append(float(np.ptp(ds)) if len(ds) else None)
    return DiskSizeMeasurement(tuple(values), tuple(measured), tuple(counts), tuple(spread), disks)
