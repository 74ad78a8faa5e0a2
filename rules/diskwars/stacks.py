"""Overlaps, pins (stacks and sandwiches), harried disks, engagements, contests and the melee order.

RB p.4 (pinning, the three-disk stack), p.9-10 (engagements, harried disks, contests), p.18-20 (contests,
overlapping); FAQ (Pinning). See spec/diskwars-rules.md for the project's readings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rules.diskwars.board import Board
from rules.report import Borderline, Contest, Engagement, MeleeOrder, Overlap, Pin

# shapely's circle approximation for sandwich areas: 4 * 64 segments, area error ~1e-4 of the disk's area
_CIRCLE_SEGMENTS = 64


@dataclass(frozen=True)
class Stacks:
    overlaps: tuple[Overlap, ...]
    pins: tuple[Pin, ...]
    harried: tuple[str, ...]
    engagements: tuple[Engagement, ...]
    contests: tuple[Contest, ...]
    melee_order: MeleeOrder
    borderline: tuple[Borderline, ...]


def _upper_lower(board: Board, i: int, j: int) -> tuple[int, int] | None:
    """Which of two overlapping disks lies on top (None: the scene cannot tell)."""
    if board.z[i] != board.z[j]:
        return (i, j) if board.z[i] > board.z[j] else (j, i)
    if board.settings.equal_z_pins:
        return (i, j) if board.ids[i] > board.ids[j] else (j, i)
    return None


def overlaps_and_pins(board: Board) -> tuple[tuple[Overlap, ...], tuple[Pin, ...], tuple[Borderline, ...]]:
    """Every overlapping pair, and who pins whom with sandwiches respected (project reading, see settings)."""
    s = board.settings
    overlaps: list[Overlap] = []
    pins: list[Pin] = []
    borderline: list[Borderline] = []
    ids = board.ids
    # Overlap vs. touch calls a measurement error could flip (all among the board's contact pairs).
    ci, cj = board.contacts
    depth = board.depth[ci, cj]
    near = np.abs(depth - s.contact_tolerance_mm) <= s.tolerance_mm
    for i, j, d in zip(ci[near], cj[near], depth[near]):
        borderline.append(Borderline("overlap", ids[i], ids[j], float(abs(d - s.contact_tolerance_mm)),
                                     "overlapping" if board.overlap[i, j] else "touching"))
    hit = board.overlap[ci, cj]
    pairs = list(zip(ci[hit], cj[hit]))
    for i, j in pairs:
        order = _upper_lower(board, int(i), int(j))
        area = float(board.lens_areas[i, j])
        if order is None:
            a, b = ids[i], ids[j]
            overlaps.append(Overlap(a, b, float(board.depth[i, j]), area))
            borderline.append(Borderline("stacking", a, b, 0.0, "same z: which disk is on top is the players' call"))
            continue
        up, lo = order
        overlaps.append(Overlap(ids[up], ids[lo], float(board.depth[up, lo]), area))
        pinned, partial, sliver = _pins_through(board, up, lo)
        if pinned:
            pins.append(Pin(ids[up], ids[lo], partial=partial, enemy=board.enemies(up, lo)))
        if sliver is not None:
            borderline.append(sliver)
    overlaps.sort(key=lambda o: (o.upper, o.lower))
    pins.sort(key=lambda p: (p.pinner, p.pinned))
    return tuple(overlaps), tuple(pins), tuple(borderline)


def _pins_through(board: Board, up: int, lo: int) -> tuple[bool, bool, Borderline | None]:
    """(pins, partial, sliver) for the upper disk `up` over `lo`: RB p.4 sandwiches, FAQ Pinning, project reading
    for partial sandwiches (the lens of up over lo, less the disks between them, keeps some area). `sliver` is a
    `sandwich` borderline call when a measurement error of the tolerance could make or break the pin through
    that uncovered area."""
    areas = sandwich_areas(board, up, lo)
    if areas is None:
        return True, False, None
    lens, left = areas
    tol = board.settings.sandwich_area_tolerance_mm2
    pinned = left > tol
    margin = sandwich_margin(board, up, lo, pinned)
    sliver = None
    if margin is not None:
        ids = board.ids
        what = "pins" if pinned else "does not pin"
        sliver = Borderline("sandwich", ids[up], ids[lo], margin,
                            f"{ids[up]} {what} {ids[lo]}: {left:.1f} mm² of their overlap left uncovered by the "
                            f"disks between (threshold {tol:g} mm²)")
    if not pinned:
        return False, False, sliver
    return True, (lens - left) > tol, sliver


def _between(board: Board, up: int, lo: int) -> list[int]:
    zu, zl = board.z[up], board.z[lo]
    return [int(k) for k in np.flatnonzero(board.overlap[up] & board.overlap[lo]) if zl < board.z[k] < zu]


def _disk_shape(board: Board, k: int, grow: float = 0.0):
    from shapely.geometry import Point

    return Point(board.centres[k]).buffer(max(board.radii[k] + grow, 1e-6), quad_segs=_CIRCLE_SEGMENTS)


def sandwich_areas(board: Board, up: int, lo: int, grow: float = 0.0) -> tuple[float, float] | None:
    """For an upper disk over a lower one with disks between them in the stack (overlapping both): the area
    of the lens up ∩ lo and the part of it those disks leave uncovered. None when no disk is between.

    grow > 0 bounds what any error of that size could leave uncovered (up and lo grown by it, the disks
    between shrunk); grow < 0 bounds the least (up and lo shrunk, the disks between grown): every disk moved
    by up to e lies inside itself grown by e and contains itself shrunk by e."""
    between = _between(board, up, lo)
    if not between:
        return None
    from shapely.ops import unary_union

    lens = _disk_shape(board, up, grow).intersection(_disk_shape(board, lo, grow))
    cover = unary_union([_disk_shape(board, k, -grow) for k in between])
    return float(lens.area), float(lens.difference(cover).area)


def sandwich_margin(board: Board, up: int, lo: int, pinned: bool) -> float | None:
    """The smallest measurement error (to 1/64 of the tolerance) that could flip a sandwich pin decided by its
    uncovered area, or None when an error of the tolerance cannot (the disks' positions taken as uncertain by the
    tolerance each; a bound, so the margin errs on the side of warning)."""
    s = board.settings
    if s.tolerance_mm <= 0:
        return None
    thr = s.sandwich_area_tolerance_mm2

    def flips(e: float) -> bool:
        areas = sandwich_areas(board, up, lo, e if not pinned else -e)
        if areas is None:
            return False
        left = areas[1]
        return left <= thr if pinned else left > thr

    if not flips(s.tolerance_mm):
        return None
    lo_e, hi_e = 0.0, s.tolerance_mm
    for _ in range(6):
        mid = 0.5 * (lo_e + hi_e)
        if flips(mid):
            hi_e = mid
        else:
            lo_e = mid
    return hi_e


def harried_disks(board: Board, pins: tuple[Pin, ...]) -> tuple[str, ...]:
    """Disks pinned by an enemy that also pin an enemy (RB p.9, "hostigado")."""
    pinners = {p.pinner for p in pins if p.enemy}
    pinned = {p.pinned for p in pins if p.enemy}
    return tuple(sorted(pinners & pinned))


def engagements_of(pins: tuple[Pin, ...]) -> tuple[tuple[Engagement, ...], tuple[Borderline, ...]]:
    """Connected components of the graph whose nodes are (disk, role) and whose edges are enemy pins.

    Ids E1, E2, ... follow the order of (sorted attackers, sorted defenders), so the same scene always gets the
    same ids whatever order its disks were listed in."""
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def find(x: tuple[str, str]) -> tuple[str, str]:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for p in pins:
        if p.enemy:
            a, b = find((p.pinner, "attacker")), find((p.pinned, "defender"))
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for node in list(parent):
        groups.setdefault(find(node), []).append(node)
    comps = []
    for nodes in groups.values():
        att = tuple(sorted(d for d, r in nodes if r == "attacker"))
        dfn = tuple(sorted(d for d, r in nodes if r == "defender"))
        comps.append((att, dfn))
    comps.sort()
    engagements = tuple(Engagement(f"E{k + 1}", att, dfn) for k, (att, dfn) in enumerate(comps))
    borderline = []
    for e in engagements:
        both = sorted(set(e.attackers) & set(e.defenders))
        for d in both:
            # Possible only with 3+ players and a partial sandwich: the rules say no disk is both in one fight.
            borderline.append(Borderline("engagement", d, None, 0.0,
                                         f"{d} is attacker and defender in {e.id}: the players' call"))
    return engagements, tuple(borderline)


def contests_and_order(engagements: tuple[Engagement, ...], harried: tuple[str, ...], first_player: str | None,
                       mode: str = "pairwise") -> tuple[tuple[Contest, ...], MeleeOrder, tuple[Borderline, ...]]:
    """Contests (engagements sharing a harried disk) and the top-down order inside them (RB p.10, 18-19):
    the engagement where a harried disk is the DEFENDER comes before the one where it is the ATTACKER.

    mode (setting `contest_order`): "pairwise" links each harried disk's two engagements; "all_defending_first"
    reads RB p.18 across the contest: every engagement with a harried defender before every engagement with a
    harried attacker."""
    pos = {e.id: k for k, e in enumerate(engagements)}
    as_def: dict[str, list[str]] = {}
    as_att: dict[str, list[str]] = {}
    for e in engagements:
        for d in e.defenders:
            as_def.setdefault(d, []).append(e.id)
        for d in e.attackers:
            as_att.setdefault(d, []).append(e.id)
    # constraints, with the harried disk that makes each one
    constraints: dict[tuple[str, str], set[str]] = {}
    for h in harried:
        for before in as_def.get(h, []):
            for after in as_att.get(h, []):
                if before != after:
                    constraints.setdefault((before, after), set()).add(h)
    # contests: connected components of engagements linked by a shared harried disk
    parent = {e.id: e.id for e in engagements}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in constraints:
        ra, rb = find(a), find(b)
        if ra != rb:
            hi, lo = sorted((ra, rb), key=pos.__getitem__)
            parent[lo] = hi
    members: dict[str, list[str]] = {}
    for e in engagements:
        members.setdefault(find(e.id), []).append(e.id)
    if mode == "all_defending_first":
        for group in members.values():
            gset = set(group)
            hs = {h for h in harried if any(x in gset for x in as_def.get(h, []) + as_att.get(h, []))}
            defending = {(x, h) for h in hs for x in as_def.get(h, []) if x in gset}
            attacking = {(y, h) for h in hs for y in as_att.get(h, []) if y in gset}
            for x, h1 in defending:
                for y, h2 in attacking:
                    if x != y:
                        constraints.setdefault((x, y), set()).update({h1, h2})
    # contradictions: constraints on a cycle (strongly connected components of the constraint graph)
    cyclic = _cyclic_nodes([e.id for e in engagements], list(constraints))
    contests: list[Contest] = []
    borderline: list[Borderline] = []
    for group in members.values():
        if len(group) < 2:
            continue
        group = sorted(group, key=pos.__getitem__)
        gset = set(group)
        hs = sorted({h for (a, b), hh in constraints.items() if a in gset for h in hh})
        call = any(g in cyclic for g in group)
        contests.append(Contest(tuple(group), tuple(hs), players_call=call))
        if call:
            borderline.append(Borderline("contest", group[0], None, 0.0,
                                         "top-down order contradicts itself in contest of "
                                         + ", ".join(group) + ": the players' call"))
    contests.sort(key=lambda c: pos[c.engagements[0]])
    kept = sorted((c for c in constraints if not (c[0] in cyclic and c[1] in cyclic
                                                   and cyclic[c[0]] == cyclic[c[1]])),
                  key=lambda c: (pos[c[0]], pos[c[1]]))
    dropped = sorted((c for c in constraints if c not in set(kept)), key=lambda c: (pos[c[0]], pos[c[1]]))
    sequence = _topological([e.id for e in engagements], kept, pos)
    order = MeleeOrder(must_precede=tuple(kept), sequence=tuple(sequence), contradicted=tuple(dropped),
                       first_player=first_player)
    return tuple(contests), order, tuple(borderline)


def _cyclic_nodes(nodes: list[str], edges: list[tuple[str, str]]) -> dict[str, int]:
    """Nodes on a directed cycle -> the id of their strongly connected component (Tarjan)."""
    adj: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        adj[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: dict[str, int] = {}
    counter = [0]
    comp = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in adj[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                for w in scc:
                    out[w] = comp[0]
            comp[0] += 1

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def _topological(nodes: list[str], edges: list[tuple[str, str]], pos: dict[str, int]) -> list[str]:
    """Kahn's order, always taking the lowest engagement id that is free: deterministic."""
    import heapq

    indeg = {n: 0 for n in nodes}
    adj: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        adj[a].append(b)
        indeg[b] += 1
    heap = [(pos[n], n) for n in nodes if indeg[n] == 0]
    heapq.heapify(heap)
    out = []
    while heap:
        _, n = heapq.heappop(heap)
        out.append(n)
        for m in adj[n]:
            indeg[m] -= 1
            if indeg[m] == 0:
                heapq.heappush(heap, (pos[m], m))
    return out


def first_player(board: Board) -> str | None:
    """The first player chooses the order of the engagements the rules leave free (RB p.9-10): the lowest
    initiative number."""
    players = sorted(board.scene.players, key=lambda p: (p.initiative, p.id))
    return players[0].id if players else None


def stacks(board: Board) -> Stacks:
    overlaps, pins, b1 = overlaps_and_pins(board)
    harried = harried_disks(board, pins)
    engagements, b2 = engagements_of(pins)
    contests, order, b3 = contests_and_order(engagements, harried, first_player(board), board.settings.contest_order)
    return Stacks(overlaps, pins, harried, engagements, contests, order, b1 + b2 + b3)
