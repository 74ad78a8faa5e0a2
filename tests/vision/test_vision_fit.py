"""The eye's geometry on face/rim maps drawn analytically: candidates, sub-pixel circles, acceptance by explained
outline, and the stacking order read from the outline in each overlap lens. No network involved: these hold
whatever the maps come from."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from vision.candidates import Seed, find_candidates
from vision.facemap import FaceMaps
from vision.fit import DEFAULT_CONFIG, DetectorConfig, fit_circles
from vision.locate import locate_in_maps
from vision.stacking import StackingConfig, order_stacks, separate_touching

MM = 0.5        # map px per mm (the network's output: half of 1 px/mm)
SCALE = 2.0     # rectified px per map px
RADII_MM = (22.0, 32.0, 44.5)


def draw_maps(disks, shape=(300, 300), hidden_arcs=()) -> FaceMaps:
    """Maps of disks (x_mm, y_mm, r_mm) listed bottom to top, as a perfect network would give them: the face
    everywhere a disk lies, the outline of each disk where no disk above covers it (a soft 1.5 px ridge)."""
    h, w = shape
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    face = np.zeros(shape, np.float32)
    rim = np.zeros(shape, np.float32)
    for k, (x, y, r) in enumerate(disks):
        u, v, rm = (x + 0.5) * MM - 0.5, (y + 0.5) * MM - 0.5, r * MM
        d = np.hypot(xx - u, yy - v)
        face = np.maximum(face, (d <= rm).astype(np.float32))
        ridge = np.exp(-0.5 * ((d - rm) / 0.75) ** 2).astype(np.float32)
        for x2, y2, r2 in disks[k + 1:]:  # covered by a disk above: no outline there
            u2, v2 = (x2 + 0.5) * MM - 0.5, (y2 + 0.5) * MM - 0.5
            ridge[np.hypot(xx - u2, yy - v2) < r2 * MM] = 0.0
        rim = np.maximum(rim, ridge)
    for x, y, r in hidden_arcs:  # e.g. a hand: neither face nor outline
        u, v = (x + 0.5) * MM - 0.5, (y + 0.5) * MM - 0.5
        gone = np.hypot(xx - u, yy - v) < r * MM
        rim[gone] = 0.0
        face[gone] = 0.0
    return FaceMaps(face=face, rim=rim, height=np.zeros_like(face))  # no height reading: the outline alone


def both_whole(a, b) -> FaceMaps:
    """Maps of two disks each drawn with its whole outline, as if neither covered the other (height 0)."""
    m1, m2 = draw_maps([a]), draw_maps([b])
    return FaceMaps(face=np.maximum(m1.face, m2.face), rim=np.maximum(m1.rim, m2.rim), height=np.zeros_like(m1.face))


def locate(maps, seeds=(), cfg=DEFAULT_CONFIG):
    h, w = maps.shape
    rect = np.full((h * 2, w * 2, 3), 90, np.uint8)
    return locate_in_maps(maps, rect, [r * 1.0 for r in RADII_MM], SCALE, MM, seeds, cfg)


@pytest.mark.parametrize("x, y, size", [(150.3, 200.7, 0), (301.2, 240.9, 1), (260.0, 300.45, 2)])
def test_a_lone_disk_is_found_with_its_size_and_a_sub_mm_centre(x, y, size):
    fits = locate(draw_maps([(x, y, RADII_MM[size])]))
    assert len(fits) == 1
    f = fits[0]
    assert f.size == ("small", "medium", "large")[size]
    # rectified px are mm here (1 px/mm)
    assert math.hypot(f.cx - x, f.cy - y) < 0.25
    assert f.rim_fraction > 0.95


def test_fit_pulls_a_candidate_a_few_mm_off_onto_the_outline():
    maps = draw_maps([(300.0, 300.0, 32.0)])
    u0 = np.array([(300.0 + 0.5) * MM - 0.5 + 1.8])
    v0 = np.array([(300.0 + 0.5) * MM - 0.5 - 1.2])
    reading = fit_circles(maps.rim, u0, v0, np.array([32.0 * MM]), DEFAULT_CONFIG, MM)
    x, y = (reading.u[0] + 0.5) * SCALE - 0.5, (reading.v[0] + 0.5) * SCALE - 0.5
    assert math.hypot(x - 300.0, y - 300.0) < 0.25


def test_empty_maps_have_no_candidates_and_no_disks():
    maps = FaceMaps(face=np.zeros((200, 200), np.float32), rim=np.zeros((200, 200), np.float32),
                    height=np.zeros((200, 200), np.float32))
    assert len(find_candidates(maps, [11.0, 16.0], 0.12, 50)) == 0
    assert locate(maps) == []


def test_candidate_votes_are_the_share_of_outline_in_view_and_nothing_wraps_round_the_map():
    """A disk hanging off the map's edge votes for the part of its outline in view, against a whole one (nothing
    beyond the edge counts), and that outline is not seen again at the opposite edge."""
    whole, hanging = (200.0, 260.0, 44.5), (599.0, 300.0, 44.5)   # the map is 600 mm wide: half of it in view
    maps = draw_maps([whole, hanging])
    cand = find_candidates(maps, [r * MM for r in RADII_MM], 0.12, 50)
    u, v = (cand.u + 0.5) / MM - 0.5, (cand.v + 0.5) / MM - 0.5    # back to mm

    def best(x, y, size):
        near = (cand.size_index == size) & (np.hypot(u - x, v - y) < 6.0)
        return float(cand.vote[near].max()) if near.any() else 0.0

    assert 0.35 < best(599.0, 300.0, 2) / best(200.0, 260.0, 2) < 0.65
    assert not (u < 100.0).any()


def test_a_lower_disk_is_found_from_the_outline_left_in_the_open():
    lower, upper = (250.0, 250.0, 32.0), (290.0, 262.0, 44.5)
    fits = locate(draw_maps([lower, upper]))
    assert sorted(f.size for f in fits) == ["large", "medium"]
    lo = next(f for f in fits if f.size == "medium")
    assert math.hypot(lo.cx - 250.0, lo.cy - 250.0) < 0.6


def test_a_disk_lying_mostly_on_one_found_before_it_is_measured_on_its_outline_over_that_face():
    """Regression: a disk lying mostly on a larger one, its outline in the open faded (glare), was judged after the
    larger disk and measured only on its open arc, as if it lay under it: too little outline, no disk."""
    lower, upper = (300.0, 300.0, 44.5), (320.0, 300.0, 32.0)
    maps = draw_maps([lower, upper])
    h, w = maps.shape
    yy, xx = np.mgrid[0:h, 0:w]
    u, v = (upper[0] + 0.5) * MM - 0.5, (upper[1] + 0.5) * MM - 0.5
    rim = maps.rim.copy()
    rim[(np.abs(np.arctan2(yy - v, xx - u)) < 0.3 * math.pi) & (np.hypot(xx - u, yy - v) > 24 * MM)] *= 0.2
    fits = locate(FaceMaps(face=maps.face, rim=rim, height=maps.height))
    assert sorted(f.size for f in fits) == ["large", "medium"]
    up = next(f for f in fits if f.size == "medium")
    assert math.hypot(up.cx - upper[0], up.cy - upper[1]) < 0.5


def test_a_circle_of_outline_inside_a_face_with_none_around_it_is_no_disk():
    # a ring drawn as rim but with no face inside (felt) is rejected: a disk's inside is always a face
    maps = draw_maps([(250.0, 250.0, 32.0)])
    face = np.zeros_like(maps.face)
    assert locate(FaceMaps(face=face, rim=maps.rim, height=maps.height)) == []


def test_a_disk_partly_under_a_hand_is_still_found():
    fits = locate(draw_maps([(250.0, 250.0, 44.5)], hidden_arcs=[(250.0, 300.0, 30.0)]))
    assert len(fits) == 1 and fits[0].size == "large"


def test_history_seed_keeps_a_mostly_covered_disk_and_its_id():
    lower, upper = (250.0, 250.0, 22.0), (280.0, 250.0, 44.5)   # the small one shows an 8 mm crescent
    maps = draw_maps([lower, upper])
    plain = locate(maps)
    seeded = locate(maps, seeds=[Seed(250.0, 250.0, 0, "d7", 0)])
    assert any(f.seed_id == "d7" and f.size == "small" for f in seeded)
    assert len(seeded) >= len(plain)


@pytest.mark.parametrize("bad", [dict(rays=8), dict(vote_min=1.5), dict(rim_tolerance_mm=0.0),
                                 dict(fit_passes=0), dict(radius_freedom_mm=-1.0), dict(model_path=3),
                                 dict(network_px_per_mm=0.2), dict(network_px_per_mm=3.0)])
def test_detector_config_is_validated(bad):
    with pytest.raises(ValueError):
        DetectorConfig(**bad)


# ---------------------------------------------------------------------------------------------------------------
# Stacking on maps


def _order(disks_bottom_up, shuffle=(1, 0)):
    maps = draw_maps(disks_bottom_up)
    fits = locate(maps)
    order = order_stacks(maps, fits, SCALE, 1.0)
    return fits, order


@pytest.mark.parametrize("lower, upper", [
    ((250.0, 250.0, 32.0), (290.0, 255.0, 32.0)),      # medium on medium, deep
    ((250.0, 250.0, 44.5), (300.0, 250.0, 22.0)),      # small on the edge of a large one
    ((250.0, 250.0, 22.0), (285.0, 262.0, 44.5)),      # large on a small one (half its outline in view)
    ((250.0, 250.0, 44.5), (255.0, 246.0, 32.0)),      # medium well inside a large one
])
def test_the_disk_whose_outline_runs_through_the_lens_is_on_top(lower, upper):
    fits, order = _order([lower, upper])
    assert len(fits) == 2
    up = next(k for k, f in enumerate(fits) if math.hypot(f.cx - upper[0], f.cy - upper[1]) < 2)
    lo = 1 - up
    assert order.z[up] > order.z[lo]
    assert not order.uncertain_pairs


def test_stack_of_three_gets_consistent_z():
    disks = [(250.0, 250.0, 44.5), (280.0, 250.0, 32.0), (300.0, 255.0, 22.0)]
    fits, order = _order(disks)
    assert len(fits) == 3
    z_of = {}
    for k, f in enumerate(fits):
        j = min(range(3), key=lambda j: math.hypot(f.cx - disks[j][0], f.cy - disks[j][1]))
        z_of[j] = order.z[k]
    assert z_of[0] < z_of[1] < z_of[2]


def test_history_keeps_the_order_of_two_unchanged_carried_disks():
    fits, _ = _order([(250.0, 250.0, 32.0), (290.0, 255.0, 32.0)])
    # the frame says one thing, but both were carried unchanged with the other order remembered
    up = max(range(2), key=lambda k: fits[k].cx)
    remembered = [replace(f, seed_id=f"d{k}", seed_z=(0 if k == up else 1)) for k, f in enumerate(fits)]
    order = order_stacks(draw_maps([(250.0, 250.0, 32.0), (290.0, 255.0, 32.0)]), remembered, SCALE, 1.0,
                         unchanged=[True, True])
    assert order.z[up] < order.z[1 - up]


def test_disks_a_mm_into_each_other_with_nothing_in_the_lens_are_in_contact():
    # two disks side by side, each with its whole outline (no lens reading), measured 1 mm into each other
    a, b = (250.0, 250.0, 32.0), (313.0, 250.0, 32.0)
    both = both_whole(a, b)
    fits = locate(both)
    assert len(fits) == 2
    order = order_stacks(both, fits, SCALE, 1.0)
    assert order.touching
    apart = separate_touching(fits, order.touching)
    d = math.hypot(apart[0].cx - apart[1].cx, apart[0].cy - apart[1].cy)
    assert d == pytest.approx(apart[0].r_px + apart[1].r_px, abs=0.05)


@pytest.mark.parametrize("bad", [dict(nested_fraction=1.5), dict(lens_inside_mm=3.0, lens_full_mm=2.0),
                                 dict(touch_depth_mm=9.0), dict(rays=4), dict(rim_search_mm=0.0),
                                 dict(height_weight=-1.0)])
def test_stacking_settings_are_validated(bad):
    with pytest.raises(ValueError):
        StackingConfig(**bad)


def test_a_pair_of_unchanged_carried_disks_keeps_its_order_and_a_guess_stays_a_guess():
    blank = FaceMaps(face=np.ones((150, 150), np.float32), rim=np.zeros((150, 150), np.float32),
                     height=np.zeros((150, 150), np.float32))
    base = locate(draw_maps([(100.0, 150.0, 32.0)]))[0]
    fits = [replace(base, cx=100.0, cy=150.0, seed_id="d1", seed_z=1),
            replace(base, cx=150.0, cy=150.0, seed_id="d2", seed_z=0)]
    kept = order_stacks(blank, fits, SCALE, 1.0, unchanged=[True, True])
    assert kept.z == (1, 0) and not kept.uncertain_pairs and kept.pairs[0].source == "history"
    guessed = order_stacks(blank, fits, SCALE, 1.0, unchanged=[True, True],
                           uncertain_before=frozenset({frozenset({"d1", "d2"})}))
    assert guessed.z == (1, 0) and guessed.uncertain_pairs == ((0, 1),)
    # One of them changed: the lens is read again (on blank maps it says nothing: history decides).
    read = order_stacks(blank, fits, SCALE, 1.0, unchanged=[True, False])
    assert read.pairs[0].source == "history" and read.pairs[0].strength < 0.9
    with pytest.raises(ValueError):
        order_stacks(blank, fits, SCALE, 1.0, unchanged=[True])


def _with_heights(maps: FaceMaps, disks_and_levels) -> FaceMaps:
    """`maps` with a height map: each disk's level (0, 0.5, 1) over its inside, drawn bottom to top."""
    h, w = maps.shape
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    height = np.zeros((h, w), np.float32)
    for (x, y, r), level in disks_and_levels:
        height[np.hypot(xx - ((x + 0.5) * MM - 0.5), yy - ((y + 0.5) * MM - 0.5)) <= r * MM] = level
    return replace(maps, height=height)


