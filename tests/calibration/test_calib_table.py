"""Table plane calibration on synthetic frames with known truth: accuracy, robustness, rectification, files."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from calib_frames import (TableArt, battlefield_grid, board_set, project, random_pose, table_frame, table_scene,
                          webcam_1080p)
from calibration.aruco import detect_markers
from calibration.camera import BoardSpec, CameraIntrinsics, calibrate_camera_images
from calibration.layout import default_layout
from calibration.table import TableCalibration, calibrate_table
from tablesight.errors import InputError


def true_intrinsics(cam) -> CameraIntrinsics:
    return CameraIntrinsics(cam.K, cam.dist, cam.size)


def mapping_error(cal: TableCalibration, cam, rvec, tvec, layout=None) -> np.ndarray:
    """Table-mm error of the calibrated mapping at every 25 mm over the battlefield."""
    grid = battlefield_grid(layout or default_layout())
    px = project(cam, rvec, tvec, grid)
    return np.linalg.norm(cal.image_to_table(px) - grid, axis=1)


@pytest.mark.parametrize("seed", [101, 102, 103])
def test_mapping_error_with_calibrated_lens_is_sub_millimetre(seed):
    frame, cam, rvec, tvec, _ = table_scene(seed)
    bcam, photos = board_set(101)
    intr = calibrate_camera_images([(str(i), p) for i, p in enumerate(photos)],
                                   BoardSpec("chessboard", 9, 6, 30.0)).intrinsics
    cal = calibrate_table(frame, intr)
    err = mapping_error(cal, cam, rvec, tvec)
    assert err.mean() < 0.5 and err.max() < 1.5
    assert cal.markers_used == (0, 1, 2, 3) and not cal.markers_rejected
    assert cal.residual_max_mm < 1.0
    assert cal.scale_source == "markers"


def test_without_intrinsics_or_estimate_the_lens_costs_millimetres_and_says_so():
    frame, cam, rvec, tvec, _ = table_scene(101)
    cal = calibrate_table(frame, estimate_distortion=False)
    err = mapping_error(cal, cam, rvec, tvec)
    assert err.max() > 2.0  # the distortion is real and uncorrected...
    assert any("--intrinsics" in w for w in cal.warnings)  # ...and the user is told how to fix it
    assert cal.scale_source == "markers"  # a bent frame must not let the ruler rescale it


@pytest.mark.parametrize("keep", [(0, 2), (1, 3), (0, 1), (0, 1, 2)])
def test_any_two_or_more_markers_calibrate(keep):
    frame, cam, rvec, tvec, art = table_scene(102)
    found = detect_markers(frame, ids=set(keep) | {4, 5})
    cal = calibrate_table(frame, true_intrinsics(cam), markers=found)
    assert cal.markers_used == keep
    err = mapping_error(cal, cam, rvec, tvec)
    assert err.mean() < 1.5 and err.max() < 5.0


def test_fewer_than_two_markers_is_a_clear_error():
    frame, cam, *_ = table_scene(102)
    with pytest.raises(InputError, match="found 1 of the 4 corner markers"):
        calibrate_table(frame, true_intrinsics(cam), markers=detect_markers(frame, ids={3}))
    with pytest.raises(InputError, match="found 0 of the 4"):
        calibrate_table(np.full((1080, 1920, 3), 90, np.uint8))


@pytest.mark.parametrize("moved_id, shift_mm", [(1, (12.0, 0.0)), (3, (0.0, -8.0)), (2, (6.0, 6.0))])
def test_one_moved_marker_is_rejected_and_the_rest_stay_accurate(moved_id, shift_mm):
    cam = webcam_1080p()
    rvec, tvec = random_pose(111)
    layout = default_layout()
    moved = np.asarray(layout.marker(moved_id).corners_mm) + np.asarray(shift_mm)
    frame = table_frame(TableArt(marker_corners_mm={moved_id: moved}, seed=111), cam, rvec, tvec, seed=111)
    cal = calibrate_table(frame, true_intrinsics(cam))
    assert [m.marker_id for m in cal.markers_rejected] == [moved_id]
    assert moved_id not in cal.markers_used
    err = mapping_error(cal, cam, rvec, tvec)
    assert err.mean() < 0.6 and err.max() < 2.0
    assert all(not r.used for r in cal.residuals if r.marker_id == moved_id)


def test_three_foot_mat_ruler_fixes_the_scale():
    """Markers around a 914 mm mat, calibrated with the 900 mm default layout: the ruler reads short."""
    cam = webcam_1080p()
    rvec, tvec = random_pose(121, target=(457.0, 457.0), distance=(1180.0, 1200.0))
    mat = default_layout(914.0, 914.0)
    art = TableArt(layout=default_layout(), seed=121, ruler=(250.0, 400.0, 35.0),
                   marker_corners_mm={m.id: np.asarray(m.corners_mm) for m in mat.corners})
    frame = table_frame(art, cam, rvec, tvec, seed=121)
    cal = calibrate_table(frame, true_intrinsics(cam))
    assert cal.ruler is not None and cal.ruler.scale_error == pytest.approx(-14 / 914, abs=0.002)
    assert cal.scale_source == "ruler"
    assert cal.battlefield_mm[0] == pytest.approx(914, abs=2.0)
    assert cal.battlefield_from_markers_mm[0] == pytest.approx(914, abs=8.0)
    err = mapping_error(cal, cam, rvec, tvec, layout=mat)
    assert err.mean() < 0.8 and err.max() < 2.0


def test_ruler_within_tolerance_leaves_the_layout_scale():
    frame, cam, *_ = table_scene(103)
    cal = calibrate_table(frame, true_intrinsics(cam))
    assert cal.ruler is not None and abs(cal.ruler.scale_error) < 0.003
    assert cal.scale_source == "markers" and cal.battlefield_mm == (900.0, 900.0)


def test_rectified_image_puts_table_mm_where_the_geometry_says():
    frame, cam, rvec, tvec, _ = table_scene(104)
    cal = calibrate_table(frame, true_intrinsics(cam))
    assert cal.rectified_size == (980, 980) and cal.rectified_origin_mm == (-40.0, -40.0)
    assert cal.rectify(frame).shape == (980, 980, 3)
    # The markers lie outside the default 40 mm margin: widen it to see them whole, at 1.5 px/mm.
    wide = cal.with_rectified(px_per_mm=1.5, origin_mm=(-100.0, -100.0))
    rect = wide.rectify(frame)
    assert rect.shape == (1650, 1650, 3)
    # Marker corners detected in the rectified view sit where table_to_rectified puts the layout's corners.
    layout = default_layout()
    found = detect_markers(rect, ids={0, 1, 2, 3})
    assert sorted(found) == [0, 1, 2, 3]
    for i, m in found.items():
        expect = wide.table_to_rectified(np.asarray(layout.marker(i).corners_mm))
        assert np.abs(m.corners_px - expect).max() < 0.6
    # The map pair is built once and reused.
    assert cal.rectify_maps()[0] is cal.rectify_maps()[0]


def test_interpolated_rectify_map_matches_the_exact_one():
    frame, cam, *_ = table_scene(104)
    cal = calibrate_table(frame, true_intrinsics(cam)).with_rectified(px_per_mm=0.5)
    m1, m2 = cal.rectify_maps()
    fast = cv2.convertMaps(m1, m2, cv2.CV_32FC2)[0]
    assert np.abs(fast - cal._exact_map()).max() < 0.05


def test_rectified_geometry_round_trips():
    frame, cam, *_ = table_scene(104)
    cal = calibrate_table(frame, true_intrinsics(cam)).with_rectified(px_per_mm=2.5)
    pts = np.array([[0.0, 0.0], [900, 900], [123.4, 567.8]])
    assert np.allclose(cal.rectified_to_table(cal.table_to_rectified(pts)), pts)
    assert np.allclose(cal.table_to_rectified([[-40.0, -40.0]]), [[0.0, 0.0]])
    assert cal.rectified_size == (2450, 2450)
    assert np.allclose(cal.image_to_table(cal.table_to_image(pts)), pts, atol=1e-6)


@pytest.mark.parametrize("shape", [(720, 1280, 3), (1080, 1919, 3), (0, 0, 3)])
def test_frames_of_another_size_are_refused(shape):
    frame, cam, *_ = table_scene(104)
    cal = calibrate_table(frame, true_intrinsics(cam))
    with pytest.raises(InputError):
        cal.rectify(np.zeros(shape, np.uint8))
    with pytest.raises(InputError):
        cal.check_frame(np.zeros(shape, np.uint8))


def test_intrinsics_for_another_size_are_refused():
    frame, cam, *_ = table_scene(104)
    small = CameraIntrinsics(cam.K / 2 + np.diag([0, 0, 0.5]), cam.dist, (960, 540))
    with pytest.raises(InputError, match="960x540"):
        calibrate_table(frame, small)


def test_table_file_round_trip(tmp_path):
    frame, cam, rvec, tvec, _ = table_scene(105)
    cal = calibrate_table(frame, true_intrinsics(cam))
    path = tmp_path / "table.json"
    cal.save(path)
    doc = json.loads(path.read_text())
    assert doc["format"] == "tablesight.table/1" and doc["image_size"] == [1920, 1080] and doc["created"]
    assert len(doc["residuals"]) == 16 and doc["rectified"]["size"] == [980, 980]
    back = TableCalibration.load(path, image_size=(1920, 1080))
    pts = project(cam, rvec, tvec, battlefield_grid(default_layout(), 150.0))
    assert np.allclose(back.image_to_table(pts), cal.image_to_table(pts), atol=1e-6)
    assert back.ruler.to_json() == cal.ruler.to_json() and back.markers_used == cal.markers_used
    assert back.intrinsics.image_size == (1920, 1080)


def test_table_file_for_another_size_is_refused(tmp_path):
    frame, cam, *_ = table_scene(105)
    path = tmp_path / "table.json"
    calibrate_table(frame, true_intrinsics(cam)).save(path)
    with pytest.raises(InputError, match="is for 1920x1080 frames, not 1280x720"):
        TableCalibration.load(path, image_size=(1280, 720))


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("homography"), "missing field 'homography'"),
    (lambda d: d.update(homography=[[1, 0, 0], [0, 1, 0], [0, 0, 0]]), "homography"),
    (lambda d: d.update(format="tablesight.table/9"), "unknown major version"),
    (lambda d: d.update(image_size="big"), "table calibration"),
    (lambda d: d["intrinsics"].update(image_size=[640, 480]), "intrinsics are for 640x480"),
    (lambda d: d.update(scale_source="guess"), "scale_source"),
])
def test_corrupt_table_files_give_one_clear_error(tmp_path, mutate, message):
    frame, cam, *_ = table_scene(105)
    doc = calibrate_table(frame, true_intrinsics(cam)).to_json()
    mutate(doc)
    path = tmp_path / "table.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=message):
        TableCalibration.load(path)


def test_truncated_table_file(tmp_path):
    path = tmp_path / "table.json"
    path.write_text('{"format": "tablesight.table/1", "image_si')
    with pytest.raises(InputError, match="malformed JSON"):
        TableCalibration.load(path)
