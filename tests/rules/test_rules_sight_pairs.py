"""Pairs, line of sight readings, deviation order, terrain control, off-battlefield and borderline calls."""

import math

import pytest
from rules_scenes import disk, piece, rect, scene

from rules.diskwars import DiskwarsSettings, build_report, deviation_candidates, line_of_sight
from tablesight.errors import InputError

A = disk("a", 100, 450, 22, player="orcs")
B = disk("b", 800, 450, 22, player="empire")


def on_segment_clear(w, poly):
    from shapely.geometry import LineString, Polygon

    return LineString(w).intersection(Polygon(poly).buffer(-1e-6)).is_empty


@pytest.mark.parametrize("name, poly, extra, visible", [
    ("wall across the table", rect(440, 0, 460, 900), [], False),
    ("wall short of the centre line", rect(440, 300, 460, 440), [], True),
    ("wall over the centre line, open above", rect(440, 435, 460, 480), [], True),
    ("wall covering every line", rect(440, 420, 460, 480), [], False),
    ("top edge exactly on the outer tangent: grazing is not crossing", rect(440, 428, 460, 600), [], True),
    ("a disk between them never blocks", rect(440, 0, 460, 10), [disk("c", 450, 450, 44.5)], True),
])
def test_line_of_sight_cases(name, poly, extra, visible):
    sc = scene([A, B, *extra], terrain=[piece("wall", poly, "blocks_los")])
    res = line_of_sight(sc, "a", "b")
    assert res.visible == visible, name
    rep = build_report(sc)
    pair = rep.pair("a", "b")
    assert pair.los == visible
    if visible:
        p, q = res.witness
        assert math.dist(p, (100, 450)) <= 22 + 1e-6 and math.dist(q, (800, 450)) <= 22 + 1e-6
        assert on_segment_clear(res.witness, poly)
        assert on_segment_clear(pair.los_line_mm, poly)
    else:
        assert res.witness is None and pair.los_line_mm is None


@pytest.mark.parametrize("keywords", [("blocks_los",), ("blocks_los", "cover")])
def test_piece_a_disk_overlaps_does_not_block_its_lines(keywords):
    wall = piece("wall", rect(100, 380, 140, 520), *keywords)  # disk a stands on it
    assert line_of_sight(scene([A, B], terrain=[wall]), "a", "b").visible
    wall_far = piece("wall", rect(300, 0, 340, 900), *keywords)
    assert not line_of_sight(scene([A, B], terrain=[wall_far]), "a", "b").visible


@pytest.mark.parametrize("wall_x", [122.0, 121.7])  # exact contact; 0.3 mm in: within the contact tolerance
def test_touching_a_piece_is_not_overlapping_it(wall_x):
    poly = rect(wall_x, 300, 160, 900)  # a's right edge touches the wall's left side
    sc = scene([A, disk("c", 700, 100, 22), disk("d", 100, 150, 22)], terrain=[piece("wall", poly, "blocks_los")])
    assert build_report(sc).terrain_overlaps == ()
    assert not line_of_sight(sc, "a", "c").visible  # the wall still blocks a's lines past it
    res = line_of_sight(sc, "a", "d")  # straight up beside the wall: clear
    assert res.visible and on_segment_clear(res.witness, poly)


def test_elevated_terrain_sees_over_everything():
    hill = piece("hill", rect(60, 410, 140, 490), "elevated")
    wall = piece("wall", rect(440, 0, 460, 900), "blocks_los")
    sc = scene([A, B, disk("c", 800, 200, 22)], terrain=[hill, wall])
    assert line_of_sight(sc, "a", "b").visible and line_of_sight(sc, "b", "a").visible
    assert not line_of_sight(scene([A, B], terrain=[wall]), "a", "b").visible


def test_line_of_sight_unknown_disk_is_input_error():
    with pytest.raises(InputError, match="nope"):
        line_of_sight(scene([A, B]), "a", "nope")


