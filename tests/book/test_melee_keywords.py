"""Table-driven melee cases for every keyword and token the resolution reads (RB p.8-10, 20-22; FAQ)."""

import pytest

from melee_helpers import report_of, scene_of, strikes, tokens_after
from rules.diskwars.melee import MeleeSettings, resolve_melee
from tablesight.errors import InputError

ONE_ON_ONE = report_of([("a", "d")], [("E1", ["a"], ["d"])])


def duel(a_stats, d_stats, a_kw=(), d_kw=(), a_tokens=None, d_tokens=None, terrain=(), d_pos=None):
    a = {"id": "a", "player": "red", "stats": a_stats, "keywords": list(a_kw)}
    d = {"id": "d", "player": "blue", "stats": d_stats, "keywords": list(d_kw)}
    if a_tokens:
        a["tokens"] = a_tokens
    if d_tokens:
        d["tokens"] = d_tokens
    if d_pos:
        d["x_mm"], d["y_mm"] = d_pos
    return scene_of([a, d], terrain=terrain)


HILL = {"id": "hill", "name": "hill", "keywords": ["defensive"],
        "polygon_mm": [[150, 50], [250, 50], [250, 150], [150, 150]]}
A3 = {"attack": 3, "counter": 1, "toughness": 3}
D3 = {"attack": 1, "counter": 3, "toughness": 3}

# (name, duel kwargs, expected strikes [(disk, target, timing, damage)], expected casualties)
CASES = [
    ("plain: both strike together, both fall",
     dict(a_stats=A3, d_stats=D3), [("a", "d", "normal", 3), ("d", "a", "normal", 3)], ("a", "d")),
    ("swift attack kills the defender before its counter",
     dict(a_stats=A3, d_stats=D3, a_kw=["swift:attack"]), [("a", "d", "swift", 3)], ("d",)),
    ("swift counter kills the attacker first",
     dict(a_stats=A3, d_stats=D3, d_kw=["swift:counter"]), [("d", "a", "swift", 3)], ("a",)),
    ("swift of the other kind does not help the attacker",
     dict(a_stats=A3, d_stats=D3, a_kw=["swift:counter"]), [("a", "d", "normal", 3), ("d", "a", "normal", 3)],
     ("a", "d")),
    ("slow attack: the defender strikes first and kills it",
     dict(a_stats=A3, d_stats=D3, a_kw=["slow:attack"]), [("d", "a", "normal", 3)], ("a",)),
    ("slow attack that survives still strikes, last",
     dict(a_stats={"attack": 3, "toughness": 5}, d_stats=D3, a_kw=["slow:attack"]),
     [("d", "a", "normal", 3), ("a", "d", "slow", 3)], ("d",)),
    ("FAQ: swift and slow of the same kind cancel",
     dict(a_stats=A3, d_stats=D3, a_kw=["swift:attack", "slow:attack"]),
     [("a", "d", "normal", 3), ("d", "a", "normal", 3)], ("a", "d")),
    ("FAQ: several swift sources do not add up (still just swift)",
     dict(a_stats=A3, d_stats=D3, a_kw=["swift:attack", "swift:attack"], d_kw=["swift:counter"]),
     [("a", "d", "swift", 3), ("d", "a", "swift", 3)], ("a", "d")),
    ("defensive terrain gives the defender a swift counter",
     dict(a_stats=A3, d_stats=D3, terrain=[HILL], on_terrain=["d"]), [("d", "a", "swift", 3)], ("a",)),
    ("defensive terrain gives no swift attack to an attacker on it",
     dict(a_stats=A3, d_stats=D3, terrain=[HILL], on_terrain=["a"]),
     [("a", "d", "normal", 3), ("d", "a", "normal", 3)], ("a", "d")),
    ("FAQ example: defensive terrain + slow counter = normal timing",
     dict(a_stats=A3, d_stats=D3, d_kw=["slow:counter"], terrain=[HILL], on_terrain=["d"]),
     [("a", "d", "normal", 3), ("d", "a", "normal", 3)], ("a", "d")),
    ("terrain without the defensive keyword gives nothing",
     dict(a_stats=A3, d_stats=D3, terrain=[dict(HILL, keywords=["cover"])], on_terrain=["d"]),
     [("a", "d", "normal", 3), ("d", "a", "normal", 3)], ("a", "d")),
    ("power token: +1 attack",
     dict(a_stats={"attack": 2, "toughness": 9}, d_stats=D3, a_tokens={"power": 1}),
     [("a", "d", "normal", 3), ("d", "a", "normal", 3)], ("d",)),
    ("power token: +1 toughness saves the defender",
     dict(a_stats={"attack": 3, "toughness": 9}, d_stats=D3, d_tokens={"power": 1}),
     [("a", "d", "normal", 3), ("d", "a", "normal", 4)], ()),
    ("power token: +1 counter",
     dict(a_stats={"attack": 0, "toughness": 4}, d_stats=D3, d_tokens={"power": 1}),
     [("a", "d", "normal", 0), ("d", "a", "normal", 4)], ("a",)),
    ("resistant to physical: half, rounded up (5 -> 3)",
     dict(a_stats={"attack": 5, "toughness": 9}, d_stats={"counter": 0, "toughness": 4}, d_kw=["resistant:physical"]),
     [("a", "d", "normal", 3), ("d", "a", "normal", 0)], ()),
    ("resistant to arcane does not halve melee damage",
     dict(a_stats={"attack": 5, "toughness": 9}, d_stats={"counter": 0, "toughness": 4}, d_kw=["resistant:arcane"]),
     [("a", "d", "normal", 5), ("d", "a", "normal", 0)], ("d",)),
    ("immune to physical: cannot be damaged, the attacker strikes nothing",
     dict(a_stats={"attack": 5, "toughness": 3}, d_stats=D3, d_kw=["immune:physical"]), [("d", "a", "normal", 3)],
     ("a",)),
    ("vigor 1, no wound yet: a wound token replaces the damage",
     dict(a_stats={"attack": 4, "toughness": 9}, d_stats={"counter": 0, "toughness": 3, "vigor": 1},
          d_tokens={"damage": 1}), [("a", "d", "normal", 4), ("d", "a", "normal", 0)], ()),
    ("vigor 1 with a wound already: a casualty",
     dict(a_stats={"attack": 4, "toughness": 9}, d_stats={"counter": 0, "toughness": 3, "vigor": 1},
          d_tokens={"wound": 1}), [("a", "d", "normal", 4), ("d", "a", "normal", 0)], ("d",)),
    ("damage tokens on the table count towards toughness",
     dict(a_stats={"attack": 1, "toughness": 9}, d_stats={"counter": 0, "toughness": 3}, d_tokens={"damage": 2}),
     [("a", "d", "normal", 1), ("d", "a", "normal", 0)], ("d",)),
]


