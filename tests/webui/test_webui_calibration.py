"""The calibration page's API on a camera-like feed: a real synthetic frame, a real table calibration."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from webui.feeds import Health, LiveState


@pytest.fixture(scope="module")
def frame_and_calibration():
    seq_mod = importlib.import_module("vision.synth.sequence")
    table = importlib.import_module("calibration.table")
    seq = seq_mod.demo_sequence(7)
    frame, scene, _ = seq[0]
    return frame, scene, table.calibrate_table(frame)


class CameraLikeFeed:
    """What a camera feed offers the calibration page (see webui/calibration_view.py)."""

    kind = "live"

    def __init__(self, frame, scene, calibration):
        from calibration.drift import DriftMonitor

        self.frame = frame
        self.calibration = calibration
        self.drift = DriftMonitor(calibration)
        self.recalibrations = 0
        err = calibration.residual_max_mm
        self._state = LiveState(1, scene, False, None, Health("live", 15.0, 40.0, 12.0, err, ""))

    def start(self): pass
    def stop(self): pass
    def state(self): return self._state
    def wait_for_change(self, after_version, timeout_s): return self._state
    def latest_frame(self): return self.frame

    def recalibrate(self):
        from calibration.table import calibrate_table

        self.calibration = calibrate_table(self.frame)
        self.recalibrations += 1


@pytest.fixture
def camera_client(make_client, frame_and_calibration):
    frame, scene, calib = frame_and_calibration
    feed = CameraLikeFeed(frame, scene, calib)
    c = make_client(feed=feed)
    c.feed = feed
    return c


def test_calibration_numbers_come_from_the_calibration(camera_client):
    doc = camera_client.get("/api/calibration").get_json()
    assert doc["available"] is True
    cal = camera_client.feed.calibration
    assert doc["calibration"]["format"] == "tablesight.table/1"
    assert doc["calibration"]["residual_max_mm"] == pytest.approx(cal.residual_max_mm, abs=1e-3)
    assert len(doc["calibration"]["residuals"]) == len(cal.residuals) > 0
    assert doc["error_mm"] == pytest.approx(cal.residual_max_mm, abs=0.01)
    assert doc["drift"]["status"] == "unchecked"
    assert doc["can_recalibrate"] is True and doc["frame_url"] == "/api/calibration/frame.jpg"


def test_calibration_frame_shows_the_markers(camera_client):
    import cv2

    r = camera_client.get("/api/calibration/frame.jpg")
    assert r.status_code == 200 and r.mimetype == "image/jpeg"
    img = cv2.imdecode(np.frombuffer(r.data, np.uint8), cv2.IMREAD_COLOR)
    frame = camera_client.feed.frame
    assert img.shape == frame.shape
    # Drawn: the annotated frame differs from the raw one, in green around the markers found.
    diff = np.abs(img.astype(int) - frame.astype(int)).sum(axis=2) > 60
    assert diff.mean() > 0.001


def test_recalibrate_button(camera_client):
    r = camera_client.post("/api/calibration/recalibrate", {})
    assert r.status_code == 200
    assert camera_client.feed.recalibrations == 1
    assert r.get_json()["available"] is True


def test_the_table_view_places_the_frame_by_the_calibration(camera_client):
    geo = camera_client.get("/api/view").get_json()["frame_geometry"]
    cal = camera_client.feed.calibration
    (ox, oy), (bw, bh) = cal.rectified_origin_mm, cal.battlefield_mm
    assert geo == {"origin_mm": [ox, oy], "size_mm": [bw - 2 * ox, bh - 2 * oy]}
    # The same span as the calibration's rectified image, whatever scale the page's JPEG is encoded at.
    w, h = cal.rectified_size
    assert geo["size_mm"][0] == pytest.approx(w / cal.rectified_px_per_mm, abs=1.0)
    assert geo["size_mm"][1] == pytest.approx(h / cal.rectified_px_per_mm, abs=1.0)


def test_the_calibration_page_renders(camera_client):
    html = camera_client.get("/calibration").get_data(as_text=True)
    assert "calibration.js" in html


def test_measure_disk_sizes_from_the_current_frame(camera_client):
    r = camera_client.post("/api/calibration/measure-disks", {})
    assert r.status_code == 200, r.get_json()
    m = r.get_json()["measurement"]
    assert set(m["diameters_mm"]) == {"small", "medium", "large"}
    assert r.get_json()["applied"] is False  # this feed cannot take them: the page says how to use them
    # The route answers exactly what the calibration package measures on the feed's current frame.
    from calibration.disk_sizes import measure_disk_diameters

    direct = measure_disk_diameters(camera_client.feed.frame, camera_client.feed.calibration).to_json()
    assert m == direct


def test_measure_disk_sizes_is_refused_for_a_scene_file(client):
    r = client.post("/api/calibration/measure-disks", {})
    assert r.status_code == 409 and "not available" in r.get_json()["error"]
