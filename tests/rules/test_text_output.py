"""`tablesight report|melee --format text|json`, and `report` with several scene files."""

import json
from pathlib import Path

import pytest

from rules.diskwars.report import build_report
from rules.melee_commands import load_catalogs, melee_json
from rules.text import melee_text, mm, report_text
from tablesight.cli import main
from tablesight.formats import dump_json
from tablesight.scene import load_scene

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.scene.json"))
SKIRMISH = str(ROOT / "examples" / "skirmish.scene.json")
CONTEST = str(ROOT / "tests" / "book" / "data" / "rb_p18_contest.scene.json")


def run(capsys, argv):
    rc = main(argv)
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


@pytest.mark.parametrize("path", [str(p) for p in EXAMPLES] + [CONTEST])
@pytest.mark.parametrize("extra", [[], ["--format", "json"]])
def test_json_stays_the_default_and_byte_identical(capsys, path, extra):
    rc, out, _ = run(capsys, ["report", path] + extra)
    assert rc == 0 and out == dump_json(build_report(load_scene(path)).to_json()) + "\n"
    rc, out, _ = run(capsys, ["melee", path] + extra)
    scene = load_scene(path)
    assert rc == 0 and json.loads(out) == melee_json(scene, catalog=load_catalogs())


# (scene, lines the text must contain, in this order)
REPORT_CASES = [
    (SKIRMISH, [
        "Pins: boar-boyz pins greatswords, greatswords pins orc-boyz, karl-franz pins arrer-boyz",
        "Harried: greatswords",
        "Fights, in order (first player: orcs):",
        "  1. E1: boar-boyz vs greatswords",
        "  2. E2: greatswords vs orc-boyz  (after E1)",
        "  3. E3: karl-franz vs arrer-boyz  (free)",
        "Contests:",
        "  E1 + E2 share greatswords",
        "Too close to call (within 1 mm):",
        "  deviation: boar-boyz / greatswords, margin 0.23 mm  nearer to arrer-boyz: too close to call",
        "  crossbowmen on hill",
        "  hill held by empire",
        "  orc-boyz     long: shaman 280.5 | siege: wolf-riders 310!",
    ]),
    (str(ROOT / "examples" / "rulebook-contest.scene.json"), [
        "Harried: river-troll",
        "  1. E1: militia-spearmen vs river-troll",
        "  2. E2: river-troll, wolf-riders vs great-mage, teclis  (after E1)",
        "  E1 + E2 share river-troll",
    ]),
    (str(ROOT / "examples" / "deployment.scene.json"), [
        "Pins: none",
        "Fights: none",
        "  arrer-boyz partly off the battlefield (margin 2 mm)",
        "  disk_outside_zone: boar-boyz / orcs, 42 mm from legal: not wholly inside a deployment zone of its player",
    ]),
]


@pytest.mark.parametrize("path, expected", REPORT_CASES, ids=[Path(c[0]).name for c in REPORT_CASES])
def test_report_text_reads_like_the_table(capsys, path, expected):
    rc, out, err = run(capsys, ["report", path, "--format", "text"])
    assert rc == 0 and err == ""
    lines = out.splitlines()
    positions = [lines.index(line) for line in expected]  # ValueError names a missing line
    assert positions == sorted(positions)
    assert not out.lstrip().startswith("{")
    assert max(len(line) for line in lines) <= 110


MELEE_CASES = [
    (CONTEST, [
        "Melee phase: 2 fights, in order",
        "1. E2",
        "   spearmen (attacker) strikes troll: 3 damage",
        "   troll (defender) strikes spearmen: 5 damage",
        "   falls: spearmen; wounded: none",
        "2. E1",
        "   riders (attacker) strikes mage: 3 damage  (could strike teclis instead; chosen by melee target)",
        "   falls: mage, riders; wounded: teclis, troll",
        "Casualties: spearmen (elves, lanceros-de-la-milicia), mage (elves, gran-mago), riders (orcs, jinetez-de-lobo)",
        "Wounded: teclis, troll",
    ]),
    (SKIRMISH, [
        "Melee phase: 3 fights, in order",
        "   boar-boyz (attacker) strikes greatswords: damage unknown",
        "Casualties: none",
        "Not known (numbers missing, so some damage or wounds are not decided):",
        "  boar-boyz attack: unknown attack strength: its strikes deal no damage here",
    ]),
    (str(ROOT / "examples" / "deployment.scene.json"), ["Melee phase: no fights.", "Casualties: none"]),
]


@pytest.mark.parametrize("path, expected", MELEE_CASES, ids=[Path(c[0]).name for c in MELEE_CASES])
def test_melee_text_walks_the_fights_in_order(capsys, path, expected):
    rc, out, err = run(capsys, ["melee", path, "--format", "text"])
    assert rc == 0 and err == ""
    lines = out.splitlines()
    positions = [lines.index(line) for line in expected]
    assert positions == sorted(positions)


def test_report_of_several_files_is_json_lines_in_the_order_given(capsys):
    paths = [str(p) for p in EXAMPLES]
    rc, out, _ = run(capsys, ["report", *paths])
    lines = out.splitlines()
    assert rc == 0 and len(lines) == len(paths)
    for path, line in zip(paths, lines):
        doc = json.loads(line)
        assert doc.pop("scene_file") == path
        assert doc == build_report(load_scene(path)).to_json()


def test_report_text_of_several_files_heads_each_with_its_file(capsys):
    paths = [SKIRMISH, CONTEST]
    rc, out, _ = run(capsys, ["report", *paths, "--format", "text", "--tolerance-mm", "2"])
    assert rc == 0
    sections = out.split("\n\n")
    assert [s.splitlines()[0] for s in sections] == [f"== {p} ==" for p in paths]
    assert "Too close to call (within 2 mm):" in sections[0]


def test_a_bad_file_among_several_prints_nothing_but_its_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    rc, out, err = run(capsys, ["report", SKIRMISH, str(bad), "--format", "text"])
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and str(bad) in err


def test_unknown_format_is_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["report", SKIRMISH, "--format", "yaml"])
    assert exc.value.code == 2


@pytest.mark.parametrize("value, decimals, text", [
    (0.0, 1, "0"), (86.428, 1, "86.4"), (406.0, 1, "406"), (0.228, 2, "0.23"), (2.0, 2, "2"), (None, 1, "?"),
    (100.04, 1, "100"),
])
def test_lengths_print_without_noise(value, decimals, text):
    assert mm(value, decimals) == text


def test_text_is_built_from_the_json_alone():
    scene = load_scene(CONTEST)
    report = build_report(scene).to_json()
    assert report_text(report) == report_text(json.loads(json.dumps(report)))
    doc = melee_json(scene, catalog=load_catalogs())
    assert melee_text(doc, title="x").splitlines()[0] == "== x =="
