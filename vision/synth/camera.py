"""The synthetic webcam: an OpenCV pinhole camera with lens distortion, looking down at the table.

World frame = table millimetres: origin at the battlefield's top-left corner, x right, y down, and therefore
z pointing INTO the table (right-handed). A point lying on the felt has z = 0; something `h` mm above the felt
has z = -h. The pose is OpenCV's: a world point X maps to the camera frame as R X + t, R = Rodrigues(rvec).

Rendering runs the camera backwards: each image pixel is undistorted (cv2.undistortPoints) into a viewing ray
once per camera, and a horizontal plane at any height is then reached by a multiply-add. The per-camera ray
slopes are cached, so a frame costs one cheap intersection per drawn plane region.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property

import cv2
import numpy as np

RESOLUTIONS = {"1080p": (1920, 1080), "720p": (1280, 720)}

CAMERA_TRUTH_FORMAT = "tablesight.camera-truth/1"


def _rot_x(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]], dtype=np.float64)


def _rot_z(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]], dtype=np.float64)


def _distort(x: np.ndarray, y: np.ndarray, dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    k1, k2, p1, p2, k3 = (list(dist) + [0.0] * 5)[:5]
    r2 = x * x + y * y
    radial = 1 + r2 * (k1 + r2 * (k2 + r2 * k3))
    return (x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x),
            y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y)


def _newton_undistort(x: np.ndarray, y: np.ndarray, k: np.ndarray, dist: np.ndarray, u: np.ndarray, v: np.ndarray,
                      steps: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """Polish undistorted normalized points so they distort exactly onto pixels (u, v): OpenCV's fixed-point
    iteration stalls near the frame corners of strongly distorted lenses; Newton's method does not."""
    xd, yd = (u - k[0, 2]) / k[0, 0], (v - k[1, 2]) / k[1, 1]
    e = 1e-6
    for _ in range(steps):
        fx, fy = _distort(x, y, dist)
        ax, ay = _distort(x + e, y, dist)
        bx, by = _distort(x, y + e, dist)
        j11, j21, j12, j22 = (ax - fx) / e, (ay - fy) / e, (bx - fx) / e, (by - fy) / e
        rx, ry = fx - xd, fy - yd
        det = j11 * j22 - j12 * j21
        det = np.where(np.abs(det) < 1e-12, 1e-12, det)
        x = x - (j22 * rx - j12 * ry) / det
        y = y - (-j21 * rx + j11 * ry) / det
    return x, y


