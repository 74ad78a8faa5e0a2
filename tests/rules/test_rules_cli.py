"""`tablesight report`: output and bad input (one line naming the field, exit 2, no traceback)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tablesight.cli import main

ROOT = Path(__file__).resolve().parents[2]
GOOD = {
    "format": "tablesight.scene/1",
    "players": [{"id": "orcs", "initiative": 1}, {"id": "empire", "initiative": 2}],
    "disks": [
        {"id": "d1", "player": "orcs", "x_mm": 450.0, "y_mm": 300.0, "radius_mm": 22.0, "z": 0},
        {"id": "d2", "player": "empire", "x_mm": 470.0, "y_mm": 300.0, "radius_mm": 32.0, "z": 1},
    ],
    "terrain": [{"id": "t1", "name": "hill", "polygon_mm": [[300, 400], [420, 400], [420, 480], [300, 480]],
                 "keywords": ["blocks_los"]}],
}


def write(tmp_path, doc, name="scene.json"):
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return str(p)


def test_report_prints_the_report_json(tmp_path, capsys):
    assert main(["report", write(tmp_path, GOOD)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["format"] == "tablesight.report/1"
    assert out["pins"] == [{"pinner": "d2", "pinned": "d1", "partial": False, "enemy": True}]
    assert out["engagements"] == [{"id": "E1", "attackers": ["d2"], "defenders": ["d1"]}]
    assert out["melee_order"]["sequence"] == ["E1"]


def test_tolerance_flag_changes_borderline_calls(tmp_path, capsys):
    doc = json.loads(json.dumps(GOOD))
    doc["disks"][1]["x_mm"] = 450 + 22 + 32 + 101.5  # 101.5 mm apart: 1.5 mm past the short limit
    path = write(tmp_path, doc)
    main(["report", path])
    assert not [b for b in json.loads(capsys.readouterr().out)["borderline"] if b["kind"] == "band"]
    main(["report", path, "--tolerance-mm", "2"])
    out = json.loads(capsys.readouterr().out)
    assert [b["kind"] for b in out["borderline"]] == ["band"] and out["tolerance_mm"] == 2.0


def _mut(**changes):
    doc = json.loads(json.dumps(GOOD))
    for path, value in changes.items():
        target = doc
        keys = path.split(".")
        for k in keys[:-1]:
            target = target[int(k)] if k.isdigit() else target[k]
        last = keys[-1]
        target[int(last) if last.isdigit() else last] = value
    return doc


@pytest.mark.parametrize("doc, message", [
    ("{not json", "malformed JSON"),
    ({**GOOD, "format": "tablesight.scene/9"}, "unknown major version"),
    ({**GOOD, "format": "something.else/1"}, "format"),
    (_mut(**{"disks.1.id": "d1"}), "duplicate id 'd1'"),
    (_mut(**{"disks.0.radius_mm": 0}), "disks[0].radius_mm"),
    (_mut(**{"disks.0.radius_mm": -5}), "disks[0].radius_mm"),
    (_mut(**{"disks.0.player": "dwarfs"}), "unknown player 'dwarfs'"),
    (_mut(**{"terrain.0.polygon_mm": [[0, 0], [10, 10], [10, 0], [0, 10]]}), "terrain[0].polygon_mm"),
    (_mut(**{"terrain.0.polygon_mm": [[0, 0], [10, 10]]}), "terrain[0].polygon_mm"),
    (_mut(**{"terrain.0.keywords": ["lava"]}), "terrain[0].keywords"),
    ([1, 2, 3], "expected a JSON object"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, doc, message):
    rc = main(["report", write(tmp_path, doc)])
    captured = capsys.readouterr()
    assert rc == 2
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tablesight report: ")
    assert message in lines[0]


def test_missing_file_and_bad_tolerance(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["report", write(tmp_path, GOOD), "--tolerance-mm", "-1"]) == 2
    assert "--tolerance-mm" in capsys.readouterr().err


def test_installed_script_runs_the_bundled_examples_and_refuses_bad_input(tmp_path):
    exe = shutil.which("tablesight", path=str(Path(sys.executable).parent))
    assert exe, "the tablesight script is not installed in this environment"
    examples = sorted((ROOT / "examples").glob("*.scene.json"))
    assert len(examples) >= 2
    for example in examples:
        done = subprocess.run([exe, "report", str(example)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["format"] == "tablesight.report/1"
    bad = subprocess.run([exe, "report", write(tmp_path, _mut(**{"disks.0.radius_mm": 0}))],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().count("\n") == 0 and "radius_mm" in bad.stderr


@pytest.mark.parametrize("command", [["report"], ["melee"], ["shoot", "_", "d1"], ["deploy"], ["report", "--format", "text"]])
@pytest.mark.parametrize("field, value", [("disks.0.x_mm", 1e300), ("disks.1.y_mm", -1e300),
                                          ("disks.0.radius_mm", 1e300), ("terrain.0.polygon_mm.1.0", 1e300),
                                          ("disks.0.x_mm", 1_000_001)])
def test_a_huge_coordinate_is_refused_without_a_numpy_warning(tmp_path, capsys, command, field, value):
    """Regression: a coordinate of 1e300 went through to the geometry and printed a numpy RuntimeWarning."""
    import warnings

    path = write(tmp_path, _mut(**{field: value}))
    argv = [command[0], path] + (command[2:] if command[1:2] == ["_"] else command[1:])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rc = main(argv)
    out, err = capsys.readouterr()
    assert [str(w.message) for w in caught] == []
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "must be within ±1,000,000 mm" in err and repr(value) in err


def test_a_large_but_sane_coordinate_still_works(tmp_path, capsys):
    assert main(["report", write(tmp_path, _mut(**{"disks.0.x_mm": 999_999.0}))]) == 0
    assert json.loads(capsys.readouterr().out)["off_battlefield"][0]["disk"] == "d1"
