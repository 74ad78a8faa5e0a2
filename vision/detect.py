"""Disk detection in the rectified frame: known radii, overlaps, sub-pixel centres, one confidence per disk.

The rectified image is a top-down map of the table (`calibration.rectify`, 1 px/mm by default), so every disk is a
circle of one of three known radii. The steps:

1. Candidates by gradient-direction voting at half resolution: every edge pixel votes for the two points at
   distance r along its gradient (disk brighter or darker than what is around it), one accumulator per size
   class; local maxima are candidates. A partly covered disk still collects the votes of its visible rim.
   Candidates from the previous scene's disks are added (history seeds disks that are mostly covered now).
2. Rim check at full resolution: radial colour profiles around each candidate give the edge position on every
   ray (parabola peak, sub-pixel); the centre is refitted by robust least squares with the radius fixed to the
   size class; a ray supports the disk when its edge lies within `rim_tolerance_px` of the fitted circle.
3. Greedy acceptance with explanation-away: the best-supported candidate is accepted first, the rim points it
   explains are taken from every other candidate, and rays inside an accepted disk stop counting against the
   others (they may be under it). A candidate needs enough supporting rim, and where its rim lies in the open
   it must be mostly present, so art, tokens, the ruler and marker tiles (which give arcs, not circles) drop out.

Stacking order (`vision.stacking`) works on the accepted fits. `detect_frame` is the single-frame entry point
the evaluation harness and `tablesight detect` call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import cv2
import numpy as np

from tablesight.errors import InputError
from tablesight.scene import SIZE_CLASSES, Disk, Scene
from vision.sizes import DiskSizes
from vision.verifier import RimVerifier, disk_features, load_verifier


@dataclass(frozen=True)
class DetectorConfig:
    """Thresholds of the detector; the defaults are tuned on the renderer's tuning seeds only."""

    rays: int = 120                      # rim samples per accepted disk (fine measurement)
    screen_rays: int = 48                # rim samples per candidate (coarse check and acceptance)
    canny_low: float = 30.0              # half-resolution colour Canny thresholds (candidate votes)
    canny_high: float = 70.0
    vote_printed_ring: bool = True        # the border ring's printed inner line votes for the centre too
    vote_min: float = 0.28               # accumulator peak, as a fraction of the rim, to become a candidate
    max_candidates_per_size: int = 120
    blob_colour_distance: float = 22.0   # Lab distance from the felt for the colour-blob candidates (0: off)
    step_px: float = 2.0                 # the colour step across the rim is measured over this many px
    edge_min: float = 8.0                # colour step (0-255 units per px) that always makes a rim point
    edge_floor: float = 6.0              # ... and the least one, for a disk whose whole rim steps weakly
    edge_relative: float = 0.5           # a rim point's step as a share of the disk's median step
    min_alignment: float = 0.55          # share of the gradient energy along the ray at a rim point
    rim_tolerance_px: float = 1.6        # a rim point supports the circle within this distance
    accept_strong: float = 0.55          # rim fraction accepted on its own
    accept_min: float = 0.27             # rim fraction accepted when the open part of the rim is consistent
    accept_min_history: float = 0.16     # same, for a disk the previous scene had here
    explain_px: float = 1.5              # rim points this close to an accepted disk's rim are explained by it
    open_consistency: float = 0.55       # fraction of the open (not under an accepted disk) rim that must show
    radius_freedom_px: float = 2.0       # a mostly seen disk's radius may differ this much from its class
    max_residual_px: float = 1.3        # RMS distance of the rim points to the fitted circle
    min_step_consistency: float = 0.3    # the colour must step the same way across the rim (not texture)
    printed_ring_ratio: float = 0.78     # inner edge of the printed border ring / rim radius (0: not used)
    printed_ring_tolerance_px: float = 1.9
    printed_ring_offset_px: float = 5.0  # a smaller circle this far off a disk's centre may still be its print
    min_confidence: float = 0.4          # new disks below this confidence are dropped (not ones from history)
    keep_rim_fraction: float = 0.78      # ... unless this much of its rim is seen
    accept_on_top: float = 0.65           # rim fraction of a disk lying mostly on accepted disks
    ring_uniform_min: float = 0.3        # fraction of rim rays whose border ring has the disk's ring colour
    ring_uniform_on_top: float = 0.55
    ring_depth_mm: float = 2.5           # where the border ring is sampled, inside the rim
    disk_thickness_mm: float = 2.0       # a disk's top lies this much above what it rests on (parallax; 0: none)
    use_verifier: bool = True            # accept by the learned rim verifier (vision.verifier), else by thresholds
    verifier_path: str | None = None     # a rim verifier file of one's own (None: the shipped one)
    prescreen_ray_score: float = 0.04    # mean ray score under which a placed circle is no disk (0: no prescreen)
    prescreen_rays: int = 8              # ... on this many rays
    verifier_rays: int = 24              # rays the verifier scores per candidate at acceptance (divides screen_rays)
    recentre_band: tuple[float, float] = (0.1, 0.6)  # mean ray score of a circle that may be misplaced
    recentre_min_rim: float = 0.3        # ... when its fit found this share of a rim
    recentre_reach_px: float = 4.0       # ... searched this far around
    recentre_rays: int = 16              # ... on this many rays per tried centre (32 found no more disks)
    history_score_factor: float = 0.6    # a disk the previous scene had here needs this share of the score
    weak_score: float = 0.8              # a new disk scored under this, with less than this share of its rim
    weak_own_rim: float = 0.4            # its own (not along an accepted disk's rim), is dropped (0: never)
    twin_score: float = 0.97             # disk score a circle near an accepted disk of its class needs (no copy:
                                         # its rim is its own, but a stacked disk that close is rarer than a phantom)
    accept_geometric: float = 0.85       # rim fraction that accepts a clean circle without the verifier (1: never)
    geometric_residual_px: float = 0.8   # ... when its rim points lie this close to the circle (RMS)
    align_iterations: int = 3            # sub-pixel centre by rim-profile alignment: passes (0: edge points only)
    align_rays: int = 64                 # ... rays per disk (120 measured no better)
    align_inner_px: float = 8.0          # ... the rim band compared: this far inside the rim
    align_outer_px: float = 1.0          # ... and this far outside it (the felt beyond carries shadows)
    align_reach_px: float = 3.0          # ... each ray's profile may shift this far
    align_min_match: float = 0.5         # ... a ray counts when its profile matches the disk's this well (NCC)
    contact_px: float = 3.0              # rays where another accepted disk's rim runs this close are left out of
                                         # the fine fit (two rims side by side: the outer step is the other's)

    def __post_init__(self) -> None:
        if not 24 <= self.rays <= 720:
            raise ValueError("rays must be within 24..720")
        for name in ("vote_min", "accept_strong", "accept_min", "accept_min_history", "open_consistency",
                     "edge_relative"):
            v = getattr(self, name)
            if not 0.0 < v <= 1.0:
                raise ValueError(f"{name} must be within (0, 1], got {v!r}")
        for name in ("canny_low", "canny_high", "edge_min", "edge_floor", "rim_tolerance_px", "max_residual_px",
                     "ring_depth_mm"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0")
        if self.printed_ring_offset_px < 0:
            raise ValueError("printed_ring_offset_px must be >= 0")
        if not 0 <= self.disk_thickness_mm <= 20:
            raise ValueError("disk_thickness_mm must be within 0..20")
        if self.verifier_path is not None and not isinstance(self.verifier_path, str):
            raise ValueError("verifier_path must be a file path (str) or None")
        lo, hi = self.recentre_band
        if not 0.0 <= lo <= hi <= 1.0:
            raise ValueError("recentre_band must be (low, high) within 0..1, low <= high")
        if not 0.0 <= self.contact_px <= 10.0:
            raise ValueError("contact_px must be within 0..10 (0: every ray counts)")
        if not 0.0 <= self.recentre_reach_px <= 10.0:
            raise ValueError("recentre_reach_px must be within 0..10")
        if not 8 <= self.recentre_rays <= 96:
            raise ValueError("recentre_rays must be within 8..96")
        if not 0.0 <= self.prescreen_ray_score < 1.0:
            raise ValueError("prescreen_ray_score must be within [0, 1)")
        if not 4 <= self.prescreen_rays <= 96:
            raise ValueError("prescreen_rays must be within 4..96")
        if not 8 <= self.verifier_rays <= self.screen_rays or self.screen_rays % self.verifier_rays:
            raise ValueError("verifier_rays must be at least 8 and divide screen_rays")
        if not (0.0 <= self.weak_score <= 1.0 and 0.0 <= self.weak_own_rim <= 1.0):
            raise ValueError("weak_score and weak_own_rim must be within 0..1")
        if not 0.0 <= self.twin_score <= 1.0:
            raise ValueError("twin_score must be within 0..1")
        if not 0 <= self.align_iterations <= 10:
            raise ValueError("align_iterations must be within 0..10")
        if not 24 <= self.align_rays <= 720:
            raise ValueError("align_rays must be within 24..720")
        if not (0.5 <= self.align_inner_px <= 20 and 0 <= self.align_outer_px <= 10
                and 0.5 <= self.align_reach_px <= 6):
            raise ValueError("need 0.5 <= align_inner_px <= 20, 0 <= align_outer_px <= 10, 0.5 <= align_reach_px <= 6")
        if not 0.0 < self.align_min_match < 1.0:
            raise ValueError("align_min_match must be within (0, 1)")


DEFAULT_CONFIG = DetectorConfig()


@dataclass(frozen=True)
class DiskFit:
    """One accepted disk in rectified pixels (the detector's own result, before table mm and ids)."""

    cx: float
    cy: float
    r_px: float              # the size class's radius: the rules judge overlaps by it, so stacking does too
    size: str
    rim_fraction: float      # fraction of the rim rays with an edge on the fitted circle
    open_consistency: float  # fraction of the open rim rays that show the edge (1.0 when none is open)
    residual_px: float
    ring_bgr: tuple[float, float, float]
    confidence: float
    seed_id: str | None = None   # the previous scene's disk this one continues, when seeded by history
    seed_z: int | None = None
    # The measured silhouette's radius (None: r_px). It differs from the class radius by a px or two with the cut
    # edge, blur and shadow; the rim is read there.
    rim_r_px: float | None = None

    @property
    def rim_r(self) -> float:
        return self.r_px if self.rim_r_px is None else self.rim_r_px


# ---------------------------------------------------------------------------------------------------------------
# Calibration access: the detector only needs the rectified image and the pixel <-> table mm mapping.


def rectified_frame(frame_bgr: Any, calibration: Any) -> np.ndarray:
    """Check the frame and rectify it; bad frames raise InputError with the reason."""
    if frame_bgr is None or not isinstance(frame_bgr, np.ndarray) or frame_bgr.size == 0:
        raise InputError("empty frame")
    if frame_bgr.ndim == 2:
        frame_bgr = cv2.cvtColor(frame_bgr, cv2.COLOR_GRAY2BGR)
    if frame_bgr.ndim != 3 or frame_bgr.shape[2] not in (3, 4):
        raise InputError(f"frame: expected a colour image, got shape {frame_bgr.shape}")
    if frame_bgr.shape[2] == 4:
        frame_bgr = cv2.cvtColor(frame_bgr, cv2.COLOR_BGRA2BGR)
    if frame_bgr.dtype != np.uint8:
        raise InputError(f"frame: expected 8-bit pixels, got {frame_bgr.dtype}")
    check = getattr(calibration, "check_frame", None)
    if check is not None:
        check(frame_bgr)
    rect = calibration.rectify(frame_bgr)
    if rect is None or rect.size == 0:
        raise InputError("frame: rectification gave an empty image")
    return rect


def px_per_mm(calibration: Any) -> float:
    return float(getattr(calibration, "rectified_px_per_mm", 1.0) or 1.0)


def rect_to_table(calibration: Any, pts: np.ndarray) -> np.ndarray:
    pts = np.asarray(pts, dtype=np.float64).reshape(-1, 2)
    fn = getattr(calibration, "rectified_to_table", None)
    if fn is not None:
        return np.asarray(fn(pts), dtype=np.float64).reshape(-1, 2)
    ox, oy = getattr(calibration, "rectified_origin_mm", (-40.0, -40.0))
    return pts / px_per_mm(calibration) + np.array([ox, oy])


def table_to_rect(calibration: Any, pts: np.ndarray) -> np.ndarray:
    pts = np.asarray(pts, dtype=np.float64).reshape(-1, 2)
    fn = getattr(calibration, "table_to_rectified", None)
    if fn is not None:
        return np.asarray(fn(pts), dtype=np.float64).reshape(-1, 2)
    ox, oy = getattr(calibration, "rectified_origin_mm", (-40.0, -40.0))
    return (pts - np.array([ox, oy])) * px_per_mm(calibration)


# ---------------------------------------------------------------------------------------------------------------
# Step 1: candidates by gradient-direction voting.


@dataclass
class _Candidates:
    cx: np.ndarray
    cy: np.ndarray
    size_idx: np.ndarray
    seed_id: list
    seed_z: list


def _half(blur: np.ndarray) -> np.ndarray:
    """The half-resolution image the candidates are found in (area average)."""
    return cv2.resize(blur, None, fx=0.5, fy=0.5, interpolation=cv2.INTER_AREA)


def _vote_candidates(blur: np.ndarray, radii_px: Sequence[float], cfg: DetectorConfig, half: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Vote peaks (x, y, size index) in full-resolution px, and the half-resolution gradient structure tensor.
    `half`: `_half(blur)` when already made."""
    half = _half(blur) if half is None else half
    h, w = half.shape[:2]
    # One set of Sobel derivatives (exact in 16 bits, with Canny's own border) serves both the edges and the
    # gradient structure tensor summed over the colour channels (Di Zenzo), smoothed a little.
    dx = cv2.Sobel(half, cv2.CV_16S, 1, 0, ksize=3, borderType=cv2.BORDER_REPLICATE)
    dy = cv2.Sobel(half, cv2.CV_16S, 0, 1, ksize=3, borderType=cv2.BORDER_REPLICATE)
    edges = cv2.Canny(dx, dy, cfg.canny_low, cfg.canny_high, L2gradient=True)
    ones = np.ones((1, dx.shape[2] if dx.ndim == 3 else 1), np.float32)
    f32 = cv2.CV_32F                    # products of the 16-bit derivatives straight into float
    tensor = cv2.GaussianBlur(cv2.merge([cv2.transform(cv2.multiply(dx, dx, dtype=f32), ones),
                                         cv2.transform(cv2.multiply(dy, dy, dtype=f32), ones),
                                         cv2.transform(cv2.multiply(dx, dy, dtype=f32), ones)]), (3, 3), 0.7)
    # The edge pixels, row by row as np.nonzero would list them (OpenCV's scan is several times faster).
    pts = cv2.findNonZero(edges)
    pts = np.zeros((0, 2), np.int64) if pts is None else pts.reshape(-1, 2).astype(np.int64)
    xs, ys = pts[:, 0], pts[:, 1]
    out_x, out_y, out_s = [], [], []
    if len(xs) == 0:
        return np.zeros(0), np.zeros(0), np.zeros(0, np.int64), tensor
    gx = dx[ys, xs].astype(np.float32)
    gy = dy[ys, xs].astype(np.float32)
    if gx.ndim == 2:  # colour: the channel with the strongest gradient decides the direction
        ch = np.argmax(gx * gx + gy * gy, axis=1)
        rows = np.arange(len(ch))
        gx, gy = gx[rows, ch], gy[rows, ch]
    mag = np.sqrt(gx * gx + gy * gy) + 1e-6
    ux, uy = gx / mag, gy / mag
    xsf, ysf = xs.astype(np.float32), ys.astype(np.float32)
    kernel = np.ones((5, 5), np.uint8)
    for si, r in enumerate(radii_px):
        rh = r * 0.5
        # The rim votes at the radius; the printed inner line of the border ring votes at its own radius for the
        # same centre, so a disk whose ring barely differs from the felt still peaks.
        reach = [rh] + ([rh * cfg.printed_ring_ratio] if cfg.printed_ring_ratio > 0 and cfg.vote_printed_ring
                        else [])
        vx = np.concatenate([xsf + d * ux for d in reach] + [xsf - d * ux for d in reach])
        vy = np.concatenate([ysf + d * uy for d in reach] + [ysf - d * uy for d in reach])
        ix = np.rint(vx).astype(np.int64)
        iy = np.rint(vy).astype(np.int64)
        ok = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
        acc = np.bincount(iy[ok] * w + ix[ok], minlength=h * w).astype(np.float32).reshape(h, w)
        # Votes of one rim spread over a few pixels (rounding, gradient noise): score the 3x3 sum, as a share of
        # the rim's length (`vote_min`, compared with the unscaled sum).
        acc = cv2.boxFilter(acc, -1, (3, 3), normalize=False)
        # The pixels over `vote_min` are a few thousand of a quarter million: OpenCV lists them (row by row, as
        # np.nonzero would) several times faster, and only they are checked for being local maxima.
        found = cv2.findNonZero((acc >= np.float32(cfg.vote_min * 2.0 * math.pi * rh)).view(np.uint8))
        found = np.zeros((0, 2), np.int64) if found is None else found.reshape(-1, 2).astype(np.int64)
        px, py = found[:, 0], found[:, 1]
        top = acc[py, px] >= cv2.dilate(acc, kernel)[py, px]
        px, py = px[top], py[top]
        if len(px) > cfg.max_candidates_per_size:
            keep = np.argsort(-acc[py, px])[: cfg.max_candidates_per_size]
            py, px = py[keep], px[keep]
        out_x.append(px * 2.0 + 0.5)
        out_y.append(py * 2.0 + 0.5)
        out_s.append(np.full(len(px), si, np.int64))
    return np.concatenate(out_x), np.concatenate(out_y), np.concatenate(out_s), tensor


def _blob_candidates(blur: np.ndarray, radii_px: Sequence[float], cfg: DetectorConfig,
                     battlefield_px: tuple[float, float, float, float] | None = None, half: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Candidates from colour blobs: a disk whose rim barely differs from the felt (a purple ring on brown felt)
    gives few edges to vote, but its whole face differs from the felt. Quarter resolution: the distance
    transform of the not-felt mask peaks near a lone disk's centre at about its radius. `half`: `_half(blur)`
    when already made (the quarter-resolution image is made from it, a quarter of the work)."""
    s = 0.25
    small = cv2.resize(_half(blur) if half is None else half, None, fx=0.5, fy=0.5, interpolation=cv2.INTER_AREA)
    lab = cv2.cvtColor(small, cv2.COLOR_BGR2LAB).astype(np.float32)
    felt = np.median(lab.reshape(-1, 3)[::4], axis=0)  # the felt is most of the table
    diff = lab - felt[None, None, :]
    dist2 = cv2.transform(cv2.multiply(diff, diff), np.ones((1, 3), np.float32))
    mask = (dist2 > np.float32(cfg.blob_colour_distance ** 2)).astype(np.uint8)
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    if battlefield_px is not None:
        # The table's surround beyond the battlefield is not felt either: a strip of it along every edge would
        # give a ridge of distance maxima the size of a small disk. Blobs are looked for on the battlefield only
        # (a disk hanging over an edge still has its vote candidates).
        x0, y0, x1, y1 = (int(round(v * s)) for v in battlefield_px)
        inner = np.zeros_like(mask)
        inner[max(y0, 0):max(y1, 0), max(x0, 0):max(x1, 0)] = 1
        mask &= inner
    dt = cv2.distanceTransform(mask, cv2.DIST_L2, 5)
    peaks = (dt >= cv2.dilate(dt, np.ones((5, 5), np.uint8))) & (dt >= 0.7 * min(radii_px) * s)
    py, px = np.nonzero(peaks)
    # A plateau of the distance transform gives many equal maxima: keep one per half radius.
    order = np.argsort(-dt[py, px], kind="stable")
    px, py = px[order], py[order]
    reach2 = (0.5 * dt[py, px]) ** 2
    free = np.ones(len(px), bool)
    kept: list[tuple[int, int]] = []
    for k in range(len(px)):
        if not free[k]:
            continue
        x, y = int(px[k]), int(py[k])
        kept.append((x, y))
        free[k:] &= (px[k:] - x) ** 2 + (py[k:] - y) ** 2 > reach2[k:]
    if not kept:
        return np.zeros(0), np.zeros(0), np.zeros(0, np.int64)
    kx = np.array([k[0] for k in kept], np.int64)
    ky = np.array([k[1] for k in kept], np.int64)
    ang = np.arange(16) * (2.0 * math.pi / 16)
    h, w = mask.shape
    # A disk's blob ends near its radius on some side (terrain and the table's surround go on).
    rr = dt[ky, kx][:, None] + 2.0
    xs = np.clip(np.rint(kx[:, None] + rr * np.cos(ang)[None, :]).astype(int), 0, w - 1)
    ys = np.clip(np.rint(ky[:, None] + rr * np.sin(ang)[None, :]).astype(int), 0, h - 1)
    ends = mask[ys, xs].mean(1) <= 0.85
    r_est = dt[ky, kx] / s
    radii = np.asarray(radii_px, np.float64)
    fit = ends[:, None] & (r_est[:, None] >= 0.7 * radii[None, :]) & (r_est[:, None] <= 1.15 * radii[None, :])
    k, si = np.nonzero(fit)                       # kept order, then size order
    return (kx[k] + 0.5) / s - 0.5, (ky[k] + 0.5) / s - 0.5, si.astype(np.int64)


# ---------------------------------------------------------------------------------------------------------------
# Step 2: rim profiles, sub-pixel edge points, robust centre fit.

def _sample(img: np.ndarray, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Bilinear samples (float32) of `img` at float coordinates of any shape (..., ) -> (..., channels). An 8-bit
    image is sampled at 1/32 px, as fast as OpenCV goes."""
    shape = X.shape
    n = X.size
    if n == 0:
        ch = 1 if img.ndim == 2 else img.shape[2]
        return np.zeros((*shape, ch), np.float32)
    if X.ndim >= 2 and X.shape[0] < 32767 and n // X.shape[0] < 32767:
        # One map row per leading index (a candidate): no padding, no copy when already float32.
        mx = np.ascontiguousarray(X, dtype=np.float32).reshape(X.shape[0], -1)
        my = np.ascontiguousarray(Y, dtype=np.float32).reshape(X.shape[0], -1)
        out = cv2.remap(img, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
        ch = 1 if out.ndim == 2 else out.shape[2]
        return out.reshape(*shape, ch).astype(np.float32, copy=False)
    width = 2048
    rows = (n + width - 1) // width
    pad = rows * width - n
    mx = np.concatenate([X.ravel(), np.zeros(pad, X.dtype)]).astype(np.float32).reshape(rows, width)
    my = np.concatenate([Y.ravel(), np.zeros(pad, Y.dtype)]).astype(np.float32).reshape(rows, width)
    out = cv2.remap(img, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
    ch = 1 if out.ndim == 2 else out.shape[2]
    return out.reshape(rows * width, ch)[:n].reshape(*shape, ch).astype(np.float32, copy=False)


def _median_rows(x: np.ndarray) -> np.ndarray:
    """np.median(x, axis=1), by one partial sort (np.median's own overhead is most of its time on short rows)."""
    n = x.shape[1]
    if n == 0:
        return np.full(x.shape[0], np.nan, x.dtype)
    k = n // 2
    if n % 2:
        return np.partition(x, k, axis=1)[:, k]
    part = np.partition(x, (k - 1, k), axis=1)
    return (part[:, k - 1] + part[:, k]) / x.dtype.type(2)


def _rim_points(img: np.ndarray, cx: np.ndarray, cy: np.ndarray, r: np.ndarray, angles: np.ndarray,
                window: float, cfg: DetectorConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edge radius (offset from r, px) and step strength on every ray; NaN where no clear edge within `window`.

    Colour profiles along each ray are sampled every 0.5 px; the colour step over 2 px is measured within
    `window` of the circle. Returns (offset (M, K), peak strength (M, K), profiles (M, K, D, channels)).

    This runs on every candidate several times per frame: the work is done on (rays, samples) planes with OpenCV's
    element-wise operations and row reductions, which are several times faster than numpy's reductions over a
    short last axis.
    """
    b = max(1, int(round(cfg.step_px)))                         # half the step baseline, in 0.5 px samples
    half = int(math.ceil(window * 2.0)) + 2 * b                 # samples each side of the circle
    offsets = (np.arange(-half, half + 1, dtype=np.float32) * 0.5)
    mid = offsets[b:-b]
    M, K, D1 = len(cx), len(angles), len(mid)
    ca, sa = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    rr = r[:, None, None].astype(np.float32) + offsets[None, None, :]
    X = cx[:, None, None].astype(np.float32) + rr * ca[None, :, None]
    Y = cy[:, None, None].astype(np.float32) + rr * sa[None, :, None]
    prof = _sample(img, X, Y)                                   # (M, K, D, C)
    N = M * K
    if N == 0:
        return np.full((M, K), np.nan), np.zeros((M, K)), prof
    C = prof.shape[3]
    P = prof.reshape(N, len(offsets), C)
    step = cv2.subtract(P[:, 2 * b:], P[:, :-2 * b])            # (N, D1, C), over `step_px` px
    strength = cv2.transform(cv2.multiply(step, step), np.ones((1, C), np.float32)).reshape(N, D1)
    strength = cv2.sqrt(strength) * np.float32(1.0 / b)         # colour units per px
    # On each ray take the outermost clear local maximum of the colour step within the window (a step at least
    # half as strong as the strongest there): the silhouette against what lies around the disk. The printed
    # outline, the cut edge and the border ring's bevel give a second step just inside, which is not the rim.
    # The window's samples are columns lo..hi; the profile runs on past them, so every one has both neighbours.
    cols = np.nonzero(np.abs(mid) <= window)[0]
    lo, hi = int(cols[0]), int(cols[-1]) + 1
    s_in = strength[:, lo:hi]
    is_peak = (s_in >= strength[:, lo - 1:hi - 1]) & (s_in > strength[:, lo + 1:hi + 1])
    # A rim point needs a clear step, judged against this disk's own rim contrast: a green ring on green felt
    # steps far less than a white one, all round. The threshold is a share of the candidate's median strongest
    # step over its rays, between `edge_floor` and `edge_min`.
    s_masked = np.where(is_peak, s_in, np.float32(0.0))
    ray_best = cv2.reduce(s_masked, 1, cv2.REDUCE_MAX).reshape(M, K)
    level = _median_rows(ray_best)                                                  # (M,)
    thr = np.clip(cfg.edge_relative * level, min(cfg.edge_floor, cfg.edge_min), cfg.edge_min).astype(np.float32)
    thr_ray = np.repeat(thr, K)[:, None]                                            # (N, 1)
    s_masked[s_masked < thr_ray] = 0.0
    strongest = cv2.reduce(s_masked, 1, cv2.REDUCE_MAX)                              # (N, 1)
    clear = (s_masked > 0.0) & (s_masked >= np.float32(0.5) * strongest)
    # Last clear peak: the largest (column + 1) among the clear ones, 0 where there is none.
    last = cv2.reduce(clear * np.arange(1, hi - lo + 1, dtype=np.float32), 1, cv2.REDUCE_MAX)[:, 0]
    found = np.nonzero(last > 0)[0]
    j = last[found].astype(np.int64) - 1 + lo                                       # column in `strength`
    peak_f = strength[found, j]
    # Sub-pixel: centroid of the step strength above half the peak within +-1 px of it. A step edge gives its
    # own peak; a thin dark outline (two opposite steps) gives the line's middle.
    idx = np.clip(j[:, None] + np.arange(-2, 3)[None, :], 0, D1 - 1)
    sw = strength[found[:, None], idx]
    wgt = np.clip(sw - np.float32(0.5) * peak_f[:, None], 0.0, None)
    off_f = (wgt * mid[idx]).sum(1) / np.maximum(wgt.sum(1), 1e-6)
    offset = np.full(N, np.nan)
    peak = np.zeros(N)
    offset[found] = off_f
    peak[found] = peak_f
    return offset.reshape(M, K), peak.reshape(M, K), prof


def _fit_centres(cx: np.ndarray, cy: np.ndarray, r: np.ndarray, offset: np.ndarray, angles: np.ndarray,
                 iterations: int = 4, scale: float = 1.5, ray_w: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Robust (Tukey) least squares for the centre with the radius fixed; returns refined cx, cy."""
    ca, sa = np.cos(angles), np.sin(angles)
    valid = np.isfinite(offset)
    rho = np.where(valid, r[:, None] + np.nan_to_num(offset), 0.0)
    px = cx[:, None] + rho * ca[None, :]
    py = cy[:, None] + rho * sa[None, :]
    x, y = cx.astype(np.float64).copy(), cy.astype(np.float64).copy()
    for _ in range(iterations):
        dx = px - x[:, None]
        dy = py - y[:, None]
        d = np.sqrt(dx * dx + dy * dy) + 1e-9
        e = d - r[:, None]
        u = np.clip(e / (scale * 2.0), -1.0, 1.0)
        wgt = np.where(valid & (np.abs(e) < scale * 2.0), (1 - u * u) ** 2, 0.0)
        if ray_w is not None:
            wgt = wgt * ray_w
        jx, jy = -dx / d, -dy / d
        a11 = (wgt * jx * jx).sum(1) + 1e-6
        a12 = (wgt * jx * jy).sum(1)
        a22 = (wgt * jy * jy).sum(1) + 1e-6
        b1 = (wgt * jx * e).sum(1)
        b2 = (wgt * jy * e).sum(1)
        det = a11 * a22 - a12 * a12
        ok = (det > 1e-3) & (wgt.sum(1) >= 6)
        stepx = np.where(ok, -(a22 * b1 - a12 * b2) / np.where(ok, det, 1.0), 0.0)
        stepy = np.where(ok, -(-a12 * b1 + a11 * b2) / np.where(ok, det, 1.0), 0.0)
        stepx = np.clip(stepx, -3.0, 3.0)
        stepy = np.clip(stepy, -3.0, 3.0)
        x += stepx
        y += stepy
    return x, y


def _fit_circles(cx: np.ndarray, cy: np.ndarray, r: np.ndarray, offset: np.ndarray, angles: np.ndarray,
                 iterations: int = 5, scale: float = 2.0, r_range: tuple[float, float] = (-2.5, 1.5),
                 ray_w: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Robust least squares for centre and radius (the radius kept within `r_range` of r)."""
    ca, sa = np.cos(angles), np.sin(angles)
    valid = np.isfinite(offset)
    rho = np.where(valid, r[:, None] + np.nan_to_num(offset), 0.0)
    px = cx[:, None] + rho * ca[None, :]
    py = cy[:, None] + rho * sa[None, :]
    x, y, q = cx.astype(np.float64).copy(), cy.astype(np.float64).copy(), r.astype(np.float64).copy()
    cut = scale * 2.0
    for _ in range(iterations):
        ux = px - x[:, None]
        uy = py - y[:, None]
        d = np.sqrt(ux * ux + uy * uy) + 1e-9
        ux /= d
        uy /= d                                                             # unit vectors centre -> rim point
        e = d - q[:, None]
        u = e / cut
        w = (1 - u * u) ** 2
        w[~valid | (np.abs(e) >= cut)] = 0.0
        if ray_w is not None:
            w = w * ray_w
        # Gauss-Newton step with d e / d (x, y, q) = (-ux, -uy, -1): the 3x3 normal equations, solved in closed
        # form for all circles at once (a batched np.linalg.solve costs more than the sums).
        wu, wv = w * ux, w * uy
        a11 = (wu * ux).sum(1) + 1e-6
        a12 = (wu * uy).sum(1)
        a22 = (wv * uy).sum(1) + 1e-6
        sw = w.sum(1)
        a13, a23, a33 = wu.sum(1), wv.sum(1), sw + 1e-6
        b1, b2, b3 = -(wu * e).sum(1), -(wv * e).sum(1), -(w * e).sum(1)
        c11 = a22 * a33 - a23 * a23
        c12 = a13 * a23 - a12 * a33
        c13 = a12 * a23 - a13 * a22
        c22 = a11 * a33 - a13 * a13
        c23 = a12 * a13 - a11 * a23
        c33 = a11 * a22 - a12 * a12
        det = a11 * c11 + a12 * c12 + a13 * c13
        ok = (sw >= 8) & (np.abs(det) > 1e-30)                              # too few rim points: no step
        inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
        x -= np.clip((c11 * b1 + c12 * b2 + c13 * b3) * inv, -3.0, 3.0)
        y -= np.clip((c12 * b1 + c22 * b2 + c23 * b3) * inv, -3.0, 3.0)
        q = np.clip(q - np.clip((c13 * b1 + c23 * b2 + c33 * b3) * inv, -3.0, 3.0), r + r_range[0], r + r_range[1])
    return x, y, q


@dataclass
class _Verified:
    cx: np.ndarray
    cy: np.ndarray
    r: np.ndarray
    size_idx: np.ndarray
    support: np.ndarray        # (M, K) bool: ray shows the rim on the fitted circle
    ex: np.ndarray             # (M, K) rim point x (nominal where unsupported)
    ey: np.ndarray
    nx: np.ndarray             # (M, K) nominal circle points
    ny: np.ndarray
    residual: np.ndarray       # (M,) RMS of supported points
    ring_uniform: np.ndarray   # (M,) fraction of supported rays whose border-ring colour matches the median
    steps: np.ndarray          # (M,) step consistency across the rim (see _step_consistency)
    alignment: np.ndarray      # (M,) mean share of gradient energy along the rays at the supporting rim points
    r_class: np.ndarray        # (M,) the size class radius as seen in this frame (nominal + the frame's offset)
    seed_id: list = field(default_factory=list)
    seed_z: list = field(default_factory=list)
    shadow: Shadow | None = None
    tensor: np.ndarray | None = None   # the half-resolution gradient structure tensor the fits were checked with
    context: FrameContext | None = None  # the shadow and rim offsets used


@dataclass(frozen=True)
class Shadow:
    """The frame's cast-shadow direction (one light): rim rays facing it see the shadow's edge, not the disk's."""

    direction_rad: float
    strength: float        # 0..1, how one-sided the darkening around lone disks is
    half_width_rad: float = math.radians(75.0)

    def shadowed(self, angles: np.ndarray) -> np.ndarray:
        return np.cos(angles - self.direction_rad) > math.cos(self.half_width_rad)

    def fit_weights(self, angles: np.ndarray) -> np.ndarray:
        return np.where(self.shadowed(angles), 0.0, 1.0)[None, :]


@dataclass(frozen=True)
class FrameContext:
    """What a whole frame tells about every disk in it: the cast shadow's direction and, per size class, how far
    the rim as seen lies off the class radius (blur, the cut edge, the disks' height). A detection in a part of
    the frame takes these from the whole frame's: a few disks in a crop estimate them worse, and differently."""

    shadow: Shadow | None
    rim_offset_px: tuple[float, float, float]

    def __post_init__(self) -> None:
        if len(self.rim_offset_px) != len(SIZE_CLASSES) or not all(math.isfinite(v) for v in self.rim_offset_px):
            raise ValueError("rim_offset_px: one finite offset per size class")


def _shadow_direction(img: np.ndarray, cx: np.ndarray, cy: np.ndarray, r: np.ndarray, min_strength: float = 0.3
                      ) -> Shadow | None:
    """Where the felt next to lone disks is darker than the felt further out, summed over disks."""
    if len(cx) == 0:
        return None
    K = 48
    ang = np.arange(K) * (2.0 * math.pi / K)
    # Brightness (OpenCV's BGR -> gray weights) of the colour samples: bilinear sampling is linear, so this is the
    # gray image's samples without converting the whole image.
    luma = np.array([0.114, 0.587, 0.299], np.float32) if img.ndim == 3 else np.ones(1, np.float32)

    def ring(k0: float, k1: float) -> np.ndarray:
        vals = []
        for k in np.linspace(k0, k1, 3):
            rr = (r + k)[:, None]
            vals.append(_sample(img, cx[:, None] + rr * np.cos(ang), cy[:, None] + rr * np.sin(ang)) @ luma)
        return np.mean(vals, axis=0)

    dark = ring(9.0, 13.0) - ring(1.5, 4.5)                   # (M, K), > 0 where darker near the disk
    dark = np.clip(dark - np.median(dark, axis=1, keepdims=True), 0.0, None)
    vx = float((dark * np.cos(ang)).sum())
    vy = float((dark * np.sin(ang)).sum())
    total = float(dark.sum())
    if total <= 1e-6:
        return None
    strength = math.hypot(vx, vy) / total
    if strength < min_strength:
        return None
    return Shadow(math.atan2(vy, vx), strength)


def _lone(cx: np.ndarray, cy: np.ndarray, r: np.ndarray, gap: float = 8.0) -> np.ndarray:
    d = np.hypot(cx[:, None] - cx[None, :], cy[:, None] - cy[None, :])
    near = d < (r[:, None] + r[None, :] + gap)
    np.fill_diagonal(near, False)
    return ~near.any(1)


def _alignment(tensor: np.ndarray, cx: np.ndarray, cy: np.ndarray, r: np.ndarray, off: np.ndarray,
               angles: np.ndarray) -> np.ndarray:
    """Share of the local gradient energy that points along each ray at its rim point (1: a clean radial edge,
    about 0.5: texture, 0: an edge along the ray). The tensor is at half resolution."""
    ca, sa = np.cos(angles)[None, :], np.sin(angles)[None, :]
    rho = r[:, None] + np.nan_to_num(off)
    X = (cx[:, None] + rho * ca - 0.5) * 0.5
    Y = (cy[:, None] + rho * sa - 0.5) * 0.5
    t = _sample(tensor, X, Y)
    gxx, gyy, gxy = t[..., 0], t[..., 1], t[..., 2]
    along = gxx * ca * ca + gyy * sa * sa + 2.0 * gxy * ca * sa
    return along / np.maximum(gxx + gyy, 1e-6)


def _support(off: np.ndarray, angles: np.ndarray, shadow: Shadow | None, tol: float,
             aligned: np.ndarray | None = None) -> np.ndarray:
    """Rays whose edge lies on the circle; on the shadow side the shadow's edge a little further out counts too."""
    o = np.nan_to_num(off, nan=99.0)
    ok = np.abs(o) <= tol
    if shadow is not None:
        ok |= shadow.shadowed(angles)[None, :] & (o >= -tol) & (o <= tol + 3.0)
    if aligned is not None:
        ok &= aligned
    return ok


def _contact_rays(cx: np.ndarray, cy: np.ndarray, r: np.ndarray, angles: np.ndarray, near_px: float
                  ) -> np.ndarray | None:
    """(M, K) rays of each disk whose rim point lies within `near_px` of another disk's rim: where two disks touch
    or their rims cross, a ray sees two rims side by side and its outermost step is the other disk's."""
    M = len(cx)
    if near_px <= 0 or M < 2:
        return None
    d = np.hypot(cx[:, None] - cx[None, :], cy[:, None] - cy[None, :])
    np.fill_diagonal(d, np.inf)
    pi, pj = np.nonzero(d < r[:, None] + r[None, :] + near_px)
    if len(pi) == 0:
        return None
    px = cx[pi][:, None] + r[pi][:, None] * np.cos(angles)[None, :]
    py = cy[pi][:, None] + r[pi][:, None] * np.sin(angles)[None, :]
    near = np.abs(np.hypot(px - cx[pj][:, None], py - cy[pj][:, None]) - r[pj][:, None]) < near_px
    out = np.zeros((M, len(angles)), bool)
    np.logical_or.at(out, pi, near)
    # A disk stacked nearly centred on another has its whole rim by the other's: nothing to leave out there.
    out[out.mean(1) > 0.35] = False
    return out


def _measure(img: np.ndarray, cx: np.ndarray, cy: np.ndarray, r: np.ndarray, K: int, cfg: DetectorConfig,
             passes: tuple[tuple[float, int, float], ...], shadow: "Shadow | None" = None, r_free: float = 0.0,
             keep_r: np.ndarray | None = None, exclude: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Alternate rim measurement and centre fit; passes are (window, fit iterations, Tukey scale).

    With `r_free` > 0 the radius of a disk whose rim is mostly seen may move that far from `r` (a disk's
    silhouette varies a little: its cut edge shows on the side facing the camera); a disk seen only in part, or
    marked in `keep_r`, keeps `r`, so its centre is not pulled by a radius the visible arc cannot pin down.
    """
    angles = np.arange(K) * (2.0 * math.pi / K)
    ray_w = None if shadow is None else shadow.fit_weights(angles)
    rr = r.astype(np.float64).copy()
    for window, iters, scale in passes:
        off, _, _ = _rim_points(img, cx, cy, rr, angles, window, cfg)
        if exclude is not None:
            off[exclude] = np.nan
        fx, fy = _fit_centres(cx, cy, rr, off, angles, iterations=iters, scale=scale, ray_w=ray_w)
        fr = rr.copy()
        if r_free > 0:
            seen = np.isfinite(off) if ray_w is None else np.isfinite(off) & (ray_w > 0)
            full = seen.sum(1) >= 0.55 * (K if ray_w is None else float((ray_w > 0).sum()))
            if keep_r is not None:
                full &= ~keep_r
            if full.any():
                gx, gy, gr = _fit_circles(cx[full], cy[full], r[full], off[full] + (rr - r)[full, None], angles,
                                          iterations=iters, scale=scale, r_range=(-r_free, r_free), ray_w=ray_w)
                fx[full], fy[full], fr[full] = gx, gy, gr
        # The rim points of this look serve again, measured from the fitted circle (no second sampling).
        off = _refit_offsets(cx, cy, rr, off, angles, fx, fy, fr)
        cx, cy, rr = fx, fy, fr
    return cx, cy, off, angles, rr


def _align_rims(img: np.ndarray, cx: np.ndarray, cy: np.ndarray, r: np.ndarray, cfg: DetectorConfig,
                exclude: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Sub-pixel centres from the whole rim profile, not one edge per ray.

    A disk's rim is several edges close together: the border ring's inner line, the printed outline, the cut
    edge, the cardboard side on the side facing the camera, a cast shadow beyond. Which of them is the strongest
    step changes round the disk, so "the strongest edge on each ray" jumps between them by a px or two and pulls
    the centre. Here every ray's colour-step profile across the rim band is aligned (normalised
    cross-correlation, parabolic sub-sample peak) to the disk's own median profile over its rays; the centre is
    the robust fit of those shifts, and the profiles are sampled again around it. A ray that matches poorly
    (under another disk, a badge, a hand) does not count, nor do the rays in `exclude` (M, align_rays): where
    another disk's rim runs alongside. Returns refined (cx, cy); the radius is unchanged.
    """
    M = len(cx)
    cx = np.asarray(cx, np.float64).copy()
    cy = np.asarray(cy, np.float64).copy()
    if M == 0 or cfg.align_iterations == 0:
        return cx, cy
    K = cfg.align_rays
    step = 0.5
    n_sh = int(round(cfg.align_reach_px / step))
    n_in = int(round(cfg.align_inner_px / step))
    n_out = int(round(cfg.align_outer_px / step))
    nc = n_in + n_out + 1                                       # samples of the compared band
    # Offsets from r: the band widened by the reach each side, and one more sample each side for the difference.
    rho = (np.arange(-(n_in + n_sh + 1), n_out + n_sh + 2) * step).astype(np.float32)
    ang = np.arange(K) * (2.0 * math.pi / K)
    ca, sa = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    shifts = np.arange(-n_sh, n_sh + 1)
    S = len(shifts)
    rr = r.astype(np.float32)[:, None, None] + rho[None, None, :]
    N, D = M * K, len(rho) - 2
    ones = np.ones((1, img.shape[2] if img.ndim == 3 else 1), np.float32)
    for _ in range(cfg.align_iterations):
        X = cx.astype(np.float32)[:, None, None] + rr * ca[None, :, None]
        Y = cy.astype(np.float32)[:, None, None] + rr * sa[None, :, None]
        P = _sample(img, X, Y).reshape(N, D + 2, -1)            # (rays, samples, channels)
        # Central colour step along each ray; OpenCV's element-wise ops and channel sum (numpy's reductions over a
        # 3-long last axis cost several times more).
        d = cv2.subtract(P[:, 2:], P[:, :-2])
        g = cv2.sqrt(cv2.transform(cv2.multiply(d, d), ones).reshape(N, D))        # (rays, samples)
        # The disk's own profile: the median over its rays of the band at zero shift, zero mean, unit norm.
        band = g[:, n_sh:n_sh + nc].reshape(M, K, nc).transpose(0, 2, 1).reshape(M * nc, K)
        t = _median_rows(np.ascontiguousarray(band)).reshape(M, nc)
        t = t - t.mean(1, keepdims=True)
        t /= np.linalg.norm(t, axis=1, keepdims=True) + 1e-6
        # Normalised cross-correlation at every shift: the numerator as one batched product (t has zero mean, so
        # the windows need no centring), the windows' spread from running sums.
        win = np.lib.stride_tricks.sliding_window_view(g.reshape(M, K, D), nc, axis=2)[:, :, :S]
        num = np.matmul(win.reshape(M, K * S, nc), t[:, :, None]).reshape(M, K, S)
        c1 = cv2.boxFilter(g, -1, (nc, 1), anchor=(0, 0), normalize=False, borderType=cv2.BORDER_CONSTANT)[:, :S]
        c2 = cv2.sqrBoxFilter(g, -1, (nc, 1), anchor=(0, 0), normalize=False,
                              borderType=cv2.BORDER_CONSTANT)[:, :S]
        spread = cv2.sqrt(np.maximum(c2 - c1 * c1 * np.float32(1.0 / nc), np.float32(1e-6)))
        ncc = num / spread.reshape(M, K, S)
        j = np.argmax(ncc, axis=2)
        jj = np.clip(j, 1, S - 2)[..., None]
        a0 = np.take_along_axis(ncc, jj - 1, 2)[..., 0]
        a1 = np.take_along_axis(ncc, jj, 2)[..., 0]
        a2 = np.take_along_axis(ncc, jj + 1, 2)[..., 0]
        den = a0 - 2.0 * a1 + a2
        safe = np.abs(den) > 1e-9
        frac = np.clip(np.where(safe, 0.5 * (a0 - a2) / np.where(safe, den, 1.0), 0.0), -0.5, 0.5)
        ok = (a1 >= cfg.align_min_match) & (j > 0) & (j < S - 1)   # a peak at the reach's end: none
        off = np.where(ok, (shifts[jj[..., 0]] + frac) * step, np.nan)
        if exclude is not None:
            off[exclude] = np.nan
        cx, cy = _fit_centres(cx, cy, r.astype(np.float64), off, ang, iterations=4, scale=1.0)
    return cx, cy


def _step_consistency(img: np.ndarray, cx: np.ndarray, cy: np.ndarray, r: np.ndarray, off: np.ndarray,
                      angles: np.ndarray, support: np.ndarray, across: float = 2.5) -> np.ndarray:
    """How consistently the colour steps the same way across the supported rim points (resultant length of the
    inside-minus-outside colour vectors, 0..1). A disk's ring against the felt steps the same way all round;
    texture (grass, gravel, printed art) steps every which way."""
    rho = r[:, None] + np.nan_to_num(off)
    ca, sa = np.cos(angles)[None, :], np.sin(angles)[None, :]
    inner = _sample(img, cx[:, None] + (rho - across) * ca, cy[:, None] + (rho - across) * sa)
    outer = _sample(img, cx[:, None] + (rho + across) * ca, cy[:, None] + (rho + across) * sa)
    v = (inner - outer) * support[..., None]
    total = np.linalg.norm(v, axis=2).sum(1)
    return np.linalg.norm(v.sum(1), axis=1) / np.maximum(total, 1e-6)


def _residual(off: np.ndarray, support: np.ndarray, angles: np.ndarray, shadow: "Shadow | None") -> np.ndarray:
    """RMS distance of the supporting rim points to the circle (the shadow side left out)."""
    use = support if shadow is None else support & ~shadow.shadowed(angles)[None, :]
    n = use.sum(1)
    return np.sqrt(np.where(use, np.nan_to_num(off) ** 2, 0.0).sum(1) / np.maximum(n, 1))


def _ring_samples(img: np.ndarray, cx: np.ndarray, cy: np.ndarray, r: np.ndarray, angles: np.ndarray,
                  depth: float) -> np.ndarray:
    rr = (r - depth)[:, None]
    return _sample(img, cx[:, None] + rr * np.cos(angles)[None, :], cy[:, None] + rr * np.sin(angles)[None, :])


def _ring_uniformity(ring: np.ndarray, support: np.ndarray, match: float = 38.0) -> np.ndarray:
    """Per disk: fraction of supported rays whose ring colour lies near the (robust) mean over supported rays."""
    w = support.astype(np.float32)[..., None]
    n = np.maximum(w.sum(1), 1.0)
    mean = (ring * w).sum(1) / n
    for _ in range(2):  # re-centre on the rays that agree (art under a token, glare)
        near = (np.linalg.norm(ring - mean[:, None, :], axis=2) <= match * 1.5)[..., None] * w
        mean = np.where(near.sum(1) >= 3, (ring * near).sum(1) / np.maximum(near.sum(1), 1.0), mean)
    inl = (np.linalg.norm(ring - mean[:, None, :], axis=2) <= match) & support
    return np.where(support.sum(1) >= 4, inl.sum(1) / np.maximum(support.sum(1), 1), 0.0)


def _densest_median(values: np.ndarray, width: float = 1.0) -> float:
    """Median of the densest `width`-wide cluster of values (phantoms such as a larger disk's printed inner ring
    form their own, smaller cluster)."""
    v = np.sort(np.asarray(values, np.float64))
    if len(v) == 0:
        return 0.0
    hi = np.searchsorted(v, v + width, side="right")
    i = int(np.argmax(hi - np.arange(len(v))))
    return float(np.median(v[i:hi[i]]))


def _refit_offsets(cx0: np.ndarray, cy0: np.ndarray, r0: np.ndarray, off: np.ndarray, angles: np.ndarray,
                   cx: np.ndarray, cy: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Offsets of rim points measured around (cx0, cy0, r0) from a refitted circle (cx, cy, r), NaN kept."""
    rho = r0[:, None] + off
    px = cx0[:, None] + rho * np.cos(angles)[None, :]
    py = cy0[:, None] + rho * np.sin(angles)[None, :]
    return np.hypot(px - cx[:, None], py - cy[:, None]) - r[:, None]


def _verify(img: np.ndarray, cand: _Candidates, radii: np.ndarray, cfg: DetectorConfig, K: int,
            ppm: float = 1.0, tensor: np.ndarray | None = None, verifier: RimVerifier | None = None,
            context: FrameContext | None = None) -> _Verified:
    """Coarse check of every candidate on K rays: fitted centre, supporting rays, ring; copies merged.

    The rim as seen lies a little inside or outside the nominal radius (blur, the dark cut edge, the printed
    bevel, the disk's height): the first pass fits the radius too, and the median offset of the clearly
    supported candidates of each size class (or of all classes) is then used for every candidate.
    With a `verifier`, circles whose rays it scores at next to nothing are dropped once placed (the prescreen).
    """
    r0 = radii[cand.size_idx]
    cx, cy = cand.cx.astype(np.float64), cand.cy.astype(np.float64)
    seeded = np.array([s is not None for s in cand.seed_id], bool)
    angles = np.arange(K) * (2.0 * math.pi / K)
    # A vote peak can sit a few px off (the printed ring's votes, the shadow's): a wide first look. (3.5 px is wide
    # enough; a wider window lets a neighbour's rim or the printed ring pull the first fit, and costs samples on
    # every candidate.) It takes every candidate (most are art and texture): half the rays are enough to place a
    # circle and to see whether it has a rim at all. (A second, narrower look on half the rays before the all-ray
    # look found fewer disks on the tuning seeds, not more.)
    a0 = angles[::2]
    off, _, _ = _rim_points(img, cx, cy, r0, a0, 3.5, cfg)
    cx1, cy1, rf1 = _fit_circles(cx, cy, r0, off, a0, scale=2.5)
    off = _refit_offsets(cx, cy, r0, off, a0, cx1, cy1, rf1)
    cx, cy, rf = cx1, cy1, rf1
    # Candidates with next to no rim on their fitted circle go now (most vote peaks on art and texture).
    frac0 = (np.abs(np.nan_to_num(off, nan=9.0)) <= cfg.rim_tolerance_px).mean(1)
    alive = (frac0 >= 0.8 * cfg.accept_min) | seeded
    clean = (np.isfinite(off) & (np.abs(np.nan_to_num(off, nan=9.0)) <= 1.0)).mean(1) >= 0.6
    if verifier is not None and cfg.prescreen_ray_score > 0:
        # Most of the others are art and texture too, whose rays the ray network scores at next to nothing, which
        # a few rays show as well as all of them (the disks accepted on the tuning seeds score 0.08 or more on 12
        # rays of their final circles; `prescreen_ray_score` 0.04 on 8 rays of this first fit found the same
        # disks): they go before the all-ray look. A seeded candidate, a clean circle and one the geometric
        # acceptance may take are kept whatever they score.
        ask = np.nonzero(alive & ~seeded & ~clean & (frac0 < cfg.accept_geometric))[0]
        pre_angles = np.arange(cfg.prescreen_rays) * (2.0 * math.pi / cfg.prescreen_rays)
        pre = verifier.ray_scores(img, cx[ask], cy[ask], rf[ask], cand.size_idx[ask], pre_angles, ppm).mean(1)
        alive[ask[pre < cfg.prescreen_ray_score]] = False
    if not alive.all():
        keep_idx = np.nonzero(alive)[0]
        cx, cy, rf, r0, off, seeded, clean = cx[keep_idx], cy[keep_idx], rf[keep_idx], r0[keep_idx], \
            off[keep_idx], seeded[keep_idx], clean[keep_idx]
        cand = _Candidates(cand.cx[keep_idx], cand.cy[keep_idx], cand.size_idx[keep_idx],
                           [cand.seed_id[i] for i in keep_idx], [cand.seed_z[i] for i in keep_idx])
    good = clean.copy()
    # A larger disk's printed inner ring looks like a smaller disk at its centre: keep those out.
    g = np.nonzero(good)[0]
    if len(g):
        conc = (np.hypot(cx[g][:, None] - cx[g][None, :], cy[g][:, None] - cy[g][None, :]) < 4.0) & \
            (cand.size_idx[g][:, None] < cand.size_idx[g][None, :])
        good[g[conc.any(1)]] = False
        g = np.nonzero(good)[0]
    shadow = None if context is None else context.shadow
    if len(g) and context is None:
        lone = g[_lone(cx[g], cy[g], rf[g])]
        shadow = _shadow_direction(img, cx[lone], cy[lone], rf[lone])
    # Second pass for every candidate on all rays, the shadow side left out of the fit, starting from its own
    # radius. One look: the fit has settled within a px by now (a second, narrower look took a sixth of the
    # detector's time and found no more disks on the tuning seeds).
    ray_w = None if shadow is None else shadow.fit_weights(angles)
    off, _, _ = _rim_points(img, cx, cy, rf, angles, 3.0, cfg)
    cx1, cy1, rf1 = _fit_circles(cx, cy, r0, off + (rf - r0)[:, None], angles, iterations=4, scale=1.5, ray_w=ray_w)
    off = _refit_offsets(cx, cy, rf, off, angles, cx1, cy1, rf1)
    cx, cy, rf = cx1, cy1, rf1
    # The rim points of this look serve again, measured from the fitted circle (no second sampling).
    seen = np.isfinite(off) & (np.abs(np.nan_to_num(off, nan=9.0)) <= 1.0)
    if ray_w is not None:
        seen &= ray_w > 0
    n_open_rays = K if ray_w is None else float((ray_w > 0).sum())
    good &= seen.sum(1) >= 0.6 * n_open_rays
    if good.any():  # lone disks only: a neighbour's rim inside the window bends the radius
        g = np.nonzero(good)[0]
        good[g[~_lone(cx[g], cy[g], rf[g], gap=3.0)]] = False
    if context is not None:
        delta = np.asarray(context.rim_offset_px, np.float64)
    else:
        delta_all = _densest_median((rf - r0)[good]) if good.sum() >= 3 else 0.0
        delta = np.zeros(len(radii))
        for k in range(len(radii)):
            sel = good & (cand.size_idx == k)
            delta[k] = _densest_median((rf - r0)[sel]) if sel.sum() >= 3 else delta_all
    # A disk seen all round keeps its own radius near its class; one seen in part gets the class radius, so that
    # its centre is not pulled along by a radius its visible arc cannot fix.
    rc = r0 + delta[cand.size_idx]
    well_seen = seen.sum(1) >= 0.55 * n_open_rays
    r = np.where(well_seen, np.clip(rf, rc - cfg.radius_freedom_px, rc + cfg.radius_freedom_px), rc)
    # The rim points found so far serve again: measured from the new radius (same centre), and for the disks seen
    # in part from their refitted circle (no second sampling).
    off = off + (rf - r)[:, None]
    part = ~well_seen
    if part.any():
        off_p, _, _ = _rim_points(img, cx[part], cy[part], r[part], angles, 2.0, cfg)
        px1, py1 = _fit_centres(cx[part], cy[part], r[part], off_p, angles, iterations=3, scale=1.0, ray_w=ray_w)
        off[part] = _refit_offsets(cx[part], cy[part], r[part], off_p, angles, px1, py1, r[part])
        cx[part], cy[part] = px1, py1
    off[np.abs(np.nan_to_num(off, nan=9.0)) > 2.0] = np.nan    # as a look within 2 px of the circle would see
    align = np.ones_like(off) if tensor is None else _alignment(tensor, cx, cy, r, off, angles)
    support = _support(off, angles, shadow, cfg.rim_tolerance_px, align >= cfg.min_alignment)
    # A free radius that ran to its limit was pulled by an edge that is not this disk's rim (the art of a disk
    # underneath, a neighbour's rim, a shadow): try the class radius too and keep whichever the rim supports.
    pulled = np.nonzero(well_seen & (np.abs(rf - rc) >= cfg.radius_freedom_px - 0.05))[0]
    if len(pulled):
        px_, py_, pr_ = cx[pulled].copy(), cy[pulled].copy(), rc[pulled].copy()
        for window in (2.5, 2.0):
            off_p, _, _ = _rim_points(img, px_, py_, pr_, angles, window, cfg)
            px_, py_ = _fit_centres(px_, py_, pr_, off_p, angles, iterations=3, scale=1.0, ray_w=ray_w)
        off_p, _, _ = _rim_points(img, px_, py_, pr_, angles, 2.0, cfg)
        al_p = np.ones_like(off_p) if tensor is None else _alignment(tensor, px_, py_, pr_, off_p, angles)
        sup_p = _support(off_p, angles, shadow, cfg.rim_tolerance_px, al_p >= cfg.min_alignment)
        better = sup_p.sum(1) > support[pulled].sum(1)
        b = pulled[better]
        cx[b], cy[b], r[b] = px_[better], py_[better], pr_[better]
        off[b], align[b], support[b] = off_p[better], al_p[better], sup_p[better]
    frac = support.mean(1)
    keep = frac >= np.where(seeded, 0.8 * cfg.accept_min_history, 0.8 * cfg.accept_min)
    # The same disk found from two peaks: keep the better-supported copy (and the seed id of either).
    idx = np.nonzero(keep)[0]
    idx = idx[np.argsort(-frac[idx] - 0.01 * seeded[idx], kind="stable")]
    seed_id, seed_z = list(cand.seed_id), list(cand.seed_z)
    same = ((cand.size_idx[idx][:, None] == cand.size_idx[idx][None, :]) &
            ((cx[idx][:, None] - cx[idx][None, :]) ** 2 + (cy[idx][:, None] - cy[idx][None, :]) ** 2 < 6.0))
    earlier = np.tril(same, k=-1)           # earlier[i, j]: j ranks before i and is the same disk
    first = (np.where(earlier.any(1), np.argmax(earlier, axis=1), -1) if len(idx)
             else np.zeros(0, np.int64))
    chosen = [int(idx[k]) for k in range(len(idx)) if first[k] < 0]
    for k in np.nonzero(first >= 0)[0]:
        i, j = int(idx[k]), int(idx[first[k]])
        if seed_id[i] is not None and seed_id[j] is None:
            seed_id[j], seed_z[j] = seed_id[i], seed_z[i]
    sel = np.array(sorted(chosen), dtype=np.int64)
    cx, cy, r, off, support, align = cx[sel], cy[sel], r[sel], off[sel], support[sel], align[sel]
    ring_depth = cfg.ring_depth_mm * ppm
    ca, sa = np.cos(angles), np.sin(angles)
    rho = r[:, None] + np.nan_to_num(off)
    resid = _residual(off, support, angles, shadow)
    ring = _ring_samples(img, cx, cy, r, angles, ring_depth)
    return _Verified(cx, cy, r, cand.size_idx[sel], support, cx[:, None] + rho * ca, cy[:, None] + rho * sa,
                     cx[:, None] + r[:, None] * ca, cy[:, None] + r[:, None] * sa, resid,
                     _ring_uniformity(ring, support), _step_consistency(img, cx, cy, r, off, angles, support),
                     (align * support).sum(1) / np.maximum(support.sum(1), 1), rc[sel], [seed_id[i] for i in sel],
                     [seed_z[i] for i in sel], shadow,
                     context=FrameContext(shadow, tuple(float(d) for d in delta)))


# ---------------------------------------------------------------------------------------------------------------
# Step 3: greedy acceptance with explanation-away.


def _inside_printed_ring(r: Any, dist: Any, r_big: float, r_class_big: float, cfg: DetectorConfig) -> Any:
    """A smaller circle whose far side runs along the inner edge of a larger disk's printed border ring (dead
    centre, or a few px off and touching the ring on one side, its radius pulled to a size class) is that print,
    not a disk on top: a real disk on top has its own radius and rarely sits (nearly) centred on the one below."""
    ring_r = cfg.printed_ring_ratio * r_class_big
    centred = (dist < 3.0) & (np.abs(r - ring_r) < cfg.printed_ring_tolerance_px)
    touching = (dist < cfg.printed_ring_offset_px) & (np.abs(dist + r - ring_r) < cfg.printed_ring_tolerance_px)
    return (r < r_big) & (centred | touching)


def _accept(v: _Verified, cfg: DetectorConfig) -> list[int]:
    K = v.support.shape[1]
    seeded = np.array([s is not None for s in v.seed_id], bool)
    emin = np.where(seeded, cfg.accept_min_history, cfg.accept_min)
    good_fit = (v.residual <= cfg.max_residual_px) & (v.ring_uniform >= cfg.ring_uniform_min)
    # Felt around the rim steps the same way all round; a disk lying on another sees that disk's print there.
    steps_ok = v.steps >= cfg.min_step_consistency
    raw_e = v.support.mean(1)
    # Explaining away only takes rim from a candidate, so one that fails now on its own rim never passes: the
    # loop runs over the others only (the same result, a much smaller loop).
    rows = np.nonzero(good_fit & (raw_e >= emin))[0]
    sup, cx, cy, r, r_class = v.support[rows], v.cx[rows], v.cy[rows], v.r[rows], v.r_class[rows]
    ex, ey, nx, ny, size_idx = v.ex[rows], v.ey[rows], v.nx[rows], v.ny[rows], v.size_idx[rows]
    uniform, raw_e, emin, steps_ok, seeded = v.ring_uniform[rows], raw_e[rows], emin[rows], steps_ok[rows], \
        seeded[rows]
    alive = np.ones(len(rows), bool)
    explained = np.zeros(sup.shape, bool)
    covered = np.zeros(sup.shape, bool)
    accepted: list[int] = []
    while alive.any():
        eff = sup & ~explained
        e = eff.sum(1) / K
        open_ = ~covered
        n_open = open_.sum(1)
        c = (eff & open_).sum(1) / np.maximum(n_open, 1)
        lying_on = n_open < 0.5 * K
        # A disk lying mostly on accepted disks must show most of its rim and an even border ring (art on the
        # disk below draws arcs, not a ring); elsewhere the open part of the rim must be there.
        # (A disk lying on another near its edge shares part of its rim with it: judged on its own rim.)
        on_top = lying_on & (raw_e >= cfg.accept_on_top) & (e >= 0.75 * cfg.accept_strong) & \
            (uniform >= cfg.ring_uniform_on_top)
        strong = ((e >= cfg.accept_strong) & ~lying_on & steps_ok) | on_top
        partial = (e >= emin) & (c >= cfg.open_consistency) & (n_open >= 0.15 * K) & steps_ok
        passes = alive & (strong | partial)
        if not passes.any():
            break
        score = np.where(passes, e + 0.05 * seeded, -1.0)
        i = int(np.argmax(score))
        accepted.append(int(rows[i]))
        alive[i] = False
        # Remove candidates that would be the same disk, explain its rim points away from the others.
        dist = np.hypot(cx - cx[i], cy - cy[i])
        same = size_idx == size_idx[i]
        alive &= ~same | (dist >= 0.5 * r[i])
        # A smaller circle along the inner edge of an accepted disk's printed ring is that print, not a disk on top.
        if cfg.printed_ring_ratio > 0:
            alive &= ~_inside_printed_ring(r, dist, r[i], r_class[i], cfg)
        de = np.abs(np.hypot(ex - cx[i], ey - cy[i]) - r[i])
        explained |= de <= cfg.explain_px
        covered |= np.hypot(nx - cx[i], ny - cy[i]) < r[i] - 1.5
    if cfg.printed_ring_ratio > 0:  # the same check for a print accepted before its disk
        drop = set()
        for i in accepted:
            for j in accepted:
                if i != j and _inside_printed_ring(v.r[i], math.hypot(v.cx[i] - v.cx[j], v.cy[i] - v.cy[j]),
                                                   v.r[j], v.r_class[j], cfg):
                    drop.add(i)
        accepted = [i for i in accepted if i not in drop]
    return accepted


def _accept_verified(v: _Verified, img: np.ndarray, verifier: "RimVerifier", ppm: float, cfg: DetectorConfig
                     ) -> tuple[list[int], np.ndarray]:
    """Greedy acceptance by the rim verifier's disk score, with explanation-away.

    The best-scoring candidate is accepted first; then the candidates near it are scored again knowing it: their
    rays under it may be hidden (not counted against them), their rim points on its rim are its, not theirs, and a
    circle centred in it is more likely its printed ring. Returns the accepted rows and their scores."""
    M, K = v.support.shape
    angles = np.arange(K) * (2.0 * math.pi / K)
    fit = fit_measures(v)
    seeded = np.array([s is not None for s in v.seed_id], bool)
    # The verifier judges every `step`-th ray (the disk network reads shares and runs of rays: 24 rays found the
    # same disks on the tuning seeds as 48, in half the acceptance's time).
    step = max(1, K // cfg.verifier_rays)
    angles = angles[::step]
    nx, ny, ex, ey = v.nx[:, ::step], v.ny[:, ::step], v.ex[:, ::step], v.ey[:, ::step]
    K = len(angles)

    def ray_scores(rows: Any) -> np.ndarray:
        return verifier.ray_scores(img, v.cx[rows], v.cy[rows], v.r[rows], v.size_idx[rows], angles, ppm)

    p = ray_scores(slice(None))
    # An edge fit settles on the nearest edges: on a ring that barely differs from what lies around it those can
    # be the art's or a neighbour's, a few px off, and the rays of the misplaced circle then score middling. Such
    # circles are moved to where their rays score best (the edge fit refines accepted disks afterwards).
    pm = p.mean(1)
    lo, hi = cfg.recentre_band
    moved = np.nonzero((fit[:, 0] >= cfg.recentre_min_rim) & (pm >= lo) & (pm < hi))[0]
    if len(moved):
        cx, cy, _ = verifier.recentre(img, v.cx[moved], v.cy[moved], v.r[moved], v.size_idx[moved], ppm,
                                      reach_px=cfg.recentre_reach_px, good=hi, rays=cfg.recentre_rays)
        dx, dy = cx - v.cx[moved], cy - v.cy[moved]
        v.cx[moved], v.cy[moved] = cx, cy
        v.nx[moved] += dx[:, None]
        v.ny[moved] += dy[:, None]
        nx, ny = v.nx[:, ::step], v.ny[:, ::step]
        p[moved] = ray_scores(moved)
    # A disk the previous scene had here needs less evidence: it is known to be there unless shown otherwise.
    need = np.where(seeded, cfg.history_score_factor * verifier.threshold, verifier.threshold)
    covered = np.zeros((M, K), bool)
    explained = np.zeros((M, K), bool)
    depth, conc = np.zeros(M), np.ones(M)
    score = verifier.disk(disk_features(p, covered, explained, v.size_idx, fit, depth, conc))
    alive = np.ones(M, bool)
    accepted: list[int] = []
    acc_score: list[float] = []
    while True:
        cand = np.nonzero(alive & (score >= need))[0]
        if not len(cand):
            break
        i = int(cand[np.argmax(score[cand] + 0.05 * seeded[cand])])
        accepted.append(i)
        acc_score.append(float(score[i]))
        alive[i] = False
        dist = np.hypot(v.cx - v.cx[i], v.cy - v.cy[i])
        # Copies of the same disk (another size class on the same rim, or the same class a little off) go: very
        # close circles, and close ones with a share of their rim on its rim. A disk stacked several mm off the
        # one below has a rim of its own: it stays, to be scored knowing the other. (Removing every circle within
        # half a radius lost the upper disk of such stacks, the more so with history, when the lower one's seed
        # was taken first.)
        same = (v.size_idx == v.size_idx[i]) | (np.abs(v.r - v.r[i]) < 4.0)
        twin = np.nonzero(alive & (dist < 0.5 * v.r[i]) & same)[0]
        if len(twin):
            # (Rim points where it has them, its own circle elsewhere.)
            on_rim = np.abs(np.hypot(v.ex[twin] - v.cx[i], v.ey[twin] - v.cy[i]) - v.r[i]) <= cfg.explain_px
            copy = (dist[twin] < 0.25 * v.r[i]) | (on_rim.mean(1) >= 0.3)
            alive[twin[copy]] = False
            need[twin[~copy]] = np.maximum(need[twin[~copy]], cfg.twin_score)
        near = np.nonzero(alive & (dist < v.r + v.r[i]))[0]
        if not len(near):
            continue
        covered[near] |= np.hypot(nx[near] - v.cx[i], ny[near] - v.cy[i]) < v.r[i] - 1.5
        explained[near] |= np.abs(np.hypot(ex[near] - v.cx[i], ey[near] - v.cy[i]) - v.r[i]) <= cfg.explain_px
        acc = np.array(accepted)
        depth[near], conc[near] = placement_measures(v.cx[near], v.cy[near], v.r[near], v.cx[acc], v.cy[acc],
                                                     v.r[acc], np.ones((len(near), len(acc)), bool))
        score[near] = verifier.disk(disk_features(p[near], covered[near], explained[near], v.size_idx[near],
                                                  fit[near], depth[near], conc[near]))
    if cfg.weak_own_rim > 0 and len(accepted) > 1:
        # A new circle the verifier only just took, whose open rim is mostly not its own (edges that no disk's rim
        # explains, seen on its own circle) but lies along the accepted disks' rims or nowhere: a phantom round or
        # inside a stack. (On the tuning frames: 21 -> 12 false disks among 6185, none lost.)
        acc = np.array(accepted)
        drop = set()
        for n, i in enumerate(accepted):
            if seeded[i] or acc_score[n] >= cfg.weak_score:
                continue
            # Rays under an accepted disk may be hidden: the share is of the open ones (a partly covered disk
            # shows its own rim there).
            expl, cov = _rim_context(v, i, acc[acc != i], cfg)
            n_open = int((~cov).sum())
            if n_open and (v.support[i] & ~expl & ~cov).sum() / n_open < cfg.weak_own_rim:
                drop.add(i)
        if drop:
            acc_score = [a for j, a in zip(accepted, acc_score) if j not in drop]
            accepted = [j for j in accepted if j not in drop]
    # A clean circle of a class radius, seen nearly all round, is a disk whatever is printed on it: the verifier
    # knows the prints it was trained on, the geometry holds for any.
    if cfg.accept_geometric < 1.0:
        for i in _geometric_disks(v, img, accepted, fit, cfg):
            accepted.append(i)
            acc_score.append(float(max(score[i], verifier.threshold)))
    return accepted, np.array(acc_score)


def _rim_context(v: _Verified, i: int, others: np.ndarray, cfg: DetectorConfig) -> tuple[np.ndarray, np.ndarray]:
    """For candidate i's rays against the disks `others`: (explained: its rim point lies on one's rim, covered: its
    circle runs under one, where its rim may be hidden), each (K,) bool."""
    if not len(others):
        return np.zeros(v.support.shape[1], bool), np.zeros(v.support.shape[1], bool)
    ox, oy, orad = v.cx[others][:, None], v.cy[others][:, None], v.r[others][:, None]
    explained = (np.abs(np.hypot(v.ex[i][None, :] - ox, v.ey[i][None, :] - oy) - orad) <= cfg.explain_px).any(0)
    covered = (np.hypot(v.nx[i][None, :] - ox, v.ny[i][None, :] - oy) < orad - 1.5).any(0)
    return explained, covered


def _geometric_disks(v: _Verified, img: np.ndarray, accepted: list[int], fit: np.ndarray, cfg: DetectorConfig
                     ) -> list[int]:
    """The candidates the verifier left out that the hand-set thresholds (`_accept`) accept as clean circles:
    seen at least `accept_geometric` all round with rim points within `geometric_residual_px` RMS, not a copy of
    an accepted disk, and passing `_accept`'s tests with the accepted disks as the context (their rims explain rim
    points, rays under them may be hidden, a circle along one's printed ring is that print). Only these few
    candidates are tested, instead of running the whole threshold acceptance again."""
    M, K = v.support.shape
    rows = np.nonzero((fit[:, 0] >= cfg.accept_geometric) & (v.residual <= cfg.geometric_residual_px) &
                      (v.residual <= cfg.max_residual_px) & (v.ring_uniform >= cfg.ring_uniform_min))[0]
    rows = [int(i) for i in rows[np.argsort(-fit[rows, 0], kind="stable")] if int(i) not in set(accepted)]
    if not rows:
        return []
    angles = np.arange(K) * (2.0 * math.pi / K)
    seeded = np.array([s is not None for s in v.seed_id], bool)
    acc = list(accepted)
    found: list[int] = []
    for i in rows:
        a = np.array(acc, np.int64)
        dist = np.hypot(v.cx[a] - v.cx[i], v.cy[a] - v.cy[i])
        if len(a) and np.any(dist < 0.5 * np.maximum(v.r[a], v.r[i])):
            continue                                            # a copy of an accepted disk
        if cfg.printed_ring_ratio > 0 and len(a) and (
                np.any(_inside_printed_ring(v.r[i], dist, v.r[a], v.r_class[a], cfg))
                or any(_is_print_of(img, v, i, int(j), angles, cfg) for j in a)):
            continue
        # _accept's rim tests, its explanation-away and cover taken from the accepted disks.
        explained, covered = _rim_context(v, i, a, cfg)
        eff = v.support[i] & ~explained
        e = eff.sum() / K
        n_open = int((~covered).sum())
        c = (eff & ~covered).sum() / max(n_open, 1)
        lying_on = n_open < 0.5 * K
        steps_ok = v.steps[i] >= cfg.min_step_consistency
        emin = cfg.accept_min_history if seeded[i] else cfg.accept_min
        on_top = lying_on and fit[i, 0] >= cfg.accept_on_top and e >= 0.75 * cfg.accept_strong and \
            v.ring_uniform[i] >= cfg.ring_uniform_on_top
        strong = (e >= cfg.accept_strong and not lying_on and steps_ok) or on_top
        partial = e >= emin and c >= cfg.open_consistency and n_open >= 0.15 * K and steps_ok
        if strong or partial:
            acc.append(i)
            found.append(i)
    return found


# ---------------------------------------------------------------------------------------------------------------


def _is_print_of(img: np.ndarray, v: _Verified, i: int, j: int, angles: np.ndarray, cfg: DetectorConfig) -> bool:
    """Circle i, smaller and near the centre of circle j, just inside whose rim lies j's own border ring all
    round, is the edge of j's printed ring (the art inside it), not a disk lying on top: a real disk on top has the
    lower disk's art just outside its rim, or felt."""
    if i == j or v.r[i] >= v.r[j] or math.hypot(v.cx[i] - v.cx[j], v.cy[i] - v.cy[j]) > 4.0:
        return False
    if abs(v.r[i] - cfg.printed_ring_ratio * v.r_class[j]) > 3.0:
        return False
    ring_j = np.median(_ring_samples(img, v.cx[j:j + 1], v.cy[j:j + 1], v.r[j:j + 1], angles,
                                     cfg.ring_depth_mm)[0], axis=0)
    outside = _ring_samples(img, v.cx[i:i + 1], v.cy[i:i + 1], v.r[i:i + 1], angles, -2.5)[0]
    # Same colour up to the printed bevel's shading: direction of the colour vector and a brightness ratio.
    n_out = np.linalg.norm(outside, axis=1) + 1e-6
    n_ring = float(np.linalg.norm(ring_j)) + 1e-6
    cos = (outside @ ring_j) / (n_out * n_ring)
    ratio = n_out / n_ring
    same = (cos >= 0.97) & (ratio >= 0.7) & (ratio <= 1.45)
    return bool(same.mean() >= 0.6)


def _drop_printed_rings(img: np.ndarray, v: _Verified, accepted: list[int], cfg: DetectorConfig) -> list[int]:
    """The accepted circles less those that are another accepted disk's printed ring (`_is_print_of`)."""
    if cfg.printed_ring_ratio <= 0 or len(accepted) < 2:
        return accepted
    K = v.support.shape[1]
    angles = np.arange(K) * (2.0 * math.pi / K)
    drop = {i for i in accepted if any(_is_print_of(img, v, i, j, angles, cfg) for j in accepted)}
    return [i for i in accepted if i not in drop]


def _confidence(rim: float, consistency: float, residual: float, ring_uniform: float, seeded: bool) -> float:
    evidence = min(1.0, rim / 0.7)
    conf = (0.3 + 0.7 * evidence) * (0.5 + 0.5 * min(1.0, consistency / 0.85))
    conf *= math.exp(-max(0.0, residual - 0.45) / 0.6) * (0.7 + 0.3 * ring_uniform)
    if seeded and rim < 0.3:
        conf = max(conf, 0.35)
    return float(min(0.999, max(0.05, conf)))


def _candidate_fits(rect: np.ndarray, sizes: DiskSizes, px_per_mm_: float,
                    seeds: Sequence[tuple[float, float, str, str, int]], cfg: DetectorConfig,
                    battlefield_px: tuple[float, float, float, float] | None, verifier: RimVerifier | None = None,
                    where: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None,
                    context: FrameContext | None = None) -> tuple[_Verified | None, np.ndarray]:
    """Steps 1 and 2: candidates (votes, colour blobs, history seeds) fitted to their rims; and the image they were
    measured in (blurred, float32). With the rim `verifier`, circles it scores at next to nothing are left out.
    `where(x, y, r)`: which vote and blob candidates to look at (seeds are always looked at)."""
    blur = cv2.GaussianBlur(rect, (5, 5), 1.0)
    img = blur.astype(np.float32)
    radii = np.array([sizes.radius(s) * px_per_mm_ for s in SIZE_CLASSES], dtype=np.float64)
    half = _half(blur)
    vx, vy, vs, tensor = _vote_candidates(blur, radii, cfg, half)
    if cfg.blob_colour_distance > 0:
        bx, by, bs = _blob_candidates(blur, radii, cfg, battlefield_px, half)
        vx, vy, vs = np.concatenate([vx, bx]), np.concatenate([vy, by]), np.concatenate([vs, bs])
    if battlefield_px is not None and len(vx):
        # A circle whose centre lies further off the battlefield than its radius does not touch the battlefield:
        # the table's surround along the image border (colour blobs all along it) is no place for a disk.
        x0, y0, x1, y1 = battlefield_px
        off_x = np.maximum(np.maximum(x0 - vx, vx - x1), 0.0)
        off_y = np.maximum(np.maximum(y0 - vy, vy - y1), 0.0)
        on = np.hypot(off_x, off_y) <= radii[vs]
        vx, vy, vs = vx[on], vy[on], vs[on]
    if where is not None and len(vx):
        on = np.asarray(where(vx, vy, radii[vs]), bool)
        vx, vy, vs = vx[on], vy[on], vs[on]
    seed_id: list = [None] * len(vx)
    seed_z: list = [None] * len(vx)
    if seeds:
        sx = np.array([s[0] for s in seeds], np.float64)
        sy = np.array([s[1] for s in seeds], np.float64)
        ss = np.array([SIZE_CLASSES.index(s[2]) for s in seeds], np.int64)
        vx, vy, vs = np.concatenate([vx, sx]), np.concatenate([vy, sy]), np.concatenate([vs, ss])
        seed_id += [s[3] for s in seeds]
        seed_z += [s[4] for s in seeds]
    if len(vx) == 0:
        return None, img
    v = _verify(img, _Candidates(vx, vy, vs, seed_id, seed_z), radii, cfg, cfg.screen_rays, px_per_mm_, tensor,
                verifier, context)
    v.tensor = tensor
    if len(v.cx) == 0:
        return None, img
    if battlefield_px is not None:
        x0, y0, x1, y1 = battlefield_px
        out_x = (v.cx < x0) | (v.cx > x1)
        out_y = (v.cy < y0) | (v.cy > y1)
        v.support[out_x & out_y] = False
    return v, img


def battlefield_px(calibration: Any) -> tuple[float, float, float, float]:
    """The battlefield's (x0, y0, x1, y1) in rectified px."""
    ppm = px_per_mm(calibration)
    ox, oy = getattr(calibration, "rectified_origin_mm", (-40.0, -40.0))
    bw, bh = getattr(calibration, "battlefield_mm", (900.0, 900.0))
    return (-ox * ppm, -oy * ppm, (bw - ox) * ppm, (bh - oy) * ppm)


def candidate_fits(rect: np.ndarray, calibration: Any, sizes: DiskSizes, config: DetectorConfig = DEFAULT_CONFIG
                   ) -> tuple[_Verified, np.ndarray]:
    """The fitted candidates of a rectified frame, before acceptance (what the rim verifier is trained on: all of
    them, without the verifier's own prescreen)."""
    v, img = _candidate_fits(rect, sizes, px_per_mm(calibration), (), config, battlefield_px(calibration))
    if v is None:
        raise InputError("no disk candidates in this frame")
    return v, img


def fit_measures(v: _Verified) -> np.ndarray:
    """(M, 6) the fit's own measures, as the rim verifier's disk network takes them."""
    return np.stack([v.support.mean(1), v.residual, v.ring_uniform, v.steps, v.alignment, v.r - v.r_class], axis=1)


def placement_measures(cx: np.ndarray, cy: np.ndarray, r: np.ndarray, ox: np.ndarray, oy: np.ndarray,
                       orad: np.ndarray, pair_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """How each circle sits in the other (accepted) disks where `pair_mask` (M, N) allows: the depth of its centre
    inside one, as a share of its own radius (0 when in none), and its centre's distance from the centre of a
    larger one containing it, as a share of that one's radius (1 when in none): a printed ring is centred."""
    if len(ox) == 0:
        return np.zeros(len(cx)), np.ones(len(cx))
    d = np.hypot(cx[:, None] - ox[None, :], cy[:, None] - oy[None, :])
    depth = np.where(pair_mask, (orad[None, :] - d) / np.maximum(r[:, None], 1e-6), 0.0)
    larger = pair_mask & (orad[None, :] > r[:, None] + 1.0) & (d < orad[None, :])
    conc = np.where(larger, d / np.maximum(orad[None, :], 1e-6), 1.0)
    return np.clip(depth.max(1), 0.0, None), conc.min(1)


def detect_disks(rect: np.ndarray, sizes: DiskSizes, px_per_mm_: float = 1.0,
                 seeds: Sequence[tuple[float, float, str, str, int]] = (),
                 config: DetectorConfig = DEFAULT_CONFIG,
                 battlefield_px: tuple[float, float, float, float] | None = None,
                 where: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None,
                 context: FrameContext | None = None) -> list[DiskFit]:
    """Disks in a rectified BGR image. `seeds`: (cx_px, cy_px, size, id, z) from the previous scene.
    `battlefield_px` (x0, y0, x1, y1): a disk's centre may lie off the battlefield on one side (a disk hanging
    over an edge), never in the corner squares beyond two edges, where the marker tiles lie. `where(x, y, r)`
    (centres and radii, px): the part of the image wanted. New circles elsewhere are not looked at, and seeds
    elsewhere serve as context only (accepted, they explain and cover their neighbours' rims) and are not
    measured or returned. `context`: the whole frame's shadow and rim offsets, for a part of a frame (estimated
    from the image when None)."""
    return _detect(rect, sizes, px_per_mm_, seeds, config, battlefield_px, where, context)[0]


def _detect(rect: np.ndarray, sizes: DiskSizes, px_per_mm_: float, seeds: Sequence[tuple[float, float, str, str, int]],
            config: DetectorConfig, battlefield_px: tuple[float, float, float, float] | None,
            where: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None,
            context: FrameContext | None) -> tuple[list[DiskFit], FrameContext | None]:
    """`detect_disks`, and the frame context it used."""
    cfg = config
    verifier = load_verifier(cfg.verifier_path) if cfg.use_verifier else None
    v, img = _candidate_fits(rect, sizes, px_per_mm_, seeds, cfg, battlefield_px, verifier, where, context)
    if v is None:
        return [], context
    tensor = v.tensor
    if verifier is not None:
        accepted, scores = _accept_verified(v, img, verifier, px_per_mm_, cfg)
        score_of = dict(zip(accepted, scores))
    else:
        accepted = _accept(v, cfg)
        accepted = _drop_printed_rings(img, v, accepted, cfg)
        score_of = {}
    if not accepted:
        return [], v.context
    # Fine measurement of the accepted disks on all rays (with `where`, of the wanted ones: the others are only the
    # context their rims and covers give).
    acc = np.array(accepted)
    K = cfg.rays
    cx0, cy0, r0 = v.cx[acc], v.cy[acc], v.r[acc]
    want = np.ones(len(acc), bool) if where is None else np.asarray(where(cx0, cy0, r0), bool)
    # A disk overlapping another keeps its radius: the other's rim or art inside its own would pull a free one
    # (and the centre with it) by a px or two.
    dd = np.hypot(cx0[:, None] - cx0[None, :], cy0[:, None] - cy0[None, :])
    np.fill_diagonal(dd, np.inf)
    overlapped = (dd < r0[:, None] + r0[None, :] - 1.0).any(1)
    contact = _contact_rays(cx0, cy0, r0, np.arange(K) * (2.0 * math.pi / K), cfg.contact_px)
    contact_al = _contact_rays(cx0, cy0, r0, np.arange(cfg.align_rays) * (2.0 * math.pi / cfg.align_rays),
                               cfg.contact_px)
    cx, cy, off, angles, r = _measure(img, cx0[want], cy0[want], r0[want], K, cfg, ((2.0, 4, 1.0),), v.shadow,
                                      cfg.radius_freedom_px, keep_r=overlapped[want],
                                      exclude=None if contact is None else contact[want])
    ax, ay = _align_rims(img, cx, cy, r, cfg, None if contact_al is None else contact_al[want])
    off = _refit_offsets(cx, cy, r, off, angles, ax, ay, r)
    cx, cy = ax, ay
    aligned = _alignment(tensor, cx, cy, r, off, angles) >= cfg.min_alignment
    support = _support(off, angles, v.shadow, cfg.rim_tolerance_px, aligned)
    resid = _residual(off, support, angles, v.shadow)
    ring = _ring_samples(img, cx, cy, r, angles, cfg.ring_depth_mm * px_per_mm_)
    uniform = _ring_uniformity(ring, support)
    nx = cx[:, None] + r[:, None] * np.cos(angles)
    ny = cy[:, None] + r[:, None] * np.sin(angles)
    # Rays of each disk that lie under another accepted disk (they may be hidden: not counted against it); only
    # overlapping pairs can have any.
    ox, oy, orad = cx0.copy(), cy0.copy(), r0.copy()
    ox[want], oy[want], orad[want] = cx, cy, r
    pi, pj = np.nonzero((np.hypot(cx[:, None] - ox[None, :], cy[:, None] - oy[None, :]) < r[:, None] + orad[None, :])
                        & (np.nonzero(want)[0][:, None] != np.arange(len(acc))[None, :]))
    covered_all = np.zeros(nx.shape, bool)
    np.logical_or.at(covered_all, pi, np.hypot(nx[pi] - ox[pj][:, None], ny[pi] - oy[pj][:, None])
                     < (orad[pj] - 1.5)[:, None])
    accepted = [i for i, w in zip(accepted, want) if w]
    acc = acc[want]
    # The printed-ring check again on the finely measured circles (a coarse radius can miss the ring by a px).
    # Not after the rim verifier: it judged each circle knowing the disks around it (how centred it sits in one
    # included), and this geometric check second-guessed small disks stacked a few px off a medium one's centre.
    print_of = np.zeros(len(acc), bool)
    if cfg.printed_ring_ratio > 0 and len(acc) > 1 and verifier is None:
        dist = np.hypot(cx[:, None] - cx[None, :], cy[:, None] - cy[None, :])
        pair = _inside_printed_ring(r[:, None], dist, r[None, :], v.r_class[acc][None, :], cfg)
        np.fill_diagonal(pair, False)
        print_of = pair.any(1)
    fits = []
    for k, i in enumerate(accepted):
        if print_of[k]:
            continue
        rim = float(support[k].mean())
        covered = covered_all[k]
        n_open = int((~covered).sum())
        cons = float((support[k] & ~covered).sum() / n_open) if n_open else 1.0
        cols = ring[k][support[k]] if support[k].sum() >= 4 else ring[k]
        med = np.median(cols, axis=0)
        seeded = v.seed_id[i] is not None
        size = SIZE_CLASSES[int(v.size_idx[i])]
        fits.append(DiskFit(cx=float(cx[k]), cy=float(cy[k]), r_px=sizes.radius(size) * px_per_mm_,
                            size=size, rim_fraction=rim, open_consistency=cons,
                            residual_px=float(resid[k]), ring_bgr=(float(med[0]), float(med[1]), float(med[2])),
                            confidence=(float(min(0.999, score_of[i])) if i in score_of else
                                        _confidence(rim, cons, float(resid[k]), float(uniform[k]), seeded)),
                            seed_id=v.seed_id[i], seed_z=v.seed_z[i], rim_r_px=float(r[k])))
    return fits, v.context


# ---------------------------------------------------------------------------------------------------------------


def _seeds_from(previous: Scene | None, calibration: Any, sizes: DiskSizes) -> list[tuple]:
    if previous is None or not previous.disks:
        return []
    pts = table_to_rect(calibration, np.array([[d.x_mm, d.y_mm] for d in previous.disks]))
    seeds = []
    for d, (x, y) in zip(previous.disks, pts):
        size = d.size or min(SIZE_CLASSES, key=lambda s: abs(sizes.radius(s) - d.radius_mm))
        seeds.append((float(x), float(y), size, d.id, d.z))
    return seeds


def disk_centres_mm(fits: Sequence[DiskFit], z: Sequence[int], calibration: Any,
                    disk_thickness_mm: float = DEFAULT_CONFIG.disk_thickness_mm) -> np.ndarray:
    """Table mm of the fits' centres, corrected for the parallax of each disk's top ((z + 1) thicknesses up)."""
    if not fits:
        return np.zeros((0, 2))
    centres = rect_to_table(calibration, np.array([[f.cx, f.cy] for f in fits]))
    if disk_thickness_mm > 0:
        from vision.parallax import camera_position

        cam = camera_position(calibration)
        if cam is not None:
            heights = (np.asarray(z, np.float64) + 1.0) * disk_thickness_mm
            centres = cam.correct(centres, heights)
    return centres


def fits_to_scene(fits: Sequence[DiskFit], z: Sequence[int], calibration: Any, sizes: DiskSizes,
                  previous: Scene | None = None, uncertain_pairs: Sequence[tuple[int, int]] = (),
                  confidences: Sequence[float] | None = None,
                  disk_thickness_mm: float = DEFAULT_CONFIG.disk_thickness_mm) -> Scene:
    """Build the Scene (table mm) from fits in rectified px; ids continue the previous scene where seeded."""
    centres = disk_centres_mm(fits, z, calibration, disk_thickness_mm)
    used = {f.seed_id for f in fits if f.seed_id is not None}
    taken = set(used)
    if previous is not None:
        taken |= {d.id for d in previous.disks}
    counter = 1
    ids = []
    for f in fits:
        if f.seed_id is not None:
            ids.append(f.seed_id)
            continue
        while f"d{counter}" in taken:
            counter += 1
        ids.append(f"d{counter}")
        taken.add(f"d{counter}")
    players = previous.players if previous is not None else ()
    prev_by_id = {d.id: d for d in previous.disks} if previous is not None else {}
    disks = []
    for k, (f, (x, y)) in enumerate(zip(fits, centres)):
        prev = prev_by_id.get(ids[k])
        conf = confidences[k] if confidences is not None else f.confidence
        disks.append(Disk(
            id=ids[k], x_mm=float(x), y_mm=float(y), radius_mm=sizes.radius(f.size), z=int(z[k]),
            player=prev.player if prev is not None else None, size=f.size,
            unit=prev.unit if prev is not None else None, confidence=round(float(conf), 4),
            extra={"rim_visible": round(f.rim_fraction, 3),
                   "ring_bgr": [int(round(c)) for c in f.ring_bgr]},
        ))
    extra: dict[str, Any] = {}
    if uncertain_pairs:
        extra["uncertain_pairs"] = [sorted([ids[a], ids[b]]) for a, b in uncertain_pairs]
    base = previous if previous is not None else Scene()
    return replace(base, disks=tuple(disks), players=players, extra={**{k: v for k, v in base.extra.items()
                                                                         if k != "uncertain_pairs"}, **extra})


def detect_rectified(rect: np.ndarray, calibration: Any, sizes: DiskSizes, previous: Scene | None = None,
                     config: DetectorConfig = DEFAULT_CONFIG) -> Scene:
    """`detect_frame` on an image already rectified with `calibration` (the live pipeline rectifies once)."""
    return locate_disks(rect, calibration, sizes, previous, config).scene


@dataclass(frozen=True)
class Detection:
    """One detection: the Scene, and the fits it was built from (rectified px, in the scene's disk order)."""

    scene: Scene
    fits: tuple[DiskFit, ...]
    context: FrameContext | None = None   # the frame's shadow and rim offsets (for detecting parts of it later)

    def __post_init__(self) -> None:
        if len(self.fits) != len(self.scene.disks):
            raise ValueError("a Detection needs one fit per scene disk")


def locate_disks(rect: np.ndarray, calibration: Any, sizes: DiskSizes, previous: Scene | None = None,
                 config: DetectorConfig = DEFAULT_CONFIG, passes: int = 1) -> Detection:
    """Disks of the whole rectified frame, seeded by `previous`, stacked and placed: the Detection. With `passes`
    2 the frame is detected again seeded by the first pass: a disk seen only in part, missed at first, is judged
    again knowing the disks around it (the live table's whole-frame commits; twice the time)."""
    if not 1 <= passes <= 3:
        raise ValueError("passes must be within 1..3")
    ppm = px_per_mm(calibration)
    detection: Detection | None = None
    for _ in range(passes):
        seeds_of = previous if detection is None else detection.scene
        fits, context = _detect(rect, sizes, ppm, _seeds_from(seeds_of, calibration, sizes), config,
                                battlefield_px(calibration), None, None)
        detection = finish_detection(rect, fits, calibration, sizes, seeds_of, config, context=context)
    assert detection is not None
    return detection


def finish_detection(rect: np.ndarray, fits: Sequence[DiskFit], calibration: Any, sizes: DiskSizes,
                     previous: Scene | None, config: DetectorConfig = DEFAULT_CONFIG,
                     unchanged: Sequence[bool] | None = None, context: FrameContext | None = None) -> Detection:
    """Stacking order of the fits (rim evidence and their history), weak new circles dropped, disks in contact
    moved apart: the Detection (carrying the frame `context` the fits were measured with). `unchanged`: fits
    carried over with nothing changed around them (their pairs keep the previous order)."""
    from vision.stacking import order_stacks, separate_touching

    ppm = px_per_mm(calibration)
    guessed = frozenset(frozenset(p) for p in (previous.extra.get("uncertain_pairs") or ())) \
        if previous is not None else frozenset()
    fits = list(fits)
    flags = None if unchanged is None else list(unchanged)
    order = order_stacks(rect, fits, px_per_mm_=ppm, detector=config, uncertain_before=guessed, unchanged=flags)
    # A weak new circle is more often art or texture than a disk (one the previous scene had here is kept);
    # the order is taken again without it, so no pair refers to a dropped disk.
    keep = [k for k, f in enumerate(fits) if order.confidences[k] >= config.min_confidence
            or f.seed_id is not None or f.rim_fraction >= config.keep_rim_fraction]
    if len(keep) < len(fits):
        fits = [fits[k] for k in keep]
        flags = None if flags is None else [flags[k] for k in keep]
        order = order_stacks(rect, fits, px_per_mm_=ppm, detector=config, uncertain_before=guessed,
                             unchanged=flags)
    fits = separate_touching(fits, order.touching)
    scene = fits_to_scene(fits, order.z, calibration, sizes, previous, order.uncertain_pairs, order.confidences,
                          config.disk_thickness_mm)
    return Detection(scene, tuple(fits), context)


def sizes_for(calibration: Any, diameters_mm: Any = None) -> DiskSizes:
    """The disk sizes to look for: given ones, else those measured at calibration, else the defaults."""
    if diameters_mm is None and getattr(calibration, "disk_diameters_mm", None):
        diameters_mm = calibration.disk_diameters_mm
    return DiskSizes.coerce(diameters_mm)


def detect_frame(frame_bgr: Any, calibration: Any, diameters_mm: Any = None, previous: Scene | None = None,
                 config: DetectorConfig = DEFAULT_CONFIG) -> Scene:
    """Disks of the three known sizes in one camera frame -> Scene (table mm, z from rim evidence + history).

    `diameters_mm`: a DiskSizes, {small, medium, large} mapping or (S, M, L); default: the calibration's
    measured diameters, else 44/64/89. `previous`: the last scene, which seeds partly covered disks, keeps their
    ids and settles stacking pairs the frame cannot. Raises InputError for an empty or corrupt frame or one
    whose size does not match the calibration.
    """
    sizes = sizes_for(calibration, diameters_mm)
    rect = rectified_frame(frame_bgr, calibration)
    return detect_rectified(rect, calibration, sizes, previous, config)
