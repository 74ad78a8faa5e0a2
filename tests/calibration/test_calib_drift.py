"""Drift: a bumped camera is noticed and recalibrated; hands over markers and a moved marker are not drift."""

from __future__ import annotations

import numpy as np
import pytest

from calib_frames import TableArt, battlefield_grid, look_at_pose, project, table_frame, webcam_1080p
from calibration.camera import CameraIntrinsics
from calibration.drift import DriftMonitor, DriftSettings
from calibration.layout import default_layout
from calibration.table import calibrate_table

CAM = webcam_1080p()
INTR = CameraIntrinsics(CAM.K, CAM.dist, CAM.size)
POSE = look_at_pose((452.0, 447.0), 1190.0, 5.0, 40.0, 1.5)
BUMPED = look_at_pose((458.0, 441.0), 1188.0, 5.6, 44.0, 1.9)  # a knock: ~6 mm on the table


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def frame(pose=POSE, seed=0, **art):
    return table_frame(TableArt(seed=141, **art), CAM, *pose, seed=seed)


@pytest.fixture(scope="module")
def base():
    return calibrate_table(frame(seed=1), INTR)


def test_a_still_camera_stays_ok(base):
    mon = DriftMonitor(base, DriftSettings(interval_s=5.0), clock=Clock())
    st = mon.check(frame(seed=2))  # the same view, new sensor noise
    assert st.status == "ok" and st.markers_seen == (0, 1, 2, 3)
    assert st.shift_mm < 0.3
    assert mon.calibration is base and st.calibration_version == 0


def test_checks_happen_every_interval():
    clock = Clock()
    cal = calibrate_table(frame(seed=1), INTR)
    mon = DriftMonitor(cal, DriftSettings(interval_s=5.0), clock=clock)
    f = frame(seed=3)
    assert mon.offer(f) is not None  # first frame: checked at once
    clock.t = 4.0
    assert mon.offer(f) is None
    clock.t = 5.5
    assert mon.offer(f).checks == 2
    assert mon.state().last_check_age_s == 0.0


def test_a_bumped_camera_is_confirmed_then_recalibrated(base):
    seen = []
    mon = DriftMonitor(base, DriftSettings(interval_s=5.0), clock=Clock(), on_recalibrated=seen.append)
    moved = frame(BUMPED, seed=4)
    st = mon.offer(moved)
    assert st.status == "moved" and st.shift_mm > 2.0
    assert mon.due()  # the confirmation does not wait for the interval
    st = mon.offer(frame(BUMPED, seed=5))
    assert st.status == "recalibrated" and st.calibration_version == 1 and st.recalibrations == 1
    new = mon.calibration
    assert seen == [new] and new is not base
    grid = battlefield_grid(default_layout(), 50.0)
    err = np.linalg.norm(new.image_to_table(project(CAM, *BUMPED, grid)) - grid, axis=1)
    assert err.mean() < 0.5 and err.max() < 1.5
    assert new.rectified_size == base.rectified_size
    # After recalibration the same view is fine again.
    assert mon.check(frame(BUMPED, seed=6)).status == "ok"


def test_a_hand_over_a_marker_is_not_drift(base):
    mon = DriftMonitor(base, clock=Clock())
    hand = frame(seed=7)
    px = project(CAM, *POSE, np.asarray(default_layout().marker(2).corners_mm)).astype(int)
    x0, y0 = px.min(axis=0) - 25
    x1, y1 = px.max(axis=0) + 25
    hand[y0:y1, x0:x1] = (120, 150, 200)  # a skin-coloured blob over marker 2
    st = mon.check(hand)
    assert st.status == "ok" and st.markers_seen == (0, 1, 3) and "hidden" in st.message


def test_one_marker_moved_on_the_table_is_not_drift(base):
    mon = DriftMonitor(base, DriftSettings(confirm_checks=1), clock=Clock())
    moved = np.asarray(default_layout().marker(1).corners_mm) + (7.0, 4.0)
    st = mon.check(frame(seed=8, marker_corners_mm={1: moved}))
    assert st.status == "ok" and "marker 1" in st.message
    assert mon.calibration is base


def test_camera_moved_with_one_marker_visible_is_stale(base):
    mon = DriftMonitor(base, DriftSettings(confirm_checks=1), clock=Clock())
    f = frame(BUMPED, seed=9)
    for i in (0, 1, 2):  # cover all but marker 3
        px = project(CAM, *BUMPED, np.asarray(default_layout().marker(i).corners_mm)).astype(int)
        (x0, y0), (x1, y1) = px.min(axis=0) - 25, px.max(axis=0) + 25
        f[max(y0, 0):y1, max(x0, 0):x1] = 60
    st = mon.check(f)
    assert st.status == "stale" and st.markers_seen == (3,)
    assert mon.calibration is base


def test_a_frame_of_another_size_is_stale(base):
    mon = DriftMonitor(base, clock=Clock())
    st = mon.check(np.zeros((720, 1280, 3), np.uint8))
    assert st.status == "stale" and "1280x720" in st.message


def test_no_markers_visible_keeps_the_calibration(base):
    mon = DriftMonitor(base, clock=Clock())
    st = mon.check(np.full((1080, 1920, 3), 90, np.uint8))
    assert st.status == "ok" and st.markers_seen == () and "hands" in st.message


@pytest.mark.parametrize("kwargs", [{"interval_s": -1}, {"shift_threshold_mm": 0}, {"confirm_checks": 0}])
def test_settings_are_validated(kwargs):
    with pytest.raises(ValueError):
        DriftSettings(**kwargs)
