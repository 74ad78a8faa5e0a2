"""How the companion reads the Diskwars rules where the rulebook leaves room: every such reading is a named,
validated setting whose docstring cites the rulebook (RB p.N) or the errata/FAQ (FAQ)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tablesight.errors import InputError


class SettingsError(InputError):
    """A DiskwarsSettings value out of its range."""


def _check(name: str, value: float, *, positive: bool = False, nonneg: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SettingsError(f"settings.{name}: expected a finite number, got {value!r}")
    if positive and value <= 0:
        raise SettingsError(f"settings.{name}: must be > 0, got {value!r}")
    if nonneg and value < 0:
        raise SettingsError(f"settings.{name}: must be >= 0, got {value!r}")


@dataclass(frozen=True)
class DiskwarsSettings:
    """Settings of the Diskwars rules layer (all lengths mm, areas mm²).

    tolerance_mm:
        The measurement error the players want to be warned about. Every call (band limit, overlap vs. touch,
        line of sight grazing terrain, deviation nearest-disk order) that an error of this size could flip is
        listed in the report's `borderline` section with its margin. FAQ (Ranged attacks, deviation): when the
        players cannot tell which disk is nearer they choose at random; the margin tells them when that is so.
    contact_tolerance_mm:
        Edge contact is not overlap (RB p.20, "pisar": a disk overlaps another if it covers any part of it;
        touching at the edges does not). Two shapes overlap only when they interpenetrate by MORE than this
        depth; a measured depth at or below it is read as touching. Default 0.5 mm, about what a camera's
        sub-pixel edge fit can tell apart.
    sandwich_area_tolerance_mm2:
        Partial sandwiches (RB p.4 stack example; FAQ, Pinning: "pins it if no other disk is between them").
        The rulebook only shows a full sandwich. Project reading: the top disk C pins the bottom disk A iff the
        region where C overlaps A is not entirely covered by disks lying between them in the stack; the region
        counts as covered when less than this area is left uncovered. Such a pin is flagged `partial`.
    equal_z_pins:
        RB p.4: "the disk on top pins the one below". Two overlapping disks with the SAME stacking order `z`
        cannot be told apart; when False (default) neither pins the other and the report lists a borderline
        `stacking` entry so the players say which is on top. When True, the disk with the larger id is read as
        the upper one (useful only for hand-written test scenes).
    terrain_setup_distance_inclusive:
        RB p.13: terrain is never placed "at short range or less" from another piece or a battlefield edge.
        True (default) reads "or less" literally: a distance equal to the short limit is a violation.
    unknown_owner_blocks_control:
        RB p.19: a player controls a piece when a disk of theirs overlaps it and no enemy disk does. A disk
        whose owner the camera does not know yet could be an enemy: True (default) says nobody controls a
        piece such a disk overlaps; False ignores such disks for control.
    """

    tolerance_mm: float = 1.0
    contact_tolerance_mm: float = 0.5
    sandwich_area_tolerance_mm2: float = 2.0
    equal_z_pins: bool = False
    terrain_setup_distance_inclusive: bool = True
    unknown_owner_blocks_control: bool = True

    def __post_init__(self) -> None:
        _check("tolerance_mm", self.tolerance_mm, nonneg=True)
        _check("contact_tolerance_mm", self.contact_tolerance_mm, nonneg=True)
        _check("sandwich_area_tolerance_mm2", self.sandwich_area_tolerance_mm2, nonneg=True)
        for name in ("equal_z_pins", "terrain_setup_distance_inclusive", "unknown_owner_blocks_control"):
            if not isinstance(getattr(self, name), bool):
                raise SettingsError(f"settings.{name}: expected true or false, got {getattr(self, name)!r}")
