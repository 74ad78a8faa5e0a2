"""The Scene (`tablesight.scene/1`): what lies on the table at one moment.

Written by the vision pipeline, read by the rules layer, written by hand by users and tests. This module is the
one place that parses and validates it: every error names the offending field (`disks[3].radius_mm: ...`).
Lengths are millimetres on the table plane; origin at the battlefield's top-left corner, x right, y down.
Fields this version does not know are kept in `extra` and written back unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from tablesight.errors import InputError
from tablesight.formats import SCENE, check_format, format_string
from tablesight.limits import MAX_LENGTH_MM

SIZE_CLASSES = ("small", "medium", "large")
#: Classic Diskwars diameters; the real ones are measured at calibration (they are not published).
DEFAULT_DISK_DIAMETERS_MM = {"small": 44.0, "medium": 64.0, "large": 89.0}
TERRAIN_KEYWORDS = ("blocks_los", "cover", "defensive", "rough", "fortified", "dangerous", "elevated")
TOKEN_KINDS = ("activation", "damage", "wound", "power")
STAT_NAMES = ("move", "attack", "counter", "toughness", "vigor")


class SceneError(InputError):
    """A scene document that does not follow `tablesight.scene/1`."""


# ---------------------------------------------------------------------------------------------------------------
# Small field validators. Each raises SceneError naming the path of the field.


def _num(value: Any, path: str, *, positive: bool = False, nonneg: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SceneError(f"{path}: expected a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise SceneError(f"{path}: must be finite, got {value!r}")
    if abs(v) > MAX_LENGTH_MM:  # beyond it the geometry's squares overflow (numpy warnings, nonsense calls)
        raise SceneError(f"{path}: must be within ±{MAX_LENGTH_MM:,.0f} mm, got {value!r}")
    if positive and v <= 0:
        raise SceneError(f"{path}: must be > 0, got {value!r}")
    if nonneg and v < 0:
        raise SceneError(f"{path}: must be >= 0, got {value!r}")
    return v


def _int(value: Any, path: str, *, nonneg: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise SceneError(f"{path}: expected a whole number, got {value!r}")
    if nonneg and value < 0:
        raise SceneError(f"{path}: must be >= 0, got {value!r}")
    return value


def _str(value: Any, path: str, *, allow_none: bool = False) -> str | None:
    if value is None and allow_none:
        return None
    if not isinstance(value, str) or not value.strip():
        raise SceneError(f"{path}: expected a non-empty string, got {value!r}")
    return value


def _list(value: Any, path: str) -> list:
    if not isinstance(value, list):
        raise SceneError(f"{path}: expected a list, got {type(value).__name__}")
    return value


def _obj(value: Any, path: str) -> dict:
    if not isinstance(value, dict):
        raise SceneError(f"{path}: expected an object, got {type(value).__name__}")
    return value


def _keywords(value: Any, path: str) -> tuple[str, ...]:
    out = []
    for i, kw in enumerate(_list(value, path)):
        kw = _str(kw, f"{path}[{i}]")
        out.append(kw.strip().lower())
    return tuple(out)


def _point(value: Any, path: str) -> tuple[float, float]:
    pt = _list(value, path)
    if len(pt) != 2:
        raise SceneError(f"{path}: expected [x, y], got {value!r}")
    return (_num(pt[0], f"{path}[0]"), _num(pt[1], f"{path}[1]"))


def _polygon(value: Any, path: str) -> tuple[tuple[float, float], ...]:
    pts = tuple(_point(p, f"{path}[{i}]") for i, p in enumerate(_list(value, path)))
    if len(pts) >= 2 and pts[0] == pts[-1]:
        pts = pts[:-1]  # a closed ring written with its first point repeated
    if len(pts) < 3:
        raise SceneError(f"{path}: a polygon needs at least 3 distinct points, got {len(pts)}")
    # Imported here so that reading a scene without terrain never needs shapely.
    from shapely.geometry import Polygon
    from shapely.validation import explain_validity

    poly = Polygon(pts)
    if not poly.is_valid:
        raise SceneError(f"{path}: invalid polygon ({explain_validity(poly)})")
    if poly.area <= 0:
        raise SceneError(f"{path}: polygon has no area")
    return pts


def _extra(doc: Mapping[str, Any], known: Iterable[str]) -> dict[str, Any]:
    known = set(known)
    return {k: v for k, v in doc.items() if k not in known}


# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Battlefield:
    width_mm: float = 900.0
    height_mm: float = 900.0

    def __post_init__(self) -> None:
        _num(self.width_mm, "battlefield.width_mm", positive=True)
        _num(self.height_mm, "battlefield.height_mm", positive=True)


@dataclass(frozen=True)
class RangeBands:
    """Cumulative band limits from a disk's edge (RB p.5); beyond `long` is siege."""

    short: float = 100.0
    medium: float = 200.0
    long: float = 300.0

    def __post_init__(self) -> None:
        for name in ("short", "medium", "long"):
            _num(getattr(self, name), f"range_bands_mm.{name}", positive=True)
        if not (self.short < self.medium < self.long):
            raise SceneError(
                f"range_bands_mm: limits must grow short < medium < long, got {self.short}, {self.medium}, {self.long}"
            )

    def as_dict(self) -> dict[str, float]:
        return {"short": self.short, "medium": self.medium, "long": self.long}


