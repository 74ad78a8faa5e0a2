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
    (["--live-whole-detector", "nest_probability=x"], "--live-whole-detector"),
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


@pytest.mark.parametrize("option, changed, kept", [("--live-detector", "detector", "whole_detector"),
                                                    ("--live-whole-detector", "whole_detector", "detector")])
def test_the_live_table_eye_changed_is_played(option, changed, kept, monkeypatch):
    seen = []
    monkeypatch.setattr(bv, "history", lambda *a, **k: seen.append(k["live"]) or {})
    monkeypatch.setattr(bv, "markdown", lambda *a, **k: "")
    assert bv.main(["--speed-seeds", "0", "--clip-seeds", "1", "--cover-seeds", "0", "--stack-seeds", "0",
                    "--live-seeds", "0", option, "lone_probability=0.5"]) == 0
    from dataclasses import replace

    from vision.live import PipelineConfig

    assert [getattr(c, changed) for c in seen] == [replace(getattr(PipelineConfig(), changed), lone_probability=0.5)]
    assert [getattr(c, kept) for c in seen] == [getattr(PipelineConfig(), kept)]


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


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"{name}_args", _ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("bench", ["tune_eye", "eval_families", "eval_sizes", "suspects"])
@pytest.mark.parametrize("setting, says", [("nonsense=1", "DetectorConfig setting"), ("map_views=3", "map_views"),
                                           ("rays", "NAME=VALUE")])
def test_a_nonsense_setting_of_the_eye_is_one_clear_line(bench, setting, says, capsys):
    assert _load(bench).main(["--frames", "1", "--setting", setting]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(bench) and says in err[0]


@pytest.mark.parametrize("rows", ["7", "x", "0,,1"])
def test_eval_sizes_nonsense_rows_are_one_clear_line(rows, capsys):
    assert _load("eval_sizes").main(["--frames", "1", "--rows", rows]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("eval_sizes: --rows")


def test_eval_sizes_plays_the_setting(monkeypatch):
    sizes = _load("eval_sizes")
    seen = []
    monkeypatch.setattr(sizes, "run_row", lambda *a, **k: seen.append((a[3], a[-1].one_size_mm)) or sizes.Tally())
    monkeypatch.setattr(sizes, "_cells", lambda t: "")
    assert sizes.main(["--frames", "1", "--rows", "3", "--setting", "one_size_mm=40"]) == 0
    assert seen == [(False, 40.0), (True, 40.0)]   # both readings get the changed eye


@pytest.mark.parametrize("args", [["--skip", "-1"], ["--seeds", "gate", "--family", "classic", "--skip", "2"]])
def test_suspects_nonsense_skip_is_one_clear_line(args, capsys):
    assert _load("suspects").main(["--frames", "1", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("suspects:") and "--skip" in err[0]


def test_suspects_skips_seeds(monkeypatch):
    sus = _load("suspects")
    from vision.synth import world

    seen = []
    monkeypatch.setattr(world, "world_table", lambda seed, family, **k: seen.append((family, seed)) or (None, None))
    got = list(sus.frames("tuning", ["photo-thin-felt"], 2, skip=12))
    from vision.synth.seeds import WORLD_TUNING_SEEDS

    assert [f for f, _, _ in got] == ["photo-thin-felt"] * 2
    assert [s for f, s in seen if f == "photo-thin-felt"] == list(WORLD_TUNING_SEEDS[12:14])


def test_the_arrival_settings_are_played_and_off_is_the_change_maps_level(monkeypatch):
    seen = []
    monkeypatch.setattr(bv, "history", lambda *a, **k: seen.append(k["live_settings"]["arrival"]) or {})
    monkeypatch.setattr(bv, "markdown", lambda *a, **k: "")
    assert bv.main(["--speed-seeds", "0", "--clip-seeds", "1", "--cover-seeds", "0", "--stack-seeds", "0",
                    "--live-seeds", "0", "--arrival", "level=off", "--arrival", "rest_mm=2"]) == 0
    assert [(a.level, a.rest_mm) for a in seen] == [(None, 2.0)]


@pytest.mark.parametrize("args", [["--skip", "-1"], ["--frames", "0"]])
def test_tune_eye_nonsense_frames_or_skip_is_one_clear_line(args, capsys):
    assert _load("tune_eye").main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tune_eye:") and "--skip" in err[0]


def test_tune_eye_judges_on_the_seeds_after_those_skipped(monkeypatch):
    tune = _load("tune_eye")
    seen = []
    monkeypatch.setattr(tune, "tuning_frames", lambda count, tier, skip: seen.append((count, tier, skip)) or [])
    monkeypatch.setattr(tune, "line", lambda name, t: name)
    assert tune.main(["--frames", "2", "--skip", "4", "--tier", "alike"]) == 0
    assert seen == [(2, "alike", 4)]
