"""The lens's radial distortion estimated from one frame's markers, for a camera with no `camera.json`.

A webcam's lens bends straight lines (barrel distortion, k1 about -0.1 to -0.3): a plain homography from the
corner markers then puts the middle of the table millimetres off, and every disk there is drawn a little out of
round in the rectified view. The markers themselves tell the bend: the four corner tiles lie where the distortion
is strongest, and the ruler's tags, wherever the ruler lies, add points inside (their layout along the ruler is
known, its place on the table is not: four unknowns of a similarity). One model is fitted to all their corners:

    table mm --(homography)--> undistorted normalized image coordinates --(1 + k1 r^2)--> frame px

with the principal point at the frame's centre and a nominal focal length (the frame's longer side): the focal
length only rescales k1, and the homography takes the rest. One coefficient, not two: the corner tiles all lie
at about one distance from the frame's centre, so k1 and k2 cannot be told apart there (fitted together they
trade off into lens models that fold within the frame). The corner markers' and the ruler tags' corners are
measured with different noise (the tags are small), so each kind has its own noise level, fitted with the model.
The distortion is kept only where it explains the corners decisively better than the homography alone (by the
Bayesian information criterion under those noise levels, a difference over 10: "very strong" evidence in Kass
and Raftery's scale) and keeps the lens model monotone over the frame;
given lens intrinsics (`tablesight calibrate --intrinsics`) always win over this estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import cv2
import numpy as np

from calibration.aruco import DetectedMarker
from calibration.camera import CameraIntrinsics
from calibration.layout import MarkerLayout

BIC_MARGIN = 10.0        # the evidence the distortion must add (Kass & Raftery: > 10 is very strong)
MIN_CORNER_MARKERS = 3   # fewer leave the homography itself barely determined


@dataclass(frozen=True)
class LensEstimate:
    """The estimated lens, and how well the corners fit without and with it (px RMS over `points` corners)."""

    intrinsics: CameraIntrinsics
    k1: float
    rms_px_without: float
    rms_px_with: float
    points: int


def _nominal_camera(size: tuple[int, int]) -> np.ndarray:
    w, h = size
    f = float(max(w, h))
    return np.array([[f, 0.0, (w - 1) / 2.0], [0.0, f, (h - 1) / 2.0], [0.0, 0.0, 1.0]])


def _similarity(p: np.ndarray, uv: np.ndarray) -> np.ndarray:
    """Ruler-frame mm -> table m under (tx, ty, angle, log scale)."""
    c, s = math.cos(p[2]), math.sin(p[2])
    k = math.exp(p[3]) / 1000.0
    return np.stack([p[0] + k * (c * uv[:, 0] - s * uv[:, 1]), p[1] + k * (s * uv[:, 0] + c * uv[:, 1])], axis=1)


def estimate_lens(found: Mapping[int, DetectedMarker], layout: MarkerLayout, size: tuple[int, int]
                  ) -> LensEstimate | None:
    """The lens distortion the corners of the markers in view call for; None when they cannot tell (too few
    corner markers) or do not need it (a lens with next to no distortion)."""
    corners = [m for m in layout.corners if m.id in found]
    if len(corners) < MIN_CORNER_MARKERS:
        return None
    ruler = [m for m in layout.ruler_markers if m.id in found]
    if len(ruler) < 2:
        ruler = []

    def mm(markers) -> np.ndarray:
        return np.concatenate([np.asarray(m.corners_mm, np.float64) for m in markers]) if markers else np.zeros((0, 2))

    def px(markers) -> np.ndarray:
        return np.concatenate([np.asarray(found[m.id].corners_px, np.float64).reshape(4, 2) for m in markers]) \
            if markers else np.zeros((0, 2))

    return fit_radial_lens(size, mm(corners), px(corners), mm(ruler), px(ruler))


def fit_radial_lens(size: tuple[int, int], plane_mm: np.ndarray, plane_px: np.ndarray,
                    rigid_mm: np.ndarray | None = None, rigid_px: np.ndarray | None = None) -> LensEstimate | None:
    """The one-coefficient lens that maps points of known place on the plane (`plane_mm`, N x 2, seen at
    `plane_px`) and points of known place on one rigid piece lying anywhere on it (`rigid_mm` in the piece's own
    frame, seen at `rigid_px`: the ruler's tags) best, when it explains them decisively better than a homography
    alone; None otherwise."""
    from scipy.optimize import least_squares

    kmat = _nominal_camera(size)
    f, cx, cy = kmat[0, 0], kmat[0, 2], kmat[1, 2]
    table_m = np.asarray(plane_mm, np.float64).reshape(-1, 2) / 1000.0
    corner_px = np.asarray(plane_px, np.float64).reshape(-1, 2)
    ruler_uv = np.zeros((0, 2)) if rigid_mm is None else np.asarray(rigid_mm, np.float64).reshape(-1, 2)
    ruler_px = np.zeros((0, 2)) if rigid_px is None else np.asarray(rigid_px, np.float64).reshape(-1, 2)
    ruler = len(ruler_uv) >= 4
    if not ruler:
        ruler_uv, ruler_px = np.zeros((0, 2)), np.zeros((0, 2))
    if len(table_m) < 4 * MIN_CORNER_MARKERS:
        return None
    n_pts = len(corner_px) + len(ruler_px)

    # start: the homography alone (table m -> normalized px) and the ruler's similarity under it
    norm = (corner_px - (cx, cy)) / f
    g0, _ = cv2.findHomography(table_m, norm, 0)
    if g0 is None:
        return None
    g0 = g0 / g0[2, 2]
    r0 = np.zeros(4)
    if ruler:
        on_table = cv2.perspectiveTransform(((ruler_px - (cx, cy)) / f).reshape(-1, 1, 2),
                                            np.linalg.inv(g0)).reshape(-1, 2)
        m, _ = cv2.estimateAffinePartial2D(ruler_uv.astype(np.float32), (on_table * 1000.0).astype(np.float32),
                                           method=cv2.LMEDS)
        if m is None:
            ruler, ruler_px, ruler_uv, r0 = False, np.zeros((0, 2)), np.zeros((0, 2)), np.zeros(4)
            n_pts = len(corner_px)
        else:
            scale = math.hypot(m[0, 0], m[1, 0])
            r0 = np.array([m[0, 2] / 1000.0, m[1, 2] / 1000.0, math.atan2(m[1, 0], m[0, 0]), math.log(scale)])
    frame_px = np.concatenate([corner_px, ruler_px])

    # The two kinds of corner are measured with different noise (the ruler's 24 mm tags against the corner markers'
    # 60 mm): each kind gets its own noise level, fitted with the model (least squares, then twice more weighted by
    # the last fit's residuals of each kind), and the models are compared by their likelihood under those levels.
    group = np.concatenate([np.zeros(len(corner_px), int), np.ones(len(ruler_px), int)])
    groups = [k for k in (0, 1) if (group == k).any()]

    def residuals(p: np.ndarray, with_lens: bool, sigma: np.ndarray) -> np.ndarray:
        g = np.append(p[:8], 1.0).reshape(3, 3)
        k1 = p[8] if with_lens else 0.0
        pts = np.concatenate([table_m, _similarity(p[-4:], ruler_uv)]) if ruler else table_m
        q = pts @ g[:, :2].T + g[:, 2]
        a = q[:, :2] / q[:, 2:3]
        r2 = (a ** 2).sum(1, keepdims=True)
        d = a * (1.0 + k1 * r2)
        return ((d * f + (cx, cy) - frame_px) / sigma[group][:, None]).ravel()

    def fit(p0: np.ndarray, with_lens: bool) -> tuple[np.ndarray, float, bool]:
        """Parameters, -2 log likelihood (per-kind noise levels at their maximum) and whether LM converged."""
        sigma = np.ones(2)
        for _ in range(3):
            sol = least_squares(residuals, p0, args=(with_lens, sigma), method="lm", x_scale="jac")
            p0 = sol.x
            err = (sol.fun.reshape(-1, 2) * sigma[group][:, None]) ** 2
            for k in groups:
                sigma[k] = math.sqrt(max(float(err[group == k].mean()), 1e-8))
        nll = sum(2.0 * (group == k).sum() * math.log(sigma[k] ** 2) for k in groups)
        return p0, nll, bool(sol.success)

    ruler_p = r0 if ruler else np.zeros(0)
    p_plain, nll0, _ = fit(np.concatenate([g0.ravel()[:8], ruler_p]), False)
    p_lens, nll1, converged = fit(np.concatenate([p_plain[:8], [0.0], p_plain[8:]]), True)
    n = 2 * n_pts
    bic0 = nll0 + (len(p_plain) + len(groups)) * math.log(n)
    bic1 = nll1 + (len(p_lens) + len(groups)) * math.log(n)

    def rms(p: np.ndarray, with_lens: bool) -> float:
        return math.sqrt(float((residuals(p, with_lens, np.ones(2)) ** 2).sum()) / n_pts)

    k1 = float(p_lens[8])
    # monotone out to the frame's corners: r(1 + k1 r^2) must keep growing, or the model folds
    r_max2 = (max(cx, size[0] - 1 - cx) ** 2 + max(cy, size[1] - 1 - cy) ** 2) / f ** 2
    monotone = 1.0 + 3.0 * k1 * r_max2 > 0.05
    if not (converged and monotone and bic1 < bic0 - BIC_MARGIN):
        return None
    intr = CameraIntrinsics(camera_matrix=kmat, dist_coeffs=np.array([k1, 0.0, 0.0, 0.0, 0.0]), image_size=size,
                            rms_px=rms(p_lens, True), source="markers")
    return LensEstimate(intr, k1, rms(p_plain, False), rms(p_lens, True), n_pts)