@pytest.mark.parametrize("name, kwargs, expected, casualties", CASES, ids=[c[0] for c in CASES])
def test_keyword_duel(name, kwargs, expected, casualties):
    kwargs = dict(kwargs)
    on_terrain = kwargs.pop("on_terrain", [])
    report = report_of([("a", "d")], [("E1", ["a"], ["d"])], terrain_overlaps=[(d, "hill") for d in on_terrain])
    result = resolve_melee(duel(**kwargs), report)
    assert [s[1:] for s in strikes(result)] == expected
    assert tuple(sorted(result.casualties)) == casualties


def test_vigor_wound_replaces_damage_and_is_reported():
    result = resolve_melee(duel({"attack": 4, "toughness": 9}, {"counter": 0, "toughness": 3, "vigor": 2},
                                d_tokens={"damage": 1, "wound": 1}), ONE_ON_ONE)
    assert result.wounded == ("d",)
    assert tokens_after(result, "d") == {"activation": 0, "damage": 0, "wound": 2, "power": 0}


def test_one_damage_step_gives_at_most_one_wound():
    """Two strikes of one timing that together deal twice the toughness still give one wound (RB p.20)."""
    scene = scene_of([
        {"id": "a1", "player": "red", "stats": {"attack": 6, "toughness": 9}},
        {"id": "a2", "player": "red", "stats": {"attack": 6, "toughness": 9}},
        {"id": "d", "player": "blue", "stats": {"counter": 0, "toughness": 3, "vigor": 2}},
    ])
    result = resolve_melee(scene, report_of([("a1", "d"), ("a2", "d")], [("E1", ["a1", "a2"], ["d"])]))
    assert tokens_after(result, "d")["wound"] == 1 and result.casualties == ()


