"""Line of sight between disks past terrain (RB p.13, 22), decided exactly by `rules.geometry`.

Two disks see each other if some straight line from any point of one to any point of the other crosses no
Blocks-LOS piece. Disks never block. A piece does not block a line traced from or to a disk that overlaps it,
and a disk overlapping Elevated terrain traces line of sight through any blocking piece — seeing out and being
seen (setting `elevated_sight` "both_ways", default), or seeing out only ("out_only": the pair's line of sight is
then one way when nothing else lets the lower disk see). Grazing a corner or running along an edge is not
crossing.

Borderline: a call is listed when an error of at most the tolerance in where the disks are could flip it.
Every disk moved by up to e lies inside the disk grown by e and contains the disk shrunk by e, so a clear call
that survives shrinking both disks by the tolerance, and a blocked call that survives growing them, cannot
flip. The margin is the smallest e that flips the call (to 1/64 of the tolerance, all pairs at once).
Terrain outlines are taken as given.

Which pieces a sight line can meet is asked of a spatial index (an STRtree over the blocking pieces' boxes,
queried with the box of the two disks): only those pieces are tested against the pair's candidate lines, and a
pair near none is clear along its centre line without further geometry.
"""

from __future__ import annotations

import numpy as np
import shapely

from rules import geometry
from rules.diskwars.board import Board
from rules.diskwars.settings import DiskwarsSettings
from rules.geometry import LosResult
from tablesight.errors import InputError
from tablesight.scene import Scene

_SPLITS = 8  # margins: each round splits the bracket in 8 ...
_ROUNDS = 2  # ... twice: to 1/64 of the tolerance


