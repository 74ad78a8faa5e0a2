"""Deployment zones and deployment / reinforcement checks (`tablesight.deployment/1`).

RB p.5, 12-13: a player's deployment zone runs from their battlefield edge inwards to medium range, along the
deployment cards they placed there; deployed disks lie wholly inside a zone of their player; disks may be
stacked. FAQ (Deployment): a disk is never deployed overlapping an enemy disk nor an enemy deployment zone.
RB p.15 (3-4 players): the "constrained" player (whose edge touches both others') may use their whole edge; the
other two place their cards within long range of the corner opposite the one they share with the constrained
player; with 4 players every card lies beyond medium range of the battlefield's corners. RB p.12: with 2 players
the edges are opposite. RB p.13, 21: a reinforcement is placed wholly inside one of its player's zones and gets an
activation token; it may pin other disks (no Impact damage when brought in, RB p.21); RB p.22: Dangerous terrain
it lands on rolls a d6. RB p.3 (Lake card): disks without Flying or Stride are not deployed on the Lake.

Where the deployment cards lie along the edge is the players' choice: zones derived from edges span the whole
stretch of edge the rules allow (a bound; draw the real zones as the scene's `deployment_zones` to check against
them). The along-edge limits from corners are measured along the edge.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping

from tablesight.errors import InputError
from tablesight.formats import DEPLOYMENT, format_string
from tablesight.scene import DeploymentZone, RangeBands, Scene

from rules.diskwars.settings import DiskwarsSettings
from rules.report import Borderline, SetupViolation, round_mm

EDGES = ("top", "bottom", "left", "right")
_OPPOSITE = {"top": "bottom", "bottom": "top", "left": "right", "right": "left"}



def parse_edges(items: Iterable[str]) -> dict[str, str]:
    """`PLAYER=EDGE` strings -> {player: edge}."""
    out: dict[str, str] = {}
    for item in items:
        player, sep, edge = str(item).partition("=")
        player, edge = player.strip(), edge.strip().lower()
        if not sep or not player:
            raise InputError(f"--edge {item!r}: expected PLAYER=EDGE")
        if edge not in EDGES:
            raise InputError(f"--edge {item!r}: the edge is one of {', '.join(EDGES)}")
        out[player] = edge
    return out


def _strip(edge: str, s0: float, s1: float, depth: float, w: float, h: float) -> tuple[tuple[float, float], ...]:
    """The rectangle along `edge` from s0 to s1 (x for top/bottom, y for left/right), `depth` deep."""
    if edge == "top":
        return ((s0, 0.0), (s1, 0.0), (s1, depth), (s0, depth))
    if edge == "bottom":
        return ((s0, h - depth), (s1, h - depth), (s1, h), (s0, h))
    if edge == "left":
        return ((0.0, s0), (depth, s0), (depth, s1), (0.0, s1))
    return ((w - depth, s0), (w, s0), (w, s1), (w - depth, s1))


def zones_from_edges(scene: Scene, edges: Mapping[str, str]) -> tuple[DeploymentZone, ...]:
    """Each player's deployment zone from their edge (RB p.5, 12-13, 15), as wide as the rules allow."""
    players = {p.id for p in scene.players}
    for p, e in edges.items():
        if p not in players:
            raise InputError(f"edge: unknown player {p!r} (players: {', '.join(sorted(players)) or 'none'})")
        if e not in EDGES:
            raise InputError(f"edge of {p}: one of {', '.join(EDGES)}, got {e!r}")
    used = list(edges.values())
    if len(set(used)) != len(used):
        raise InputError("edge: two players on one edge (each player deploys from an edge of their own, RB p.12)")
    n = len(edges)
    bands: RangeBands = scene.range_bands
    w, h = scene.battlefield.width_mm, scene.battlefield.height_mm
    depth = bands.medium
    out = []
    if n == 2:
        a, b = sorted(edges.values())
        if _OPPOSITE[a] != b:
            raise InputError("edge: with 2 players the edges are opposite (RB p.12)")
    constrained = None
    if n == 3:
        for p, e in edges.items():
            others = [x for q, x in edges.items() if q != p]
            if all(x not in (e, _OPPOSITE[e]) for x in others):
                constrained = p
        if constrained is None:
            raise InputError("edge: with 3 players one player's edge touches both others' (RB p.15)")
    for p in sorted(edges, key=lambda q: q):
        e = edges[p]
        length = w if e in ("top", "bottom") else h
        s0, s1 = 0.0, length
        if n == 3 and p != constrained:
            ce = edges[constrained]
            # the corner shared with the constrained player is at the end of this edge nearest the constrained edge
            shared_at_start = ce in ("top", "left")
            if shared_at_start:
                s0 = max(0.0, length - bands.long)
            else:
                s1 = min(length, bands.long)
        elif n == 4:
            s0, s1 = bands.medium, length - bands.medium
            if s1 <= s0:
                raise InputError("edge: this battlefield is too small for 4 players' zones (RB p.15)")
        out.append(DeploymentZone(p, _strip(e, s0, s1, depth, w, h)))
    return tuple(out)


