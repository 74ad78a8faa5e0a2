"""`tablesight calibrate-camera` and `tablesight calibrate` end to end on files; bad input gives one line."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from calib_frames import board_set, table_scene
from calibration.camera import CameraIntrinsics
from tablesight.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("calib")
    _, photos = board_set(101)
    boards = []
    for k, p in enumerate(photos[:8]):
        path = d / f"board_{k:02d}.png"
        cv2.imwrite(str(path), p)
        boards.append(str(path))
    frame, *_ = table_scene(105)
    cv2.imwrite(str(d / "frame.png"), frame)
    return d, boards


def test_calibrate_camera_then_table(files, capsys):
    d, boards = files
    (d / "notes.txt").write_text("not an image")
    assert main(["calibrate-camera", *boards, str(d / "notes.txt"), "-o", str(d / "camera.json"),
                 "--square-mm", "30"]) == 0
    out = capsys.readouterr().out
    assert "RMS reprojection error" in out and "rejected" in out and "notes.txt: not a readable image" in out
    cam = CameraIntrinsics.load(d / "camera.json")
    assert cam.rms_px < 0.3 and cam.images_used == 8
    assert main(["calibrate", str(d / "frame.png"), "--intrinsics", str(d / "camera.json"),
                 "-o", str(d / "table.json")]) == 0
    out = capsys.readouterr().out
    assert "marker 0: corner residuals" in out and "ruler: measures" in out and "scale from the markers" in out
    doc = json.loads((d / "table.json").read_text())
    assert doc["format"] == "tablesight.table/1" and doc["markers_used"] == [0, 1, 2, 3]
    assert doc["residual_max_mm"] < 1.0


def test_calibrate_without_a_lens_file_says_it_estimated_the_lens(files, capsys):
    d, _ = files
    assert main(["calibrate", str(d / "frame.png"), "-o", str(d / "plain.json")]) == 0
    out = capsys.readouterr().out
    assert "lens distortion estimated from the markers" in out and "--intrinsics" in out
    doc = json.loads((d / "plain.json").read_text())
    assert doc["intrinsics"]["source"] == "markers" and doc["residual_max_mm"] < 1.0


@pytest.mark.parametrize("argv, message", [
    (["calibrate", "{d}/missing.png", "-o", "{d}/t.json"], "no such file"),
    (["calibrate", "{d}/frame.png", "--intrinsics", "{d}/small.json", "-o", "{d}/t.json"], "this one is 1920x1080"),
    (["calibrate", "{d}/blank.png", "-o", "{d}/t.json"], "found 0 of the 4 corner markers"),
    (["calibrate", "{d}/frame.png", "-o", "{d}/nowhere/t.json"], "does not exist"),
    (["calibrate", "{d}/frame.png", "--battlefield-mm", "huge", "-o", "{d}/t.json"], "--battlefield-mm"),
    (["calibrate-camera", "{d}/blank.png", "-o", "{d}/c.json"], "usable board image"),
    (["calibrate-camera", "{d}/frame.png", "--board", "hexagons:3x3", "-o", "{d}/c.json"], "unknown kind"),
])
def test_bad_input_is_one_line_and_exit_2(files, capsys, argv, message):
    d, _ = files
    cv2.imwrite(str(d / "blank.png"), np.full((1080, 1920, 3), 90, np.uint8))
    CameraIntrinsics(np.array([[500.0, 0, 320], [0, 500, 240], [0, 0, 1]]), np.zeros(5), (640, 480)).save(
        d / "small.json")
    assert main([a.format(d=d) for a in argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (d / "t.json").exists()
