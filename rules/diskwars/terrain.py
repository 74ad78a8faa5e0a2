"""Terrain and the battlefield: disks on terrain, control (RB p.19), placement and deployment checks (RB p.5,
12-13; FAQ Deployment), disks off the battlefield (RB p.20)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rules import geometry
from rules.diskwars.board import Board
from rules.report import Borderline, OffBattlefield, SetupViolation, TerrainControl, TerrainOverlap

_EDGES = ("left", "right", "top", "bottom")


@dataclass(frozen=True)
class TerrainRules:
    overlaps: tuple[TerrainOverlap, ...]
    control: tuple[TerrainControl, ...]
    setup_violations: tuple[SetupViolation, ...]
    off_battlefield: tuple[OffBattlefield, ...]
    borderline: tuple[Borderline, ...]


def terrain_rules(board: Board) -> TerrainRules:
    overlaps, border = _terrain_overlaps(board)
    off, off_border = off_battlefield(board)
    return TerrainRules(overlaps, terrain_control(board), setup_violations(board), off, border + off_border)


def _terrain_overlaps(board: Board) -> tuple[tuple[TerrainOverlap, ...], tuple[Borderline, ...]]:
    s = board.settings
    out, border = [], []
    depth = board.terrain_depth
    for i, k in zip(*np.nonzero(board.terrain_overlap)):
        out.append(TerrainOverlap(board.ids[i], board.terrain[k].id, float(depth[i, k])))
    for i, k in zip(*np.nonzero(np.abs(depth - s.contact_tolerance_mm) <= s.tolerance_mm)):
        border.append(Borderline("overlap", board.ids[i], board.terrain[k].id,
                                 float(abs(depth[i, k] - s.contact_tolerance_mm)),
                                 "on terrain" if board.terrain_overlap[i, k] else "touching terrain"))
    out.sort(key=lambda o: (o.terrain, o.disk))
    return tuple(out), tuple(border)


def terrain_control(board: Board) -> tuple[TerrainControl, ...]:
    """A player controls a piece when a disk of theirs overlaps it and no enemy disk does (RB p.19). A disk
    whose owner is unknown could be an enemy: while one overlaps the piece nobody is said to control it
    (setting `unknown_owner_blocks_control`)."""
    out = []
    for k, t in enumerate(board.terrain):
        idx = np.flatnonzero(board.terrain_overlap[:, k])
        disks = tuple(board.ids[i] for i in idx)
        players = tuple(sorted({board.players[i] for i in idx if board.players[i] is not None}))
        unknown = tuple(board.ids[i] for i in idx if board.players[i] is None)
        blocked = bool(unknown) and board.settings.unknown_owner_blocks_control
        controller = players[0] if len(players) == 1 and not blocked else None
        out.append(TerrainControl(t.id, controller, players, disks, unknown))
    return tuple(sorted(out, key=lambda c: c.terrain))


def setup_violations(board: Board) -> tuple[SetupViolation, ...]:
    """Terrain placement (RB p.13): wholly inside the battlefield, never at short range or less from another
    piece or an edge. Deployment (RB p.5, 12-13; FAQ), only when the scene gives deployment zones: each disk
    wholly inside a zone of its player, not overlapping an enemy zone nor an enemy disk."""
    from shapely.geometry import Polygon

    s = board.settings
    short = board.scene.range_bands.short
    w, h = board.scene.battlefield.width_mm, board.scene.battlefield.height_mm
    out: list[SetupViolation] = []

    def too_close(dist: float) -> bool:
        return dist <= short if s.terrain_setup_distance_inclusive else dist < short

    shapes = [Polygon(p) for p in board.terrain_polys]
    for k, t in enumerate(board.terrain):
        poly = board.terrain_polys[k]
        outside = max(float(-poly[:, 0].min()), float(poly[:, 0].max() - w),
                      float(-poly[:, 1].min()), float(poly[:, 1].max() - h))
        if outside > 0:
            out.append(SetupViolation("terrain_outside", t.id, None, outside, "not wholly inside the battlefield"))
        to_edge = (float(poly[:, 0].min()), float(w - poly[:, 0].max()),
                   float(poly[:, 1].min()), float(h - poly[:, 1].max()))
        for name, dist in zip(_EDGES, to_edge):
            if too_close(dist):
                out.append(SetupViolation("terrain_near_edge", t.id, name, short - dist,
                                          f"{max(dist, 0.0):.1f} mm from the {name} edge"))
        for m in range(k + 1, len(board.terrain)):
            dist = shapes[k].distance(shapes[m])
            if too_close(dist):
                out.append(SetupViolation("terrain_near_terrain", t.id, board.terrain[m].id, short - dist,
                                          f"{dist:.1f} mm apart"))
    zones = board.scene.deployment_zones
    if zones:
        zpolys = [geometry.polygon_array(z.polygon_mm) for z in zones]
        for i, d in enumerate(board.disks):
            if d.player is None:
                continue
            c, r = board.centres[i:i + 1], board.radii[i:i + 1]
            own = [float(geometry.circle_within_polygon_margin(c, r, zp)[0])
                   for z, zp in zip(zones, zpolys) if z.player == d.player]
            if own and max(own) < 0:
                out.append(SetupViolation("disk_outside_zone", d.id, d.player, -max(own),
                                          "not wholly inside a deployment zone of its player"))
            for z, zp in zip(zones, zpolys):
                if z.player != d.player:
                    pen = float(geometry.circle_polygon_penetration(c, r, zp)[0])
                    if pen > s.contact_tolerance_mm:
                        out.append(SetupViolation("disk_in_enemy_zone", d.id, z.player, pen,
                                                  "overlaps an enemy deployment zone"))
            for j in np.flatnonzero(board.overlap[i]):
                if j > i and board.enemies(i, int(j)):
                    out.append(SetupViolation("disk_on_enemy_disk", d.id, board.ids[j],
                                              float(board.depth[i, j]), "deployed overlapping an enemy disk"))
    return tuple(sorted(out, key=lambda v: (v.kind, v.subject, v.other or "")))


def off_battlefield(board: Board) -> tuple[tuple[OffBattlefield, ...], tuple[Borderline, ...]]:
    """Disks wholly or partly outside the battlefield (an activated disk that ends wholly outside is a
    casualty, RB p.20)."""
    if board.n == 0:
        return (), ()
    bf = board.scene.battlefield
    inside, outside = geometry.circle_rect_margins(board.centres, board.radii, bf.width_mm, bf.height_mm)
    tol = board.settings.tolerance_mm
    out, border = [], []
    for i, d in enumerate(board.ids):
        if outside[i] >= 0:
            out.append(OffBattlefield(d, True, float(outside[i])))
        elif inside[i] < 0:
            out.append(OffBattlefield(d, False, float(min(-inside[i], -outside[i]))))
        if abs(inside[i]) <= tol or abs(outside[i]) <= tol:
            m = float(min(abs(inside[i]), abs(outside[i])))
            border.append(Borderline("off_battlefield", d, None, m, "on the battlefield edge"))
    return tuple(out), tuple(border)