class Sight:
    """Line of sight for every pair of a board, with the margin of the calls an error could flip."""

    def __init__(self, board: Board):
        self.board = board
        self.blocking = [k for k, t in enumerate(board.terrain) if t.has("blocks_los")]
        n = board.n
        ov = board.terrain_overlap
        elevated = np.array([t.has("elevated") for t in board.terrain], bool)
        self.on_elevated = ov[:, elevated].any(axis=1) if len(board.terrain) else np.zeros(n, bool)
        self.blocking_overlap = ov[:, self.blocking] if self.blocking else np.zeros((n, 0), bool)
        # A disk that reaches into a blocking piece by no more than the contact tolerance is touching it
        # (not overlapping: the piece still blocks). Its lines of sight start from the touching point, so
        # measure them from the disk shrunk by that intrusion.
        self.radii = board.radii.copy()
        if self.blocking and n:
            depth = board.terrain_depth[:, self.blocking]
            intrusion = np.where(self.blocking_overlap, 0.0, np.clip(depth, 0.0, None)).max(axis=1)
            self.radii -= intrusion
        self._set: tuple[geometry.Obstacles, np.ndarray] | None = None
        self._tree: shapely.STRtree | None = None

    def obstacle_set(self) -> tuple[geometry.Obstacles, np.ndarray]:
        """The blocking pieces as obstacles, and for each polygon its position in self.blocking."""
        if self._set is None:
            polys = [self.board.terrain_polys[t] for t in self.blocking]
            self._set = (geometry.Obstacles(polys), np.arange(len(polys)))
        return self._set

    def near_pieces(self, i: np.ndarray, j: np.ndarray, ra: np.ndarray, rb: np.ndarray) -> np.ndarray:
        """(pairs, blocking pieces) bool: the pieces whose box meets the box of disks (i[k], ra[k]) and
        (j[k], rb[k]) — every piece a segment between the two disks could cross — found through an STRtree
        over the pieces' boxes."""
        out = np.zeros((len(i), len(self.blocking)), bool)
        if not len(i) or not self.blocking:
            return out
        if self._tree is None:
            polys = [self.board.terrain_polys[t] for t in self.blocking]
            self._tree = shapely.STRtree([shapely.box(*p.min(axis=0), *p.max(axis=0)) for p in polys])
        c = self.board.centres
        pad = 2 * geometry.GRAZE_EPS
        lo = np.minimum(c[i] - ra[:, None], c[j] - rb[:, None]) - pad
        hi = np.maximum(c[i] + ra[:, None], c[j] + rb[:, None]) + pad
        row, piece = self._tree.query(shapely.box(lo[:, 0], lo[:, 1], hi[:, 0], hi[:, 1]), predicate="intersects")
        out[row, piece] = True
        return out

    def _batch(self, i: np.ndarray, j: np.ndarray, delta: float | np.ndarray = 0.0
               ) -> tuple[np.ndarray, np.ndarray]:
        """LOS for pairs (i[k], j[k]) with both disks shrunk by delta (grown if negative)."""
        b = self.board
        obs, owner = self.obstacle_set()
        ra = np.maximum(self.radii[i] - delta, 1e-9)
        rb = np.maximum(self.radii[j] - delta, 1e-9)
        active = ~(self.blocking_overlap[i] | self.blocking_overlap[j]) & self.near_pieces(i, j, ra, rb)
        return geometry.los_many(b.centres[i], ra, b.centres[j], rb, obs, active[:, owner])

    def _elevated_frees(self, i: int, j: int) -> bool:
        """Does Elevated terrain let disk i see disk j past every blocking piece?"""
        if self.board.settings.elevated_sight == "out_only":
            return bool(self.on_elevated[i])
        return bool(self.on_elevated[i] or self.on_elevated[j])

    def los(self, i: int, j: int, delta: float = 0.0) -> LosResult:
        """Does disk i see disk j (both shrunk by `delta`, grown if negative)? Symmetric unless the setting
        `elevated_sight` is "out_only"."""
        b = self.board
        if i == j:
            c = (float(b.centres[i, 0]), float(b.centres[i, 1]))
            return LosResult(True, (c, c))
        if self._elevated_frees(i, j) or not self.blocking:
            return _centre_witness(b.centres[i], self.radii[i], b.centres[j], self.radii[j])
        vis, wit = self._batch(np.array([i]), np.array([j]), delta)
        return _result(vis[0], wit[0])

    def all_pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """For every pair i < j in np.triu_indices order: (visible, witness (M, 2, 2), margin, one_way) — the
        margin is NaN unless an error of the tolerance could flip the call; one_way is the index of the only disk
        that sees the other (setting elevated_sight="out_only"), -1 when line of sight is mutual or absent."""
        b = self.board
        tol = b.settings.tolerance_mm
        iu, ju = np.triu_indices(b.n, 1)
        m = len(iu)
        visible = np.ones(m, bool)
        margin = np.full(m, np.nan)
        # default witness: the centre line between the two edges (centre to centre when they touch)
        v = b.centres[ju] - b.centres[iu]
        dist = np.hypot(v[:, 0], v[:, 1])
        u = v / np.maximum(dist, 1e-300)[:, None]
        touching = dist <= b.radii[iu] + b.radii[ju]
        r = self.radii
        p = np.where(touching[:, None], b.centres[iu], b.centres[iu] + r[iu, None] * u)
        q = np.where(touching[:, None], b.centres[ju], b.centres[ju] - r[ju, None] * u)
        witness = np.stack([p, q], axis=1)
        one_way = np.full(m, -1, int)
        out_only = b.settings.elevated_sight == "out_only"
        ei, ej = self.on_elevated[iu], self.on_elevated[ju]
        free = ((ei & ej) if out_only else (ei | ej)) | touching
        if not self.blocking:
            free[:] = True
        ks = np.flatnonzero(~free)
        if len(ks) == 0:
            return visible, witness, margin, one_way
        i, j = iu[ks], ju[ks]
        vis, wit = self._batch(i, j, 0.0)
        flips = np.zeros(len(ks), bool)
        if tol > 0:
            # Clear along the centre line, far from every piece even with the segment lengthened by tol into
            # both disks: no error of tol flips it. Everything else is checked with the disks moved by tol.
            pk, qk, uk = p[ks], q[ks], u[ks]
            centre = vis & np.all(np.abs(wit[:, 0] - pk) < 1e-9, axis=1) & np.all(np.abs(wit[:, 1] - qk) < 1e-9, axis=1)
            obs, owner = self.obstacle_set()
            active = ~(self.blocking_overlap[i] | self.blocking_overlap[j])[:, owner]
            far = np.zeros(len(ks), bool)
            if centre.any():
                far[centre] = _clearance(pk[centre] - tol * uk[centre], qk[centre] + tol * uk[centre], obs,
                                         active[centre], tol) > tol
            check = np.flatnonzero(vis & ~far)
            if len(check):
                v2, _ = self._batch(i[check], j[check], tol)
                flips[check[~v2]] = True
            check = np.flatnonzero(~vis)
            if len(check):
                v2, _ = self._batch(i[check], j[check], -tol)
                flips[check[v2]] = True
        fl = np.flatnonzero(flips)
        if len(fl):
            margin[ks[fl]] = self._margins(i[fl], j[fl], vis[fl], tol)
        visible[ks] = vis
        witness[ks] = wit
        if out_only:
            # exactly one of the two on Elevated terrain and blocked otherwise: that one sees the other
            lone = ks[~vis & (ei[ks] | ej[ks])]
            one_way[lone] = np.where(ei[lone], iu[lone], ju[lone])
            visible[lone] = True
            witness[lone] = np.stack([p[lone], q[lone]], axis=1)
        return visible, witness, margin, one_way

    def _margins(self, i: np.ndarray, j: np.ndarray, visible: np.ndarray, tol: float) -> np.ndarray:
        """Smallest error (<= tol, known to flip the call) that flips each pair's LOS call: each round tries
        _SPLITS - 1 evenly spaced errors per pair in one batch and keeps the bracket where the call flips."""
        n = len(i)
        sign = np.where(visible, 1.0, -1.0)
        lo, hi = np.zeros(n), np.full(n, tol)
        k = np.arange(1, _SPLITS)
        for _ in range(_ROUNDS):
            deltas = lo[:, None] + (hi - lo)[:, None] * k[None] / _SPLITS  # (n, SPLITS - 1)
            rows = np.repeat(np.arange(n), len(k))
            v, _ = self._batch(i[rows], j[rows], (sign[:, None] * deltas).ravel())
            flipped = (v != visible[rows]).reshape(n, len(k))
            first = np.where(flipped.any(axis=1), flipped.argmax(axis=1), len(k))  # index into k, len(k): none
            new_hi = np.where(first < len(k), deltas[np.arange(n), np.minimum(first, len(k) - 1)], hi)
            new_lo = np.where(first > 0, deltas[np.arange(n), np.maximum(first - 1, 0)], lo)
            lo, hi = new_lo, new_hi
        return hi


