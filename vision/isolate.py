"""Disks the face network reads only when it sees them alone: circles the image's own edges vote for, each read
again by the network in a window that shows that circle and a margin round it.

The network reads a whole table at once, and what it learned from printed cloths is that a field of like round
things is a pattern: chips of one print set out in rows, or a heap of them, vanish from both its face and its rim
map, while one of those chips cut out on its own reads as a face with its outline whole
(`benchmarks/results/real.md`). So where no disk was found, every circle of a calibrated radius that the
rectified image's gradient votes for (a fixed-radius Hough transform: it needs only an edge round the chip, not
a look) is cut out at the network's scale, `DetectorConfig.isolate_window` radii a side, and read again, all of
them in one run of the network; it is taken when the window's face map reads a face over its inside and its rim
map an outline along it, the centre from that outline then aligned on the image (`vision.refine`). A round spot
printed on a cloth reads the same way alone, so the levels are chosen on tuning frames that include cloths
printed with round spots (`benchmarks/results/vision.md`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import cv2
import numpy as np

from tablesight.scene import SIZE_CLASSES
from vision.facemap import STRIDE, face_maps_batch
from vision.fit import DEFAULT_CONFIG, DetectorConfig, DiskFit, fit_circles, ray_angles
from vision.locate import on_battlefield, ring_colours
from vision.refine import align_centres

WINDOW_ALIGN = 16                  # the network's total stride: a window is a whole number of them
# Canny's upper level (its lower is half): this many times the frame's median gradient, so an edge stands out of
# the cloth's own grain and noise, within these bounds (levels of Sobel on 8-bit colour planes); a chip printed
# near the cloth's colour on a plain cloth still shows, a busy cloth's every fleck does not
EDGE_OVER_MEDIAN, EDGE_LEAST, EDGE_MOST = 4.0, 16.0, 60.0


@dataclass(frozen=True, eq=False)
class EdgeCircles:
    """Circles the image's gradient votes for (rectified px): centres, size index (into the calibrated radii) and
    the share of the outline whose edge points at the centre."""

    x: np.ndarray
    y: np.ndarray
    size_index: np.ndarray
    share: np.ndarray


def edge_circles(rect: np.ndarray, radii_px: Sequence[float], min_share: float, most: int) -> EdgeCircles:
    """Each distinct radius's circles (rectified px) with at least `min_share` of their outline voting, its `most`
    highest: every edge pixel of the image at half resolution votes one radius along its gradient either way (the
    chip lighter or darker than what lies round it), the votes over a circle of that radius counted against its
    length."""
    small = cv2.resize(rect, (max(1, rect.shape[1] // 2), max(1, rect.shape[0] // 2)), interpolation=cv2.INTER_AREA)
    small = cv2.GaussianBlur(small, (0, 0), 1.0)
    h, w = small.shape[:2]
    # each pixel's gradient in the colour plane where it is steepest: a red chip on green felt is nearly the same
    # grey, its edge plain in colour (as OpenCV's Canny does for colour images); 3x3 Sobel in whole numbers, the
    # planes compared by squared length (exact in int32)
    first, *others = cv2.split(small)
    gx, gy = cv2.spatialGradient(first)
    steepest = gx.astype(np.int32) ** 2 + gy.astype(np.int32) ** 2
    for plane in others:
        px, py = cv2.spatialGradient(plane)
        sq = px.astype(np.int32) ** 2 + py.astype(np.int32) ** 2
        steeper = sq > steepest
        np.copyto(gx, px, where=steeper)
        np.copyto(gy, py, where=steeper)
        np.maximum(steepest, sq, out=steepest)
    magnitude = cv2.magnitude(gx.astype(np.float32), gy.astype(np.float32))
    high = float(np.clip(EDGE_OVER_MEDIAN * np.median(np.ascontiguousarray(magnitude[::3, ::3])), EDGE_LEAST,
                         EDGE_MOST))
    ys, xs = np.nonzero(cv2.Canny(gx, gy, high / 2, high, L2gradient=True))
    mag = magnitude[ys, xs] + 1e-6
    dx, dy = gx[ys, xs] / mag, gy[ys, xs] / mag
    out: list[tuple[np.ndarray, ...]] = []
    done: set[int] = set()
    for k, r in enumerate(radii_px):
        if int(round(2 * r)) in done:
            continue
        done.add(int(round(2 * r)))
        rh = r / 2.0
        px = np.rint(np.concatenate([xs + rh * dx, xs - rh * dx])).astype(np.int64)
        py = np.rint(np.concatenate([ys + rh * dy, ys - rh * dy])).astype(np.int64)
        ok = (px >= 0) & (px < w) & (py >= 0) & (py < h)
        acc = np.bincount(py[ok] * w + px[ok], minlength=h * w).reshape(h, w).astype(np.float32)
        acc = cv2.boxFilter(acc, -1, (3, 3), normalize=False)      # votes within a pixel (2 mm at 1 px/mm)
        share = acc / np.float32(2 * math.pi * rh)
        reach = max(3, int(rh) | 1)
        at = np.flatnonzero(share >= min_share)          # few: the local maxima are looked for among them only
        at = at[share.ravel()[at] >= cv2.dilate(share, np.ones((reach, reach), np.uint8)).ravel()[at]]
        py_, px_ = np.divmod(at, w)
        s = share.ravel()[at]
        order = np.argsort(-s, kind="stable")[:most]
        out.append((2.0 * px_[order] + 0.5, 2.0 * py_[order] + 0.5, np.full(len(order), k), s[order]))
    if not out:
        return EdgeCircles(*(np.zeros(0) for _ in range(3)), np.zeros(0))
    x, y, k, s = (np.concatenate(c) for c in zip(*out))
    return EdgeCircles(x=x.astype(np.float64), y=y.astype(np.float64), size_index=k.astype(int),
                       share=s.astype(np.float64))


@dataclass(frozen=True, eq=False)
class AloneReading:
    """How the network reads circles each alone: face over the inside, share of the outline shown, the centre
    fitted to that outline (rectified px) and the rays that show it."""

    face: np.ndarray
    shown: np.ndarray        # (M, rays)
    x: np.ndarray
    y: np.ndarray
    hidden: np.ndarray | None = None     # (M, rays): rays whose outline lies on a disk found, not counted

    @property
    def share(self) -> np.ndarray:
        """Share of each circle's outline shown, of the rays counted."""
        if not self.shown.size:
            return np.zeros(len(self.face))
        if self.hidden is None:
            return self.shown.mean(1)
        counted = ~self.hidden
        return (self.shown & counted).sum(1) / np.maximum(counted.sum(1), 1)


