"""The speed and history benchmark's command line: a nonsense choice of the live table's eye or of the clips is
one clear line and runs nothing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]
for _p in (str(_ROOT), str(_ROOT / "benchmarks")):
    if _p not in sys.path:
        sys.path.insert(0, _p)
_spec = importlib.util.spec_from_file_location("bench_vision_args", _ROOT / "benchmarks" / "bench_vision.py")
bv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bv)

_NOTHING = ["--speed-seeds", "0", "--clip-seeds", "0", "--cover-seeds", "0", "--stack-seeds", "0", "--live-seeds", "0"]


@pytest.mark.parametrize("args, says", [
    (["--alike"], "--alike"),
    (["--live-detector", "nonsense=1"], "--live-detector"),
    (["--live-detector", "lone_probability=2"], "--live-detector"),
    (["--change", "nonsense=3"], "--change"),
    (["--change", "level=x"], "--change"),
    (["--change", "level=500"], "--change"),
    (["--change", "level=off"], "--change"),
])
def test_nonsense_is_one_clear_line(args, says, capsys):
    with pytest.raises(SystemExit) as exc:
        bv.main(_NOTHING + args)
    assert exc.value.code == 2
    assert says in capsys.readouterr().err.strip().splitlines()[-1]


def test_the_live_table_eye_changed_is_played(monkeypatch):
    seen = []
    monkeypatch.setattr(bv, "history", lambda *a, **k: seen.append(k["detector"]) or {})
    monkeypatch.setattr(bv, "markdown", lambda *a, **k: "")
    assert bv.main(["--speed-seeds", "0", "--clip-seeds", "1", "--cover-seeds", "0", "--stack-seeds", "0",
                    "--live-seeds", "0", "--live-detector", "lone_probability=0.5"]) == 0
    from dataclasses import replace

    from vision.live import LIVE_DETECTOR

    assert seen == [replace(LIVE_DETECTOR, lone_probability=0.5)]


def test_the_live_table_change_settings_are_played(monkeypatch):
    seen = []
    monkeypatch.setattr(bv, "history", lambda *a, **k: seen.append(k["live_settings"]["change"]) or {})
    monkeypatch.setattr(bv, "markdown", lambda *a, **k: "")
    assert bv.main(["--speed-seeds", "0", "--clip-seeds", "1", "--cover-seeds", "0", "--stack-seeds", "0",
                    "--live-seeds", "0", "--change", "level=20", "--change", "speck_px=5",
                    "--change", "outline_match=off",
                    "--no-exposure-match"]) == 0
    assert [(c.level, c.speck_px, c.match_exposure, c.outline_match) for c in seen] == [(20.0, 5, False, None)]


def test_the_live_tables_cost_is_timed_with_the_settings_chosen(monkeypatch):
    seen = []
    monkeypatch.setattr(bv, "live", lambda *a, **k: seen.append(a[4]) or {})
    monkeypatch.setattr(bv, "markdown", lambda *a, **k: "")
    assert bv.main(["--speed-seeds", "0", "--clip-seeds", "0", "--cover-seeds", "0", "--stack-seeds", "0",
                    "--live-seeds", "1", "--live-detector", "lone_probability=off",
                    "--change", "outline_match=off"]) == 0
    assert [(c.detector.lone_probability, c.change.outline_match) for c in seen] == [(None, None)]
