"""Is a circle whose outline shows whole, but whose inside the face network does not read as a face, a disk?

Chips printed alike and laid side by side read to the face network, at 2 mm per map pixel, as a cloth's pattern:
their faces vanish from the face map while their outlines stay in the rim map (`benchmarks/results/misses.md`).
A cloth printed with round spots of a disk's size gives the same maps. The image tells them apart: a chip's cut
edge, side wall and shadow, a few pixels wide at the full 1 px/mm. This judge looks at such a circle
(`vision.locate.lone_circles`) as the nest judge looks at a circle within a disk (`vision.nestjudge`): a patch
centred on it, with its signed distance in two channels (the nest judge's input with the circle standing in for
both), and answers the logit that it is a disk.

The network (`vision/models/lonejudge.onnx`) is trained by `python -m vision.lone_training` on the training
families of the randomized world only; it runs on ONNX Runtime, one batch of 64 px patches per frame that has such
circles.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from tablesight.errors import InputError
from vision.fit import DEFAULT_CONFIG, DetectorConfig, DiskFit, LoneCircle
from vision.locate import ring_colours
from vision.nestjudge import nest_patch
from vision.pairjudge import Circle
from vision.runtime import judge_logits

MODEL_PATH = Path(__file__).resolve().parent / "models" / "lonejudge.onnx"


def lone_patch(image: np.ndarray, a: Circle, px_per_mm: float = 1.0) -> np.ndarray:
    """The judge's input for "is A a disk": the nest judge's patch (`vision.nestjudge.nest_patch`) with A as both
    circles. `a` in mm of the image's grid (image px / `px_per_mm`)."""
    return nest_patch(image, a, a, px_per_mm)


def judge_lone(image: np.ndarray, circles: Sequence[Circle], px_per_mm: float = 1.0,
               model_path: Path | str | None = None) -> np.ndarray:
    """For each circle: the probability that it is a disk. `image`: BGR uint8 at `px_per_mm`; the circles in mm
    of its grid (px / `px_per_mm`)."""
    if not circles:
        return np.zeros(0)
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise InputError(f"judge_lone: expected a BGR uint8 image, got {image.dtype} {image.shape}")
    x = np.stack([lone_patch(image, a, px_per_mm) for a in circles])
    out = judge_logits(Path(model_path) if model_path is not None else MODEL_PATH, "lone model",
                       "vision.lone_training", x)
    return 1.0 / (1.0 + np.exp(-np.clip(out, -40.0, 40.0)))


def confirmed_lone(rect: np.ndarray, fits: Sequence[DiskFit], lone: Sequence[LoneCircle], px_per_mm: float,
                   config: DetectorConfig = DEFAULT_CONFIG) -> list[DiskFit]:
    """`fits` with every lone circle the judge finds at least `config.lone_probability` likely added as a disk
    (the circles overlap no fit nor each other: `vision.locate.lone_circles`); `fits` as they are when the judge
    is not asked. `rect`: the rectified image (`px_per_mm` px per mm) the circles were read from."""
    if config.lone_probability is None or not lone:
        return list(fits)
    mm = 1.0 / px_per_mm
    probability = judge_lone(rect, [Circle(c.cx * mm, c.cy * mm, c.r_px * mm) for c in lone], px_per_mm,
                             config.lone_model)
    yes = probability >= config.lone_probability
    taken = [c for c, y in zip(lone, yes) if y]
    if not taken:
        return list(fits)
    rings = ring_colours(rect, np.array([c.cx for c in taken]), np.array([c.cy for c in taken]),
                         np.array([c.r_px - config.ring_depth_mm * px_per_mm for c in taken]),
                         np.ones((len(taken), config.rays), bool))
    return list(fits) + [
        DiskFit(cx=c.cx, cy=c.cy, r_px=c.r_px, size=c.size, rim_fraction=c.rim_shown, open_consistency=c.rim_shown,
                residual_px=0.0, ring_bgr=(float(ring[0]), float(ring[1]), float(ring[2])),
                confidence=min(float(p), 0.999))
        for c, p, ring in zip(taken, probability[yes], rings)]