@pytest.mark.parametrize("upper", [0, 1])
def test_where_the_lens_shows_both_outlines_the_higher_face_is_on_top(upper):
    # a printed ring where the lower disk's hidden outline would run: the lens reads both outlines (no clear
    # rim reading); the height map says which face lies higher
    a, b = (130.0, 150.0, 32.0), (175.0, 150.0, 32.0)
    both = both_whole(a, b)
    fits = locate(both)
    assert len(fits) == 2
    fits = sorted(fits, key=lambda f: f.cx)
    levels = [(a, 0.5 if upper == 0 else 0.0), (b, 0.5 if upper == 1 else 0.0)]
    if upper == 0:
        levels = levels[::-1]  # drawn bottom to top
    order = order_stacks(_with_heights(both, levels), fits, SCALE, 1.0)
    assert order.z[upper] == 1 and order.z[1 - upper] == 0
    # without the height reading the same maps say nothing clear: a guess, reported uncertain
    blind = order_stacks(_with_heights(both, levels), fits, SCALE, 1.0, config=StackingConfig(height_weight=0.0))
    assert blind.uncertain_pairs == ((0, 1),)


def test_two_faces_at_one_height_a_mm_into_each_other_stay_in_contact():
    a, b = (250.0, 250.0, 32.0), (313.0, 250.0, 32.0)
    both = _with_heights(both_whole(a, b), [(a, 0.0), (b, 0.0)])
    order = order_stacks(both, locate(both), SCALE, 1.0)
    assert order.touching and not order.uncertain_pairs


