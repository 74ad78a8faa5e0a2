"""The real-chips benchmark (`benchmarks/eval_real.py`): its labels lie on the photograph's coins, its frames put
each coin where the truth says, and a missing or different photograph is one clear line."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))
_spec = importlib.util.spec_from_file_location("bench_eval_real", _ROOT / "benchmarks" / "eval_real.py")
er = importlib.util.module_from_spec(_spec)
sys.modules["bench_eval_real"] = er
_spec.loader.exec_module(er)

try:
    PHOTO, CHIPS = er.real_chips()
except er.MissingPhoto:
    PHOTO = CHIPS = None
needs_photo = pytest.mark.skipif(PHOTO is None, reason="Debian's opencv-doc (coins.jpg) is not installed")


@needs_photo
def test_every_label_is_a_dark_coin_with_its_outline_where_the_label_puts_it():
    grey = cv2.GaussianBlur(cv2.cvtColor(PHOTO, cv2.COLOR_BGR2GRAY), (3, 3), 0).astype(np.float64)
    paper = np.percentile(grey, 95)
    for x, y, r in CHIPS:
        a = np.linspace(0, 2 * np.pi, 72, endpoint=False)

        def ring(rad: float) -> np.ndarray:
            xs = np.clip(np.round(x + rad * np.cos(a)).astype(int), 0, grey.shape[1] - 1)
            ys = np.clip(np.round(y + rad * np.sin(a)).astype(int), 0, grey.shape[0] - 1)
            return grey[ys, xs]

        assert ring(r * 0.5).mean() < paper - 60, f"({x}, {y}): no coin under the label"
        # the outline: darker just inside it than just outside, where the outside is paper (not a touching coin)
        inside, outside = ring(r - 3), ring(r + 3)
        on_paper = outside > paper - 40
        assert on_paper.sum() == 0 or (outside[on_paper] - inside[on_paper]).mean() > 40, f"({x}, {y}): outline off"


@pytest.mark.parametrize("arrangement", ["heap", "grid", "scattered"])
def test_the_arrangements_keep_the_chips_apart_as_they_say(arrangement):
    chips = np.column_stack([np.arange(24.0), np.arange(24.0), np.full(24, 24.0)]) if CHIPS is None else CHIPS
    places = er.chip_places(arrangement, chips, er.CHIP_MM / 48.0, seed=9500)
    assert places.shape == (len(chips), 2)
    d = np.hypot(*(places[:, None, :] - places[None, :, :]).transpose(2, 0, 1))
    np.fill_diagonal(d, np.inf)
    least = {"heap": 0.95, "grid": 1.6, "scattered": 1.5}[arrangement] * er.CHIP_MM
    assert d.min() >= least - 1.5
    with pytest.raises(ValueError, match="arrangement"):
        er.chip_places("pile", chips, 1.0)


@needs_photo
def test_a_composite_puts_each_coin_where_its_truth_says():
    from vision.facemap_training import table_for

    frame, truth = er.composite("classic", 9000, "scattered")
    camera = table_for("classic", 9000, 0)[1]
    assert len(truth.disks) == len(CHIPS)
    img = frame.astype(np.float64)
    a = np.linspace(0, 2 * np.pi, 48, endpoint=False)
    for d in truth.disks:
        def ring(rad_mm: float) -> np.ndarray:
            pts = camera.project(np.column_stack([d.x_mm + rad_mm * np.cos(a), d.y_mm + rad_mm * np.sin(a)]))
            return img[np.round(pts[:, 1]).astype(int), np.round(pts[:, 0]).astype(int)]

        # coin just inside the true outline, cloth all round just outside it (the chips lie 1.5 diameters apart)
        cloth = np.median(ring(d.radius_mm + 12.0), axis=0)
        outside = np.linalg.norm(ring(d.radius_mm + 2.5) - cloth, axis=1)
        assert np.percentile(outside, 90) < 25, f"{d.id}: coin outside its outline"
        assert np.linalg.norm(ring(d.radius_mm - 3.0) - cloth, axis=1).mean() > 30, f"{d.id}: no coin inside it"


def test_a_missing_or_different_photograph_is_one_clear_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(er, "OPENCV_DOC", tmp_path)
    assert er.main([]) == 2
    assert "is missing" in capsys.readouterr().err
    (tmp_path / "opencv4" / "html").mkdir(parents=True)
    (tmp_path / "opencv4" / "html" / "coins.jpg").write_bytes(b"not the scan")
    assert er.main([]) == 2
    err = capsys.readouterr().err
    assert "not the photograph the labels were made on" in err and "Traceback" not in err
