"""Lens calibration: real opencv-doc photos, synthetic boards with a known lens, rejection and files."""

from __future__ import annotations

import glob
import json
import os

import cv2
import numpy as np
import pytest

from calib_frames import board_set
from calibration.camera import (BoardSpec, BoardView, CameraIntrinsics, calibrate_camera_images,
                                calibrate_camera_views)
from tablesight.errors import InputError

DATA = "/usr/share/doc/opencv-doc/examples/data"
LEFT = sorted(glob.glob(os.path.join(DATA, "left[0-9][0-9].jpg")))


@pytest.mark.skipif(len(LEFT) < 10, reason="Debian's opencv-doc (left01..14.jpg) is not installed")
def test_real_chessboard_photos_calibrate_below_half_a_pixel():
    images = [(p, cv2.imread(p)) for p in LEFT]
    result = calibrate_camera_images(images, BoardSpec("chessboard", 9, 6, 25.0))
    assert result.intrinsics.rms_px < 0.5
    assert result.intrinsics.image_size == (640, 480)
    assert len(result.used) >= 10
    # The lens of this set is strongly barrel-distorted: k1 clearly negative.
    assert result.intrinsics.dist_coeffs[0] < -0.15


def test_synthetic_boards_recover_the_true_lens():
    cam, photos = board_set(101)
    result = calibrate_camera_images([(f"b{i}", p) for i, p in enumerate(photos)],
                                     BoardSpec("chessboard", 9, 6, 30.0))
    intr = result.intrinsics
    assert intr.rms_px < 0.3
    assert intr.camera_matrix[0, 0] == pytest.approx(cam.K[0, 0], rel=0.01)
    assert intr.camera_matrix[0, 2] == pytest.approx(cam.K[0, 2], abs=5)
    # What matters: where the model sends pixels all over the frame, against the true lens.
    w, h = cam.size
    pts = np.array([[x, y] for x in np.linspace(0, w - 1, 9) for y in np.linspace(0, h - 1, 7)], np.float64)
    true = cv2.undistortPoints(pts.reshape(-1, 1, 2), cam.K, cam.dist, P=cam.K).reshape(-1, 2)
    assert np.abs(intr.undistort_points(pts) - true).max() < 1.0
    assert result.coverage >= 0.5 and not result.warnings


@pytest.mark.parametrize("bad, reason", [
    (np.full((1080, 1920, 3), 128, np.uint8), "no 9x6 chessboard"),
    (np.full((720, 1280, 3), 128, np.uint8), "size 1280x720"),
    (None, "not a readable image"),
])
def test_unusable_images_are_rejected_with_a_reason(bad, reason):
    _, photos = board_set(101)
    images = [(f"b{i}", p) for i, p in enumerate(photos[:6])] + [("bad", bad)]
    result = calibrate_camera_images(images, BoardSpec("chessboard", 9, 6, 30.0))
    assert [r.name for r in result.rejected] == ["bad"]
    assert reason in result.rejected[0].reason


def test_boards_only_in_the_middle_warn_about_coverage():
    """Board views whose corners all fall in the middle of the picture (projected, no image search)."""
    cam, _ = board_set(101)
    board = BoardSpec("chessboard", 9, 6, 30.0)
    obj = board.object_points()
    views = []
    for k in range(6):
        rvec = np.array([0.25 * np.cos(k), 0.25 * np.sin(k), 0.1 * k])
        tvec = np.array([-120.0 + 8 * k, -75.0 - 5 * k, 1100.0 + 40 * k])
        img, _ = cv2.projectPoints(obj, rvec, tvec, cam.K, cam.dist)
        views.append(BoardView(f"v{k}", img.reshape(-1, 2).astype(np.float32), obj))
    result = calibrate_camera_views(views, cam.size)
    assert result.coverage < 0.5
    assert any("cover" in w for w in result.warnings)