def test_pairs_cover_every_unordered_pair_once_sorted():
    sc = scene([disk("c", 300, 300), disk("a", 100, 100), disk("b", 200, 100)])
    rep = build_report(sc)
    assert [(p.a, p.b) for p in rep.pairs] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert rep.pair("b", "a").distance_mm == pytest.approx(56.0)


def borderline(rep, kind):
    return [(b.a, b.b, round(b.margin_mm, 3)) for b in rep.borderline if b.kind == kind]


@pytest.mark.parametrize("gap, tol, flagged", [
    (100.4, 1.0, True), (99.2, 1.0, True), (98.5, 1.0, False), (101.5, 1.0, False), (101.5, 2.0, True),
    (200.0, 1.0, True), (150.0, 1.0, False),
])
def test_band_borderline(gap, tol, flagged):
    sc = scene([disk("a", 100, 100, 22), disk("b", 100 + 44 + gap, 100, 22)])
    got = borderline(build_report(sc, DiskwarsSettings(tolerance_mm=tol)), "band")
    assert bool(got) == flagged
    if flagged:
        assert got[0][2] == pytest.approx(min(abs(gap - lim) for lim in (100, 200, 300)), abs=1e-3)


@pytest.mark.parametrize("depth, flagged", [(0.9, True), (1.6, False), (0.0, True), (-0.4, True), (-0.6, False)])
def test_overlap_borderline(depth, flagged):
    sc = scene([disk("a", 100, 100, 22), disk("b", 144 - depth, 100, 22, z=1)])
    got = borderline(build_report(sc), "overlap")
    assert bool(got) == flagged
    if flagged:
        assert got[0][2] == pytest.approx(abs(depth - 0.5), abs=1e-3)


def test_los_grazing_a_corner_is_borderline_with_a_small_margin():
    wall = piece("wall", rect(440, 428.2, 460, 600), "blocks_los")  # clear above by 0.2 mm
    rep = build_report(scene([A, B], terrain=[wall]))
    assert rep.pair("a", "b").los
    (entry,) = [b for b in rep.borderline if b.kind == "los"]
    assert 0.1 <= entry.margin_mm <= 0.3
    # far from the wall: no LOS borderline
    rep = build_report(scene([A, B], terrain=[piece("wall", rect(440, 480, 460, 600), "blocks_los")]))
    assert not [b for b in rep.borderline if b.kind == "los"]


def test_los_blocked_only_just_is_borderline():
    wall = piece("wall", rect(440, 427.7, 460, 900), "blocks_los")  # covers every line but the top 0.3 mm
    wall2 = piece("wall2", rect(440, 0, 460, 430), "blocks_los")  # closes the gap
    rep = build_report(scene([A, B], terrain=[wall]))
    assert not rep.pair("a", "b").los
    (entry,) = [b for b in rep.borderline if b.kind == "los"]
    assert 0.2 <= entry.margin_mm <= 0.4
    rep = build_report(scene([A, B], terrain=[wall, wall2]))
    assert not rep.pair("a", "b").los and not [b for b in rep.borderline if b.kind == "los"]


def test_deviation_order_engaged_by_area_then_distance_with_ties():
    target = disk("t", 400, 400, 32, player="orcs")
    sc = scene([
        target,
        disk("big-bite", 440, 400, 32, z=1, player="empire"),     # engaged, overlaps a lot
        disk("small-bite", 345, 400, 32, z=1, player="empire"),   # engaged, overlaps a little
        disk("friend", 400, 450, 22, z=1, player="orcs"),         # own disk on the target: not engaged
        disk("near", 400, 400 - 32 - 40 - 22, 22, player="empire"),
        disk("near-too", 400 - 94.4 / math.sqrt(2), 400 + 94.4 / math.sqrt(2), 22, player="empire"),
        disk("far", 400, 400 + 32 + 150 + 22, 22, player="empire"),
    ])
    cands = deviation_candidates(sc, "t")
    assert [c.disk for c in cands][:3] == ["big-bite", "small-bite", "friend"]
    assert [c.engaged for c in cands][:3] == [True, True, False]
    assert "far" not in [c.disk for c in cands]
    rep = build_report(sc)
    ties = [(b.a, b.b) for b in rep.borderline if b.kind == "deviation"]
    assert ("near", "near-too") in ties
    assert [c.disk for c in cands][3:] == ["near", "near-too"]
    assert cands[3].order_margin_mm == pytest.approx(0.4) and cands[3].range_margin_mm == pytest.approx(60.0)
    assert cands[0].range_margin_mm is None and cands[-1].order_margin_mm is None
    assert cands[1].order_margin_mm is None  # engaged before not engaged: the rules decide


