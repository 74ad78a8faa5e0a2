"""The lens's distortion estimated from one frame's markers when no camera.json is given (`calibration.lens`)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from calib_frames import TableArt, battlefield_grid, project, random_pose, table_frame, table_scene, webcam_1080p
from calibration.aruco import detect_markers
from calibration.layout import default_layout
from calibration.lens import estimate_lens
from calibration.table import TableCalibration, calibrate_table


def mapping_error(cal, cam, rvec, tvec) -> np.ndarray:
    grid = battlefield_grid(default_layout())
    return np.linalg.norm(cal.image_to_table(project(cam, rvec, tvec, grid)) - grid, axis=1)


@pytest.mark.parametrize("seed", [101, 103, 105])
def test_a_bent_lens_is_estimated_from_the_markers(seed):
    # The standard webcam (k1 -0.12, k2 0.04 at f 1000 px): a plain homography is 8-10 mm off over the battlefield
    frame, cam, rvec, tvec, _ = table_scene(seed)
    plain = mapping_error(calibrate_table(frame, estimate_distortion=False), cam, rvec, tvec)
    cal = calibrate_table(frame)
    err = mapping_error(cal, cam, rvec, tvec)
    assert plain.max() > 5.0
    assert err.mean() < 1.2 and err.max() < 2.0, (err.mean(), err.max())
    assert cal.intrinsics is not None and cal.intrinsics.source == "markers"
    assert any("estimated from the markers" in w and "--intrinsics" in w for w in cal.warnings)
    assert cal.residual_max_mm < 1.0


def test_the_estimate_survives_the_calibration_file():
    frame, *_ = table_scene(102)
    cal = calibrate_table(frame)
    again = TableCalibration.from_json(json.loads(json.dumps(cal.to_json())))
    assert again.intrinsics.source == "markers"
    assert np.allclose(again.intrinsics.dist_coeffs, cal.intrinsics.dist_coeffs)
    pts = np.array([[300.0, 200.0], [1500.0, 900.0]])
    assert np.allclose(again.image_to_table(pts), cal.image_to_table(pts))


def test_a_straight_lens_gets_no_estimate():
    cam = webcam_1080p(k1=0.0, k2=0.0, p1=0.0, p2=0.0)
    rvec, tvec = random_pose(104)
    art = TableArt(seed=104, ruler=(300.0, 400.0, 30.0))
    frame = table_frame(art, cam, rvec, tvec, seed=104)
    cal = calibrate_table(frame)
    assert cal.intrinsics is None
    assert mapping_error(cal, cam, rvec, tvec).max() < 1.5


def test_too_few_corner_markers_tell_nothing():
    frame, *_ = table_scene(102)
    layout = default_layout()
    found = detect_markers(frame, ids={0, 1, 4, 5})
    assert estimate_lens(found, layout, (1920, 1080)) is None
    cal = calibrate_table(frame, markers=found)
    assert cal.intrinsics is None
