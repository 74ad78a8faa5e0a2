"""The cover clip: disks put on others one move at a time, leaving the lower ones 25-50 % visible at stable moments."""

from __future__ import annotations

import math

import pytest

from vision.synth.seeds import TEST_SEEDS
from vision.synth.sequence import (COVER_VISIBLE, Sequence, build_cover_script, build_script, cover_distance,
                                   lens_area)


def _overlap(a, b) -> bool:
    return math.hypot(a.x_mm - b.x_mm, a.y_mm - b.y_mm) < a.radius_mm + b.radius_mm - 0.05  # touching is no overlap


def _covered(steps):
    """(lower id, upper id, geometric visible fraction of the lower one) for every pair the clip's moves made."""
    first = {d.id: d for d in steps[0].setup.disks}
    last = steps[-1].setup
    out = []
    for m in last.disks:
        if (m.x_mm, m.y_mm) == (first[m.id].x_mm, first[m.id].y_mm):
            continue
        for t in last.disks:
            if t.id != m.id and _overlap(t, m):
                dist = math.hypot(t.x_mm - m.x_mm, t.y_mm - m.y_mm)
                out.append((t.id, m.id, 1.0 - lens_area(t.radius_mm, m.radius_mm, dist) / (math.pi * t.radius_mm ** 2)))
    return out


@pytest.mark.parametrize(("r1", "r2", "dist", "area"), [
    (10.0, 10.0, 25.0, 0.0),  # apart
    (10.0, 4.0, 3.0, math.pi * 16.0),  # the small one wholly inside
    (10.0, 10.0, 0.0, math.pi * 100.0),  # concentric
    (10.0, 10.0, 10.0, 2 * 100 * math.acos(0.5) - 0.5 * math.sqrt(10 * 10 * 30 * 10)),  # textbook equal circles
])
def test_vision_cover_lens_area(r1, r2, dist, area):
    assert lens_area(r1, r2, dist) == pytest.approx(area, rel=1e-9, abs=1e-9)
    assert lens_area(r2, r1, dist) == pytest.approx(area, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize(("lower", "upper", "visible", "fits"), [
    (32.0, 32.0, 0.375, True), (22.0, 44.5, 0.3, True), (44.5, 32.0, 0.375, False), (44.5, 22.0, 0.45, False)])
def test_vision_cover_distance_leaves_that_much_visible(lower, upper, visible, fits):
    d = cover_distance(lower, upper, visible)
    if not fits:  # the upper disk is too small to cover that much of the lower one
        assert d is None
        return
    left = 1.0 - lens_area(lower, upper, d) / (math.pi * lower ** 2)
    assert left == pytest.approx(visible, abs=1e-6)


@pytest.mark.parametrize("seed", TEST_SEEDS[:4])
def test_vision_cover_clip_script(seed):
    steps = build_cover_script(seed, "standard")
    assert {s.event for s in steps} == {"still", "cover"}
    covered = _covered(steps)
    # four covers, each on a different pair of disks, each leaving the lower disk in the 25-50 % band
    assert len(covered) == 4
    assert len({c[0] for c in covered} | {c[1] for c in covered}) == 8
    assert all(COVER_VISIBLE[0] - 1e-6 <= v <= COVER_VISIBLE[1] + 1e-6 for _, _, v in covered)
    assert all(0.25 <= v < 0.5 for _, _, v in covered)
    # moving frames show the hand; stable ones have none and hold still; five stable moments (before and after)
    for st in steps:
        assert bool(st.setup.hands) != st.stable
    by_id = {d.id: d for d in steps[-1].setup.disks}
    for low, up, _ in covered:
        assert by_id[up].z > by_id[low].z
        assert by_id[up].base_height_mm == pytest.approx(by_id[low].top_height_mm)
    seq = Sequence(seed, kind="cover")
    assert len(seq.stable_moments) == 5
    # at the stable moment before its cover, every covered disk lay free and whole
    for (a, b), nxt in zip(seq.stable_moments, seq.stable_moments[1:]):
        before, after = steps[b].setup, steps[nxt[1]].setup
        new = [low for low, _, _ in covered
               if not any(_overlap(o, d) for d in before.disks if d.id == low for o in before.disks if o.id != low)
               and any(_overlap(o, d) for d in after.disks if d.id == low for o in after.disks if o.id != low)]
        assert len(new) == 1


@pytest.mark.parametrize("seed", TEST_SEEDS[4:6])
def test_vision_cover_clip_is_deterministic_and_leaves_the_game_clip_alone(seed):
    assert build_cover_script(seed) == build_cover_script(seed)
    assert build_cover_script(seed) != build_cover_script(seed + 1)
    assert build_script(seed) == Sequence(seed).steps  # the default kind is still the game-like clip


@pytest.mark.parametrize("kind", ["game", "cover"])
def test_clips_take_a_disk_count(kind):
    steps = Sequence(TEST_SEEDS[1], kind=kind, disks=40).steps
    assert len(steps[0].setup.disks) >= 36     # a crowded table may not fit every one
    assert len(Sequence(TEST_SEEDS[1], kind=kind).steps[0].setup.disks) <= 18
    for bad in (1, 61):
        with pytest.raises(ValueError, match="disks must be within"):
            Sequence(TEST_SEEDS[1], kind=kind, disks=bad)


def test_vision_cover_clip_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown clip kind"):
        Sequence(TEST_SEEDS[0], kind="flip")


def test_vision_cover_clip_rendered_truth_has_partly_visible_disks():
    """The renderer's own visible fractions (label pixels) agree: at the stable moments after the covers the
    covered disks are 25-50 % visible, and one more of them at each moment."""
    seed = TEST_SEEDS[6]
    seq = Sequence(seed, kind="cover", resolution="720p", cache_frames=1)
    covered = {low for low, _, _ in _covered(seq.steps)}
    seen = []
    for k, (_, last) in enumerate(seq.stable_moments):
        scene = seq.rendered(last).scene
        vis = {d.id: d.extra["visible_fraction"] for d in scene.disks}
        partly = {i for i in covered if 0.25 <= vis[i] < 0.5}
        assert len(partly) == k, (k, {i: vis[i] for i in covered})
        assert set(seen) <= partly
        seen = sorted(partly)


@pytest.mark.slow
def test_vision_cover_clip_written_as_a_folder(tmp_path):
    """`write_sequence(kind="cover")` writes the cover clip: its frames' truth carries the covered disks."""
    import json

    from vision.synth.sequence import write_sequence

    seed = TEST_SEEDS[7]
    manifest = write_sequence(tmp_path, seed, resolution="720p", boards=0, kind="cover")
    assert len(manifest["frames"]) == len(build_cover_script(seed))
    assert [list(m) for m in Sequence(seed, kind="cover").stable_moments] == manifest["stable_moments"]
    last = json.loads((tmp_path / manifest["frames"][-1]["scene"]).read_text())
    partly = [d for d in last["disks"] if 0.25 <= d["visible_fraction"] < 0.5]
    assert len(partly) >= 4
