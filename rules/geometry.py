"""Game-agnostic plane geometry for the rules: circles, simple polygons, distances and exact line of sight.

Every length is in the caller's unit (millimetres for Diskwars); nothing here knows a game. Polygons are
(M, 2) arrays of vertices of a simple polygon (no repeated closing point); `Obstacles` normalises them.

Line of sight between two disks past polygon obstacles is decided EXACTLY, not by sampling: a clear segment
from a point of disk A to a point of disk B exists iff one exists among finitely many extremal candidates —
the common tangents of the two circles, the lines through an obstacle vertex tangent to either circle, the
lines through two obstacle vertices — plus the centre line as a cheap first try. (Why: in the 2-D space of
lines meeting both disks the free lines form a closed set whose boundary is made of "tangent to A",
"tangent to B" and "through vertex v" curves, so a non-empty free set contains one of those curves'
pairwise intersections.) A segment that only grazes a corner or runs along an edge does not cross a polygon.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

Point = tuple[float, float]

#: Below this distance a point is ON a line or a boundary: grazing a corner or running along an edge is not
#: crossing. Far below any measurement error, far above float64 round-off for table-sized coordinates.
GRAZE_EPS = 1e-7
#: Tangent candidates are moved this far into their disk, so the witness cuts the disk in a real chord.
NUDGE = 1e-5
_ANGLE_EPS = 1e-12


# ---------------------------------------------------------------------------------------------------------------
# Circles


def circle_overlap_depth(c1: Point, r1: float, c2: Point, r2: float) -> float:
    """How far two circles interpenetrate: r1 + r2 - centre distance (negative: the gap between them)."""
    return r1 + r2 - math.hypot(c2[0] - c1[0], c2[1] - c1[1])


def edge_gap(c1: Point, r1: float, c2: Point, r2: float) -> float:
    """Edge-to-edge distance between two disks, 0 when they touch or overlap."""
    return max(0.0, -circle_overlap_depth(c1, r1, c2, r2))


def lens_area(d: float | np.ndarray, r1: float | np.ndarray, r2: float | np.ndarray) -> float | np.ndarray:
    """Area common to two disks of radii r1, r2 whose centres are d apart (vectorised)."""
    d, r1, r2 = np.broadcast_arrays(np.asarray(d, float), np.asarray(r1, float), np.asarray(r2, float))
    out = np.zeros(d.shape)
    rs, rl = np.minimum(r1, r2), np.maximum(r1, r2)
    inside = d <= rl - rs
    out[inside] = np.pi * rs[inside] ** 2
    part = (~inside) & (d < r1 + r2)
    if np.any(part):
        dd, a, b = d[part], r1[part], r2[part]
        ca = np.clip((dd * dd + a * a - b * b) / (2 * dd * a), -1.0, 1.0)
        cb = np.clip((dd * dd + b * b - a * a) / (2 * dd * b), -1.0, 1.0)
        k = (-dd + a + b) * (dd + a - b) * (dd - a + b) * (dd + a + b)
        out[part] = a * a * np.arccos(ca) + b * b * np.arccos(cb) - 0.5 * np.sqrt(np.maximum(k, 0.0))
    return float(out) if out.ndim == 0 else out


def lens_chord(d: float, r1: float, r2: float) -> float:
    """Length of the common chord of two overlapping circles (how fast the lens area grows with depth)."""
    if d >= r1 + r2 or d <= abs(r1 - r2):
        return 0.0
    k = (-d + r1 + r2) * (d + r1 - r2) * (d - r1 + r2) * (d + r1 + r2)
    return math.sqrt(max(k, 0.0)) / d


# ---------------------------------------------------------------------------------------------------------------
# Polygons


def polygon_array(points: Iterable[Sequence[float]]) -> np.ndarray:
    """Vertices as a float (M, 2) array in counter-clockwise order (positive signed area, x right, y up)."""
    arr = np.asarray([[float(x), float(y)] for x, y in points], dtype=float).reshape(-1, 2)
    if len(arr) >= 2:
        # drop repeated points (a closing point, a corner entered twice): every edge has a length
        keep = np.any(np.abs(arr - np.roll(arr, 1, axis=0)) > 0, axis=1)
        arr = arr[keep] if keep.any() else arr[:1]
    if signed_area(arr) < 0:
        arr = arr[::-1].copy()
    return arr


def signed_area(poly: np.ndarray) -> float:
    x, y = poly[:, 0], poly[:, 1]
    return 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(np.roll(x, -1), y))


def point_segment_distance(pts: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distances (N, E) from points (N, 2) to segments a->b (E, 2)."""
    ab = b - a
    ll = np.einsum("ij,ij->i", ab, ab)
    ll = np.where(ll > 0, ll, 1.0)
    ap = pts[:, None, :] - a[None, :, :]
    t = np.clip(np.einsum("nej,ej->ne", ap, ab) / ll, 0.0, 1.0)
    closest = a[None] + t[..., None] * ab[None]
    return np.hypot(pts[:, None, 0] - closest[..., 0], pts[:, None, 1] - closest[..., 1])


