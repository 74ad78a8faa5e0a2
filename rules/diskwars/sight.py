"""Line of sight between disks past terrain (RB p.13, 22), decided exactly by `rules.geometry`.

Two disks see each other if some straight line from any point of one to any point of the other crosses no
Blocks-LOS piece. Disks never block. A piece does not block a line traced from or to a disk that overlaps it,
and a disk overlapping Elevated terrain traces line of sight through any blocking piece. Grazing a corner or
running along an edge is not crossing.

Borderline: a call is listed when an error of at most the tolerance in where the disks are could flip it.
Every disk moved by up to e lies inside the disk grown by e and contains the disk shrunk by e, so a clear call
that survives shrinking both disks by the tolerance, and a blocked call that survives growing them, cannot
flip. The margin is the smallest e that flips the call (bisection, all pairs at once). Terrain outlines are
taken as given.
"""

from __future__ import annotations

import numpy as np

from rules import geometry
from rules.diskwars.board import Board
from rules.diskwars.settings import DiskwarsSettings
from rules.geometry import LosResult
from tablesight.errors import InputError
from tablesight.scene import Scene

_BISECTION_STEPS = 8


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
        self._set: tuple[geometry.Obstacles, np.ndarray] | None = None

    def obstacle_set(self) -> tuple[geometry.Obstacles, np.ndarray]:
        """The blocking pieces as obstacles, and for each polygon its position in self.blocking."""
        if self._set is None:
            polys = [self.board.terrain_polys[t] for t in self.blocking]
            self._set = (geometry.Obstacles(polys), np.arange(len(polys)))
        return self._set

    def _batch(self, i: np.ndarray, j: np.ndarray, delta: float | np.ndarray = 0.0
               ) -> tuple[np.ndarray, np.ndarray]:
        """LOS for pairs (i[k], j[k]) with both disks shrunk by delta (grown if negative)."""
        b = self.board
        obs, owner = self.obstacle_set()
        active = ~(self.blocking_overlap[i] | self.blocking_overlap[j])
        ra = np.maximum(b.radii[i] - delta, 1e-9)
        rb = np.maximum(b.radii[j] - delta, 1e-9)
        return geometry.los_many(b.centres[i], ra, b.centres[j], rb, obs, active[:, owner])

    def los(self, i: int, j: int, delta: float = 0.0) -> LosResult:
        """LOS between disks i and j, with both disks shrunk by `delta` (grown if negative)."""
        b = self.board
        if i == j:
            c = (float(b.centres[i, 0]), float(b.centres[i, 1]))
            return LosResult(True, (c, c))
        if self.on_elevated[i] or self.on_elevated[j] or not self.blocking:
            return _centre_witness(b.centres[i], b.radii[i], b.centres[j], b.radii[j])
        vis, wit = self._batch(np.array([i]), np.array([j]), delta)
        return _result(vis[0], wit[0])

    def all_pairs(self) -> dict[tuple[int, int], tuple[LosResult, float | None]]:
        """(i, j) with i < j -> (LOS, margin when an error of the tolerance could flip the call, else None)."""
        b = self.board
        tol = b.settings.tolerance_mm
        iu, ju = np.triu_indices(b.n, 1)
        out: dict[tuple[int, int], tuple[LosResult, float | None]] = {}
        free = self.on_elevated[iu] | self.on_elevated[ju] | (b.centre_dist[iu, ju] <= b.radii[iu] + b.radii[ju])
        if not self.blocking:
            free[:] = True
        for k in np.flatnonzero(free):
            i, j = int(iu[k]), int(ju[k])
            out[(i, j)] = (_centre_witness(b.centres[i], b.radii[i], b.centres[j], b.radii[j]), None)
        ks = np.flatnonzero(~free)
        if len(ks) == 0:
            return out
        i, j = iu[ks], ju[ks]
        vis, wit = self._batch(i, j, 0.0)
        flips = np.zeros(len(ks), bool)
        if tol > 0:
            # Clear along the centre line, far from every piece even with the segment lengthened by tol into
            # both disks: no error of tol flips it. Everything else is checked with the geometry moved by tol.
            u = b.centres[j] - b.centres[i]
            u /= np.hypot(u[:, 0], u[:, 1])[:, None]
            p = b.centres[i] + b.radii[i, None] * u
            q = b.centres[j] - b.radii[j, None] * u
            centre = vis & np.all(np.abs(wit[:, 0] - p) < 1e-9, axis=1) & np.all(np.abs(wit[:, 1] - q) < 1e-9, axis=1)
            obs, owner = self.obstacle_set()
            active = ~(self.blocking_overlap[i] | self.blocking_overlap[j])[:, owner]
            far = np.zeros(len(ks), bool)
            if centre.any():
                far[centre] = _clearance(p[centre] - tol * u[centre], q[centre] + tol * u[centre], obs,
                                         active[centre]) > tol
            check = np.flatnonzero(vis & ~far)
            if len(check):
                v2, _ = self._batch(i[check], j[check], tol)
                flips[check[~v2]] = True
            check = np.flatnonzero(~vis)
            if len(check):
                v2, _ = self._batch(i[check], j[check], -tol)
                flips[check[v2]] = True
        margins = np.full(len(ks), np.nan)
        fl = np.flatnonzero(flips)
        if len(fl):
            margins[fl] = self._margins(i[fl], j[fl], vis[fl], tol)
        for k in range(len(ks)):
            ii, jj = int(i[k]), int(j[k])
            out[(ii, jj)] = (_result(vis[k], wit[k]), None if np.isnan(margins[k]) else float(margins[k]))
        return dict(sorted(out.items()))

    def _margins(self, i: np.ndarray, j: np.ndarray, visible: np.ndarray, tol: float) -> np.ndarray:
        """Smallest error (<= tol) that flips each pair's LOS call: bisection, every pair in one batch."""
        sign = np.where(visible, 1.0, -1.0)
        lo, hi = np.zeros(len(i)), np.full(len(i), tol)
        for _ in range(_BISECTION_STEPS):
            mid = 0.5 * (lo + hi)
            v, _ = self._batch(i, j, sign * mid)
            flipped = v != visible
            hi = np.where(flipped, mid, hi)
            lo = np.where(flipped, lo, mid)
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


def _clearance(p: np.ndarray, q: np.ndarray, obs: geometry.Obstacles, active: np.ndarray) -> np.ndarray:
    """Distance from each segment to the nearest active obstacle (segments assumed not to cross one)."""
    if obs.count == 0 or len(p) == 0:
        return np.full(len(p), np.inf)
    d1 = geometry._point_segment_distance(p, obs.u, obs.w)
    d2 = geometry._point_segment_distance(q, obs.u, obs.w)
    d3 = geometry._point_segment_pairs_distance(obs.verts, p, q)
    d = np.minimum(np.minimum(d1, d2), d3)
    return np.where(active[:, obs.edge_poly], d, np.inf).min(axis=1)


def line_of_sight(scene: Scene, a_id: str, b_id: str, settings: DiskwarsSettings | None = None) -> LosResult:
    """Can disk a see disk b? With one clear segment from a point of a to a point of b as the witness."""
    board = Board(scene, settings)
    for d in (a_id, b_id):
        if d not in board.index:
            raise InputError(f"line of sight: no disk {d!r} in the scene")
    return Sight(board).los(board.index[a_id], board.index[b_id])