def test_frenzy_attacker_strikes_every_disk_it_pins():
    scene = scene_of([
        {"id": "a", "player": "red", "stats": {"attack": 3, "toughness": 9}, "keywords": ["frenzy"]},
        {"id": "d1", "player": "blue", "stats": {"counter": 0, "toughness": 5}},
        {"id": "d2", "player": "blue", "stats": {"counter": 0, "toughness": 5}},
    ])
    result = resolve_melee(scene, report_of([("a", "d1"), ("a", "d2")], [("E1", ["a"], ["d1", "d2"])]))
    assert [s[1:3] for s in strikes(result) if s[1] == "a"] == [("a", "d1"), ("a", "d2")]
    assert all(s.chosen_by == "frenzy" for st in result.steps for s in st.strikes if s.disk == "a")


def test_without_frenzy_one_target_only():
    scene = scene_of([
        {"id": "a", "player": "red", "stats": {"attack": 3, "toughness": 9}},
        {"id": "d1", "player": "blue", "stats": {"counter": 0, "toughness": 5}},
        {"id": "d2", "player": "blue", "stats": {"counter": 0, "toughness": 3}},
    ])
    result = resolve_melee(scene, report_of([("a", "d1"), ("a", "d2")], [("E1", ["a"], ["d1", "d2"])]))
    # the default picks the target it wounds (d2), not the first by id
    assert [s[1:3] for s in strikes(result) if s[1] == "a"] == [("a", "d2")]
    by_id = resolve_melee(scene, report_of([("a", "d1"), ("a", "d2")], [("E1", ["a"], ["d1", "d2"])]),
                          settings=MeleeSettings(default_target="first_by_id"))
    assert [s[1:3] for s in strikes(by_id) if s[1] == "a"] == [("a", "d1")]


def test_damage_accumulates_across_engagements_and_a_removed_disk_fights_no_more():
    """x is harried: pinned by a (E1) and pinning b (E2). It dies in E1, so E2 is not fought at all."""
    scene = scene_of([
        {"id": "a", "player": "red", "stats": {"attack": 2, "toughness": 9}},
        {"id": "x", "player": "blue", "stats": {"attack": 5, "counter": 0, "toughness": 4}, "tokens": {"damage": 1}},
        {"id": "b", "player": "red", "stats": {"counter": 0, "toughness": 3}},
        {"id": "c", "player": "red", "stats": {"attack": 2, "toughness": 9}},
    ])
    report = report_of([("c", "x"), ("a", "x"), ("x", "b")],
                       [("E1", ["a", "c"], ["x"]), ("E2", ["x"], ["b"])])
    result = resolve_melee(scene, report)
    assert result.casualties == ("x",)
    assert result.steps[1].strikes == () and result.steps[1].notes
    assert tokens_after(result, "b") == {}


def test_damage_carries_to_the_next_engagement():
    scene = scene_of([
        {"id": "a", "player": "red", "stats": {"attack": 2, "toughness": 9}},
        {"id": "x", "player": "blue", "stats": {"attack": 0, "counter": 0, "toughness": 4}},
        {"id": "b", "player": "red", "stats": {"counter": 2, "toughness": 3}},
    ])
    report = report_of([("a", "x"), ("x", "b")], [("E1", ["a"], ["x"]), ("E2", ["x"], ["b"])])
    result = resolve_melee(scene, report)
    assert result.casualties == ("x",)  # 2 in E1 + 2 in E2 = 4


def test_melee_target_that_is_not_engaged_with_the_disk_falls_back_to_the_default():
    scene = scene_of([
        {"id": "a", "player": "red", "stats": {"attack": 1, "toughness": 9}, "melee_target": "d2"},
        {"id": "d1", "player": "blue", "stats": {"counter": 0, "toughness": 5}},
        {"id": "d2", "player": "blue", "stats": {"counter": 0, "toughness": 5}},
    ])
    # a pins d1 only; d2 is in the engagement because another disk... (none here): it is not a's enemy to strike
    report = report_of([("a", "d1")], [("E1", ["a"], ["d1", "d2"])])
    result = resolve_melee(scene, report)
    assert [s[1:3] for s in strikes(result) if s[1] == "a"] == [("a", "d1")]
    assert any("melee_target d2" in n for n in result.steps[0].notes)