def points_in_polygon(pts: np.ndarray, poly: np.ndarray) -> np.ndarray:
    """Even-odd inside test (boundary points may go either way: combine with a boundary distance)."""
    pts = np.atleast_2d(np.asarray(pts, float))
    a, b = poly, np.roll(poly, -1, axis=0)
    px, py = pts[:, None, 0], pts[:, None, 1]
    ay, by = a[None, :, 1], b[None, :, 1]
    straddle = (ay > py) != (by > py)
    with np.errstate(divide="ignore", invalid="ignore"):
        xcross = a[None, :, 0] + (py - ay) * (b[None, :, 0] - a[None, :, 0]) / (by - ay)
    return (np.count_nonzero(straddle & (px < xcross), axis=1) % 2) == 1


def signed_distance_to_polygon(pts: np.ndarray, poly: np.ndarray) -> np.ndarray:
    """Distance from each point to the polygon's boundary, positive inside, negative outside."""
    pts = np.atleast_2d(np.asarray(pts, float))
    dist = point_segment_distance(pts, poly, np.roll(poly, -1, axis=0)).min(axis=1)
    return np.where(points_in_polygon(pts, poly), dist, -dist)


def circle_polygon_penetration(centres: np.ndarray, radii: np.ndarray, poly: np.ndarray) -> np.ndarray:
    """How far each circle reaches into the polygon: r + signed distance of its centre (<= 0: apart).

    Circle and polygon overlap (share area) iff this is > 0; compare with a contact tolerance so that edge
    contact is not overlap."""
    return np.asarray(radii, float) + signed_distance_to_polygon(centres, poly)


def circle_within_polygon_margin(centres: np.ndarray, radii: np.ndarray, poly: np.ndarray) -> np.ndarray:
    """How far each circle stays inside the polygon: signed centre distance - r (>= 0: wholly inside)."""
    return signed_distance_to_polygon(centres, poly) - np.asarray(radii, float)


def circle_rect_margins(centres: np.ndarray, radii: np.ndarray, width: float, height: float
                        ) -> tuple[np.ndarray, np.ndarray]:
    """For circles and the rectangle [0, width] x [0, height]: (inside margin, outside margin).

    inside margin >= 0: wholly inside (by that much); outside margin >= 0: wholly outside (by that much)."""
    c = np.atleast_2d(np.asarray(centres, float))
    r = np.asarray(radii, float)
    to_edge = np.minimum.reduce([c[:, 0], width - c[:, 0], c[:, 1], height - c[:, 1]])
    inside = to_edge - r
    dx = np.maximum.reduce([-c[:, 0], c[:, 0] - width, np.zeros(len(c))])
    dy = np.maximum.reduce([-c[:, 1], c[:, 1] - height, np.zeros(len(c))])
    outside = np.where(to_edge > 0, -(to_edge + r), np.hypot(dx, dy) - r)
    return inside, outside


# ---------------------------------------------------------------------------------------------------------------
# Obstacles and segment tests


