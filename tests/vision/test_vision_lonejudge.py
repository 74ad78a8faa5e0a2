"""The lone judge: the face-less circles the eye asks it about (their outline shown, on no disk found), the patch it
reads, how its answers become disks (nothing when it is off) and a clear line when its file is missing or bad."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from tablesight.errors import InputError
from vision.facemap import FaceMaps
from vision.fit import DEFAULT_CONFIG, DetectorConfig, DiskFit, LoneCircle
from vision.locate import locate_in_maps, lone_circles
from vision.lonejudge import MODEL_PATH, confirmed_lone, judge_lone, lone_patch
from vision.nestjudge import PATCH, Circle
from vision.synth.drawn import DrawnDisk, draw_table

MM = 0.5        # map px per mm
SCALE = 2.0     # rectified px per map px (1 px/mm)
RADII_MM = (22.0, 32.0, 44.5)
ASKED = replace(DEFAULT_CONFIG, lone_probability=0.5)


def drawn_maps(faces, outlines_only, shape=(300, 300)) -> FaceMaps:
    """Maps as a network would give them for disks (x_mm, y_mm, r_mm) read as faces, and for circles whose
    outline shows but whose inside does not read as a face (chips of a heap, a cloth's spots)."""
    yy, xx = np.mgrid[0:shape[0], 0:shape[1]].astype(np.float64)
    face = np.zeros(shape, np.float32)
    rim = np.zeros(shape, np.float32)
    for circles, faced in ((faces, True), (outlines_only, False)):
        for x, y, r in circles:
            d = np.hypot(xx - ((x + 0.5) * MM - 0.5), yy - ((y + 0.5) * MM - 0.5))
            if faced:
                face = np.maximum(face, (d <= r * MM).astype(np.float32))
            rim = np.maximum(rim, np.exp(-0.5 * ((d - r * MM) / 0.75) ** 2).astype(np.float32))
    return FaceMaps(face=face, rim=rim, height=np.zeros(shape, np.float32))


def lone_of(maps, cfg=ASKED):
    rect = np.full((maps.shape[0] * 2, maps.shape[1] * 2, 3), 90, np.uint8)
    fits = locate_in_maps(maps, rect, list(RADII_MM), SCALE, MM, (), cfg)
    return fits, lone_circles(maps, rect, fits, list(RADII_MM), SCALE, MM, cfg)


def test_the_shipped_judge_is_small():
    assert MODEL_PATH.is_file() and MODEL_PATH.stat().st_size < 1_000_000


def test_a_circle_shown_whole_without_a_face_is_asked_about_and_a_disk_with_a_face_is_not():
    fits, lone = lone_of(drawn_maps([(150.0, 150.0, 32.0)], [(400.0, 300.0, 22.0)]))
    assert [(round(f.cx), round(f.cy), f.size) for f in fits] == [(150, 150, "medium")]
    assert len(lone) == 1
    c = lone[0]
    assert c.size == "small" and math.hypot(c.cx - 400.0, c.cy - 300.0) < 1.0 and c.rim_shown > 0.9


def test_nothing_is_asked_when_the_judge_is_off():
    maps = drawn_maps([], [(400.0, 300.0, 22.0)])
    assert len(lone_of(maps)[1]) == 1
    assert lone_of(maps, replace(DEFAULT_CONFIG, lone_probability=None))[1] == []


def test_a_face_less_circle_over_a_disk_found_or_shown_in_part_is_not_asked_about():
    # one crossing the disk found (its outline cut by the disk's), one with a third of its outline shown
    maps = drawn_maps([(200.0, 200.0, 44.5)], [(250.0, 200.0, 22.0)])
    cut = drawn_maps([], [])
    yy, xx = np.mgrid[0:300, 0:300].astype(np.float64)
    d = np.hypot(xx - 200.0, yy - 150.0)
    arc = np.exp(-0.5 * ((d - 22.0 * MM) / 0.75) ** 2) * (xx > 200.0 + 0.5 * 22.0 * MM)
    cut = FaceMaps(face=cut.face, rim=arc.astype(np.float32), height=cut.height)
    assert lone_of(maps)[1] == []
    assert lone_of(cut)[1] == []


def test_face_less_circles_touching_each_other_are_each_asked_about_once():
    row = [(150.0 + 44.5 * k, 300.0, 22.0) for k in range(4)]
    _, lone = lone_of(drawn_maps([], row))
    got = sorted((c.cx, c.cy) for c in lone)
    assert len(got) == len(row)
    assert all(math.hypot(gx - x, gy - y) < 1.0 for (gx, gy), (x, y, _) in zip(got, row))


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5])
def test_the_lone_settings_are_checked(bad):
    with pytest.raises(ValueError, match="lone_probability"):
        DetectorConfig(lone_probability=bad)
    with pytest.raises(ValueError, match="lone_rim"):
        DetectorConfig(lone_rim=bad if bad != 1.5 else 1.01)


