"""The game-like clip: the scripted events happen in the ground truth, stable moments are still, frames lazy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vision.synth.sequence import build_script, demo_sequence
from vision.synth.seeds import TEST_SEEDS


def _overlap(a, b) -> bool:
    return math.hypot(a.x_mm - b.x_mm, a.y_mm - b.y_mm) < a.radius_mm + b.radius_mm


@pytest.mark.parametrize("seed", TEST_SEEDS[:3])
def test_synth_clip_script_events(seed):
    steps = build_script(seed, "standard")
    first, last = steps[0].setup, steps[-1].setup
    events = {s.event for s in steps}
    assert {"still", "flip", "lift", "casualty"} <= events
    # a casualty left the table
    assert len(last.disks) == len(first.disks) - 1
    # the flipping disk moved in steps of its diameter and ended on top of an enemy
    by_id = {d.id: d for d in first.disks}
    moved = [d for d in last.disks if (d.x_mm, d.y_mm) != (by_id[d.id].x_mm, by_id[d.id].y_mm)]
    assert len(moved) == 1
    m = moved[0]
    dist = math.hypot(m.x_mm - by_id[m.id].x_mm, m.y_mm - by_id[m.id].y_mm)
    flips = dist / (2 * m.radius_mm)
    assert abs(flips - round(flips)) < 1e-6 and 1 <= round(flips) <= 3
    under = [o for o in last.disks if o.id != m.id and _overlap(o, m)]
    assert under and all(o.z < m.z and o.player != m.player for o in under)


@pytest.mark.parametrize("seed", TEST_SEEDS[:3])
def test_synth_clip_stable_frames_have_no_hands_and_hold_still(seed):
    steps = build_script(seed, "standard")
    for i, st in enumerate(steps):
        if st.stable:
            assert not st.setup.hands and not st.setup.held
        else:
            assert st.setup.hands, f"frame {i} is in motion without a hand"
    # within a run of stable frames the truth does not change
    prev = None
    for st in steps:
        cur = [(d.id, d.x_mm, d.y_mm, d.z) for d in st.setup.disks] if st.stable else None
        if prev is not None and cur is not None:
            assert cur == prev
        prev = cur


def test_synth_clip_renders_lazily_and_caches():
    seq = demo_sequence(TEST_SEEDS[4])
    assert len(seq) > 40 and seq.stable_moments[0][0] == 0
    assert not seq._cache
    img, scene, stable = seq[0]
    assert img.shape == (720, 1280, 3) and stable
    assert len(seq._cache) == 1
    img2, scene2, _ = seq[0]  # from the cache: the same JPEG decoded again, the same truth object
    assert np.array_equal(img2, img) and scene2 is scene
    # the lifted disk's lower neighbour becomes more visible while it is held up
    lift = [i for i, s in enumerate(seq.steps) if s.event == "lift" and s.setup.held]
    held_id = seq.steps[lift[len(lift) // 2]].setup.held[0]
    before = seq.rendered(seq.stable_moments[1][0]).scene
    during = seq.rendered(lift[len(lift) // 2]).scene
    top = before.disk(held_id)
    lower = [d for d in before.disks if d.id != held_id and _overlap(d, top) and d.z < top.z]
    if lower:
        v0 = before.disk(lower[0].id).extra["visible_fraction"]
        v1 = during.disk(lower[0].id).extra["visible_fraction"]
        assert v1 >= v0
    assert during.disk(held_id).extra["held"] is True
    assert np.isfinite(during.disk(held_id).extra["top_height_mm"])


@pytest.mark.parametrize("seed", TEST_SEEDS[:3])
def test_stack_clip_puts_smaller_disks_wholly_on_larger_ones(seed):
    from vision.synth.sequence import build_stack_script

    steps = build_stack_script(seed)
    first = {d.id: d for d in steps[0].setup.disks}
    last = {d.id: d for d in steps[-1].setup.disks}
    moved = [d for d in last.values() if math.hypot(d.x_mm - first[d.id].x_mm, d.y_mm - first[d.id].y_mm) > 1.0]
    events = {s.event for s in steps}
    assert events <= {"still", "stack", "beside", "unstack", "restack"} and "stack" in events
    stacked = [d for d in moved if d.z > 0]
    assert len(stacked) >= 2
    lowers = []
    for d in stacked:
        under = [o for o in last.values() if o.id != d.id and o.z < d.z
                 and math.hypot(o.x_mm - d.x_mm, o.y_mm - d.y_mm) < o.radius_mm + d.radius_mm]
        assert len(under) == 1
        lower = under[0]
        assert math.hypot(lower.x_mm - d.x_mm, lower.y_mm - d.y_mm) + d.radius_mm <= lower.radius_mm - 0.9
        lowers.append(lower)
    # the others were put down beside a stack, clear of every disk: 0.5-3 mm from a lower disk's edge
    for d in (d for d in moved if d.z == 0):
        gaps = [math.hypot(o.x_mm - d.x_mm, o.y_mm - d.y_mm) - o.radius_mm - d.radius_mm
                for o in lowers if o.id != d.id]
        assert 0.4 <= min(gaps) <= 3.1
        assert all(math.hypot(o.x_mm - d.x_mm, o.y_mm - d.y_mm) >= o.radius_mm + d.radius_mm + 0.4
                   for o in last.values() if o.id != d.id and o.z == 0)   # (it may since carry a stack)


@pytest.mark.parametrize("kind", ["stack", "game"])
def test_a_clip_in_a_world_family_is_dressed_alike_at_every_moment(kind):
    # (a game clip takes a casualty off: the room, drawing prints in the order the disks are listed, once handed
    # every disk listed after it another print)
    from vision.synth.sequence import Sequence
    from vision.synth.world import world_table

    seq = Sequence(TEST_SEEDS[0], resolution="1080p", kind=kind, family="photo-thin-felt", cache_frames=1)
    assert kind != "game" or len(seq.steps[-1].setup.disks) < len(seq.steps[0].setup.disks)   # a casualty left
    room, camera = world_table(TEST_SEEDS[0], "photo-thin-felt")
    assert np.allclose(seq.camera.camera_matrix, camera.camera_matrix)
    looks = {st.setup.look.mat for st in seq.steps}
    assert looks == {room.look.mat}
    style = {}
    for st in seq.steps:
        for d in st.setup.disks:
            assert d.art.style is not None and d.art.style.art == "photo"
            assert style.setdefault(d.id, d.art.style) == d.art.style
    assert seq.steps[0].setup.diameters_mm == room.diameters_mm
    with pytest.raises(ValueError, match="1080p"):
        Sequence(TEST_SEEDS[0], resolution="720p", family="photo-thin-felt")


@pytest.mark.parametrize("kind", ["game", "cover"])
def test_an_alike_clip_is_the_same_room_with_one_print_an_army_and_size_set_out_in_rows(kind):
    from collections import defaultdict

    from vision.synth.sequence import Sequence

    plain = Sequence(TEST_SEEDS[0], resolution="1080p", kind=kind, family="shapes-none-wood", cache_frames=1)
    alike = Sequence(TEST_SEEDS[0], resolution="1080p", kind=kind, family="shapes-none-wood", cache_frames=1,
                     alike=True)
    assert np.allclose(alike.camera.camera_matrix, plain.camera.camera_matrix)
    assert {st.setup.look.mat for st in alike.steps} == {plain.steps[0].setup.look.mat}
    for st in alike.steps:
        prints = defaultdict(set)
        for d in st.setup.disks:
            prints[(d.player, d.size)].add(d.art.style)
        assert all(len(p) == 1 for p in prints.values())
    # the standard clip prints each disk its own way
    first = defaultdict(set)
    for d in plain.steps[0].setup.disks:
        first[(d.player, d.size)].add(d.art.style)
    assert max(len(p) for p in first.values()) > 1
    # chips set out: some disk of the first table within 4 mm of two of its own print (a line or a heap)
    disks = alike.steps[0].setup.disks

    def near(a, b) -> bool:
        return a is not b and (a.player, a.size) == (b.player, b.size) and \
            math.hypot(a.x_mm - b.x_mm, a.y_mm - b.y_mm) <= a.radius_mm + b.radius_mm + 4.0

    assert any(sum(near(a, b) for b in disks) >= 2 for a in disks)
    with pytest.raises(ValueError, match="family"):
        Sequence(TEST_SEEDS[0], alike=True)
