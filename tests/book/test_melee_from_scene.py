"""Scene -> build_report -> resolve_melee: the rulebook's examples as scene files, and `tablesight melee`."""

import json
from pathlib import Path

import pytest

from melee_helpers import rulebook_catalog, scene_of, strikes, tokens_after
from rules.diskwars.melee import resolve_melee
from rules.diskwars.report import build_report
from rules.melee_commands import load_catalogs, melee_json
from tablesight.cli import main
from tablesight.scene import load_scene

DATA = Path(__file__).resolve().parent / "data"
CATALOG = rulebook_catalog()


def resolve_file(name):
    scene = load_scene(DATA / name)
    return resolve_melee(scene, build_report(scene), CATALOG)


def test_p18_contest_from_geometry():
    result = resolve_file("rb_p18_contest.scene.json")
    by_eng = {st.engagement: st for st in result.steps}
    first, second = result.steps
    # Top-down: the engagement where the harried Troll defends is resolved first (RB p.18).
    assert [s.disk for s in first.strikes] == ["spearmen", "troll"]
    assert first.casualties == ("spearmen",)
    assert {(s.disk, s.target, s.damage) for s in second.strikes} == {
        ("riders", "mage", 3), ("troll", "teclis", 5), ("teclis", "troll", 3), ("mage", "riders", 3)}
    assert set(second.casualties) == {"mage", "riders"}
    assert set(result.wounded) == {"teclis", "troll"}
    assert tokens_after(result, "troll")["wound"] == 1 and tokens_after(result, "troll")["damage"] == 0
    assert len(by_eng) == 2


def test_p9_examples_from_geometry():
    result = resolve_file("rb_p9_karl_franz.scene.json")
    assert result.casualties == ("boyz",) and result.wounded == ("karl",)
    result = resolve_file("rb_p9_orc_boyz.scene.json")
    assert {(s[1], s[2], s[4]) for s in strikes(result)} == {("boyz", "swords", 5), ("swords", "boyz", 3)}


@pytest.mark.parametrize("name, casualties, wounded", [
    ("rb_p18_contest.scene.json", ["spearmen", "mage", "riders"], ["teclis", "troll"]),
    ("rb_p9_karl_franz.scene.json", ["boyz"], ["karl"]),
    ("rb_p9_orc_boyz.scene.json", [], []),
])
def test_tablesight_melee_command_reproduces_the_book(capsys, name, casualties, wounded):
    assert main(["melee", str(DATA / name)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "tablesight.melee/1"
    assert doc["casualties"] == casualties
    assert sorted(doc["wounded"]) == wounded
    assert doc["scene_after"]["format"] == "tablesight.scene/1"


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.scene.json")), ids=lambda p: p.name)
def test_every_unit_of_the_examples_is_in_the_catalog(path):
    """Regression: examples/rulebook-contest.scene.json named units the catalog does not have."""
    scene = load_scene(path)
    catalog = load_catalogs()
    assert [d.unit for d in scene.disks if d.unit and catalog.unit(d.unit) is None] == []


def test_rulebook_contest_example_resolves_as_the_book_does(capsys):
    """Regression: the example resolved with 0 casualties (its units were missing from the catalog). RB p.18-19:
    the Spearmen fall first, then the Wolf Riders and the Great Mage; Teclis and the Troll take a wound each."""
    assert main(["melee", str(EXAMPLES / "rulebook-contest.scene.json")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [s["casualties"] for s in doc["steps"]] == [["militia-spearmen"], ["great-mage", "wolf-riders"]]
    assert sorted(doc["wounded"]) == ["river-troll", "teclis"]
    assert not [m for m in doc["missing"] if m["stat"] in ("unit", "attack", "counter", "toughness")]


def test_melee_command_bad_input_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["melee", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tablesight melee:") and err.count("\n") == 1
    cat = tmp_path / "cat.json"
    cat.write_text(json.dumps({"format": "tablesight.catalog/1", "units": [{"name": "X", "stats": {"attack": -1}}]}))
    assert main(["melee", str(DATA / "rb_p9_orc_boyz.scene.json"), "--catalog", str(cat)]) == 2
    assert "stats.attack" in capsys.readouterr().err


def test_user_catalog_adds_and_replaces_units(tmp_path, capsys):
    cat = tmp_path / "house.json"
    cat.write_text(json.dumps({"format": "tablesight.catalog/1", "name": "house", "units": [
        {"key": "espadachines-de-marienburgo", "name": "Espadachines de Marienburgo",
         "stats": {"counter": 3, "toughness": 5, "vigor": 0}}]}))
    assert main(["melee", str(DATA / "rb_p9_orc_boyz.scene.json"), "--catalog", str(cat)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["missing"] == []  # the house catalog gave the swordsmen's toughness
    assert load_catalogs([cat]).unit("espadachines-de-marienburgo").stats.toughness == 5


def test_defensive_terrain_from_geometry():
    """A defender on a defensive hill counters first (Swift counter, RB p.22); one only touching it does not."""
    hill = {"id": "hill", "name": "hill", "keywords": ["defensive"],
            "polygon_mm": [[100, 100], [300, 100], [300, 300], [100, 300]]}
    for x, expect_swift in [(290.0, True), (322.0, False)]:  # radius 22: x=322 touches the hill's edge only
        scene = scene_of([
            {"id": "d", "player": "blue", "x_mm": x, "y_mm": 200, "z": 0, "stats": {"counter": 3, "toughness": 3}},
            {"id": "a", "player": "red", "x_mm": x + 30, "y_mm": 200, "z": 1, "stats": {"attack": 3, "toughness": 3}},
        ], terrain=[hill])
        result = resolve_melee(scene, build_report(scene))
        timings = {s[1]: s[3] for s in strikes(result)}
        if expect_swift:
            assert timings == {"d": "swift"} and result.casualties == ("a",)
        else:
            assert timings == {"a": "normal", "d": "normal"} and set(result.casualties) == {"a", "d"}


def test_engagement_created_by_a_removal_waits_for_the_next_phase():
    """Stack red (bottom) - blue - green (top): blue is harried. Blue falls in the first engagement; green now
    lies on red, but that new fight is not resolved in this phase (RB p.20)."""
    scene = scene_of([
        {"id": "r", "player": "red", "x_mm": 400, "y_mm": 400, "z": 0, "stats": {"counter": 9, "toughness": 9}},
        {"id": "b", "player": "blue", "x_mm": 410, "y_mm": 400, "z": 1,
         "stats": {"attack": 0, "counter": 0, "toughness": 2}},
        {"id": "g", "player": "green", "x_mm": 420, "y_mm": 400, "z": 2, "stats": {"attack": 5, "toughness": 9}},
    ], players=("red", "blue", "green"))
    report = build_report(scene)
    assert {(p.pinner, p.pinned) for p in report.pins if p.enemy} == {("g", "b"), ("b", "r")}
    result = resolve_melee(scene, report)
    assert result.casualties == ("b",)
    assert all("g" != s[1] or s[2] == "b" for s in strikes(result))
    assert tokens_after(result, "r") == {}
    doc = melee_json(scene)
    assert doc["deferred_pins"] == [{"pinner": "g", "pinned": "r"}]


def test_melee_command_settings_flags(capsys):
    assert main(["melee", str(DATA / "rb_p9_orc_boyz.scene.json"), "--default-target", "first_by_id",
                 "--keep-declared-targets"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"] == {"default_target": "first_by_id", "retarget_removed_target": False,
                               "resistant_halves": "each_strike", "wound_step": "timing"}
