"""Armies from the camera: the disks grouped by their ring colour (webui/armies.py), and the unit names'
autocomplete by first letters. Hand-made colour sets, table-driven."""

from __future__ import annotations

import math

import pytest

from tablesight.errors import InputError
from webui.armies import (ARMY_DELTA_E, DiskLook, bgr_to_lab, delta_e, group_armies, looks_of_scene,
                          units_by_prefix)

# Army colours as a camera gives them (blue, green, red), each seen a little lighter or darker across the table.
RED = [(40, 40, 190), (52, 50, 205), (30, 32, 170), (45, 44, 180), (38, 36, 200)]
BLUE = [(170, 80, 30), (185, 92, 40), (150, 70, 25), (160, 78, 35)]
GREEN = [(40, 140, 50), (48, 155, 60), (34, 120, 44)]
YELLOWISH = [(30, 200, 220)]  # one odd disk: a marker, a disk of an army not on the table


def looks(**armies):
    out = []
    for name, colours in armies.items():
        for k, c in enumerate(colours):
            out.append(DiskLook(f"{name}{k}", c))
    return out


def as_sets(grouping):
    return sorted(sorted(a.disks) for a in grouping.armies)


@pytest.mark.parametrize("case, disks, expected", [
    ("two armies", looks(r=RED, b=BLUE),
     [[f"b{i}" for i in range(4)], [f"r{i}" for i in range(5)]]),
    ("three armies", looks(r=RED, b=BLUE, g=GREEN),
     [[f"b{i}" for i in range(4)], [f"g{i}" for i in range(3)], [f"r{i}" for i in range(5)]]),
    ("one outlier stays alone", looks(r=RED, b=BLUE, y=YELLOWISH),
     [[f"b{i}" for i in range(4)], [f"r{i}" for i in range(5)], ["y0"]]),
    ("interleaved order", [DiskLook("x1", RED[0]), DiskLook("x2", BLUE[0]), DiskLook("x3", RED[1]),
                           DiskLook("x4", BLUE[1])],
     [["x1", "x3"], ["x2", "x4"]]),
    ("one army", looks(r=RED), [[f"r{i}" for i in range(5)]]),
    ("nothing", [], []),
])
def test_disks_are_grouped_by_ring_colour(case, disks, expected):
    assert as_sets(group_armies(disks)) == expected, case


def test_armies_are_listed_largest_first_with_their_mean_colour():
    g = group_armies(looks(b=BLUE, r=RED, y=YELLOWISH))
    assert [len(a.disks) for a in g.armies] == [5, 4, 1]
    red = g.armies[0]
    assert red.colour_bgr == tuple(round(sum(c[i] for c in RED) / len(RED)) for i in range(3))
    assert red.colour_hex == "#{:02x}{:02x}{:02x}".format(*reversed(red.colour_bgr))
    assert 0 < red.spread_delta_e < ARMY_DELTA_E
    assert g.armies[2].spread_delta_e == 0


def test_average_linkage_does_not_chain_two_armies_through_in_between_colours():
    # A ramp from red to blue in steps smaller than the threshold: connected components would make it one army.
    ramp = [DiskLook(f"s{i}", (int(40 + 13 * i), 40, int(190 - 16 * i))) for i in range(11)]
    steps = [delta_e(bgr_to_lab(ramp[i].ring_bgr), bgr_to_lab(ramp[i + 1].ring_bgr)) for i in range(10)]
    assert max(steps) < ARMY_DELTA_E
    g = group_armies(ramp)
    assert len(g.armies) > 1
    # ... and each group is a run of neighbouring colours
    for a in g.armies:
        idx = sorted(int(d[1:]) for d in a.disks)
        assert idx == list(range(idx[0], idx[-1] + 1))


def test_owners_are_counted_and_an_army_has_a_player_only_when_all_agree():
    disks = [DiskLook("a", RED[0], "orcs"), DiskLook("b", RED[1], "orcs"), DiskLook("c", BLUE[0], "empire"),
             DiskLook("d", BLUE[1], None)]
    g = group_armies(disks)
    by_first = {a.disks[0]: a for a in g.armies}
    assert by_first["a"].player == "orcs" and by_first["a"].owners == (("orcs", 2),)
    assert by_first["c"].player is None and by_first["c"].owners == (("empire", 1), (None, 1))


def test_disks_without_a_ring_colour_are_listed_apart():
    g = group_armies([DiskLook("a", RED[0]), DiskLook("b", None), DiskLook("c", RED[1])])
    assert as_sets(g) == [["a", "c"]] and g.no_colour == ("b",)


def test_the_threshold_decides():
    # red and orange: one army under a loose threshold, two under a strict one
    disks = [DiskLook("r", (40, 40, 190)), DiskLook("o", (30, 120, 230))]
    d = delta_e(bgr_to_lab(disks[0].ring_bgr), bgr_to_lab(disks[1].ring_bgr))
    assert len(group_armies(disks, threshold_delta_e=d + 1).armies) == 1
    assert len(group_armies(disks, threshold_delta_e=d - 1).armies) == 2


