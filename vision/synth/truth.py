"""Exact table calibrations from the camera truth of a synthetic folder (for evaluating detectors apart from the
calibration's own error)."""

from __future__ import annotations

import numpy as np

from vision.synth.camera import SynthCamera


def truth_homography(camera: SynthCamera) -> np.ndarray:
    """Undistorted image px -> table mm on the felt plane (z = 0): the inverse of K [r1 r2 t]."""
    r = camera.rotation
    g = camera.camera_matrix @ np.column_stack([r[:, 0], r[:, 1], camera.tvec])
    h = np.linalg.inv(g)
    return h / h[2, 2]


def truth_calibration(camera: SynthCamera, diameters_mm: tuple[float, float, float] | None = None):
    """A `calibration.table.TableCalibration` that is exact for this camera (true lens and pose)."""
    from calibration.camera import CameraIntrinsics
    from calibration.table import TableCalibration

    intr = CameraIntrinsics(camera_matrix=camera.camera_matrix, dist_coeffs=camera.dist_coeffs,
                            image_size=camera.image_size, rms_px=0.0)
    return TableCalibration(image_size=camera.image_size, homography=truth_homography(camera), intrinsics=intr,
                            disk_diameters_mm=diameters_mm)