def test_deviation_candidates_unknown_target():
    with pytest.raises(InputError):
        deviation_candidates(scene([A]), "zz")


@pytest.mark.parametrize("owners, controller", [
    (["orcs"], "orcs"),
    (["orcs", "orcs"], "orcs"),
    (["orcs", "empire"], None),
    ([None, "orcs"], None),
    ([], None),
])
def test_terrain_control(owners, controller):
    disks = [disk(f"d{k}", 320 + 40 * k, 330, 22, player=o) for k, o in enumerate(owners)]
    disks.append(disk("outside", 700, 700, 22, player="empire"))
    rep = build_report(scene(disks, terrain=[piece("hill", rect(300, 300, 500, 400), "defensive")]))
    (ctl,) = rep.terrain_control
    assert ctl.controller == controller
    assert set(ctl.disks) == {f"d{k}" for k in range(len(owners))}
    assert ctl.unknown_owner == tuple(f"d{k}" for k, o in enumerate(owners) if o is None)


def test_unknown_owner_control_setting():
    disks = [disk("d0", 320, 330, 22, player=None), disk("d1", 360, 330, 22, player="orcs")]
    sc = scene(disks, terrain=[piece("hill", rect(300, 300, 500, 400))])
    assert build_report(sc).terrain_control[0].controller is None
    lenient = DiskwarsSettings(unknown_owner_blocks_control=False)
    assert build_report(sc, lenient).terrain_control[0].controller == "orcs"


@pytest.mark.parametrize("x, y, expect", [
    (450, 450, None),
    (22, 450, None),            # touching the edge from inside
    (10, 450, (False, 12.0)),   # partly outside: 12 mm over the edge
    (-30, 450, (True, 8.0)),    # wholly outside by 8 mm
    (-22, 450, (True, 0.0)),    # touching the edge from outside: wholly outside
    (910, 910, (False, None)),
])
def test_off_battlefield(x, y, expect):
    rep = build_report(scene([disk("d", x, y, 22)]))
    if expect is None:
        assert rep.off_battlefield == ()
    else:
        (o,) = rep.off_battlefield
        assert o.wholly == expect[0]
        if expect[1] is not None:
            assert o.margin_mm == pytest.approx(expect[1])


def test_report_json_has_the_contract_fields():
    rep = build_report(scene([A, B], terrain=[piece("wall", rect(440, 0, 460, 900), "blocks_los")])).to_json()
    assert rep["format"] == "tablesight.report/1"
    for key in ("overlaps", "pins", "harried", "engagements", "contests", "melee_order", "pairs", "borderline"):
        assert key in rep
    assert set(rep["melee_order"]) >= {"must_precede", "sequence"}
    assert set(rep["pairs"][0]) >= {"a", "b", "distance_mm", "band", "los", "los_line_mm"}
    assert rep["pairs"][0]["los_line_mm"] is None


def test_wholly_within_borderline():
    sc = scene([disk("a", 100, 100, 22), disk("b", 100 + 44 + 156.3, 100, 22)])  # far side at 200.3 mm
    rep = build_report(sc)
    assert borderline(rep, "band") == []
    assert borderline(rep, "wholly_band") == [("a", "b", 0.3)]
    assert rep.pair("a", "b").wholly_band == "long"
