"""A Scene measured once: disk arrays, pairwise distances and overlaps, terrain as prepared polygons.

Every Diskwars rule module reads these numbers instead of measuring again, so one report costs one pass of
pairwise geometry. Disks are kept in id order (sorted), which makes every derived list deterministic.

Edge-to-edge distances are kept for every pair (the report lists every pair with its band), but the pairs that
can overlap or touch, and the disks that can reach into a terrain piece, are found through a spatial index
(shapely's STRtree): the exact tests then run only on those candidates, so a full table of a few hundred disks
costs what its contacts cost, not what all its pairs would. The candidates reach `tolerance_mm` beyond contact,
so every call a measurement error could flip is among them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import shapely

from rules import geometry
from rules.diskwars.settings import DiskwarsSettings
from tablesight.scene import Disk, Scene, Terrain


@dataclass(frozen=True)
class TerrainOverlap:
    disk: str
    terrain: str
    depth_mm: float  # how far the disk reaches into the piece (> contact tolerance: overlapping)


class Board:
    """Scene + settings, with the pairwise measurements every rule needs."""

    def __init__(self, scene: Scene, settings: DiskwarsSettings | None = None):
        self.scene = scene
        self.settings = settings or DiskwarsSettings()
        self.disks: tuple[Disk, ...] = tuple(sorted(scene.disks, key=lambda d: d.id))
        self.ids: tuple[str, ...] = tuple(d.id for d in self.disks)
        self.index = {d: i for i, d in enumerate(self.ids)}
        n = len(self.disks)
        self.n = n
        self.centres = np.array([[d.x_mm, d.y_mm] for d in self.disks], float).reshape(n, 2)
        self.radii = np.array([d.radius_mm for d in self.disks], float)
        self.z = np.array([d.z for d in self.disks], int)
        self.players: tuple[str | None, ...] = tuple(d.player for d in self.disks)
        diff = self.centres[:, None, :] - self.centres[None, :, :]
        self.centre_dist = np.hypot(diff[..., 0], diff[..., 1])
        #: r_i + r_j - |c_i c_j|: > 0 the disks interpenetrate (diagonal meaningless)
        self.depth = self.radii[:, None] + self.radii[None, :] - self.centre_dist
        np.fill_diagonal(self.depth, -np.inf)
        #: edge-to-edge distance, 0 when touching or overlapping (RB p.11, 18)
        self.gap = np.maximum(0.0, -self.depth)
        np.fill_diagonal(self.gap, 0.0)
        #: pairs i < j (row-major order) whose edges come within `reach` of contact: every overlap and every
        #: overlap-or-touch call an error of the tolerance could flip is among them
        self.contacts = self._contact_pairs()
        ci, cj = self.contacts
        self.overlap = np.zeros((n, n), bool)
        hit = self.depth[ci, cj] > self.settings.contact_tolerance_mm
        self.overlap[ci[hit], cj[hit]] = True
        self.overlap[cj[hit], ci[hit]] = True
        self.terrain: tuple[Terrain, ...] = tuple(scene.terrain)
        self.terrain_polys = [geometry.polygon_array(t.polygon_mm) for t in self.terrain]

    @property
    def reach(self) -> float:
        """How far apart (edge to edge) two shapes may be and still have a contact call within the tolerance."""
        s = self.settings
        return max(0.0, s.tolerance_mm - s.contact_tolerance_mm) + 1e-6

    def _contact_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Candidate pairs from an STRtree over the disk centres: within r_i + (largest r) + reach of each
        other, then kept when the two edges really come within reach."""
        if self.n < 2:
            return np.zeros(0, int), np.zeros(0, int)
        pts = shapely.points(self.centres)
        tree = shapely.STRtree(pts)
        qi, tj = tree.query(pts, predicate="dwithin", distance=self.radii + self.radii.max() + self.reach)
        keep = qi < tj
        qi, tj = qi[keep], tj[keep]
        keep = self.depth[qi, tj] >= -self.reach
        qi, tj = qi[keep], tj[keep]
        order = np.lexsort((tj, qi))
        return qi[order].astype(int), tj[order].astype(int)

    def disk(self, disk_id: str) -> Disk:
        return self.disks[self.index[disk_id]]

    def enemies(self, i: int, j: int) -> bool:
        """Both owners known and different (RB: every disk a player does not control is an enemy)."""
        a, b = self.players[i], self.players[j]
        return a is not None and b is not None and a != b

    @cached_property
    def lens_areas(self) -> np.ndarray:
        """Area shared by each overlapping pair (0 elsewhere)."""
        out = np.zeros((self.n, self.n))
        ci, cj = self.contacts
        hit = self.overlap[ci, cj]
        i, j = ci[hit], cj[hit]
        if len(i):
            a = geometry.lens_area(self.centre_dist[i, j], self.radii[i], self.radii[j])
            out[i, j] = a
            out[j, i] = a
        return out

    @cached_property
    def terrain_depth(self) -> np.ndarray:
        """(disks, terrain): how far each disk reaches into each piece (<= 0: apart). Measured for the disks an
        STRtree over the pieces finds within reach of each piece's box; -inf for the others (too far from the
        piece for any call)."""
        out = np.full((self.n, len(self.terrain)), -np.inf)
        if not self.n or not self.terrain:
            return out
        tree = shapely.STRtree([shapely.box(*p.min(axis=0), *p.max(axis=0)) for p in self.terrain_polys])
        grow = (self.radii + self.reach)[:, None]
        boxes = shapely.box(*(self.centres - grow).T, *(self.centres + grow).T)
        disk, piece = tree.query(boxes, predicate="intersects")
        for k in np.unique(piece):
            idx = np.sort(disk[piece == k])
            out[idx, k] = geometry.circle_polygon_penetration(self.centres[idx], self.radii[idx],
                                                              self.terrain_polys[k])
        return out

    @cached_property
    def terrain_overlap(self) -> np.ndarray:
        """(disks, terrain) bool: the disk overlaps the piece (edge contact is not overlap)."""
        return self.terrain_depth > self.settings.contact_tolerance_mm
