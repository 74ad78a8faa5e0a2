"""The range ruler found anywhere on the table and measured in table mm."""

from __future__ import annotations

import numpy as np
import pytest

from calib_frames import TableArt, random_pose, table_frame, webcam_1080p
from calibration.camera import CameraIntrinsics
from calibration.layout import default_layout
from calibration.ruler import RulerCheck, measure_ruler_in_frame
from calibration.table import calibrate_table


def _frame(seed, ruler, band_tags=False):
    cam = webcam_1080p()
    rvec, tvec = random_pose(seed)
    frame = table_frame(TableArt(seed=seed, ruler=ruler, ruler_band_tags=band_tags), cam, rvec, tvec, seed=seed)
    return frame, CameraIntrinsics(cam.K, cam.dist, cam.size)


@pytest.mark.parametrize("seed, ruler", [
    (131, (100.0, 100.0, 0.0)),      # near the top-left corner, along x
    (132, (450.0, 300.0, 90.0)),     # mid-table, along y
    (133, (700.0, 750.0, -150.0)),   # bottom-right, pointing back
    (134, (300.0, 650.0, 33.0)),
])
def test_ruler_measures_300_mm_anywhere(seed, ruler):
    frame, intr = _frame(seed, ruler)
    cal = calibrate_table(frame, intr)
    r = cal.ruler
    assert r is not None and r.tags_seen == (4, 5)
    assert r.measured_length_mm == pytest.approx(300.0, abs=0.6)
    assert abs(r.scale_error_percent) < 0.2
    # The start end is where the ruler was laid.
    assert np.hypot(r.start_mm[0] - ruler[0], r.start_mm[1] - ruler[1]) < 1.0
    assert r.band_limits_mm is None and r.range_bands_mm() is None


def test_band_tags_give_the_range_bands():
    frame, intr = _frame(135, (200.0, 420.0, 15.0), band_tags=True)
    cal = calibrate_table(frame, intr)
    bands = cal.ruler.range_bands_mm()
    assert bands is not None
    assert bands["short"] == pytest.approx(100.0, abs=0.7)
    assert bands["medium"] == pytest.approx(200.0, abs=0.7)
    assert bands["long"] == pytest.approx(300.0, abs=0.7)


def test_no_ruler_means_no_check():
    frame, intr = _frame(136, None)
    cal = calibrate_table(frame, intr)
    assert cal.ruler is None and cal.scale_source == "markers"


def test_ruler_measured_in_a_later_frame():
    frame, intr = _frame(137, None)
    cal = calibrate_table(frame, intr)
    cam = webcam_1080p()
    rvec, tvec = random_pose(137)
    later = table_frame(TableArt(seed=137, ruler=(500.0, 200.0, 120.0)), cam, rvec, tvec, seed=1137)
    r = measure_ruler_in_frame(later, cal)
    assert r is not None and r.measured_length_mm == pytest.approx(300.0, abs=0.6)


def test_ruler_check_json_round_trip():
    r = RulerCheck(300.0, 301.5, 0.005, (1.0, 2.0), (3.0, 4.0), 24.1, (4, 5, 6, 7), (100.2, 199.9, 301.5))
    back = RulerCheck.from_json(r.to_json())
    assert back.to_json() == r.to_json()
    assert back.range_bands_mm() == {"short": 100.2, "medium": 199.9, "long": 301.5}


def test_layout_band_tags_sit_on_the_band_limits():
    layout = default_layout()
    assert [t.id for t in layout.ruler_band_tags] == [6, 7]
    assert [t.center_mm[0] for t in layout.ruler_band_tags] == [100.0, 200.0]
    assert [t.id for t in layout.all_markers] == [0, 1, 2, 3, 4, 5]  # what the renderer draws is unchanged