class Obstacles:
    """Simple polygons prepared for fast segment tests (edges, vertices and corner directions as arrays)."""

    def __init__(self, polygons: Sequence[np.ndarray]):
        self.polygons = [polygon_array(p) for p in polygons]
        n = len(self.polygons)
        self.count = n
        if n == 0:
            z2 = np.zeros((0, 2))
            self.u = self.w = self.eu = self.verts = self.e_next = self.e_prev = z2
            self.edge_poly = self.vert_poly = np.zeros(0, int)
            self.kind = np.zeros(0, int)
            self.starts = np.zeros(0, int)
            self.lo = self.hi = z2
            return
        self.u = np.concatenate(self.polygons)
        self.w = np.concatenate([np.roll(p, -1, axis=0) for p in self.polygons])
        e = self.w - self.u
        self.eu = e / np.maximum(np.hypot(e[:, 0], e[:, 1]), 1e-300)[:, None]
        self.edge_poly = np.concatenate([np.full(len(p), i) for i, p in enumerate(self.polygons)])
        self.starts = np.cumsum([0] + [len(p) for p in self.polygons[:-1]])
        self.verts = self.u
        self.vert_poly = self.edge_poly
        prev = np.concatenate([np.roll(p, 1, axis=0) for p in self.polygons])
        self.e_next = self.eu
        ep = prev - self.verts
        self.e_prev = ep / np.maximum(np.hypot(ep[:, 0], ep[:, 1]), 1e-300)[:, None]
        turn = _cross(self.e_next, self.e_prev)
        # 1 convex corner, -1 reflex corner, 0 straight (a vertex in the middle of an edge)
        self.kind = np.where(turn > _ANGLE_EPS, 1, np.where(turn < -_ANGLE_EPS, -1, 0))
        self.lo = np.array([p.min(axis=0) for p in self.polygons])
        self.hi = np.array([p.max(axis=0) for p in self.polygons])

    def subset(self, keep: Sequence[int]) -> "Obstacles":
        return Obstacles([self.polygons[i] for i in keep])


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def _direction_enters(obs: Obstacles, d: np.ndarray) -> np.ndarray:
    """(N, V): does direction d (N, 2, unit) leave vertex v into the polygon's interior (strictly)?"""
    en, ep = obs.e_next[None], obs.e_prev[None]
    dd = d[:, None, :]
    c_nd = _cross(en, dd)  # > 0: d is left of (counter-clockwise from) the outgoing edge
    c_dp = _cross(dd, ep)  # > 0: d is right of (clockwise from) the incoming edge reversed
    convex_in = (c_nd > GRAZE_EPS) & (c_dp > GRAZE_EPS)
    reflex_out = (_cross(ep, dd) >= -GRAZE_EPS) & (-c_nd >= -GRAZE_EPS)
    kind = obs.kind[None]
    return np.where(kind == 1, convex_in, np.where(kind == -1, ~reflex_out, c_nd > GRAZE_EPS))


def segments_clear(p: np.ndarray, q: np.ndarray, obs: Obstacles, active: np.ndarray | None = None) -> np.ndarray:
    """For segments p[i] -> q[i]: True when the segment crosses no obstacle's interior.

    `active` (N, polygons) says which obstacles count for each segment (default: all). Touching a corner or
    running along an edge is not crossing (within GRAZE_EPS)."""
    p = np.atleast_2d(np.asarray(p, float))
    q = np.atleast_2d(np.asarray(q, float))
    n = len(p)
    clear = np.ones(n, bool)
    if obs.count == 0 or n == 0:
        return clear
    if active is None:
        active = np.ones((n, obs.count), bool)
    # only obstacles whose bounding box meets the segment's can be crossed
    lo = np.minimum(p, q) - GRAZE_EPS
    hi = np.maximum(p, q) + GRAZE_EPS
    act = active & np.all(obs.hi[None] >= lo[:, None], axis=2) & np.all(obs.lo[None] <= hi[:, None], axis=2)
    rows = np.flatnonzero(act.any(axis=1))
    if len(rows):
        clear[rows] = ~_segments_blocked(p[rows], q[rows], obs, act[rows])
    return clear


