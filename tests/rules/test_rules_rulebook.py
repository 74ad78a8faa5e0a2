"""The rulebook's (RB p.N) and the errata/FAQ's worked examples that involve geometry, built as scenes."""

import pytest
from rules_scenes import disk, piece, rect, scene

from rules.diskwars import band_of, build_report, deviation_candidates, edge_distance, in_range, wholly_within_band
from rules.diskwars.terrain import setup_violations
from rules.diskwars.board import Board


def pin_pairs(report):
    return {(p.pinner, p.pinned) for p in report.pins}


def engagement_of(report, attackers=None, defenders=None):
    for e in report.engagements:
        if (attackers is None or set(attackers) <= set(e.attackers)) and (
                defenders is None or set(defenders) <= set(e.defenders)):
            return e
    raise AssertionError(f"no engagement with attackers {attackers} defenders {defenders}")


@pytest.mark.parametrize("owners", [("orcs", "empire", "orcs"), ("orcs", "orcs", "orcs"), (None, None, None)])
def test_rb_p4_three_disk_stack_top_does_not_pin_bottom(owners):
    """RB p.4: A (bottom) pinned by B, B pinned by C; C does not pin A because B is between them."""
    a, b, c = owners
    rep = build_report(scene([disk("A", 200, 200, z=0, player=a), disk("B", 210, 200, z=1, player=b),
                              disk("C", 220, 200, z=2, player=c)]))
    assert pin_pairs(rep) == {("B", "A"), ("C", "B")}
    assert {(o.upper, o.lower) for o in rep.overlaps} == {("B", "A"), ("C", "B"), ("C", "A")}
    assert not any(p.partial for p in rep.pins)


def test_rb_p4_stack_as_enemies_makes_the_middle_disk_harried_and_a_contest():
    rep = build_report(scene([disk("A", 200, 200, z=0, player="orcs"), disk("B", 210, 200, z=1, player="empire"),
                              disk("C", 220, 200, z=2, player="orcs")]))
    assert rep.harried == ("B",)
    lower = engagement_of(rep, ["B"], ["A"])
    upper = engagement_of(rep, ["C"], ["B"])
    assert [set(c.engagements) for c in rep.contests] == [{lower.id, upper.id}]
    # top-down: the fight where the harried disk B defends comes first
    assert rep.melee_order.must_precede == ((upper.id, lower.id),)
    assert rep.melee_order.sequence == (upper.id, lower.id)


def test_rb_p9_karl_franz_pins_two_orc_units_in_one_engagement():
    """RB p.9: Karl Franz pins an Orc Arrer Boyz unit and an Orc Boyz unit: one engagement, he is the only
    attacker, both Orc units defend (each deals its counterattack to him)."""
    rep = build_report(scene([
        disk("orc-arrer-boyz", 300, 300, 22, z=0, player="orcs"),
        disk("orc-boyz", 350, 300, 22, z=0, player="orcs"),
        disk("karl-franz", 325, 315, 32, z=1, player="empire"),
    ]))
    assert pin_pairs(rep) == {("karl-franz", "orc-arrer-boyz"), ("karl-franz", "orc-boyz")}
    assert [(e.attackers, e.defenders) for e in rep.engagements] == [
        (("karl-franz",), ("orc-arrer-boyz", "orc-boyz"))]
    assert rep.harried == () and rep.contests == ()


CONTEST = [
    # High Elves: Teclis and a Great Mage side by side; Orcs: Wolf Riders on both, a River Troll on Teclis;
    # then Militia Spearmen (High Elves) land on the River Troll (RB p.18-19).
    disk("teclis", 300, 300, 32, z=0, player="elves"),
    disk("great-mage", 370, 300, 22, z=0, player="elves"),
    disk("wolf-riders", 335, 300, 22, z=1, player="orcs"),
    disk("river-troll", 300, 250, 32, z=1, player="orcs"),
    disk("militia-spearmen", 300, 200, 22, z=2, player="elves"),
]
ELVES_ORCS = [{"id": "orcs", "initiative": 1}, {"id": "elves", "initiative": 2}]


