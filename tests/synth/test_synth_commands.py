"""`tablesight synth` writes the folder the contracts describe; bad arguments give one clear line."""

from __future__ import annotations

import json

import cv2
import pytest

from tablesight.cli import main
from tablesight.scene import load_scene
from vision.synth.seeds import TEST_SEEDS


def test_synth_folder_layout(tmp_path, capsys):
    out = tmp_path / "s"
    rc = main(["synth", "--seed", str(TEST_SEEDS[3]), "--count", "2", "--out", str(out), "--tier", "easy",
               "--resolution", "720p", "--boards", "3"])
    assert rc == 0
    man = json.loads((out / "manifest.json").read_text())
    assert man["format"] == "tablesight.synth-manifest/1" and man["tier"] == "easy"
    assert man["disk_diameters_mm"] == {"small": 44.0, "medium": 64.0, "large": 89.0}
    assert [f["image"] for f in man["frames"]] == ["frame_0000.jpg", "frame_0001.jpg"]
    for f in man["frames"]:
        img = cv2.imread(str(out / f["image"]))
        assert img.shape == (720, 1280, 3)
        scene = load_scene(out / f["scene"])
        assert scene.disks and all(0.0 <= d.extra["visible_fraction"] <= 1.0 for d in scene.disks)
        assert set(scene.extra["synth"]["markers_px"]) >= {"0", "1", "2", "3", "4", "5"}
    truth = json.loads((out / "camera_truth.json").read_text())
    assert truth["format"] == "tablesight.camera-truth/1" and truth["intrinsics"]["format"] == "tablesight.camera/1"
    first = load_scene(out / man["frames"][0]["scene"]).extra["synth"]["markers_px"]
    assert all(truth["corner_markers_px"][k] == first[k] for k in ("0", "1", "2", "3"))
    assert len(man["boards"]["images"]) == 3
    assert all((out / b).exists() for b in man["boards"]["images"])


def test_synth_boards_calibrate_the_true_lens(tmp_path):
    """The board photos let OpenCV recover the synthetic lens (focal length within 1 %)."""
    import numpy as np

    from vision.synth.boards import ChessboardSpec
    from vision.synth.writer import write_folder

    write_folder(tmp_path, seed=TEST_SEEDS[5], count=1, tier="standard", resolution="720p", boards=10)
    truth = json.loads((tmp_path / "camera_truth.json").read_text())
    spec = ChessboardSpec()
    obj = (spec.object_points() - [spec.margin_mm + spec.square_mm, spec.margin_mm + spec.square_mm, 0]).astype(
        np.float32)
    obj_pts, img_pts = [], []
    for p in sorted((tmp_path / "boards").glob("board_*.png")):
        g = cv2.imread(str(p), cv2.IMREAD_GRAYSCALE)
        ok, c = cv2.findChessboardCorners(g, (9, 6))
        if ok:
            c = cv2.cornerSubPix(g, c, (5, 5), (-1, -1), (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 30, 0.01))
            obj_pts.append(obj)
            img_pts.append(c)
    assert len(img_pts) >= 6
    rms, k, *_ = cv2.calibrateCamera(obj_pts, img_pts, g.shape[::-1], None, None)
    f_true = truth["camera_matrix"][0][0]
    assert rms < 0.5
    assert abs(k[0, 0] - f_true) / f_true < 0.01


@pytest.mark.parametrize("argv, message", [
    (["--count", "0"], "--count must be within"),
    (["--disk-diameters-mm", "44,64"], "--disk-diameters-mm"),
    (["--disk-diameters-mm", "64,44,89"], "growing"),
    (["--disk-diameters-mm", "a,b,c"], "expected three numbers"),
    (["--boards", "-1"], "--boards must be within"),
    (["--tier", "standard", "--count", "1", "--resolution", "720p", "--boards", "0", "--disk-diameters-mm",
      "44,64,400"], "not a disk size"),
])
def test_synth_bad_arguments_one_line(tmp_path, capsys, argv, message):
    rc = main(["synth", "--seed", "1", "--out", str(tmp_path / "x")] + argv)
    err = capsys.readouterr().err
    assert rc == 2
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_synth_negative_seed_one_line(tmp_path, capsys):
    assert main(["synth", "--seed", "-3", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "--seed must be" in err and "Traceback" not in err


@pytest.mark.slow
def test_synth_video_clip_folder(tmp_path):
    out = tmp_path / "clip"
    assert main(["synth", "--seed", str(TEST_SEEDS[8]), "--out", str(out), "--video", "--resolution", "720p",
                 "--boards", "0"]) == 0
    man = json.loads((out / "manifest.json").read_text())
    assert man["video"] in ("clip.mp4", "clip.avi") and (out / man["video"]).stat().st_size > 10_000
    cap = cv2.VideoCapture(str(out / man["video"]))
    n = 0
    while cap.read()[0]:
        n += 1
    assert n == len(man["frames"])
    assert man["stable_frames"] and all(man["frames"][i]["stable"] for i in man["stable_frames"])
    assert [m[0] for m in man["stable_moments"]][0] == 0
    for f in man["frames"]:
        scene = load_scene(out / f["scene"])
        assert scene.extra["synth"]["stable"] == f["stable"]


@pytest.mark.slow
def test_synth_video_cover_clip(tmp_path):
    out = tmp_path / "cover"
    assert main(["synth", "--seed", str(TEST_SEEDS[8]), "--out", str(out), "--video", "--kind", "cover",
                 "--resolution", "720p", "--boards", "0"]) == 0
    man = json.loads((out / "manifest.json").read_text())
    assert man["clip_kind"] == "cover" and len(man["stable_moments"]) >= 2
    # a cover clip leaves some disk 25-50 % visible at a later stable moment
    last = load_scene(out / man["frames"][man["stable_moments"][-1][1]]["scene"])
    assert any(0.25 <= d.extra["visible_fraction"] < 0.5 for d in last.disks)


def test_synth_kind_needs_video(tmp_path, capsys):
    assert main(["synth", "--seed", "1", "--out", str(tmp_path / "x"), "--kind", "cover"]) == 2
    assert "--kind needs --video" in capsys.readouterr().err


def test_synth_out_is_a_file(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["synth", "--seed", "1", "--out", str(f)]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_synth_world_family_folder(tmp_path):
    out = tmp_path / "w"
    assert main(["synth", "--world", "paint-thin-felt", "--seed", "3000", "--count", "1", "--boards", "0",
                 "--out", str(out)]) == 0
    man = json.loads((out / "manifest.json").read_text())
    assert man["tier"] == "paint-thin-felt" and len(man["frames"]) == 1
    scene = load_scene(out / man["frames"][0]["scene"])
    diam = [man["disk_diameters_mm"][k] for k in ("small", "medium", "large")]
    assert all(any(abs(2 * d.radius_mm - x) < 0.01 for x in diam) for d in scene.disks)


@pytest.mark.parametrize("argv, message", [
    (["--world", "photo-thin-velvet"], "unknown family"),
    (["--world", "paint-thin-felt", "--video"], "still frames"),
    (["--world", "paint-thin-felt", "--disk-diameters-mm", "40,60,80"], "its own disk sizes"),
])
def test_synth_world_bad_arguments_one_line(tmp_path, capsys, argv, message):
    assert main(["synth", "--seed", "1", "--count", "1", "--out", str(tmp_path / "o")] + argv) == 2
    assert message in capsys.readouterr().err
