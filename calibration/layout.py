"""Where the printed markers lie: the one definition the sheets, the renderer and the calibration all read.

Corner markers: four ArUco markers (ids 0-3) on square paper tiles of `tile_mm`, each tile's inner corner
touching a battlefield corner from outside, so the markers never lie under play. Marker 0 is at the top-left
corner (the table origin), then clockwise: 1 top-right, 2 bottom-right, 3 bottom-left. Each marker is printed
upright and laid upright, so its OpenCV corner order (top-left, top-right, bottom-right, bottom-left of the
printed marker) is the same order in table coordinates (x right, y down).

Ruler tags: small ArUco markers stuck on the 300 mm range ruler; their corners are given in the ruler's own
frame (u along the ruler from its start end, v across it), since the ruler lies anywhere on the table.
Tags 4 and 5 sit at the two ends. Optional band tags (ids 6, 7, `ruler_band_tags`) are centred on the ruler's
short/medium and medium/long band boundaries, so a ruler with its own band marks can be measured and offered as
the range bands; they are not part of `all_markers` (a table without them is complete).
"""

from __future__ import annotations

from dataclasses import dataclass, field

Point = tuple[float, float]

ARUCO_DICTIONARY = "DICT_4X4_50"


@dataclass(frozen=True)
class MarkerPlacement:
    id: int
    role: str  # "corner:top-left" ... or "ruler:start" / "ruler:end" / "ruler:band-short" ...
    frame: str  # "table" or "ruler"
    corners_mm: tuple[Point, Point, Point, Point]  # OpenCV order: TL, TR, BR, BL of the printed marker
    side_mm: float

    @property
    def center_mm(self) -> Point:
        xs = [c[0] for c in self.corners_mm]
        ys = [c[1] for c in self.corners_mm]
        return (sum(xs) / 4.0, sum(ys) / 4.0)

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "role": self.role,
            "frame": self.frame,
            "side_mm": self.side_mm,
            "corners_mm": [[round(x, 3), round(y, 3)] for x, y in self.corners_mm],
        }


def _square(x0: float, y0: float, side: float) -> tuple[Point, Point, Point, Point]:
    return ((x0, y0), (x0 + side, y0), (x0 + side, y0 + side), (x0, y0 + side))


@dataclass(frozen=True)
class MarkerLayout:
    """The marker layout for a battlefield of `width_mm` x `height_mm`.

    `marker_mm` is the black marker's side; `tile_mm` the paper tile around it (the white quiet zone the
    detector needs). The ruler is `ruler_length_mm` x `ruler_width_mm` with tags of `ruler_tag_mm`.
    """

    width_mm: float = 900.0
    height_mm: float = 900.0
    dictionary: str = ARUCO_DICTIONARY
    marker_mm: float = 60.0
    tile_mm: float = 80.0
    ruler_length_mm: float = 300.0
    ruler_width_mm: float = 30.0
    ruler_tag_mm: float = 24.0
    ruler_band_limits_mm: tuple[float, ...] = (100.0, 200.0, 300.0)
    corners: tuple[MarkerPlacement, ...] = field(init=False)
    ruler_tags: tuple[MarkerPlacement, ...] = field(init=False)
    ruler_band_tags: tuple[MarkerPlacement, ...] = field(init=False)

    def __post_init__(self) -> None:
        if self.width_mm <= 0 or self.height_mm <= 0:
            raise ValueError("battlefield size must be positive")
        if not 0 < self.marker_mm < self.tile_mm:
            raise ValueError("marker_mm must be positive and smaller than tile_mm")
        m = (self.tile_mm - self.marker_mm) / 2.0  # quiet-zone margin on the tile
        s, t, w, h = self.marker_mm, self.tile_mm, self.width_mm, self.height_mm
        corners = (
            MarkerPlacement(0, "corner:top-left", "table", _square(-t + m, -t + m, s), s),
            MarkerPlacement(1, "corner:top-right", "table", _square(w + m, -t + m, s), s),
            MarkerPlacement(2, "corner:bottom-right", "table", _square(w + m, h + m, s), s),
            MarkerPlacement(3, "corner:bottom-left", "table", _square(-t + m, h + m, s), s),
        )
        q = self.ruler_tag_mm
        v0 = (self.ruler_width_mm - q) / 2.0
        L = self.ruler_length_mm
        ruler = (
            MarkerPlacement(4, "ruler:start", "ruler", _square(v0, v0, q), q),
            MarkerPlacement(5, "ruler:end", "ruler", _square(L - v0 - q, v0, q), q),
        )
        band_roles = ("ruler:band-short", "ruler:band-medium")
        bands = tuple(
            MarkerPlacement(6 + i, band_roles[i], "ruler", _square(u - q / 2.0, v0, q), q)
            for i, u in enumerate(self.ruler_band_limits_mm[:-1][:2])
        )
        object.__setattr__(self, "corners", corners)
        object.__setattr__(self, "ruler_tags", ruler)
        object.__setattr__(self, "ruler_band_tags", bands)

    @property
    def all_markers(self) -> tuple[MarkerPlacement, ...]:
        return self.corners + self.ruler_tags

    @property
    def ruler_markers(self) -> tuple[MarkerPlacement, ...]:
        """Every tag the ruler may carry: the two end tags and the optional band tags."""
        return self.ruler_tags + self.ruler_band_tags

    @property
    def all_ids(self) -> frozenset[int]:
        return frozenset(m.id for m in self.corners + self.ruler_markers)

    def marker(self, marker_id: int) -> MarkerPlacement:
        for mk in self.corners + self.ruler_markers:
            if mk.id == marker_id:
                return mk
        raise KeyError(marker_id)

    def to_json(self) -> dict:
        return {
            "format": "tablesight.markers/1",
            "dictionary": self.dictionary,
            "battlefield": {"width_mm": self.width_mm, "height_mm": self.height_mm},
            "corner_markers": [m.to_json() for m in self.corners],
            "ruler": {
                "length_mm": self.ruler_length_mm,
                "width_mm": self.ruler_width_mm,
                "band_limits_mm": list(self.ruler_band_limits_mm),
                "frame": "u along the ruler from its start end, v across it, in mm",
            },
            "ruler_tags": [m.to_json() for m in self.ruler_tags],
            "ruler_band_tags": [m.to_json() for m in self.ruler_band_tags],
        }


def default_layout(width_mm: float = 900.0, height_mm: float = 900.0) -> MarkerLayout:
    return MarkerLayout(width_mm=width_mm, height_mm=height_mm)
