"""The miss trace on a folder of frames with their true scenes (`benchmarks/miss_modes.py --folder`): it calibrates
as the command line does, finds what the single frame finds, and refuses bad arguments in one line."""

from __future__ import annotations

import sys
from pathlib import Path

import cv2
import pytest

_ROOT = Path(__file__).resolve().parents[2]
for _p in (str(_ROOT), str(_ROOT / "benchmarks")):   # the script imports its neighbours as top-level modules
    if _p not in sys.path:
        sys.path.insert(0, _p)
import miss_modes as mm  # noqa: E402


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from vision.synth.seeds import TEST_SEEDS
    from vision.synth.writer import write_folder

    out = tmp_path_factory.mktemp("frames")
    # a table where the eye misses a disk lying nearly concentric on a larger one: the trace has one to agree on
    write_folder(out, seed=TEST_SEEDS[6], count=1, tier="standard", boards=0)
    return out


@pytest.mark.slow
def test_a_folder_is_traced_as_the_single_frame_detects_it(folder, tmp_path):
    """The trace of a calibrated frame misses exactly the disks >= 50 % visible that `detect_frame` misses with the
    same calibration, and the report names the frame's look and counts its frame."""
    from eval_cli import truth_scene

    from vision.detect import detect_frame
    from vision.scene_match import match, visible_fraction

    diameters = (44.0, 64.0, 89.0)
    (look, image, truth, cal), = list(mm.folder_frames(folder, diameters, None, tmp_path))
    assert look == "frame_"
    matched = match(truth, detect_frame(image, cal, diameters))
    missed = [t.id for t in truth.disks if visible_fraction(t) >= 0.5 and t.id not in set(matched.values())]
    misses, _, cover, _ = mm.trace_image(image, truth, cal, diameters)
    assert len(misses) == len(missed)
    assert sum(1 for _, _, found in cover if not found) == len(missed)
    assert len(cover) == sum(1 for t in truth_scene(folder / "frame_0000.scene.json", diameters).disks
                             if not t.extra.get("held") and visible_fraction(t) >= 0.5)

    out = tmp_path / "misses.md"
    assert mm.main(["--folder", str(folder), "--out", str(out)]) == 0
    text = out.read_text()
    assert "folder `" in text and f"| frame_ | 1 | {len(missed)} |" in text


def test_a_frame_that_cannot_be_calibrated_is_left_out(tmp_path, capsys):
    """A frame without markers is said on stderr and not traced."""
    import numpy as np

    (tmp_path / "blank_0.scene.json").write_text('{"format": "tablesight.scene/1", "disks": []}', encoding="utf-8")
    cv2.imwrite(str(tmp_path / "blank_0.png"), np.full((480, 640, 3), 90, np.uint8))
    assert list(mm.folder_frames(tmp_path, (44.0, 64.0, 89.0), None, tmp_path)) == []
    assert "blank_0.png: calibrate:" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--folder", "no-such-folder"], "no such folder"),
    (["--folder", ".", "--disk-diameters-mm", "44,64"], "three positive numbers"),
    (["--folder", ".", "--disk-diameters-mm", "a,b,c"], "three positive numbers"),
    (["--folder", ".", "--tier", "piled"], "--tier choose rendered frames"),
    (["--folder", ".", "--frames", "2", "--family", "classic"], "--frames, --family choose rendered frames"),
])
def test_bad_folder_arguments_one_line(argv, message, capsys):
    assert mm.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
