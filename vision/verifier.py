"""The learned rim verifier: tells a disk from the circles that only look like one, ray by ray.

Hand-set thresholds on the rim's colour step cannot separate a green-ringed disk on green felt (a weak rim, but a
disk) from a printed ring inside a disk's art or a round patch of terrain art (a strong circle, but no disk). What
does separate them is the whole radial profile across the rim: a disk shows felt (or another disk) outside, its dark
cut edge at the radius, an even band of army colour, the printed line at 0.78 of the radius and art inside.

Two small networks, trained on the renderer's tuning seeds only (`vision.verifier_training`), do the judging:

1. The ray network scores each rim ray of a candidate circle from the colour profile along the ray (Lab, at fixed
   fractions of the radius inside and at fixed distances outside): the probability that the disk's rim shows there.
2. The disk network scores a candidate from what its rays say, taken over the rays that are open (not under a disk
   already accepted) and over all rays, plus the fit's own measures and how it sits in an accepted disk.

Inference is plain numpy on the weights in `vision/models/rim_verifier.npz`; nothing is learnt at run time. With
`DetectorConfig(use_verifier=False)` the detector accepts by its hand-set thresholds instead (kept to compare).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np

MODEL_PATH = Path(__file__).resolve().parent / "models" / "rim_verifier.npz"

# Where each ray is sampled: fractions of the radius inside the rim (the border ring and its printed inner line sit
# at 0.78-1.0 of the radius, the art within), and px beyond the rim (the cut edge, then what the disk lies on).
RAY_FRACTIONS = (0.56, 0.64, 0.70, 0.74, 0.78, 0.82, 0.86, 0.90, 0.94)
RAY_OUTSIDE_PX = (-2.0, -1.0, 0.0, 1.0, 2.0, 3.5, 5.5, 8.5)
RING_INDEX = 6           # RAY_FRACTIONS[6] = 0.86: inside the border ring, clear of its printed lines
N_SIZES = 3
RAY_FEATURES = (len(RAY_FRACTIONS) + len(RAY_OUTSIDE_PX)) * 3 + (len(RAY_FRACTIONS) + len(RAY_OUTSIDE_PX) - 1) \
    + 2 + N_SIZES


def ray_profiles(img_bgr: np.ndarray, cx: np.ndarray, cy: np.ndarray, r: np.ndarray, angles: np.ndarray,
                 px_per_mm: float = 1.0) -> np.ndarray:
    """Lab colour profiles (M, K, S, 3) along K rays of M circles; `img_bgr` is float32 0-255 or uint8."""
    from vision.detect import _sample

    fr = np.asarray(RAY_FRACTIONS, np.float32)
    out = np.asarray(RAY_OUTSIDE_PX, np.float32) * np.float32(px_per_mm)
    r = np.asarray(r, np.float32)
    rho = np.concatenate([r[:, None] * fr[None, :], r[:, None] + out[None, :]], axis=1)       # (M, S)
    ca, sa = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    X = np.asarray(cx, np.float32)[:, None, None] + rho[:, None, :] * ca[None, :, None]
    Y = np.asarray(cy, np.float32)[:, None, None] + rho[:, None, :] * sa[None, :, None]
    bgr = _sample(img_bgr, X, Y)                                                                # (M, K, S, 3)
    M, K, S = X.shape
    if M * K == 0:
        return np.zeros((M, K, S, 3), np.float32)
    # One image row of all the samples: OpenCV converts a row with its vector code, a column of single pixels
    # one at a time (five times slower; the same values, checked over every 8-bit colour).
    flat = bgr.reshape(1, -1, 3) * np.float32(1.0 / 255.0)
    lab = cv2.cvtColor(flat, cv2.COLOR_BGR2LAB)
    return lab.reshape(M, K, S, 3)


def _median_rays(x: np.ndarray) -> np.ndarray:
    """np.median(x, axis=1, keepdims=True) of (M, K, C), by one partial sort (np.median's own overhead is most of
    its time on a few rays); the same values, the middle pair averaged as np.median does."""
    K = x.shape[1]
    if K == 0:
        return np.median(x, axis=1, keepdims=True)
    h = K // 2
    if K % 2:
        return np.partition(x, h, axis=1)[:, h:h + 1]
    part = np.partition(x, (h - 1, h), axis=1)
    return np.mean(part[:, h - 1:h + 1], axis=1, keepdims=True)


def ray_features(lab: np.ndarray, size_idx: np.ndarray) -> np.ndarray:
    """Per-ray inputs of the ray network (M, K, RAY_FEATURES) from the Lab profiles.

    The profile itself (scaled), the colour step between neighbouring samples (where the edges are), how far this
    ray's border-ring colour lies from the candidate's median ring colour (the ring is one colour all round), and
    how far its outside lies from the candidate's median outside (felt all round, or not)."""
    M, K, S, _ = lab.shape
    out = np.empty((M, K, RAY_FEATURES), np.float32)
    # Filled in place, each channel's scale tiled along the whole row (numpy is slow on a last axis of 3).
    flat = lab.reshape(M, K, S * 3)
    np.multiply(flat, np.tile(np.array([1 / 50.0, 1 / 40.0, 1 / 40.0], np.float32), S), out=out[..., :S * 3])
    out[..., :S * 3] -= np.tile(np.array([1.0, 0.0, 0.0], np.float32), S)
    steps = out[..., S * 3:S * 4 - 1]                                                          # (M, K, S-1)
    d = flat[..., 3:] - flat[..., :-3]
    np.sqrt(_sum_squares3(d), out=steps)
    steps *= np.float32(1 / 25.0)
    for col, j in ((S * 4 - 1, RING_INDEX), (S * 4, S - 2)):   # the ring's, then the outside's deviation
        c = lab[:, :, j, :]
        np.sqrt(_sum_squares3((c - _median_rays(c)).reshape(M, K * 3)), out=out[..., col])
        out[..., col] *= np.float32(1 / 25.0)
    onehot = out[..., S * 4 + 1:]
    onehot[...] = 0.0
    onehot[np.arange(M), :, np.asarray(size_idx, np.int64)] = 1.0
    return out


