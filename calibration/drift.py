"""Drift: notice a bumped camera while serving, and recalibrate from the corner markers when possible.

Every `interval_s` the monitor re-detects the corner markers in a frame handed to it and maps their corners
through the current calibration. If the camera has not moved, they land where they were at calibration time
(within ~0.2 mm). A moved camera shifts every visible marker consistently; a hand over a marker hides it (not
drift), and a single marker that shifted while the others did not was itself moved or is partly covered (not
drift either). A suspected camera move is confirmed on the next frame before anything is changed.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from calibration.aruco import detect_markers, detect_markers_in_rois
from calibration.table import TableCalibration, calibrate_table
from tablesight.errors import InputError

STATUSES = ("unchecked", "ok", "moved", "recalibrated", "stale")


@dataclass(frozen=True)
class DriftSettings:
    interval_s: float = 5.0  # how often a frame is checked
    shift_threshold_mm: float = 1.0  # a marker whose corners moved more than this (mean, table mm) has shifted
    confirm_checks: int = 2  # consecutive checks that must see the move before acting on it
    max_recalibration_residual_mm: float = 1.5  # a new calibration worse than this is not accepted

    def __post_init__(self) -> None:
        if not self.interval_s >= 0:
            raise ValueError("interval_s must be >= 0")
        if not self.shift_threshold_mm > 0:
            raise ValueError("shift_threshold_mm must be positive")
        if self.confirm_checks < 1:
            raise ValueError("confirm_checks must be at least 1")
        if not self.max_recalibration_residual_mm > 0:
            raise ValueError("max_recalibration_residual_mm must be positive")


@dataclass(frozen=True)
class DriftState:
    """What the page shows about the calibration's health."""

    status: str  # unchecked | ok | moved (suspected, being confirmed) | recalibrated | stale
    calibration_version: int  # increments with each automatic recalibration
    checks: int
    markers_seen: tuple[int, ...]
    marker_shift_mm: tuple[tuple[int, float], ...]  # (marker id, mean corner shift in table mm) for markers seen
    shift_mm: float | None  # median shift over the markers seen
    calibration_created: str
    last_check_age_s: float | None
    recalibrations: int
    message: str

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} is not one of {STATUSES}")

    def to_json(self) -> dict:
        return {"status": self.status, "calibration_version": self.calibration_version, "checks": self.checks,
                "markers_seen": list(self.markers_seen),
                "marker_shift_mm": {str(i): round(s, 3) for i, s in self.marker_shift_mm},
                "shift_mm": None if self.shift_mm is None else round(self.shift_mm, 3),
                "calibration_created": self.calibration_created,
                "last_check_age_s": None if self.last_check_age_s is None else round(self.last_check_age_s, 1),
                "recalibrations": self.recalibrations, "message": self.message}


def marker_regions(cal: TableCalibration, ref: dict[int, np.ndarray], pad: float = 0.75
                 ) -> dict[int, tuple[int, int, int, int]]:
    """Image regions around each marker: its tile grown by `pad` of the tile on every side (a camera knocked
    by a few millimetres still finds its markers there; a bigger move falls back to the whole frame)."""
    rois = {}
    for i, mm in ref.items():
        ctr = mm.mean(axis=0)
        half = 0.5 * cal.layout.tile_mm * (1 + 2 * pad)
        box = ctr + np.array([[-half, -half], [half, -half], [half, half], [-half, half]])
        px = cal.table_to_image(box)
        (x0, y0), (x1, y1) = np.floor(px.min(axis=0)), np.ceil(px.max(axis=0))
        rois[i] = (int(x0), int(y0), int(x1), int(y1))
    return rois


def reference_corners(cal: TableCalibration) -> dict[int, np.ndarray]:
    """Table mm of each marker's corners as seen at calibration time (fit residuals included)."""
    ref: dict[int, list] = {}
    for r in sorted(cal.residuals, key=lambda r: (r.marker_id, r.corner)):
        ref.setdefault(r.marker_id, []).append(r.image_px)
    return {i: cal.image_to_table(np.array(px)) for i, px in ref.items() if len(px) == 4}


