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


def _projected_markers(k1: float, corner_noise: float, tag_noise: float, seed: int = 0) -> dict:
    """Markers seen by a pinhole camera 1.1 m over the table with radial distortion k1 (at f 1400 px), their
    corners disturbed by Gaussian noise (px): the corner markers by `corner_noise`, the ruler's tags by `tag_noise`."""
    import cv2

    from calibration.aruco import DetectedMarker

    rng = np.random.default_rng(seed)
    layout = default_layout()
    kmat = np.array([[1400.0, 0, 959.5], [0, 1400.0, 539.5], [0, 0, 1]])
    rvec, tvec = np.array([0.05, -0.03, 0.02]), np.array([-450.0, -450.0, 1100.0])
    ruler_at = np.array([250.0, 380.0])   # the ruler's start end on the table, at 20 degrees
    c, s = np.cos(np.radians(20)), np.sin(np.radians(20))
    found = {}
    for m in layout.corners + layout.ruler_markers:
        mm = np.asarray(m.corners_mm, np.float64)
        noise = corner_noise
        if m.frame == "ruler":
            mm = ruler_at + mm @ np.array([[c, s], [-s, c]])
            noise = tag_noise
        obj = np.concatenate([mm, np.zeros((4, 1))], axis=1)
        px, _ = cv2.projectPoints(obj, rvec, tvec, kmat, np.array([k1, 0.0, 0.0, 0.0]))
        found[m.id] = DetectedMarker(m.id, px.reshape(4, 2) + rng.normal(0, noise, (4, 2)))
    return found


def test_the_lens_is_recovered_with_noisy_ruler_tags():
    # the ruler's small tags read four times less precisely than the corner markers
    found = _projected_markers(-0.1, corner_noise=0.1, tag_noise=0.4)
    est = estimate_lens(found, default_layout(), (1920, 1080))
    assert est is not None
    # the nominal focal length (1920 px) against the true 1400 px rescales k1 by (1920 / 1400)^2
    assert est.k1 == pytest.approx(-0.1 * (1920 / 1400) ** 2, rel=0.25)


@pytest.mark.parametrize("tag_noise", [0.1, 0.4])
def test_no_distortion_no_estimate(tag_noise):
    found = _projected_markers(0.0, corner_noise=0.1, tag_noise=tag_noise)
    assert estimate_lens(found, default_layout(), (1920, 1080)) is None


DATA = "/usr/share/doc/opencv-doc/examples/data"


@pytest.mark.skipif(not __import__("os").path.exists(f"{DATA}/left_intrinsics.yml"),
                    reason="Debian's opencv-doc (left01..14.jpg) is not installed")
def test_a_real_lens_is_estimated_from_one_photo_of_a_plane():
    # OpenCV's real chessboard photos (640 x 480, a lens calibrated at k1 -0.27 with f 536 px): from one photo
    # alone, the one-coefficient model fits the board's corners nearly as well as the calibrated lens does, where a
    # homography alone is off by a pixel or two; its k1 at the nominal focal length (640 px) is the true lens's
    import cv2

    from calibration.lens import fit_radial_lens

    fs = cv2.FileStorage(f"{DATA}/left_intrinsics.yml", cv2.FILE_STORAGE_READ)
    kmat, dist = fs.getNode("camera_matrix").mat(), fs.getNode("distortion_coefficients").mat().ravel()
    board_mm = np.array([[x * 25.0, y * 25.0] for y in range(6) for x in range(9)])
    ratios, k1s = [], []
    for k in (1, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14):
        grey = cv2.imread(f"{DATA}/left{k:02d}.jpg", cv2.IMREAD_GRAYSCALE)
        ok, corners = cv2.findChessboardCorners(grey, (9, 6))
        assert ok
        corners = cv2.cornerSubPix(grey, corners, (11, 11), (-1, -1),
                                   (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 30, 0.01)).reshape(-1, 2)
        h, _ = cv2.findHomography(board_mm, corners, 0)
        plain = np.sqrt(((cv2.perspectiveTransform(board_mm.reshape(-1, 1, 2), h).reshape(-1, 2) - corners) ** 2)
                        .sum(1).mean())
        est = fit_radial_lens((grey.shape[1], grey.shape[0]), board_mm, corners)
        assert est is not None
        ratios.append(est.rms_px_with / plain)
        k1s.append(est.k1)
    assert np.median(ratios) < 0.3       # measured 0.11-0.6 per photo (left13: 0.48 px, as the true lens)
    true_k1 = dist[0] * (640.0 / kmat[0, 0]) ** 2
    assert np.median(k1s) == pytest.approx(true_k1, rel=0.15)
