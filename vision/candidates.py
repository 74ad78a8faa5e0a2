"""Circle candidates of the calibrated radii from the rim map: where enough of a disk's outline would run.

For each radius the rim map is correlated with a thin ring of that radius (at half the map's resolution: a
candidate only needs to be within a couple of millimetres, `vision.fit` measures it); the value at a point is the
share of that circle's outline the map shows, so a partly covered disk still scores by the part of its rim that is
in view. Local maxima above `vote_min` are candidates. The previous scene's disks are added as candidates of their
own size wherever they were (history: a disk mostly covered now).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import cv2
import numpy as np

from vision.facemap import FaceMaps, sample


@dataclass(frozen=True)
class Seed:
    """A disk of the previous scene, in rectified px, as a candidate."""

    cx: float
    cy: float
    size_index: int
    id: str
    z: int


@dataclass(frozen=True, eq=False)
class Candidates:
    """Candidate circles in rim-map px: centres, size-class index, vote (share of the rim shown) and the seed
    they come from (None for circles found in the map)."""

    u: np.ndarray
    v: np.ndarray
    size_index: np.ndarray
    vote: np.ndarray
    seed: tuple[Seed | None, ...]

    def __post_init__(self) -> None:
        n = len(self.u)
        if not (len(self.v) == len(self.size_index) == len(self.vote) == len(self.seed) == n):
            raise ValueError("Candidates: every field needs one entry per candidate")

    def __len__(self) -> int:
        return len(self.u)

    def subset(self, keep: np.ndarray) -> "Candidates":
        idx = np.nonzero(keep)[0]
        return Candidates(u=self.u[idx], v=self.v[idx], size_index=self.size_index[idx], vote=self.vote[idx],
                          seed=tuple(self.seed[k] for k in idx))


@lru_cache(maxsize=1)
def _inside_pattern() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`inside_points`' rings: (share of the radius, cos, sin) of each point, made once (read on every circle)."""
    f = np.concatenate([[0.0], np.full(8, 0.35), np.full(12, 0.6), np.full(16, 0.8)])
    a = np.concatenate([[0.0]] + [np.arange(n) * (2 * math.pi / n) + k for k, n in ((0.35, 8), (0.6, 12),
                                                                                    (0.8, 16))])
    out = (f, np.cos(a), np.sin(a))
    for arr in out:
        arr.setflags(write=False)
    return out


