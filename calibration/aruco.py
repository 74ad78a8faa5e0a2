"""Finding the printed ArUco markers in a frame, with sub-pixel corners."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import cv2
import numpy as np

from tablesight.errors import InputError


@dataclass(frozen=True)
class DetectedMarker:
    id: int
    corners_px: np.ndarray  # 4x2 float64, OpenCV order (TL, TR, BR, BL of the printed marker), raw frame px

    @property
    def center_px(self) -> np.ndarray:
        return self.corners_px.mean(axis=0)

    @property
    def side_px(self) -> float:
        c = self.corners_px
        return float(np.mean(np.linalg.norm(c - np.roll(c, -1, axis=0), axis=1)))


def dictionary_id(name: str) -> int:
    value = getattr(cv2.aruco, name, None)
    if not name.startswith("DICT_") or not isinstance(value, int):
        raise InputError(f"unknown ArUco dictionary {name!r}")
    return value


_local = threading.local()


def _detector(dictionary: str, fast: bool = False) -> "cv2.aruco.ArucoDetector":
    # One detector per dictionary and thread: building one costs more than a detection on a small frame.
    cache = getattr(_local, "detectors", None)
    if cache is None:
        cache = _local.detectors = {}
    det = cache.get((dictionary, fast))
    if det is None:
        params = cv2.aruco.DetectorParameters()
        params.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_SUBPIX
        params.cornerRefinementWinSize = 4
        params.cornerRefinementMaxIterations = 50
        params.cornerRefinementMinAccuracy = 0.01
        # Ruler tags are small at 1080p (~20 px): allow markers down to ~1.5% of the image's long side.
        params.minMarkerPerimeterRate = 0.015
        # Read the bits from a finer grid, away from cell borders: small, slightly blurred tags decode reliably.
        params.perspectiveRemovePixelPerCell = 8
        params.perspectiveRemoveIgnoredMarginPerCell = 0.2
        if fast:
            # One adaptive-threshold window instead of three: ~2.5x faster, enough for the per-frame re-check
            # of markers already known to be there (the full detector is the fallback).
            params.adaptiveThreshWinSizeMin = 9
            params.adaptiveThreshWinSizeMax = 9
        det = cv2.aruco.ArucoDetector(cv2.aruco.getPredefinedDictionary(dictionary_id(dictionary)), params)
        cache[(dictionary, fast)] = det
    return det


def to_gray(frame: np.ndarray) -> np.ndarray:
    if frame is None or not isinstance(frame, np.ndarray) or frame.size == 0:
        raise InputError("empty or unreadable frame")
    if frame.ndim == 2:
        return frame
    if frame.ndim == 3 and frame.shape[2] == 3:
        return cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
    if frame.ndim == 3 and frame.shape[2] == 4:
        return cv2.cvtColor(frame, cv2.COLOR_BGRA2GRAY)
    raise InputError(f"frame has an unsupported shape {frame.shape}")


EDGE_HALF_WIDTH_PX = 3.0
EDGE_STEP_PX = 0.25


def refine_corners_by_edges(gray: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """Corners as intersections of lines fitted to the marker's four outer edges (4x2 in, 4x2 out).

    cornerSubPix settles a blurred convex corner ~0.2 px inside the true one (it is made for chessboard
    X-junctions); the steepest point across a straight blurred edge is unbiased, and the middle 60% of each
    edge gives dozens of such points. Returns the input unchanged if any edge cannot be measured.
    """
    c = np.asarray(corners, dtype=np.float64).reshape(4, 2)
    side = float(np.mean(np.linalg.norm(c - np.roll(c, -1, axis=0), axis=1)))
    if side < 8:
        return c
    # Stay within the black border cell and the white quiet zone (each ~1/6 of a small tag's side).
    half = float(np.clip(side / 12.0, 1.25, EDGE_HALF_WIDTH_PX))
    offs = np.arange(-half, half + 1e-9, EDGE_STEP_PX)
    # All four edges sampled in one remap: edge k runs from corner k to corner k+1.
    a, b = c, np.roll(c, -1, axis=0)
    length = np.linalg.norm(b - a, axis=1)
    t = (b - a) / length[:, None]
    n = np.stack([t[:, 1], -t[:, 0]], axis=1)  # outward for OpenCV's clockwise (image y down) corner order
    m = max(8, int(side * 0.6 / 1.5))
    s = np.linspace(0.2, 0.8, m)
    pts = a[:, None, :] + (s[None, :, None] * length[:, None, None]) * t[:, None, :]  # 4 x m x 2
    grid = pts[:, :, None, :] + offs[None, None, :, None] * n[:, None, None, :]  # 4 x m x k x 2
    prof = cv2.remap(gray, grid[..., 0].reshape(4 * m, -1).astype(np.float32),
                     grid[..., 1].reshape(4 * m, -1).astype(np.float32), cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_REPLICATE).astype(np.float64)
    # The edge is where the profile crosses halfway between the black border and the white quiet zone.
    third = max(2, prof.shape[1] // 3)
    # Extremes of each end rather than the last samples: print near the quiet zone's far side (a label) or a
    # white bit beside the border cell must not drag the levels.
    dark = prof[:, :third].min(axis=1)
    light = prof[:, -third:].max(axis=1)
    level = 0.5 * (dark + light)
    above = prof >= level[:, None]
    j = np.argmax(above, axis=1)  # first sample at or above half
    rows = np.arange(len(j))
    contrast = light - dark
    ok = (contrast > 30) & (j > 0) & above[rows, j] & ~above[rows, np.maximum(j - 1, 0)]
    p0, p1 = prof[rows, np.maximum(j - 1, 0)], prof[rows, j]
    frac = (level - p0) / np.maximum(p1 - p0, 1e-9)
    off = offs[np.maximum(j - 1, 0)] + frac * EDGE_STEP_PX
    edge_pts = pts.reshape(-1, 2) + off[:, None] * np.repeat(n, m, axis=0)
    lines = []
    for k in range(4):
        sel = ok[k * m:(k + 1) * m]
        if sel.sum() < 5:
            return c
        e = edge_pts[k * m:(k + 1) * m][sel]
        for _ in range(2):  # fit, then drop points far off the line (a smudge, a label) and refit
            centre = e.mean(axis=0)
            _, _, vt = np.linalg.svd(e - centre)
            dist = np.abs((e - centre) @ np.array([-vt[0][1], vt[0][0]]))
            keep = dist <= max(3.0 * np.median(dist), 0.15)
            if keep.all() or keep.sum() < 5:
                break
            e = e[keep]
        lines.append((centre, vt[0]))
    out = np.empty((4, 2))
    for k in range(4):
        (p1, d1), (p2, d2) = lines[k - 1], lines[k]  # corner k joins edge k-1 (into it) and edge k (out of it)
        m = np.array([d1, -d2]).T
        if abs(np.linalg.det(m)) < 1e-6:
            return c
        u = np.linalg.solve(m, p2 - p1)
        out[k] = p1 + u[0] * d1
    # Far beyond the black border cell, a neighbour's edge or glare took over: keep the detector's corners.
    if np.abs(out - c).max() > max(1.5, side / 10.0):
        return c
    return out


# A small tag (the ruler's 24 mm tags are 13-16 px across when the camera stands far), blurred, is often found as a
# quad whose bits the detector cannot read at that size: on the training families' tuning rooms, 43 of the 81 ruler
# tags it missed. Each such quad is read again from a crop upsampled REREAD_UPSAMPLE times (there: 95 -> 119 of 176
# tags read, none wrong, `benchmarks/bench_tags.py`; a whole frame upsampled 2x read 122 at four times the cost). A
# checked cloth gives dozens of such quads (its dark squares); a marker's quad holds black and white bits, so the
# quads of the widest spread of grey inside are read first, REREAD_MAX_QUADS at most (every ruler tag's quad was
# among the four widest there).
REREAD_MAX_SIDE_PX = 40.0
REREAD_UPSAMPLE = 3
REREAD_MAX_QUADS = 12


def _grey_spread(gray: np.ndarray, q: np.ndarray) -> float:
    """The standard deviation of the grey inside a quad (4x2 frame px)."""
    x, y, w, h = cv2.boundingRect(np.round(q).astype(np.int32))
    x0, y0 = max(0, x), max(0, y)
    window = gray[y0:y + h, x0:x + w]
    if window.size == 0:
        return 0.0
    mask = np.zeros(window.shape, np.uint8)
    cv2.fillConvexPoly(mask, np.round(q - (x0, y0)).astype(np.int32), 1)
    return float(window[mask > 0].std()) if mask.any() else 0.0


def _reread_small_quads(gray: np.ndarray, rejected, detector) -> list[tuple[int, np.ndarray]]:
    """(id, 4x2 corners in frame px) of the markers read from crops round the small quads the detector rejected."""
    h, w = gray.shape[:2]
    k = REREAD_UPSAMPLE
    quads = [np.asarray(quad, np.float64).reshape(4, 2) for quad in rejected]
    sides = [float(np.mean(np.linalg.norm(q - np.roll(q, -1, axis=0), axis=1))) for q in quads]
    small = sorted(((q, side) for q, side in zip(quads, sides) if side <= REREAD_MAX_SIDE_PX),
                   key=lambda qs: -_grey_spread(gray, qs[0]))[:REREAD_MAX_QUADS]
    out: list[tuple[int, np.ndarray]] = []
    for q, side in small:
        half = int(1.5 * side) + 4           # the quiet zone and the marker's border cell round the quad
        cx, cy = q.mean(axis=0)
        x0, y0 = max(0, int(cx) - half), max(0, int(cy) - half)
        x1, y1 = min(w, int(cx) + half + 1), min(h, int(cy) + half + 1)
        if x1 - x0 < 8 or y1 - y0 < 8:
            continue
        crop = cv2.resize(gray[y0:y1, x0:x1], None, fx=k, fy=k, interpolation=cv2.INTER_CUBIC)
        corners, found_ids, _ = detector.detectMarkers(crop)
        if found_ids is None:
            continue
        for c, i in zip(corners, found_ids.reshape(-1)):
            # pixel centres: crop px u is frame px (u + 0.5) / k - 0.5
            out.append((int(i), (np.asarray(c, np.float64).reshape(4, 2) + 0.5) / k - 0.5 + (x0, y0)))
    return out


def detect_markers(frame: np.ndarray, dictionary: str = "DICT_4X4_50",
                   ids: set[int] | frozenset[int] | None = None, fast: bool = False,
                   reread: bool = True) -> dict[int, DetectedMarker]:
    """Markers of `dictionary` in a BGR or grey frame, by id. A marker id seen twice is dropped (ambiguous).

    With `ids`, only those ids are kept (others are someone else's markers). `fast`: a single threshold scale
    (for re-checking known markers every frame; less robust to uneven light than the default), and small quads
    whose bits could not be read are not read again upsampled. `reread` False: not read again either (what that
    step buys is measured by `benchmarks/bench_tags.py`).
    """
    gray = to_gray(frame)
    detector = _detector(dictionary, fast)
    corners, found_ids, rejected = detector.detectMarkers(gray)
    sightings = [] if found_ids is None else [
        (int(i), np.asarray(c, dtype=np.float64).reshape(4, 2)) for c, i in zip(corners, found_ids.reshape(-1))]
    wanted = ids is None or bool(set(ids) - {i for i, _ in sightings})
    if reread and not fast and wanted and rejected is not None and len(rejected):
        for i, c in _reread_small_quads(gray, rejected, detector):
            # a crop may hold a marker already read whole; the same place is the same marker
            if not any(j == i and np.abs(c.mean(0) - d.mean(0)).max() < 2.0 for j, d in sightings):
                sightings.append((i, c))
    out: dict[int, DetectedMarker] = {}
    seen: dict[int, int] = {}
    for i, c in sightings:
        seen[i] = seen.get(i, 0) + 1
        if ids is not None and i not in ids:
            continue
        out[i] = DetectedMarker(i, refine_corners_by_edges(gray, c))
    for i, n in seen.items():
        if n > 1:
            out.pop(i, None)
    return out


def detect_markers_in_rois(frame: np.ndarray, rois: dict[int, tuple[int, int, int, int]],
                           dictionary: str = "DICT_4X4_50") -> dict[int, DetectedMarker]:
    """Look for each marker only inside its own region (x0, y0, x1, y1) of the frame: a marker already known to
    be there is re-found in a fraction of the full-frame cost. Markers not found in their region are absent."""
    if frame is None or not isinstance(frame, np.ndarray) or frame.ndim not in (2, 3):
        raise InputError("empty or unreadable frame")
    h, w = frame.shape[:2]
    out: dict[int, DetectedMarker] = {}
    for marker_id, (x0, y0, x1, y1) in rois.items():
        x0, y0, x1, y1 = max(0, int(x0)), max(0, int(y0)), min(w, int(x1)), min(h, int(y1))
        if x1 - x0 < 16 or y1 - y0 < 16:
            continue
        crop = to_gray(frame[y0:y1, x0:x1])  # only the regions are converted
        corners, found_ids, _ = _detector(dictionary, True).detectMarkers(crop)
        if found_ids is None:
            continue
        hits = [c for c, i in zip(corners, found_ids.reshape(-1)) if int(i) == marker_id]
        if len(hits) != 1:
            continue
        c = refine_corners_by_edges(crop, np.asarray(hits[0], dtype=np.float64).reshape(4, 2))
        out[marker_id] = DetectedMarker(marker_id, c + (x0, y0))
    return out