def test_disks_in_base_contact_whose_faces_read_at_two_heights_are_not_a_stack():
    # regression: two disks a mm into each other whose frame seemed to say which lay higher (here the height map
    # puts one a level up) were stacked, and the rules reported a pin; most false pins on the tuning seeds were
    # disks in base contact. So shallow a lens is noise: unless history saw them stacked, they are in contact.
    a, b = (250.0, 250.0, 32.0), (313.0, 250.0, 32.0)
    both = _with_heights(both_whole(a, b), [(a, 0.0), (b, 0.5)])
    order = order_stacks(both, locate(both), SCALE, 1.0)
    assert order.touching and order.z == (0, 0)
    # the same reading where they overlap deeply is a stack, the higher face on top
    c = (300.0, 250.0, 32.0)
    deep = _with_heights(both_whole(a, c), [(a, 0.0), (c, 0.5)])
    fits = locate(deep)
    order = order_stacks(deep, fits, SCALE, 1.0)
    upper = max(range(2), key=lambda k: fits[k].cx)
    assert not order.touching and order.z[upper] == 1 and order.z[1 - upper] == 0


def test_new_circles_are_judged_by_the_verdict_and_history_by_its_own_rule():
    maps = draw_maps([(150.0, 150.0, 32.0)])
    h, w = maps.shape
    rect = np.full((h * 2, w * 2, 3), 90, np.uint8)
    judged = []

    def run(p, seeds=()):
        return locate_in_maps(maps, rect, list(RADII_MM), SCALE, MM, seeds, DEFAULT_CONFIG, None, None,
                              lambda ev: p, lambda ev, u, v, r, ok, prob: judged.append((ev, ok)))

    assert run(0.0) == []                                  # a verdict that sees no disk: none found
    assert judged and not any(ok for _, ok in judged)
    found = run(0.9)
    assert len(found) == 1 and found[0].confidence == pytest.approx(0.9)
    assert judged[-1][0].face_outside < 0.1 and judged[-1][0].rim_own > 0.9
    # a disk of the previous scene is kept whatever the verdict says about new circles
    seed = Seed(150.0, 150.0, 1, "d7", 0)
    kept = run(0.0, seeds=(seed,))
    assert [f.seed_id for f in kept] == ["d7"]


