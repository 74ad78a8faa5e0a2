"""Melee phase resolution (`tablesight.melee/1`): who strikes whom, when, for how much, and who falls.

Pure and deterministic: `resolve_melee(scene, report, catalog, settings)` reads the engagements and their order
from the rules report (RB p.9-10, 18, 20) and the disks' numbers from the scene (`stats`, `keywords`, `tokens`)
or else from the unit catalog, and returns a `MeleeResult`. Rules applied (spec/diskwars-rules.md, melee phase):

- Engagements are resolved in `report.melee_order.sequence`. Damage tokens carry from one engagement to the next
  (RB p.20) and start from the scene's `tokens.damage`.
- Inside an engagement attackers deal their attack strength, defenders their counterattack (RB p.9). Timing:
  Swift strikes first, then the rest, then Slow (RB p.21). A disk with Swift and Slow of the same kind strikes as if
  it had neither; several Swift (or Slow) sources do not add up (FAQ "Swift and Slow"). A disk overlapping
  `defensive` terrain (per the report's `terrain_overlaps`) gains Swift counterattack (RB p.22). Strikes of one timing land simultaneously; wounds are
  checked after each timing, so a disk removed earlier strikes nothing (RB p.21 Swift/Slow).
- A disk damages ONE enemy it is engaged with in that engagement — the enemy it pins (attacker) or that pins it
  (defender) (RB p.9, 19, 20 "enfrentarse"); Frenzy: an attacker damages every enemy it pins (RB p.21). The choice
  is the disk's `melee_target` when that is a valid target, else the default of `MeleeSettings.default_target`.
  A disk must deal damage if it can (RB p.20).
- Power token: +1 attack, counter and toughness (RB p.8). Melee damage is physical (RB p.11): Resistant to
  physical halves each strike rounded up; Immune to physical cannot be targeted nor damaged (RB p.21).
- Damage >= toughness: a wound. Without Vigor the disk is a casualty; with Vigor it is a casualty only when it
  already carries as many wound tokens as its Vigor, otherwise its damage tokens are replaced by one wound token
  (RB p.10; never more than one wound from one damage step, RB p.20). The p.10 sentence says "fichas de Daño" where
  the p.9 and p.19 examples count wound tokens; the examples decide (a reading counting damage tokens would remove
  the River Troll of the p.19 contest example, which the book keeps).
- Casualties leave at once. Engagements that a removal creates are not resolved in this phase (RB p.20): only the
  report's engagements are, and only between disks still on the table.

Unknown numbers are never guessed: a strike whose strength is unknown deals nothing and is listed in `missing`;
a target whose toughness is unknown keeps its damage without a wound decision and is listed too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from tablesight.errors import InputError
from tablesight.formats import MELEE, format_string
from tablesight.scene import Disk, Scene, Tokens

from rules.diskwars.catalog import Catalog
from rules.report import Report

TIMINGS = ("swift", "normal", "slow")
ROLES = ("attacker", "defender")
#: Melee damage is physical (RB p.11); "melee" lets a user catalog say "immune:melee" for the same thing.
MELEE_DAMAGE_KINDS = ("physical", "melee")
DEFAULT_TARGET_CHOICES = ("likely_wound", "first_by_id")


@dataclass(frozen=True)
class MeleeSettings:
    """Choices the rules leave to the players or to reading (each listed in READINGS, rules.diskwars.settings).

    default_target: who a disk damages when its `melee_target` is absent or not a valid target. The rules leave it
        to the players, attackers choosing first (RB p.9, p.15; the p.18-19 contest example's outcome depends on
        the Orc player's choice of the Great Mage). "likely_wound" (default): the valid target closest to a wound
        — smallest (toughness + power − damage already taken − this strike's damage), unknown toughness last, ties
        by disk id. "first_by_id": the valid target with the smallest id. The page lets the players choose.
    retarget_removed_target: when the chosen target was removed by an earlier timing (Swift) of the same
        engagement, strike another valid target (RB p.20: a disk must deal its melee damage whenever it can). With
        False the strike is lost (targets read as declared before any damage).
    resistant_halves: RB p.21, "Resistente a X: sólo sufre la mitad del daño infligido por X, redondeando hacia
        arriba". "each_strike" (default): every strike is halved, rounded up, on its own. "total": the strikes that
        land on the disk at one timing are added up and the total halved, rounded up (3 + 3 -> 3, not 2 + 2).
    wound_step: RB p.10 (damage >= toughness: one wound), p.20 ("no se coloca más de 1 ficha de Herida" however
        much damage it takes). "timing" (default): the strikes of one timing land together and give at most one
        wound. "strike": each strike is its own damage, so a disk with Vigor hit by two strikes at one timing can
        take a wound from each.
    """

    default_target: str = "likely_wound"
    retarget_removed_target: bool = True
    resistant_halves: str = "each_strike"
    wound_step: str = "timing"

    def __post_init__(self) -> None:
        if self.default_target not in DEFAULT_TARGET_CHOICES:
            raise InputError(f"melee settings: default_target must be one of {', '.join(DEFAULT_TARGET_CHOICES)}, "
                             f"got {self.default_target!r}")
        if not isinstance(self.retarget_removed_target, bool):
            raise InputError("melee settings: retarget_removed_target must be true or false")
        from rules.diskwars.settings import READING

        for name in ("resistant_halves", "wound_step"):
            try:
                READING[name].check(getattr(self, name))
            except InputError as exc:
                raise InputError(f"melee {exc}") from None

    def to_json(self) -> dict[str, Any]:
        return {"default_target": self.default_target, "retarget_removed_target": self.retarget_removed_target,
                "resistant_halves": self.resistant_halves, "wound_step": self.wound_step}


@dataclass(frozen=True)
class Strike:
    disk: str
    target: str
    timing: str  # swift / normal / slow
    damage: int | None  # what the target takes (after power and resistance); None: strength unknown
    role: str  # attacker / defender
    strength: int | None  # the striker's attack or counter, power included
    chosen_by: str  # "melee_target", "default", "frenzy", "only"
    options: tuple[str, ...] = ()  # every valid target at that moment: the player's choice when more than one

    def to_json(self) -> dict[str, Any]:
        return {"disk": self.disk, "target": self.target, "timing": self.timing, "damage": self.damage,
                "role": self.role, "strength": self.strength, "chosen_by": self.chosen_by,
                "options": list(self.options)}


@dataclass(frozen=True)
class MeleeStep:
    engagement: str
    strikes: tuple[Strike, ...] = ()
    wounded: tuple[str, ...] = ()  # took a wound token and stayed
    casualties: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"engagement": self.engagement, "strikes": [s.to_json() for s in self.strikes],
                               "wounded": list(self.wounded), "casualties": list(self.casualties)}
        if self.notes:
            out["notes"] = list(self.notes)
        return out


@dataclass(frozen=True)
class Missing:
    disk: str
    stat: str
    note: str

    def to_json(self) -> dict[str, Any]:
        return {"disk": self.disk, "stat": self.stat, "note": self.note}


@dataclass(frozen=True)
class Casualty:
    disk: str
    player: str | None
    unit: str | None
    engagement: str

    def to_json(self) -> dict[str, Any]:
        return {"disk": self.disk, "player": self.player, "unit": self.unit, "engagement": self.engagement}


@dataclass(frozen=True)
class MeleeResult:
    steps: tuple[MeleeStep, ...]
    casualties: tuple[str, ...]
    wounded: tuple[str, ...]
    scene_after: Scene
    casualty_details: tuple[Casualty, ...] = ()
    missing: tuple[Missing, ...] = ()
    settings: MeleeSettings = MeleeSettings()

    def to_json(self) -> dict[str, Any]:
        return {
            "format": format_string(MELEE),
            "steps": [s.to_json() for s in self.steps],
            "casualties": list(self.casualties),
            "wounded": list(self.wounded),
            "casualty_details": [c.to_json() for c in self.casualty_details],
            "missing": [m.to_json() for m in self.missing],
            "settings": self.settings.to_json(),
            "scene_after": self.scene_after.to_json(),
        }


# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fighter:
    """One disk's melee numbers after catalog lookup, disk overrides, power token and terrain."""

    id: str
    player: str | None
    unit: str | None
    attack: int | None
    counter: int | None
    toughness: int | None
    vigor: int | None
    keywords: frozenset[str]
    powered: bool
    defensive_terrain: tuple[str, ...] = ()  # ids of `defensive` terrain pieces it overlaps

    def strength(self, role: str) -> int | None:
        return self.attack if role == "attacker" else self.counter

    def timing(self, role: str) -> str:
        kind = "attack" if role == "attacker" else "counter"
        swift = f"swift:{kind}" in self.keywords or (kind == "counter" and bool(self.defensive_terrain))
        slow = f"slow:{kind}" in self.keywords
        if swift and slow:  # FAQ: Swift and Slow of the same kind cancel; several of one kind do not add up
            return "normal"
        return "swift" if swift else "slow" if slow else "normal"

    def immune_to_melee(self) -> bool:
        return any(f"immune:{k}" in self.keywords for k in MELEE_DAMAGE_KINDS)

    def resistant_to_melee(self) -> bool:
        return any(f"resistant:{k}" in self.keywords for k in MELEE_DAMAGE_KINDS)

    @property
    def frenzy(self) -> bool:
        return "frenzy" in self.keywords


def fighter_for(disk: Disk, scene: Scene, catalog: Catalog | None, defensive: tuple[str, ...] = ()) -> Fighter:
    """Numbers for one disk: the scene's own `stats`/`keywords` first, then the catalog unit's; power adds 1."""
    unit = catalog.unit(disk.unit) if catalog is not None else None
    base = unit.stats if unit is not None else None

    def stat(name: str) -> int | None:
        own = getattr(disk.stats, name) if disk.stats is not None else None
        if own is not None:
            return own
        return getattr(base, name) if base is not None else None

    keywords = set(unit.keywords if unit is not None else ()) | set(disk.keywords)
    powered = disk.tokens is not None and disk.tokens.power > 0
    bonus = 1 if powered else 0

    def plus(v: int | None) -> int | None:
        return None if v is None else v + bonus

    return Fighter(id=disk.id, player=disk.player, unit=disk.unit, attack=plus(stat("attack")),
                   counter=plus(stat("counter")), toughness=plus(stat("toughness")), vigor=stat("vigor"),
                   keywords=frozenset(keywords), powered=powered, defensive_terrain=defensive)


def _halve_totals(strikes: list[Strike], fighters: dict[str, Fighter]) -> list[Strike]:
    """Setting resistant_halves="total": the strikes landing on a Resistant disk at one timing are added up and
    halved once, rounded up; each strike shows its share (the last one takes the rounding)."""
    by_target: dict[str, list[int]] = {}
    for k, s in enumerate(strikes):
        if s.strength is not None and fighters[s.target].resistant_to_melee():
            by_target.setdefault(s.target, []).append(k)
    out = list(strikes)
    for t, ks in by_target.items():
        total = math.ceil(sum(strikes[k].strength for k in ks) / 2)
        given = 0
        for n, k in enumerate(ks):
            share = total - given if n == len(ks) - 1 else strikes[k].strength // 2
            given += share
            out[k] = replace(strikes[k], damage=share)
    return out


def _enemies(a: Disk, b: Disk) -> bool:
    return a.player is not None and b.player is not None and a.player != b.player


def resolve_melee(scene: Scene, report: Report, catalog: Catalog | None = None,
                  settings: MeleeSettings | None = None) -> MeleeResult:
    """Resolve the melee phase of `scene` given its rules `report`; see the module docstring for the rules."""
    settings = settings or MeleeSettings()
    disks = {d.id: d for d in scene.disks}
    # Defensive terrain (RB p.22): the report's disk-terrain overlaps (same contact tolerance as its pins).
    defensive_ids = {t.id for t in scene.terrain if "defensive" in t.keywords}
    on_defensive: dict[str, list[str]] = {}
    for o in report.terrain_overlaps:
        if o.terrain in defensive_ids:
            on_defensive.setdefault(o.disk, []).append(o.terrain)
    fighters = {d.id: fighter_for(d, scene, catalog, tuple(sorted(on_defensive.get(d.id, ()))))
                for d in scene.disks}
    damage = {d.id: (d.tokens.damage if d.tokens else 0) for d in scene.disks}
    wounds = {d.id: (d.tokens.wound if d.tokens else 0) for d in scene.disks}
    touched: set[str] = set()
    alive = set(disks)
    # Engaged pairs (pinner, pinned) between enemies, from the report's pins.
    pins = {(p.pinner, p.pinned) for p in report.pins
            if p.pinner in disks and p.pinned in disks and _enemies(disks[p.pinner], disks[p.pinned])}
    missing: dict[tuple[str, str], Missing] = {}
    steps: list[MeleeStep] = []
    casualties: list[Casualty] = []
    wounded: list[str] = []

    def note_missing(disk_id: str, stat: str, note: str) -> None:
        missing.setdefault((disk_id, stat), Missing(disk_id, stat, note))

    for e in report.engagements:
        for d in e.attackers + e.defenders:
            unit = disks[d].unit if d in disks else None
            if unit is not None and (catalog is None or catalog.unit(unit) is None):
                note_missing(d, "unit", f"unit {unit!r} is not in the catalog: only the disk's own stats are used")
    known_ids = {e.id for e in report.engagements}
    sequence = list(report.melee_order.sequence) or [e.id for e in report.engagements]
    for eid in sequence:
        if eid not in known_ids:
            raise InputError(f"report: melee_order.sequence names unknown engagement {eid!r}")
    leftover = [e.id for e in report.engagements if e.id not in sequence]  # a report that forgot one: still fight
    for eid in sequence + leftover:
        eng = report.engagement(eid)
        roles = {d: "attacker" for d in eng.attackers} | {d: "defender" for d in eng.defenders}
        notes: list[str] = []
        strikes_all: list[Strike] = []
        step_wounded: list[str] = []
        step_casualties: list[str] = []
        for d in roles:
            if d not in disks:
                raise InputError(f"report: engagement {eid} names disk {d!r} that is not in the scene")
        if not any(d in alive for d in eng.attackers) or not any(d in alive for d in eng.defenders):
            notes.append("not fought: one side was removed earlier in this phase")
            steps.append(MeleeStep(engagement=eid, notes=tuple(notes)))
            continue

        def valid_targets(d: str) -> list[str]:
            if roles[d] == "attacker":
                cands = [t for t in eng.defenders if (d, t) in pins]
            else:
                cands = [t for t in eng.attackers if (t, d) in pins]
            return sorted(t for t in cands if t in alive and not fighters[t].immune_to_melee())

        def closeness(t: str, strength: int) -> tuple:
            f = fighters[t]
            if f.toughness is None:
                return (1, 0, t)
            dealt = math.ceil(strength / 2) if f.resistant_to_melee() else strength
            return (0, f.toughness - damage[t] - dealt, t)

        def choose(d: str, targets: list[str], strength: int | None) -> tuple[list[tuple[str, str]], list[str]]:
            """The targets disk d strikes now, and notes; `targets` are valid and non-empty."""
            wish = disks[d].melee_target
            if fighters[d].frenzy and roles[d] == "attacker":
                return [(t, "frenzy") for t in targets], []
            if wish in targets:
                return [(wish, "melee_target")], []
            notes_: list[str] = []
            if wish is not None and wish in alive:
                notes_.append(f"{d}: melee_target {wish} is not an enemy it is engaged with here; default used")
            if len(targets) == 1:
                return [(targets[0], "only")], notes_
            if settings.default_target == "first_by_id" or strength is None:
                return [(targets[0], "default")], notes_
            return [(min(targets, key=lambda t: closeness(t, strength)), "default")], notes_

        # With retarget_removed_target off, every disk declares its targets before any damage of the engagement.
        declared: dict[str, list[tuple[str, str]]] = {}
        if not settings.retarget_removed_target:
            for d in sorted(eng.attackers) + sorted(eng.defenders):
                targets = valid_targets(d) if d in alive else []
                if targets:
                    declared[d], more = choose(d, targets, fighters[d].strength(roles[d]))
                    notes.extend(more)

        for timing in TIMINGS:
            strikers = [d for d in sorted(eng.attackers) + sorted(eng.defenders)
                        if d in alive and fighters[d].timing(roles[d]) == timing]
            strikes: list[Strike] = []
            for d in strikers:
                f = fighters[d]
                role = roles[d]
                strength = f.strength(role)
                if strength is None:
                    note_missing(d, "attack" if role == "attacker" else "counter",
                                 f"unknown {'attack' if role == 'attacker' else 'counterattack'} strength: "
                                 f"its strikes deal no damage here")
                targets = valid_targets(d)
                if not targets:
                    notes.append(f"{d} strikes nothing: no enemy it is engaged with can be damaged")
                    continue
                if settings.retarget_removed_target:
                    chosen, more = choose(d, targets, strength)
                    notes.extend(more)
                else:
                    chosen = [(t, how) for t, how in declared.get(d, []) if t in alive]
                    if not chosen:
                        notes.append(f"{d} strikes nothing: its declared target was removed before its timing")
                        continue
                for t, how in chosen:
                    dealt = None
                    if strength is not None:
                        dealt = math.ceil(strength / 2) if fighters[t].resistant_to_melee() else strength
                    strikes.append(Strike(disk=d, target=t, timing=timing, damage=dealt, role=role,
                                          strength=strength, chosen_by=how, options=tuple(targets)))
            if settings.resistant_halves == "total":
                strikes = _halve_totals(strikes, fighters)

            def check_wound(t: str) -> None:
                f = fighters[t]
                if f.toughness is None:
                    note_missing(t, "toughness", f"unknown toughness: {damage[t]} damage kept, no wound decided")
                    return
                if damage[t] < f.toughness:
                    return
                vigor = f.vigor
                if vigor is None:
                    vigor = 0
                    if f.toughness is not None and (disks[t].stats is None or disks[t].stats.vigor is None):
                        note_missing(t, "vigor", "vigor not stated: taken as 0 (no vigor) for this wound")
                if wounds[t] < vigor:
                    wounds[t] += 1
                    damage[t] = 0
                    step_wounded.append(t)
                    if t not in wounded:
                        wounded.append(t)
                else:
                    alive.discard(t)
                    step_casualties.append(t)
                    casualties.append(Casualty(disk=t, player=disks[t].player, unit=disks[t].unit, engagement=eid))

            if settings.wound_step == "strike":
                # Each strike is its own damage: checked for a wound as it lands (the strikers of this timing were
                # fixed before any of them landed, so a disk removed now still strikes at this timing).
                for s in strikes:
                    if s.damage and s.target in alive:
                        damage[s.target] += s.damage
                        touched.add(s.target)
                        check_wound(s.target)
            else:
                # Strikes of one timing land together; then every disk hit is checked once for a wound.
                hit: list[str] = []
                for s in strikes:
                    if s.damage:
                        damage[s.target] += s.damage
                        touched.add(s.target)
                        if s.target not in hit:
                            hit.append(s.target)
                for t in sorted(hit):
                    check_wound(t)
            strikes_all.extend(strikes)
        steps.append(MeleeStep(engagement=eid, strikes=tuple(strikes_all), wounded=tuple(step_wounded),
                               casualties=tuple(step_casualties), notes=tuple(notes)))

    after = []
    for d in scene.disks:
        if d.id not in alive:
            continue
        if d.id in touched or (d.tokens is not None and (d.tokens.damage, d.tokens.wound) != (damage[d.id], wounds[d.id])):
            base = d.tokens or Tokens()
            d = replace(d, tokens=replace(base, damage=damage[d.id], wound=wounds[d.id]))
        after.append(d)
    casualty_ids = tuple(c.disk for c in casualties)
    return MeleeResult(
        steps=tuple(steps),
        casualties=casualty_ids,
        wounded=tuple(w for w in wounded if w not in casualty_ids),
        scene_after=scene.with_disks(after),
        casualty_details=tuple(casualties),
        missing=tuple(missing.values()),
        settings=settings,
    )
