"""Shooting, moves and deployment from the rulebook's own examples (each test names its page)."""

import pytest
from rules_scenes import disk, piece, rect, scene

from rules.diskwars.catalog import Catalog, RangedAttack, Unit
from rules.diskwars.deployment import check_deployment
from rules.diskwars.movement import move_consequences
from rules.diskwars.shooting import ranged_attack
from tablesight.errors import InputError

XBOWS = Catalog(units=(Unit("ballesteros", "Ballesteros", ranged=RangedAttack("medium", 3, 3, "physical")),))


def test_rb_p11_target_at_medium_is_within_a_medium_attack_and_beyond_is_not():
    sc = scene([disk("xb", 100, 100, player="empire", unit="ballesteros"),
                disk("shaman", 100 + 44 + 200, 100, player="orcs"),  # edge 200: medium, limit inclusive
                disk("far", 100, 100 + 44 + 201, player="orcs")])
    res = ranged_attack(sc, "xb", catalog=XBOWS)
    assert res.can_shoot and res.target("shaman").band == "medium" and res.target("shaman").dice == 3
    assert any(n.disk == "far" and "maximum range" in n.reason for n in res.not_targets)
    assert any(n.disk == "xb" and "itself" in n.reason for n in res.not_targets)  # RB p.18


def test_rb_p8_pinned_by_an_ally_cannot_shoot():
    sc = scene([disk("xb", 100, 100, player="empire"), disk("ally", 110, 100, z=1, player="empire"),
                disk("t", 300, 100, player="orcs")])
    res = ranged_attack(sc, "xb")
    assert not res.can_shoot and "pinned by ally" in res.why_not


def test_rb_p22_cover_one_die_fewer_never_below_one():
    cat = Catalog(units=(Unit("one", "One", ranged=RangedAttack("long", 1, 2, "physical")),))
    sc = scene([disk("s", 100, 100, player="empire", unit="one"), disk("t", 300, 100, player="orcs")],
               terrain=[piece("w", rect(280, 60, 340, 140), "cover"), piece("w2", rect(300, 90, 330, 110), "cover")])
    t = ranged_attack(sc, "s", catalog=cat).target("t")
    assert t.cover and t.dice_modifier == -1 and t.dice == 1


def test_rb_p19_siege_attack_counts_only_criticals_and_deviates():
    sc = scene([disk("bolt", 100, 100, player="elves"), disk("archaon", 100, 600, player="chaos"),
                disk("kurgan", 160, 600, player="chaos")],
               players=[{"id": "elves", "initiative": 1}, {"id": "chaos", "initiative": 2}])
    t = ranged_attack(sc, "bolt").target("archaon")
    assert t.band == "siege" and t.only_criticals and t.deviation[0] == "kurgan"


def test_unknown_shooter_and_unknown_unit_are_input_errors():
    sc = scene([disk("a", 100, 100, player="orcs", unit="nope")])
    with pytest.raises(InputError, match="no disk"):
        ranged_attack(sc, "zz")
    with pytest.raises(InputError, match="not in the catalog"):
        ranged_attack(sc, "a", catalog=XBOWS)


def test_rb_p21_impact_hits_every_newly_pinned_disk_and_fortified_is_immune():
    before = scene([disk("arch", 100, 100, 32, player="chaos", keywords=["impact:2"], stats={"move": 3}),
                    disk("e1", 220, 100, player="empire"), disk("a1", 220, 140, player="chaos")],
                   players=[{"id": "chaos", "initiative": 1}, {"id": "empire", "initiative": 2}])
    after = scene([disk("arch", 200, 120, 32, z=1, player="chaos", keywords=["impact:2"], stats={"move": 3}),
                   disk("e1", 220, 100, player="empire"), disk("a1", 220, 140, player="chaos")],
                  players=[{"id": "chaos", "initiative": 1}, {"id": "empire", "initiative": 2}])
    res = move_consequences(before, after)
    got = {p.disk: (p.enemy, p.impact_damage) for p in res.newly_pinned}
    assert got == {"e1": (True, 2), "a1": (False, 2)}
    assert res.flips_needed == 2 and res.within_budget


def test_move_bad_input_two_moved():
    b = scene([disk("a", 100, 100), disk("b", 300, 100)])
    a = scene([disk("a", 150, 100), disk("b", 350, 100)])
    with pytest.raises(InputError, match="2 disks moved"):
        move_consequences(b, a)


def test_rb_p5_deployment_from_edges():
    sc = scene([disk("ok", 450, 850, player="orcs"), disk("deep", 450, 650, player="orcs"),
                disk("e", 450, 50, player="empire")])
    res = check_deployment(sc, edges={"orcs": "bottom", "empire": "top"})
    ok = {d.disk: d.ok for d in res.disks}
    assert ok == {"ok": True, "deep": False, "e": True}