def test_the_patch_is_the_nest_patch_with_the_circle_as_both():
    img = draw_table([DrawnDisk(200, 200, "medium", 0, "red")], 4, size=(480, 480), noise=0.0)
    a = Circle(232.0, 232.0, 32.0)
    p = lone_patch(img, a)
    assert p.shape == (5, PATCH, PATCH) and p.dtype == np.float32
    assert np.array_equal(p[3], p[4]) and p[3, PATCH // 2, PATCH // 2] == -1.0


def test_no_circles_no_question():
    assert judge_lone(np.zeros((10, 10, 3), np.uint8), []).shape == (0,)


def test_a_missing_or_corrupt_judge_is_one_clear_line(tmp_path):
    img = np.zeros((200, 200, 3), np.uint8)
    circles = [Circle(100.0, 100.0, 22.0)]
    with pytest.raises(InputError, match="lone model file is missing.*lone_training"):
        judge_lone(img, circles, model_path=tmp_path / "nope.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a network")
    with pytest.raises(InputError, match="cannot be read"):
        judge_lone(img, circles, model_path=bad)
    with pytest.raises(InputError, match="BGR uint8"):
        judge_lone(img[..., 0], circles)


def test_a_circle_the_judge_finds_likely_enough_is_a_disk_with_its_probability():
    img = draw_table([DrawnDisk(200, 200, "medium", 0, "red"), DrawnDisk(330, 120, "small", 0, "blue")], 4,
                     size=(480, 480), noise=0.0)
    fit = DiskFit(cx=100.0, cy=400.0, r_px=32.0, size="medium", rim_fraction=0.9, open_consistency=1.0,
                  residual_px=0.1, ring_bgr=(0.0, 0.0, 255.0), confidence=0.9)
    lone = [LoneCircle(cx=232.0, cy=232.0, r_px=32.0, size="medium", rim_shown=0.8),
            LoneCircle(cx=352.0, cy=142.0, r_px=22.0, size="small", rim_shown=0.7)]
    assert confirmed_lone(img, [fit], lone, 1.0, replace(DEFAULT_CONFIG, lone_probability=None)) == [fit]
    p = judge_lone(img, [Circle(c.cx, c.cy, c.r_px) for c in lone])
    assert p.shape == (2,) and ((p > 0) & (p < 1)).all()
    taken = confirmed_lone(img, [fit], lone, 1.0, replace(DEFAULT_CONFIG, lone_probability=max(float(p.min()) - 1e-6,
                                                                                                  1e-6)))
    assert taken[0] == fit and len(taken) == 3
    for new, c, q in zip(taken[1:], lone, p):
        assert (new.cx, new.cy, new.r_px, new.size, new.rim_fraction) == (c.cx, c.cy, c.r_px, c.size, c.rim_shown)
        assert new.confidence == pytest.approx(min(float(q), 0.999))
    if p.max() + 1e-6 <= 1.0:
        assert confirmed_lone(img, [fit], lone, 1.0, replace(DEFAULT_CONFIG, lone_probability=float(p.max()) + 1e-6)) \
            == [fit]


def test_the_training_examples_are_lone_circles_and_missed_disks_of_the_tables_sizes():
    # A heaped table of a training family's room (verdict seeds, frame 1, as the trainer renders them): the lone
    # circles the eye asks about show at least the trainer's share of their outline, and some of them are the
    # heap's chips; the missed disks at their true places are disks; every circle is of one of the table's sizes.
    from vision.facemap_training import table_for
    from vision.lone_training import TRAIN_SHOWN, frame_examples
    from vision.synth.seeds import WORLD_VERDICT_SEEDS

    family, seed = "photo-thin-wood", WORLD_VERDICT_SEEDS[7]
    examples = frame_examples((family, seed, 1, "heaped"))
    assert any(e.disk and e.judged for e in examples) and any(not e.disk for e in examples)
    setup, _ = table_for(family, seed, 1, "heaped")
    radii = {d.radius_mm for d in setup.disks}
    for e in examples:
        assert e.a == e.b and e.crop.dtype == np.uint8 and e.crop.shape[2] == 3
        assert min(abs(e.a.r - r) for r in radii) < 0.5
        assert (TRAIN_SHOWN <= e.probability <= 1.0) if e.judged else (e.disk and math.isnan(e.probability))


def test_a_few_training_steps_export_a_judge_that_runs(tmp_path):
    pytest.importorskip("torch")
    from vision.nest_training import NestExample, export_onnx, scores, train

    img = draw_table([DrawnDisk(120, 120, "medium", 0, "red")], 1, size=(320, 320))
    a = Circle(152.0, 152.0, 32.0)
    ex = [NestExample(img, a, a, disk=True, judged=True, probability=0.8),
          NestExample(img, Circle(250.0, 250.0, 22.0), Circle(250.0, 250.0, 22.0), disk=False, judged=True,
                      probability=0.6)]
    net = train(ex, ex, steps=3, batch_size=4, seed=0, log_every=3)
    assert scores(net, ex)["circles"] == 2
    export_onnx(net, tmp_path / "judge.onnx")
    assert judge_lone(img, [a], model_path=tmp_path / "judge.onnx").shape == (1,)


def test_the_lone_judge_asked_about_a_heap_of_chips_keeps_what_the_eye_found_and_makes_up_nothing():
    # A heaped table (chips of one print poured out) in a training family's room, test seed: the network trained
    # before 2026-11-29 read the heap as a cloth's pattern and the eye alone found 25 of its 40 disks, the lone judge
    # adding the chips whose outlines show whole. The network trained on tables printed alike finds 37 alone, and the
    # judge adds none here (nor on 24 heaped test tables of four training families); asked, it must still keep every
    # disk found and take nothing that is not a disk. Measured without the chips read alone (`vision.isolate`); the
    # whole eye is checked last.
    from vision.detect import detect_frame
    from vision.synth.render import render_frame
    from vision.synth.seeds import TEST_SEEDS
    from vision.synth.truth import truth_calibration
    from vision.synth.world import world_table

    setup, camera = world_table(TEST_SEEDS[1], "shapes-none-wood", tier="heaped")
    frame = render_frame(setup, camera)
    diam = tuple(float(v) for v in setup.diameters_mm)
    cal = truth_calibration(camera, diam)
    truth = [t for t in frame.scene.disks if not t.extra.get("held")]

    def true_disk(d):
        return any(d.size == t.size and math.hypot(d.x_mm - t.x_mm, d.y_mm - t.y_mm) < 0.3 * t.radius_mm for t in truth)

    judged = replace(DEFAULT_CONFIG, isolate_face=None)
    off = detect_frame(frame.image, cal, diam, config=replace(judged, lone_probability=None))
    on = detect_frame(frame.image, cal, diam, config=judged)
    assert sum(map(true_disk, off.disks)) >= 30
    assert sum(map(true_disk, on.disks)) >= sum(map(true_disk, off.disks))
    assert all(map(true_disk, on.disks)) and all(map(true_disk, off.disks))
    for d in off.disks:       # what the eye found alone stays found
        assert any(e.size == d.size and math.hypot(e.x_mm - d.x_mm, e.y_mm - d.y_mm) < 1.0 for e in on.disks)
    whole = detect_frame(frame.image, cal, diam)
    assert all(map(true_disk, whole.disks)) and sum(map(true_disk, whole.disks)) >= sum(map(true_disk, on.disks))
