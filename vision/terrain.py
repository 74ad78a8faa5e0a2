"""Terrain outlines at setup: segmentation of the rectified battlefield against the felt.

Before the disks are deployed, what is not felt on the battlefield is terrain (or the ruler, which the player
removes or deletes on the page). The felt is modelled from the frame itself (its median colour and its usual
texture); a pixel is terrain when its colour is far from the felt's or its texture is much rougher (a printed
forest can share the felt's green). Blobs become polygons in table mm; disks already found can be cut out.
`update_terrain` keeps pieces (with the names and keywords the players gave them) that have not moved.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

import cv2
import numpy as np

from tablesight.scene import Scene, Terrain
from vision.detect import rectified_frame


@dataclass(frozen=True)
class TerrainConfig:
    px_per_mm: float = 0.5            # segmentation scale
    colour_distance: float = 22.0     # Lab distance from the felt's colour that is not felt
    texture_factor: float = 2.2       # local roughness this many times the felt's is not felt
    min_area_mm2: float = 3000.0      # smaller blobs are clutter (tokens, a dropped die)
    simplify_mm: float = 3.0          # polygon simplification tolerance
    edge_inset_mm: float = 3.0        # ignore this band along the battlefield edge (mat seams, shadows)

    def __post_init__(self) -> None:
        if not 0.1 <= self.px_per_mm <= 2.0:
            raise ValueError("px_per_mm must be within 0.1..2")
        for name in ("colour_distance", "texture_factor", "min_area_mm2", "simplify_mm"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0")


def terrain_mask(rect_bgr: np.ndarray, px_per_mm: float, origin_mm: tuple[float, float],
                 battlefield_mm: tuple[float, float], cfg: TerrainConfig) -> np.ndarray:
    """uint8 mask (255 = terrain) of a rectified image at `px_per_mm`, battlefield only."""
    h, w = rect_bgr.shape[:2]
    lab = cv2.cvtColor(cv2.GaussianBlur(rect_bgr, (5, 5), 0), cv2.COLOR_BGR2LAB).astype(np.float32)
    field = np.zeros((h, w), bool)
    x0 = int(round((-origin_mm[0] + cfg.edge_inset_mm) * px_per_mm))
    y0 = int(round((-origin_mm[1] + cfg.edge_inset_mm) * px_per_mm))
    x1 = int(round((battlefield_mm[0] - origin_mm[0] - cfg.edge_inset_mm) * px_per_mm))
    y1 = int(round((battlefield_mm[1] - origin_mm[1] - cfg.edge_inset_mm) * px_per_mm))
    field[max(y0, 0):min(y1, h), max(x0, 0):min(x1, w)] = True
    felt = np.median(lab[field], axis=0)
    dist = np.linalg.norm(lab - felt[None, None, :], axis=2)
    # The light falls off across the table: a second pass compares with the felt's local colour (felt pixels
    # of the first pass, averaged over ~20 cm, terrain filled with the global felt colour).
    is_felt = (dist <= cfg.colour_distance) & field
    filled = np.where(is_felt[..., None], lab, felt[None, None, :]).astype(np.float32)
    kb = max(3, int(round(200 * px_per_mm)) | 1)
    local = cv2.blur(filled, (kb, kb))
    dist = np.linalg.norm(lab - local, axis=2)
    gray = cv2.cvtColor(rect_bgr, cv2.COLOR_BGR2GRAY).astype(np.float32)
    k = max(3, int(round(6 * px_per_mm)) | 1)
    mean = cv2.blur(gray, (k, k))
    rough = np.sqrt(np.maximum(cv2.blur(gray * gray, (k, k)) - mean * mean, 0.0))
    felt_rough = float(np.median(rough[field])) + 1.0
    mask = ((dist > cfg.colour_distance) | (rough > cfg.texture_factor * felt_rough)) & field
    m = mask.astype(np.uint8) * 255
    kk = max(3, int(round(8 * px_per_mm)) | 1)
    m = cv2.morphologyEx(m, cv2.MORPH_CLOSE, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (kk, kk)))
    m = cv2.morphologyEx(m, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (kk, kk)))
    return m


def capture_terrain(frame_bgr: Any, calibration: Any, config: TerrainConfig | None = None,
                    exclude: Scene | None = None) -> tuple[Terrain, ...]:
    """Terrain pieces on the battlefield as polygons (ids t1, t2, ... by area), without names or keywords."""
    from shapely.geometry import Polygon

    cfg = config or TerrainConfig()
    cal = calibration.with_rectified(px_per_mm=cfg.px_per_mm) if hasattr(calibration, "with_rectified") \
        else calibration
    rect = rectified_frame(frame_bgr, cal)
    ppm = float(getattr(cal, "rectified_px_per_mm", 1.0))
    origin = tuple(getattr(cal, "rectified_origin_mm", (-40.0, -40.0)))
    bf = tuple(getattr(cal, "battlefield_mm", (900.0, 900.0)))
    mask = terrain_mask(rect, ppm, origin, bf, cfg)
    if exclude is not None:
        for d in exclude.disks:
            c = ((d.x_mm - origin[0]) * ppm, (d.y_mm - origin[1]) * ppm)
            cv2.circle(mask, (int(round(c[0])), int(round(c[1]))), int(round((d.radius_mm + 4) * ppm)), 0, -1)
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    pieces = []
    for c in contours:
        area_mm2 = cv2.contourArea(c) / (ppm * ppm)
        if area_mm2 < cfg.min_area_mm2:
            continue
        approx = cv2.approxPolyDP(c, cfg.simplify_mm * ppm, True).reshape(-1, 2).astype(np.float64)
        if len(approx) < 3:
            continue
        pts = approx / ppm + np.array(origin)
        poly = Polygon(pts)
        if not poly.is_valid:
            poly = poly.buffer(0)
            if poly.geom_type != "Polygon":
                poly = max(poly.geoms, key=lambda g: g.area)
            pts = np.array(poly.exterior.coords)[:-1]
        if poly.area < cfg.min_area_mm2 or len(pts) < 3:
            continue
        pieces.append((poly.area, [(round(float(x), 1), round(float(y), 1)) for x, y in pts]))
    pieces.sort(key=lambda p: -p[0])
    return tuple(Terrain(id=f"t{i + 1}", polygon_mm=tuple(pts)) for i, (_, pts) in enumerate(pieces))


def update_terrain(known: Sequence[Terrain], seen: Sequence[Terrain], same_iou: float = 0.75
                   ) -> tuple[Terrain, ...]:
    """Known pieces that are still there (overlap >= `same_iou` with a seen one) stay exactly as they were
    (outline, name, keywords); moved or new pieces come from `seen` (new ids); vanished ones go."""
    from shapely.geometry import Polygon

    out: list[Terrain] = []
    used: set[int] = set()
    for k in known:
        pk = Polygon(k.polygon_mm)
        best, best_iou = None, same_iou
        for i, s in enumerate(seen):
            if i in used:
                continue
            ps = Polygon(s.polygon_mm)
            union = pk.union(ps).area
            iou = pk.intersection(ps).area / union if union > 0 else 0.0
            if iou >= best_iou:
                best, best_iou = i, iou
        if best is not None:
            used.add(best)
            out.append(k)
    taken = {t.id for t in out}
    n = 1
    for i, s in enumerate(seen):
        if i in used:
            continue
        while f"t{n}" in taken:
            n += 1
        out.append(replace(s, id=f"t{n}"))
        taken.add(f"t{n}")
    return tuple(out)