@dataclass(frozen=True)
class Player:
    id: str
    initiative: int

    def __post_init__(self) -> None:
        _str(self.id, "players[].id")
        _int(self.initiative, f"players[{self.id}].initiative")


@dataclass(frozen=True)
class Tokens:
    activation: int = 0
    damage: int = 0
    wound: int = 0
    power: int = 0

    def __post_init__(self) -> None:
        for k in TOKEN_KINDS:
            _int(getattr(self, k), f"tokens.{k}", nonneg=True)

    def as_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in TOKEN_KINDS}


@dataclass(frozen=True)
class Stats:
    """A disk's printed numbers; `None` means unknown (never guessed)."""

    move: int | None = None
    attack: int | None = None
    counter: int | None = None
    toughness: int | None = None
    vigor: int | None = None

    def __post_init__(self) -> None:
        for k in STAT_NAMES:
            v = getattr(self, k)
            if v is not None:
                _int(v, f"stats.{k}", nonneg=True)

    def as_dict(self) -> dict[str, int | None]:
        return {k: getattr(self, k) for k in STAT_NAMES if getattr(self, k) is not None}


@dataclass(frozen=True)
class Disk:
    id: str
    x_mm: float
    y_mm: float
    radius_mm: float
    z: int = 0
    player: str | None = None
    size: str | None = None
    unit: str | None = None
    confidence: float | None = None
    tokens: Tokens | None = None
    keywords: tuple[str, ...] = ()
    stats: Stats | None = None
    melee_target: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        p = f"disk {self.id!r}"
        _str(self.id, "disks[].id")
        _num(self.x_mm, f"{p}.x_mm")
        _num(self.y_mm, f"{p}.y_mm")
        _num(self.radius_mm, f"{p}.radius_mm", positive=True)
        _int(self.z, f"{p}.z")
        if self.size is not None and self.size not in SIZE_CLASSES:
            raise SceneError(f"{p}.size: must be one of {', '.join(SIZE_CLASSES)}, got {self.size!r}")
        if self.confidence is not None:
            c = _num(self.confidence, f"{p}.confidence")
            if not 0.0 <= c <= 1.0:
                raise SceneError(f"{p}.confidence: must be within 0..1, got {self.confidence!r}")

    @property
    def center(self) -> tuple[float, float]:
        return (self.x_mm, self.y_mm)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "player": self.player,
            "x_mm": round(float(self.x_mm), 3),
            "y_mm": round(float(self.y_mm), 3),
            "radius_mm": round(float(self.radius_mm), 3),
            "z": self.z,
        }
        if self.size is not None:
            out["size"] = self.size
        if self.unit is not None:
            out["unit"] = self.unit
        if self.confidence is not None:
            out["confidence"] = round(float(self.confidence), 4)
        if self.tokens is not None:
            out["tokens"] = self.tokens.as_dict()
        if self.keywords:
            out["keywords"] = list(self.keywords)
        if self.stats is not None:
            out["stats"] = self.stats.as_dict()
        if self.melee_target is not None:
            out["melee_target"] = self.melee_target
        out.update(self.extra)
        return out


@dataclass(frozen=True)
class Terrain:
    id: str
    polygon_mm: tuple[tuple[float, float], ...]
    name: str = ""
    keywords: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        _str(self.id, "terrain[].id")
        for kw in self.keywords:
            base = kw.split(":", 1)[0]
            if base not in TERRAIN_KEYWORDS:
                raise SceneError(
                    f"terrain {self.id!r}.keywords: unknown keyword {kw!r} (known: {', '.join(TERRAIN_KEYWORDS)})"
                )

    def has(self, keyword: str) -> bool:
        return keyword in self.keywords

    def to_json(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "name": self.name,
            "polygon_mm": [[round(x, 3), round(y, 3)] for x, y in self.polygon_mm],
            "keywords": list(self.keywords),
        }
        out.update(self.extra)
        return out


@dataclass(frozen=True)
class DeploymentZone:
    """Optional: a player's deployment zone as a polygon (RB p.12-13), for setup checks."""

    player: str
    polygon_mm: tuple[tuple[float, float], ...]

    def to_json(self) -> dict[str, Any]:
        return {"player": self.player, "polygon_mm": [[x, y] for x, y in self.polygon_mm]}


