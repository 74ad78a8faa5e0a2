"""A DetectorConfig setting changed from a command line (`DetectorConfig.changed`), and the setting-cost benchmark's
one argument: nonsense is one clear line."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]
for _p in (str(_ROOT), str(_ROOT / "benchmarks")):
    if _p not in sys.path:
        sys.path.insert(0, _p)
_spec = importlib.util.spec_from_file_location("bench_setting_cost", _ROOT / "benchmarks" / "setting_cost.py")
sc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sc)


@pytest.mark.parametrize("setting, name, value", [("lone_probability=off", "lone_probability", None),
                                                  ("lone_probability=0.7", "lone_probability", 0.7),
                                                  ("nest_probability=off", "nest_probability", None),
                                                  ("rays=72", "rays", 72), ("align=false", "align", False),
                                                  ("model_path=net.onnx", "model_path", "net.onnx")])
def test_a_setting_is_changed_and_nothing_else(setting, name, value):
    from dataclasses import asdict

    from vision.fit import DEFAULT_CONFIG

    got = DEFAULT_CONFIG.changed(setting)
    assert getattr(got, name) == value and type(getattr(got, name)) is type(value)
    assert {k: v for k, v in asdict(got).items() if k != name} == {k: v for k, v in asdict(DEFAULT_CONFIG).items()
                                                                  if k != name}


@pytest.mark.parametrize("bad", ["nonsense=1", "lone_probability", "lone_probability=abc", "lone_probability=2",
                                 "rays=7.5", "rays=off", "align=1"])
def test_a_nonsense_setting_is_a_value_error(bad):
    from vision.fit import DEFAULT_CONFIG

    with pytest.raises(ValueError):
        DEFAULT_CONFIG.changed(bad)


@pytest.mark.parametrize("bad", ["nonsense=1", "lone_probability", "lone_probability=abc", "lone_probability=2"])
def test_nonsense_is_one_clear_line(bad, capsys):
    assert sc.main([bad]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("setting_cost: ")


@pytest.mark.parametrize("args", [["--chips-mm", "3"], ["--chips-mm", "400"], ["--rounds", "0"]])
def test_nonsense_options_are_one_clear_line(args, capsys):
    assert sc.main(["one_size_mm=off", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("setting_cost: ")


def test_chip_frames_are_drawn_with_the_one_diameter_and_calibrated_with_it(monkeypatch):
    from vision.synth import render, world

    seen = []
    monkeypatch.setattr(world, "world_table", lambda seed, family, **k: seen.append((family, k)) or (None, None))
    monkeypatch.setattr(render, "render_frame", lambda setup, camera: type("F", (), {"image": None})())
    import vision.synth.truth as truth

    class Cal:
        def rectify_maps(self):
            return None

    monkeypatch.setattr(truth, "truth_calibration", lambda camera, diam: seen.append(diam) or Cal())
    frames = sc.chip_frames(25.0, 2)
    assert len(frames) == 2
    assert seen[0] == ("heraldic-wide-felt", {"diameters_mm": (25.0, 25.1, 25.2)})
    assert seen[1] == (25.0, 25.1, 25.2)
