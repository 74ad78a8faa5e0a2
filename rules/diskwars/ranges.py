"""Range: edge-to-edge distance and bands (RB p.5, 11, 18; FAQ Range, "wholly within").

Range is measured from the surface of one disk to the surface of the other; the band is the section of the
ruler that first touches the target, limits inclusive ("igual o inferior", RB p.11). Every disk is within
range of itself. "Wholly within" (FAQ, Range) needs the whole target inside the band: its far side counts.
"""

from __future__ import annotations

import math

from tablesight.scene import Disk, RangeBands

BANDS = ("short", "medium", "long", "siege")


def edge_distance(a: Disk, b: Disk) -> float:
    """Edge-to-edge distance between two disks in mm; 0 when they touch or overlap, and from a disk to itself."""
    if a.id == b.id:
        return 0.0
    return max(0.0, math.hypot(a.x_mm - b.x_mm, a.y_mm - b.y_mm) - a.radius_mm - b.radius_mm)


def band_of(distance_mm: float, bands: RangeBands | None = None) -> str:
    """The first band whose cumulative limit is >= the distance (limits inclusive); beyond long: siege."""
    bands = bands or RangeBands()
    if distance_mm <= bands.short:
        return "short"
    if distance_mm <= bands.medium:
        return "medium"
    if distance_mm <= bands.long:
        return "long"
    return "siege"


def wholly_distance(a: Disk, b: Disk) -> float:
    """Distance from a's edge to the FAR side of b: what "wholly within" compares with a band limit."""
    if a.id == b.id:
        return 0.0
    return max(0.0, math.hypot(a.x_mm - b.x_mm, a.y_mm - b.y_mm) - a.radius_mm + b.radius_mm)


def wholly_within_band(a: Disk, b: Disk, bands: RangeBands | None = None) -> str:
    """The narrowest band that wholly contains disk b, measured from disk a (FAQ, Range: "wholly within")."""
    return band_of(wholly_distance(a, b), bands)


def in_range(a: Disk, b: Disk, band: str, bands: RangeBands | None = None, wholly: bool = False) -> bool:
    """Is b within `band` of a (or wholly within it)? Siege range holds everything."""
    if band not in BANDS:
        raise ValueError(f"band: must be one of {', '.join(BANDS)}, got {band!r}")
    got = wholly_within_band(a, b, bands) if wholly else band_of(edge_distance(a, b), bands)
    return BANDS.index(got) <= BANDS.index(band)


def band_margin(distance_mm: float, bands: RangeBands) -> float:
    """How far a distance is from the nearest band limit (a measurement error this large could flip it)."""
    return min(abs(distance_mm - lim) for lim in (bands.short, bands.medium, bands.long))