@dataclass(frozen=True, eq=False)
class SynthCamera:
    """True intrinsics and pose of the synthetic camera (what calibration should recover)."""

    camera_matrix: np.ndarray  # 3x3
    dist_coeffs: np.ndarray  # (k1, k2, p1, p2, k3)
    rvec: np.ndarray  # world (table mm) -> camera
    tvec: np.ndarray
    image_size: tuple[int, int]  # (w, h)
    yaw_deg: float = 0.0
    tilt_deg: float = 0.0
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "camera_matrix", np.asarray(self.camera_matrix, np.float64).reshape(3, 3))
        object.__setattr__(self, "dist_coeffs", np.asarray(self.dist_coeffs, np.float64).ravel())
        object.__setattr__(self, "rvec", np.asarray(self.rvec, np.float64).reshape(3))
        object.__setattr__(self, "tvec", np.asarray(self.tvec, np.float64).reshape(3))
        w, h = self.image_size
        if w <= 0 or h <= 0:
            raise ValueError("image_size must be positive")
        object.__setattr__(self, "image_size", (int(w), int(h)))

    # Geometry -------------------------------------------------------------------------------------------------
    @cached_property
    def rotation(self) -> np.ndarray:
        return cv2.Rodrigues(self.rvec)[0]

    @cached_property
    def center_mm(self) -> np.ndarray:
        """Camera centre in table mm (z negative: above the table)."""
        return -self.rotation.T @ self.tvec

    def project(self, points_mm: np.ndarray, height_mm: float | np.ndarray = 0.0) -> np.ndarray:
        """Image px (distorted, as the camera records them) of table points (N x 2) at `height_mm` above the felt,
        or of N x 3 points (x, y, z with z = -height)."""
        pts = np.asarray(points_mm, np.float64)
        pts = pts.reshape(-1, pts.shape[-1])
        if pts.shape[1] == 2:
            z = -np.broadcast_to(np.asarray(height_mm, np.float64), (len(pts),))
            pts = np.column_stack([pts, z])
        if len(pts) == 0:
            return np.zeros((0, 2))
        img, _ = cv2.projectPoints(pts.reshape(-1, 1, 3), self.rvec, self.tvec, self.camera_matrix, self.dist_coeffs)
        return img.reshape(-1, 2)

    def project_pinhole(self, points_xyz: np.ndarray) -> np.ndarray:
        """Projection without lens distortion (used to frame the table, where distortion can fold far points)."""
        pc = (self.rotation @ np.asarray(points_xyz, np.float64).T).T + self.tvec
        uv = pc[:, :2] / pc[:, 2:3]
        k = self.camera_matrix
        return np.column_stack([uv[:, 0] * k[0, 0] + k[0, 2], uv[:, 1] * k[1, 1] + k[1, 2]])

    def normalized_rays(self) -> tuple[np.ndarray, np.ndarray]:
        """Per pixel (x, y) of the undistorted viewing ray (x, y, 1) in the camera frame; cached.

        Solved exactly on a grid of every 4th pixel (the map is smooth: linear interpolation between grid
        points is off by well under 0.01 px) and interpolated to every pixel."""
        if "norm" not in self._cache:
            w, h = self.image_size
            step = 4
            gu = np.arange(0, w + step, step, dtype=np.float64)
            gv = np.arange(0, h + step, step, dtype=np.float64)
            u, v = np.meshgrid(gu, gv)
            pts = np.stack([u.ravel(), v.ravel()], axis=1).reshape(-1, 1, 2)
            crit = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 20, 1e-10)
            n = cv2.undistortPoints(pts, self.camera_matrix, self.dist_coeffs, criteria=crit).reshape(u.shape + (2,))
            x, y = _newton_undistort(n[..., 0].astype(np.float64), n[..., 1].astype(np.float64), self.camera_matrix,
                                     self.dist_coeffs, u, v)
            fu, fv = np.meshgrid(np.arange(w, dtype=np.float32) / step, np.arange(h, dtype=np.float32) / step)
            xs = cv2.remap(x.astype(np.float32), fu, fv, cv2.INTER_LINEAR)
            ys = cv2.remap(y.astype(np.float32), fu, fv, cv2.INTER_LINEAR)
            self._cache["norm"] = (xs, ys)
        return self._cache["norm"]

    def _ray_slopes(self) -> tuple[np.ndarray, np.ndarray]:
        """Per pixel (ax, ay): the world ray through the pixel centre reaches table point C + (z - Cz) * (ax, ay)."""
        if "slopes" not in self._cache:
            xn, yn = self.normalized_rays()
            r = self.rotation  # world ray = R^T (xn, yn, 1)
            dx = r[0, 0] * xn + r[1, 0] * yn + r[2, 0]
            dy = r[0, 1] * xn + r[1, 1] * yn + r[2, 1]
            dz = r[0, 2] * xn + r[1, 2] * yn + r[2, 2]
            self._cache["slopes"] = ((dx / dz).astype(np.float32), (dy / dz).astype(np.float32))
        return self._cache["slopes"]

    def plane_coords(self, height_mm: float = 0.0, roi: tuple[int, int, int, int] | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
        """Table mm (X, Y) seen by each pixel of `roi` (x0, y0, x1, y1) on the plane `height_mm` above the felt."""
        ax, ay = self._ray_slopes()
        if roi is not None:
            x0, y0, x1, y1 = roi
            ax, ay = ax[y0:y1, x0:x1], ay[y0:y1, x0:x1]
        c = self.center_mm
        s = np.float32(-height_mm - c[2])
        if roi is None and height_mm == 0.0:
            if "ground" not in self._cache:
                self._cache["ground"] = (np.float32(c[0]) + s * ax, np.float32(c[1]) + s * ay)
            return self._cache["ground"]
        return np.float32(c[0]) + s * ax, np.float32(c[1]) + s * ay

    def roi_of(self, corners_mm: np.ndarray, height_mm: float, pad: int = 3) -> tuple[int, int, int, int] | None:
        """Image bounding box (x0, y0, x1, y1) of a table region given by its outline points, or None if off-frame."""
        pts = np.asarray(corners_mm, np.float64).reshape(-1, 2)
        # Densify the outline: under barrel distortion straight edges bow outwards.
        dense = [pts]
        for a, b in zip(pts, np.roll(pts, -1, axis=0)):
            t = np.linspace(0, 1, 5)[1:-1, None]
            dense.append(a + (b - a) * t)
        img = self.project(np.vstack(dense), height_mm)
        w, h = self.image_size
        x0 = max(int(math.floor(img[:, 0].min())) - pad, 0)
        y0 = max(int(math.floor(img[:, 1].min())) - pad, 0)
        x1 = min(int(math.ceil(img[:, 0].max())) + pad + 1, w)
        y1 = min(int(math.ceil(img[:, 1].max())) + pad + 1, h)
        if x1 <= x0 or y1 <= y0:
            return None
        return x0, y0, x1, y1

    def mm_per_px_at(self, point_mm: tuple[float, float]) -> float:
        p = np.array([point_mm, (point_mm[0] + 10.0, point_mm[1])])
        img = self.project(p)
        return 10.0 / max(float(np.linalg.norm(img[1] - img[0])), 1e-9)

    def sharper(self, factor: int) -> "SynthCamera":
        """The same camera with `factor` times the pixels a side: the same pose, field of view and lens, a finer
        sensor (a 4K webcam, a phone's photo). Pixel (x, y) of this camera is pixel ((x + 0.5) * factor - 0.5, ...)
        of the new one."""
        if isinstance(factor, bool) or not isinstance(factor, int) or not 1 <= factor <= 4:
            raise ValueError(f"sharper: factor must be a whole number within 1..4, got {factor!r}")
        k = self.camera_matrix.copy()
        k[:2, :2] *= factor
        k[:2, 2] = (k[:2, 2] + 0.5) * factor - 0.5
        w, h = self.image_size
        return SynthCamera(camera_matrix=k, dist_coeffs=self.dist_coeffs.copy(), rvec=self.rvec.copy(),
                           tvec=self.tvec.copy(), image_size=(w * factor, h * factor), yaw_deg=self.yaw_deg,
                           tilt_deg=self.tilt_deg)

    # JSON -----------------------------------------------------------------------------------------------------
    def intrinsics_json(self) -> dict:
        """The lens as `tablesight.camera/1` (what `tablesight calibrate-camera` should recover)."""
        return {
            "format": "tablesight.camera/1",
            "camera_matrix": self.camera_matrix.round(6).tolist(),
            "dist_coeffs": self.dist_coeffs.round(8).tolist(),
            "image_size": list(self.image_size),
            "rms_px": 0.0,
            "created": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        }

    def to_json(self) -> dict:
        c = self.center_mm
        return {
            "format": CAMERA_TRUTH_FORMAT,
            "frame": "table mm: origin at the battlefield's top-left corner, x right, y down, z into the table "
                     "(a point h mm above the felt has z = -h); OpenCV pose: X_cam = R(rvec) X + tvec",
            "image_size": list(self.image_size),
            "camera_matrix": self.camera_matrix.round(6).tolist(),
            "dist_coeffs": self.dist_coeffs.round(8).tolist(),
            "rvec": self.rvec.round(9).tolist(),
            "tvec": self.tvec.round(6).tolist(),
            "camera_center_mm": c.round(3).tolist(),
            "height_above_table_mm": round(float(-c[2]), 3),
            "yaw_deg": round(self.yaw_deg, 4),
            "tilt_deg": round(self.tilt_deg, 4),
            "intrinsics": self.intrinsics_json(),
        }

    @classmethod
    def from_json(cls, doc: dict) -> "SynthCamera":
        from tablesight.formats import check_format

        check_format(doc, "tablesight.camera-truth", what="camera truth")
        try:
            return cls(camera_matrix=np.array(doc["camera_matrix"]), dist_coeffs=np.array(doc["dist_coeffs"]),
                       rvec=np.array(doc["rvec"]), tvec=np.array(doc["tvec"]),
                       image_size=tuple(doc["image_size"]), yaw_deg=float(doc.get("yaw_deg", 0.0)),
                       tilt_deg=float(doc.get("tilt_deg", 0.0)))
        except (KeyError, ValueError, TypeError) as exc:
            from tablesight.errors import FormatError

            raise FormatError(f"camera truth: bad or missing field ({exc})") from None


@dataclass(frozen=True)
class CameraSettings:
    """Ranges the random camera is drawn from (one per tier)."""

    yaw_jitter_deg: float = 10.0  # around a multiple of 90 degrees; >= 45 means any rotation
    max_tilt_deg: float = 12.0
    hfov_deg: tuple[float, float] = (62.0, 78.0)
    k1: tuple[float, float] = (-0.22, -0.03)
    tangential: float = 0.0015
    fill: tuple[float, float] = (0.86, 0.97)  # how much of the frame the marker tiles span

    def __post_init__(self) -> None:
        if not 0 <= self.max_tilt_deg <= 40:
            raise ValueError("max_tilt_deg must be within 0..40")
        if not 0 < self.fill[0] <= self.fill[1] <= 1:
            raise ValueError("fill must be within (0, 1]")


def _radial_covers(k1: float, k2: float, r_distorted: float) -> bool:
    """True when r (1 + k1 r^2 + k2 r^4) keeps growing until it reaches `r_distorted`."""
    r = np.linspace(0.0, 4.0, 4001)
    rd = r * (1 + k1 * r ** 2 + k2 * r ** 4)
    falling = np.nonzero(np.diff(rd) <= 0)[0]
    reach = rd[: falling[0] + 1].max() if len(falling) else rd.max()
    return bool(reach >= r_distorted)


def random_camera(rng: np.random.Generator, image_size: tuple[int, int], settings: CameraSettings,
                  must_see_mm: np.ndarray, target_mm: tuple[float, float] = (450.0, 450.0)) -> SynthCamera:
    """A webcam above the table, far enough that every point of `must_see_mm` (N x 2, on the felt) is in frame."""
    w, h = image_size
    hfov = math.radians(rng.uniform(*settings.hfov_deg))
    f = (w / 2.0) / math.tan(hfov / 2.0)
    cx = w / 2.0 + rng.uniform(-0.015, 0.015) * w
    cy = h / 2.0 + rng.uniform(-0.015, 0.015) * h
    k = np.array([[f, 0, cx], [0, f * rng.uniform(0.998, 1.002), cy], [0, 0, 1]])
    k1 = rng.uniform(*settings.k1)
    k2 = -0.35 * k1 * rng.uniform(0.0, 1.0) * (abs(k1) > 0.05)
    # The radial model must stay one-to-one out to the frame's corners (a real lens does); strong barrel
    # distortion needs a balancing k2.
    corner = max(math.hypot((x - cx) / f, (y - cy) / k[1, 1]) for x in (0, w) for y in (0, h))
    while not _radial_covers(k1, k2, corner * 1.08):
        k2 += 0.005
    p1, p2 = rng.uniform(-settings.tangential, settings.tangential, 2)
    k3 = 0.0
    dist = np.array([k1, k2, p1, p2, k3])

    if settings.yaw_jitter_deg >= 45:
        yaw = rng.uniform(-180.0, 180.0)
    else:
        yaw = 90.0 * rng.integers(0, 4) + rng.uniform(-settings.yaw_jitter_deg, settings.yaw_jitter_deg)
    tilt = settings.max_tilt_deg * math.sqrt(rng.uniform(0.0, 1.0))
    tilt_dir = rng.uniform(-math.pi, math.pi)
    roll = rng.uniform(-2.0, 2.0)
    # Camera-to-world rotation: start looking straight down (camera axes = table axes), turn about the vertical,
    # then tip the optical axis by `tilt` in direction `tilt_dir` (in camera coordinates), then a little roll.
    r_cw = _rot_z(math.radians(yaw)) @ _rot_z(tilt_dir) @ _rot_x(math.radians(tilt)) @ _rot_z(-tilt_dir) \
        @ _rot_z(math.radians(roll))
    z_axis = r_cw[:, 2]
    target = np.array([target_mm[0] + rng.uniform(-15, 15), target_mm[1] + rng.uniform(-15, 15), 0.0])
    fill = rng.uniform(*settings.fill)
    pts3 = np.column_stack([must_see_mm, np.zeros(len(must_see_mm))])
    r_wc = r_cw.T

    def extent(dist_mm: float) -> float:
        c = target - dist_mm * z_axis
        pc = (r_wc @ (pts3 - c).T).T
        if np.any(pc[:, 2] <= 1.0):
            return float("inf")
        u = pc[:, 0] / pc[:, 2] * k[0, 0] + k[0, 2]
        v = pc[:, 1] / pc[:, 2] * k[1, 1] + k[1, 2]
        # fraction of the half-frame used on the worst side
        return max((k[0, 2] - u.min()) / k[0, 2], (u.max() - k[0, 2]) / (w - k[0, 2]),
                   (k[1, 2] - v.min()) / k[1, 2], (v.max() - k[1, 2]) / (h - k[1, 2]))

    lo, hi = 200.0, 20000.0
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        if extent(mid) > fill:
            lo = mid
        else:
            hi = mid
    c = target - hi * z_axis
    rvec = cv2.Rodrigues(r_wc)[0].ravel()
    tvec = -r_wc @ c
    return SynthCamera(camera_matrix=k, dist_coeffs=dist, rvec=rvec, tvec=tvec, image_size=(w, h),
                       yaw_deg=float(yaw), tilt_deg=float(tilt))


def must_see_points(layout=None) -> np.ndarray:
    """Table points every frame must contain: the outer corners of the four marker tiles (plus a little paper)."""
    from calibration.layout import default_layout

    layout = layout or default_layout()
    m = (layout.tile_mm - layout.marker_mm) / 2.0
    pts = []
    for mk in layout.corners:
        (x0, y0), (x1, y1) = mk.corners_mm[0], mk.corners_mm[2]
        e = m + 4.0
        pts += [(x0 - e, y0 - e), (x1 + e, y0 - e), (x1 + e, y1 + e), (x0 - e, y1 + e)]
    return np.array(pts, np.float64)


def table_camera(seed: int, settings: CameraSettings, resolution: str = "1080p", layout=None) -> SynthCamera:
    """The camera of a synthetic folder/sequence: deterministic per seed."""
    if resolution not in RESOLUTIONS:
        from tablesight.errors import InputError

        raise InputError(f"unknown resolution {resolution!r} (known: {', '.join(RESOLUTIONS)})")
    rng = np.random.default_rng([int(seed), 0xCA3E7A])
    return random_camera(rng, RESOLUTIONS[resolution], settings, must_see_points(layout))
