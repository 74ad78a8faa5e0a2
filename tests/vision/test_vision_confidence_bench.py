"""The confidence benchmark: which detections count as real or made up, its tables, and its refusals."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tablesight.scene import Disk, Scene, Terrain

_ROOT = Path(__file__).resolve().parents[2]
for _p in (str(_ROOT), str(_ROOT / "benchmarks")):
    if _p not in sys.path:
        sys.path.insert(0, _p)
_spec = importlib.util.spec_from_file_location("bench_confidence", _ROOT / "benchmarks" / "confidence.py")
cb = importlib.util.module_from_spec(_spec)
sys.modules["bench_confidence"] = cb
_spec.loader.exec_module(cb)

TRUTH = Scene(disks=(
    Disk("t1", 100.0, 100.0, 22.0, size="small", extra={"visible_fraction": 1.0}),
    Disk("t2", 300.0, 100.0, 32.0, size="medium", extra={"visible_fraction": 0.1}),   # barely seen: counts for nothing
))


@pytest.mark.parametrize("detected, expected", [
    ((Disk("d1", 100.5, 100.0, 22.0, size="small", confidence=0.97),), [(0.97, True)]),
    ((Disk("d1", 500.0, 500.0, 22.0, size="small", confidence=0.7),), [(0.7, False)]),        # made up
    ((Disk("d1", 300.0, 100.0, 32.0, size="medium", confidence=0.65),), []),                  # the barely seen disk
    ((Disk("d1", 100.0, 100.0, 22.0, size="small"),), [(1.0, True)]),                          # no confidence: sure
])
def test_detections_are_real_made_up_or_not_counted(detected, expected):
    got = cb.judged(TRUTH, Scene(disks=detected))
    assert [(j.confidence, j.real) for j in got] == expected


def test_the_tables_count_each_bin_and_each_marking_level():
    items = [cb.Judged(0.65, False), cb.Judged(0.75, True), cb.Judged(0.85, False), cb.Judged(0.99, True),
             cb.Judged(1.0, True)]
    bins = "\n".join(cb.bin_rows(items))
    assert "| 0.60-0.70 | 1 | 0 | 0.0 % | 1 of 2 |" in bins
    assert "| 0.99-1.00 | 2 | 2 | 100.0 % | 0 of 2 |" in bins        # 1.0 falls in the last bin
    marks = "\n".join(cb.mark_rows(items))
    assert "| 0.80 | 1 of 2 (50.0 %) | 1 of 3 (33.3 %) |" in marks
    assert "| 0.90 | 2 of 2 (100.0 %) | 1 of 3 (33.3 %) |" in marks


def test_pairs_are_scored_right_or_wrong_and_asked_or_not():
    truth = Scene(disks=(Disk("a", 100.0, 100.0, 32.0, z=0, extra={"visible_fraction": 1.0}),
                         Disk("b", 130.0, 100.0, 22.0, z=1, extra={"visible_fraction": 1.0}),
                         Disk("c", 400.0, 100.0, 22.0, z=1, extra={"visible_fraction": 1.0})))
    det = [Disk("d1", 100.0, 100.0, 32.0, z=1), Disk("d2", 130.0, 100.0, 22.0, z=0), Disk("d3", 400.0, 100.0, 22.0)]
    wrong = cb.judged_pairs(truth, Scene(disks=tuple(det)))
    assert [(p.right, p.uncertain) for p in wrong] == [(False, False)]          # c overlaps nothing
    asked = cb.judged_pairs(truth, Scene(disks=tuple(det), extra={"uncertain_pairs": [["d2", "d1"]]}))
    assert [(p.right, p.uncertain) for p in asked] == [(False, True)]
    rows = "\n".join(cb.pair_rows(wrong + asked))
    assert "| reported uncertain (the page asks) | 0 | 1 |" in rows and "| not reported | 0 | 1 |" in rows


def test_a_confidence_out_of_range_is_refused():
    with pytest.raises(ValueError):
        cb.Judged(1.2, True)


@pytest.mark.parametrize("argv", [["--frames", "0"], ["--folder", "no-such-folder"],
                                  ["--seeds", "gate", "--family", "no-such-family", "--frames", "1"]])
def test_bad_arguments_are_one_line(argv, capsys):
    assert cb.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("confidence: ") and err.count("\n") == 1


def _t(id_, x, y, r, z=0, vis=1.0):
    return Disk(id_, x, y, r, z=z, extra={"visible_fraction": vis})


PLACES = Scene(
    disks=(_t("big", 200.0, 200.0, 44.5), _t("small", 500.0, 200.0, 22.0), _t("missed", 800.0, 200.0, 22.0),
           _t("left", 200.0, 500.0, 32.0), _t("right", 262.0, 500.0, 32.0)),
    terrain=(Terrain("hill", ((600.0, 600.0), (800.0, 600.0), (800.0, 800.0), (600.0, 800.0))),))


@pytest.mark.parametrize("made_up, kind", [
    (Disk("d", 806.0, 200.0, 22.0), "a missed disk read off"),        # 6 mm off: no match, the disk's own place
    (Disk("d", 800.0, 200.0, 32.0), "a missed disk read off"),        # the wrong size on it
    (Disk("d", 504.0, 203.0, 32.0), "round a found disk"),            # a lower disk that is not there
    (Disk("d", 215.0, 200.0, 22.0), "within a disk"),                 # a ring in the large disk's art
    (Disk("d", 231.0, 500.0, 22.0), "across disks"),                  # where two disks' outlines meet
    (Disk("d", 700.0, 700.0, 22.0), "on terrain"),
    (Disk("d", 100.0, 800.0, 22.0), "on the cloth"),
])
def test_each_made_up_disk_is_placed(made_up, kind):
    found = {"big", "small", "left", "right"}
    assert cb.made_up_kind(made_up, PLACES, found) == kind


def test_false_pins_are_traced_to_their_cause():
    """A made-up disk lying on a real one invents a pin; two touching disks read as overlapping invent one; a true
    pin read the other way up is a false pin (and a missed true one)."""
    truth = Scene(disks=(_t("a", 100.0, 100.0, 32.0), _t("b", 163.7, 100.0, 32.0),          # touching (0.3 mm)
                         _t("c", 400.0, 100.0, 32.0, z=0), _t("d", 420.0, 100.0, 22.0, z=1),  # d pins c
                         _t("e", 700.0, 100.0, 44.5)))
    det = Scene(disks=(Disk("x1", 100.0, 100.0, 32.0, z=0), Disk("x2", 162.0, 100.0, 32.0, z=1),  # 2 mm overlap
                       Disk("x3", 400.0, 100.0, 32.0, z=1), Disk("x4", 420.0, 100.0, 22.0, z=0),  # the other way up
                       Disk("x5", 700.0, 100.0, 44.5, z=0), Disk("x6", 710.0, 100.0, 22.0, z=1, confidence=0.7)))
    made_up, causes = cb.made_up_and_false_pins(truth, det)
    assert [(u.kind, u.confidence, u.false_pin) for u in made_up] == [("within a disk", 0.7, True)]
    assert sorted(causes) == sorted(["touching, read as overlapping", "read the other way up", "made-up upper disk"])
    rows = "\n".join(cb.made_up_rows(made_up) + cb.false_pin_rows(causes))
    assert "| within a disk | 1 | 1 | 1 |" in rows and "| all | 1 | 1 | 1 |" in rows
    assert "| 1 | 0 | 1 | 1 | 0 |" in rows


def test_the_page_level_is_the_pages_own():
    js = (_ROOT / "webui" / "static" / "table.js").read_text(encoding="utf-8")
    assert f"const LOW_CONFIDENCE = {cb.PAGE_LEVEL};" in js
