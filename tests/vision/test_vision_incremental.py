"""Change-driven detection: only where the table changed since the last commit, the rest carried over."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from tablesight.scene import Scene
from vision.detect import locate_disks, sizes_for
from vision.incremental import ChangeConfig, change_mask, detect_changed, outline_kept, reference_for
from vision.live import LiveTable, PipelineConfig
from vision.motion import MotionConfig
from vision.scene_match import visible_fraction
from vision.synth.drawn import DrawnDisk, draw_table, identity_calibration
from vision.synth.seeds import TEST_SEEDS
from vision.tracker import Tracker

_spec = importlib.util.spec_from_file_location(
    "incremental_eval_vision", Path(__file__).resolve().parents[2] / "benchmarks" / "eval_vision.py")
ev = importlib.util.module_from_spec(_spec)
sys.modules["incremental_eval_vision"] = ev  # dataclasses look their module up while the file executes
_spec.loader.exec_module(ev)

TABLE = [DrawnDisk(150, 150, "medium", 0, "red"), DrawnDisk(400, 180, "large", 0, "blue"),
         DrawnDisk(700, 200, "small", 0, "yellow"), DrawnDisk(180, 600, "small", 0, "white"),
         DrawnDisk(450, 620, "medium", 0, "red"), DrawnDisk(480, 650, "small", 1, "blue"),
         DrawnDisk(760, 700, "large", 0, "red")]


def _committed(disks, seed=5):
    """A commit of a drawn table: detection, tracker, reference."""
    cal = identity_calibration()
    sizes = sizes_for(cal)
    rect = draw_table(disks, seed)
    tracker = Tracker()
    det = locate_disks(rect, cal, sizes)
    scene = tracker.update(det.scene)
    return cal, sizes, tracker, scene, reference_for(rect, det, tracker.last_ids, scene)


def _near(scene: Scene, x, y):
    return min(scene.disks, key=lambda d: math.hypot(d.x_mm - x, d.y_mm - y))


def test_a_flipped_disk_is_found_again_and_the_others_are_carried_as_they_were():
    cal, sizes, tracker, scene, ref = _committed(TABLE)
    moved = list(TABLE)
    moved[2] = DrawnDisk(700 + 44, 200 + 40, "small", 0, "yellow")     # flipped: lands a diameter away
    res = detect_changed(draw_table(moved, 5), cal, sizes, scene, ref)
    assert res is not None and res.regions >= 1
    assert res.carried == len(TABLE) - 1
    after = res.detection.scene
    assert len(after.disks) == len(TABLE)
    for t in moved:
        d = _near(after, t.x_mm, t.y_mm)
        assert math.hypot(d.x_mm - t.x_mm, d.y_mm - t.y_mm) < 1.0, t
    # The carried disks keep the measurement, id and stacking order they were committed with.
    for d in scene.disks:
        if math.hypot(d.x_mm - 700, d.y_mm - 200) < 5:
            continue
        same = after.disk(d.id)
        assert (same.x_mm, same.y_mm, same.z) == (d.x_mm, d.y_mm, d.z)


def test_an_unchanged_table_is_all_carried_over():
    cal, sizes, tracker, scene, ref = _committed(TABLE)
    res = detect_changed(draw_table(TABLE, 5), cal, sizes, scene, ref)
    assert res is not None and res.regions == 0 and res.changed_share == 0.0
    assert sorted((d.id, d.x_mm, d.y_mm, d.z) for d in res.detection.scene.disks) == \
        sorted((d.id, d.x_mm, d.y_mm, d.z) for d in scene.disks)


@pytest.mark.parametrize("x, y", [
    (430, 200),   # across the large disk's edge
    (405, 190),   # nearly concentric inside it (regression: a flat drawn disk there read like a printed ring)
])
def test_a_disk_put_on_another_is_stacked_on_it(x, y):
    cal, sizes, tracker, scene, ref = _committed(TABLE)
    res = detect_changed(draw_table(TABLE + [DrawnDisk(x, y, "small", 1, "white")], 5), cal, sizes, scene, ref)
    after = res.detection.scene
    top, large = _near(after, x, y), _near(after, 400, 180)
    assert len(after.disks) == len(TABLE) + 1
    assert top.size == "small" and large.size == "large" and top.z > large.z


@pytest.mark.parametrize("change", ["lamp over half the table", "size"])
def test_a_changed_light_or_frame_declines_so_the_whole_frame_is_detected(change):
    cal, sizes, tracker, scene, ref = _committed(TABLE)
    frame = draw_table(TABLE, 5)
    if change == "size":
        frame = frame[:900, :900]
    else:
        frame = frame.copy()
        half = frame.shape[1] // 2
        frame[:, :half] = (frame[:, :half].astype(np.float32) * 0.55).astype(np.uint8)
    assert detect_changed(frame, cal, sizes, scene, ref) is None


@pytest.mark.parametrize("gain", [(0.55, 0.55, 0.55), (1.25, 1.1, 0.9)])
def test_the_webcams_exposure_or_white_balance_changing_is_no_change_of_the_table(gain):
    """Regression: a whole picture darker (automatic exposure) declined the changed-parts detection and the whole
    frame was detected again, losing what only history knew (disks seen arriving wholly on others)."""
    cal, sizes, tracker, scene, ref = _committed(TABLE)
    frame = np.clip(draw_table(TABLE, 5).astype(np.float32) * np.array(gain, np.float32), 0, 255).astype(np.uint8)
    res = detect_changed(frame, cal, sizes, scene, ref)
    assert res is not None and res.changed_share < 0.01 and res.carried == len(TABLE)
    assert sorted((d.id, d.x_mm, d.y_mm, d.z) for d in res.detection.scene.disks) == \
        sorted((d.id, d.x_mm, d.y_mm, d.z) for d in scene.disks)


def test_the_reference_keeps_the_pixels_each_carried_disk_was_measured_on():
    """A disk nudged a fraction of a px at every commit must not drift away unseen: change is measured against
    the pixels it was measured on, not the last frame."""
    cal, sizes, tracker, scene, ref = _committed(TABLE)
    moved = list(TABLE)
    moved[0] = DrawnDisk(150 + 70, 150, "medium", 0, "red")
    # ... and the sensor's noise, under what counts as a change, everywhere.
    noise = np.random.default_rng(3).integers(-4, 5, (980, 980, 3))
    frame = np.clip(draw_table(moved, 5).astype(np.int16) + noise, 0, 255).astype(np.uint8)
    res = detect_changed(frame, cal, sizes, scene, ref)
    # Under the carried large disk (400, 180 mm; the identity calibration's margin is 40 px): the reference's
    # pixels; where the moved one was: the new frame's.
    assert np.array_equal(res.reference_rect[220:240, 440], ref.rect[220:240, 440])
    assert not np.array_equal(res.reference_rect[220:240, 440], frame[220:240, 440])
    assert np.array_equal(res.reference_rect[190, 190], frame[190, 190])


def test_change_mask_ignores_sensor_noise_and_sees_a_disk():
    flat = [d for d in TABLE if d.z == 0]
    a = draw_table(flat, 5)
    rng = np.random.default_rng(1)
    noisy = np.clip(a.astype(np.int16) + rng.normal(0, 4, a.shape).astype(np.int16), 0, 255).astype(np.uint8)
    assert change_mask(noisy, a).sum() == 0
    b = draw_table(flat + [DrawnDisk(600, 450, "small", 0, "white")], 5)
    ys, xs = np.nonzero(change_mask(b, a))
    assert len(xs) > 100
    assert np.hypot(xs * 2 + 1 - 640, ys * 2 + 1 - 490).max() < 22 + 4      # the new disk (40 px margin)


def test_a_disk_that_left_below_the_change_level_is_not_carried():
    # regression: a dim disk on a cloth of its shade (a dark room) moved away without a change of `level`, and the
    # live table carried it at its old place for the rest of the clip. A level no pixel reaches stands for it here.
    cal, sizes, tracker, scene, ref = _committed(TABLE)
    left = [d for k, d in enumerate(TABLE) if k != 6]          # the large red disk at (760, 700) is taken away
    blind = ChangeConfig(level=255.0)
    res = detect_changed(draw_table(left, 5), cal, sizes, scene, ref, change=blind)
    assert res is not None and res.changed_share == 0.0
    assert all(math.hypot(d.x_mm - 760, d.y_mm - 700) > 20 for d in res.detection.scene.disks)
    assert len(res.detection.scene.disks) == len(scene.disks) - 1
    # without the outline's look, the disk stays where it was (what the clip showed)
    res = detect_changed(draw_table(left, 5), cal, sizes, scene, ref,
                         change=ChangeConfig(level=255.0, outline_match=None))
    assert any(math.hypot(d.x_mm - 760, d.y_mm - 700) < 2 for d in res.detection.scene.disks)


def test_a_disk_outline_is_kept_under_noise_and_exposure_and_lost_when_it_leaves():
    from dataclasses import replace

    from vision.fit import DiskFit

    with_disk, without = draw_table(TABLE, 5), draw_table(TABLE[:6], 5)
    fit = DiskFit(cx=800.0, cy=740.0, r_px=44.5, size="large", rim_fraction=1.0, open_consistency=1.0,
                  residual_px=0.0, ring_bgr=(0.0, 0.0, 0.0), confidence=0.9)    # (760, 700) mm, 40 mm margin
    other = replace(fit, cx=190.0, cy=190.0, r_px=32.0, size="medium")                 # (150, 150) mm, stays
    assert outline_kept(with_disk, with_disk, [fit, other], 1.0).tolist() == [True, True]
    assert outline_kept(draw_table(TABLE, 6), with_disk, [fit], 1.0).all()          # other sensor noise
    brighter = np.clip(with_disk.astype(np.float32) * 1.15 + 5, 0, 255).astype(np.uint8)
    assert outline_kept(brighter, with_disk, [fit], 1.0).all()
    assert outline_kept(without, with_disk, [fit, other], 1.0).tolist() == [False, True]
    # where the reference band shows no colour spread there is nothing to tell by: the disk stands
    flat = np.full_like(with_disk, 90)
    assert outline_kept(without, flat, [fit], 1.0).all()
    assert outline_kept(without, with_disk, [fit], 1.0, ChangeConfig(outline_match=None)).all()
    assert outline_kept(without, with_disk, [], 1.0).shape == (0,)


@pytest.mark.parametrize("bad", [dict(level=0.0), dict(speck_px=-1), dict(margin_px=-2.0), dict(max_changed=0.0),
                                 dict(max_changed=1.5), dict(outline_match=1.5), dict(outline_contrast=-1.0)])
def test_change_settings_are_validated(bad):
    with pytest.raises(ValueError):
        ChangeConfig(**bad)


def test_live_table_detects_a_later_commit_only_where_the_table_changed():
    cal = identity_calibration()
    table = LiveTable(None, cal, PipelineConfig(motion=MotionConfig(still_s=0.2)))
    first = draw_table(TABLE, 5)
    t = 0.0
    for _ in range(12):
        table.process(first, now=t)
        t += 0.05
    assert table.last_commit is not None and table.last_commit.whole_frame
    before = {d.id: (d.x_mm, d.y_mm) for d in table.state().scene.disks}
    moved = list(TABLE)
    moved[6] = DrawnDisk(760 - 89, 700 + 10, "large", 0, "red")
    second = draw_table(moved, 5)
    for _ in range(12):
        table.process(second, now=t)
        t += 0.05
    info = table.last_commit
    assert not info.whole_frame and info.carried == len(TABLE) - 1 and 0 < info.changed_share < 0.1
    after = table.state().scene
    assert len(after.disks) == len(TABLE)
    assert sum(after.disk(i) is not None and (after.disk(i).x_mm, after.disk(i).y_mm) == p
               for i, p in before.items()) == len(TABLE) - 1
    # The large disk keeps its id through the move.
    big = [d for d in after.disks if d.size == "large" and d.y_mm > 600]
    assert len(big) == 1 and big[0].id in before
    # Without change detection every commit looks at the whole frame.
    whole = LiveTable(None, cal, PipelineConfig(motion=MotionConfig(still_s=0.2), change=None))
    t = 0.0
    for frame in (first, second):
        for _ in range(12):
            whole.process(frame, now=t)
            t += 0.05
        assert whole.last_commit.whole_frame


@pytest.mark.slow
@pytest.mark.parametrize("seed", [TEST_SEEDS[7], TEST_SEEDS[8]])   # regression: on the second clip the
# changed parts once missed 3 of the 107 disks the whole frame found (borderline verdicts on a crop's maps)
def test_on_game_clips_the_changed_part_finds_what_the_whole_frame_finds(seed):
    """Rendered 30-disk game clips: at every stable moment after the first, detection where the table changed
    finds the true disks the whole-frame detection (with the same history) finds, with no more false ones, and
    carries most disks over."""
    from dataclasses import replace

    from vision.synth.sequence import Sequence
    from vision.synth.truth import truth_calibration

    seq = Sequence(seed, tier="standard", resolution="1080p", cache_frames=2, kind="game", disks=30)
    cal = truth_calibration(seq.camera)
    sizes = sizes_for(cal)
    whole_tracker, tracker = Tracker(), Tracker()
    whole_prev = prev = ref = None
    carried = 0
    for k, (_, last) in enumerate(seq.stable_moments):
        img, truth, _ = seq[last]
        truth = replace(truth, disks=tuple(d for d in truth.disks if not d.extra.get("held")))
        rect = cal.rectify(img)
        whole_prev = whole_tracker.update(locate_disks(rect, cal, sizes, whole_prev).scene)
        res = None if ref is None else detect_changed(rect, cal, sizes, prev, ref)
        if k > 0:
            assert res is not None
            carried += res.carried
        det = locate_disks(rect, cal, sizes, prev) if res is None else res.detection
        prev = tracker.update(det.scene)
        ref = reference_for(rect if res is None else res.reference_rect, det, tracker.last_ids, prev)
        seen = {t.id for t in truth.disks if visible_fraction(t) >= 0.5}
        whole_m, m = ev.match(truth, whole_prev), ev.match(truth, prev)
        assert set(whole_m.values()) & seen <= set(m.values()), k
        assert sum(d.id not in m for d in prev.disks) <= sum(d.id not in whole_m for d in whole_prev.disks), k
    assert carried >= 0.8 * 30 * (len(seq.stable_moments) - 1)


@pytest.mark.parametrize("bad", [0, 4])
def test_whole_frame_passes_are_validated(bad):
    with pytest.raises(ValueError):
        PipelineConfig(whole_passes=bad)
    with pytest.raises(ValueError):
        locate_disks(draw_table(TABLE, 5), identity_calibration(), sizes_for(identity_calibration()), passes=bad)


def test_a_second_pass_keeps_what_the_first_found_and_carries_the_maps():
    cal = identity_calibration()
    rect = draw_table(TABLE, 5)
    one = locate_disks(rect, cal, sizes_for(cal))
    two = locate_disks(rect, cal, sizes_for(cal), passes=2)
    assert len(two.scene.disks) == len(one.scene.disks) == len(TABLE)
    assert {d.id for d in two.scene.disks} == {d.id for d in one.scene.disks}   # seeded: the ids carry on
    h, w = rect.shape[:2]
    assert two.maps.shape == (h // 2, w // 2)   # the maps the fits were read from, kept for later commits
