"""Which of two overlapping disks lies on top, judged from the image of their lens by a small learned network.

The rim map of `vision.facemap` is read at 2 mm per pixel and from a network that must see the whole table in a
few tens of milliseconds: where two disks overlap, it often loses the thin cue that tells which is on top (the
upper disk's border running on unbroken, its edge and side wall over the lower one's face). This judge looks at
nothing but that place, at the full 1 px/mm: a patch of the image around the lens, turned so that disk A lies to
the left and disk B to the right, with two more channels giving each disk's outline (signed distance to each
circle) so the network knows where the two circles run. It answers the logit that A lies on B; the judgement of
a pair is made antisymmetric, (f(A, B) - f(B, A)) / 2, so the order of asking does not matter.

The network (`vision/models/pairjudge.onnx`) is trained by `python -m vision.pair_training` on the training
families of the randomized world only; it runs on ONNX Runtime, a few milliseconds per frame.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import cv2
import numpy as np

from tablesight.errors import InputError
from vision.runtime import judge_logits

MODEL_PATH = Path(__file__).resolve().parent / "models" / "pairjudge.onnx"
PATCH = 64          # patch side, px at 1 px/mm
DIST_CLIP_MM = 4.0  # the circles' signed-distance channels saturate at this distance


@dataclass(frozen=True)
class Circle:
    """A disk's circle in mm of the image's pixel grid (image px / px per mm)."""

    x: float
    y: float
    r: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.x) and math.isfinite(self.y) and math.isfinite(self.r) and self.r > 0):
            raise ValueError(f"Circle needs finite coordinates and a positive radius, got {self}")


def lens_frame(a: Circle, b: Circle) -> np.ndarray:
    """The 2x3 affine map from patch px to image px: x along A -> B, centred on the middle of the lens along the
    line of centres (A's far edge and B's near edge)."""
    dx, dy = b.x - a.x, b.y - a.y
    d = math.hypot(dx, dy)
    ex, ey = (dx / d, dy / d) if d > 1e-6 else (1.0, 0.0)
    nx, ny = -ey, ex
    mid = 0.5 * ((d - b.r) + a.r)
    mx, my = a.x + ex * mid, a.y + ey * mid
    c = PATCH / 2.0 - 0.5
    return np.array([[ex, nx, mx - c * (ex + nx)], [ey, ny, my - c * (ey + ny)]], np.float64)


@lru_cache(maxsize=1)
def _patch_grid() -> tuple[np.ndarray, np.ndarray]:
    """The patch's pixel rows and columns (float64), made once."""
    yy, xx = np.mgrid[0:PATCH, 0:PATCH].astype(np.float64)
    yy.setflags(write=False)
    xx.setflags(write=False)
    return yy, xx


def pair_patch(image: np.ndarray, a: Circle, b: Circle, px_per_mm: float = 1.0) -> np.ndarray:
    """The judge's input for "does A lie on B": (5, PATCH, PATCH) float32: B, G, R (0..1, centred), then the
    signed distance to A's and B's circle (mm, negative inside, clipped, scaled to -1..1). `a`, `b` in mm of the
    image's grid (image px / `px_per_mm`); the patch is always 1 px/mm."""
    m = lens_frame(a, b)                       # patch px -> mm
    if px_per_mm > 1.5:
        # a finer image is brought to 1 px/mm around the patch first: warping alone would alias
        corners = m @ np.array([[0, 0, 1], [PATCH, 0, 1], [0, PATCH, 1], [PATCH, PATCH, 1]], np.float64).T
        x0, y0 = (max(0, int((corners[k].min() - 2) * px_per_mm)) for k in (0, 1))
        x1, y1 = (int((corners[k].max() + 2) * px_per_mm) + 1 for k in (0, 1))
        src = cv2.resize(image[y0:y1, x0:x1], None, fx=1.0 / px_per_mm, fy=1.0 / px_per_mm,
                         interpolation=cv2.INTER_AREA)
        # resized pixel i has its centre at mm (origin + i + 0.5 - 0.5 / px_per_mm)
        to_src = m.copy()
        to_src[0, 2] -= x0 / px_per_mm + 0.5 - 0.5 / px_per_mm
        to_src[1, 2] -= y0 / px_per_mm + 0.5 - 0.5 / px_per_mm
    else:
        src, to_src = image, m * px_per_mm
    return patch_channels(src, to_src, m, a, b)


def patch_channels(src: np.ndarray, to_src: np.ndarray, m: np.ndarray, a: Circle, b: Circle) -> np.ndarray:
    """A patch judge's input (5, PATCH, PATCH) float32: `src` warped by `to_src` (patch px -> `src` px) as B, G, R
    (0..1, centred), then the signed distance to A's and B's circle (mm, negative inside, clipped, scaled to
    -1..1), the patch's pixels lying at mm `m` (patch px -> mm)."""
    bgr = cv2.warpAffine(src, to_src, (PATCH, PATCH), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                         borderMode=cv2.BORDER_REPLICATE)
    yy, xx = _patch_grid()
    px = m[0, 0] * xx + m[0, 1] * yy + m[0, 2]
    py = m[1, 0] * xx + m[1, 1] * yy + m[1, 2]
    out = np.empty((5, PATCH, PATCH), np.float32)
    out[:3] = bgr.transpose(2, 0, 1).astype(np.float32) / 255.0 - 0.5
    for k, c in ((3, a), (4, b)):
        out[k] = np.clip((np.hypot(px - c.x, py - c.y) - c.r) / DIST_CLIP_MM, -1.0, 1.0)
    return out


def judge_pairs(image: np.ndarray, pairs: Sequence[tuple[Circle, Circle]], px_per_mm: float = 1.0,
                model_path: Path | str | None = None) -> np.ndarray:
    """For each (A, B): the logit that A lies on B, antisymmetric in A and B. `image`: BGR uint8, `px_per_mm`
    px per mm; the circles in mm of its grid (px / `px_per_mm`)."""
    if not pairs:
        return np.zeros(0)
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise InputError(f"judge_pairs: expected a BGR uint8 image, got {image.dtype} {image.shape}")
    x = np.stack([pair_patch(image, a, b, px_per_mm) for a, b in pairs]
                 + [pair_patch(image, b, a, px_per_mm) for a, b in pairs])
    out = judge_logits(Path(model_path) if model_path is not None else MODEL_PATH, "pair model",
                       "vision.pair_training", x)
    n = len(pairs)
    return 0.5 * (out[:n] - out[n:])
