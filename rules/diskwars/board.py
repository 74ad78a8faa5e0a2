"""A Scene measured once: disk arrays, pairwise distances and overlaps, terrain as prepared polygons.

Every Diskwars rule module reads these numbers instead of measuring again, so one report costs one pass of
pairwise geometry. Disks are kept in id order (sorted), which makes every derived list deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

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
        self.overlap = self.depth > self.settings.contact_tolerance_mm
        #: edge-to-edge distance, 0 when touching or overlapping (RB p.11, 18)
        self.gap = np.maximum(0.0, -self.depth)
        np.fill_diagonal(self.gap, 0.0)
        self.terrain: tuple[Terrain, ...] = tuple(scene.terrain)
        self.terrain_polys = [geometry.polygon_array(t.polygon_mm) for t in self.terrain]

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
        i, j = np.nonzero(np.triu(self.overlap, 1))
        if len(i):
            a = geometry.lens_area(self.centre_dist[i, j], self.radii[i], self.radii[j])
            out[i, j] = a
            out[j, i] = a
        return out

    @cached_property
    def terrain_depth(self) -> np.ndarray:
        """(disks, terrain): how far each disk reaches into each piece (<= 0: apart)."""
        out = np.full((self.n, len(self.terrain)), -np.inf)
        for k, poly in enumerate(self.terrain_polys):
            if self.n:
                out[:, k] = geometry.circle_polygon_penetration(self.centres, self.radii, poly)
        return out

    @cached_property
    def terrain_overlap(self) -> np.ndarray:
        """(disks, terrain) bool: the disk overlaps the piece (edge contact is not overlap)."""
        return self.terrain_depth > self.settings.contact_tolerance_mm
