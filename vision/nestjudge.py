"""Is a circle lying wholly within a disk another disk lying on it, or a ring printed in its art?

Seen from above at the face network's 2 mm per map pixel, a small disk lying wholly on a larger one looks like a
ring in the larger one's art, and the verdict turns most such circles down (the eye's commonest miss:
`benchmarks/results/misses.md`); the likeliest of them stay as suspicions (`vision.fit.SuspectedDisk`). This judge
looks at nothing but such a place, at the full 1 px/mm of the rectified image, where a disk's own cut edge, side
wall, border and shadow, and the lower disk's art cut off at its edge, are a few pixels wide: a patch centred on
the suspected circle A, turned so that the lower disk B's centre lies to its left, with two more channels giving
each circle's signed distance (so the network knows where both run). It answers the logit that A is a disk lying
on B.

The network (`vision/models/nestjudge.onnx`) is trained by `python -m vision.nest_training` on the training
families of the randomized world only, on the circles the eye itself turns down there; it runs on ONNX Runtime,
one batch of 64 px patches per frame that has suspicions.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Sequence

import cv2
import numpy as np

from tablesight.errors import InputError
from vision.fit import DEFAULT_CONFIG, DetectorConfig, DiskFit, NestPlace, SuspectedDisk
from vision.locate import ring_colours
from vision.pairjudge import PATCH, Circle, patch_channels
from vision.runtime import judge_logits

MODEL_PATH = Path(__file__).resolve().parent / "models" / "nestjudge.onnx"
REACH_MM = 6.0         # the patch shows at least this much beyond A's outline (its wall, shadow, B's art round it)


def patch_scale(a: Circle) -> float:
    """Patch px per mm: 1, or less for a circle too large to show whole with `REACH_MM` round it."""
    return min(1.0, (PATCH / 2.0) / (a.r + REACH_MM))


def nest_frame(a: Circle, b: Circle) -> np.ndarray:
    """The 2x3 affine map from patch px to mm of the image's grid: centred on A, x pointing from B's centre to
    A's (any fixed direction when the two are concentric), `patch_scale(a)` px per mm."""
    dx, dy = a.x - b.x, a.y - b.y
    d = math.hypot(dx, dy)
    ex, ey = (dx / d, dy / d) if d > 1e-6 else (1.0, 0.0)
    s = 1.0 / patch_scale(a)
    c = PATCH / 2.0 - 0.5
    return np.array([[ex * s, -ey * s, a.x - c * s * (ex - ey)], [ey * s, ex * s, a.y - c * s * (ey + ex)]],
                    np.float64)


def nest_patch(image: np.ndarray, a: Circle, b: Circle, px_per_mm: float = 1.0) -> np.ndarray:
    """The judge's input for "is A a disk lying on B": (5, PATCH, PATCH) float32: B, G, R (0..1, centred), then the
    signed distance to A's and B's circle (mm, negative inside, clipped, scaled to -1..1). `a`, `b` in mm of the
    image's grid (image px / `px_per_mm`)."""
    m = nest_frame(a, b)                                   # patch px -> mm
    to_src = m * px_per_mm
    src = image
    shrink = px_per_mm / patch_scale(a)                    # image px per patch px
    if shrink > 1.5:
        # a finer image is blurred to about the patch's scale first: warping alone would alias
        src = cv2.GaussianBlur(image, (0, 0), 0.5 * math.sqrt(shrink * shrink - 1.0))
    return patch_channels(src, to_src, m, a, b)


