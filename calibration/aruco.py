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


def detect_markers(frame: np.ndarray, dictionary: str = "DICT_4X4_50",
                   ids: set[int] | frozenset[int] | None = None, fast: bool = False) -> dict[int, DetectedMarker]:
    """Markers of `dictionary` in a BGR or grey frame, by id. A marker id seen twice is dropped (ambiguous).

    With `ids`, only those ids are kept (others are someone else's markers). `fast`: a single threshold scale
    (for re-checking known markers every frame; less robust to uneven light than the default).
    """
    gray = to_gray(frame)
    corners, found_ids, _ = _detector(dictionary, fast).detectMarkers(gray)
    out: dict[int, DetectedMarker] = {}
    if found_ids is None:
        return out
    seen: dict[int, int] = {}
    for c, i in zip(corners, found_ids.reshape(-1)):
        i = int(i)
        seen[i] = seen.get(i, 0) + 1
        if ids is not None and i not in ids:
            continue
        out[i] = DetectedMarker(i, np.asarray(c, dtype=np.float64).reshape(4, 2))
    for i, n in seen.items():
        if n > 1:
            out.pop(i, None)
    return out