def _result(visible: bool, w: np.ndarray) -> LosResult:
    if not visible:
        return LosResult(False, None)
    return LosResult(True, ((float(w[0, 0]), float(w[0, 1])), (float(w[1, 0]), float(w[1, 1]))))


def _centre_witness(ca: np.ndarray, ra: float, cb: np.ndarray, rb: float) -> LosResult:
    v = cb - ca
    d = float(np.hypot(v[0], v[1]))
    if d <= ra + rb or d == 0:
        return LosResult(True, ((float(ca[0]), float(ca[1])), (float(cb[0]), float(cb[1]))))
    u = v / d
    p, q = ca + ra * u, cb - rb * u
    return LosResult(True, ((float(p[0]), float(p[1])), (float(q[0]), float(q[1]))))


def _clearance(p: np.ndarray, q: np.ndarray, obs: geometry.Obstacles, active: np.ndarray, reach: float
               ) -> np.ndarray:
    """Distance from each segment to the nearest active obstacle (segments assumed not to cross one); any
    value above `reach` may be reported as infinity."""
    out = np.full(len(p), np.inf)
    if obs.count == 0 or len(p) == 0:
        return out
    lo = np.minimum(p, q) - reach
    hi = np.maximum(p, q) + reach
    act = active & np.all(obs.hi[None] >= lo[:, None], axis=2) & np.all(obs.lo[None] <= hi[:, None], axis=2)
    rows = np.flatnonzero(act.any(axis=1))
    if len(rows) == 0:
        return out
    p, q = p[rows], q[rows]
    d1 = geometry.point_segment_distance(p, obs.u, obs.w)
    d2 = geometry.point_segment_distance(q, obs.u, obs.w)
    d3 = geometry.point_segment_pairs_distance(obs.verts, p, q)
    d = np.minimum(np.minimum(d1, d2), d3)
    out[rows] = np.where(act[rows][:, obs.edge_poly], d, np.inf).min(axis=1)
    return out


def line_of_sight(scene: Scene, a_id: str, b_id: str, settings: DiskwarsSettings | None = None) -> LosResult:
    """Can disk a see disk b? With one clear segment from a point of a to a point of b as the witness (the
    segment is the centre line when Elevated terrain lets a see past blocking pieces)."""
    board = Board(scene, settings)
    for d in (a_id, b_id):
        if d not in board.index:
            raise InputError(f"line of sight: no disk {d!r} in the scene")
    return Sight(board).los(board.index[a_id], board.index[b_id])
