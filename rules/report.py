"""The Report (`tablesight.report/1`): what the rules say about one Scene.

Typed results that every consumer (CLI, web UI, melee book) reads; `to_json` writes the contract format of
`spec/interfaces.md` §2. Sections beyond the contract are added as new fields, never by renaming.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tablesight.formats import REPORT, format_string

Point = tuple[float, float]


def _r(v: float, nd: int = 3) -> float:
    return round(float(v), nd)


@dataclass(frozen=True)
class Overlap:
    upper: str
    lower: str
    depth_mm: float  # how far the two disks interpenetrate: r1 + r2 - centre distance
    area_mm2: float

    def to_json(self) -> dict[str, Any]:
        return {"upper": self.upper, "lower": self.lower, "depth_mm": _r(self.depth_mm), "area_mm2": _r(self.area_mm2, 1)}


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

    def to_json(self) -> dict[str, Any]:
        return {"must_precede": [list(p) for p in self.must_precede], "sequence": list(self.sequence)}


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

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "distance_mm": _r(self.distance_mm),
            "band": self.band,
            "los": self.los,
            "los_line_mm": None if self.los_line_mm is None else [[_r(x), _r(y)] for x, y in self.los_line_mm],
            "wholly_band": self.wholly_band,
            "wholly_band_ba": self.wholly_band_ba,
        }


@dataclass(frozen=True)
class Borderline:
    kind: str  # "band", "overlap", "los", "deviation", "contest", ...
    a: str
    b: str | None
    margin_mm: float
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "a": self.a, "b": self.b, "margin_mm": _r(self.margin_mm)}
        if self.note:
            out["note"] = self.note
        return out


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
    # Sections beyond the contract's core, JSON-ready (each built by its own typed rule function).
    sections: dict[str, Any] = field(default_factory=dict)

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
        out.update(self.sections)
        return out