def _sum_squares3(d: np.ndarray) -> np.ndarray:
    """Per colour triple of the last axis (..., 3n) -> (..., n): x0^2 + x1^2 + x2^2, summed in that order as
    np.linalg.norm does."""
    x, y, z = d[..., 0::3], d[..., 1::3], d[..., 2::3]
    return (x * x + y * y) + z * z


# ---------------------------------------------------------------------------------------------------------------
# The disk network's inputs: what the rays say, where they are open, and the fit's own measures.

DISK_FEATURE_NAMES = (
    "small", "medium", "large",
    "ray_mean", "ray_share", "ray_run",            # over all rays: mean score, share above 0.5, longest run
    "open_share", "open_mean", "open_seen",        # over open rays: how many are open, mean score, share above 0.5
    "covered_seen",                                # share of the rays under accepted disks that still show a rim
    "explained",                                   # share of the rays whose rim point is an accepted disk's rim
    "rim_fraction", "residual", "ring_uniform", "steps", "alignment", "radius_offset",
    "inside_depth", "concentric",                  # how deep its centre lies in an accepted disk; centred on one
)


def longest_run(mask: np.ndarray) -> np.ndarray:
    """Longest circular run of True per row, as a share of the row."""
    M, K = mask.shape
    if M == 0:
        return np.zeros(0)
    # On the row read twice round: the count of True so far, less that count at the latest False, is the run
    # ending at each place (one pass of cumulative sums instead of a loop over the places).
    ring = np.concatenate([mask, mask], axis=1)
    count = np.cumsum(ring, axis=1, dtype=np.int32)
    start = np.maximum.accumulate(np.where(ring, 0, count), axis=1)
    best = (count - start).max(1)
    return np.minimum(best, K) / float(K)


