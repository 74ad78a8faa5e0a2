"""The calibration on the project's synthetic renderer (vision.synth): the two agree on the
marker layout and the calibrated mapping is accurate on its frames (seeds 700-701, outside its named ranges)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

synth = importlib.import_module("vision.synth.render")

from calibration.camera import CameraIntrinsics  # noqa: E402
from calibration.table import calibrate_table  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("seed", [700, 701])
def test_synth_frames_calibrate_accurately(seed):
    from vision.synth.camera import table_camera
    from vision.synth.scenes import random_table
    from vision.synth.tiers import TIERS

    camera = table_camera(seed, TIERS["standard"].camera, "1080p")
    frame = synth.render_frame(random_table(seed, "standard"), camera)
    cal = calibrate_table(frame.image, CameraIntrinsics(camera.camera_matrix, camera.dist_coeffs, camera.image_size))
    visible = {i for i in range(4) if i in frame.markers_px}
    assert len(cal.markers_used) >= min(3, len(visible))
    pts = np.stack(np.meshgrid(np.arange(0, 901, 30.0), np.arange(0, 901, 30.0)), -1).reshape(-1, 2)
    err = np.linalg.norm(cal.image_to_table(camera.project(pts)) - pts, axis=1)
    assert err.mean() < 0.5 and err.max() < 1.5