@dataclass(frozen=True)
class Scene:
    disks: tuple[Disk, ...] = ()
    players: tuple[Player, ...] = ()
    terrain: tuple[Terrain, ...] = ()
    battlefield: Battlefield = Battlefield()
    range_bands: RangeBands = RangeBands()
    deployment_zones: tuple[DeploymentZone, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        _check_unique((p.id for p in self.players), "players")
        _check_unique((d.id for d in self.disks), "disks")
        _check_unique((t.id for t in self.terrain), "terrain")
        known = {p.id for p in self.players}
        for d in self.disks:
            if d.player is not None and d.player not in known:
                raise SceneError(f"disk {d.id!r}.player: unknown player {d.player!r} (players: {sorted(known)})")
        for i, z in enumerate(self.deployment_zones):
            if z.player not in known:
                raise SceneError(f"deployment_zones[{i}].player: unknown player {z.player!r}")

    # Lookups --------------------------------------------------------------------------------------------------
    def disk(self, disk_id: str) -> Disk:
        for d in self.disks:
            if d.id == disk_id:
                return d
        raise KeyError(disk_id)

    def player(self, player_id: str) -> Player:
        for p in self.players:
            if p.id == player_id:
                return p
        raise KeyError(player_id)

    def with_disks(self, disks: Iterable[Disk]) -> "Scene":
        return replace(self, disks=tuple(disks))

    # JSON -----------------------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": format_string(SCENE),
            "battlefield": {"width_mm": self.battlefield.width_mm, "height_mm": self.battlefield.height_mm},
            "range_bands_mm": self.range_bands.as_dict(),
            "players": [{"id": p.id, "initiative": p.initiative} for p in self.players],
            "disks": [d.to_json() for d in self.disks],
            "terrain": [t.to_json() for t in self.terrain],
        }
        if self.deployment_zones:
            out["deployment_zones"] = [z.to_json() for z in self.deployment_zones]
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, doc: Any) -> "Scene":
        """Parse and validate a scene document; raise SceneError naming the first bad field."""
        check_format(doc, SCENE, what="scene")
        try:
            return _parse_scene(doc)
        except SceneError:
            raise
        except (TypeError, ValueError) as exc:  # a dataclass check phrased by Python itself
            raise SceneError(f"scene: {exc}") from None


def _check_unique(ids: Iterable[str], what: str) -> None:
    seen: set[str] = set()
    for i in ids:
        if i in seen:
            raise SceneError(f"{what}: duplicate id {i!r}")
        seen.add(i)


_DISK_FIELDS = ("id", "player", "x_mm", "y_mm", "radius_mm", "z", "size", "unit", "confidence", "tokens",
                "keywords", "stats", "melee_target")


def _parse_disk(d: Any, i: int) -> Disk:
    p = f"disks[{i}]"
    d = _obj(d, p)
    for req in ("id", "x_mm", "y_mm", "radius_mm"):
        if req not in d:
            raise SceneError(f"{p}.{req}: missing")
    tokens = None
    if d.get("tokens") is not None:
        t = _obj(d["tokens"], f"{p}.tokens")
        unknown = set(t) - set(TOKEN_KINDS)
        if unknown:
            raise SceneError(f"{p}.tokens: unknown token kind(s) {sorted(unknown)} (known: {', '.join(TOKEN_KINDS)})")
        tokens = Tokens(**{k: _int(v, f"{p}.tokens.{k}", nonneg=True) for k, v in t.items()})
    stats = None
    if d.get("stats") is not None:
        s = _obj(d["stats"], f"{p}.stats")
        unknown = set(s) - set(STAT_NAMES)
        if unknown:
            raise SceneError(f"{p}.stats: unknown stat(s) {sorted(unknown)} (known: {', '.join(STAT_NAMES)})")
        stats = Stats(**{k: (None if v is None else _int(v, f"{p}.stats.{k}", nonneg=True)) for k, v in s.items()})
    size = d.get("size")
    if size is not None and size not in SIZE_CLASSES:
        raise SceneError(f"{p}.size: must be one of {', '.join(SIZE_CLASSES)}, got {size!r}")
    conf = d.get("confidence")
    if conf is not None:
        conf = _num(conf, f"{p}.confidence")
        if not 0.0 <= conf <= 1.0:
            raise SceneError(f"{p}.confidence: must be within 0..1, got {conf!r}")
    return Disk(
        id=_str(d["id"], f"{p}.id"),
        player=_str(d.get("player"), f"{p}.player", allow_none=True),
        x_mm=_num(d["x_mm"], f"{p}.x_mm"),
        y_mm=_num(d["y_mm"], f"{p}.y_mm"),
        radius_mm=_num(d["radius_mm"], f"{p}.radius_mm", positive=True),
        z=_int(d.get("z", 0), f"{p}.z"),
        size=size,
        unit=_str(d.get("unit"), f"{p}.unit", allow_none=True),
        confidence=conf,
        tokens=tokens,
        keywords=_keywords(d.get("keywords", []), f"{p}.keywords"),
        stats=stats,
        melee_target=_str(d.get("melee_target"), f"{p}.melee_target", allow_none=True),
        extra=_extra(d, _DISK_FIELDS),
    )


