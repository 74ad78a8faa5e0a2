"""Detection on drawn rectified tables: known disks, overlaps, stacks, clutter; bad frames; disk sizes.

The drawn tables (`vision.synth.drawn`: disks painted with OpenCV, flat rings, no camera) are a look the eye's
network never trained on: these tests hold it to a print it has not seen."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from tablesight.errors import InputError
from tablesight.scene import Scene
from vision.detect import detect_frame
from vision.sizes import DiskSizes
from vision.synth.drawn import RADII, DrawnDisk, draw_table, identity_calibration, random_layout


def _match(truth, scene, tol=5.0):
    pairs, used = {}, set()
    for i, g in enumerate(truth):
        best = None
        for d in scene.disks:
            if d.id in used:
                continue
            e = math.hypot(d.x_mm - g.x_mm, d.y_mm - g.y_mm)
            if e < tol and (best is None or e < best[0]):
                best = (e, d)
        if best:
            used.add(best[1].id)
            pairs[i] = best
    return pairs


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_drawn_tables_are_found_with_size_centre_and_order(seed):
    truth = random_layout(seed, n=30, stacks=5)
    img = draw_table(truth, seed, clutter=True)
    scene = detect_frame(img, identity_calibration())
    pairs = _match(truth, scene)
    assert len(pairs) >= len(truth) - 1, "recall on a clean drawn table"
    assert len(scene.disks) - len(pairs) <= 2, "false positives on a clean drawn table"
    errs = [e for e, _ in pairs.values()]
    assert np.median(errs) < 0.4
    assert all(d.size == truth[i].size for i, (_, d) in pairs.items())
    for i, (_, d) in pairs.items():
        assert d.radius_mm == RADII[truth[i].size]
        assert 0.0 <= d.confidence <= 1.0
    # stacking from one frame: seven overlapping pairs in ten (found) keep the drawn order at least (the eye
    # orders about five in six right on looks it never saw: benchmarks/results/families.md; history does the rest)
    wrong, n = [], 0
    for i in pairs:
        for j in pairs:
            a, b = truth[i], truth[j]
            if i < j and math.hypot(a.x_mm - b.x_mm, a.y_mm - b.y_mm) < RADII[a.size] + RADII[b.size] - 1:
                da, db = pairs[i][1], pairs[j][1]
                n += 1
                if (a.z > b.z) != (da.z > db.z):
                    wrong.append((a, b))
    assert n >= 3 and len(wrong) <= 0.3 * n, wrong


def test_stack_of_three_gets_consistent_z():
    # Failed with the network trained on 2026-11-26 (on this flat drawn look, no side wall nor shadow, the middle
    # disk's thin border read like a ring printed in the lower disk's art); the network trained on from it on
    # 2026-11-29 with crops on disks lying wholly on others finds the middle disk.
    truth = [DrawnDisk(300, 300, "large", 0, "red"), DrawnDisk(330, 310, "medium", 1, "blue"),
             DrawnDisk(350, 300, "small", 2, "red")]
    scene = detect_frame(draw_table(truth, 5), identity_calibration())
    pairs = _match(truth, scene)
    assert len(pairs) == 3
    zs = [pairs[i][1].z for i in range(3)]
    assert zs[0] < zs[1] < zs[2]


def test_empty_felt_has_no_disks():
    scene = detect_frame(draw_table([], 3, clutter=True), identity_calibration())
    assert len(scene.disks) == 0


@pytest.mark.parametrize("frame, message", [
    (None, "empty"),
    (np.zeros((0, 0, 3), np.uint8), "empty"),
    (np.zeros((500, 500, 3), np.uint8), "frame is 500x500"),
    (np.zeros((980, 980, 3), np.float32), "8-bit"),
])
def test_bad_frames_raise_input_error(frame, message):
    with pytest.raises(InputError, match=message):
        detect_frame(frame, identity_calibration())


def test_previous_scene_keeps_ids_and_seeds_a_mostly_covered_disk():
    cal = identity_calibration()
    lone = [DrawnDisk(400, 400, "medium", 0, "red")]
    first = detect_frame(draw_table(lone, 1), cal)
    assert len(first.disks) == 1
    # a large disk now covers most of it
    covered = lone + [DrawnDisk(400 + 38, 400, "large", 1, "blue")]
    second = detect_frame(draw_table(covered, 1), cal, previous=first)
    ids = {d.id for d in second.disks}
    assert first.disks[0].id in ids
    kept = second.disk(first.disks[0].id)
    assert math.hypot(kept.x_mm - 400, kept.y_mm - 400) < 1.5
    assert kept.z < max(d.z for d in second.disks)


@pytest.mark.parametrize("text, expected", [("44,64,89", (44, 64, 89)), (" 40 , 60 , 80 ", (40, 60, 80)),
                                            ("39", (39, 39, 39)), ("39,39,39", (39, 39, 39)),
                                            ("30,30,45", (30, 30, 45))])
def test_disk_sizes_parse(text, expected):
    s = DiskSizes.parse(text)
    assert (s.small, s.medium, s.large) == expected


@pytest.mark.parametrize("text", ["44,64", "a,b,c", "64,44,89", "44,64,900", "", "4"])
def test_disk_sizes_refuse_nonsense(text):
    with pytest.raises(InputError):
        DiskSizes.parse(text)


@pytest.mark.parametrize("sizes, size, canonical", [
    ("44,64,89", "medium", "medium"), ("39", "large", "small"), ("30,45,45", "large", "medium"),
    ("30,30,45", "medium", "small"), ("30,30,45", "large", "large")])
def test_disks_of_one_diameter_are_reported_as_its_first_class(sizes, size, canonical):
    assert DiskSizes.parse(sizes).canonical(size) == canonical


@pytest.mark.parametrize("sizes, scale", [
    ("44,64,89", 1.0), ("28,40,60", 1.0), ("50,80,110", 1.0),   # inside the diameters the network learned
    ("20,26,34", 1.4), ("14", 36 / 14),                          # small chips shown larger (one size: 36 mm)
    ("60,90,132", 110 / 132), ("25,60,140", 28 / 25)])          # very large disks smaller, unless small ones lose
def test_the_network_reads_the_table_at_a_scale_that_brings_the_disks_into_its_range(sizes, scale):
    from vision.detect import network_px_per_mm

    assert network_px_per_mm(DiskSizes.parse(sizes)) == pytest.approx(scale)


@pytest.mark.parametrize("sizes, preferred, scale", [
    ("44,64,89", 0.8, 0.8), ("44,64,89", 1.2, 1.2),              # the disks stay within what it learned
    ("44,64,89", 1.5, 110 / 89), ("30,45,60", 0.8, 28 / 30),     # no further than brings one size to its edge
    ("20,26,34", 0.8, 1.4), ("60,90,132", 1.2, 110 / 132),       # out of range at any preference: brought in
    ("25,60,140", 0.8, 28 / 25)])                                # no scale fits all: the small ones are kept
def test_the_network_reads_at_the_preferred_scale_where_the_disks_stay_in_its_range(sizes, preferred, scale):
    from vision.detect import network_px_per_mm

    from vision.fit import DEFAULT_CONFIG

    config = replace(DEFAULT_CONFIG, network_px_per_mm=preferred)
    assert network_px_per_mm(DiskSizes.parse(sizes), config) == pytest.approx(scale)


@pytest.mark.parametrize("sizes, one_size_mm, scale", [
    ("25", 36.0, 36 / 25), ("39", 36.0, 1.0), ("100", 36.0, 1.0),    # one size: shown at least that large
    ("25", None, 28 / 25), ("25", 150.0, 110 / 25),                  # not asked; never past what it learned
    ("25,30,40", 36.0, 28 / 25), ("44,64,89", 36.0, 1.0)])            # three sizes: as before
def test_chips_of_one_size_are_shown_to_the_network_at_least_so_large(sizes, one_size_mm, scale):
    from vision.detect import network_px_per_mm

    from vision.fit import DEFAULT_CONFIG

    config = replace(DEFAULT_CONFIG, one_size_mm=one_size_mm)
    assert network_px_per_mm(DiskSizes.parse(sizes), config) == pytest.approx(scale)


@pytest.mark.parametrize("bad", [4.0, 301.0, True, float("nan")])
def test_one_size_mm_out_of_range_is_refused(bad):
    from vision.fit import DetectorConfig

    with pytest.raises(ValueError, match="one_size_mm"):
        DetectorConfig(one_size_mm=bad)


def test_a_grid_of_small_chips_printed_alike_is_not_read_as_a_cloth_pattern():
    """Regression: 30 chips of 25 mm printed alike, set out in rows, were read at the very edge of the diameters
    the network learned, where a field of round things of one print reads as a cloth's pattern: 17 of 30 found.
    Shown larger (`DetectorConfig.one_size_mm`), they are found, and nothing is made up."""
    chips = [DrawnDisk(300 + 40.0 * i, 300 + 40.0 * j, "small", ring="white", radius_mm=12.5)
             for i in range(6) for j in range(5)]
    scene = detect_frame(draw_table(chips, 3), identity_calibration(), "25")
    assert len(_match(chips, scene, tol=3.0)) >= 24
    assert len(scene.disks) <= len(_match(chips, scene, tol=3.0)) + 1


def _chips(seed: int, n: int, radius: float) -> list[DrawnDisk]:
    """`n` chips of one radius scattered apart on the drawn table."""
    rng = np.random.default_rng(seed)
    chips: list[DrawnDisk] = []
    while len(chips) < n:
        x, y = rng.uniform(radius + 20, 880 - radius, 2)
        if all(math.hypot(x - c.x_mm, y - c.y_mm) > 2 * radius + 6 for c in chips):
            chips.append(DrawnDisk(float(x), float(y), "small", ring=("red", "blue", "white")[len(chips) % 3],
                                   radius_mm=radius))
    return chips


@pytest.mark.parametrize("diameter", [39.0, 20.0])
def test_chips_of_one_size_are_found_once_each(diameter):
    # Round chips of one size (`--disk-diameters-mm 39`): looked for once, each chip one disk of the first class.
    chips = _chips(5, 18, diameter / 2)
    scene = detect_frame(draw_table(chips, 5), identity_calibration(), str(diameter))
    pairs = _match(chips, scene, tol=3.0)
    assert len(pairs) >= len(chips) - 1
    assert len(scene.disks) <= len(chips) + 1
    assert {d.size for d in scene.disks} == {"small"}
    assert all(d.radius_mm == diameter / 2 for d in scene.disks)


def test_scene_round_trips_through_json():
    truth = random_layout(21, n=12, stacks=2)
    scene = detect_frame(draw_table(truth, 21), identity_calibration())
    again = Scene.from_json(scene.to_json())
    assert [d.id for d in again.disks] == [d.id for d in scene.disks]


def test_low_contrast_ring_is_judged_on_its_own_rim_contrast(monkeypatch):
    """Regression: a border ring only a little different from the felt (a green army on green felt) was refused
    by a fixed edge threshold (4 of these 24 found). The eye reads outlines, not colour steps."""
    from vision.synth.drawn import RING_COLOURS

    monkeypatch.setitem(RING_COLOURS, "felt_green", (50, 130, 60))  # the felt is (40, 110, 50) plus noise
    found = n = 0
    for seed in range(6):
        truth = [DrawnDisk(200 + 150 * k, 300 + 100 * (seed % 3), s, ring="felt_green")
                 for k, s in enumerate(["small", "small", "medium", "large"])]
        scene = detect_frame(draw_table(truth, seed), identity_calibration())
        for t in truth:
            n += 1
            found += any(math.hypot(d.x_mm - t.x_mm, d.y_mm - t.y_mm) < 3 for d in scene.disks)
    assert found >= 9, f"{found}/{n} felt-coloured rings found"


@pytest.mark.parametrize("angle", [0.0, 0.7, 2.0, 4.1])
def test_disks_drawn_in_base_contact_are_found_touching_not_pinned(angle):
    pairs = [("small", "medium"), ("medium", "large"), ("small", "small")]
    r = {"small": 22.0, "medium": 32.0, "large": 44.5}
    drawn = []
    for k, (sa, sb) in enumerate(pairs):
        x, y = 200.0 + 280.0 * k, 400.0
        d = r[sa] + r[sb]
        drawn += [DrawnDisk(x, y, sa, 0, "red"), DrawnDisk(x + d * math.cos(angle), y + d * math.sin(angle), sb, 0,
                                                            "blue")]
    scene = detect_frame(draw_table(drawn, 11), identity_calibration())
    assert len(scene.disks) == len(drawn)
    assert all(d.z == 0 for d in scene.disks)
    # No pair overlaps by more than the rules' contact tolerance (0.5 mm): no pin anywhere.
    for i, p in enumerate(scene.disks):
        for q in scene.disks[i + 1:]:
            assert math.hypot(p.x_mm - q.x_mm, p.y_mm - q.y_mm) - p.radius_mm - q.radius_mm > -0.5, (p.id, q.id)


@pytest.mark.parametrize("offset", [10.0, 12.0])
def test_disk_carried_onto_a_resting_one_of_its_size_is_found_with_history(offset):
    """A small disk carried onto a resting small one, 10-12 mm off its centre: the resting disk's seed from the
    previous scene was accepted first, and the carried disk, fully in view, was dropped as a 'copy' of it (any
    circle of the same class within half a radius was)."""
    lower = DrawnDisk(300, 300, "small", 0, "red")
    upper = DrawnDisk(300 + offset, 303, "small", 1, "blue")
    before = detect_frame(draw_table([lower], 7), identity_calibration())
    assert len(before.disks) == 1
    scene = detect_frame(draw_table([lower, upper], 7), identity_calibration(), previous=before)
    found_lower, found_upper = (min(scene.disks, key=lambda d: math.hypot(d.x_mm - t.x_mm, d.y_mm - t.y_mm))
                                for t in (lower, upper))
    for t, d in ((lower, found_lower), (upper, found_upper)):
        assert math.hypot(d.x_mm - t.x_mm, d.y_mm - t.y_mm) < 1.5, t
    assert len(scene.disks) == 2
    assert found_lower.id == before.disks[0].id
    assert found_upper.z > found_lower.z


def test_a_disk_lying_on_another_is_aligned_again_on_its_outline_over_it(monkeypatch):
    """Once the order is known, the upper disk of a pile is aligned again with its outline over the lower disk's
    face (before, those rays were left out: it might have lain under); the lower disk, and a run without
    alignment, are left as they were."""
    from dataclasses import replace

    import vision.detect as detect
    from vision.fit import DEFAULT_CONFIG

    calls = []
    real = detect.align_centres

    def spy(img, x, y, r, usable):
        calls.append((x.copy(), y.copy(), usable.copy()))
        return real(img, x, y, r, usable)

    monkeypatch.setattr(detect, "align_centres", spy)
    lower = DrawnDisk(300, 300, "large", 0, "red")
    upper = DrawnDisk(350, 305, "medium", 1, "blue")
    img = draw_table([lower, upper], 7)
    cal = identity_calibration()
    scene = detect_frame(img, cal)
    assert len(scene.disks) == 2 and len(calls) == 1
    x, y, usable = calls[0]
    (ux, uy), (lx, ly) = detect.table_to_rect(cal, np.array([[upper.x_mm, upper.y_mm], [lower.x_mm, lower.y_mm]]))
    ppm = detect.px_per_mm(cal)
    assert len(x) == 1 and math.hypot(x[0] - ux, y[0] - uy) < 2.0 * ppm   # the upper disk alone
    ang = np.arange(usable.shape[1]) * (2 * math.pi / usable.shape[1])
    over = np.hypot(x[0] + RADII["medium"] * ppm * np.cos(ang) - lx,
                    y[0] + RADII["medium"] * ppm * np.sin(ang) - ly) < (RADII["large"] - 2.0) * ppm
    assert over.sum() > 20 and usable[0][over].mean() > 0.9   # its outline over the large disk: aligned on
    found = min(scene.disks, key=lambda d: math.hypot(d.x_mm - upper.x_mm, d.y_mm - upper.y_mm))
    assert math.hypot(found.x_mm - upper.x_mm, found.y_mm - upper.y_mm) < 1.0
    calls.clear()
    detect_frame(img, identity_calibration(), config=replace(DEFAULT_CONFIG, align=False))
    assert not calls


def test_the_second_alignment_never_makes_an_overlap_the_order_did_not_judge(monkeypatch):
    """Regression: a disk lying over another, aligned again once the order was known, could be nudged a fraction of
    a mm onto a neighbour it only touched, and that pair, never ordered nor separated, read as a pin. A move that
    changes which disks overlap is not taken."""
    import vision.detect as detect

    lower = DrawnDisk(300, 300, "large", 0, "red")
    upper = DrawnDisk(350, 305, "medium", 1, "blue")
    d = np.array([1.0, 0.1]) / math.hypot(1.0, 0.1)
    gap = 0.4
    touching = DrawnDisk(350 + d[0] * (32 + 22 + gap), 305 + d[1] * (32 + 22 + gap), "small", 0, "red")
    moved = []

    def towards_the_neighbour(img, x, y, r, usable):     # an alignment that pulls the disk 1.5 px its way
        moved.append(len(x))
        return x + 1.5 * d[0], y + 1.5 * d[1]

    monkeypatch.setattr(detect, "align_centres", towards_the_neighbour)
    scene = detect_frame(draw_table([lower, upper, touching], 7), identity_calibration())
    assert moved and len(scene.disks) == 3
    a, b = (min(scene.disks, key=lambda q: math.hypot(q.x_mm - t.x_mm, q.y_mm - t.y_mm)) for t in (upper, touching))
    assert a.radius_mm + b.radius_mm - math.hypot(a.x_mm - b.x_mm, a.y_mm - b.y_mm) < 0.5


def test_disks_smaller_than_the_network_learned_are_read_at_its_scale():
    # Regression: disks of 20 / 26 / 34 mm, under the 28-110 mm the network learned at 1 px/mm, were found half the
    # time on rendered tables of the classic look (recall 51 %, precision 79 % on these three frames), 80 / 93 %
    # with the table read at 1.4 px/mm.
    from vision.synth.camera import table_camera
    from vision.synth.render import render_frame
    from vision.synth.scenes import random_table
    from vision.synth.tiers import tier_settings
    from vision.synth.truth import truth_calibration

    diam = (20.0, 26.0, 34.0)
    present = found = detections = false = 0
    for seed in (501, 502, 503):
        setup = random_table(seed, "standard", diameters_mm=diam)
        camera = table_camera(seed, tier_settings("standard").camera)
        frame = render_frame(setup, camera)
        scene = detect_frame(frame.image, truth_calibration(camera, diam), diam)
        truth = [t for t in frame.scene.disks if t.extra.get("visible_fraction", 1.0) >= 0.5]
        pairs = _match(truth, scene, tol=3.0)
        present, found = present + len(truth), found + len(pairs)
        detections += len(scene.disks)
        false += len(scene.disks) - len(pairs)
    assert found / present >= 0.7, f"recall {found}/{present}"
    assert (detections - false) / detections >= 0.85, f"precision {detections - false}/{detections}"


def test_the_trained_diameters_are_the_randomized_worlds():
    # `network_px_per_mm` trusts the network within TRAINED_DIAMETERS_MM: the world it learned on must span them
    from vision.facemap import TRAINED_DIAMETERS_MM
    from vision.synth.world import room_diameters

    drawn = np.array([room_diameters(np.random.default_rng(k)) for k in range(3000)])
    lo, hi = TRAINED_DIAMETERS_MM
    assert drawn.min() >= lo and drawn.max() <= hi
    assert drawn[:, 0].min() < lo + 1 and drawn[:, 2].max() > hi - 5


SMARTIES = "/usr/share/doc/opencv-doc/examples/data/smarties.png"
# The twelve sweets wholly in view in OpenCV's photo (px, read off the picture; two more are cut by its lower edge)
SMARTIES_CENTRES = [(377, 81), (269, 117), (387, 170), (205, 211), (287, 213), (347, 238), (33, 228), (98, 259),
                    (152, 271), (220, 307), (294, 320), (134, 327)]


@pytest.mark.skipif(not __import__("os").path.exists(SMARTIES), reason="Debian's opencv-doc is not installed")
@pytest.mark.parametrize("diameters, radii", [("52", {26.0}), ("40,52,70", {26.0}),
                                              ("50,52,54", None)])   # three sizes 2 mm apart: any of them
def test_a_real_photo_of_round_sweets_on_a_white_table(diameters, radii):
    # A real photograph, no look the network trained on: round, shaded, glossy sweets about 52 px across, taken
    # as a top-down table at 1 px/mm. Each one wholly in view is found once, at its place, and nothing else.
    import cv2

    from calibration.table import TableCalibration

    img = cv2.imread(SMARTIES)
    h, w = img.shape[:2]
    cal = TableCalibration((w, h), np.array([[1.0, 0, -40.0], [0, 1.0, -40.0], [0, 0, 1.0]]),
                           battlefield_mm=(w - 80.0, h - 80.0))
    scene = detect_frame(img, cal, diameters)
    found = [(d.x_mm + 40.0, d.y_mm + 40.0) for d in scene.disks]
    for cx, cy in SMARTIES_CENTRES:
        assert sum(math.hypot(cx - x, cy - y) < 6.0 for x, y in found) == 1, (cx, cy)
    assert len(found) <= len(SMARTIES_CENTRES) + 1     # at most one of the two cut by the edge
    if radii is not None:
        assert {d.radius_mm for d in scene.disks} == radii


def test_a_disk_turned_down_on_a_larger_one_is_reported_where_it_may_lie_and_claims_nothing():
    # Test seed 502 in a training family's room: a small disk lies wholly on a larger one, and one frame's eye does
    # not claim it (from above it looks like a ring in the larger one's art); the verdict found it likely enough
    # that the scene says where it may lie (`suspected_disks`). Saying so changes no disk of the scene. (The nest
    # judge, which may take a suspicion for a disk, is not asked here.)
    from dataclasses import replace

    from vision.fit import DEFAULT_CONFIG
    from vision.synth.render import render_frame
    from vision.synth.seeds import TEST_SEEDS
    from vision.synth.truth import truth_calibration
    from vision.synth.world import world_table

    setup, camera = world_table(TEST_SEEDS[2], "photo-thin-felt")
    frame = render_frame(setup, camera)
    diam = tuple(float(v) for v in setup.diameters_mm)
    cal = truth_calibration(camera, diam)
    unjudged = replace(DEFAULT_CONFIG, nest_probability=None)
    scene = detect_frame(frame.image, cal, diam, config=unjudged)
    found = {d.id: d for d in scene.disks}
    suspected = scene.extra["suspected_disks"]
    for s in suspected:
        on = found[s["on"]]
        assert s["radius_mm"] < on.radius_mm and 0.2 <= s["probability"] < 1
        assert math.hypot(s["x_mm"] - on.x_mm, s["y_mm"] - on.y_mm) + 0.7 * s["radius_mm"] <= on.radius_mm + 1.0
    truth = [t for t in frame.scene.disks if not t.extra.get("held")]
    missed = [t for t in truth if t.z > 0 and not any(
        d.size == t.size and math.hypot(d.x_mm - t.x_mm, d.y_mm - t.y_mm) < 0.5 * t.radius_mm for d in scene.disks)]
    assert any(s["size"] == t.size and math.hypot(s["x_mm"] - t.x_mm, s["y_mm"] - t.y_mm) < 0.5 * t.radius_mm
               for s in suspected for t in missed)
    quiet = detect_frame(frame.image, cal, diam, config=replace(unjudged, suspect_probability=1.0))
    assert "suspected_disks" not in quiet.extra
    assert [d.to_json() for d in quiet.disks] == [d.to_json() for d in scene.disks]


def test_the_network_reads_the_table_at_the_configured_scale():
    """`DetectorConfig.network_px_per_mm` is the scale the maps are read at (their grid, 2 map px per network
    px), and the disks come back in table mm either way."""
    from dataclasses import replace

    from vision.detect import locate_disks, sizes_for
    from vision.fit import DEFAULT_CONFIG

    cal = identity_calibration()
    disks = [DrawnDisk(300, 300, "large", 0, "red"), DrawnDisk(650, 600, "medium", 0, "blue")]
    rect = draw_table(disks, 3)
    at = {s: locate_disks(rect, cal, sizes_for(cal), config=replace(DEFAULT_CONFIG, network_px_per_mm=s))
          for s in (1.0, 0.8)}
    assert at[1.0].maps.shape == (490, 490)
    assert at[0.8].maps.shape == (392, 392)
    for det in at.values():
        assert sorted((round(d.x_mm / 10), round(d.y_mm / 10), d.size) for d in det.scene.disks) == \
            [(30, 30, "large"), (65, 60, "medium")]
