"""The Report (`tablesight.report/1`): what the rules say about one Scene.

Typed results that every consumer (CLI, web UI, melee book) reads; `to_json` writes the contract format of
`spec/interfaces.md` §2. Sections beyond the contract are added as new fields, never by renaming.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from tablesight.formats import REPORT, format_string

Point = tuple[float, float]


def round_mm(v: float, nd: int = 3) -> float:
    """A length or area as the JSON formats print it (three decimals)."""
    return round(float(v), nd)


@dataclass(frozen=True)
class Overlap:
    upper: str
    lower: str
    depth_mm: float  # how far the two disks interpenetrate: r1 + r2 - centre distance
    area_mm2: float

    def to_json(self) -> dict[str, Any]:
        return {"upper": self.upper, "lower": self.lower, "depth_mm": round_mm(self.depth_mm),
                "area_mm2": round_mm(self.area_mm2, 1)}


@dataclass(frozen=True)
class Pin:
    pinner: str
    pinned: str
    partial: bool = False
    enemy: bool = False  # owners known and different: this pin starts a fight

    def to_json(self) -> dict[str, Any]:
        return {"pinner": self.pinner, "pinned": self.pinned, "partial": self.partial, "enemy": self.enemy}


@dataclass(frozen=True)
class Engagement:
    id: str  # "E1", "E2", ... stable for the same scene
    attackers: tuple[str, ...]  # sorted by id
    defenders: tuple[str, ...]  # sorted by id

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "attackers": list(self.attackers), "defenders": list(self.defenders)}


@dataclass(frozen=True)
class Contest:
    engagements: tuple[str, ...]
    harried: tuple[str, ...] = ()
    players_call: bool = False  # top-down constraints contradict each other inside this contest

    def to_json(self) -> dict[str, Any]:
        return {"engagements": list(self.engagements), "harried": list(self.harried), "players_call": self.players_call}


@dataclass(frozen=True)
class MeleeOrder:
    must_precede: tuple[tuple[str, str], ...] = ()
    sequence: tuple[str, ...] = ()
    # top-down constraints that contradict each other (a cycle): left out of must_precede, the players' call
    contradicted: tuple[tuple[str, str], ...] = ()
    first_player: str | None = None  # chooses the order of the engagements the rules leave free

    def to_json(self) -> dict[str, Any]:
        return {"must_precede": [list(p) for p in self.must_precede], "sequence": list(self.sequence),
                "contradicted": [list(p) for p in self.contradicted], "first_player": self.first_player}


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    distance_mm: float  # edge to edge, 0 when they overlap or touch
    band: str  # short / medium / long / siege
    los: bool
    los_line_mm: tuple[Point, Point] | None
    wholly_band: str = "siege"  # band that wholly contains b seen from a (FAQ "wholly within")
    wholly_band_ba: str = "siege"  # the same seen from b
    # set only when line of sight is one way (setting elevated_sight="out_only"): the disk that sees the other
    los_one_way: str | None = None

    def sees(self, viewer: str) -> bool:
        """Does `viewer` (a or b) see the other disk?"""
        return self.los and (self.los_one_way is None or self.los_one_way == viewer)

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "distance_mm": round_mm(self.distance_mm),
            "band": self.band,
            "los": self.los,
            "los_line_mm": None if self.los_line_mm is None else [[round_mm(x), round_mm(y)]
                                                                  for x, y in self.los_line_mm],
            "wholly_band": self.wholly_band,
            "wholly_band_ba": self.wholly_band_ba,
            **({"los_one_way": self.los_one_way} if self.los_one_way is not None else {}),
        }


@dataclass(frozen=True)
class Borderline:
    kind: str  # "band", "overlap", "los", "deviation", "contest", ...
    a: str
    b: str | None
    margin_mm: float
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "a": self.a, "b": self.b, "margin_mm": round_mm(self.margin_mm)}
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class TerrainOverlap:
    disk: str
    terrain: str
    depth_mm: float  # how far the disk reaches into the piece

    def to_json(self) -> dict[str, Any]:
        return {"disk": self.disk, "terrain": self.terrain, "depth_mm": round_mm(self.depth_mm)}


@dataclass(frozen=True)
class DeviationCandidate:
    disk: str
    engaged: bool  # engaged with the target: always nearer than any disk that is not
    overlap_area_mm2: float  # area shared with the target (orders the engaged ones, larger first)
    distance_mm: float  # edge to edge from the target
    # measurement error that would swap this candidate with the next one (None: the rules fix the order)
    order_margin_mm: float | None = None
    # how far inside short range of the target (None for engaged disks, which always count)
    range_margin_mm: float | None = None
    centre_distance_mm: float | None = None  # centre to centre from the target

    def to_json(self) -> dict[str, Any]:
        return {"disk": self.disk, "engaged": self.engaged, "overlap_area_mm2": round_mm(self.overlap_area_mm2, 1),
                "distance_mm": round_mm(self.distance_mm),
                "centre_distance_mm": None if self.centre_distance_mm is None else round_mm(self.centre_distance_mm),
                "order_margin_mm": None if self.order_margin_mm is None else round_mm(self.order_margin_mm),
                "range_margin_mm": None if self.range_margin_mm is None else round_mm(self.range_margin_mm)}


@dataclass(frozen=True)
class Deviation:
    """Where deviation results against `target` go, nearest first (RB p.18-19)."""

    target: str
    candidates: tuple[DeviationCandidate, ...]

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "candidates": [c.to_json() for c in self.candidates]}


@dataclass(frozen=True)
class TerrainControl:
    terrain: str
    controller: str | None  # the player whose disks alone overlap the piece (RB p.19)
    players: tuple[str, ...]  # players with a disk overlapping it
    disks: tuple[str, ...]
    unknown_owner: tuple[str, ...] = ()  # overlapping disks whose owner is not known yet

    def to_json(self) -> dict[str, Any]:
        return {"terrain": self.terrain, "controller": self.controller, "players": list(self.players),
                "disks": list(self.disks), "unknown_owner": list(self.unknown_owner)}


@dataclass(frozen=True)
class SetupViolation:
    kind: str  # terrain_near_terrain, terrain_near_edge, terrain_outside, disk_outside_zone, ...
    subject: str  # the terrain or disk id
    other: str | None  # the other piece, edge name or zone player
    margin_mm: float  # how far the placement is from being legal
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "subject": self.subject, "other": self.other,
                               "margin_mm": round_mm(self.margin_mm)}
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class OffBattlefield:
    disk: str
    wholly: bool  # wholly outside the battlefield (else partly)
    margin_mm: float  # distance from the call flipping (wholly <-> partly, partly <-> inside)

    def to_json(self) -> dict[str, Any]:
        return {"disk": self.disk, "wholly": self.wholly, "margin_mm": round_mm(self.margin_mm)}


@dataclass(frozen=True)
class Report:
    overlaps: tuple[Overlap, ...] = ()
    pins: tuple[Pin, ...] = ()
    harried: tuple[str, ...] = ()
    engagements: tuple[Engagement, ...] = ()
    contests: tuple[Contest, ...] = ()
    melee_order: MeleeOrder = MeleeOrder()
    pairs: tuple[Pair, ...] = ()
    borderline: tuple[Borderline, ...] = ()
    # Sections beyond the contract's core.
    terrain_overlaps: tuple[TerrainOverlap, ...] = ()
    deviation: tuple[Deviation, ...] = ()
    terrain_control: tuple[TerrainControl, ...] = ()
    setup_violations: tuple[SetupViolation, ...] = ()
    off_battlefield: tuple[OffBattlefield, ...] = ()
    tolerance_mm: float = 1.0
    # every reading and tolerance the report was computed with (name -> value; docs/rules.md lists them)
    settings: Mapping[str, Any] = field(default_factory=dict)

    def engagement(self, engagement_id: str) -> Engagement:
        for e in self.engagements:
            if e.id == engagement_id:
                return e
        raise KeyError(engagement_id)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": format_string(REPORT),
            "overlaps": [o.to_json() for o in self.overlaps],
            "pins": [p.to_json() for p in self.pins],
            "harried": list(self.harried),
            "engagements": [e.to_json() for e in self.engagements],
            "contests": [c.to_json() for c in self.contests],
            "melee_order": self.melee_order.to_json(),
            "pairs": [p.to_json() for p in self.pairs],
            "borderline": [b.to_json() for b in self.borderline],
        }
        out["terrain_overlaps"] = [t.to_json() for t in self.terrain_overlaps]
        out["deviation"] = [d.to_json() for d in self.deviation]
        out["terrain_control"] = [t.to_json() for t in self.terrain_control]
        out["setup_violations"] = [v.to_json() for v in self.setup_violations]
        out["off_battlefield"] = [o.to_json() for o in self.off_battlefield]
        out["tolerance_mm"] = self.tolerance_mm
        out["settings"] = dict(self.settings)
        return out

    def pair(self, a: str, b: str) -> Pair:
        """The pair entry of two disks, in either order."""
        lo, hi = sorted((a, b))
        for p in self.pairs:
            if p.a == lo and p.b == hi:
                return p
        raise KeyError((a, b))