def test_lab_of_known_colours():
    assert bgr_to_lab((255, 255, 255)) == pytest.approx((100.0, 0.0, 0.0), abs=0.05)
    assert bgr_to_lab((0, 0, 0)) == pytest.approx((0.0, 0.0, 0.0), abs=0.05)
    assert bgr_to_lab((0, 0, 255)) == pytest.approx((53.24, 80.09, 67.20), abs=0.05)  # sRGB red
    assert bgr_to_lab((255, 0, 0)) == pytest.approx((32.30, 79.19, -107.86), abs=0.05)  # sRGB blue
    # lightness counts half: a lighter print of one colour is closer than its hue difference would be
    assert delta_e((50, 0, 0), (70, 0, 0)) == pytest.approx(10.0)
    assert delta_e((50, 0, 0), (50, 20, 0)) == pytest.approx(20.0)


@pytest.mark.parametrize("bad", [(0, 0), (0, 0, 300), (0, math.nan, 0), (-1, 0, 0)])
def test_a_bad_colour_is_one_clear_error(bad):
    with pytest.raises(InputError, match="colour"):
        bgr_to_lab(bad)


@pytest.mark.parametrize("threshold", [0, -3, math.inf, "20"])
def test_a_bad_threshold_is_refused(threshold):
    with pytest.raises(InputError, match="threshold"):
        group_armies([], threshold_delta_e=threshold)


def test_looks_of_a_scene_read_extra_ring_bgr():
    from tablesight.scene import Scene

    scene = Scene.from_json({"format": "tablesight.scene/1", "battlefield": {"width_mm": 900, "height_mm": 900},
                             "players": [{"id": "orcs", "initiative": 1}],
                             "disks": [{"id": "d1", "x_mm": 100, "y_mm": 100, "radius_mm": 22, "z": 0, "player": "orcs",
                                        "ring_bgr": [40, 40, 190]},
                                       {"id": "d2", "x_mm": 300, "y_mm": 100, "radius_mm": 22, "z": 0,
                                        "ring_bgr": [40, "x", 190]},
                                       {"id": "d3", "x_mm": 500, "y_mm": 100, "radius_mm": 22, "z": 0}]})
    assert looks_of_scene(scene) == [DiskLook("d1", (40.0, 40.0, 190.0), "orcs"), DiskLook("d2", None, None),
                                     DiskLook("d3", None, None)]


def test_the_demo_table_seen_by_the_eye_splits_into_its_two_true_armies():
    """The real thing: the demo's rendered frame, detected by the eye, owners unknown; each army found is one true
    army (the disks matched to the truth by `vision.scene_match`, as the demo's truth overlay does)."""
    from vision.scene_match import match
    from webui.demo_eye import DemoEyeFeed

    feed = DemoEyeFeed()
    scene = feed.state().scene
    truth = feed.truth_for(feed.state().version)
    assert all(d.player is None for d in scene.disks)
    g = group_armies(looks_of_scene(scene))
    assert len(g.armies) == 2 and not g.no_colour
    matched = match(truth, scene)
    for army in g.armies:
        owners = {truth.disk(matched[d]).player for d in army.disks if d in matched}
        assert len(owners) == 1, army
    assert {truth.disk(matched[a.disks[0]]).player for a in g.armies} == {"orcs", "empire"}


def units():
    from rules.melee_commands import load_catalogs

    return load_catalogs([]).units


@pytest.mark.parametrize("typed, first", [
    ("gran", "gran-jefe"),  # two-word names first ("Gran jefe", "Gran mago"), then by key
    ("GRAN M", "gran-mago"),
    ("orc b", "pena-de-guerreroz-orkoz"),  # its alias "Orc Boyz" before "Orc Arrer Boyz"
    ("boyz", "pena-de-guerreroz-orkoz"),
    ("espad", "espadachines-de-marienburgo"),
    ("cañon", "canon-infernal"),  # accents aside; two words before "Cañón de salvas"
    ("wolf", "jinetez-de-lobo"),
])
def test_unit_names_by_their_first_letters(typed, first):
    found = units_by_prefix(units(), typed)
    assert found and found[0]["key"] == first, found
    assert all(set(f) == {"key", "name", "matched"} for f in found)


def test_unit_autocomplete_matches_word_starts_only_and_is_bounded():
    every = units_by_prefix(units(), "e", limit=50)
    assert every and all(any(w.startswith("e") for w in __import__("re").findall(r"[a-z0-9]+", f["matched"].lower()))
                         for f in every)
    assert len(units_by_prefix(units(), "e", limit=3)) <= 3
    assert units_by_prefix(units(), "zzzz") == []
    assert units_by_prefix(units(), "  ") == []
    with pytest.raises(InputError, match="prefix"):
        units_by_prefix(units(), "x" * 65)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_armies_found_meet_the_rule_on_random_tables(seed):
    """The rule, checked from its definition on 60 random colours: no two armies found are within the threshold
    (mean delta-E between their members), so average linkage had nothing left to join."""
    import random

    rng = random.Random(seed)
    disks = [DiskLook(f"d{i}", (rng.uniform(0, 255), rng.uniform(0, 255), rng.uniform(0, 255))) for i in range(60)]
    g = group_armies(disks)
    lab = {d.id: bgr_to_lab(d.ring_bgr) for d in disks}
    assert sorted(d for a in g.armies for d in a.disks) == sorted(lab)
    for i, a in enumerate(g.armies):
        for b in g.armies[i + 1:]:
            mean = sum(delta_e(lab[x], lab[y]) for x in a.disks for y in b.disks) / (len(a.disks) * len(b.disks))
            assert mean > ARMY_DELTA_E
    assert group_armies(disks) == g  # the same colours, the same armies
