"""The stacking judge: the patch it reads (geometry, scale), its answers (antisymmetric, right on plainly drawn
stacks) and a clear line when its file is missing or bad."""

from __future__ import annotations

import numpy as np
import pytest

from tablesight.errors import InputError
from vision.pairjudge import MODEL_PATH, PATCH, Circle, judge_pairs, lens_frame, pair_patch
from vision.synth.drawn import DrawnDisk, draw_table

# drawn tables are 1 px/mm with a 40 mm margin: table mm (x, y) is image px (x + 40, y + 40)
R = {"small": 22.0, "medium": 32.0, "large": 44.5}


def _circle(d: DrawnDisk) -> Circle:
    return Circle(d.x_mm + 40.0, d.y_mm + 40.0, R[d.size])


def test_the_shipped_judge_is_small():
    assert MODEL_PATH.is_file() and MODEL_PATH.stat().st_size < 1_000_000


def test_the_patch_has_the_lens_in_its_middle_and_the_first_disk_on_the_left():
    a, b = Circle(200.0, 300.0, 32.0), Circle(235.0, 275.0, 22.0)
    p = pair_patch(np.zeros((600, 600, 3), np.uint8), a, b)
    assert p.shape == (5, PATCH, PATCH) and p.dtype == np.float32
    c = PATCH // 2
    assert p[3, c, c] < 0 and p[4, c, c] < 0               # the middle lies inside both circles
    assert p[3, c, 2] < p[3, c, -3] and p[4, c, -3] < p[4, c, 2]   # A to the left, B to the right
    # the frame maps the patch's middle row onto the line of centres
    m = lens_frame(a, b)
    left, right = m @ np.array([0.0, c - 0.5, 1.0]), m @ np.array([PATCH - 1.0, c - 0.5, 1.0])
    cross = (right - left)[0] * (b.y - a.y) - (right - left)[1] * (b.x - a.x)
    assert abs(cross) < 1e-6 * np.hypot(*(right - left)) * np.hypot(b.x - a.x, b.y - a.y) + 1e-9


def test_a_finer_image_gives_the_same_patch():
    disks = [DrawnDisk(200, 200, "medium", 0, "red"), DrawnDisk(240, 215, "small", 1, "blue")]
    one = draw_table(disks, 3, size=(560, 560), noise=0.0)
    two = np.repeat(np.repeat(one, 2, axis=0), 2, axis=1)   # the same table at 2 px/mm
    a, b = _circle(disks[1]), _circle(disks[0])
    p1, p2 = pair_patch(one, a, b), pair_patch(two, a, b, px_per_mm=2.0)
    assert np.abs(p1 - p2)[:3].mean() < 0.02 and np.allclose(p1[3:], p2[3:])


def test_circles_must_be_finite_with_a_radius():
    for bad in ((np.nan, 0.0, 5.0), (0.0, 0.0, 0.0), (0.0, np.inf, 3.0)):
        with pytest.raises(ValueError):
            Circle(*bad)


@pytest.mark.parametrize("lower,upper", [
    (DrawnDisk(300, 300, "large", 0, "red"), DrawnDisk(345, 330, "small", 1, "blue")),
    (DrawnDisk(300, 300, "small", 0, "white"), DrawnDisk(335, 300, "medium", 1, "yellow")),
    (DrawnDisk(300, 300, "medium", 0, "blue"), DrawnDisk(300, 350, "medium", 1, "red")),
])
def test_the_judge_orders_plainly_drawn_stacks_either_way_asked(lower, upper):
    img = draw_table([lower, upper], 5)
    lo, up = _circle(lower), _circle(upper)
    logits = judge_pairs(img, [(up, lo), (lo, up)])
    assert logits[0] > 0 > logits[1]
    assert logits[0] == pytest.approx(-logits[1])           # asked either way round, one answer


def test_no_pairs_no_question():
    assert judge_pairs(np.zeros((10, 10, 3), np.uint8), []).shape == (0,)


def test_a_missing_or_corrupt_judge_is_one_clear_line(tmp_path):
    img = np.zeros((200, 200, 3), np.uint8)
    pair = [(Circle(80.0, 100.0, 22.0), Circle(110.0, 100.0, 22.0))]
    with pytest.raises(InputError, match="pair model file is missing.*pair_training"):
        judge_pairs(img, pair, model_path=tmp_path / "nope.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a network")
    with pytest.raises(InputError, match="cannot be read"):
        judge_pairs(img, pair, model_path=bad)
    with pytest.raises(InputError, match="BGR uint8"):
        judge_pairs(img[..., 0], pair)