@dataclass(frozen=True)
class Problem:
    kind: str
    other: str | None
    margin_mm: float | None
    note: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "other": self.other,
                "margin_mm": None if self.margin_mm is None else round_mm(self.margin_mm), "note": self.note}


@dataclass(frozen=True)
class DiskCheck:
    disk: str
    player: str | None
    reinforcement: bool
    ok: bool
    problems: tuple[Problem, ...]
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"disk": self.disk, "player": self.player, "reinforcement": self.reinforcement, "ok": self.ok,
                "problems": [p.to_json() for p in self.problems], "notes": list(self.notes)}


@dataclass(frozen=True)
class DeploymentResult:
    zones: tuple[DeploymentZone, ...]
    zone_source: str  # "scene", "edges" or "none"
    disks: tuple[DiskCheck, ...]
    terrain_setup: tuple[SetupViolation, ...]
    borderline: tuple[Borderline, ...]
    settings: dict[str, Any]

    @property
    def ok(self) -> bool:
        return all(d.ok for d in self.disks) and not self.terrain_setup

    def to_json(self) -> dict[str, Any]:
        return {"format": format_string(DEPLOYMENT), "ok": self.ok, "zone_source": self.zone_source,
                "zones": [z.to_json() for z in self.zones], "disks": [d.to_json() for d in self.disks],
                "terrain_setup": [v.to_json() for v in self.terrain_setup],
                "borderline": [b.to_json() for b in self.borderline], "settings": dict(self.settings)}


_DISK_KINDS = ("disk_outside_zone", "disk_in_enemy_zone", "disk_on_enemy_disk")


