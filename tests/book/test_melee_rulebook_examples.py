"""The rulebook's worked melee examples, resolved from hand-built reports (RB p.9-10 and the contest p.18-19).

Where the book leaves a number unstated (a toughness, a counterattack), the test sweeps every value the book's own
outcome allows, so the outcome is checked without inventing the number.
"""

import pytest

from melee_helpers import report_of, rulebook_catalog, scene_of, strikes, tokens_after
from rules.diskwars.melee import resolve_melee

CATALOG = rulebook_catalog()


def test_p9_orc_boyz_pin_swordsmen_deal_5_and_take_3():
    scene = scene_of([
        {"id": "boyz", "player": "orcs", "unit": "pena-de-guerreroz-orkoz"},
        {"id": "swords", "player": "empire", "unit": "espadachines-de-marienburgo"},
    ], players=("orcs", "empire"))
    result = resolve_melee(scene, report_of([("boyz", "swords")], [("E1", ["boyz"], ["swords"])]), CATALOG)
    assert strikes(result) == [("E1", "boyz", "swords", "normal", 5), ("E1", "swords", "boyz", "normal", 3)]
    # Boyz toughness 4 (RB p.10): 3 damage does not wound them.
    assert tokens_after(result, "boyz") == {"activation": 0, "damage": 3, "wound": 0, "power": 0}
    # The swordsmen's toughness is not in the book: their 5 damage is kept and the gap is reported, not guessed.
    assert tokens_after(result, "swords")["damage"] == 5
    assert ("swords", "toughness") in {(m.disk, m.stat) for m in result.missing}
    assert result.casualties == ()