class DriftMonitor:
    """Checks frames for a moved camera; thread-safe. `calibration` always holds the one to use now."""

    def __init__(self, calibration: TableCalibration, settings: DriftSettings | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 on_recalibrated: Callable[[TableCalibration], None] | None = None) -> None:
        self.settings = settings or DriftSettings()
        self._clock = clock
        self._on_recalibrated = on_recalibrated
        self._lock = threading.Lock()  # guards the fields below
        self._check_lock = threading.Lock()  # one check at a time
        self._cal = calibration
        self._ref = reference_corners(calibration)
        self._rois = marker_regions(calibration, self._ref)
        self._version = 0
        self._checks = 0
        self._recalibrations = 0
        self._pending = 0
        self._last_check: float | None = None
        self._state = self._make("unchecked", (), {}, "not checked yet")

    @property
    def calibration(self) -> TableCalibration:
        with self._lock:
            return self._cal

    def state(self) -> DriftState:
        with self._lock:
            age = None if self._last_check is None else max(0.0, self._clock() - self._last_check)
            return dataclasses.replace(self._state, last_check_age_s=age)

    def due(self) -> bool:
        with self._lock:
            if self._pending:  # a suspected move is confirmed on the very next frame
                return True
            return self._last_check is None or self._clock() - self._last_check >= self.settings.interval_s

    def offer(self, frame_bgr: np.ndarray) -> DriftState | None:
        """Hand over the newest frame; it is checked when a check is due. Returns the new state, or None."""
        if not self.due():
            return None
        return self.check(frame_bgr)

    # --- the check --------------------------------------------------------------------------------------------
    def check(self, frame_bgr: np.ndarray) -> DriftState:
        # Checks run one at a time; the detection runs outside the state lock, so readers of `calibration` and
        # `state()` (the pipeline, the page) never wait for it.
        with self._check_lock:
            with self._lock:
                self._checks += 1
                self._last_check = self._clock()
                before = self._version
            state = self._evaluate(frame_bgr)
            with self._lock:
                self._state = state
                new_cal = self._cal if self._version != before else None
        if new_cal is not None and self._on_recalibrated is not None:
            self._on_recalibrated(new_cal)
        return self.state()

    def _make(self, status: str, seen, shifts: dict[int, float], message: str) -> DriftState:
        vals = list(shifts.values())
        return DriftState(status, self._version, self._checks, tuple(sorted(seen)),
                          tuple(sorted(shifts.items())), float(np.median(vals)) if vals else None,
                          self._cal.created, None, self._recalibrations, message)

    def _evaluate(self, frame: np.ndarray) -> DriftState:
        cal = self._cal
        try:
            cal.check_frame(frame)
        except InputError as exc:
            self._pending = 0
            return self._make("stale", (), {}, str(exc))
        ids = set(self._ref)
        layout = cal.layout
        corner_ids = {m.id for m in layout.corners}
        found = detect_markers_in_rois(frame, self._rois, layout.dictionary)
        if len(set(found) & ids) < len(ids):
            # Not all where they were: look over the whole frame with the thorough detector before calling
            # them hidden (a moved camera puts them elsewhere).
            found = detect_markers(frame, layout.dictionary, ids=corner_ids)
        seen = sorted(set(found) & ids)
        shifts: dict[int, float] = {}
        for i in seen:
            now = cal.image_to_table(found[i].corners_px)
            shifts[i] = float(np.linalg.norm(now - self._ref[i], axis=1).mean())
        thr = self.settings.shift_threshold_mm
        moved = [i for i in seen if shifts[i] > thr]
        still = [i for i in seen if shifts[i] <= thr]
        hidden = sorted(ids - set(seen))
        hidden_note = f"; marker(s) {', '.join(map(str, hidden))} hidden (hands over the table?)" if hidden else ""
        if not seen:
            self._pending = 0
            prev = self._state.status if self._state.status in ("stale", "recalibrated") else "ok"
            return self._make(prev, (), {}, "no corner marker visible right now (hands over the table?); "
                                            "keeping the calibration")
        if not moved:
            self._pending = 0
            return self._make("ok", seen, shifts, f"markers where they were (median shift "
                                                  f"{np.median(list(shifts.values())):.2f} mm){hidden_note}")
        if still and len(moved) < 2:
            # Others agree with the calibration: that one marker moved or is partly covered; not the camera.
            self._pending = 0
            i = moved[0]
            return self._make("ok", seen, shifts, f"marker {i} is {shifts[i]:.1f} mm off while the others are in "
                                                  f"place: it was moved or is partly covered{hidden_note}")
        if still and len(moved) < 2 * len(still):
            self._pending = 0
            return self._make("stale", seen, shifts, "markers disagree (some shifted, some not): check the markers "
                                                     "lie flat and in place, then recalibrate")
        if len(seen) < 2:
            self._pending = 0
            return self._make("stale", seen, shifts, f"marker {seen[0]} shifted {shifts[seen[0]]:.1f} mm and it is "
                                                     "the only one visible: uncover the markers to recalibrate")
        # Every visible marker moved the same way: the camera moved.
        self._pending += 1
        if self._pending < self.settings.confirm_checks:
            return self._make("moved", seen, shifts, f"the camera seems to have moved "
                                                     f"({np.median(list(shifts.values())):.1f} mm); confirming")
        self._pending = 0
        return self._recalibrate(frame, found, seen, shifts)

    def _recalibrate(self, frame, found, seen, shifts) -> DriftState:
        old = self._cal
        fitted = dataclasses.replace(old.layout, width_mm=old.battlefield_mm[0], height_mm=old.battlefield_mm[1])
        try:
            new = calibrate_table(frame, old.intrinsics, fitted, use_ruler=False,
                                  markers={i: found[i] for i in found},
                                  rectified_px_per_mm=old.rectified_px_per_mm)
        except InputError as exc:
            return self._make("stale", seen, shifts, f"the camera moved and recalibration failed: {exc}")
        worst = new.residual_max_mm or 0.0
        if worst > self.settings.max_recalibration_residual_mm:
            return self._make("stale", seen, shifts, f"the camera moved; a new calibration fits poorly (residuals "
                                                     f"up to {worst:.1f} mm): recalibrate by hand")
        new = dataclasses.replace(new, layout=old.layout, scale_source=old.scale_source, ruler=old.ruler,
                                  battlefield_from_markers_mm=old.battlefield_from_markers_mm,
                                  rectified_origin_mm=old.rectified_origin_mm,
                                  disk_diameters_mm=old.disk_diameters_mm)
        ref = reference_corners(new)
        rois = marker_regions(new, ref)
        with self._lock:
            self._cal, self._ref, self._rois = new, ref, rois
            self._version += 1
            self._recalibrations += 1
        med = float(np.median(list(shifts.values())))
        return self._make("recalibrated", seen, shifts, f"the camera moved {med:.1f} mm; recalibrated from markers "
                                                        f"{', '.join(map(str, new.markers_used))} (residuals up to "
                                                        f"{worst:.2f} mm)")
