"""Line of sight between disks past terrain (RB p.13, 22), decided exactly by `rules.geometry`.

Two disks see each other if some straight line from any point of one to any point of the other crosses no
Blocks-LOS piece. Disks never block. A piece does not block a line traced from or to a disk that overlaps it,
and a disk overlapping Elevated terrain traces line of sight through any blocking piece. Grazing a corner or
running along an edge is not crossing.
"""

from __future__ import annotations

import math

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
        self.elevated = np.array([t.has("elevated") for t in board.terrain], bool)
        self._obstacles: dict[tuple[tuple[int, ...], float], geometry.Obstacles] = {}
        n = board.n
        ov = board.terrain_overlap
        self.on_elevated = ov[:, self.elevated].any(axis=1) if len(board.terrain) else np.zeros(n, bool)
        self.blocking_overlap = ov[:, self.blocking] if self.blocking else np.zeros((n, 0), bool)

    def active(self, i: int, j: int) -> tuple[int, ...]:
        """Positions (within self.blocking) of the pieces that count for the pair i, j."""
        ignore = self.blocking_overlap[i] | self.blocking_overlap[j]
        return tuple(int(k) for k in np.flatnonzero(~ignore))

    def obstacles(self, active: tuple[int, ...], delta: float = 0.0) -> geometry.Obstacles:
        key = (active, round(delta, 9))
        obs = self._obstacles.get(key)
        if obs is None:
            polys = [self.board.terrain_polys[self.blocking[k]] for k in active]
            if delta:
                polys = [part for p in polys for part in geometry.offset_polygon(p, delta)]
            obs = geometry.Obstacles(polys)
            self._obstacles[key] = obs
        return obs

    def los(self, i: int, j: int, delta: float = 0.0) -> LosResult:
        """LOS with every disk shrunk and every blocking piece grown by `delta` (negative: the other way)."""
        b = self.board
        ca, cb = b.centres[i], b.centres[j]
        if i == j:
            return LosResult(True, ((float(ca[0]), float(ca[1])), (float(ca[0]), float(ca[1]))))
        if self.on_elevated[i] or self.on_elevated[j] or not self.blocking:
            return _centre_witness(ca, b.radii[i], cb, b.radii[j])
        ra, rb = b.radii[i] - delta, b.radii[j] - delta
        if ra <= 0 or rb <= 0:
            return LosResult(False, None)
        return geometry.disks_line_of_sight(tuple(ca), ra, tuple(cb), rb, self.obstacles(self.active(i, j), delta))

    def all_pairs(self) -> dict[tuple[int, int], tuple[LosResult, float | None]]:
        """(i, j) with i < j -> (LOS, margin when an error of the tolerance could flip the call, else None)."""
        b = self.board
        tol = b.settings.tolerance_mm
        out: dict[tuple[int, int], tuple[LosResult, float | None]] = {}
        iu, ju = np.triu_indices(b.n, 1)
        if not self.blocking:
            for i, j in zip(iu.tolist(), ju.tolist()):
                out[(i, j)] = (_centre_witness(b.centres[i], b.radii[i], b.centres[j], b.radii[j]), None)
            return out
        # Cheap first pass, all pairs at once: the segment between the disks along the centre line.
        v = b.centres[ju] - b.centres[iu]
        dist = np.hypot(v[:, 0], v[:, 1])
        u = v / np.maximum(dist, 1e-300)[:, None]
        p = b.centres[iu] + b.radii[iu, None] * u
        q = b.centres[ju] - b.radii[ju, None] * u
        active = ~(self.blocking_overlap[iu] | self.blocking_overlap[ju])
        full = self.obstacles(tuple(range(len(self.blocking))))
        trivial = (dist <= b.radii[iu] + b.radii[ju]) | self.on_elevated[iu] | self.on_elevated[ju]
        clear = trivial | geometry.segments_clear(p, q, full, active)
        # Robust when the centre segment, lengthened into both disks by the tolerance, stays that far away.
        pe, qe = p - tol * u, q + tol * u
        far = _clearance(pe, qe, full, active) > tol
        for k, (i, j) in enumerate(zip(iu.tolist(), ju.tolist())):
            if trivial[k]:
                out[(i, j)] = (_centre_witness(b.centres[i], b.radii[i], b.centres[j], b.radii[j]), None)
                continue
            if clear[k]:
                res = LosResult(True, ((float(p[k, 0]), float(p[k, 1])), (float(q[k, 0]), float(q[k, 1]))))
            else:
                res = self.los(i, j)
            margin = None
            if tol > 0 and not (clear[k] and far[k]):
                margin = self.margin(i, j, res.visible, tol)
            out[(i, j)] = (res, margin)
        return out

    def margin(self, i: int, j: int, visible: bool, tol: float) -> float | None:
        """Smallest error (<= tol) that flips the LOS call between disks i and j, or None if none does."""
        sign = 1.0 if visible else -1.0
        if self.los(i, j, sign * tol).visible != visible:
            lo, hi = 0.0, tol
            for _ in range(_BISECTION_STEPS):
                mid = 0.5 * (lo + hi)
                if self.los(i, j, sign * mid).visible != visible:
                    hi = mid
                else:
                    lo = mid
            return hi
        return None


def _centre_witness(ca: np.ndarray, ra: float, cb: np.ndarray, rb: float) -> LosResult:
    v = cb - ca
    d = math.hypot(v[0], v[1])
    if d <= ra + rb or d == 0:
        return LosResult(True, ((float(ca[0]), float(ca[1])), (float(cb[0]), float(cb[1]))))
    u = v / d
    p, q = ca + ra * u, cb - rb * u
    return LosResult(True, ((float(p[0]), float(p[1])), (float(q[0]), float(q[1]))))


def _clearance(p: np.ndarray, q: np.ndarray, obs: geometry.Obstacles, active: np.ndarray) -> np.ndarray:
    """Distance from each segment to the nearest active obstacle boundary (segments assumed not crossing)."""
    if obs.count == 0 or len(p) == 0:
        return np.full(len(p), np.inf)
    d1 = geometry._point_segment_distance(p, obs.u, obs.w)
    d2 = geometry._point_segment_distance(q, obs.u, obs.w)
    # obstacle vertices to the segments
    seg = q - p
    ll = np.maximum(np.einsum("ij,ij->i", seg, seg), 1e-300)
    rel = obs.verts[None] - p[:, None, :]
    t = np.clip(np.einsum("nvj,nj->nv", rel, seg) / ll[:, None], 0.0, 1.0)
    close = p[:, None, :] + t[..., None] * seg[:, None, :]
    d3 = np.hypot(obs.verts[None, :, 0] - close[..., 0], obs.verts[None, :, 1] - close[..., 1])
    d = np.minimum(np.minimum(d1, d2), d3)
    d = np.where(active[:, obs.edge_poly], d, np.inf)
    return d.min(axis=1)


def line_of_sight(scene: Scene, a_id: str, b_id: str, settings: DiskwarsSettings | None = None) -> LosResult:
    """Can disk a see disk b? With one clear segment from a point of a to a point of b as the witness."""
    board = Board(scene, settings)
    for d in (a_id, b_id):
        if d not in board.index:
            raise InputError(f"line of sight: no disk {d!r} in the scene")
    return Sight(board).los(board.index[a_id], board.index[b_id])