def check_deployment(scene: Scene, *, edges: Mapping[str, str] | None = None, reinforcements: Iterable[str] = (),
                     settings: DiskwarsSettings | None = None) -> DeploymentResult:
    """Check every disk's deployment (or, for `reinforcements`, its entry as a reinforcement) against the zones:
    the scene's own `deployment_zones` when it has them, else the zones derived from `edges`."""
    from rules.diskwars.board import Board
    from rules.diskwars.report import build_report
    from rules.diskwars.terrain import setup_violations
    from rules.diskwars.terrain_presets import preset_for

    settings = settings or DiskwarsSettings()
    ids = {d.id for d in scene.disks}
    reinf = set()
    for r in reinforcements:
        if r not in ids:
            raise InputError(f"reinforcement: no disk {r!r} in the scene (disks: {', '.join(sorted(ids)) or 'none'})")
        reinf.add(r)
    if scene.deployment_zones:
        source = "scene"
    elif edges:
        scene = replace(scene, deployment_zones=zones_from_edges(scene, edges))
        source = "edges"
    else:
        source = "none"
    board = Board(scene, settings)
    violations = setup_violations(board)
    report = build_report(scene, settings)
    by_disk: dict[str, list[SetupViolation]] = {}
    for v in violations:
        if v.kind in _DISK_KINDS:
            by_disk.setdefault(v.subject, []).append(v)
            if v.kind == "disk_on_enemy_disk" and v.other is not None:
                by_disk.setdefault(v.other, []).append(replace(v, subject=v.other, other=v.subject))
    terrain_setup = tuple(v for v in violations if v.kind not in _DISK_KINDS)
    on_terrain: dict[str, list[str]] = {}
    for o in report.terrain_overlaps:
        on_terrain.setdefault(o.disk, []).append(o.terrain)
    pieces = {t.id: t for t in scene.terrain}
    checks = []
    for d in sorted(scene.disks, key=lambda d: d.id):
        problems: list[Problem] = []
        notes: list[str] = []
        is_reinf = d.id in reinf
        if d.player is None:
            checks.append(DiskCheck(d.id, None, is_reinf, True, (), ("owner unknown: not checked",)))
            continue
        if source == "none":
            notes.append("no deployment zones: give the scene's deployment_zones or the players' edges")
        for v in by_disk.get(d.id, []):
            if is_reinf and v.kind in ("disk_on_enemy_disk", "disk_in_enemy_zone"):
                continue  # a reinforcement may pin other disks (RB p.20)
            problems.append(Problem(v.kind, v.other, v.margin_mm, v.note))
        if not is_reinf:
            for tid in on_terrain.get(d.id, []):
                pre = preset_for(pieces[tid].name)
                if pre is not None and pre.no_deploy_unless and not (set(pre.no_deploy_unless) & set(d.keywords)):
                    problems.append(Problem("no_deploy_terrain", tid, None,
                                            f"{pre.name_es} / {pre.name_en}: disks without "
                                            f"{' or '.join(k.title() for k in pre.no_deploy_unless)} are not "
                                            f"deployed on it ({pre.source})"))
        else:
            if d.tokens is None or d.tokens.activation == 0:
                notes.append("a reinforcement gets an activation token (RB p.13)")
            dangerous = [tid for tid in on_terrain.get(d.id, []) if "dangerous" in
                         {k.partition(":")[0] for k in pieces[tid].keywords}]
            for tid in dangerous:
                notes.append(f"on Dangerous terrain {tid}: roll 1d6 damage (RB p.22)")
            pinned = sorted(p.pinned for p in report.pins if p.pinner == d.id)
            if pinned:
                notes.append(f"pins {', '.join(pinned)} as it enters: no Impact damage (RB p.20-21)")
        checks.append(DiskCheck(d.id, d.player, is_reinf, not problems, tuple(problems), tuple(notes)))
    tol = settings.tolerance_mm
    border = []
    for c in checks:
        for p in c.problems:
            if p.margin_mm is not None and p.margin_mm <= tol:
                border.append(Borderline(p.kind, c.disk, p.other, p.margin_mm, "illegal only just"))
    if scene.deployment_zones:
        border.extend(_near_zone_edges(board, tol))
    return DeploymentResult(scene.deployment_zones, source, tuple(checks), terrain_setup,
                            tuple(sorted(border, key=lambda b: (b.kind, b.a, b.b or ""))), settings.to_json())


def _near_zone_edges(board: Any, tol: float) -> list[Borderline]:
    """Legal disks within the tolerance of leaving their own zone."""
    from rules import geometry

    out = []
    zones = board.scene.deployment_zones
    polys = [geometry.polygon_array(z.polygon_mm) for z in zones]
    for i, d in enumerate(board.disks):
        if d.player is None:
            continue
        own = [float(geometry.circle_within_polygon_margin(board.centres[i:i + 1], board.radii[i:i + 1], zp)[0])
               for z, zp in zip(zones, polys) if z.player == d.player]
        if own and 0 <= max(own) <= tol:
            out.append(Borderline("zone_edge", d.id, d.player, max(own), "inside its zone only just"))
    return out


__all__ = ["zones_from_edges", "check_deployment", "parse_edges", "DeploymentResult", "EDGES"]
