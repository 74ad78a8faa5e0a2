"""Ranged attacks (`tablesight.ranged/1`): may this disk shoot, whom, at what range, in cover or not, and where
its deviation results go.

RB p.8 (activation: a disk that is pinned or already activated cannot be activated; "Efectuar un ataque a
distancia"), p.11 (range from surface to surface, limits inclusive; hits ignored at siege range), p.13 and p.20
(a target needs line of sight), p.18 ("Combate a distancia": a disk may shoot a disk it pins and an ally, never
itself), p.18-19 (deviation), p.21 (Immune to X cannot be targeted by X), p.22 (Cover); FAQ (Cover never stacks;
a deviation is resolved as if the disk were at the target's range, even beyond the attack's maximum range; a
disk cannot target itself).

Pure and deterministic: `ranged_attack(scene, shooter, ...)` reads the rules report of the same scene (pins,
pairs, terrain overlaps, deviation candidates: everything measured once there) and the shooter's unit from the
catalog. Unknown numbers are never guessed: without the unit's ranged attack the maximum range and the dice are
`null` and every band is listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from tablesight.errors import InputError
from tablesight.formats import RANGED, format_string
from tablesight.scene import Scene

from rules.diskwars.catalog import Catalog, RangedAttack
from rules.diskwars.ranges import BANDS
from rules.diskwars.settings import DiskwarsSettings
from rules.diskwars.units import keywords_of, unit_of
from rules.report import Borderline, Report, round_mm

#: Keyword arguments that name ranged attacks for Immune/Resistant (RB p.21: "X puede ser ... ß").
RANGED_KINDS = ("ranged",)



@dataclass(frozen=True)
class ShotTarget:
    target: str
    band: str
    distance_mm: float  # edge to edge (RB p.11)
    los: bool
    cover: bool  # the target overlaps a Cover piece (RB p.22)
    dice_modifier: int  # -1 in cover (never below one die), else 0
    only_criticals: bool  # siege band: hits are ignored (RB p.11), deviation rerolls too (FAQ)
    deviation: tuple[str, ...]  # where deviation results go, in order (RB p.18-19)
    dice: int | None = None  # the shooter's dice after cover (None: unknown)
    cover_terrain: tuple[str, ...] = ()
    relation: str = "unknown"  # enemy / ally / unknown (owners)
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "band": self.band, "distance_mm": round_mm(self.distance_mm), "los": self.los,
                "cover": self.cover, "dice_modifier": self.dice_modifier, "only_criticals": self.only_criticals,
                "deviation": list(self.deviation), "dice": self.dice, "cover_terrain": list(self.cover_terrain),
                "relation": self.relation, "notes": list(self.notes)}


@dataclass(frozen=True)
class NotTarget:
    disk: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"disk": self.disk, "reason": self.reason}


@dataclass(frozen=True)
class RangedResult:
    shooter: str
    can_shoot: bool
    why_not: str | None
    targets: tuple[ShotTarget, ...]
    not_targets: tuple[NotTarget, ...]
    borderline: tuple[Borderline, ...]
    attack: RangedAttack | None = None  # the shooter's ranged attack from the catalog (None: not known)
    unit: str | None = None
    settings: dict[str, Any] | None = None

    def target(self, disk: str) -> ShotTarget:
        for t in self.targets:
            if t.target == disk:
                return t
        raise KeyError(disk)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": format_string(RANGED),
            "shooter": self.shooter,
            "can_shoot": self.can_shoot,
            "why_not": self.why_not,
            "targets": [t.to_json() for t in self.targets],
            "not_targets": [n.to_json() for n in self.not_targets],
            "borderline": [b.to_json() for b in self.borderline],
            "unit": self.unit,
            "attack": None if self.attack is None else self.attack.to_json(),
            "settings": dict(self.settings or {}),
        }


def _relation(scene: Scene, a: str, b: str) -> str:
    pa, pb = scene.disk(a).player, scene.disk(b).player
    if pa is None or pb is None:
        return "unknown"
    return "ally" if pa == pb else "enemy"


def ranged_attack(scene: Scene, shooter: str, *, catalog: Catalog | None = None,
                  settings: DiskwarsSettings | None = None, report: Report | None = None,
                  activated: Iterable[str] = ()) -> RangedResult:
    """What a ranged attack by `shooter` may do now. `report`: the rules report of this scene with these settings
    (built when not given). `activated`: disks the game book knows to be activated, beside the scene's
    activation tokens. Raises InputError for a shooter not in the scene or a unit the catalog does not know."""
    settings = settings or DiskwarsSettings()
    ids = {d.id for d in scene.disks}
    if shooter not in ids:
        raise InputError(f"shooter: no disk {shooter!r} in the scene (disks: {', '.join(sorted(ids)) or 'none'})")
    if report is None:
        from rules.diskwars.report import build_report

        report = build_report(scene, settings)
    disk = scene.disk(shooter)
    unit = unit_of(disk, catalog, "shooter")
    attack = unit.ranged if unit is not None else None

    why: list[str] = []
    pinners = sorted(p.pinner for p in report.pins if p.pinned == shooter)
    if pinners:
        why.append(f"pinned by {', '.join(pinners)}: a pinned disk cannot be activated (RB p.8)")
    if (disk.tokens is not None and disk.tokens.activation > 0) or shooter in set(activated):
        why.append("already activated: it carries an activation token (RB p.8)")
    if unit is not None and unit.ranged is None:
        why.append(f"its unit ({unit.name}) has no ranged attack (RB p.8, 11)")
    can_shoot = not why
    border = _shooter_borderline(scene, report, shooter)
    if not can_shoot:
        return RangedResult(shooter, False, "; ".join(why), (), (), tuple(border), attack,
                            None if unit is None else unit.key, settings.to_json())

    max_band = attack.max_range if attack is not None else None
    dice = attack.dice if attack is not None else None
    damage_kind = attack.damage if attack is not None else None
    cover_ids = {t.id for t in scene.terrain if t.has("cover")}
    on_cover: dict[str, list[str]] = {}
    for o in report.terrain_overlaps:
        if o.terrain in cover_ids:
            on_cover.setdefault(o.disk, []).append(o.terrain)
    deviation = {d.target: d for d in report.deviation}
    tol = settings.tolerance_mm
    pair_border: dict[frozenset, list[Borderline]] = {}
    for b in report.borderline:
        if b.b is not None:
            pair_border.setdefault(frozenset((b.a, b.b)), []).append(b)

    targets: list[ShotTarget] = []
    not_targets: list[NotTarget] = [NotTarget(shooter, "itself: a disk cannot shoot itself (RB p.18; FAQ)")]
    for other in sorted(ids - {shooter}):
        pair = report.pair(shooter, other)
        sees = pair.sees(shooter)
        o_disk = scene.disk(other)
        o_unit = catalog.unit(o_disk.unit) if (catalog is not None and o_disk.unit) else None
        o_kw = keywords_of(o_disk, o_unit)
        reasons = []
        if not sees:
            reasons.append("no line of sight" if not pair.los else
                           "no line of sight: only the target sees past the terrain (elevated_sight=out_only)")
        if max_band is not None and BANDS.index(pair.band) > BANDS.index(max_band):
            reasons.append(f"beyond its maximum range ({max_band}): at {pair.band} range")
        immune = [kind for kind in RANGED_KINDS if f"immune:{kind}" in o_kw]
        if immune:
            reasons.append("Immune to ranged attacks: cannot be targeted by them (RB p.21)")
        for b in pair_border.get(frozenset((shooter, other)), []):
            if b.kind in ("band", "los"):
                border.append(Borderline(b.kind, shooter, other, b.margin_mm, b.note))
        if reasons:
            not_targets.append(NotTarget(other, "; ".join(reasons)))
            continue
        cover_on = tuple(sorted(on_cover.get(other, ())))
        cover = bool(cover_on)
        siege = pair.band == "siege"
        notes = []
        if cover:
            notes.append("in cover: one battle die fewer, never fewer than one; Cover never stacks; not for "
                         "deviation rerolls (RB p.22; FAQ)")
        if siege:
            notes.append("siege range: hits are ignored, only critical hits count — deviation rerolls too, "
                         "resolved at the original range (RB p.11; FAQ)")
        if damage_kind is not None and f"immune:{damage_kind}" in o_kw:
            notes.append(f"Immune to {damage_kind} damage: no damage, but a critical hit still activates it (FAQ)")
        if (damage_kind is not None and f"resistant:{damage_kind}" in o_kw) or "resistant:ranged" in o_kw:
            notes.append("Resistant: half damage, rounded up (RB p.21)")
        cands = deviation[other].candidates if other in deviation else ()
        dev = tuple(c.disk for c in cands)
        for a, b in zip(cands, cands[1:]):
            if a.order_margin_mm is not None and a.order_margin_mm <= tol:
                border.append(Borderline("deviation", a.disk, b.disk, a.order_margin_mm,
                                         f"nearer to {other}: too close to call"))
        for c in cands:
            if c.range_margin_mm is not None and c.range_margin_mm <= tol:
                border.append(Borderline("deviation_range", c.disk, other, c.range_margin_mm,
                                         f"at the short range limit of {other}"))
        for piece in {b.b for b in report.borderline if b.kind == "overlap" and b.a == other and b.b in cover_ids}:
            m = min(b.margin_mm for b in report.borderline if b.kind == "overlap" and b.a == other and b.b == piece)
            border.append(Borderline("cover", other, piece, m,
                                     "in cover only just" if piece in cover_on else "touching the cover only"))
        targets.append(ShotTarget(
            target=other, band=pair.band, distance_mm=pair.distance_mm, los=True, cover=cover,
            dice_modifier=-1 if cover else 0, only_criticals=siege, deviation=dev,
            dice=None if dice is None else (max(1, dice - 1) if cover else dice), cover_terrain=cover_on,
            relation=_relation(scene, shooter, other), notes=tuple(notes)))
    targets.sort(key=lambda t: (t.distance_mm, t.target))
    border = _dedupe(border)
    return RangedResult(shooter, True, None, tuple(targets), tuple(not_targets), tuple(border), attack,
                        None if unit is None else unit.key, settings.to_json())


def _shooter_borderline(scene: Scene, report: Report, shooter: str) -> list[Borderline]:
    """Calls that decide whether the shooter is pinned: an overlap, a sandwich or a stacking order with a disk
    that may lie on it."""
    z = scene.disk(shooter).z
    out = []
    for b in report.borderline:
        if b.kind not in ("overlap", "sandwich", "stacking") or shooter not in (b.a, b.b) or b.b is None:
            continue
        other = b.b if b.a == shooter else b.a
        if other not in {d.id for d in scene.disks}:
            continue  # a terrain piece
        if scene.disk(other).z >= z:
            out.append(Borderline(b.kind, b.a, b.b, b.margin_mm, (b.note + "; " if b.note else "")
                                  + f"decides whether {shooter} is pinned"))
    return out


def _dedupe(items: list[Borderline]) -> list[Borderline]:
    seen, out = set(), []
    for b in items:
        key = (b.kind, b.a, b.b, round(b.margin_mm, 6), b.note)
        if key not in seen:
            seen.add(key)
            out.append(b)
    return sorted(out, key=lambda b: (b.kind, b.a, b.b or "", b.note))


def activated_in_book(book_state: dict[str, Any] | None) -> set[str]:
    """Disk ids the game book's state shows with an activation token."""
    if not book_state:
        return set()
    return {d["disk"] for d in book_state.get("disks", []) if d.get("activation", 0) > 0}


__all__ = ["ranged_attack", "RangedResult", "ShotTarget", "NotTarget", "activated_in_book"]
