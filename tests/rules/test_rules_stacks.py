"""Overlaps, pins, harried disks, engagements, contests and melee order: table-driven cases."""

import pytest
from rules_scenes import disk, scene

from rules.diskwars import DiskwarsSettings, build_report
from rules.diskwars.settings import SettingsError

THREE = [{"id": "p1", "initiative": 1}, {"id": "p2", "initiative": 2}, {"id": "p3", "initiative": 3}]


def pins(rep):
    return {(p.pinner, p.pinned, p.partial, p.enemy) for p in rep.pins}


@pytest.mark.parametrize("gap, overlapping", [
    (5.0, False),     # apart
    (0.0, False),     # touching at the edge is not overlap
    (-0.4, False),    # within the contact tolerance (0.5 mm): touching
    (-0.6, True),     # deeper: overlap
    (-20.0, True),
])
def test_overlap_versus_edge_contact(gap, overlapping):
    rep = build_report(scene([disk("a", 100, 100, 22), disk("b", 100 + 44 + gap, 100, 22, z=1)]))
    assert bool(rep.overlaps) == overlapping
    assert bool(rep.pins) == overlapping
    if overlapping:
        assert rep.overlaps[0].upper == "b" and rep.overlaps[0].depth_mm == pytest.approx(-gap)


@pytest.mark.parametrize("upper_owner, lower_owner, enemy", [
    ("orcs", "empire", True),
    ("orcs", "orcs", False),    # own-disk pins are listed, start no fight
    (None, "empire", False),   # owner unknown: pins, no engagement
    ("orcs", None, False),
])
def test_pin_owners(upper_owner, lower_owner, enemy):
    rep = build_report(scene([disk("low", 100, 100, player=lower_owner), disk("up", 120, 100, z=1, player=upper_owner)]))
    assert pins(rep) == {("up", "low", False, enemy)}
    assert bool(rep.engagements) == enemy


def test_ownerless_disk_between_blocks_the_pin_and_starts_nothing():
    rep = build_report(scene([disk("A", 200, 200, z=0, player="orcs"), disk("B", 210, 200, z=1, player=None),
                              disk("C", 220, 200, z=2, player="empire")]))
    assert {(p.pinner, p.pinned) for p in rep.pins} == {("B", "A"), ("C", "B")}
    assert rep.engagements == () and rep.harried == ()


@pytest.mark.parametrize("middle, pinned, partial", [
    ((210, 200, 22), False, False),    # B covers the whole lens of C over A: a full sandwich (RB p.4)
    ((195, 200, 22), True, True),      # B covers only part of it: C pins A, flagged partial
    ((212.5, 251, 32), True, False),   # B overlaps both A and C but not the lens: a plain pin
    ((150, 200, 22), True, False),     # B overlaps A only: not between them
])
def test_partial_sandwich(middle, pinned, partial):
    x, y, r = middle
    rep = build_report(scene([disk("A", 200, 200, z=0, player="orcs"), disk("B", x, y, r, z=1, player="empire"),
                              disk("C", 225, 200, z=2, player="empire")]))
    got = {(p.pinner, p.pinned): p.partial for p in rep.pins}
    assert (("C", "A") in got) == pinned
    if pinned:
        assert got[("C", "A")] == partial


def test_sandwich_tolerance_setting_decides_nearly_covered_lens():
    disks = [disk("A", 200, 200, z=0), disk("B", 207, 200, z=1), disk("C", 226, 200, z=2)]
    strict = build_report(scene(disks), DiskwarsSettings(sandwich_area_tolerance_mm2=0.0))
    loose = build_report(scene(disks), DiskwarsSettings(sandwich_area_tolerance_mm2=5000.0))
    assert ("C", "A") not in {(p.pinner, p.pinned) for p in loose.pins}
    # with no tolerance, whatever sliver the circle approximation leaves uncovered would count: B covers it here
    assert {(p.pinner, p.pinned) for p in strict.pins} >= {("B", "A"), ("C", "B")}


def test_same_z_overlap_is_the_players_call():
    rep = build_report(scene([disk("a", 100, 100, z=1, player="orcs"), disk("b", 120, 100, z=1, player="empire")]))
    assert rep.pins == () and len(rep.overlaps) == 1
    assert [(b.kind, b.a, b.b) for b in rep.borderline if b.kind == "stacking"] == [("stacking", "a", "b")]
    rep = build_report(scene([disk("a", 100, 100, z=1), disk("b", 120, 100, z=1)]), DiskwarsSettings(equal_z_pins=True))
    assert {(p.pinner, p.pinned) for p in rep.pins} == {("b", "a")}


def test_harried_needs_enemy_pins_both_ways():
    # B pins an own disk A and is pinned by enemy C: not harried (only enemy pins count)
    rep = build_report(scene([disk("A", 200, 200, z=0, player="orcs"), disk("B", 210, 200, z=1, player="orcs"),
                              disk("C", 220, 200, z=2, player="empire")]))
    assert rep.harried == ()
    assert [(e.attackers, e.defenders) for e in rep.engagements] == [(("C",), ("B",))]