def test_training_pairs_put_the_upper_disk_first():
    from vision.facemap_training import table_for
    from vision.pair_training import frame_pairs
    from vision.synth.facemaps import face_truth
    from vision.synth.render import render_frame
    from vision.synth.seeds import WORLD_TRAINING_SEEDS

    setup, camera = table_for("classic", WORLD_TRAINING_SEEDS[0], 0)
    examples = frame_pairs(face_truth(render_frame(setup, camera), setup, camera).rect, setup, camera)
    assert examples
    disks = [d for d in setup.disks if d.id not in setup.held]
    for e in examples:
        assert np.hypot(e.a.x - e.b.x, e.a.y - e.b.y) < e.a.r + e.b.r          # they overlap
        # the two disks of the setup these circles are: their radii, and the step from one centre to the other
        # (the rectified frame is the table at 1 px/mm, give or take the parallax of their tops)
        step = np.array([e.b.x - e.a.x, e.b.y - e.a.y])
        cands = [(u, v) for u in disks for v in disks if u is not v and u.radius_mm == e.a.r and
                 v.radius_mm == e.b.r and np.hypot(*(np.array([v.x_mm - u.x_mm, v.y_mm - u.y_mm]) - step)) < 2.0]
        assert cands and all(u.top_height_mm > v.top_height_mm for u, v in cands)
        assert 0.0 <= e.rim_shown <= 1.0


def test_a_few_training_steps_export_a_judge_that_runs(tmp_path):
    pytest.importorskip("torch")
    from vision.pair_training import PairExample, export_onnx, train

    rng = np.random.default_rng(0)
    lower, upper = DrawnDisk(120, 120, "medium", 0, "red"), DrawnDisk(150, 130, "small", 1, "blue")
    img = draw_table([lower, upper], 1, size=(320, 320))
    ex = [PairExample(img, _circle(upper), _circle(lower), 1.0)]
    net = train(ex, ex, steps=3, batch_size=4, seed=int(rng.integers(100)), log_every=3)
    export_onnx(net, tmp_path / "judge.onnx")
    assert judge_pairs(img, [(_circle(upper), _circle(lower))], model_path=tmp_path / "judge.onnx").shape == (1,)


def test_detection_without_the_judge_file_is_one_clear_line(tmp_path, monkeypatch):
    import vision.pairjudge as pairjudge
    from vision.detect import detect_frame
    from vision.synth.drawn import identity_calibration

    img = draw_table([DrawnDisk(300, 300, "medium", 0, "red"), DrawnDisk(335, 310, "small", 1, "blue")], 2)
    monkeypatch.setattr(pairjudge, "MODEL_PATH", tmp_path / "gone.onnx")
    with pytest.raises(InputError, match="pair model file is missing"):
        detect_frame(img, identity_calibration())


@pytest.mark.parametrize("trainer", ["vision.pair_training", "vision.facemap_training", "vision.verdict_training"])
@pytest.mark.parametrize("option", ["--piled-share", "--alike-share"])
@pytest.mark.parametrize("share", ["-0.1", "1.5", "half"])
def test_the_trainers_turn_down_a_tier_share_outside_0_to_1(trainer, option, share, capsys):
    import importlib

    with pytest.raises(SystemExit) as stop:
        importlib.import_module(trainer).main([option, share, "--frames", "1"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"{option}: must be within 0..1" in err and "Traceback" not in err


def test_a_piled_training_frame_gives_the_pairs_of_its_piles():
    from vision.facemap_training import table_for
    from vision.pair_training import frame_pairs
    from vision.synth.facemaps import face_truth
    from vision.synth.render import render_frame
    from vision.synth.seeds import WORLD_TRAINING_SEEDS

    def pairs(tier: str) -> int:
        setup, camera = table_for("classic", WORLD_TRAINING_SEEDS[1], 0, tier)
        return len(frame_pairs(face_truth(render_frame(setup, camera), setup, camera).rect, setup, camera))

    # each disk of a pile lies across one or more others: far more overlapping pairs than on a standard table
    assert pairs("piled") >= 2 * pairs("standard") > 0
