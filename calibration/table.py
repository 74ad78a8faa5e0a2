"""The table plane: image <-> table-mm homography from the corner markers, and the rectified top-down view.

Table mm: origin at the battlefield's top-left corner (marker 0's corner), x right, y down (interfaces.md).
The homography maps *undistorted* image pixels (same camera matrix, lens distortion removed) to table mm; with
no intrinsics, undistorted pixels are the raw frame pixels. The rectified image is the table seen from straight
above at `rectified_px_per_mm`, its pixel (0, 0) at table mm `rectified_origin_mm`; one cv2.remap map pair does
undistortion and rectification together and is built once, on first use.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import cv2
import numpy as np

from calibration.aruco import DetectedMarker, detect_markers, to_gray
from calibration.camera import CameraIntrinsics, now_iso
from calibration.layout import MarkerLayout, default_layout
from calibration.lens import estimate_lens
from calibration.ruler import RulerCheck, measure_ruler
from tablesight.errors import InputError
from tablesight.formats import check_format, dump_json, format_string, load_json_file

TABLE = "tablesight.table"

DEFAULT_PX_PER_MM = 1.0
DEFAULT_MARGIN_MM = 40.0
#: What a plausible calibration keeps to (refused at load otherwise, one line naming the field): a rectified view
#: of 0.1-10 px/mm and at most MAX_RECTIFIED_PX pixels, frames of at most 16384 px a side, a battlefield of at most
#: 5 m a side. Beyond them every frame would fail (a 1000 px/mm view of a table is a 112 GiB image).
PX_PER_MM_RANGE = (0.1, 10.0)
MAX_RECTIFIED_PX = 40_000_000
MAX_IMAGE_SIDE = 16384
MAX_BATTLEFIELD_MM = 5000.0
# A marker whose corners sit this far (mean, mm) from where the others put them was moved or misread.
MARKER_REJECT_MM = 2.5
MARKER_REJECT_PX = 5.0
# Without lens intrinsics, the uncorrected distortion alone puts a marker several mm off the others' fit.
MARKER_REJECT_NO_LENS_MM = 30.0
# The ruler overrides the marker layout's scale only beyond the ruler's own uncertainty (tags stuck by hand,
# ~1 mm over 270 mm): a 3 ft mat is 1.6% off, a printer's "fit to page" 3-6%.
RULER_SCALE_TOLERANCE = 0.01
# ... and only when the marker fit itself is good (max corner residual, mm).
RULER_TRUST_RESIDUAL_MM = 1.0


@dataclass(frozen=True)
class PointResidual:
    marker_id: int
    corner: int  # 0..3, OpenCV order
    image_px: tuple[float, float]  # raw frame px
    residual_mm: float  # distance between where the homography puts this corner and where the layout says
    used: bool  # False: the marker was rejected as inconsistent

    def to_json(self) -> dict:
        return {"marker": self.marker_id, "corner": self.corner,
                "image_px": [round(self.image_px[0], 3), round(self.image_px[1], 3)],
                "residual_mm": round(self.residual_mm, 4), "used": self.used}

    @classmethod
    def from_json(cls, d: dict) -> "PointResidual":
        return cls(int(d["marker"]), int(d["corner"]), (float(d["image_px"][0]), float(d["image_px"][1])),
                   float(d["residual_mm"]), bool(d["used"]))


@dataclass(frozen=True)
class RejectedMarker:
    marker_id: int
    reason: str

    def to_json(self) -> dict:
        return {"id": self.marker_id, "reason": self.reason}


def _layout_json(layout: MarkerLayout) -> dict:
    return {"width_mm": layout.width_mm, "height_mm": layout.height_mm, "dictionary": layout.dictionary,
            "marker_mm": layout.marker_mm, "tile_mm": layout.tile_mm, "ruler_length_mm": layout.ruler_length_mm,
            "ruler_width_mm": layout.ruler_width_mm, "ruler_tag_mm": layout.ruler_tag_mm,
            "ruler_band_limits_mm": list(layout.ruler_band_limits_mm)}


def _layout_from_json(d: dict) -> MarkerLayout:
    return MarkerLayout(width_mm=float(d["width_mm"]), height_mm=float(d["height_mm"]),
                        dictionary=str(d["dictionary"]), marker_mm=float(d["marker_mm"]),
                        tile_mm=float(d["tile_mm"]), ruler_length_mm=float(d["ruler_length_mm"]),
                        ruler_width_mm=float(d["ruler_width_mm"]), ruler_tag_mm=float(d["ruler_tag_mm"]),
                        ruler_band_limits_mm=tuple(float(v) for v in d["ruler_band_limits_mm"]))


def _apply_h(h: np.ndarray, pts: np.ndarray) -> np.ndarray:
    p = np.asarray(pts, dtype=np.float64).reshape(-1, 2)
    q = p @ h[:, :2].T + h[:, 2]
    return q[:, :2] / q[:, 2:3]


@dataclass(frozen=True, eq=False)
class TableCalibration:
    """Everything needed to turn a frame of one camera into table millimetres (`tablesight.table/1`)."""

    image_size: tuple[int, int]
    homography: np.ndarray  # 3x3: undistorted image px -> table mm
    intrinsics: CameraIntrinsics | None = None
    layout: MarkerLayout = field(default_factory=default_layout)  # the layout the markers were fitted to
    battlefield_mm: tuple[float, float] = (900.0, 900.0)  # the battlefield size in use
    battlefield_from_markers_mm: tuple[float, float] | None = None  # from the markers' own printed size
    scale_source: str = "markers"  # "markers": layout size trusted; "ruler": the ruler's length fixed the scale
    ruler: RulerCheck | None = None  # the ruler as measured before any correction (its error is the check)
    residuals: tuple[PointResidual, ...] = ()
    markers_used: tuple[int, ...] = ()
    markers_rejected: tuple[RejectedMarker, ...] = ()
    warnings: tuple[str, ...] = ()
    rectified_px_per_mm: float = DEFAULT_PX_PER_MM
    rectified_origin_mm: tuple[float, float] = (-DEFAULT_MARGIN_MM, -DEFAULT_MARGIN_MM)
    disk_diameters_mm: tuple[float, float, float] | None = None  # measured small/medium/large, if measured
    created: str = field(default_factory=now_iso)
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        h = np.asarray(self.homography, dtype=np.float64)
        if h.shape != (3, 3) or not np.all(np.isfinite(h)) or abs(np.linalg.det(h)) < 1e-18:
            raise InputError("homography: expected a finite, invertible 3x3 matrix")
        h = h / h[2, 2] if abs(h[2, 2]) > 1e-12 else h
        h.setflags(write=False)
        object.__setattr__(self, "homography", h)
        w, hh = (int(v) for v in self.image_size)
        if w <= 0 or hh <= 0:
            raise InputError("image_size: width and height must be positive")
        object.__setattr__(self, "image_size", (w, hh))
        if self.intrinsics is not None and self.intrinsics.image_size != (w, hh):
            raise InputError(f"intrinsics are for {self.intrinsics.image_size[0]}x{self.intrinsics.image_size[1]}"
                             f" frames, the table calibration for {w}x{hh}")
        if not (self.rectified_px_per_mm > 0 and math.isfinite(self.rectified_px_per_mm)):
            raise InputError("rectified.px_per_mm must be positive")
        lo, hi = PX_PER_MM_RANGE
        if not lo <= self.rectified_px_per_mm <= hi:
            raise InputError(f"rectified.px_per_mm: {self.rectified_px_per_mm:g} is implausible (expected "
                             f"{lo:g}-{hi:g} px/mm)")
        if w > MAX_IMAGE_SIDE or hh > MAX_IMAGE_SIDE:
            raise InputError(f"image_size: {w}x{hh} is implausible (at most {MAX_IMAGE_SIDE} px a side)")
        if self.scale_source not in ("markers", "ruler"):
            raise InputError(f"scale_source: {self.scale_source!r} is not 'markers' or 'ruler'")
        bw, bh = (float(v) for v in self.battlefield_mm)
        if not (bw > 0 and bh > 0):
            raise InputError("battlefield size must be positive")
        if not (bw <= MAX_BATTLEFIELD_MM and bh <= MAX_BATTLEFIELD_MM):
            raise InputError(f"battlefield: {bw:g} x {bh:g} mm is implausible (at most {MAX_BATTLEFIELD_MM:g} mm a side)")
        object.__setattr__(self, "battlefield_mm", (bw, bh))
        origin = tuple(float(v) for v in self.rectified_origin_mm)
        if len(origin) != 2 or not all(math.isfinite(v) and -MAX_BATTLEFIELD_MM <= v <= 0 for v in origin):
            raise InputError(f"rectified.origin_mm: {list(origin)} is implausible (two margins of 0 to "
                             f"-{MAX_BATTLEFIELD_MM:g} mm)")
        object.__setattr__(self, "rectified_origin_mm", origin)
        rw, rh = self.rectified_size
        if rw * rh > MAX_RECTIFIED_PX:
            raise InputError(f"rectified.size: {rw}x{rh} px is implausible (at most {MAX_RECTIFIED_PX:,} px; lower "
                             f"rectified.px_per_mm)")
        if self.disk_diameters_mm is not None:
            d = tuple(float(v) for v in self.disk_diameters_mm)
            if len(d) != 3 or not all(math.isfinite(v) and 5 < v < 300 for v in d):
                raise InputError("disk_diameters_mm: expected three diameters between 5 and 300 mm")
            object.__setattr__(self, "disk_diameters_mm", d)
        self._cache["lock"] = threading.Lock()

    # --- the mapping ------------------------------------------------------------------------------------------
    @property
    def homography_inv(self) -> np.ndarray:
        inv = self._cache.get("inv")
        if inv is None:
            inv = np.linalg.inv(self.homography)
            self._cache["inv"] = inv
        return inv

    def image_to_table(self, pts_px: np.ndarray, undistorted: bool = False) -> np.ndarray:
        """Raw frame pixels (Nx2) -> table mm (Nx2). `undistorted=True`: the points are already undistorted."""
        p = np.asarray(pts_px, dtype=np.float64).reshape(-1, 2)
        if self.intrinsics is not None and not undistorted:
            p = self.intrinsics.undistort_points(p)
        return _apply_h(self.homography, p)

    def table_to_image(self, pts_mm: np.ndarray, undistorted: bool = False) -> np.ndarray:
        """Table mm (Nx2) -> raw frame pixels (Nx2) (undistorted pixels with `undistorted=True`)."""
        p = _apply_h(self.homography_inv, pts_mm)
        if self.intrinsics is not None and not undistorted:
            p = self.intrinsics.distort_points(p)
        return p

    def rectified_to_table(self, pts: np.ndarray) -> np.ndarray:
        p = np.asarray(pts, dtype=np.float64).reshape(-1, 2)
        return p / self.rectified_px_per_mm + np.asarray(self.rectified_origin_mm)

    def table_to_rectified(self, pts_mm: np.ndarray) -> np.ndarray:
        p = np.asarray(pts_mm, dtype=np.float64).reshape(-1, 2)
        return (p - np.asarray(self.rectified_origin_mm)) * self.rectified_px_per_mm

    @property
    def rectified_size(self) -> tuple[int, int]:
        """(w, h) of the rectified image: the battlefield plus the margin on every side."""
        ox, oy = self.rectified_origin_mm
        w, h = self.battlefield_mm
        return (int(math.ceil((w - 2 * ox) * self.rectified_px_per_mm)),
                int(math.ceil((h - 2 * oy) * self.rectified_px_per_mm)))

    def with_rectified(self, px_per_mm: float | None = None,
                       origin_mm: tuple[float, float] | None = None) -> "TableCalibration":
        """The same calibration with another rectified geometry (e.g. 3 px/mm for measuring disks)."""
        return dataclasses.replace(
            self, rectified_px_per_mm=self.rectified_px_per_mm if px_per_mm is None else float(px_per_mm),
            rectified_origin_mm=self.rectified_origin_mm if origin_mm is None else tuple(origin_mm))

    def with_disk_diameters(self, diameters_mm: tuple[float, float, float] | None) -> "TableCalibration":
        return dataclasses.replace(self, disk_diameters_mm=diameters_mm)

    # --- frames -------------------------------------------------------------------------------------------
    def check_frame(self, frame: np.ndarray) -> None:
        if frame is None or not isinstance(frame, np.ndarray) or frame.ndim not in (2, 3) or frame.size == 0:
            raise InputError("empty or unreadable frame")
        h, w = frame.shape[:2]
        if (w, h) != self.image_size:
            raise InputError(f"frame is {w}x{h} but the table calibration is for {self.image_size[0]}x"
                             f"{self.image_size[1]} frames; recalibrate at this resolution")

    def rectify_maps(self) -> tuple[np.ndarray, np.ndarray]:
        """The cached remap pair (fixed-point CV_16SC2 + interpolation table): rectified px -> raw frame px."""
        maps = self._cache.get("maps")
        if maps is None:
            with self._cache["lock"]:
                maps = self._cache.get("maps")
                if maps is None:
                    maps = self._build_maps()
                    self._cache["maps"] = maps
        return maps

    def _build_maps(self, step: int = 8) -> tuple[np.ndarray, np.ndarray]:
        # The map is smooth (a homography and a lens polynomial): compute it exactly on a grid every `step`
        # pixels and interpolate bilinearly in between (error < 0.01 px, ~60x fewer lens evaluations).
        rw, rh = self.rectified_size
        gw, gh = -(-rw // step) + 2, -(-rh // step) + 2
        # Coarse sample k sits at pixel (k - 1) * step + (step - 1) / 2, which is exactly where cv2.resize by
        # `step` puts it (pixel-centre convention); one extra sample on each side covers the borders.
        pos = lambda n: (np.arange(n, dtype=np.float64) - 1) * step + (step - 1) / 2.0  # noqa: E731
        gx, gy = np.meshgrid(pos(gw), pos(gh))
        table = self.rectified_to_table(np.stack([gx.ravel(), gy.ravel()], axis=1))
        raw = self.table_to_image(table).astype(np.float32).reshape(gh, gw, 2)
        full = cv2.resize(raw, (gw * step, gh * step), interpolation=cv2.INTER_LINEAR)
        full = full[step:step + rh, step:step + rw]
        return cv2.convertMaps(np.ascontiguousarray(full[..., 0]), np.ascontiguousarray(full[..., 1]),
                               cv2.CV_16SC2)

    def _exact_map(self) -> np.ndarray:
        """The float map computed at every pixel (for checking the interpolated one)."""
        rw, rh = self.rectified_size
        gx, gy = np.meshgrid(np.arange(rw, dtype=np.float64), np.arange(rh, dtype=np.float64))
        table = self.rectified_to_table(np.stack([gx.ravel(), gy.ravel()], axis=1))
        return self.table_to_image(table).reshape(rh, rw, 2)

    def rectify(self, frame_bgr: np.ndarray, interpolation: int = cv2.INTER_LINEAR) -> np.ndarray:
        """The top-down rectified view of a frame (undistorted and rectified in one remap)."""
        self.check_frame(frame_bgr)
        m1, m2 = self.rectify_maps()
        return cv2.remap(frame_bgr, m1, m2, interpolation, borderMode=cv2.BORDER_CONSTANT)

    # --- quality ------------------------------------------------------------------------------------------
    @property
    def residual_mean_mm(self) -> float | None:
        r = [p.residual_mm for p in self.residuals if p.used]
        return float(np.mean(r)) if r else None

    @property
    def residual_max_mm(self) -> float | None:
        r = [p.residual_mm for p in self.residuals if p.used]
        return float(np.max(r)) if r else None

    # --- files --------------------------------------------------------------------------------------------
    def to_json(self) -> dict:
        return {
            "format": format_string(TABLE),
            "image_size": list(self.image_size),
            "created": self.created,
            "intrinsics": None if self.intrinsics is None else self.intrinsics.to_json(),
            "homography": [[float(v) for v in row] for row in self.homography],
            "homography_maps": "undistorted image px -> table mm",
            "battlefield": {"width_mm": round(self.battlefield_mm[0], 3),
                            "height_mm": round(self.battlefield_mm[1], 3)},
            "battlefield_from_markers_mm": None if self.battlefield_from_markers_mm is None
            else [round(v, 2) for v in self.battlefield_from_markers_mm],
            "scale_source": self.scale_source,
            "ruler": None if self.ruler is None else self.ruler.to_json(),
            "layout": _layout_json(self.layout),
            "markers_used": list(self.markers_used),
            "markers_rejected": [m.to_json() for m in self.markers_rejected],
            "residual_mean_mm": None if self.residual_mean_mm is None else round(self.residual_mean_mm, 4),
            "residual_max_mm": None if self.residual_max_mm is None else round(self.residual_max_mm, 4),
            "residuals": [r.to_json() for r in self.residuals],
            "rectified": {"px_per_mm": self.rectified_px_per_mm, "origin_mm": list(self.rectified_origin_mm),
                          "size": list(self.rectified_size)},
            "disk_diameters_mm": None if self.disk_diameters_mm is None
            else [round(v, 2) for v in self.disk_diameters_mm],
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_json(cls, doc, what: str = "table calibration") -> "TableCalibration":
        check_format(doc, TABLE, what=what)
        try:
            intr = doc.get("intrinsics")
            ruler = doc.get("ruler")
            bfm = doc.get("battlefield_from_markers_mm")
            rect = doc.get("rectified") or {}
            return cls(
                image_size=tuple(doc["image_size"]),
                homography=np.array(doc["homography"], dtype=np.float64),
                intrinsics=None if intr is None else CameraIntrinsics.from_json(intr, what=f"{what}: intrinsics"),
                layout=_layout_from_json(doc["layout"]),
                battlefield_mm=(float(doc["battlefield"]["width_mm"]), float(doc["battlefield"]["height_mm"])),
                battlefield_from_markers_mm=None if bfm is None else (float(bfm[0]), float(bfm[1])),
                scale_source=str(doc.get("scale_source", "markers")),
                ruler=None if ruler is None else RulerCheck.from_json(ruler),
                residuals=tuple(PointResidual.from_json(r) for r in doc.get("residuals", [])),
                markers_used=tuple(int(i) for i in doc.get("markers_used", [])),
                markers_rejected=tuple(RejectedMarker(int(m["id"]), str(m["reason"]))
                                       for m in doc.get("markers_rejected", [])),
                warnings=tuple(str(w) for w in doc.get("warnings", [])),
                rectified_px_per_mm=float(rect.get("px_per_mm", DEFAULT_PX_PER_MM)),
                rectified_origin_mm=tuple(float(v) for v in rect.get("origin_mm",
                                                                     (-DEFAULT_MARGIN_MM, -DEFAULT_MARGIN_MM))),
                disk_diameters_mm=None if doc.get("disk_diameters_mm") is None
                else tuple(float(v) for v in doc["disk_diameters_mm"]),
                created=str(doc.get("created", "")),
            )
        except KeyError as exc:
            raise InputError(f"{what}: missing field {exc.args[0]!r}") from None
        except InputError as exc:
            if str(exc).startswith(what):
                raise
            raise InputError(f"{what}: {exc}") from None
        except (TypeError, ValueError, IndexError, AttributeError) as exc:
            raise InputError(f"{what}: malformed value ({exc})") from None

    def save(self, path: str | Path) -> None:
        Path(path).write_text(dump_json(self.to_json()) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path, image_size: tuple[int, int] | None = None) -> "TableCalibration":
        """Read a table file; with `image_size` (w, h), refuse a file made for another frame size."""
        what = f"table calibration '{path}'"
        cal = cls.from_json(load_json_file(path, what="table calibration"), what=what)
        if image_size is not None and tuple(int(v) for v in image_size) != cal.image_size:
            raise InputError(f"{what} is for {cal.image_size[0]}x{cal.image_size[1]} frames, not "
                             f"{int(image_size[0])}x{int(image_size[1])}; recalibrate at this resolution")
        return cal


# --- fitting ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class HomographyFit:
    homography: np.ndarray  # undistorted px -> layout mm
    used_ids: tuple[int, ...]
    rejected: tuple[RejectedMarker, ...]
    residuals_mm: dict[int, np.ndarray]  # per marker id: 4 residuals (mm) under the final fit


def _pose_homography(src: np.ndarray, dst: np.ndarray, camera_matrix: np.ndarray) -> np.ndarray | None:
    """Undistorted px -> table mm from the table plane's pose under a known camera matrix (6 unknowns)."""
    obj = np.concatenate([dst, np.zeros((len(dst), 1))], axis=1)
    ok, rvec, tvec = cv2.solvePnP(obj, src, camera_matrix, None, flags=cv2.SOLVEPNP_IPPE)
    if not ok:
        return None
    rvec, tvec = cv2.solvePnPRefineLM(obj, src, camera_matrix, None, rvec, tvec)
    r = cv2.Rodrigues(rvec)[0]
    table_to_px = camera_matrix @ np.column_stack([r[:, 0], r[:, 1], tvec.reshape(3)])
    h = np.linalg.inv(table_to_px)
    return h / h[2, 2]