def test_engagements_chain_through_shared_attackers_and_defenders():
    # X pins D1 and D2; Y pins D2: one engagement with two attackers and two defenders
    rep = build_report(scene([disk("D1", 100, 100, player="orcs"), disk("D2", 160, 100, player="orcs"),
                              disk("X", 130, 100, z=1, player="empire"), disk("Y", 180, 100, z=1, player="empire")]))
    assert [(e.id, e.attackers, e.defenders) for e in rep.engagements] == [("E1", ("X", "Y"), ("D1", "D2"))]


def test_engagement_ids_follow_sorted_members_not_listing_order():
    disks = [disk("m", 500, 500, player="orcs"), disk("n", 520, 500, z=1, player="empire"),
             disk("a", 100, 100, player="orcs"), disk("b", 120, 100, z=1, player="empire")]
    rep = build_report(scene(disks))
    assert [(e.id, e.attackers) for e in rep.engagements] == [("E1", ("b",)), ("E2", ("n",))]
    assert rep.melee_order.sequence == ("E1", "E2") and rep.melee_order.must_precede == ()
    assert build_report(scene(disks[::-1])).to_json() == rep.to_json()


def ring(players):
    """Six disks in a ring, each overlapping its two neighbours: a1 h1 d2 a2 h2 d1 (z 2 1 0 2 1 0)."""
    import math
    names = ["a1", "h1", "d2", "a2", "h2", "d1"]
    zs = [2, 1, 0, 2, 1, 0]
    return [disk(n, 400 + 35 * math.cos(k * math.pi / 3), 400 + 35 * math.sin(k * math.pi / 3), 22, z=z,
                 player=players[n]) for k, (n, z) in enumerate(zip(names, zs))]


def test_contradictory_top_down_order_is_the_players_call():
    """Two harried disks whose top-down constraints point opposite ways (a ring of stacks): the contest is
    flagged, a borderline entry says so, the rest of the report stands and the sequence is complete."""
    owners = {"a1": "orcs", "h1": "empire", "d1": "empire", "h2": "orcs", "d2": "orcs", "a2": "empire"}
    rep = build_report(scene(ring(owners)))
    assert set(rep.harried) == {"h1", "h2"}
    assert len(rep.engagements) == 2 and len(rep.contests) == 1
    contest = rep.contests[0]
    assert contest.players_call and set(contest.harried) == {"h1", "h2"}
    assert rep.melee_order.must_precede == ()
    assert len(rep.melee_order.contradicted) == 2
    assert sorted(rep.melee_order.sequence) == ["E1", "E2"]
    assert any(b.kind == "contest" for b in rep.borderline)


def test_three_players_partial_sandwich_can_put_a_disk_on_both_sides_of_one_fight():
    # V bottom (p3), Y on V (p2), W on top of both, overlapping V beside Y: W pins Y and V, Y pins V
    rep = build_report(scene([disk("V", 300, 300, 32, z=0, player="p3"), disk("Y", 330, 300, 22, z=1, player="p2"),
                              disk("W", 300, 330, 32, z=2, player="p1")], players=THREE))
    pinned = {(p.pinner, p.pinned) for p in rep.pins}
    assert {("W", "Y"), ("Y", "V"), ("W", "V")} <= pinned
    assert any(b.kind == "engagement" and b.a == "Y" for b in rep.borderline)
    assert rep.melee_order.sequence  # still a complete order, never a failure


def test_first_player_is_lowest_initiative():
    players = [{"id": "b", "initiative": 2}, {"id": "a", "initiative": 3}, {"id": "c", "initiative": 1}]
    rep = build_report(scene([disk("x", 100, 100, player="a")], players=players))
    assert rep.melee_order.first_player == "c"


@pytest.mark.parametrize("kwargs, field", [
    ({"tolerance_mm": -1}, "tolerance_mm"),
    ({"contact_tolerance_mm": float("nan")}, "contact_tolerance_mm"),
    ({"sandwich_area_tolerance_mm2": "2"}, "sandwich_area_tolerance_mm2"),
    ({"equal_z_pins": 1}, "equal_z_pins"),
])
def test_settings_are_validated(kwargs, field):
    with pytest.raises(SettingsError, match=field):
        DiskwarsSettings(**kwargs)


def test_four_players_tower_orders_every_fight_top_down():
    """Four players' disks stacked in one tower (2-4 players, RB p.15): each middle disk is harried, the three
    engagements form one contest resolved from the top down."""
    four = [{"id": f"p{k}", "initiative": k} for k in range(1, 5)]
    rep = build_report(scene([disk("t1", 300, 300, z=0, player="p1"), disk("t2", 312, 300, z=1, player="p2"),
                              disk("t3", 324, 300, z=2, player="p3"), disk("t4", 336, 300, z=3, player="p4")],
                             players=four))
    assert {(p.pinner, p.pinned) for p in rep.pins} == {("t2", "t1"), ("t3", "t2"), ("t4", "t3")}
    assert rep.harried == ("t2", "t3")
    by_attacker = {e.attackers[0]: e.id for e in rep.engagements}
    top, mid, low = by_attacker["t4"], by_attacker["t3"], by_attacker["t2"]
    assert set(rep.melee_order.must_precede) == {(top, mid), (mid, low)}
    assert rep.melee_order.sequence == (top, mid, low)
    assert len(rep.contests) == 1 and set(rep.contests[0].harried) == {"t2", "t3"}
