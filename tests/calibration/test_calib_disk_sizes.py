"""Disk diameters measured from disks laid apart on a synthetic table with known sizes."""

from __future__ import annotations

import numpy as np
import pytest

from calib_frames import TableArt, random_pose, table_frame, table_scene, webcam_1080p
from calibration.camera import CameraIntrinsics
from calibration.disk_sizes import _size_classes, measure_disk_diameters
from calibration.table import TableCalibration, calibrate_table
from tablesight.errors import InputError

COLOURS = [(40, 40, 200), (200, 120, 30), (30, 200, 230), (230, 230, 230), (60, 40, 40), (160, 60, 160)]


def _scene(seed, sizes):
    rng = np.random.default_rng(seed)
    disks, placed = [], []
    for k, d in enumerate(sizes):
        while True:
            x, y = rng.uniform(80, 820, 2)
            if all(np.hypot(x - px, y - py) > (d + pd) / 2 + 15 for px, py, pd in placed):
                break
        placed.append((x, y, d))
        disks.append((x, y, d, COLOURS[k % len(COLOURS)]))
    cam = webcam_1080p()
    rvec, tvec = random_pose(seed)
    intr = CameraIntrinsics(cam.K, cam.dist, cam.size)
    with_disks = table_frame(TableArt(seed=seed, disks=disks), cam, rvec, tvec, seed=seed + 1)
    return calibrate_table(with_disks, intr), with_disks


@pytest.mark.parametrize("seed, truth", [
    (151, (43.5, 63.0, 88.0)),
    (152, (45.2, 66.5, 91.0)),
])
def test_three_sizes_are_measured_to_half_a_millimetre(seed, truth):
    sizes = [truth[0]] * 3 + [truth[1]] * 3 + [truth[2]] * 2
    cal, frame = _scene(seed, sizes)
    m = measure_disk_diameters(frame, cal)
    assert m.counts == (3, 3, 2) and m.measured == (True, True, True)
    for got, want in zip(m.diameters_mm, truth):
        assert got == pytest.approx(want, abs=0.5)
    assert all(d.fit_rms_mm < 0.5 for d in m.disks)
    assert m.as_argument() == ",".join(f"{v:.1f}" for v in m.diameters_mm)


def test_sizes_not_laid_out_keep_their_defaults():
    cal, frame = _scene(153, [62.0, 62.0, 90.0])
    m = measure_disk_diameters(frame, cal)
    assert m.measured == (False, True, True) and m.counts == (0, 2, 1)
    assert m.diameters_mm[0] == 44.0
    assert m.diameters_mm[1] == pytest.approx(62.0, abs=0.5)


def test_an_empty_table_is_a_clear_error():
    empty, cam, *_ = table_scene(101, ruler=False)
    cal = calibrate_table(empty, CameraIntrinsics(cam.K, cam.dist, cam.size))
    with pytest.raises(InputError, match="no disks found"):
        measure_disk_diameters(empty, cal)


@pytest.mark.parametrize("diameters, expect", [
    ([44, 44.5, 64, 63.5, 89], [0, 0, 1, 1, 2]),
    ([64, 64.2, 89, 88.5], [1, 1, 2, 2]),
    ([43, 44, 45], [0, 0, 0]),
    ([40, 60, 80], [0, 1, 2]),  # all smaller than the defaults, still three sizes in order
])
def test_size_clusters(diameters, expect):
    assert _size_classes(np.array(diameters, float), (44.0, 64.0, 89.0)).tolist() == expect


def test_calibrate_command_measures_disks(tmp_path, capsys):
    import cv2

    from tablesight.cli import main

    cal, frame = _scene(155, [44.0, 44.0, 64.0, 64.0, 89.0])
    cv2.imwrite(str(tmp_path / "disks.png"), frame)
    cal.intrinsics.save(tmp_path / "camera.json")
    assert main(["calibrate", str(tmp_path / "disks.png"), "--intrinsics", str(tmp_path / "camera.json"),
                 "--measure-disks", str(tmp_path / "disks.png"), "-o", str(tmp_path / "table.json")]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "--disk-diameters-mm" in ln)
    printed = [float(v) for v in line.split("--disk-diameters-mm ")[1].split(",")]
    assert printed == pytest.approx([44.0, 64.0, 89.0], abs=0.5)
    back = TableCalibration.load(tmp_path / "table.json")
    assert back.disk_diameters_mm == pytest.approx((44.0, 64.0, 89.0), abs=0.5)