def test_rb_p18_19_contest_with_errata_reading():
    """RB p.18-19 with the FAQ errata's corrected text: the engagement of the River Troll with the Militia
    Spearmen is resolved first (1); then the Wolf Riders and the River Troll fight Teclis and the Great Mage in
    one engagement (2), in which the River Troll is engaged with Teclis only."""
    rep = build_report(scene(CONTEST, players=ELVES_ORCS))
    assert pin_pairs(rep) == {("wolf-riders", "teclis"), ("wolf-riders", "great-mage"),
                              ("river-troll", "teclis"), ("militia-spearmen", "river-troll")}
    assert ("river-troll", "great-mage") not in pin_pairs(rep)  # errata: the Troll is engaged with Teclis only
    assert rep.harried == ("river-troll",)
    first = engagement_of(rep, ["militia-spearmen"], ["river-troll"])
    second = engagement_of(rep, ["river-troll", "wolf-riders"], ["great-mage", "teclis"])
    assert first.attackers == ("militia-spearmen",) and first.defenders == ("river-troll",)
    assert second.attackers == ("river-troll", "wolf-riders") and second.defenders == ("great-mage", "teclis")
    assert len(rep.engagements) == 2
    assert len(rep.contests) == 1 and set(rep.contests[0].engagements) == {first.id, second.id}
    assert rep.contests[0].harried == ("river-troll",) and not rep.contests[0].players_call
    assert rep.melee_order.must_precede == ((first.id, second.id),)
    assert rep.melee_order.sequence == (first.id, second.id)
    assert rep.melee_order.first_player == "orcs"


def test_rb_p18_19_contest_ids_stable_when_disks_are_listed_in_another_order():
    a = build_report(scene(CONTEST, players=ELVES_ORCS)).to_json()
    b = build_report(scene(list(reversed(CONTEST)), players=ELVES_ORCS)).to_json()
    assert a == b


def test_rb_p11_range_is_measured_to_the_first_touching_point():
    """RB p.11: the ruler touches the Orc Shaman at the MEDIUM section, exactly the Reikland
    Crossbowmen's maximum range: in range (limits inclusive)."""
    crossbows = disk("crossbows", 100, 450, 22, player="empire")
    for gap, band in [(200.0, "medium"), (150.0, "medium"), (199.9, "medium"), (200.2, "long")]:
        shaman = disk("shaman", 100 + 22 + gap + 22, 450, 22, player="orcs")
        sc = scene([crossbows, shaman])
        a, b = sc.disk("crossbows"), sc.disk("shaman")
        assert edge_distance(a, b) == pytest.approx(gap)
        assert band_of(edge_distance(a, b), sc.range_bands) == band
        assert in_range(a, b, "medium", sc.range_bands) == (gap <= 200.0)
        assert build_report(sc).pair("crossbows", "shaman").band == band


def test_rb_p18_rock_lobber_has_the_great_mage_at_long_range_not_by_centres():
    """RB p.18 (Range): the contact point of the ruler with the target defines the range: the Rock Lobber has
    the Great Mage at long range (its centre is beyond the whole ruler)."""
    sc = scene([disk("rock-lobber", 100, 450, 44.5, player="orcs"),
                disk("great-mage", 100 + 44.5 + 280 + 22, 450, 22, player="empire")],)
    pair = build_report(sc).pair("rock-lobber", "great-mage")
    assert pair.distance_mm == pytest.approx(280.0) and pair.band == "long"
    assert 280 + 44.5 + 22 > 300  # by centres it would be siege


def test_every_disk_is_within_range_of_itself():
    """FAQ (Range): every disk is always within its own range."""
    sc = scene([disk("a", 100, 100)])
    a = sc.disk("a")
    assert edge_distance(a, a) == 0.0
    assert band_of(edge_distance(a, a)) == "short" and in_range(a, a, "short", wholly=True)


