"""Deviation (RB p.18-19; FAQ Ranged attacks): where a deviation result against a target goes.

The die is rerolled against the disk NEAREST to the target within short range of it (the shooter may be it).
Disks engaged with the target are always the nearest; among several, the one with the larger overlapped area.
Several deviation results go to different disks in order of nearness. The report lists every target's
candidates in that order, and flags neighbours in the order that a measurement error could swap.

How the other disks' nearness is measured is the setting `deviation_nearest` (RB p.11: range is measured edge
to edge, the default; or centre to centre). Edge to edge, disks that overlap the target without being engaged
with it (the target's own side) are at distance 0; among them the larger overlapped area comes first, as for
engaged disks (RB p.19 gives that order only for engaged disks). Centre to centre they are ordered by that
distance like every other disk. Which disks are candidates at all (within short range of the target) is a range
question, always edge to edge.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from rules import geometry
from rules.diskwars.board import Board
from rules.diskwars.settings import DiskwarsSettings
from rules.report import Borderline, Deviation, DeviationCandidate, Pin
from tablesight.errors import InputError
from tablesight.scene import Scene


def _engaged_with(pins: tuple[Pin, ...]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for p in pins:
        if p.enemy:
            out.setdefault(p.pinner, set()).add(p.pinned)
            out.setdefault(p.pinned, set()).add(p.pinner)
    return out


def _candidates(board: Board, t: int, engaged: set[str]) -> tuple[DeviationCandidate, ...]:
    short = board.scene.range_bands.short
    is_engaged = np.array([d in engaged for d in board.ids], bool) if engaged else np.zeros(board.n, bool)
    pick = is_engaged | (board.gap[t] <= short)
    pick[t] = False
    idx = np.flatnonzero(pick)
    area = board.lens_areas[t, idx]
    gap = board.gap[t, idx]
    cd = board.centre_dist[t, idx]
    eng = is_engaged[idx]
    near = cd if board.settings.deviation_nearest == "centre" else gap
    # engaged first, by larger overlapped area; then the rest by distance, larger overlap, id (idx is id order)
    order = np.lexsort((idx, np.where(eng, 0.0, -area), np.where(eng, -area, near), ~eng))
    plain = [DeviationCandidate(board.ids[k], bool(e), a, g, None, None if e else short - g, c) for k, e, a, g, c in
             zip(idx[order].tolist(), eng[order].tolist(), area[order].tolist(), gap[order].tolist(),
                 cd[order].tolist())]
    out = []
    for k, c in enumerate(plain):
        m = _tie_margin(board, t, c, plain[k + 1]) if k + 1 < len(plain) else None
        out.append(replace(c, order_margin_mm=m))
    return tuple(out)


def _tie_margin(board: Board, t: int, a: DeviationCandidate, b: DeviationCandidate) -> float | None:
    """How much measurement error separates two neighbours in the nearness order (None: the rules decide)."""
    if a.engaged != b.engaged:
        return None  # engaged disks always come first
    if not a.engaged and board.settings.deviation_nearest == "centre":
        return abs(a.centre_distance_mm - b.centre_distance_mm)
    if a.distance_mm > 0 or b.distance_mm > 0:
        return abs(a.distance_mm - b.distance_mm)
    # both overlap the target: ordered by overlapped area; a centre shift of e changes an area by ~chord * e
    chords = []
    for c in (a, b):
        k = board.index[c.disk]
        chords.append(geometry.lens_chord(float(board.centre_dist[t, k]), float(board.radii[t]), float(board.radii[k])))
    rate = max(max(chords), 1e-9)
    return abs(a.overlap_area_mm2 - b.overlap_area_mm2) / rate


def _ties(board: Board, t: int, cands: tuple[DeviationCandidate, ...]) -> list[Borderline]:
    tol = board.settings.tolerance_mm
    out = []
    target = board.ids[t]
    for a, b in zip(cands, cands[1:]):
        m = a.order_margin_mm
        if m is not None and m <= tol:
            out.append(Borderline("deviation", a.disk, b.disk, m, f"nearer to {target}: too close to call"))
    return out


def all_deviations(board: Board, st: Any) -> tuple[tuple[Deviation, ...], tuple[Borderline, ...]]:
    """Deviation candidates for every disk as a target (st: the board's Stacks, for the enemy pins)."""
    engaged = _engaged_with(st.pins)
    out, border = [], []
    for t, target in enumerate(board.ids):
        cands = _candidates(board, t, engaged.get(target, set()))
        out.append(Deviation(target, cands))
        border.extend(_ties(board, t, cands))
    return tuple(out), tuple(border)


def deviation_candidates(scene: Scene, target_id: str, settings: DiskwarsSettings | None = None,
                         report: Any = None) -> tuple[DeviationCandidate, ...]:
    """Deviation candidates against one target, nearest first (engaged disks by overlapped area, then the
    others within short range by edge distance). `report` (the scene's Report) saves recomputing the pins."""
    board = Board(scene, settings)
    if target_id not in board.index:
        raise InputError(f"deviation: no disk {target_id!r} in the scene")
    if report is None:
        from rules.diskwars.stacks import overlaps_and_pins

        pins = overlaps_and_pins(board)[1]
    else:
        pins = report.pins
    return _candidates(board, board.index[target_id], _engaged_with(pins).get(target_id, set()))
