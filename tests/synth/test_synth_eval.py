"""The evaluation harness's scoring (table-driven) and the HoughCircles baseline on a rendered frame."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tablesight.scene import Disk, Player, Scene
from vision.synth.seeds import (GATE_SEEDS, TEST_SEEDS, TUNING_SEEDS, WORLD_GATE_SEEDS, WORLD_TRAINING_SEEDS,
                                WORLD_TUNING_SEEDS, WORLD_VERDICT_SEEDS)

_spec = importlib.util.spec_from_file_location(
    "synth_eval_vision", Path(__file__).resolve().parents[2] / "benchmarks" / "eval_vision.py")
ev = importlib.util.module_from_spec(_spec)
sys.modules["synth_eval_vision"] = ev  # dataclasses look their module up while the file executes
_spec.loader.exec_module(ev)

DIAM = (44.0, 64.0, 89.0)


def _truth(*disks) -> Scene:
    return Scene(disks=tuple(Disk(id=i, x_mm=x, y_mm=y, radius_mm=r, z=z, size=s, player="a",
                                  extra={"visible_fraction": v}) for i, x, y, r, z, s, v in disks),
                 players=(Player("a", 1),))


def _det(*disks) -> Scene:
    return Scene(disks=tuple(Disk(id=i, x_mm=x, y_mm=y, radius_mm=r, z=z) for i, x, y, r, z in disks))


def test_synth_seed_ranges_are_disjoint():
    assert not set(TUNING_SEEDS) & set(GATE_SEEDS)
    assert not set(TEST_SEEDS) & (set(TUNING_SEEDS) | set(GATE_SEEDS))
    ranges = [TUNING_SEEDS, GATE_SEEDS, TEST_SEEDS, WORLD_TRAINING_SEEDS, WORLD_VERDICT_SEEDS, WORLD_TUNING_SEEDS,
              WORLD_GATE_SEEDS]
    for i, a in enumerate(ranges):
        for b in ranges[i + 1:]:
            assert not set(a) & set(b)


@pytest.mark.parametrize("offset, matched", [(0.0, True), (5.0, True), (5.4, True), (5.6, False), (20.0, False)])
def test_synth_match_within_a_quarter_radius(offset, matched):
    truth = _truth(("t1", 100, 100, 22, 0, "small", 1.0))
    det = _det(("x", 100 + offset, 100, 22, 0))
    assert (ev.match(truth, det) == {"x": "t1"}) is matched


def test_synth_match_is_one_to_one_nearest_first():
    truth = _truth(("t1", 100, 100, 22, 0, "small", 1.0))
    det = _det(("x", 103, 100, 22, 0), ("y", 101, 100, 22, 0))
    assert ev.match(truth, det) == {"y": "t1"}


def test_synth_match_credits_the_visible_disk_of_a_near_centred_stack():
    """Regression: the top disk of a near-centred stack of two same-size disks was counted missed, its
    detection credited to the hidden disk under it, whose centre lay nearer."""
    truth = _truth(("top", 102, 100, 32, 1, "medium", 1.0), ("under", 100, 100, 32, 0, "medium", 0.05))
    det = _det(("x", 100.5, 100, 32, 1))
    assert ev.match(truth, det) == {"x": "top"}


@pytest.mark.parametrize("case, dets, expect", [
    ("perfect", [("x", 100, 100, 22, 0), ("y", 300, 300, 32, 0)],
     dict(found_v=1, found_p=1, detections=2, err=0.0)),
    ("false positive", [("x", 100, 100, 22, 0), ("z", 600, 600, 22, 0)],
     dict(found_v=1, found_p=0, detections=2, err=0.0)),
    ("hidden disk found is no error", [("h", 500, 500, 22, 0)],
     dict(found_v=0, found_p=0, detections=0, err=None)),
    ("off by 3 mm", [("x", 103, 100, 22, 0)], dict(found_v=1, found_p=0, detections=1, err=3.0)),
])
def test_synth_score_frame(case, dets, expect):
    truth = _truth(("t1", 100, 100, 22, 0, "small", 0.9), ("t2", 300, 300, 32, 0, "medium", 0.3),
                   ("t3", 500, 500, 22, 0, "small", 0.1))
    t = ev.Tally()
    ev.score_frame(t, truth, _det(*dets), DIAM)
    assert t.present == {"visible": 1, "partly": 1}, case
    assert t.found["visible"] == expect["found_v"] and t.found["partly"] == expect["found_p"], case
    assert t.detections == expect["detections"], case
    if expect["err"] is None:
        assert not t.centre_err_mm
    else:
        assert t.centre_err_mm[0] == pytest.approx(expect["err"])


@pytest.mark.parametrize("dz, ok", [(1, 1), (-1, 0), (0, 0)])
def test_synth_stacking_order_scored_on_overlapping_pairs(dz, ok):
    truth = _truth(("lo", 100, 100, 32, 0, "medium", 0.6), ("hi", 130, 100, 32, 1, "medium", 1.0),
                   ("far", 400, 400, 22, 0, "small", 1.0))
    det = _det(("a", 100, 100, 32, 0), ("b", 130, 100, 32, dz), ("c", 400, 400, 22, 5))
    t = ev.Tally()
    ev.score_frame(t, truth, det, DIAM)
    assert t.order_n == 1 and t.order_ok == ok


def test_synth_baseline_finds_disks_on_easy_frames():
    from vision.baseline import detect
    from vision.synth.camera import table_camera
    from vision.synth.render import render_frame
    from vision.synth.scenes import random_table
    from vision.synth.tiers import TIERS
    from vision.synth.truth import truth_calibration

    t = ev.Tally()
    for seed in TEST_SEEDS[6:9]:
        cam = table_camera(seed, TIERS["easy"].camera, "1080p")
        fr = render_frame(random_table(seed, "easy"), cam)
        ev.score_frame(t, fr.scene, detect(fr.image, truth_calibration(cam), DIAM), DIAM)
    m = ev.metrics(t)
    assert t.present["visible"] >= 15
    assert m["recall >=50% visible"] >= 0.5 and m["precision (>=25% visible)"] >= 0.5, m
    assert m["centre error median (mm)"] < 3.0