@pytest.mark.parametrize("arrer_counter", [0, 1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("chosen", ["melee_target", "default"])
def test_p9_karl_franz_pins_two_orc_units(arrer_counter, chosen):
    """Karl Franz deals his 5 to the Orc Boyz (toughness 4: casualty); both orc units counter him for 6 in total:
    toughness 5 means a wound, Vigor 1 and no earlier wound keep him on the table (RB p.10)."""
    karl = {"id": "karl", "player": "empire", "unit": "karl-franz"}
    if chosen == "melee_target":
        karl["melee_target"] = "boyz"
    scene = scene_of([
        karl,
        {"id": "arrer", "player": "orcs", "unit": "pena-de-arkeroz-orkoz", "stats": {"counter": arrer_counter}},
        {"id": "boyz", "player": "orcs", "unit": "pena-de-guerreroz-orkoz", "stats": {"counter": 6 - arrer_counter}},
    ], players=("orcs", "empire"))
    report = report_of([("karl", "arrer"), ("karl", "boyz")], [("E1", ["karl"], ["arrer", "boyz"])])
    result = resolve_melee(scene, report, CATALOG)
    karl_strikes = [s for s in strikes(result) if s[1] == "karl"]
    assert karl_strikes == [("E1", "karl", "boyz", "normal", 5)]
    assert sum(s[4] for s in strikes(result) if s[2] == "karl") == 6
    assert result.casualties == ("boyz",)
    assert result.wounded == ("karl",)
    assert tokens_after(result, "karl") == {"activation": 0, "damage": 0, "wound": 1, "power": 0}
    assert tokens_after(result, "boyz") is None


def contest_scene(troll_toughness, teclis_toughness, mage_toughness, mage_counter, riders_toughness,
                  spearmen_toughness, with_choices=True):
    """RB p.18-19: Wolf Riders pin Teclis and a High Mage, a River Troll pins Teclis, Militia Spearmen pin the Troll."""
    riders = {"id": "riders", "player": "orcs", "unit": "jinetez-de-lobo", "stats": {"toughness": riders_toughness}}
    teclis = {"id": "teclis", "player": "elves", "unit": "teclis", "stats": {"toughness": teclis_toughness}}
    if with_choices:  # what the book's players declare
        riders["melee_target"] = "mage"
        teclis["melee_target"] = "troll"
    disks = [
        riders, teclis,
        {"id": "mage", "player": "elves", "unit": "gran-mago",
         "stats": {"toughness": mage_toughness, "counter": mage_counter}},
        {"id": "troll", "player": "orcs", "unit": "troll-de-rio", "stats": {"toughness": troll_toughness}},
        {"id": "spearmen", "player": "elves", "unit": "lanceros-de-la-milicia", "stats": {"toughness": spearmen_toughness}},
    ]
    scene = scene_of(disks, players=("orcs", "elves"))
    report = report_of(
        [("riders", "teclis"), ("riders", "mage"), ("troll", "teclis"), ("spearmen", "troll")],
        [("E2", ["riders", "troll"], ["mage", "teclis"]), ("E1", ["spearmen"], ["troll"])],
        sequence=["E1", "E2"],  # top-down: the engagement where the harried Troll defends comes first (RB p.18)
    )
    return scene, report


CONTEST_CASES = [
    # troll ∆ 4..6 (3 does not wound it, 6 does), Teclis ∆ <= 5, mage ∆ <= 3, riders ∆ <= mage's counter,
    # spearmen ∆ <= 5
    dict(troll_toughness=t, teclis_toughness=tc, mage_toughness=m, mage_counter=mc, riders_toughness=r,
         spearmen_toughness=s)
    for t, tc, m, mc, r, s in [(4, 5, 3, 3, 3, 5), (5, 4, 2, 4, 4, 3), (6, 5, 1, 2, 2, 4), (6, 1, 3, 5, 5, 1)]
]


@pytest.mark.parametrize("case", CONTEST_CASES)
def test_p18_contest_example_with_errata_text(case):
    scene, report = contest_scene(**case)
    result = resolve_melee(scene, report, CATALOG)
    assert strikes(result) == [
        # (1) Spearmen 3 to the Troll, the Troll 5 to the Spearmen: the Spearmen are a casualty.
        ("E1", "spearmen", "troll", "normal", 3), ("E1", "troll", "spearmen", "normal", 5),
        # (2) Riders 3 to the Mage, Troll 5 to Teclis (its only enemy there), Teclis 3 to the Troll,
        # and the Mage's counterattack to the Riders (the only enemy it is engaged with).
        ("E2", "riders", "mage", "normal", 3), ("E2", "troll", "teclis", "normal", 5),
        ("E2", "mage", "riders", "normal", case["mage_counter"]), ("E2", "teclis", "troll", "normal", 3),
    ]
    assert [s.casualties for s in result.steps] == [("spearmen",), ("mage", "riders")]
    # Teclis and the Troll each take one wound and stay: Vigor 1 and no earlier wound. The Troll's wound comes
    # from the Spearmen's 3 carried over plus Teclis's 3.
    assert set(result.wounded) == {"teclis", "troll"}
    assert tokens_after(result, "troll") == {"activation": 0, "damage": 0, "wound": 1, "power": 0}
    assert tokens_after(result, "teclis") == {"activation": 0, "damage": 0, "wound": 1, "power": 0}
    assert {d.id for d in result.scene_after.disks} == {"troll", "teclis"}


def test_p18_contest_riders_default_target_is_the_mage():
    """Without declared targets the default sends the Riders' 3 to the Mage (the one it wounds), as the book does."""
    scene, report = contest_scene(5, 5, 3, 3, 3, 5, with_choices=False)
    result = resolve_melee(scene, report, CATALOG)
    riders = [s for s in strikes(result) if s[1] == "riders"]
    assert riders == [("E2", "riders", "mage", "normal", 3)]


def test_p18_contest_in_wrong_order_gives_a_different_outcome():
    """The order is the report's: resolving the Teclis engagement first, Teclis's 3 alone does not wound the Troll;
    the Spearmen's 3 then do, in their own engagement."""
    scene, report = contest_scene(5, 5, 3, 3, 3, 5)
    from dataclasses import replace
    report = replace(report, melee_order=replace(report.melee_order, sequence=("E2", "E1")))
    result = resolve_melee(scene, report, CATALOG)
    assert [(s.engagement, s.wounded) for s in result.steps] == [("E2", ("teclis",)), ("E1", ("troll",))]
