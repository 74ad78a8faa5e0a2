"""Drawn rectified tables: felt, disks with a plain print (art inside a thin border ring), stacks, clutter.

A second disk print beside the renderer's (`vision.synth.art`): the unit tests check the eye on it, and no
training run ever sees it, so it holds the eye to a print it was not taught. The images are already top-down at 1 px/mm (`identity_calibration()` passes them through
unchanged), so the detector is seen apart from the camera.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np


RADII = {"small": 22.0, "medium": 32.0, "large": 44.5}
RING_COLOURS = {"red": (40, 40, 200), "blue": (200, 90, 30), "yellow": (40, 210, 230), "white": (235, 235, 235),
                "olive": (60, 120, 80)}   # olive: an army whose ring barely differs from the green felt
SHIFT = 4  # cv2 drawing with sub-pixel centres: fixed point with 4 fractional bits


def identity_calibration(size=(980, 980)):
    """A real TableCalibration for images that are already rectified (1 px/mm, 40 mm margin)."""
    from calibration.table import TableCalibration

    return TableCalibration(tuple(size), np.array([[1.0, 0, -40.0], [0, 1.0, -40.0], [0, 0, 1.0]]))


@dataclass
class DrawnDisk:
    x_mm: float
    y_mm: float
    size: str
    z: int = 0
    ring: str = "red"
    radius_mm: float | None = None   # None: the size class's (`RADII`); chips of other sizes give their own

    @property
    def radius(self) -> float:
        return RADII[self.size] if self.radius_mm is None else float(self.radius_mm)


def felt(rng, size=(980, 980)):
    w, h = size
    base = np.array([40, 110, 50], np.float32)
    img = base + rng.normal(0, 6, (h, w, 3)).astype(np.float32)
    img = cv2.GaussianBlur(img, (0, 0), 1.2)
    return np.clip(img, 0, 255).astype(np.uint8)


def _pt(x, y):
    return (int(round(x * (1 << SHIFT))), int(round(y * (1 << SHIFT))))


def draw_disk(img, d: DrawnDisk, rng, art=True):
    r = d.radius
    cx, cy = d.x_mm + 40.0, d.y_mm + 40.0
    ring = RING_COLOURS[d.ring]
    cv2.circle(img, _pt(cx, cy), int(round(r * (1 << SHIFT))), ring, -1, cv2.LINE_AA, SHIFT)
    inner = r - min(4.0, 0.2 * r)
    face = tuple(int(v) for v in rng.integers(60, 200, 3))
    cv2.circle(img, _pt(cx, cy), int(round(inner * (1 << SHIFT))), face, -1, cv2.LINE_AA, SHIFT)
    if art:
        # Art: a few shapes and strokes inside the face, clipped to it.
        layer = img.copy()
        for _ in range(6):
            col = tuple(int(v) for v in rng.integers(0, 255, 3))
            ax, ay = rng.uniform(-inner, inner, 2) * 0.6
            kind = rng.integers(0, 3)
            if kind == 0:
                cv2.circle(layer, _pt(cx + ax, cy + ay), int(rng.uniform(3, inner * 0.5) * (1 << SHIFT)), col, -1,
                           cv2.LINE_AA, SHIFT)
            elif kind == 1:
                bx, by = rng.uniform(-inner, inner, 2) * 0.7
                cv2.line(layer, _pt(cx + ax, cy + ay), _pt(cx + bx, cy + by), col, int(rng.integers(1, 4)),
                         cv2.LINE_AA, SHIFT)
            else:
                pts = (np.array([[cx + ax, cy + ay]]) + rng.uniform(-10, 10, (4, 2))).astype(np.int32)
                cv2.fillPoly(layer, [pts], col, cv2.LINE_AA)
        mask = np.zeros(img.shape[:2], np.uint8)
        cv2.circle(mask, _pt(cx, cy), int(round((inner - 1) * (1 << SHIFT))), 255, -1, cv2.LINE_AA, SHIFT)
        m = (mask.astype(np.float32) / 255.0)[..., None]
        np.copyto(img, (layer * m + img * (1 - m)).astype(np.uint8))


def draw_table(disks, seed=0, size=(980, 980), clutter=False, noise=3.0):
    rng = np.random.default_rng(seed)
    img = felt(rng, size)
    if clutter:
        # A ruler (straight bars), two small round tokens and a marker tile in the margin.
        cv2.rectangle(img, (600, 820), (900, 850), (200, 200, 200), -1)
        for k in range(0, 300, 10):
            cv2.line(img, (600 + k, 820), (600 + k, 830), (30, 30, 30), 1)
        cv2.circle(img, (150, 150), 9, (20, 20, 220), -1, cv2.LINE_AA)
        cv2.circle(img, (170, 860), 10, (230, 230, 230), -1, cv2.LINE_AA)
        cv2.rectangle(img, (0, 0), (80, 80), (245, 245, 245), -1)
        cv2.rectangle(img, (10, 10), (70, 70), (10, 10, 10), -1)
        cv2.rectangle(img, (25, 25), (40, 55), (245, 245, 245), -1)
    for d in sorted(disks, key=lambda d: d.z):
        draw_disk(img, d, rng)
    if noise:
        img = np.clip(img.astype(np.float32) + rng.normal(0, noise, img.shape), 0, 255).astype(np.uint8)
    return img


def random_layout(seed, n=40, stacks=6, rings=("red", "blue"), stack_reach=(0.45, 0.85)):
    """n disks without overlaps except `stacks` deliberate overlapping pairs/triples; ring colours drawn from the
    first two of `rings`; a stacked disk's centre lies `stack_reach` (a range, as shares of the two radii's sum)
    from the one below (near 0: nearly centred on it)."""
    rng = np.random.default_rng(seed)
    sizes = ["small", "medium", "large"]
    rings = list(rings)
    disks: list[DrawnDisk] = []
    tries = 0
    while len(disks) < n - stacks and tries < 5000:
        tries += 1
        s = sizes[rng.integers(0, 3)]
        r = RADII[s]
        x, y = rng.uniform(r + 5, 900 - r - 5, 2)
        if all(math.hypot(x - d.x_mm, y - d.y_mm) > r + RADII[d.size] + 3 for d in disks):
            disks.append(DrawnDisk(float(x), float(y), s, 0, rings[rng.integers(0, 2)]))
    for k in range(stacks):
        base = disks[k]
        s = sizes[rng.integers(0, 3)]
        ang = rng.uniform(0, 2 * math.pi)
        dist = rng.uniform(*stack_reach) * (RADII[s] + RADII[base.size])
        disks.append(DrawnDisk(base.x_mm + dist * math.cos(ang), base.y_mm + dist * math.sin(ang), s,
                               base.z + 1, rings[rng.integers(0, 2)]))
    return disks