def _parse_terrain(t: Any, i: int) -> Terrain:
    p = f"terrain[{i}]"
    t = _obj(t, p)
    if "id" not in t:
        raise SceneError(f"{p}.id: missing")
    if "polygon_mm" not in t:
        raise SceneError(f"{p}.polygon_mm: missing")
    kws = _keywords(t.get("keywords", []), f"{p}.keywords")
    for j, kw in enumerate(kws):
        if kw.split(":", 1)[0] not in TERRAIN_KEYWORDS:
            raise SceneError(f"{p}.keywords[{j}]: unknown terrain keyword {kw!r} (known: {', '.join(TERRAIN_KEYWORDS)})")
    name = t.get("name", "")
    if not isinstance(name, str):
        raise SceneError(f"{p}.name: expected a string, got {name!r}")
    return Terrain(
        id=_str(t["id"], f"{p}.id"),
        name=name,
        polygon_mm=_polygon(t["polygon_mm"], f"{p}.polygon_mm"),
        keywords=kws,
        extra=_extra(t, ("id", "name", "polygon_mm", "keywords")),
    )


def _parse_scene(doc: dict) -> Scene:
    from tablesight.limits import MAX_DISKS, MAX_POLYGON_POINTS, MAX_TERRAIN

    for name, most in (("disks", MAX_DISKS), ("terrain", MAX_TERRAIN), ("deployment_zones", MAX_TERRAIN)):
        if isinstance(doc.get(name), list) and len(doc[name]) > most:
            raise SceneError(f"{name}: {len(doc[name])} entries; a scene holds at most {most} (a full table holds a "
                             f"few hundred disks at most)")
    for name in ("terrain", "deployment_zones"):
        for i, t in enumerate(doc.get(name) or []):
            if isinstance(t, dict) and isinstance(t.get("polygon_mm"), list) and len(t["polygon_mm"]) > MAX_POLYGON_POINTS:
                raise SceneError(f"{name}[{i}].polygon_mm: {len(t['polygon_mm'])} points; at most {MAX_POLYGON_POINTS}")
    bf = Battlefield()
    if doc.get("battlefield") is not None:
        b = _obj(doc["battlefield"], "battlefield")
        bf = Battlefield(
            width_mm=_num(b.get("width_mm", 900.0), "battlefield.width_mm", positive=True),
            height_mm=_num(b.get("height_mm", 900.0), "battlefield.height_mm", positive=True),
        )
    bands = RangeBands()
    if doc.get("range_bands_mm") is not None:
        r = _obj(doc["range_bands_mm"], "range_bands_mm")
        bands = RangeBands(**{k: _num(r.get(k, getattr(bands, k)), f"range_bands_mm.{k}", positive=True)
                              for k in ("short", "medium", "long")})
    players = []
    for i, pl in enumerate(_list(doc.get("players", []), "players")):
        pl = _obj(pl, f"players[{i}]")
        if "id" not in pl:
            raise SceneError(f"players[{i}].id: missing")
        players.append(Player(id=_str(pl["id"], f"players[{i}].id"),
                              initiative=_int(pl.get("initiative", i + 1), f"players[{i}].initiative")))
    disks = [_parse_disk(d, i) for i, d in enumerate(_list(doc.get("disks", []), "disks"))]
    terrain = [_parse_terrain(t, i) for i, t in enumerate(_list(doc.get("terrain", []), "terrain"))]
    zones = []
    for i, z in enumerate(_list(doc.get("deployment_zones", []), "deployment_zones")):
        z = _obj(z, f"deployment_zones[{i}]")
        zones.append(DeploymentZone(player=_str(z.get("player"), f"deployment_zones[{i}].player"),
                                    polygon_mm=_polygon(z.get("polygon_mm"), f"deployment_zones[{i}].polygon_mm")))
    return Scene(
        disks=tuple(disks),
        players=tuple(players),
        terrain=tuple(terrain),
        battlefield=bf,
        range_bands=bands,
        deployment_zones=tuple(zones),
        extra=_extra(doc, ("format", "battlefield", "range_bands_mm", "players", "disks", "terrain",
                           "deployment_zones")),
    )


def load_scene(path) -> Scene:
    """Read and validate a scene file (the one way the CLI and the web UI read scenes from disk)."""
    from tablesight.formats import load_json_file

    return Scene.from_json(load_json_file(path, what="scene"))