@pytest.mark.parametrize("wish", [True, False])
@pytest.mark.parametrize("retarget, expected", [(True, [("a2", "d2")]), (False, [])])
def test_target_removed_by_a_swift_strike(retarget, expected, wish):
    """a1 (swift) kills d1; a2 had chosen d1 (declared, or by the default: a tie broken by id). Retargeting follows
    RB p.20 (must deal damage if it can); without it, targets are declared before any damage and the strike is lost."""
    a2 = {"id": "a2", "player": "red", "stats": {"attack": 1, "toughness": 9}}
    if wish:
        a2["melee_target"] = "d1"
    scene = scene_of([
        {"id": "a1", "player": "red", "stats": {"attack": 5, "toughness": 9}, "keywords": ["swift:attack"]},
        a2,
        {"id": "d1", "player": "blue", "stats": {"counter": 0, "toughness": 3}},
        {"id": "d2", "player": "blue", "stats": {"counter": 0, "toughness": 3}},
    ])
    report = report_of([("a1", "d1"), ("a2", "d1"), ("a2", "d2")], [("E1", ["a1", "a2"], ["d1", "d2"])])
    result = resolve_melee(scene, report, settings=MeleeSettings(retarget_removed_target=retarget))
    assert [s[1:3] for s in strikes(result) if s[1] == "a1"] == [("a1", "d1")]
    assert [s[1:3] for s in strikes(result) if s[1] == "a2"] == expected


def test_unknown_strength_and_toughness_are_reported_not_guessed():
    scene = scene_of([{"id": "a", "player": "red"}, {"id": "d", "player": "blue", "stats": {"counter": 2}}])
    result = resolve_melee(scene, ONE_ON_ONE)
    assert {(m.disk, m.stat) for m in result.missing} == {("a", "attack"), ("a", "toughness")}
    assert strikes(result) == [("E1", "a", "d", "normal", None), ("E1", "d", "a", "normal", 2)]
    assert result.casualties == ()


def test_three_players_each_disk_strikes_its_own_enemy():
    scene = scene_of([
        {"id": "a", "player": "red", "stats": {"attack": 2, "toughness": 9}},
        {"id": "b", "player": "green", "stats": {"attack": 2, "toughness": 9}},
        {"id": "d", "player": "blue", "stats": {"counter": 1, "toughness": 9}, "melee_target": "b"},
    ], players=("red", "blue", "green"))
    report = report_of([("a", "d"), ("b", "d")], [("E1", ["a", "b"], ["d"])])
    result = resolve_melee(scene, report)
    assert strikes(result) == [("E1", "a", "d", "normal", 2), ("E1", "b", "d", "normal", 2),
                               ("E1", "d", "b", "normal", 1)]


def test_own_pins_start_no_fight_and_unknown_engagement_is_refused():
    scene = scene_of([{"id": "a", "player": "red", "stats": {"attack": 2, "toughness": 3}},
                      {"id": "d", "player": "red", "stats": {"counter": 2, "toughness": 3}}])
    result = resolve_melee(scene, ONE_ON_ONE)  # a hand-made report that calls an own pin an engagement
    assert strikes(result) == []
    bad = report_of([("a", "d")], [("E1", ["a"], ["d"])], sequence=["E9"])
    with pytest.raises(InputError, match="E9"):
        resolve_melee(scene, bad)


def test_scene_after_round_trips_and_keeps_other_tokens():
    result = resolve_melee(duel({"attack": 1, "toughness": 9}, {"counter": 0, "toughness": 5},
                                a_tokens={"activation": 1, "power": 1}), ONE_ON_ONE)
    from tablesight.scene import Scene
    doc = result.to_json()
    assert doc["format"] == "tablesight.melee/1"
    again = Scene.from_json(doc["scene_after"])
    assert again.disk("a").tokens.as_dict() == {"activation": 1, "damage": 0, "wound": 0, "power": 1}
    assert again.disk("d").tokens.damage == 2


def test_unit_missing_from_the_catalog_is_reported():
    from melee_helpers import rulebook_catalog
    scene = scene_of([{"id": "a", "player": "red", "unit": "dwarf-slayers", "stats": {"attack": 2, "toughness": 3}},
                      {"id": "d", "player": "blue", "unit": "karl-franz"}])
    result = resolve_melee(scene, ONE_ON_ONE, rulebook_catalog())
    assert ("a", "unit") in {(m.disk, m.stat) for m in result.missing}
    assert ("d", "unit") not in {(m.disk, m.stat) for m in result.missing}
    assert strikes(result)[0][4] == 2