def _segments_blocked(p: np.ndarray, q: np.ndarray, obs: Obstacles, active: np.ndarray) -> np.ndarray:
    d = q - p
    length = np.hypot(d[:, 0], d[:, 1])
    du = d / np.maximum(length, 1e-300)[:, None]
    edge_on = active[:, obs.edge_poly]

    # 1. proper crossings of an edge: both ends of each strictly on opposite sides of the other
    rel_u = obs.u[None] - p[:, None, :]
    s1 = _cross(du[:, None, :], rel_u)
    s2 = s1 + _cross(du[:, None, :], (obs.w - obs.u)[None])
    s3 = -_cross(obs.eu[None], rel_u)
    s4 = s3 + _cross(obs.eu[None], d[:, None, :])
    proper = (((s1 > GRAZE_EPS) & (s2 < -GRAZE_EPS)) | ((s1 < -GRAZE_EPS) & (s2 > GRAZE_EPS))) & (
        ((s3 > GRAZE_EPS) & (s4 < -GRAZE_EPS)) | ((s3 < -GRAZE_EPS) & (s4 > GRAZE_EPS)))
    blocked = np.any(proper & edge_on, axis=1)

    # 2. through a vertex into the interior (s1 is the signed distance of every vertex from the segment's line)
    near_line = (np.abs(s1) <= GRAZE_EPS) & edge_on
    if np.any(near_line):
        rows = np.flatnonzero(np.any(near_line, axis=1) & ~blocked)
        if len(rows):
            tv = np.einsum("nvj,nj->nv", rel_u[rows], du[rows])
            ln = length[rows, None]
            touch = near_line[rows] & (tv >= -GRAZE_EPS) & (tv <= ln + GRAZE_EPS)
            fwd = _direction_enters(obs, du[rows]) & (tv < ln - GRAZE_EPS)
            bwd = _direction_enters(obs, -du[rows]) & (tv > GRAZE_EPS)
            blocked[rows] |= np.any(touch & (fwd | bwd), axis=1)

    # 3. wholly inside (no boundary crossing at all): the midpoint strictly inside an active polygon
    rows = np.flatnonzero(~blocked)
    if len(rows):
        m = 0.5 * (p[rows] + q[rows])
        my = m[:, None, 1]
        uy, wy = obs.u[None, :, 1], obs.w[None, :, 1]
        straddle = (uy > my) != (wy > my)
        with np.errstate(divide="ignore", invalid="ignore"):
            xc = obs.u[None, :, 0] + (my - uy) * (obs.w[None, :, 0] - obs.u[None, :, 0]) / (wy - uy)
        hits = (straddle & (m[:, None, 0] < xc)).astype(np.int64)
        parity = (np.add.reduceat(hits, obs.starts, axis=1) % 2 == 1) & active[rows]
        cand = np.flatnonzero(parity.any(axis=1))
        if len(cand):
            dist = np.minimum.reduceat(point_segment_distance(m[cand], obs.u, obs.w), obs.starts, axis=1)
            inside = parity[cand] & (dist > GRAZE_EPS)
            blocked[rows[cand]] |= np.any(inside, axis=1)
    return blocked


# ---------------------------------------------------------------------------------------------------------------
# Exact line of sight between two disks


@dataclass(frozen=True)
class LosResult:
    """Line of sight between two disks: `witness` is one clear segment from a point of the first disk to a
    point of the second (None when blocked)."""

    visible: bool
    witness: tuple[Point, Point] | None = None


