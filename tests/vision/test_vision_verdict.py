"""The verdict on measured circles: its file format, its validation, how it is learned, and that acceptance
obeys it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tablesight.errors import InputError
from vision.verdict import FEATURES, CircleEvidence, Verdict, load_verdict
from vision.verdict_training import fit_logistic, scores


def _evidence(**kw) -> CircleEvidence:
    base = dict(rim_own=0.8, open_consistency=0.9, rim_all=0.8, open_share=1.0, peak_shown=0.9, residual_mm=0.3,
                face_inside=0.95, face_outside=0.05, height_step=0.0, radius_mm=32.0)
    base.update(kw)
    return CircleEvidence(**base)


def test_evidence_is_finite_numbers_only():
    with pytest.raises(ValueError, match="rim_own"):
        _evidence(rim_own=float("nan"))
    with pytest.raises(ValueError, match="height_step"):
        _evidence(height_step="high")
    assert _evidence().vector().shape == (len(FEATURES),)


def test_the_shipped_verdict_loads_and_reads_its_file_back():
    v = load_verdict()
    again = Verdict.from_json(json.loads(json.dumps(v.to_json())))
    x = np.random.default_rng(0).uniform(0, 1, (20, len(FEATURES)))
    assert np.allclose(again.probabilities(x), v.probabilities(x), atol=1e-5)
    assert "WORLD_VERDICT_SEEDS" in v.about


def test_the_shipped_verdict_tells_a_whole_lone_disk_from_a_faint_ring_in_a_face():
    v = load_verdict()
    assert v.probability(_evidence()) > 0.9
    ring = _evidence(rim_own=0.3, open_consistency=0.3, rim_all=0.3, peak_shown=0.5, residual_mm=1.2,
                     face_outside=0.95)
    assert v.probability(ring) < 0.5


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(format="other/1"), "tablesight.verdict/1"),
    (lambda d: d.update(features=list(FEATURES)[::-1]), "features"),
    (lambda d: d.update(weights=d["weights"][:-1]), "weights"),
    (lambda d: d.update(scale=[0.0] * len(FEATURES)), "scale"),
    (lambda d: d.update(bias=float("inf")), "bias"),
])
def test_a_malformed_verdict_file_is_one_clear_line(tmp_path, change, message):
    data = load_verdict().to_json()
    change(data)
    path = tmp_path / "verdict.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match="malformed") as err:
        load_verdict(path)
    assert message in str(err.value)


def test_a_missing_verdict_file_says_how_to_make_one(tmp_path):
    with pytest.raises(InputError, match="verdict_training"):
        load_verdict(tmp_path / "none.json")


def test_logistic_fit_learns_which_measures_tell_disks_apart():
    # disks: much of their own outline and a face inside; others: little outline. Height says nothing here.
    rng = np.random.default_rng(3)
    n = 600
    y = (rng.random(n) < 0.5).astype(float)
    x = rng.normal(0.5, 0.05, (n, len(FEATURES)))
    rim = FEATURES.index("rim_own")
    x[:, rim] = np.where(y > 0, rng.normal(0.7, 0.1, n), rng.normal(0.3, 0.1, n))
    v = fit_logistic(x, y)
    s = scores(v, x, y)
    assert s["precision"] > 0.95 and s["recall"] > 0.95
    w = dict(zip(FEATURES, v.weights))
    assert w["rim_own"] > 1.0
    assert all(abs(w[f]) < 0.5 for f in FEATURES if f != "rim_own")
    assert math.isfinite(v.bias)
