"""How the companion reads the Diskwars rules where the rulebook leaves room: every such reading is a named,
validated setting whose docstring cites the rulebook (RB p.N) or the errata/FAQ (FAQ).

Three groups: `DiskwarsSettings` (the geometry of one scene: the report, shooting, moves, deployment),
`rules.diskwars.melee.MeleeSettings` (the melee resolution) and `rules.diskwars.turn.RoundSettings` (the round). `READINGS` describes every choice of both groups
(its source, its default and what each value means) so that every output can list the readings it took
(`settings`) and the page can explain them; docs/rules.md prints the same table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Mapping

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
class Reading:
    """One named reading: where it comes from, its default and what each choice means."""

    name: str
    group: str  # "rules" (DiskwarsSettings) or "melee" (MeleeSettings)
    source: str  # rulebook pages / FAQ
    default: Any
    meaning: Mapping[Any, str]  # choice -> what it means (numeric settings: one entry, key None)
    question: str  # the question the rulebook leaves open

    @property
    def choices(self) -> tuple[Any, ...] | None:
        keys = tuple(self.meaning)
        return None if keys == (None,) else keys

    def check(self, value: Any) -> None:
        if self.choices is None:
            return
        if value not in self.choices:
            raise SettingsError(f"settings.{self.name}: one of {', '.join(map(str, self.choices))}, got {value!r}")

    def describe(self, value: Any) -> str:
        return self.meaning.get(value, self.meaning.get(None, ""))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "group": self.group, "source": self.source, "default": self.default,
                "choices": None if self.choices is None else list(self.choices), "question": self.question,
                "meaning": {("value" if k is None else str(k)): v for k, v in self.meaning.items()}}


READINGS: tuple[Reading, ...] = (
    Reading("elevated_sight", "rules", "RB p.13, 22", "both_ways", {
        "both_ways": "a disk on Elevated terrain sees past blocking pieces and is seen past them (line of sight is "
                     "mutual, RB p.13)",
        "out_only": "a disk on Elevated terrain sees past blocking pieces; a disk below sees it only when no piece "
                    "blocks",
    }, "Does Elevated terrain let a disk see out only, or also be seen?"),
    Reading("deviation_nearest", "rules", "RB p.11, 18-19; FAQ (Ranged attacks)", "edge", {
        "edge": "the nearest disk to the target is measured edge to edge, as range is (RB p.11)",
        "centre": "the nearest disk to the target is measured centre to centre",
    }, "Is 'nearest to the target' for deviation measured edge to edge or centre to centre?"),
    Reading("contest_order", "rules", "RB p.10, 18", "pairwise", {
        "pairwise": "for each harried disk, the engagement where it defends comes before the one where it attacks",
        "all_defending_first": "inside a contest every engagement with a harried defender comes before every "
                               "engagement with a harried attacker (RB p.18, read literally)",
    }, "With several harried disks in one contest, is the top-down order per harried disk or for all at once?"),
    Reading("sandwich_area_tolerance_mm2", "rules", "RB p.4; FAQ (Pinning)", 2.0, {
        None: "the top disk pins the bottom one unless the disks between them cover the whole overlap, up to "
              "this uncovered area (mm²)",
    }, "How much uncovered overlap in a partial sandwich still counts as covered?"),
    Reading("contact_tolerance_mm", "rules", "RB p.20", 0.5, {
        None: "shapes interpenetrating by no more than this are touching, not overlapping (mm)",
    }, "How deep must two shapes overlap before it is overlapping and not touching?"),
    Reading("equal_z_pins", "rules", "RB p.4", False, {
        False: "two overlapping disks with the same stacking order pin neither way: the players say which is on top",
        True: "the disk with the larger id is read as on top (hand-written test scenes)",
    }, "Who pins whom when the stacking order cannot tell?"),
    Reading("terrain_setup_distance_inclusive", "rules", "RB p.13", True, {
        True: "a piece exactly at the short limit from another piece or an edge is too close ('o menos')",
        False: "only a piece nearer than the short limit is too close",
    }, "Is a piece exactly at short range from another piece or an edge too close?"),
    Reading("unknown_owner_blocks_control", "rules", "RB p.19", True, {
        True: "a disk of unknown owner on a piece could be an enemy: nobody controls that piece",
        False: "disks of unknown owner are ignored for control",
    }, "Does a disk whose owner is unknown stop a player controlling a piece?"),
    Reading("tolerance_mm", "rules", "FAQ (Ranged attacks, deviation)", 1.0, {
        None: "calls that a measurement error of this size could flip are listed as borderline (mm)",
    }, "How large a measurement error should the players be warned about?"),
    Reading("move_jitter_mm", "rules", "RB p.8, 20 (project tolerance)", 3.0, {
        None: "between two scenes of a move, a disk whose centre changed by no more than this did not move (mm)",
    }, "How far may a disk seem to shift between two pictures without having moved?"),
    Reading("resistant_halves", "melee", "RB p.21", "each_strike", {
        "each_strike": "Resistant halves each strike, rounded up",
        "total": "Resistant halves the total of the strikes that land at one timing, rounded up",
    }, "Does Resistant halve each strike or the damage of a timing step as a whole?"),
    Reading("wound_step", "melee", "RB p.10, 20", "timing", {
        "timing": "the strikes of one timing land together: a disk takes at most one wound from them",
        "strike": "each strike is its own damage: a disk hit by two strikes at once can take two wounds",
    }, "Is 'at most one wound from one damage' per timing step or per strike?"),
    Reading("default_target", "melee", "RB p.9, 15, 18-19", "likely_wound", {
        "likely_wound": "a disk without a chosen melee target strikes the enemy closest to a wound",
        "first_by_id": "a disk without a chosen melee target strikes the enemy with the smallest id",
    }, "Whom does a disk strike when the players have not said? (The rules leave it to them: choose on the page.)"),
    Reading("retarget_removed_target", "melee", "RB p.20", True, {
        True: "a strike whose target fell at an earlier timing strikes another enemy (a disk must deal damage "
              "if it can)",
        False: "a strike whose target fell at an earlier timing is lost (targets declared before any damage)",
    }, "When a Swift strike removes a target, does a later strike at it go elsewhere?"),
    Reading("card_order_after_first", "round", "RB p.7, 15", "strategy", {
        "strategy": "the cards that resolve after the first player's keep the strategy order among themselves "
                    "(an equal card before one the first player's beats); ties by initiative",
        "initiative": "every card that resolves after the first player's is a tie: initiative order",
    }, "RB p.15 compares each card with the first player's only: how do the cards after it compare?"),
)
READING = {r.name: r for r in READINGS}


def readings_json(*groups: Any) -> list[dict[str, Any]]:
    """The readings taken by settings objects (DiskwarsSettings, MeleeSettings): name, value, default, source and
    what the value means — what every output lists as `readings` and the page shows."""
    out = []
    for g in groups:
        if g is None:
            continue
        for f in fields(g):
            r = READING.get(f.name)
            if r is None:
                continue
            v = getattr(g, f.name)
            out.append({"name": r.name, "value": v, "default": r.default, "source": r.source,
                        "meaning": r.describe(v), "is_default": v == r.default})
    return out


@dataclass(frozen=True)
class DiskwarsSettings:
    """Settings of the Diskwars rules layer (all lengths mm, areas mm²).

    tolerance_mm:
        The measurement error the players want to be warned about. Every call (band limit, overlap vs. touch,
        line of sight grazing terrain, deviation nearest-disk order, a sandwich's uncovered sliver) that an error
        of this size could flip is listed in the report's `borderline` section with its margin. FAQ (Ranged
        attacks, deviation): when the players cannot tell which disk is nearer they choose at random; the margin
        tells them when that is so.
    contact_tolerance_mm:
        Edge contact is not overlap (RB p.20, "pisar": a disk overlaps another if it covers any part of it;
        touching at the edges does not). Two shapes overlap only when they interpenetrate by MORE than this
        depth; a measured depth at or below it is read as touching. Default 0.5 mm, about what a camera's
        sub-pixel edge fit can tell apart.
    sandwich_area_tolerance_mm2:
        Partial sandwiches (RB p.4 stack example; FAQ, Pinning: "pins it if no other disk is between them").
        The rulebook only shows a full sandwich. Project reading: the top disk C pins the bottom disk A iff the
        region where C overlaps A is not entirely covered by disks lying between them in the stack; the region
        counts as covered when less than this area is left uncovered. Such a pin is flagged `partial`. A pin
        that a measurement error of `tolerance_mm` could make or break through this area is a `sandwich`
        borderline call.
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
    elevated_sight:
        RB p.22: "disks overlapping Elevated terrain may trace line of sight through any component that blocks
        it"; RB p.13: line of sight is mutual ("ambos discos tienen línea de visión entre sí"). "both_ways"
        (default): such a disk sees out and is seen past blocking pieces. "out_only": only its own lines pass;
        a disk below sees it only when nothing blocks (the pair's line of sight is then one way).
    deviation_nearest:
        RB p.11 (range is measured surface to surface), p.18-19 (deviation goes to the disk NEAREST the target;
        engaged disks are always nearest, by larger overlapped area); FAQ (players choose at random when they
        cannot tell). "edge" (default): nearness of the other disks measured edge to edge; "centre": centre to
        centre. Which disks are candidates (within short range of the target) is range, always edge to edge.
    contest_order:
        RB p.10: a contest is resolved from the top down, the engagement where the harried disk defends first.
        RB p.18: with several harried disks, "all engagements with a harried disk as defender before the
        engagements with a harried disk as attacker". "pairwise" (default): one constraint per harried disk.
        "all_defending_first": the p.18 sentence read across the whole contest (an engagement with a harried
        defender and another harried attacker then contradicts itself: the players' call).
    move_jitter_mm:
        Two scenes of one move (RB p.8 movement, p.20 flips): a disk whose centre changed by no more than this
        is taken as not moved (measurement jitter between two pictures). Default 3 mm.
    """

    tolerance_mm: float = 1.0
    contact_tolerance_mm: float = 0.5
    sandwich_area_tolerance_mm2: float = 2.0
    equal_z_pins: bool = False
    terrain_setup_distance_inclusive: bool = True
    unknown_owner_blocks_control: bool = True
    elevated_sight: str = "both_ways"
    deviation_nearest: str = "edge"
    contest_order: str = "pairwise"
    move_jitter_mm: float = 3.0

    def __post_init__(self) -> None:
        _check("tolerance_mm", self.tolerance_mm, nonneg=True)
        _check("contact_tolerance_mm", self.contact_tolerance_mm, nonneg=True)
        _check("sandwich_area_tolerance_mm2", self.sandwich_area_tolerance_mm2, nonneg=True)
        _check("move_jitter_mm", self.move_jitter_mm, nonneg=True)
        for name in ("equal_z_pins", "terrain_setup_distance_inclusive", "unknown_owner_blocks_control"):
            if not isinstance(getattr(self, name), bool):
                raise SettingsError(f"settings.{name}: expected true or false, got {getattr(self, name)!r}")
        for name in ("elevated_sight", "deviation_nearest", "contest_order"):
            READING[name].check(getattr(self, name))

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def parse_assignments(items: list[str] | tuple[str, ...], *groups: type) -> list[dict[str, Any]]:
    """`NAME=VALUE` strings (the command line's `--set`) -> one keyword dict per settings class in `groups`,
    values converted to each field's type. An unknown name or a bad value raises SettingsError naming it."""
    out: list[dict[str, Any]] = [{} for _ in groups]
    for item in items:
        name, sep, raw = str(item).partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name:
            raise SettingsError(f"--set {item!r}: expected NAME=VALUE")
        for k, cls in enumerate(groups):
            fmap = {f.name: f for f in fields(cls)}
            if name in fmap:
                default = fmap[name].default
                out[k][name] = _convert(name, raw.strip(), default)
                break
        else:
            known = sorted({f.name for cls in groups for f in fields(cls)})
            raise SettingsError(f"--set {name}: unknown setting (known: {', '.join(known)})")
    return out


def _convert(name: str, raw: str, default: Any) -> Any:
    if isinstance(default, bool):
        low = raw.lower()
        if low in ("true", "yes", "1", "on"):
            return True
        if low in ("false", "no", "0", "off"):
            return False
        raise SettingsError(f"settings.{name}: expected true or false, got {raw!r}")
    if isinstance(default, (int, float)):
        try:
            return float(raw)
        except ValueError:
            raise SettingsError(f"settings.{name}: expected a number, got {raw!r}") from None
    return raw