def _inner_segments(p0: np.ndarray, u: np.ndarray, ca: np.ndarray, ra: np.ndarray, cb: np.ndarray,
                    rb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For lines p0[k] + t u[k] (u unit) and disks (ca[k], ra[k]), (cb[k], rb[k]): the part of the line
    between the two disks' chords. Returns (line meets both disks, p on A, q on B)."""
    ta = np.einsum("nj,nj->n", ca - p0, u)
    tb = np.einsum("nj,nj->n", cb - p0, u)
    ha = _cross(u, ca - p0)
    hb = _cross(u, cb - p0)
    ok = (np.abs(ha) <= ra + GRAZE_EPS) & (np.abs(hb) <= rb + GRAZE_EPS)
    ka = np.sqrt(np.maximum(ra * ra - ha * ha, 0.0))
    kb = np.sqrt(np.maximum(rb * rb - hb * hb, 0.0))
    forward = ta <= tb
    t_p = np.where(forward, ta + ka, ta - ka)
    t_q = np.where(forward, tb - kb, tb + kb)
    return ok, p0 + t_p[:, None] * u, p0 + t_q[:, None] * u


def _first_per_group(group: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For candidates listed group by group (groups ascending): the groups with a True, and the index of their
    first True candidate."""
    idx = np.flatnonzero(ok)
    groups, first = np.unique(group[idx], return_index=True)
    return groups, idx[first]


def los_many(ca: np.ndarray, ra: np.ndarray, cb: np.ndarray, rb: np.ndarray, obstacles: Obstacles,
             active: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact line of sight for N disk pairs at once: disk (ca[i], ra[i]) to disk (cb[i], rb[i]) past the
    obstacles that `active[i]` (N, polygons) marks (default: all).

    Returns (visible (N,), witness (N, 2, 2)): one clear segment from a point of the first disk to a point of
    the second, NaN when blocked. Disks that touch or overlap always see each other (witness: centre to
    centre, which lies in their union). Candidates are tried cheapest first: the centre line for every pair,
    then the common tangents, the vertex tangents and the vertex-vertex lines for the pairs still blocked."""
    ca = np.asarray(ca, float).reshape(-1, 2)
    cb = np.asarray(cb, float).reshape(-1, 2)
    n = len(ca)
    ra = np.broadcast_to(np.asarray(ra, float), (n,)).copy()
    rb = np.broadcast_to(np.asarray(rb, float), (n,)).copy()
    obs = obstacles
    if active is None:
        active = np.ones((n, obs.count), bool)
    visible = np.zeros(n, bool)
    witness = np.full((n, 2, 2), np.nan)
    v = cb - ca
    dist = np.hypot(v[:, 0], v[:, 1])
    touching = dist <= ra + rb
    visible[touching] = True
    witness[touching, 0], witness[touching, 1] = ca[touching], cb[touching]
    todo = np.flatnonzero(~touching)
    if len(todo) == 0:
        return visible, witness
    u = v[todo] / dist[todo, None]
    p, q = ca[todo] + ra[todo, None] * u, cb[todo] - rb[todo, None] * u
    if obs.count:
        # only obstacles whose box meets the box of the two disks can touch a segment between them
        lo = np.minimum(ca[todo] - ra[todo, None], cb[todo] - rb[todo, None]) - GRAZE_EPS
        hi = np.maximum(ca[todo] + ra[todo, None], cb[todo] + rb[todo, None]) + GRAZE_EPS
        near = np.all(obs.hi[None] >= lo[:, None], axis=2) & np.all(obs.lo[None] <= hi[:, None], axis=2)
        act = active[todo] & near
        clear = segments_clear(p, q, obs, act)
    else:
        act = np.zeros((len(todo), 0), bool)
        clear = np.ones(len(todo), bool)
    visible[todo[clear]] = True
    witness[todo[clear], 0], witness[todo[clear], 1] = p[clear], q[clear]
    rest = np.flatnonzero(~clear)  # positions within todo
    if len(rest) == 0:
        return visible, witness

    def settle(group: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        """Try lines through a[k], b[k] for pair todo[group[k]]; record the first clear one of each pair."""
        nonlocal rest
        if len(group) == 0:
            return
        d = b - a
        ln = np.hypot(d[:, 0], d[:, 1])
        good = ln > GRAZE_EPS
        group, a, d, ln = group[good], a[good], d[good], ln[good]
        du = d / ln[:, None]
        pi = todo[group]
        ok, sp, sq = _inner_segments(a, du, ca[pi], ra[pi], cb[pi], rb[pi])
        group, sp, sq = group[ok], sp[ok], sq[ok]
        if len(group) == 0:
            return
        clear = segments_clear(sp, sq, obs, act[group])
        done, first = _first_per_group(group, clear)
        visible[todo[done]] = True
        witness[todo[done], 0], witness[todo[done], 1] = sp[first], sq[first]
        rest = np.setdiff1d(rest, done, assume_unique=True)

    # common tangents of the two circles (nudged into both disks)
    g, a, b = _common_tangents(ca[todo[rest]], ra[todo[rest]], cb[todo[rest]], rb[todo[rest]])
    settle(rest[g], a, b)
    if len(rest) == 0:
        return visible, witness
    # vertices that can lie on a segment between the disks: active, within the hull of the two disks
    rest0 = rest.copy()
    pi = todo[rest]
    vd = point_segment_pairs_distance(obs.verts, ca[pi], cb[pi])  # (R, V)
    vmask = act[rest][:, obs.vert_poly] & (vd <= np.maximum(ra[pi], rb[pi])[:, None] + GRAZE_EPS)
    rr, vv = np.nonzero(vmask)
    if len(rr):
        groups, anchors, points = [], [], []
        for c, r in ((ca, ra), (cb, rb)):
            keep, tang = _vertex_tangents(obs.verts[vv], c[todo[rest[rr]]], r[todo[rest[rr]]])
            for t in tang:
                groups.append(rest[rr[keep]])
                anchors.append(obs.verts[vv[keep]])
                points.append(t)
        grp = np.concatenate(groups)
        order = np.argsort(grp, kind="stable")
        settle(grp[order], np.concatenate(anchors)[order], np.concatenate(points)[order])
    if len(rest) == 0:
        return visible, witness
    # lines through two vertices
    rows = np.searchsorted(rest0, rest)
    m = vmask[rows]
    pair_mask = m[:, :, None] & m[:, None, :] & np.triu(np.ones((m.shape[1], m.shape[1]), bool), 1)[None]
    rr, v1, v2 = np.nonzero(pair_mask)
    if len(rr):
        settle(rest[rr], obs.verts[v1], obs.verts[v2])
    return visible, witness


def point_segment_pairs_distance(pts: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(R, V): distance from every point to the segment a[r] -> b[r]."""
    ab = b - a
    ll = np.maximum(np.einsum("ij,ij->i", ab, ab), 1e-300)
    rel = pts[None] - a[:, None, :]
    t = np.clip(np.einsum("rvj,rj->rv", rel, ab) / ll[:, None], 0.0, 1.0)
    close = a[:, None, :] + t[..., None] * ab[:, None, :]
    return np.hypot(pts[None, :, 0] - close[..., 0], pts[None, :, 1] - close[..., 1])


def _common_tangents(ca: np.ndarray, ra: np.ndarray, cb: np.ndarray, rb: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The four common tangents of each pair of disjoint circles, as (row, point on A, point on B), the
    points nudged inside their disks; rows ascending."""
    v = cb - ca
    dist = np.hypot(v[:, 0], v[:, 1])
    w = v / dist[:, None]
    wp = np.stack([-w[:, 1], w[:, 0]], axis=1)
    rows, ta, tb = [], [], []
    for k, sb in (((rb - ra) / dist, 1.0), (-(ra + rb) / dist, -1.0)):
        s = np.sqrt(np.maximum(0.0, 1.0 - k * k))
        for sign in (1.0, -1.0):
            nrm = k[:, None] * w + sign * s[:, None] * wp  # unit normal: n.ca - c = ra, n.cb - c = sb * rb
            rows.append(np.arange(len(ca)))
            ta.append(ca - (ra - NUDGE)[:, None] * nrm)
            tb.append(cb - sb * (rb - NUDGE)[:, None] * nrm)
    g = np.concatenate(rows)
    order = np.argsort(g, kind="stable")
    return g[order], np.concatenate(ta)[order], np.concatenate(tb)[order]


def _vertex_tangents(v: np.ndarray, c: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Lines through vertex v[k] tangent to circle (c[k], r[k]): (kept rows, [tangent points one side,
    tangent points other side]), the points nudged inside the circle. Vertices inside the circle are dropped."""
    dv = v - c
    dist = np.hypot(dv[:, 0], dv[:, 1])
    keep = dist > r + GRAZE_EPS
    dv, dist, c, r = dv[keep], dist[keep], c[keep], r[keep]
    alpha = np.arccos(np.clip(r / dist, -1.0, 1.0))
    base = np.arctan2(dv[:, 1], dv[:, 0])
    pts = []
    for sgn in (1.0, -1.0):
        ang = base + sgn * alpha
        pts.append(c + (r - NUDGE)[:, None] * np.stack([np.cos(ang), np.sin(ang)], axis=1))
    return keep, pts


def disks_line_of_sight(ca: Point, ra: float, cb: Point, rb: float, obstacles: Obstacles) -> LosResult:
    """Exact line of sight between disks A and B past `obstacles` (all of them count)."""
    vis, wit = los_many(np.asarray(ca, float)[None], np.array([ra]), np.asarray(cb, float)[None], np.array([rb]),
                        obstacles)
    if not vis[0]:
        return LosResult(False, None)
    w = wit[0]
    return LosResult(True, ((float(w[0, 0]), float(w[0, 1])), (float(w[1, 0]), float(w[1, 1]))))


def offset_polygon(poly: np.ndarray, delta: float) -> list[np.ndarray]:
    """The polygon grown (delta > 0) or shrunk (delta < 0) by `delta`, mitred corners; shrinking may split
    it or make it vanish. Used to ask whether a measurement error of `delta` could flip a call."""
    from shapely.geometry import Polygon

    shape = Polygon(poly).buffer(delta, join_style="mitre", mitre_limit=2.0)
    parts = getattr(shape, "geoms", [shape])
    return [np.asarray(g.exterior.coords)[:-1] for g in parts if not g.is_empty and g.area > 0]