def fit_table_homography(undistorted: Mapping[int, np.ndarray], layout: MarkerLayout,
                         reject_mm: float = MARKER_REJECT_MM,
                         camera_matrix: np.ndarray | None = None) -> HomographyFit:
    """Fit undistorted px -> layout mm from corner markers {id: 4x2 px}, robust to one inconsistent marker.

    Each marker contributes its four corners. With four or more markers there is redundancy to find a bad one:
    each marker is checked against the fit of the others; a marker more than `reject_mm` (mean over its
    corners) off, and far worse than the others agree among themselves, was moved, misprinted or misread and
    is left out. (With three markers, any two fit exactly, so a bad one cannot be told apart.) The kept corners
    are fitted by least squares with Levenberg-Marquardt refinement of the error in table mm.

    With three markers or fewer a free homography (8 unknowns) extrapolates poorly across the table; given the
    `camera_matrix`, the plane's pose (6 unknowns) is fitted instead, also for the leave-one-out check.
    """
    ids = sorted(undistorted)
    if len(ids) < 2:
        raise InputError(f"found {len(ids)} corner marker(s); need at least 2")
    src = np.concatenate([np.asarray(undistorted[i], dtype=np.float64).reshape(4, 2) for i in ids])
    dst = np.concatenate([np.asarray(layout.marker(i).corners_mm, dtype=np.float64) for i in ids])
    kmat = None if camera_matrix is None else np.asarray(camera_matrix, dtype=np.float64)

    def fit(sel: np.ndarray) -> np.ndarray | None:
        # Three markers or fewer leave a free homography's perspective terms weakly fixed (a few tenths of a
        # pixel at the corners become millimetres at the far side); with a known lens fit the pose instead.
        if kmat is not None and len(sel) <= 12:
            h_pose = _pose_homography(src[sel], dst[sel], kmat)
            if h_pose is not None:
                return h_pose
        h_free, _ = cv2.findHomography(src[sel], dst[sel], 0)
        return h_free

    rejected: list[RejectedMarker] = []
    keep = list(ids)
    if len(ids) >= 4:
        worst, worst_err, worst_ratio = None, 0.0, 0.0
        for k, i in enumerate(ids):
            others = np.array([j for j in range(len(src)) if j // 4 != k])
            h_o = fit(others)
            if h_o is None:
                continue
            own = float(np.linalg.norm(_apply_h(h_o, src[4 * k:4 * k + 4]) - dst[4 * k:4 * k + 4], axis=1).mean())
            rest = float(np.linalg.norm(_apply_h(h_o, src[others]) - dst[others], axis=1).mean())
            ratio = own / (rest + 0.25)
            # Extrapolating from three markers magnifies corner noise; in pixels it stays small, so a marker
            # must also be well over MARKER_REJECT_PX of its own pixels off (mm per px from its printed size).
            mm_per_px = layout.marker_mm / max(float(np.mean(np.linalg.norm(
                np.roll(src[4 * k:4 * k + 4], -1, axis=0) - src[4 * k:4 * k + 4], axis=1))), 1e-6)
            if own > max(reject_mm, MARKER_REJECT_PX * mm_per_px) and ratio > 4.0 and ratio > worst_ratio:
                worst, worst_err, worst_ratio = i, own, ratio
        if worst is not None:
            keep.remove(worst)
            rejected.append(RejectedMarker(worst, f"corners {worst_err:.1f} mm off the other markers' fit "
                                                  "(moved, misprinted or misread)"))
    sel = np.concatenate([np.arange(4) + 4 * ids.index(i) for i in keep])
    h = fit(sel)
    if h is None:
        raise InputError("the corner markers are degenerate (all on one line?); cannot fit the table plane")
    res = np.linalg.norm(_apply_h(h, src) - dst, axis=1).reshape(len(ids), 4)
    return HomographyFit(h, tuple(keep), tuple(rejected), {i: res[k] for k, i in enumerate(ids)})


def battlefield_from_markers(undistorted: Mapping[int, np.ndarray], layout: MarkerLayout,
                             h0: np.ndarray) -> tuple[float, float] | None:
    """The battlefield size the markers imply when their printed size (`marker_mm`) is taken as true.

    Fits the homography jointly with the battlefield width and height (markers 1, 2 shift with the width,
    2, 3 with the height). Needs three markers spanning both directions; None otherwise.
    """
    ids = sorted(undistorted)
    if len(ids) < 3:
        return None
    from scipy.optimize import least_squares

    src = np.concatenate([np.asarray(undistorted[i], dtype=np.float64).reshape(4, 2) for i in ids])
    base = np.concatenate([np.asarray(layout.marker(i).corners_mm, dtype=np.float64) for i in ids])
    sx = np.repeat([1.0 if i in (1, 2) else 0.0 for i in ids], 4)
    sy = np.repeat([1.0 if i in (2, 3) else 0.0 for i in ids], 4)
    # Work in centred, scaled coordinates so the 10 unknowns are of similar size.
    c = src.mean(axis=0)
    s = float(np.std(src - c)) or 1.0
    t = np.array([[1 / s, 0, -c[0] / s], [0, 1 / s, -c[1] / s], [0, 0, 1]])
    hn = h0 @ np.linalg.inv(t)
    hn = hn / hn[2, 2]
    srcn = (src - c) / s

    def resid(p):
        h = np.append(p[:8], 1.0).reshape(3, 3)
        target = base + np.stack([sx * p[8], sy * p[9]], axis=1)
        return (_apply_h(h, srcn) - target).ravel()

    p0 = np.concatenate([hn.ravel()[:8], [0.0, 0.0]])
    sol = least_squares(resid, p0, method="lm", x_scale="jac")
    if not sol.success:
        return None
    return (layout.width_mm + float(sol.x[8]), layout.height_mm + float(sol.x[9]))


def calibrate_table(frame_bgr: np.ndarray, intrinsics: CameraIntrinsics | None = None,
                    layout: MarkerLayout | None = None, *, use_ruler: bool = True,
                    ruler_tolerance: float = RULER_SCALE_TOLERANCE,
                    rectified_px_per_mm: float = DEFAULT_PX_PER_MM,
                    margin_mm: float = DEFAULT_MARGIN_MM,
                    markers: Mapping[int, DetectedMarker] | None = None,
                    estimate_distortion: bool = True) -> TableCalibration:
    """Calibrate the table plane from one frame showing at least two corner markers.

    The homography is fitted to the layout (battlefield `layout.width_mm` x `height_mm`). If the ruler is seen
    and reads more than `ruler_tolerance` off its true length while the marker fit is good, the ruler's scale
    wins: the battlefield is resized so the marker-centre span matches the ruler, and the markers are refitted
    to it (`scale_source="ruler"`).
    `markers` lets a caller that already ran the detector on this frame pass its result. Without `intrinsics`, the
    lens's radial distortion is estimated from the markers' corners where they call for it (`calibration.lens`;
    `estimate_distortion=False`: a plain homography).
    """
    layout = layout or default_layout()
    gray = to_gray(frame_bgr)
    size = (gray.shape[1], gray.shape[0])
    if intrinsics is not None:
        intrinsics.check_image_size(size, what="the camera intrinsics")
    found = markers if markers is not None else detect_markers(gray, layout.dictionary, ids=layout.all_ids)
    corner_ids = [m.id for m in layout.corners]
    seen = [i for i in corner_ids if i in found]
    if len(seen) < 2:
        missing = ", ".join(str(i) for i in corner_ids if i not in found)
        raise InputError(f"found {len(seen)} of the 4 corner markers (missing ids {missing}); at least 2 must be "
                         "in view, flat and unobstructed")

    warnings: list[str] = []
    # a lens from board photos; one estimated from markers before (a recalibration keeps it) has no true focal length
    given_lens = intrinsics is not None and intrinsics.source != "markers"
    if intrinsics is None and estimate_distortion:
        # no camera.json: the markers' own corners may still tell the lens's bend (`calibration.lens`)
        estimate = estimate_lens(found, layout, size)
        if estimate is not None:
            intrinsics = estimate.intrinsics
            warnings.append(f"no lens intrinsics given: lens distortion estimated from the markers (k1 "
                            f"{estimate.k1:+.3f} at a nominal focal length; corners "
                            f"{estimate.rms_px_without:.2f} -> {estimate.rms_px_with:.2f} px RMS); --intrinsics "
                            "from calibrate-camera is better")

    def undistort(px: np.ndarray) -> np.ndarray:
        return intrinsics.undistort_points(px) if intrinsics is not None else np.asarray(px, dtype=np.float64)

    und = {i: undistort(found[i].corners_px) for i in seen}
    reject_mm = MARKER_REJECT_MM if given_lens else MARKER_REJECT_NO_LENS_MM
    # the plane's pose needs the true focal length: only a given lens has one
    kmat = intrinsics.camera_matrix if given_lens else None
    fit = fit_table_homography(und, layout, reject_mm, kmat)

    def to_layout_mm(px: np.ndarray) -> np.ndarray:
        return _apply_h(fit.homography, undistort(px))

    ruler = measure_ruler(found, to_layout_mm, layout) if use_ruler else None
    used_layout = layout
    scale_source = "markers"
    fit_max = max(float(fit.residuals_mm[i].max()) for i in fit.used_ids)
    if ruler is not None and abs(ruler.scale_error) > ruler_tolerance and fit_max > RULER_TRUST_RESIDUAL_MM:
        # Corner residuals this large mean the table frame itself is bent (usually an uncorrected lens):
        # the ruler's reading then says more about where it lies than about the scale.
        warnings.append(f"the ruler reads {ruler.measured_length_mm:.1f} mm but the marker fit is poor "
                        f"(residuals up to {fit_max:.1f} mm), so its scale is not applied")
    elif ruler is not None and abs(ruler.scale_error) > ruler_tolerance:
        # The fit's scale is set by the marker centres, which lie half a tile outside the battlefield edges:
        # the ruler corrects the centre-to-centre span, and the battlefield is that span minus the tiles.
        k = 1.0 / (1.0 + ruler.scale_error)
        o = layout.tile_mm
        used_layout = dataclasses.replace(layout, width_mm=k * (layout.width_mm + o) - o,
                                          height_mm=k * (layout.height_mm + o) - o)
        fit = fit_table_homography(und, used_layout, reject_mm, kmat)
        scale_source = "ruler"
        warnings.append(f"the ruler reads {ruler.measured_length_mm:.1f} mm in the {layout.width_mm:g} x "
                        f"{layout.height_mm:g} mm marker frame: using the ruler's scale, battlefield "
                        f"{used_layout.width_mm:.1f} x {used_layout.height_mm:.1f} mm")
    # Measure the ruler's band marks in the final frame so they are true mm.
    if ruler is not None and ruler.band_limits_mm is not None and scale_source == "ruler":
        final = measure_ruler(found, lambda px: _apply_h(fit.homography, undistort(px)), used_layout)
        if final is not None:
            ruler = dataclasses.replace(ruler, band_limits_mm=final.band_limits_mm)

    from_markers = None
    if len(fit.used_ids) >= 3:
        try:
            from_markers = battlefield_from_markers({i: und[i] for i in fit.used_ids}, used_layout, fit.homography)
        except (ValueError, np.linalg.LinAlgError, RuntimeError):  # a report, never a reason to fail
            from_markers = None
    if from_markers is not None:
        dw = from_markers[0] / used_layout.width_mm - 1
        dh = from_markers[1] / used_layout.height_mm - 1
        if max(abs(dw), abs(dh)) > 0.01:
            warnings.append(f"the markers' printed size implies a {from_markers[0]:.0f} x {from_markers[1]:.0f} mm "
                            "battlefield: check the sheet was printed at 100% and the mat's size")

    residuals = []
    for i in seen:
        for k in range(4):
            residuals.append(PointResidual(i, k, (float(found[i].corners_px[k, 0]), float(found[i].corners_px[k, 1])),
                                           float(fit.residuals_mm[i][k]), i in fit.used_ids))
    res_used = [r.residual_mm for r in residuals if r.used]
    if res_used and max(res_used) > 1.0:
        hint = " (no lens intrinsics given: try --intrinsics)" if not given_lens else ""
        warnings.append(f"marker corner residuals up to {max(res_used):.2f} mm{hint}")
    if len(fit.used_ids) < 4:
        warnings.append(f"calibrated from {len(fit.used_ids)} corner markers; all 4 give the best accuracy")
    return TableCalibration(
        image_size=size, homography=fit.homography, intrinsics=intrinsics, layout=layout,
        battlefield_mm=(used_layout.width_mm, used_layout.height_mm), battlefield_from_markers_mm=from_markers,
        scale_source=scale_source, ruler=ruler, residuals=tuple(residuals), markers_used=fit.used_ids,
        markers_rejected=fit.rejected, warnings=tuple(warnings), rectified_px_per_mm=rectified_px_per_mm,
        rectified_origin_mm=(-margin_mm, -margin_mm))