def read_alone(rect: np.ndarray, x: np.ndarray, y: np.ndarray, r: float, px_per_mm: float, network_ppm: float,
               cfg: DetectorConfig = DEFAULT_CONFIG, hidden: np.ndarray | None = None) -> AloneReading:
    """Circles of one radius `r` (rectified px) at (x, y), each read by the network in a window of
    `cfg.isolate_window` radii a side (what lies beyond the frame's edge repeats its last pixels). `hidden` (M,
    rays): rays not fitted on nor counted (the outline lies on a disk found there)."""
    m = len(x)
    ratio = px_per_mm / network_ppm                   # rectified px per network px
    side = WINDOW_ALIGN * math.ceil(2 * cfg.isolate_window * r / ratio / WINDOW_ALIGN)   # network px
    half = side * ratio / 2.0                         # rectified px
    # each window's top-left corner at a whole pixel of the frame; where its circle lies in it
    wx, wy = np.rint(x - half).astype(int), np.rint(y - half).astype(int)
    cx, cy = x - wx, y - wy
    n = int(round(side * ratio))
    h, w = rect.shape[:2]
    windows = np.empty((m, side, side, 3), np.uint8)
    for i in range(m):
        x0, y0 = int(wx[i]), int(wy[i])
        cut = rect[max(0, y0):min(h, y0 + n), max(0, x0):min(w, x0 + n)]
        if cut.shape[:2] != (n, n):     # the window runs off the frame: only its own part is padded
            cut = cv2.copyMakeBorder(cut, max(0, -y0), max(0, y0 + n - h), max(0, -x0), max(0, x0 + n - w),
                                     cv2.BORDER_REPLICATE)
        windows[i] = cut if n == side else cv2.resize(cut, (side, side), interpolation=cv2.INTER_AREA
                                                       if ratio > 1 else cv2.INTER_LINEAR)
    maps = face_maps_batch(windows, cfg.model_path)
    scale = STRIDE * n / side                         # rectified px per map px
    mh, mw = maps.shape[2:]
    # the windows' rim maps side by side: one fit for all (each window's margin keeps the rays within it)
    rim = np.ascontiguousarray(maps[:, 1].transpose(1, 0, 2).reshape(mh, m * mw))
    u, v = (cx + 0.5) / scale - 0.5, (cy + 0.5) / scale - 0.5
    mm = px_per_mm / scale                            # map px per mm
    reading = fit_circles(rim, u + np.arange(m) * mw, v, np.full(m, r / scale), cfg, mm, exclude=hidden)
    shown = (reading.peak >= cfg.rim_level) & (np.abs(reading.offset) <= cfg.rim_tolerance_mm * mm)
    fu, fv = reading.u - np.arange(m) * mw, reading.v
    yy, xx = np.mgrid[0:mh, 0:mw]
    inside = np.hypot(xx[None] - fu[:, None, None], yy[None] - fv[:, None, None]) < 0.7 * r / scale
    face = (maps[:, 0] * inside).sum((1, 2)) / np.maximum(inside.sum((1, 2)), 1)
    return AloneReading(face=face.astype(np.float64), shown=shown, x=x + (fu - u) * scale, y=y + (fv - v) * scale,
                        hidden=hidden)


