"""Move consequences (`tablesight.move/1`): one disk moved between two scenes of one table — how far, how many
flips that needs, whom it newly pins and who takes Impact, what terrain it entered and what follows, whether it
left the battlefield, and what the rules say it could not have done on the way.

RB p.8 (a move flips the disk up to its Move value; it stops at once when it pins an enemy disk), p.20 (a flip
pivots on the rim and may turn while standing: the centre moves at most one diameter; re-pinning a disk it
already pinned is not pinning it again; an activated disk wholly outside the battlefield is a casualty), p.21
(Impact X: X physical damage to every disk it pins after being flipped, allies too, not to a disk it already
pinned; Flying ignores disks and terrain while moving, and deals Impact only with its last move; Relentless does
not stop the first time it pins an enemy; Stride ignores terrain qualities while moving), p.22 (Rough: a disk
that overlaps it after a flip stops at once unless it already overlapped it; Dangerous: roll a d6 of damage, the
move goes on; Fortified: immune to Impact damage); FAQ (a disk may flip fewer times than its Move).

Two pictures cannot show where the flips landed: a stop rule is reported only when the after-scene contradicts
it — when EVERY way of making the move within the flip budget lands, before its last flip, on an enemy disk
(`pinned_enemy_stop`) or newly on a Rough piece (`rough_stop`). Pure and deterministic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tablesight.errors import InputError
from tablesight.formats import MOVE, format_string
from tablesight.scene import Scene

from rules.diskwars.catalog import Catalog
from rules.diskwars.settings import DiskwarsSettings
from rules.diskwars.units import keyword_arg, keywords_of, knows_keywords, unit_of
from rules.report import Borderline, Report, round_mm

_SEGS = 64  # quarter-circle segments of the shapely circles in the landing analysis



@dataclass(frozen=True)
class NewPin:
    disk: str
    enemy: bool
    impact_damage: int | None  # None: Impact unknown (the unit's keywords or its X are not known)
    fortified: bool = False  # the pinned disk overlaps Fortified terrain: immune to Impact (RB p.22)
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"disk": self.disk, "enemy": self.enemy, "impact_damage": self.impact_damage,
                "fortified": self.fortified, "notes": list(self.notes)}


@dataclass(frozen=True)
class Consequence:
    keyword: str
    effect: str  # stop / no_stop / roll_d6 / ignored / players_call / info
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"keyword": self.keyword, "effect": self.effect, "text": self.text}


@dataclass(frozen=True)
class TerrainEntered:
    terrain: str
    name: str
    keywords: tuple[str, ...]
    entered: bool  # False: it already overlapped the piece before the move
    consequences: tuple[Consequence, ...]

    def to_json(self) -> dict[str, Any]:
        return {"terrain": self.terrain, "name": self.name, "keywords": list(self.keywords), "entered": self.entered,
                "consequences": [c.to_json() for c in self.consequences]}


@dataclass(frozen=True)
class Contradiction:
    flip: int  # the flip (1-based) that every way of making the move lands on with this consequence
    of_flips: int  # ... when the move takes this many flips (the least it needs)
    subject: tuple[str, ...]  # the enemy disks or the Rough piece
    note: str
    unless: tuple[str, ...] = ()  # keywords that would lift the rule, when the disk's keywords are not known

    def to_json(self) -> dict[str, Any]:
        return {"flip": self.flip, "of_flips": self.of_flips, "subject": list(self.subject), "note": self.note,
                "unless": list(self.unless)}


@dataclass(frozen=True)
class MoveResult:
    moved: str
    distance_mm: float
    flips_needed: int
    flip_budget: int | None
    within_budget: bool | None
    newly_pinned: tuple[NewPin, ...]
    terrain_entered: tuple[TerrainEntered, ...]
    pinned_enemy_stop: tuple[Contradiction, ...]
    rough_stop: tuple[Contradiction, ...]
    off_battlefield: dict[str, Any] | None
    warnings: tuple[str, ...]
    borderline: tuple[Borderline, ...]
    budget_source: str | None = None
    diameter_mm: float = 0.0
    settings: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": format_string(MOVE),
            "moved": self.moved,
            "distance_mm": round_mm(self.distance_mm),
            "flips_needed": self.flips_needed,
            "flip_budget": self.flip_budget,
            "within_budget": self.within_budget,
            "newly_pinned": [p.to_json() for p in self.newly_pinned],
            "terrain_entered": [t.to_json() for t in self.terrain_entered],
            "pinned_enemy_stop": [c.to_json() for c in self.pinned_enemy_stop],
            "rough_stop": [c.to_json() for c in self.rough_stop],
            "off_battlefield": self.off_battlefield,
            "warnings": list(self.warnings),
            "borderline": [b.to_json() for b in self.borderline],
            "budget_source": self.budget_source,
            "diameter_mm": round_mm(self.diameter_mm),
            "settings": dict(self.settings or {}),
        }


# ---------------------------------------------------------------------------------------------------------------


def same_table(before: Scene, after: Scene) -> None:
    """Raise InputError unless the two scenes are of one table: the same battlefield, range bands, players,
    terrain pieces and disks (a move changes where one disk lies, nothing else)."""
    if (before.battlefield.width_mm, before.battlefield.height_mm) != (after.battlefield.width_mm,
                                                                       after.battlefield.height_mm):
        raise InputError("after: another table (the battlefield size differs from before)")
    if before.range_bands != after.range_bands:
        raise InputError("after: another table (the range bands differ from before)")
    if {p.id for p in before.players} != {p.id for p in after.players}:
        raise InputError("after: another table (the players differ from before)")
    tb, ta = {t.id for t in before.terrain}, {t.id for t in after.terrain}
    if tb != ta:
        diff = sorted(tb ^ ta)
        raise InputError(f"after: another table (terrain {', '.join(diff)} is in only one of the two scenes)")
    db, da = {d.id for d in before.disks}, {d.id for d in after.disks}
    if db != da:
        only_b, only_a = sorted(db - da), sorted(da - db)
        parts = []
        if only_b:
            parts.append(f"only before: {', '.join(only_b)}")
        if only_a:
            parts.append(f"only after: {', '.join(only_a)}")
        raise InputError(f"after: not the same disks as before ({'; '.join(parts)}): a move changes where one "
                         f"disk lies (a reinforcement or a casualty is not a move)")


def moved_disk(before: Scene, after: Scene, jitter_mm: float) -> tuple[str, float, list[tuple[str, float]]]:
    """(the moved disk, its centre displacement, every disk's displacement): the one disk whose centre moved more
    than `jitter_mm`. None or several: InputError naming them."""
    moves = []
    for d in sorted(after.disks, key=lambda d: d.id):
        b = before.disk(d.id)
        moves.append((d.id, math.hypot(d.x_mm - b.x_mm, d.y_mm - b.y_mm)))
    over = [(i, m) for i, m in moves if m > jitter_mm]
    if not over:
        raise InputError(f"after: no disk moved by more than the jitter tolerance ({jitter_mm:g} mm; setting "
                         f"move_jitter_mm)")
    if len(over) > 1:
        listed = ", ".join(f"{i} ({m:.1f} mm)" for i, m in over)
        raise InputError(f"after: {len(over)} disks moved ({listed}): a move is one disk's (setting "
                         f"move_jitter_mm = {jitter_mm:g} mm)")
    return over[0][0], over[0][1], moves


def flips_needed(distance_mm: float, diameter_mm: float) -> int:
    """The least number of flips that moves a centre `distance_mm`: a flip moves it at most one diameter."""
    if distance_mm <= 0:
        return 0
    return max(1, math.ceil(distance_mm / diameter_mm - 1e-9))


def move_consequences(before: Scene, after: Scene, *, catalog: Catalog | None = None,
                      settings: DiskwarsSettings | None = None, report_before: Report | None = None,
                      report_after: Report | None = None, move_bonus: int = 0) -> MoveResult:
    """What the rules say about the one disk that moved from `before` to `after` (two scenes of one table).
    `move_bonus`: extra Move a command card gave it (RB p.7: e.g. +1 or +2)."""
    from rules.diskwars.report import build_report

    settings = settings or DiskwarsSettings()
    if isinstance(move_bonus, bool) or not isinstance(move_bonus, int) or move_bonus < 0:
        raise InputError(f"move_bonus: expected a whole number >= 0, got {move_bonus!r}")
    same_table(before, after)
    mid, dist, moves = moved_disk(before, after, settings.move_jitter_mm)
    d0, d1 = before.disk(mid), after.disk(mid)
    unit = unit_of(d1, catalog, "moved disk")
    kw = keywords_of(d1, unit) | keywords_of(d0, None)
    known_kw = knows_keywords(d1, unit)
    flying, relentless, stride = ("flying" in kw), ("relentless" in kw), ("stride" in kw)
    rb = report_before if report_before is not None else build_report(before, settings)
    ra = report_after if report_after is not None else build_report(after, settings)
    diameter = 2.0 * d1.radius_mm
    need = flips_needed(dist, diameter)

    budget, source = None, None
    for name, st in (("after scene", d1.stats), ("before scene", d0.stats)):
        if st is not None and st.move is not None:
            budget, source = st.move, f"stats.move of the {name}"
            break
    if budget is None and unit is not None and unit.stats.move is not None:
        budget, source = unit.stats.move, f"catalog unit {unit.key}"
    if budget is not None and move_bonus:
        budget, source = budget + move_bonus, f"{source} + {move_bonus} (card)"
    within = None if budget is None else need <= budget

    warnings: list[str] = []
    pinners = sorted(p.pinner for p in rb.pins if p.pinned == mid)
    if pinners:
        warnings.append(f"{mid} was pinned by {', '.join(pinners)} before the move: a pinned disk cannot be "
                        f"activated (RB p.8)")
    if d0.tokens is not None and d0.tokens.activation > 0:
        warnings.append(f"{mid} carried an activation token before the move: it was already activated (RB p.8)")
    if within is False:
        warnings.append(f"{need} flips needed, Move {budget}: beyond its flips (RB p.8, 20)")

    new_pins = _newly_pinned(after, ra, rb, mid, kw, known_kw, catalog)
    terrain = _terrain_entered(after, ra, rb, mid, flying, stride)
    enemy_stop, rough_stop = (), ()
    if budget is not None and need >= 2:
        enemy_stop = _enemy_stop(before, after, rb, mid, need, budget, diameter, flying, relentless, known_kw,
                                 settings)
        if not (flying or stride):
            rough_stop = _rough_stop(before, after, rb, mid, need, budget, diameter, known_kw, settings)
    off = None
    for o in ra.off_battlefield:
        if o.disk == mid:
            off = {"wholly": o.wholly, "casualty": o.wholly, "margin_mm": round_mm(o.margin_mm),
                   "note": ("wholly outside the battlefield after its flip: a casualty (RB p.20)" if o.wholly else
                            "partly outside the battlefield: still in play (RB p.20 removes only a disk wholly "
                            "outside)")}
    border = _borderline(ra, mid, dist, diameter, need, moves, settings)
    return MoveResult(mid, dist, need, budget, within, new_pins, terrain, enemy_stop, rough_stop, off,
                      tuple(warnings), border, source, diameter, settings.to_json())


def _impact(kw: frozenset[str], known: bool) -> tuple[int | None, str | None]:
    present, arg = keyword_arg(kw, "impact")
    if not present:
        return (0, None) if known else (None, "its keywords are not known: Impact unknown")
    if arg is None or not arg.isdigit():
        return None, "Impact with an unknown value"
    return int(arg), None


def _newly_pinned(after: Scene, ra: Report, rb: Report, mid: str, kw: frozenset[str], known: bool,
                  catalog: Catalog | None) -> tuple[NewPin, ...]:
    before_pins = {(p.pinner, p.pinned) for p in rb.pins}
    fortified_ids = {t.id for t in after.terrain if t.has("fortified")}
    on_fortified = {o.disk for o in ra.terrain_overlaps if o.terrain in fortified_ids}
    x, why = _impact(kw, known)
    out = []
    for p in ra.pins:
        if p.pinner != mid or (p.pinner, p.pinned) in before_pins:
            continue  # pinning again a disk it already pinned is not a new pin (RB p.20)
        target = after.disk(p.pinned)
        t_unit = catalog.unit(target.unit) if (catalog is not None and target.unit) else None
        t_kw = keywords_of(target, t_unit)
        notes = []
        dmg = x
        fortified = p.pinned in on_fortified
        if why:
            notes.append(why)
        if fortified:
            dmg = 0
            notes.append("on Fortified terrain: immune to Impact damage (RB p.22)")
        elif "immune:impact" in t_kw:
            dmg = 0
            notes.append("Immune to Impact (RB p.21)")
        elif dmg and "resistant:impact" in t_kw:
            dmg = math.ceil(dmg / 2)
            notes.append("Resistant to Impact: half, rounded up (RB p.21)")
        if dmg:
            notes.append(f"Impact: {dmg} physical damage (RB p.21)")
        if p.enemy:
            notes.append("an enemy: a fight in the melee phase")
        out.append(NewPin(p.pinned, p.enemy, dmg, fortified, tuple(notes)))
    return tuple(sorted(out, key=lambda n: n.disk))


_TERRAIN_INFO = {
    "cover": "in cover: ranged attacks at it roll one die fewer (RB p.22)",
    "defensive": "Defensive: it gains Swift counterattack while on it (RB p.22)",
    "fortified": "Fortified: immune to Impact damage while on it (RB p.22)",
    "elevated": "Elevated: it traces line of sight past blocking terrain (RB p.22)",
    "blocks_los": "Blocks LOS: while on it, this piece does not block its lines of sight (RB p.13)",
}


def _terrain_entered(after: Scene, ra: Report, rb: Report, mid: str, flying: bool, stride: bool
                     ) -> tuple[TerrainEntered, ...]:
    before_on = {o.terrain for o in rb.terrain_overlaps if o.disk == mid}
    out = []
    pieces = {t.id: t for t in after.terrain}
    for o in ra.terrain_overlaps:
        if o.disk != mid:
            continue
        t = pieces[o.terrain]
        entered = t.id not in before_on
        cons: list[Consequence] = []
        for kw in t.keywords:
            base, _, arg = kw.partition(":")
            if base == "rough":
                if stride or flying:
                    cons.append(Consequence("rough", "ignored", ("Stride" if stride else "Flying")
                                            + ": ignores terrain while moving (RB p.21)"))
                elif entered:
                    cons.append(Consequence("rough", "stop", "Rough: the disk had to stop here, its move ends on "
                                                             "entering it (RB p.22)"))
                else:
                    cons.append(Consequence("rough", "no_stop", "Rough: it already overlapped it before the flip: "
                                                                "no need to stop (RB p.22)"))
            elif base == "dangerous":
                kind = arg or "physical"
                if stride:
                    cons.append(Consequence("dangerous", "ignored", "Stride: ignores terrain while moving: no "
                                                                    "Dangerous roll (RB p.21-22)"))
                elif flying:
                    cons.append(Consequence("dangerous", "players_call",
                                            f"Flying ignores terrain while moving but ends on it: whether it rolls "
                                            f"1d6 {kind} damage is the players' call (RB p.21-22)"))
                else:
                    cons.append(Consequence("dangerous", "roll_d6", f"Dangerous: roll 1d6, that much {kind} damage; "
                                                                    f"the move goes on (RB p.22)"))
            elif base in _TERRAIN_INFO:
                cons.append(Consequence(base, "info", _TERRAIN_INFO[base]))
        out.append(TerrainEntered(t.id, t.name, t.keywords, entered, tuple(cons)))
    return tuple(sorted(out, key=lambda e: e.terrain))


# -- what every way of making the move must do -----------------------------------------------------------------


def _circle(c: tuple[float, float], r: float, outer: bool):
    """A circle as a 4*_SEGS-gon: inscribed (inner) or circumscribed (outer), so that coverage tests err safe."""
    from shapely.geometry import Point

    scale = 1.0 / math.cos(math.pi / (4 * _SEGS)) if outer else 1.0
    return Point(c).buffer(max(r * scale, 1e-9), quad_segs=_SEGS)


def _landing_regions(a: tuple[float, float], b: tuple[float, float], k: int, step: float) -> list:
    """Where the centre can be after flip i = 1..k-1 of a k-flip move from a to b (each flip <= step)."""
    return [_circle(a, i * step, True).intersection(_circle(b, (k - i) * step, True)) for i in range(1, k)]


def _forced(regions: list, zone) -> list[int]:
    """1-based flips whose every landing lies in `zone` (a region left uncovered by a trace of its own area,
    the polygons' rounding, is covered; a thin region is judged by where it lies, not by its small area)."""
    out = []
    for i, reg in enumerate(regions):
        if reg.is_empty:
            continue
        left = reg.difference(zone)
        if left.is_empty or left.area <= 1e-9 * reg.area:
            out.append(i + 1)
    return out


def _enemy_stop(before: Scene, after: Scene, rb: Report, mid: str, need: int, budget: int, diameter: float,
                flying: bool, relentless: bool, known_kw: bool, settings: DiskwarsSettings
                ) -> tuple[Contradiction, ...]:
    """RB p.8: a moving disk stops at once when it pins an enemy. A contradiction when, for every number of flips
    the budget allows, some flip before the last must land on an enemy disk it did not already pin (enemies with a
    disk lying on them are left out: landing there may pin the disk on top instead)."""
    if flying or relentless or need > budget:
        return ()
    from shapely.ops import unary_union

    mover0, mover1 = before.disk(mid), after.disk(mid)
    already = {p.pinned for p in rb.pins if p.pinner == mid}
    covered = {o.lower for o in rb.overlaps if o.upper != mid}
    enemies = [d for d in after.disks if d.id != mid and d.id not in already and d.id not in covered
               and d.player is not None and mover1.player is not None and d.player != mover1.player]
    if not enemies:
        return ()
    reach = settings.contact_tolerance_mm
    zones = {d.id: _circle((d.x_mm, d.y_mm), d.radius_mm + mover1.radius_mm - reach, False) for d in enemies}
    zone = unary_union(list(zones.values()))
    a, b = (mover0.x_mm, mover0.y_mm), (mover1.x_mm, mover1.y_mm)
    first: Contradiction | None = None
    for k in range(need, budget + 1):
        regions = _landing_regions(a, b, k, diameter)
        hops = _forced(regions, zone)
        if not hops:
            return ()
        if first is None:
            i = hops[0]
            hit = tuple(sorted(e for e, z in zones.items() if regions[i - 1].intersects(z)))
            unless = () if known_kw else ("flying", "relentless")
            first = Contradiction(i, k, hit, f"every way of making this move lands on an enemy disk at flip {i} of "
                                             f"{k} (and with more flips, up to its Move {budget}, too): it had to "
                                             f"stop there (RB p.8)", unless)
    return (first,) if first else ()


def _rough_stop(before: Scene, after: Scene, rb: Report, mid: str, need: int, budget: int, diameter: float,
                known_kw: bool, settings: DiskwarsSettings) -> tuple[Contradiction, ...]:
    """RB p.22: a disk that overlaps Rough terrain after a flip stops, unless it already overlapped it. For each
    Rough piece: a contradiction when every way of making the move lands on it at a flip before the last, coming
    from a landing (or the start) certainly off it."""
    mover0, mover1 = before.disk(mid), after.disk(mid)
    start_on = {o.terrain for o in rb.terrain_overlaps if o.disk == mid}
    reach = mover1.radius_mm - settings.contact_tolerance_mm
    a, b = (mover0.x_mm, mover0.y_mm), (mover1.x_mm, mover1.y_mm)
    out = []
    for t in after.terrain:
        if not t.has("rough") or t.id in start_on:
            continue
        from shapely.geometry import Polygon

        poly = Polygon(t.polygon_mm)
        inside = poly.buffer(reach, join_style="round", quad_segs=_SEGS)  # centres where it overlaps the piece
        near = poly.buffer(mover1.radius_mm + settings.contact_tolerance_mm, quad_segs=_SEGS)
        hit: Contradiction | None = None
        for k in range(need, budget + 1):
            regions = _landing_regions(a, b, k, diameter)
            found = None
            for i in _forced(regions, inside):
                prev_off = i == 1 or not regions[i - 2].intersects(near)
                if prev_off:
                    found = i
                    break
            if found is None:
                hit = None
                break
            if hit is None:
                unless = () if known_kw else ("flying", "stride")
                hit = Contradiction(found, k, (t.id,), f"every way of making this move enters the Rough piece "
                                                       f"{t.id} at flip {found} of {k} (and with more flips, up to "
                                                       f"its Move {budget}, too): it had to stop there (RB p.22)",
                                    unless)
        if hit is not None:
            out.append(hit)
    return tuple(out)


def _borderline(ra: Report, mid: str, dist: float, diameter: float, need: int, moves: list[tuple[str, float]],
                settings: DiskwarsSettings) -> tuple[Borderline, ...]:
    tol = settings.tolerance_mm
    out = []
    for b in ra.borderline:
        if mid in (b.a, b.b) and b.kind in ("overlap", "sandwich", "stacking", "off_battlefield"):
            out.append(b)
    if need >= 1:
        for k in (need - 1, need):
            if k >= 1 and abs(dist - k * diameter) <= tol:
                out.append(Borderline("flips", mid, None, abs(dist - k * diameter),
                                      f"{dist:.1f} mm is {k} diameters ({k * diameter:.1f} mm) give or take the "
                                      f"tolerance: {k} or {k + 1} flips"))
    for i, m in moves:
        if i != mid and abs(m - settings.move_jitter_mm) <= tol:
            out.append(Borderline("jitter", i, None, abs(m - settings.move_jitter_mm),
                                  f"{i} shifted {m:.1f} mm: at the jitter tolerance, did it move too?"))
    return tuple(sorted(out, key=lambda b: (b.kind, b.a, b.b or "", b.note)))


__all__ = ["move_consequences", "MoveResult", "flips_needed", "same_table", "moved_disk"]
