"""The range ruler as a metric check: find its tags anywhere on the table and measure it in table mm.

The corner markers fix the table frame on the assumption that the battlefield is the configured size (900 mm).
A 3 ft mat (914 mm) or markers laid on a mat of another size make every table mm slightly wrong; the ruler is a
known 300 mm object, so its measured length is a direct check of the metric scale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from calibration.aruco import DetectedMarker
from calibration.layout import MarkerLayout
from tablesight.errors import InputError


@dataclass(frozen=True)
class RulerCheck:
    """The ruler as measured in one frame, in table mm."""

    nominal_length_mm: float
    measured_length_mm: float
    scale_error: float  # measured / nominal - 1 (+0.01: the table frame reads 1% long)
    start_mm: tuple[float, float]  # the ruler's start end (tag 4's end), table mm
    end_mm: tuple[float, float]
    tag_side_mm: float  # mean measured side of the tags seen (printed size check)
    tags_seen: tuple[int, ...]
    band_limits_mm: tuple[float, ...] | None = None  # measured short/medium/long limits when band tags are seen

    @property
    def scale_error_percent(self) -> float:
        return 100.0 * self.scale_error

    def to_json(self) -> dict:
        return {
            "nominal_length_mm": self.nominal_length_mm,
            "measured_length_mm": round(self.measured_length_mm, 3),
            "scale_error_percent": round(self.scale_error_percent, 3),
            "start_mm": [round(v, 2) for v in self.start_mm],
            "end_mm": [round(v, 2) for v in self.end_mm],
            "tag_side_mm": round(self.tag_side_mm, 3),
            "tags_seen": list(self.tags_seen),
            "band_limits_mm": None if self.band_limits_mm is None else [round(v, 2) for v in self.band_limits_mm],
        }

    @classmethod
    def from_json(cls, doc: dict) -> "RulerCheck":
        try:
            nominal = float(doc["nominal_length_mm"])
            measured = float(doc["measured_length_mm"])
            bands = doc.get("band_limits_mm")
            return cls(nominal, measured, measured / nominal - 1.0, tuple(map(float, doc["start_mm"])),
                       tuple(map(float, doc["end_mm"])), float(doc["tag_side_mm"]),
                       tuple(int(i) for i in doc["tags_seen"]),
                       None if bands is None else tuple(float(b) for b in bands))
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
            raise InputError(f"ruler: malformed entry ({exc})") from None

    def range_bands_mm(self) -> dict[str, float] | None:
        """The measured band limits as a Scene `range_bands_mm` value (None without band tags)."""
        if self.band_limits_mm is None:
            return None
        return dict(zip(("short", "medium", "long"), (round(v, 1) for v in self.band_limits_mm)))


def measure_ruler(markers: Mapping[int, DetectedMarker], to_table: Callable[[np.ndarray], np.ndarray],
                  layout: MarkerLayout) -> RulerCheck | None:
    """Measure the ruler from detected markers; `to_table` maps raw frame px (Nx2) to table mm.

    None when either end tag is missing (the ruler is not on the table or a hand covers it).
    """
    start_tag, end_tag = layout.ruler_tags
    if start_tag.id not in markers or end_tag.id not in markers:
        return None
    seen = [t for t in layout.ruler_markers if t.id in markers]
    corners = {t.id: to_table(markers[t.id].corners_px) for t in seen}
    centers = {i: c.mean(axis=0) for i, c in corners.items()}
    c4, c5 = centers[start_tag.id], centers[end_tag.id]
    u4, u5 = start_tag.center_mm[0], end_tag.center_mm[0]
    dist = float(np.linalg.norm(c5 - c4))
    if dist <= 0:
        return None
    nominal = float(layout.ruler_length_mm)
    # The tags' centres sit at known u along the ruler, so their distance scales to the whole length.
    measured = nominal * dist / (u5 - u4)
    axis = (c5 - c4) / dist
    start = c4 - axis * u4 * (dist / (u5 - u4))
    end = start + axis * measured
    sides = [float(np.mean(np.linalg.norm(c - np.roll(c, -1, axis=0), axis=1))) for c in corners.values()]
    bands = None
    band_tags = [t for t in layout.ruler_band_tags if t.id in markers]
    if len(band_tags) == len(layout.ruler_band_tags) and band_tags:
        limits = [float(np.dot(centers[t.id] - start, axis)) for t in band_tags]
        bands = tuple(limits) + (measured,)
    return RulerCheck(nominal, measured, measured / nominal - 1.0, (float(start[0]), float(start[1])),
                      (float(end[0]), float(end[1])), float(np.mean(sides)), tuple(sorted(corners)), bands)


def measure_ruler_in_frame(frame_bgr: np.ndarray, calibration) -> RulerCheck | None:
    """Find the ruler tags in a frame and measure the ruler with a TableCalibration."""
    from calibration.aruco import detect_markers

    calibration.check_frame(frame_bgr)
    layout = calibration.layout
    found = detect_markers(frame_bgr, layout.dictionary, ids={t.id for t in layout.ruler_markers})
    return measure_ruler(found, calibration.image_to_table, layout)
