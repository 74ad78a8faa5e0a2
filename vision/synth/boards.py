"""Chessboard photos taken by the synthetic camera, for `tablesight calibrate-camera` to recover its lens.

A rigid printed chessboard (9 x 6 inner corners by default, known square size) is held in front of the camera at
varied distances, positions and tilts over the table. Each pixel's undistorted ray is intersected with the board
plane, so the photos carry exactly the camera's lens distortion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from vision.synth.camera import SynthCamera

BOARD_FORMAT = "tablesight.synth-boards/1"


@dataclass(frozen=True)
class ChessboardSpec:
    inner_cols: int = 9
    inner_rows: int = 6
    square_mm: float = 25.0
    margin_mm: float = 18.0

    def __post_init__(self) -> None:
        if self.inner_cols < 2 or self.inner_rows < 2 or self.square_mm <= 0 or self.margin_mm < 0:
            raise ValueError("a chessboard needs >= 2x2 inner corners, a positive square and a margin >= 0")

    @property
    def size_mm(self) -> tuple[float, float]:
        return ((self.inner_cols + 1) * self.square_mm + 2 * self.margin_mm,
                (self.inner_rows + 1) * self.square_mm + 2 * self.margin_mm)

    def object_points(self) -> np.ndarray:
        """Inner corners in board mm (row by row, as cv2.findChessboardCorners orders them up to a flip)."""
        j, i = np.mgrid[0:self.inner_rows, 0:self.inner_cols]
        x = self.margin_mm + (i.ravel() + 1) * self.square_mm
        y = self.margin_mm + (j.ravel() + 1) * self.square_mm
        return np.column_stack([x, y, np.zeros_like(x)]).astype(np.float64)

    def texture(self, ppm: float = 4.0) -> np.ndarray:
        w, h = self.size_mm
        W, H = int(round(w * ppm)), int(round(h * ppm))
        img = np.full((H, W), 232.0, np.float32)
        s = self.square_mm * ppm
        m = self.margin_mm * ppm
        for r in range(self.inner_rows + 1):
            for c in range(self.inner_cols + 1):
                if (r + c) % 2 == 0:
                    img[int(round(m + r * s)):int(round(m + (r + 1) * s)),
                        int(round(m + c * s)):int(round(m + (c + 1) * s))] = 22.0
        return img


def _board_pose(rng: np.random.Generator, camera: SynthCamera, spec: ChessboardSpec, k: int
                ) -> tuple[np.ndarray, np.ndarray] | None:
    """A pose (R, T in the camera frame, board mm -> camera mm) that keeps the whole board in frame."""
    w, h = camera.image_size
    bw, bh = spec.size_mm
    K = camera.camera_matrix
    for _ in range(200):
        depth = rng.uniform(380.0, 800.0)
        # spread the boards over the frame: corners and edges matter most for distortion
        gx, gy = [(-0.6, -0.6), (0.6, -0.6), (0.6, 0.6), (-0.6, 0.6), (0, 0)][k % 5]
        u = w / 2 + (gx + rng.uniform(-0.35, 0.35)) * w / 2
        v = h / 2 + (gy + rng.uniform(-0.35, 0.35)) * h / 2
        centre = np.array([(u - K[0, 2]) / K[0, 0], (v - K[1, 2]) / K[1, 1], 1.0]) * depth
        tilt = math.radians(rng.uniform(5.0, 40.0))
        axis_ang = rng.uniform(0, 2 * math.pi)
        axis = np.array([math.cos(axis_ang), math.sin(axis_ang), 0.0])
        r_tilt = cv2.Rodrigues(axis * tilt)[0]
        spin = math.radians(rng.uniform(-25, 25) + (90.0 if rng.random() < 0.2 else 0.0))
        r_spin = cv2.Rodrigues(np.array([0, 0, spin]))[0]
        R = r_tilt @ r_spin
        T = centre - R @ np.array([bw / 2, bh / 2, 0.0])
        corners = np.array([[0, 0, 0], [bw, 0, 0], [bw, bh, 0], [0, bh, 0]], np.float64)
        img, _ = cv2.projectPoints(corners, cv2.Rodrigues(R)[0], T, K, camera.dist_coeffs)
        img = img.reshape(-1, 2)
        pc = (R @ corners.T).T + T
        if np.all(pc[:, 2] > 100) and np.all(img >= [10, 10]) and np.all(img <= [w - 10, h - 10]):
            return R, T
    return None


def render_board(camera: SynthCamera, background: np.ndarray, spec: ChessboardSpec, R: np.ndarray, T: np.ndarray,
                 rng: np.random.Generator) -> np.ndarray:
    xn, yn = camera.normalized_rays()
    n = R[:, 2]
    denom = n[0] * xn + n[1] * yn + n[2]
    s = float(n @ T) / np.where(np.abs(denom) < 1e-9, 1e-9, denom)
    px, py, pz = s * xn - T[0], s * yn - T[1], s - T[2]
    bu = R[0, 0] * px + R[1, 0] * py + R[2, 0] * pz  # R^T (P - T)
    bv = R[0, 1] * px + R[1, 1] * py + R[2, 1] * pz
    ppm = 4.0
    tex = spec.texture(ppm)
    alpha_tex = np.ones_like(tex)
    mx, my = (bu * ppm).astype(np.float32), (bv * ppm).astype(np.float32)
    board = cv2.remap(tex, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    alpha = cv2.remap(alpha_tex, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    alpha[s <= 0] = 0
    # light falls off across the board, a slightly warm print
    shade = (0.85 + 0.15 * rng.uniform(0.6, 1.0)) * (1.0 - 0.08 * (bu / spec.size_mm[0]))
    board = board * shade
    img = background.astype(np.float32) * 0.8
    img = img * (1 - alpha[..., None]) + (board * alpha)[..., None] * np.array([0.96, 0.99, 1.0], np.float32)
    img = cv2.GaussianBlur(img, (0, 0), rng.uniform(0.4, 0.9))
    img += rng.standard_normal(img.shape[:2], dtype=np.float32)[..., None] * rng.uniform(1.5, 3.0)
    return np.clip(img, 0, 255).astype(np.uint8)


def render_boards(camera: SynthCamera, background: np.ndarray, count: int = 12, seed: int = 0,
                  spec: ChessboardSpec | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """`count` board photos; each item is (image BGR uint8, true inner-corner px N x 2)."""
    spec = spec or ChessboardSpec()
    rng = np.random.default_rng([int(seed), 0xB0A2D])
    out = []
    obj = spec.object_points()
    for k in range(count):
        pose = _board_pose(rng, camera, spec, k)
        if pose is None:
            continue
        R, T = pose
        img = render_board(camera, background, spec, R, T, rng)
        corners, _ = cv2.projectPoints(obj, cv2.Rodrigues(R)[0], T, camera.camera_matrix, camera.dist_coeffs)
        out.append((img, corners.reshape(-1, 2)))
    return out