def test_too_few_boards_is_a_clear_error():
    with pytest.raises(InputError, match="need at least 3"):
        calibrate_camera_images([("blank", np.full((480, 640), 200, np.uint8))], BoardSpec("chessboard", 9, 6))


def _intr():
    return CameraIntrinsics(np.array([[900.0, 0, 960], [0, 900, 540], [0, 0, 1]]),
                            np.array([-0.1, 0.02, 0.0, 0.0, 0.0]), (1920, 1080), rms_px=0.21)


def test_camera_file_round_trip(tmp_path):
    path = tmp_path / "camera.json"
    a = _intr()
    a.save(path)
    doc = json.loads(path.read_text())
    assert doc["format"] == "tablesight.camera/1" and doc["image_size"] == [1920, 1080] and doc["created"]
    b = CameraIntrinsics.load(path, image_size=(1920, 1080))
    assert np.array_equal(a.camera_matrix, b.camera_matrix) and np.array_equal(a.dist_coeffs, b.dist_coeffs)
    assert b.rms_px == pytest.approx(0.21)


def test_distort_inverts_undistort():
    a = _intr()
    pts = np.array([[5.0, 7.0], [1900, 1070], [960, 540], [300, 900]])
    assert np.abs(a.distort_points(a.undistort_points(pts)) - pts).max() < 1e-6


@pytest.mark.parametrize("content, message", [
    ("{not json", "malformed JSON"),
    ('{"format": "tablesight.table/1"}', "format is 'tablesight.table/1'"),
    ('{"format": "tablesight.camera/2"}', "unknown major version"),
    ('{"format": "tablesight.camera/1", "image_size": [1920, 1080]}', "missing field 'camera_matrix'"),
    ('{"format": "tablesight.camera/1", "image_size": [1920, 1080], "camera_matrix": [[1, 0], [0, 1]],'
     ' "dist_coeffs": [0, 0, 0, 0]}', "3x3"),
])
def test_corrupt_camera_files_give_one_clear_error(tmp_path, content, message):
    path = tmp_path / "camera.json"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        CameraIntrinsics.load(path)


def test_camera_file_for_another_image_size_is_refused(tmp_path):
    path = tmp_path / "camera.json"
    _intr().save(path)
    with pytest.raises(InputError, match="1920x1080 frames, this one is 1280x720"):
        CameraIntrinsics.load(path, image_size=(1280, 720))


@pytest.mark.parametrize("text, ok", [("chessboard:9x6", True), ("charuco:7x5", True), ("chess:9x6", False),
                                      ("chessboard:9", False), ("chessboard:1x6", False)])
def test_board_spec_parsing(text, ok):
    if ok:
        assert BoardSpec.parse(text).cols >= 2
    else:
        with pytest.raises(InputError):
            BoardSpec.parse(text)


def test_charuco_board_photos_calibrate():
    from calib_frames import look_at_pose, render_plane, webcam_1080p

    cam = webcam_1080p()
    board = BoardSpec.parse("charuco:7x5", 30.0)
    ppm = 4.0
    tex = cv2.cvtColor(board.charuco_board().generateImage((int(210 * ppm), int(150 * ppm))), cv2.COLOR_GRAY2BGR)
    rng = np.random.default_rng(161)
    photos = []
    for k in range(8):
        rvec, tvec = look_at_pose((105.0, 75.0), rng.uniform(450, 650), rng.uniform(10, 35), rng.uniform(0, 360),
                                  rng.uniform(-15, 15))
        tvec = tvec + np.array([rng.uniform(-0.3, 0.3) * tvec[2], rng.uniform(-0.2, 0.2) * tvec[2], 0.0])
        photos.append((f"c{k}", render_plane(tex, (-0.5 / ppm, -0.5 / ppm), ppm, cam, rvec, tvec,
                                             background=(200, 200, 200))))
    result = calibrate_camera_images(photos, board)
    assert result.intrinsics.rms_px < 0.5
    assert result.intrinsics.camera_matrix[0, 0] == pytest.approx(cam.K[0, 0], rel=0.03)