def hidden_rays(x: np.ndarray, y: np.ndarray, r: np.ndarray, placed: np.ndarray, rays: int,
                explain: float) -> np.ndarray:
    """(M, rays): which rays of each circle (x, y, r) end on one of the `placed` disks ((P, 3): x, y, r; all
    rectified px) or within `explain` of its outline (a neighbour it touches: the edge there is shared)."""
    hidden = np.zeros((len(x), rays), bool)
    if not len(placed) or not len(x):
        return hidden
    # only the pairs near enough for a ray's end to come within reach (the triangle inequality rules out the rest)
    i, j = np.nonzero(np.hypot(x[:, None] - placed[:, 0], y[:, None] - placed[:, 1])
                      < r[:, None] + placed[:, 2] + explain)
    a = ray_angles(rays)
    ex = x[i, None] + r[i, None] * np.cos(a)
    ey = y[i, None] + r[i, None] * np.sin(a)
    on = np.hypot(ex - placed[j, 0, None], ey - placed[j, 1, None]) < placed[j, 2, None] + explain
    np.logical_or.at(hidden, i, on)
    return hidden


def admitted(x: np.ndarray, y: np.ndarray, r: np.ndarray, placed: np.ndarray, slack: float,
             overlap: bool) -> np.ndarray:
    """Which circles may be read alone beside the `placed` disks ((P, 3)): clear of them all, or with `overlap`,
    each centre outside every one of them and none of their centres inside it."""
    if not len(placed):
        return np.ones(len(x), bool)
    d = np.hypot(x[:, None] - placed[None, :, 0], y[:, None] - placed[None, :, 1])
    if overlap:
        return ~((d < placed[None, :, 2]) | (d < r[:, None])).any(1)
    return ~(d < r[:, None] + placed[None, :, 2] - slack).any(1)


def confirmed_alone(rect: np.ndarray, fits: Sequence[DiskFit], radii_px: Sequence[float], px_per_mm: float,
                    network_ppm: float, cfg: DetectorConfig = DEFAULT_CONFIG,
                    battlefield_px: tuple[float, float, float, float] | None = None,
                    where: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None,
                    circles: EdgeCircles | None = None) -> list[DiskFit]:
    """`fits` with every circle the image's edges vote for, overlapping none of them nor each other, that the
    network reads as a disk when it sees it alone (`cfg.isolate_face`, `cfg.isolate_rim`); `fits` as they are
    when not asked. `battlefield_px`, `where`: as `vision.locate.locate_in_maps`'. `circles`: the image's
    `edge_circles` when already voted for (a second pass over the same frame)."""
    if cfg.isolate_face is None:
        return list(fits)
    cand = circles if circles is not None else edge_circles(rect, radii_px, cfg.isolate_votes, cfg.isolate_most)
    r = np.array([radii_px[k] for k in cand.size_index], np.float64)
    keep = on_battlefield(cand.x, cand.y, 1.0, battlefield_px)
    slack = cfg.rim_tolerance_mm * px_per_mm
    placed = [(f.cx, f.cy, f.r_px) for f in fits]
    found_at = np.array(placed).reshape(-1, 3)
    keep &= admitted(cand.x, cand.y, r, found_at, slack, cfg.isolate_overlap)
    # rays ending on or beside a disk found (fits only) are neither fitted on nor counted: the edge there is not theirs
    if where is not None and keep.any():
        keep &= np.asarray(where(cand.x, cand.y, r), bool)
    found: list[DiskFit] = []
    for radius in np.unique(r[keep]):
        idx = np.flatnonzero(keep & (r == radius))
        hidden = hidden_rays(cand.x[idx], cand.y[idx], np.full(len(idx), radius), found_at, cfg.rays,
                             cfg.explain_mm * px_per_mm) \
            if cfg.isolate_overlap else None
        got = read_alone(rect, cand.x[idx], cand.y[idx], float(radius), px_per_mm, network_ppm, cfg, hidden)
        share = got.share
        ok = (got.face >= cfg.isolate_face) & (share >= cfg.isolate_rim)
        if hidden is not None:      # at least half its outline where no disk found lies
            ok &= (~hidden).mean(1) >= 0.5
        for i in np.argsort(-(got.face * share), kind="stable"):
            if not ok[i] or not admitted(got.x[i:i + 1], got.y[i:i + 1], np.array([radius]),
                                         np.array(placed).reshape(-1, 3), slack, cfg.isolate_overlap)[0]:
                continue
            fx, fy = got.x[i], got.y[i]
            if cfg.align:
                rays = got.shown[i] if hidden is None else got.shown[i] & ~hidden[i]
                ax, ay = align_centres(rect, np.array([fx]), np.array([fy]), np.array([radius]), rays[None])
                fx, fy = float(ax[0]), float(ay[0])
            placed.append((fx, fy, float(radius)))
            k = int(cand.size_index[idx[i]])
            ring = ring_colours(rect, np.array([fx]), np.array([fy]),
                                np.array([radius - cfg.ring_depth_mm * px_per_mm]), np.ones((1, cfg.rays), bool))[0]
            found.append(DiskFit(cx=float(fx), cy=float(fy), r_px=float(radius), size=SIZE_CLASSES[k],
                                 rim_fraction=float(share[i]), open_consistency=float(share[i]), residual_px=0.0,
                                 ring_bgr=(float(ring[0]), float(ring[1]), float(ring[2])),
                                 confidence=min(0.999, float(got.face[i]))))
    return list(fits) + found
