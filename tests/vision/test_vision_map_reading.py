"""The map-reading benchmark's split of face pixels by where they lie, and its refusals."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

_spec = importlib.util.spec_from_file_location(
    "vision_map_reading", Path(__file__).resolve().parents[2] / "benchmarks" / "map_reading.py")
mr = importlib.util.module_from_spec(_spec)
sys.modules["vision_map_reading"] = mr
_spec.loader.exec_module(mr)


@pytest.mark.parametrize("face, height, over, group", [
    (1.0, 0.0, 1, "on the table, nothing beneath"),
    (1.0, 0.5, 2, "raised, over a lower disk"),
    (1.0, 0.5, 1, "raised, out over the table"),     # a disk partly on another, out past the lower one's edge
    (1.0, 1.0, 3, "two or more up, over lower disks"),
    (0.0, 0.5, 2, None),                              # not a face: in no group
])
def test_face_pixels_fall_in_the_group_of_where_they_lie(face, height, over, group):
    groups = mr.face_groups(np.full((1, 1), face), np.full((1, 1), height), np.full((1, 1), over))
    holding = {name for name, g in groups.items() if g[0, 0]}
    if group is None:
        assert not holding
    else:
        assert group in holding
        assert holding <= {group, "raised, over a lower disk"}   # two up is raised over a lower disk as well


@pytest.mark.parametrize("argv", [["--model", "no-such.onnx"], ["--frames", "0"]])
def test_bad_arguments_are_one_line(argv, capsys):
    assert mr.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("map_reading: ") and err.count("\n") == 1
