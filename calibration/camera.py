"""Lens intrinsics: the camera matrix and distortion of one camera at one image size, from board photos.

A webcam's lens bends straight table lines by several millimetres at the corners; the table homography alone
cannot absorb that, so `calibrate-camera` measures it once per camera from chessboard (or ChArUco) photos.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

import cv2
import numpy as np

from tablesight.errors import InputError
from tablesight.formats import check_format, dump_json, format_string, load_json_file

CAMERA = "tablesight.camera"

# Undistorting points is iterative; OpenCV's default 5 iterations leave up to ~1e-3 px on a strong lens.
UNDISTORT_CRITERIA = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 40, 1e-10)


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def _size_pair(value, what: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in value)
    except (TypeError, ValueError):
        raise InputError(f"{what}: expected [width, height] in pixels") from None
    if w <= 0 or h <= 0:
        raise InputError(f"{what}: width and height must be positive, got {w}x{h}")
    return w, h


@dataclass(frozen=True)
class CameraIntrinsics:
    """Pinhole camera matrix and OpenCV distortion coefficients for frames of `image_size` (w, h)."""

    camera_matrix: np.ndarray  # 3x3 float64
    dist_coeffs: np.ndarray  # (n,) float64, OpenCV order k1 k2 p1 p2 [k3 ...]
    image_size: tuple[int, int]
    rms_px: float | None = None
    created: str = field(default_factory=now_iso)
    images_used: int | None = None
    coverage: float | None = None  # fraction of the image area the board corners spanned
    # "boards": calibrated from board photos (`calibrate-camera`); "markers": radial distortion estimated from one
    # frame's table markers (`calibration.lens`), its focal length nominal
    source: str = "boards"

    def __post_init__(self) -> None:
        k = np.asarray(self.camera_matrix, dtype=np.float64)
        d = np.asarray(self.dist_coeffs, dtype=np.float64).reshape(-1)
        if k.shape != (3, 3) or not np.all(np.isfinite(k)):
            raise InputError("camera_matrix: expected a finite 3x3 matrix")
        if k[0, 0] <= 0 or k[1, 1] <= 0 or abs(k[2, 2] - 1.0) > 1e-9:
            raise InputError("camera_matrix: focal lengths must be positive and the last row [0, 0, 1]")
        if d.size not in (4, 5, 8, 12, 14) or not np.all(np.isfinite(d)):
            raise InputError("dist_coeffs: expected 4, 5, 8, 12 or 14 finite OpenCV distortion coefficients")
        if self.source not in ("boards", "markers"):
            raise InputError(f"source: expected 'boards' or 'markers', got {self.source!r}")
        k.setflags(write=False)
        d.setflags(write=False)
        object.__setattr__(self, "camera_matrix", k)
        object.__setattr__(self, "dist_coeffs", d)
        object.__setattr__(self, "image_size", _size_pair(self.image_size, "image_size"))

    # --- points -------------------------------------------------------------------------------------------
    def undistort_points(self, pts_px: np.ndarray) -> np.ndarray:
        """Raw frame pixels -> undistorted pixels of the same camera matrix (Nx2 -> Nx2)."""
        p = np.asarray(pts_px, dtype=np.float64).reshape(-1, 1, 2)
        if p.shape[0] == 0:
            return np.zeros((0, 2))
        out = cv2.undistortPoints(p, self.camera_matrix, self.dist_coeffs, P=self.camera_matrix,
                                  criteria=UNDISTORT_CRITERIA)
        return out.reshape(-1, 2)

    def distort_points(self, pts_undistorted_px: np.ndarray) -> np.ndarray:
        """Undistorted pixels -> raw frame pixels (the exact forward lens model)."""
        p = np.asarray(pts_undistorted_px, dtype=np.float64).reshape(-1, 2)
        if p.shape[0] == 0:
            return np.zeros((0, 2))
        k = self.camera_matrix
        rays = np.empty((p.shape[0], 3))
        rays[:, 0] = (p[:, 0] - k[0, 2]) / k[0, 0]
        rays[:, 1] = (p[:, 1] - k[1, 2]) / k[1, 1]
        rays[:, 2] = 1.0
        out, _ = cv2.projectPoints(rays, np.zeros(3), np.zeros(3), k, self.dist_coeffs)
        return out.reshape(-1, 2)

    # --- files --------------------------------------------------------------------------------------------
    def to_json(self) -> dict:
        return {
            "format": format_string(CAMERA),
            "image_size": list(self.image_size),
            "camera_matrix": [[float(v) for v in row] for row in self.camera_matrix],
            "dist_coeffs": [float(v) for v in self.dist_coeffs],
            "rms_px": None if self.rms_px is None else float(self.rms_px),
            "images_used": self.images_used,
            "coverage": None if self.coverage is None else round(float(self.coverage), 4),
            "source": self.source,
            "created": self.created,
        }

    @classmethod
    def from_json(cls, doc, what: str = "camera intrinsics") -> "CameraIntrinsics":
        check_format(doc, CAMERA, what=what)
        try:
            rms = doc.get("rms_px")
            cov = doc.get("coverage")
            return cls(
                camera_matrix=np.array(doc["camera_matrix"], dtype=np.float64),
                dist_coeffs=np.array(doc["dist_coeffs"], dtype=np.float64),
                image_size=tuple(doc["image_size"]),
                rms_px=None if rms is None else float(rms),
                created=str(doc.get("created", "")),
                images_used=doc.get("images_used"),
                coverage=None if cov is None else float(cov),
                source=str(doc.get("source", "boards")),
            )
        except KeyError as exc:
            raise InputError(f"{what}: missing field {exc.args[0]!r}") from None
        except InputError as exc:
            raise InputError(f"{what}: {exc}") from None
        except (TypeError, ValueError) as exc:
            raise InputError(f"{what}: malformed numbers ({exc})") from None

    def save(self, path: str | Path) -> None:
        Path(path).write_text(dump_json(self.to_json()) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path, image_size: tuple[int, int] | None = None) -> "CameraIntrinsics":
        """Read a camera file; with `image_size`, refuse a file made for another frame size."""
        what = f"camera file '{path}'"
        cam = cls.from_json(load_json_file(path, what="camera file"), what=what)
        if image_size is not None:
            cam.check_image_size(image_size, what=what)
        return cam

    def check_image_size(self, image_size: tuple[int, int], what: str = "camera intrinsics") -> None:
        w, h = image_size
        if (int(w), int(h)) != self.image_size:
            raise InputError(
                f"{what} was made for {self.image_size[0]}x{self.image_size[1]} frames, this one is {w}x{h}; "
                "calibrate the camera at the resolution you play at")


# --- boards ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BoardSpec:
    """A calibration board: `kind` "chessboard" (cols x rows inner corners) or "charuco" (cols x rows squares)."""

    kind: str
    cols: int
    rows: int
    square_mm: float = 25.0
    marker_mm: float | None = None  # ChArUco marker side (default 0.75 of the square)
    dictionary: str = "DICT_4X4_50"

    def __post_init__(self) -> None:
        if self.kind not in ("chessboard", "charuco"):
            raise InputError(f"board: unknown kind {self.kind!r} (chessboard or charuco)")
        if self.cols < 2 or self.rows < 2:
            raise InputError("board: need at least 2x2 corners")
        if not (self.square_mm > 0):
            raise InputError("board: square size must be positive")

    @classmethod
    def parse(cls, text: str, square_mm: float = 25.0) -> "BoardSpec":
        """'chessboard:9x6' (inner corners) or 'charuco:7x5' (squares)."""
        kind, _, dims = text.partition(":")
        try:
            cols, rows = (int(v) for v in dims.lower().split("x"))
        except ValueError:
            raise InputError(f"--board {text!r}: expected KIND:COLSxROWS, e.g. chessboard:9x6") from None
        return cls(kind=kind.strip().lower(), cols=cols, rows=rows, square_mm=square_mm)

    def object_points(self) -> np.ndarray:
        """Board corners in mm (z = 0), row-major, the order findChessboardCorners returns."""
        grid = np.zeros((self.cols * self.rows, 3), np.float32)
        grid[:, :2] = np.mgrid[0:self.cols, 0:self.rows].T.reshape(-1, 2) * self.square_mm
        return grid

    def charuco_board(self):
        d = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, self.dictionary))
        marker = self.marker_mm or 0.75 * self.square_mm
        return cv2.aruco.CharucoBoard((self.cols, self.rows), self.square_mm, marker, d)


@dataclass(frozen=True)
class BoardView:
    """One usable board photo: its corners (image px) and their board positions (mm)."""

    name: str
    image_points: np.ndarray  # Nx2 float32
    object_points: np.ndarray  # Nx3 float32


@dataclass(frozen=True)
class RejectedImage:
    name: str
    reason: str


@dataclass(frozen=True)
class CameraCalibrationResult:
    intrinsics: CameraIntrinsics
    used: tuple[str, ...]
    rejected: tuple[RejectedImage, ...]
    per_image_rms_px: tuple[float, ...]
    coverage: float  # fraction of the image (in a 4x4 grid of cells) that holds board corners
    warnings: tuple[str, ...]


_SUBPIX = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 40, 0.001)
MIN_VIEWS = 3
COVERAGE_GRID = 4
MIN_COVERAGE = 0.5


def find_board(gray: np.ndarray, board: BoardSpec) -> tuple[np.ndarray, np.ndarray] | str:
    """Board corners in one grey image with sub-pixel refinement, or the reason it is unusable."""
    if board.kind == "chessboard":
        pattern = (board.cols, board.rows)
        flags = cv2.CALIB_CB_ADAPTIVE_THRESH | cv2.CALIB_CB_NORMALIZE_IMAGE
        ok, corners = cv2.findChessboardCorners(gray, pattern, flags=flags)
        if not ok:
            ok, corners = cv2.findChessboardCornersSB(gray, pattern, flags=cv2.CALIB_CB_EXHAUSTIVE)
            if not ok:
                return f"no {board.cols}x{board.rows} chessboard found (whole board in view, sharp, not glared?)"
        else:
            # The refinement window scales with the square size seen, so small boards are not over-smoothed.
            c = corners.reshape(-1, 2)
            step = np.median(np.linalg.norm(np.diff(c.reshape(board.rows, board.cols, 2), axis=1), axis=2))
            win = int(max(3, min(11, step * 0.4)))
            corners = cv2.cornerSubPix(gray, corners, (win, win), (-1, -1), _SUBPIX)
        return corners.reshape(-1, 2).astype(np.float32), board.object_points()
    cb = board.charuco_board()
    det = cv2.aruco.CharucoDetector(cb)
    ch_corners, ch_ids, _, _ = det.detectBoard(gray)
    if ch_ids is None or len(ch_ids) < 6:
        n = 0 if ch_ids is None else len(ch_ids)
        return f"only {n} ChArUco corners found (need 6)"
    obj, img = cb.matchImagePoints(ch_corners, ch_ids)
    return img.reshape(-1, 2).astype(np.float32), obj.reshape(-1, 3).astype(np.float32)


def _coverage(views: Sequence[BoardView], image_size: tuple[int, int]) -> float:
    w, h = image_size
    hit = np.zeros((COVERAGE_GRID, COVERAGE_GRID), bool)
    for v in views:
        gx = np.clip((v.image_points[:, 0] / w * COVERAGE_GRID).astype(int), 0, COVERAGE_GRID - 1)
        gy = np.clip((v.image_points[:, 1] / h * COVERAGE_GRID).astype(int), 0, COVERAGE_GRID - 1)
        hit[gy, gx] = True
    return float(hit.mean())


def calibrate_camera_views(views: Sequence[BoardView], image_size: tuple[int, int],
                           rejected: Sequence[RejectedImage] = ()) -> CameraCalibrationResult:
    """Intrinsics from board views already found; views whose own error is far above the rest are dropped."""
    views = list(views)
    rejected = list(rejected)
    if len(views) < MIN_VIEWS:
        why = "; ".join(f"{r.name}: {r.reason}" for r in rejected[:5])
        raise InputError(f"only {len(views)} usable board image(s), need at least {MIN_VIEWS}"
                         + (f" ({why})" if why else ""))
    while True:
        rms, k, d, rvecs, tvecs = cv2.calibrateCamera(
            [v.object_points for v in views], [v.image_points for v in views], image_size, None, None)
        per_view = []
        for v, r, t in zip(views, rvecs, tvecs):
            proj, _ = cv2.projectPoints(v.object_points, r, t, k, d)
            per_view.append(float(np.sqrt(np.mean(np.sum((proj.reshape(-1, 2) - v.image_points) ** 2, 1)))))
        worst = int(np.argmax(per_view))
        # A view with a mis-ordered or blurred board poisons the fit: drop it when it is a clear outlier.
        if len(views) > MIN_VIEWS and per_view[worst] > max(1.0, 3.0 * float(np.median(per_view))):
            rejected.append(RejectedImage(views[worst].name,
                                          f"reprojection error {per_view[worst]:.2f} px, far above the others"))
            del views[worst]
            continue
        break
    coverage = _coverage(views, image_size)
    warnings = []
    if coverage < MIN_COVERAGE:
        warnings.append(f"board corners cover only {coverage:.0%} of the image: add photos with the board near "
                        "the edges and corners of the picture, or the lens model is only good in the middle")
    if rms > 1.0:
        warnings.append(f"RMS reprojection error {rms:.2f} px is high (blur, a bent board or wrong --board?)")
    intr = CameraIntrinsics(camera_matrix=k, dist_coeffs=d.reshape(-1), image_size=image_size, rms_px=float(rms),
                            images_used=len(views), coverage=coverage)
    return CameraCalibrationResult(intr, tuple(v.name for v in views), tuple(rejected), tuple(per_view),
                                   coverage, tuple(warnings))


def calibrate_camera_images(images: Sequence[tuple[str, np.ndarray]], board: BoardSpec) -> CameraCalibrationResult:
    """Intrinsics from named images (BGR or grey). The most common image size is the camera's; others are
    rejected (intrinsics belong to one resolution)."""
    views: list[BoardView] = []
    rejected: list[RejectedImage] = []
    readable = []
    for name, img in images:
        if img is None or not isinstance(img, np.ndarray) or img.size == 0:
            rejected.append(RejectedImage(name, "not a readable image"))
        else:
            readable.append((name, img))
    if not readable:
        raise InputError("no readable images")
    sizes = [(img.shape[1], img.shape[0]) for _, img in readable]
    image_size = max(set(sizes), key=lambda s: (sizes.count(s), s))
    for (name, img), size in zip(readable, sizes):
        if size != image_size:
            rejected.append(RejectedImage(name, f"size {size[0]}x{size[1]}, the other photos are "
                                                f"{image_size[0]}x{image_size[1]}"))
            continue
        gray = img if img.ndim == 2 else cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
        found = find_board(gray, board)
        if isinstance(found, str):
            rejected.append(RejectedImage(name, found))
            continue
        img_pts, obj_pts = found
        span = np.ptp(img_pts, axis=0)
        if span[0] * span[1] < 0.01 * size[0] * size[1]:
            rejected.append(RejectedImage(name, "board too small in the picture (under 1% of the image)"))
            continue
        views.append(BoardView(name, img_pts, obj_pts))
    return calibrate_camera_views(views, image_size, rejected)


def fov_deg(intr: CameraIntrinsics) -> tuple[float, float]:
    w, h = intr.image_size
    k = intr.camera_matrix
    return (math.degrees(2 * math.atan(w / (2 * k[0, 0]))), math.degrees(2 * math.atan(h / (2 * k[1, 1]))))