def test_a_circle_left_is_not_judged_again_until_a_disk_is_accepted_near_it():
    # a large disk the verdict takes, a medium one far off that it leaves; the large one's acceptance sends the
    # eye round again, and the medium circle, with nothing new near it, keeps its judgement (logged again, not
    # measured again); a lower disk next to an accepted upper one is still judged again and found
    maps = draw_maps([(150.0, 150.0, 44.5), (450.0, 450.0, 32.0)])
    h, w = maps.shape
    rect = np.full((h * 2, w * 2, 3), 90, np.uint8)
    logged = []

    def verdict(ev):
        return 0.9 if ev.radius_mm > 40 else 0.1

    fits = locate_in_maps(maps, rect, list(RADII_MM), SCALE, MM, (), DEFAULT_CONFIG, None, None, verdict,
                          lambda ev, u, v, r, ok, prob: logged.append((ev, round(u), round(v), r, ok)))
    assert [f.size for f in fits] == ["large"]
    medium = [k for k in logged if k[3] == pytest.approx(32.0 * MM) and not k[4]]
    assert len(medium) >= 2 and len({k[1:] for k in medium}) == 1     # the same judgement in each pass
    assert all(k[0] is medium[0][0] for k in medium)                   # ... measured once
    stack = draw_maps([(200.0, 200.0, 32.0), (235.0, 200.0, 32.0)])
    assert sorted(f.cx for f in locate(stack)) == pytest.approx([200.0, 235.0], abs=0.5)