def judge_nests(image: np.ndarray, nests: Sequence[tuple[Circle, Circle]], px_per_mm: float = 1.0,
                model_path: Path | str | None = None) -> np.ndarray:
    """For each (A, B), A lying wholly within B: the probability that A is a disk lying on B. `image`: BGR uint8
    at `px_per_mm`; the circles in mm of its grid (px / `px_per_mm`)."""
    if not nests:
        return np.zeros(0)
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise InputError(f"judge_nests: expected a BGR uint8 image, got {image.dtype} {image.shape}")
    x = np.stack([nest_patch(image, a, b, px_per_mm) for a, b in nests])
    out = judge_logits(Path(model_path) if model_path is not None else MODEL_PATH, "nest model",
                       "vision.nest_training", x)
    return 1.0 / (1.0 + np.exp(-np.clip(out, -40.0, 40.0)))


def confirmed_nests(rect: np.ndarray, fits: Sequence[DiskFit], px_per_mm: float,
                    config: DetectorConfig = DEFAULT_CONFIG) -> list[DiskFit]:
    """`fits` with every suspicion and nest place (`DiskFit.nest_places`) the judge finds at least
    `config.nest_probability` likely added as a disk lying on the disk it lies within (a suspicion so claimed is
    no longer one; of circles overlapping each other, the likeliest); with `config.nest_suspect_probability`, each
    fit's suspicion is then the likeliest place within it the judge finds at least that likely and no claimed disk
    overlaps (none where there is no such place). `fits` as they are when the judge is not asked. `rect`: the
    rectified image (`px_per_mm` px per mm) the fits were read from."""
    if config.nest_probability is None and config.nest_suspect_probability is None:
        return list(fits)
    asked: list[tuple[int, SuspectedDisk | NestPlace]] = [
        (k, s) for k, f in enumerate(fits) for s in ((f.suspect,) if f.suspect is not None else ()) + f.nest_places]
    if not asked:
        return list(fits)
    mm = 1.0 / px_per_mm
    nests = [(Circle(s.cx * mm, s.cy * mm, s.r_px * mm), Circle(fits[k].cx * mm, fits[k].cy * mm, fits[k].r_px * mm))
             for k, s in asked]
    probability = judge_nests(rect, nests, px_per_mm, config.nest_model)
    out = list(fits)
    claimed: list[SuspectedDisk | NestPlace] = []
    order = np.argsort(-probability, kind="stable")
    for q in order if config.nest_probability is not None else ():
        k, s = asked[q]
        p = float(probability[q])
        if p < config.nest_probability:
            break
        if any(_overlap(s, c) for c in claimed):
            continue
        claimed.append(s)
        ring = ring_colours(rect, np.array([s.cx]), np.array([s.cy]),
                            np.array([s.r_px - config.ring_depth_mm * px_per_mm]), np.ones((1, config.rays), bool))[0]
        if s is fits[k].suspect:
            out[k] = replace(out[k], suspect=None)
        out.append(DiskFit(cx=s.cx, cy=s.cy, r_px=s.r_px, size=s.size, rim_fraction=s.rim_shown,
                           open_consistency=1.0, residual_px=0.0,
                           ring_bgr=(float(ring[0]), float(ring[1]), float(ring[2])), confidence=min(p, 0.999)))
    if config.nest_suspect_probability is not None:
        # the judge's likeliest place within each disk is its suspicion, the verdict's none
        best: dict[int, SuspectedDisk] = {}
        for q in order:
            k, s = asked[q]
            p = float(probability[q])
            if p < config.nest_suspect_probability:
                break
            if k not in best and not any(_overlap(s, c) for c in claimed):
                best[k] = SuspectedDisk(s.cx, s.cy, s.r_px, s.size, round(p, 4), s.rim_shown)
        return [replace(f, suspect=best.get(k)) if k < len(fits) else f for k, f in enumerate(out)]
    # a suspicion where a disk is now claimed is none
    return [replace(f, suspect=None) if f.suspect is not None and any(_overlap(f.suspect, c) for c in claimed)
            else f for f in out]


def _overlap(a: SuspectedDisk | NestPlace, b: SuspectedDisk | NestPlace) -> bool:
    return math.hypot(a.cx - b.cx, a.cy - b.cy) < a.r_px + b.r_px
