"""Sub-pixel centres from the disk's own rim profile, on the full-resolution rectified image.

The rim map (2 mm per px) places a disk to half a millimetre or so; the rules want better. A disk's rim is several
edges a px or two apart (the cut edge, a printed outline, the border's inner line, the cardboard side, a shadow)
and which one is strongest changes round the disk, so "the strongest edge on each ray" would jump between them.
Instead every ray's colour-step profile across the rim band is aligned (normalised cross-correlation, parabolic
sub-sample peak) to the disk's own median profile over its rays: whatever the print looks like, it looks the same
all round, and the centre is where the profiles agree. Only rays the rim map says show this disk's own outline
(not under or along another disk, not under a hand) take part; a disk with too few of them keeps its map fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import cv2
import numpy as np


@dataclass(frozen=True)
class AlignConfig:
    """The rim band compared (px of the rectified image at 1 px/mm) and how far a ray may shift."""

    inner_px: float = 7.0       # the band runs from this far inside the outline...
    outer_px: float = 2.0       # ...to this far outside it
    reach_px: float = 2.0       # each ray's profile may shift this far
    min_match: float = 0.6      # a ray counts when its profile matches the disk's this well (NCC)
    min_rays: int = 16          # fewer usable rays: the map's fit stands
    passes: int = 2

    def __post_init__(self) -> None:
        if not (0 < self.inner_px <= 20 and 0 <= self.outer_px <= 10 and 0.5 <= self.reach_px <= 5):
            raise ValueError("need 0 < inner_px <= 20, 0 <= outer_px <= 10, 0.5 <= reach_px <= 5")
        if not 0 < self.min_match < 1 or self.min_rays < 4 or not 1 <= self.passes <= 5:
            raise ValueError("need 0 < min_match < 1, min_rays >= 4, 1 <= passes <= 5")


DEFAULT_ALIGN = AlignConfig()


def _profiles(img: np.ndarray, cx: np.ndarray, cy: np.ndarray, r: np.ndarray, ang: np.ndarray, rho: np.ndarray
              ) -> np.ndarray:
    """Colour-step magnitude along each ray: (M, K, len(rho) - 2)."""
    M, K, T = len(cx), len(ang), len(rho)
    ca, sa = np.cos(ang), np.sin(ang)
    # the circle's points plus each sample's step along the ray, straight into the sampler's float32
    mx, my = np.empty((2, M, K, T), np.float32)
    np.add((cx[:, None] + r[:, None] * ca)[..., None], rho * ca[:, None], out=mx, casting="unsafe")
    np.add((cy[:, None] + r[:, None] * sa)[..., None], rho * sa[:, None], out=my, casting="unsafe")
    # one map row per circle where it fits the sampler's 32767 columns: its cost is partly per row
    rows = M if K * T < 32000 else M * K
    P = cv2.remap(img, mx.reshape(rows, -1), my.reshape(rows, -1), cv2.INTER_LINEAR,
                  borderMode=cv2.BORDER_REFLECT).astype(np.float32).reshape(M * K, T, -1)
    d = P[:, 2:] - P[:, :-2]
    d *= d
    # the three channels summed in their order (numpy's reduction over so short an axis is slow)
    return np.sqrt(d[..., 0] + d[..., 1] + d[..., 2]).reshape(M, K, T - 2)


def masked_median(a: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per row m, the median over axis 1 of a[m] where mask[m] (a: (M, K) or (M, K, D); mask: (M, K)); rows with
    nothing masked in give inf or nan."""
    # sorted along the last axis (K moved there: numpy sorts contiguous rows several times faster)
    s = np.sort(np.where(mask, a, np.inf) if a.ndim == 2 else
                np.where(mask[:, None, :], a.transpose(0, 2, 1), np.inf), axis=-1)
    n = mask.sum(1)
    lo, hi = (np.maximum(n - 1, 0) // 2), n // 2
    pick = lambda i: np.take_along_axis(s, i.reshape(-1, *([1] * (s.ndim - 1))), -1)[..., 0]  # noqa: E731
    return (pick(lo) + pick(np.minimum(hi, a.shape[1] - 1))) / 2


def _window_spread(g: np.ndarray, n: int, count: int) -> np.ndarray:
    """For each window g[..., s:s + n], s < count: the sum of its squared deviations from its mean (float64),
    from running box sums along the last axis."""
    flat = g.reshape(-1, g.shape[-1])
    box = dict(ksize=(n, 1), anchor=(0, 0), normalize=False, borderType=cv2.BORDER_CONSTANT)
    s1 = cv2.boxFilter(flat, cv2.CV_64F, **box)[:, :count]
    s2 = cv2.sqrBoxFilter(flat, cv2.CV_64F, **box)[:, :count]
    return np.maximum(s2 - s1 * s1 / n, 0.0).reshape(*g.shape[:-1], count)


@lru_cache(maxsize=8)
def _band_index(nc: int, S: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of a banded (nc + S - 1, S) matrix whose column s holds a profile of nc entries at rows
    s..s + nc - 1, in the order np.repeat(profile, S) lists them."""
    n, s = np.meshgrid(np.arange(nc), np.arange(S), indexing="ij")
    rows, cols = (s + n).reshape(-1), s.reshape(-1)
    for a in (rows, cols):    # cached: shared by every call
        a.setflags(write=False)
    return rows, cols


def align_centres(img: np.ndarray, cx: np.ndarray, cy: np.ndarray, r: np.ndarray, usable: np.ndarray,
                  cfg: AlignConfig = DEFAULT_ALIGN) -> tuple[np.ndarray, np.ndarray]:
    """Refined centres (rectified px, 1 px/mm) of circles (cx, cy, r) from their rays `usable` (M, K); the
    radius stays. A circle with fewer than `min_rays` usable, well matching rays keeps its centre."""
    cx, cy = np.asarray(cx, np.float64).copy(), np.asarray(cy, np.float64).copy()
    M, K = usable.shape
    if M == 0:
        return cx, cy
    step = 0.5
    n_sh, n_in, n_out = (int(round(v / step)) for v in (cfg.reach_px, cfg.inner_px, cfg.outer_px))
    nc = n_in + n_out + 1
    rho = np.arange(-(n_in + n_sh + 1), n_out + n_sh + 2) * step
    ang = np.arange(K) * (2.0 * math.pi / K)
    ca, sa = np.cos(ang), np.sin(ang)
    shifts = np.arange(-n_sh, n_sh + 1)
    S = len(shifts)
    r = np.asarray(r, np.float64)
    for _ in range(cfg.passes):
        g = _profiles(img, cx, cy, r, ang, rho)                    # (M, K, D)
        band = g[:, :, n_sh:n_sh + nc]
        enough = usable.sum(1) >= cfg.min_rays
        t = np.where(enough[:, None], masked_median(band, usable), band.mean(1))   # the disk's own profile
        t = t - t.mean(1, keepdims=True)
        t /= np.linalg.norm(t, axis=1, keepdims=True) + 1e-6
        # each shifted window against the disk's profile: t has zero mean, so the window's own mean drops out of
        # the product, and the window's spread comes from running sums. The products are one matrix product per
        # disk, g (K, D) times the banded matrix whose column s holds t at rows s..s + nc - 1 (a sum over a
        # strided view of the windows costs several times as much)
        band_t = np.zeros((M, g.shape[2], S))
        band_t[(slice(None), *_band_index(nc, S))] = np.repeat(t, S, axis=1)
        ncc = np.matmul(g.astype(np.float64), band_t) / (np.sqrt(_window_spread(g, nc, S)) + 1e-6)
        j = np.argmax(ncc, axis=2)
        jj = np.clip(j, 1, S - 2)[..., None]
        a0, a1, a2 = (np.take_along_axis(ncc, jj + o, 2)[..., 0] for o in (-1, 0, 1))
        den = a0 - 2.0 * a1 + a2
        frac = np.clip(np.where(np.abs(den) > 1e-9, 0.5 * (a0 - a2) / np.where(np.abs(den) > 1e-9, den, 1.0), 0),
                       -0.5, 0.5)
        off = (shifts[jj[..., 0]] + frac) * step
        ok = usable & (a1 >= cfg.min_match) & (j > 0) & (j < S - 1)   # a peak at the reach's end: none
        w = ok.astype(np.float64)
        dx = dy = np.zeros(M)
        for _ in range(2):   # least squares of the shifts (all disks at once), then again without rays far off
            a11, a12, a22 = (w * ca * ca).sum(1), (w * ca * sa).sum(1), (w * sa * sa).sum(1)
            b1, b2 = (w * ca * off).sum(1), (w * sa * off).sum(1)
            det = a11 * a22 - a12 * a12
            good = ((w > 0).sum(1) >= cfg.min_rays) & (det > 1e-6)
            safe = np.where(good, det, 1.0)
            dx = np.where(good, (a22 * b1 - a12 * b2) / safe, 0.0)
            dy = np.where(good, (a11 * b2 - a12 * b1) / safe, 0.0)
            res = np.abs(off - (ca[None, :] * dx[:, None] + sa[None, :] * dy[:, None]))
            med = np.where((w > 0).any(1), masked_median(res, w > 0), 0.0)
            w = w * (res <= np.maximum(0.5, 2.5 * med)[:, None])
        cx += np.clip(dx, -cfg.reach_px, cfg.reach_px)
        cy += np.clip(dy, -cfg.reach_px, cfg.reach_px)
    return cx, cy


def rays_over_lower(cx: np.ndarray, cy: np.ndarray, r: np.ndarray, z: np.ndarray, explain: float, rays: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Circles (rectified px) in a known stacking order (`z`: a higher disk lies on a lower one it overlaps): per
    ray, whether its outline point may be aligned on (not under a higher disk, not within `explain` px of another
    circle's outline), (M, rays); and which circles have rays over a lower disk. Before the order is known those rays
    are left out, as the circle might lie under that disk; once it is known to lie on it, its outline runs there
    over the lower disk's face in plain view."""
    cx, cy, r, z = (np.asarray(a, np.float64) for a in (cx, cy, r, z))
    usable = np.ones((len(cx), rays), bool)
    over = np.zeros(len(cx), bool)
    # only pairs near enough for one's outline to reach the other's
    near = np.hypot(cx[:, None] - cx, cy[:, None] - cy) <= r[:, None] + r + explain
    np.fill_diagonal(near, False)
    m, o = np.nonzero(near)                                         # sorted by m
    if not len(m):
        return usable, over
    ang = np.arange(rays) * (2.0 * math.pi / rays)
    d = np.hypot(cx[m, None] + r[m, None] * np.cos(ang) - cx[o, None],
                 cy[m, None] + r[m, None] * np.sin(ang) - cy[o, None])  # (pairs, K)
    inside = d < r[o, None] - explain
    higher = (z[o] > z[m])[:, None]
    rows, first = np.unique(m, return_index=True)
    usable[rows] = ~np.logical_or.reduceat((np.abs(d - r[o, None]) <= explain) | (inside & higher), first, axis=0)
    over[rows] = np.logical_or.reduceat((inside & ~higher).any(1), first)
    return usable, over
