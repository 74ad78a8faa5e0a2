"""`tablesight detect` and `tablesight track` through the command line: outputs, timing, bad input."""

from __future__ import annotations

import json

import cv2
import pytest

from tablesight.cli import main
from tablesight.scene import Scene
from vision.synth.drawn import DrawnDisk, draw_table, identity_calibration

DISKS = [DrawnDisk(200, 200, "small", 0, "red"), DrawnDisk(500, 400, "medium", 0, "blue"),
         DrawnDisk(520, 420, "small", 1, "red")]


@pytest.fixture()
def files(tmp_path):
    cal = tmp_path / "table.json"
    identity_calibration().save(cal)
    img = tmp_path / "table.png"
    cv2.imwrite(str(img), draw_table(DISKS, 4))
    return tmp_path, cal, img


def test_detect_prints_one_scene_and_timing(files, capsys):
    _, cal, img = files
    assert main(["detect", str(img), "--calibration", str(cal), "--timing"]) == 0
    out, err = capsys.readouterr()
    scene = Scene.from_json(json.loads(out))
    assert len(scene.disks) == 3
    timing = json.loads(err.strip().splitlines()[-1])
    assert timing["ms"] > 0 and timing["image"].endswith("table.png")


def test_detect_several_images_gives_json_lines(files, capsys):
    _, cal, img = files
    assert main(["detect", str(img), str(img), "--calibration", str(cal),
                 "--disk-diameters-mm", "44,64,89"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and all(Scene.from_json(json.loads(line)) for line in lines)


def test_detect_takes_one_diameter_for_chips_all_of_one_size(tmp_path, capsys):
    cal = tmp_path / "table.json"
    identity_calibration().save(cal)
    img = tmp_path / "chips.png"
    chips = [DrawnDisk(200, 200, "small", 0, "red", radius_mm=19.5), DrawnDisk(500, 400, "small", 0, "blue",
                                                                                radius_mm=19.5)]
    cv2.imwrite(str(img), draw_table(chips, 4))
    assert main(["detect", str(img), "--calibration", str(cal), "--disk-diameters-mm", "39"]) == 0
    scene = Scene.from_json(json.loads(capsys.readouterr().out))
    assert len(scene.disks) == 2 and {(d.size, d.radius_mm) for d in scene.disks} == {("small", 19.5)}


@pytest.mark.parametrize("case, message", [
    ("missing image", "no such file"),
    ("corrupt image", "cannot decode"),
    ("wrong size", "frame is"),
    ("missing calibration", "calibration"),
    ("bad sizes", "--disk-diameters-mm"),
    ("shrinking sizes", "must not shrink"),
])
def test_detect_bad_input_is_one_line(files, capsys, case, message):
    tmp, cal, img = files
    args = ["detect", str(img), "--calibration", str(cal)]
    if case == "missing image":
        args[1] = str(tmp / "nope.png")
    elif case == "corrupt image":
        (tmp / "bad.png").write_bytes(b"garbage")
        args[1] = str(tmp / "bad.png")
    elif case == "wrong size":
        cv2.imwrite(str(tmp / "small.png"), cv2.resize(cv2.imread(str(img)), (320, 240)))
        args[1] = str(tmp / "small.png")
    elif case == "missing calibration":
        args[3] = str(tmp / "nope.json")
    elif case == "shrinking sizes":
        args += ["--disk-diameters-mm", "64,44,89"]
    else:
        args += ["--disk-diameters-mm", "1,2"]
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and message in err


def test_track_folder_gives_one_scene_per_change(files, capsys):
    tmp, cal, _ = files
    frames = tmp / "frames"
    frames.mkdir()
    a, b = draw_table(DISKS[:1], 4), draw_table(DISKS, 4)
    seq = [a] * 8 + [b] * 8
    for i, im in enumerate(seq):
        cv2.imwrite(str(frames / f"f{i:03d}.png"), im)
    assert main(["track", str(frames), "--calibration", str(cal)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    scenes = [Scene.from_json(json.loads(line)) for line in lines]
    assert [len(s.disks) for s in scenes] == [1, 3]
    assert scenes[0].disks[0].id in {d.id for d in scenes[1].disks}


def test_track_bad_video_is_one_line(files, capsys):
    tmp, cal, _ = files
    (tmp / "clip.avi").write_bytes(b"nope")
    assert main(["track", str(tmp / "clip.avi"), "--calibration", str(cal)]) == 2
    assert "cannot decode" in capsys.readouterr().err
    assert main(["track", str(tmp / "none.avi"), "--calibration", str(cal)]) == 2


def test_detect_says_where_a_disk_may_lie_and_report_reads_the_scene(tmp_path, capsys):
    # Test seed 503 in a training family's room: one frame's eye suspects a small disk lying on a larger one and
    # the nest judge does not take it (`suspected_disks`, tests/vision/test_vision_detect.py); the CLI's scene
    # carries it, and `report` reads that scene as any other.
    from vision.synth.render import render_frame
    from vision.synth.seeds import TEST_SEEDS
    from vision.synth.truth import truth_calibration
    from vision.synth.world import world_table

    setup, camera = world_table(TEST_SEEDS[3], "photo-thin-felt")
    diam = ",".join(f"{v:g}" for v in setup.diameters_mm)
    truth_calibration(camera, tuple(setup.diameters_mm)).save(tmp_path / "table.json")
    cv2.imwrite(str(tmp_path / "frame.png"), render_frame(setup, camera).image)
    assert main(["detect", str(tmp_path / "frame.png"), "--calibration", str(tmp_path / "table.json"),
                 "--disk-diameters-mm", diam]) == 0
    doc = json.loads(capsys.readouterr().out)
    ids = {d["id"] for d in doc["disks"]}
    assert doc["suspected_disks"] and all(s["on"] in ids for s in doc["suspected_disks"])
    (tmp_path / "scene.json").write_text(json.dumps(doc))
    assert main(["report", str(tmp_path / "scene.json")]) == 0
    assert "pins" in json.loads(capsys.readouterr().out)