def disk_features(p: np.ndarray, covered: np.ndarray, explained: np.ndarray, size_idx: np.ndarray,
                  fit: np.ndarray, inside_depth: np.ndarray, concentric: np.ndarray) -> np.ndarray:
    """(M, len(DISK_FEATURE_NAMES)) from the ray scores `p` (M, K), the rays under other disks (`covered`) and the
    rays whose rim point another disk's rim explains (`explained`), the fit's measures `fit` (M, 6: rim fraction,
    residual px, ring uniformity, step consistency, alignment, radius offset px) and the placement measures."""
    M, K = p.shape
    seen = p >= 0.5
    onehot = np.zeros((M, N_SIZES))
    onehot[np.arange(M), np.asarray(size_idx, np.int64)] = 1.0
    open_ = ~covered
    n_open = open_.sum(1)
    n_cov = covered.sum(1)
    usable = seen & ~explained
    cols = [
        onehot,
        p.mean(1)[:, None], seen.mean(1)[:, None], longest_run(usable)[:, None],
        (n_open / K)[:, None],
        (np.where(open_, p, 0.0).sum(1) / np.maximum(n_open, 1))[:, None],
        ((usable & open_).sum(1) / np.maximum(n_open, 1))[:, None],
        ((usable & covered).sum(1) / np.maximum(n_cov, 1))[:, None],
        explained.mean(1)[:, None],
        np.asarray(fit, np.float64),
        np.asarray(inside_depth, np.float64)[:, None], np.asarray(concentric, np.float64)[:, None],
    ]
    return np.concatenate(cols, axis=1).astype(np.float32)


# ---------------------------------------------------------------------------------------------------------------
# The networks.


@dataclass(frozen=True)
class Mlp:
    """A small ReLU network with a logistic output; inputs standardised with the training set's mean and scale."""

    mean: np.ndarray
    scale: np.ndarray
    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]

    def __post_init__(self) -> None:
        if len(self.weights) != len(self.biases) or not self.weights:
            raise ValueError("an Mlp needs as many bias vectors as weight matrices, at least one")
        if self.weights[0].shape[0] != self.mean.shape[0] or self.mean.shape != self.scale.shape:
            raise ValueError("input standardisation does not match the first layer")
        # The standardisation folded into the first layer (one pass over the inputs less; float rounding only).
        w0 = (self.weights[0] / self.scale[:, None]).astype(np.float32)
        b0 = (self.biases[0] - (self.mean / self.scale) @ self.weights[0]).astype(np.float32)
        object.__setattr__(self, "_layers", ((w0, b0),) + tuple(zip(self.weights[1:], self.biases[1:])))

    @property
    def inputs(self) -> int:
        return int(self.mean.shape[0])

    def __call__(self, x: np.ndarray) -> np.ndarray:
        shape = x.shape[:-1]
        if x.shape[-1] != self.inputs:
            raise ValueError(f"expected {self.inputs} inputs, got {x.shape[-1]}")
        h = x.reshape(-1, x.shape[-1]).astype(np.float32, copy=False)
        for k, (w, b) in enumerate(self._layers):
            h = h @ w
            h += b
            if k < len(self._layers) - 1:
                np.maximum(h, 0.0, out=h)
        z = np.clip(h[:, 0], -30.0, 30.0)
        return (1.0 / (1.0 + np.exp(-z))).reshape(shape)

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        out = {f"{prefix}_mean": self.mean, f"{prefix}_scale": self.scale}
        for k, (w, b) in enumerate(zip(self.weights, self.biases)):
            out[f"{prefix}_w{k}"] = w
            out[f"{prefix}_b{k}"] = b
        return out

    @classmethod
    def from_arrays(cls, data, prefix: str) -> "Mlp":
        ws, bs = [], []
        k = 0
        while f"{prefix}_w{k}" in data:
            ws.append(np.asarray(data[f"{prefix}_w{k}"], np.float32))
            bs.append(np.asarray(data[f"{prefix}_b{k}"], np.float32))
            k += 1
        return cls(np.asarray(data[f"{prefix}_mean"], np.float32), np.asarray(data[f"{prefix}_scale"], np.float32),
                   tuple(ws), tuple(bs))