def inside_points(u: np.ndarray, v: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Points spread over each disk's inside (rings at 0, 0.35, 0.6 and 0.8 of the radius): (M, 37) x and y."""
    f, cos, sin = _inside_pattern()
    return u + f * r * cos, v + f * r * sin


@lru_cache(maxsize=32)
def _ring_kernel(radius: float) -> np.ndarray:
    """A ring of the radius (1 px wide, anti-aliased), summing to 1: correlation gives the mean along a circle."""
    n = int(np.ceil(radius + 2))
    yy, xx = np.mgrid[-n:n + 1, -n:n + 1].astype(np.float32)
    k = np.clip(1.0 - np.abs(np.hypot(xx, yy) - radius), 0.0, None)
    k /= k.sum()
    k.setflags(write=False)
    return k


@lru_cache(maxsize=32)
def _ring_spectrum(radius: float, shape: tuple[int, int]) -> np.ndarray:
    """The ring kernel's spectrum, zero-padded to `shape`, shifted so its centre sits at the origin (the packed
    spectrum of a real image: half the work of a complex one)."""
    k = _ring_kernel(radius)
    n = k.shape[0] // 2
    pad = np.zeros(shape, np.float32)
    pad[:k.shape[0], :k.shape[1]] = k
    pad = np.roll(pad, (-n, -n), axis=(0, 1))
    spec = cv2.dft(pad)
    spec.setflags(write=False)
    return spec


def ring_votes(img: np.ndarray, radii: Sequence[float]) -> list[np.ndarray]:
    """`img` correlated with a ring of each radius (zero outside the image): one forward transform shared by all
    sizes (the rings are symmetric, so correlation is convolution)."""
    h, w = img.shape
    reach = max(_ring_kernel(r).shape[0] for r in radii) // 2
    shape = (cv2.getOptimalDFTSize(h + reach), cv2.getOptimalDFTSize(w + reach))
    pad = np.zeros(shape, np.float32)
    pad[:h, :w] = img
    spec = cv2.dft(pad)
    return [cv2.idft(cv2.mulSpectrums(spec, _ring_spectrum(float(r), shape), 0),
                     flags=cv2.DFT_REAL_OUTPUT | cv2.DFT_SCALE)[:h, :w] for r in radii]


@dataclass(frozen=True, eq=False)
class Peaks:
    """Every local maximum of the ring votes of each size class (rim-map px), with its vote and how much a face
    its inside is (the face map's mean over 80 % of the radius): what `find_candidates` chooses from."""

    u: np.ndarray
    v: np.ndarray
    size_index: np.ndarray
    vote: np.ndarray     # float32, as the votes were read
    face: np.ndarray


def ring_peaks(maps: FaceMaps, radii_map: Sequence[float], vote_min: float) -> Peaks:
    """The ring votes' local maxima of at least `vote_min` for each size class (radius in rim-map px; classes of
    one radius once), read at half the map's resolution."""
    half = cv2.resize(maps.rim, None, fx=0.5, fy=0.5, interpolation=cv2.INTER_AREA)
    us, vs, ks, votes, faces = [], [], [], [], []
    # size classes of one radius (chips all of one size) are looked for once, as the first of them
    classes = [k for k, r in enumerate(radii_map) if r not in radii_map[:k]]
    for k, acc in zip(classes, ring_votes(half, [radii_map[k] / 2.0 for k in classes])):
        r = radii_map[k]
        w = max(3, int(round(r * 0.35)) | 1)
        py, px = np.nonzero((acc >= cv2.dilate(acc, np.ones((w, w), np.uint8))) & (acc >= vote_min))
        # half-map px -> map px (pixel centres)
        cu, cv = (px + 0.5) * 2.0 - 0.5, (py + 0.5) * 2.0 - 0.5
        fx, fy = inside_points(cu[:, None], cv[:, None], np.full((len(px), 1), 0.8 * r))
        us.append(cu)
        vs.append(cv)
        ks.append(np.full(len(px), k))
        votes.append(acc[py, px])
        faces.append(sample(maps.face, fx, fy).mean(1) if len(px) else np.zeros(0))
    return Peaks(*(np.concatenate(a).astype(t) for a, t in ((us, np.float64), (vs, np.float64), (ks, int),
                                                           (votes, np.float32), (faces, np.float64))))


def find_candidates(maps: FaceMaps, radii_map: Sequence[float], vote_min: float, max_per_size: int,
                    seeds: Sequence[Seed] = (), seed_map_xy: np.ndarray | None = None, min_face: float = 0.0,
                    faceless: bool = False, peaks: Peaks | None = None) -> Candidates:
    """Candidates for each size class (radius in rim-map px; classes of one radius once): the ring votes' peaks
    (`ring_peaks`; `peaks` when they are already read, at `vote_min` or less), the `max_per_size` highest of each
    size. `seed_map_xy`: the seeds' centres in map px.
    `min_face`: circles whose inside is less a face than this are none (a disk's inside always is some disk's
    face); seeds are kept whatever their inside shows. `faceless`: the other way round, only the circles whose
    inside is less a face than `min_face` (where the lone judge looks: `vision.lonejudge`)."""
    if peaks is None:
        peaks = ring_peaks(maps, radii_map, vote_min)
    chosen = (peaks.vote >= vote_min) & ((peaks.face >= min_face) != faceless if min_face > 0 else not faceless)
    keep = []
    for k in np.unique(peaks.size_index):
        idx = np.flatnonzero(chosen & (peaks.size_index == k))
        if len(idx) > max_per_size:
            idx = idx[np.argsort(-peaks.vote[idx])[:max_per_size]]
        keep.append(idx)
    idx = np.concatenate(keep) if keep else np.zeros(0, int)
    us, vs, ks, votes = [peaks.u[idx]], [peaks.v[idx]], [peaks.size_index[idx]], [peaks.vote[idx]]
    seed_list: list[Seed | None] = [None] * len(idx)
    if seeds:
        xy = np.asarray(seed_map_xy, np.float64).reshape(-1, 2)
        us.append(xy[:, 0])
        vs.append(xy[:, 1])
        ks.append(np.array([s.size_index for s in seeds]))
        votes.append(np.ones(len(seeds)))
        seed_list += list(seeds)
    return Candidates(u=np.concatenate(us).astype(np.float64), v=np.concatenate(vs).astype(np.float64),
                      size_index=np.concatenate(ks).astype(int), vote=np.concatenate(votes).astype(np.float64),
                      seed=tuple(seed_list))