def test_judging_candidates_ahead_decides_as_judging_them_in_turn(monkeypatch):
    # a crowd of piles, lone disks and touching ones: the walk's decisions may not depend on how many candidates
    # are judged ahead of it (a judgement made before a disk near it was accepted must be made again)
    import vision.locate as locate_module
    from vision.accept import accept

    rng = np.random.default_rng(5)
    disks = [(float(x), float(y), RADII_MM[int(k)]) for x, y, k in
             zip(rng.uniform(60, 540, 14), rng.uniform(60, 540, 14), rng.integers(0, 3, 14))]
    maps = draw_maps(disks, shape=(320, 320))
    found = {}
    for batch in (1, 3, 32):
        monkeypatch.setattr(locate_module, "accept", lambda *a, _b=batch, **k: accept(*a, **k, batch=_b))
        found[batch] = locate(maps)
    assert len(found[1]) >= 8
    assert found[1] == found[3] == found[32]


def test_face_inside_is_read_over_the_whole_inside_not_at_the_centre_alone():
    # Regression: the evidence once read the face (and its height) at the centre point only. A large circle
    # round a small disk (a ring printed round the art's centre, say) has face at its centre and none elsewhere.
    from vision.accept import evidence_matrix
    from vision.fit import RimReading
    from vision.verdict import CircleEvidence

    maps = draw_maps([(150.0, 150.0, 12.0)])
    K = DEFAULT_CONFIG.rays
    u = v = (150.0 + 0.5) * MM - 0.5
    reading = RimReading(u=np.array([u]), v=np.array([v]), r=np.array([44.5 * MM]), offset=np.zeros((1, K)),
                         peak=np.ones((1, K)), angles=np.arange(K) * (2 * math.pi / K))
    rays = np.ones((1, K), bool), np.zeros((1, K), bool), np.zeros((1, K), bool)
    ev = CircleEvidence(*evidence_matrix(maps, reading, *rays, np.array([44.5 * MM]), MM)[0])
    assert ev.face_inside < 0.4
    whole = CircleEvidence(*evidence_matrix(draw_maps([(150.0, 150.0, 44.5)]), reading, *rays,
                                            np.array([44.5 * MM]), MM)[0])
    assert whole.face_inside > 0.95