@dataclass(frozen=True)
class RimVerifier:
    """The ray network and the disk network, with the acceptance threshold chosen at training."""

    ray: Mlp
    disk: Mlp
    threshold: float = 0.5

    def __post_init__(self) -> None:
        if self.ray.inputs != RAY_FEATURES:
            raise ValueError(f"ray network takes {self.ray.inputs} inputs, the features are {RAY_FEATURES}")
        if self.disk.inputs != len(DISK_FEATURE_NAMES):
            raise ValueError(f"disk network takes {self.disk.inputs} inputs, the features are "
                             f"{len(DISK_FEATURE_NAMES)}")
        if not 0.0 < self.threshold < 1.0:
            raise ValueError("threshold must be within (0, 1)")

    def ray_scores(self, img_bgr: np.ndarray, cx: np.ndarray, cy: np.ndarray, r: np.ndarray, size_idx: np.ndarray,
                   angles: np.ndarray, px_per_mm: float = 1.0) -> np.ndarray:
        lab = ray_profiles(img_bgr, cx, cy, r, angles, px_per_mm)
        return self.ray(ray_features(lab, size_idx))

    def recentre(self, img_bgr: np.ndarray, cx: np.ndarray, cy: np.ndarray, r: np.ndarray, size_idx: np.ndarray,
                 px_per_mm: float = 1.0, reach_px: float = 4.0, rays: int = 32, good: float = 0.8
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Move each circle whose rays score under `good` to where its rays score best, within `reach_px`.

        An edge fit settles on the nearest edges, and on a ring that barely differs from the felt those can be
        the art's or a neighbour's, a few px off: the ray network scores the whole profile, so its best centre is
        near the true one even there. Coarse grid (2 px) then fine (1 px); the edge fit refines it after.
        Returns the centres and their mean ray score."""
        cx, cy = np.asarray(cx, np.float64).copy(), np.asarray(cy, np.float64).copy()
        angles = np.arange(rays) * (2.0 * math.pi / rays)
        score = self.ray_scores(img_bgr, cx, cy, r, size_idx, angles, px_per_mm).mean(1)
        todo = np.nonzero(score < good)[0]
        if not len(todo):
            return cx, cy, score
        for step in (2.0, 1.0):
            n = int(round(reach_px / step)) if step == 2.0 else 1
            g = np.arange(-n, n + 1) * step
            ox, oy = (a.ravel() for a in np.meshgrid(g, g))
            # The centre itself is already scored (it moves only to a strictly better place).
            off = (ox != 0) | (oy != 0)
            ox, oy = ox[off], oy[off]
            X = (cx[todo][:, None] + ox[None, :]).ravel()
            Y = (cy[todo][:, None] + oy[None, :]).ravel()
            s = self.ray_scores(img_bgr, X, Y, np.repeat(np.asarray(r)[todo], len(ox)),
                                np.repeat(np.asarray(size_idx)[todo], len(ox)), angles, px_per_mm)
            s = s.mean(1).reshape(len(todo), len(ox))
            best = np.argmax(s, axis=1)
            better = s[np.arange(len(todo)), best] > score[todo]
            cx[todo] += np.where(better, ox[best], 0.0)
            cy[todo] += np.where(better, oy[best], 0.0)
            score[todo] = np.maximum(score[todo], s[np.arange(len(todo)), best])
        return cx, cy, score

    def save(self, path: str | Path, **info: str) -> None:
        arrays = {**self.ray.arrays("ray"), **self.disk.arrays("disk"),
                  "threshold": np.array(self.threshold, np.float32)}
        arrays.update({f"info_{k}": np.array(v) for k, v in info.items()})
        np.savez_compressed(path, **arrays)

    @classmethod
    def load(cls, path: str | Path) -> "RimVerifier":
        with np.load(path, allow_pickle=False) as data:
            return cls(Mlp.from_arrays(data, "ray"), Mlp.from_arrays(data, "disk"), float(data["threshold"]))


@lru_cache(maxsize=4)
def load_verifier(path: str | None = None) -> RimVerifier:
    """The shipped verifier (`vision/models/rim_verifier.npz`), or the one at `path`."""
    from tablesight.errors import InputError

    p = Path(path) if path else MODEL_PATH
    try:
        return RimVerifier.load(p)
    except (OSError, KeyError, ValueError) as exc:
        raise InputError(f"rim verifier {p.name}: cannot be read ({exc}); reinstall tablesight or retrain it "
                         f"with `python -m vision.verifier_training`") from None