def test_faq_wholly_within():
    """FAQ (Range): with "wholly", no point of the ruler beyond the range may touch the target; without it, any
    touching point within the range counts (FAQ, Kairos: any part of the disk within medium range is enough)."""
    kairos = disk("kairos", 100, 450, 32, player="orcs")
    reinforcement = disk("plaguebearers", 100 + 32 + 180 + 22, 450, 22, player="orcs")  # near side 180 mm
    sc = scene([kairos, reinforcement])
    a, b = sc.disk("kairos"), sc.disk("plaguebearers")
    assert in_range(a, b, "medium", sc.range_bands)  # any part within medium: enough for Kairos
    assert not in_range(a, b, "medium", sc.range_bands, wholly=True)  # far side at 224 mm
    assert wholly_within_band(a, b, sc.range_bands) == "long"
    pair = build_report(sc).pair("kairos", "plaguebearers")
    assert (pair.band, pair.wholly_band) == ("medium", "long")
    # from the small disk towards the big one, the far side is further still
    assert pair.wholly_band_ba == "long"


def test_rb_p19_bolt_thrower_deviation_goes_to_the_kurgan_barbarians():
    """RB p.19: a Bolt Thrower shoots Archaon at siege range and rolls a deviation: it is rerolled against the
    Kurgan Barbarians Archaon has at short range (the hit is then ignored, as at siege range: FAQ)."""
    sc = scene([
        disk("bolt-thrower", 80, 800, 32, player="empire"),
        disk("archaon", 600, 200, 44.5, player="chaos"),
        disk("kurgan-barbarians", 600 + 44.5 + 40 + 22, 200, 22, player="chaos"),
        disk("chaos-warriors", 600, 200 + 44.5 + 150 + 32, 32, player="chaos"),
    ], players=[{"id": "empire", "initiative": 1}, {"id": "chaos", "initiative": 2}])
    rep = build_report(sc)
    assert rep.pair("archaon", "bolt-thrower").band == "siege"
    cands = deviation_candidates(sc, "archaon")
    assert [c.disk for c in cands] == ["kurgan-barbarians"]
    assert cands[0].distance_mm == pytest.approx(40.0) and not cands[0].engaged
    (dev,) = [d for d in rep.deviation if d.target == "archaon"]
    assert dev.candidates == cands


def test_rb_p5_deployment_example():
    """RB p.5: zones run from the player's edge to the full medium range. Not valid: disk 1 beyond medium range
    of the edge, disk 2 not inside the battlefield, disk 3 not wholly inside the zone. Valid: all inside."""
    zone = {"player": "orcs", "polygon_mm": [[0, 700], [900, 700], [900, 900], [0, 900]]}
    bad = scene([disk("1", 200, 650, 22, player="orcs"), disk("2", 450, 905, 22, player="orcs"),
                 disk("3", 700, 710, 22, player="orcs")], deployment_zones=[zone])
    rep = build_report(bad)
    outside = {v.subject for v in rep.setup_violations if v.kind == "disk_outside_zone"}
    assert outside == {"1", "2", "3"}
    assert [(o.disk, o.wholly) for o in rep.off_battlefield] == [("2", False)]
    good = scene([disk("1", 200, 760, 22, player="orcs"), disk("2", 450, 870, 22, player="orcs"),
                  disk("3", 700, 740, 22, player="orcs")], deployment_zones=[zone])
    rep = build_report(good)
    assert rep.setup_violations == () and rep.off_battlefield == ()


def test_faq_pinning_without_contact_when_nothing_is_between():
    """FAQ (Pinning): a disk overlapping another pins it if no other disk is between them, even when tokens
    keep the surfaces apart (z says only which is higher)."""
    rep = build_report(scene([disk("low", 200, 200, z=0, player="orcs"), disk("high", 230, 200, z=5, player="empire")]))
    assert pin_pairs(rep) == {("high", "low")}


def test_rb_p13_terrain_placement():
    """RB p.13: terrain wholly inside, never at short range or less from another piece or an edge."""
    sc = scene([], terrain=[piece("hill", rect(150, 150, 300, 250)), piece("wood", rect(390, 150, 500, 250)),
                            piece("ruin", rect(850, 500, 950, 600))])
    kinds = {(v.kind, v.subject, v.other) for v in setup_violations(Board(sc))}
    assert ("terrain_near_terrain", "hill", "wood") in kinds  # 90 mm apart
    assert ("terrain_outside", "ruin", None) in kinds and ("terrain_near_edge", "ruin", "right") in kinds
    assert not any(s == "hill" and k == "terrain_near_edge" for k, s, _ in kinds)  # 150 mm from the edges
