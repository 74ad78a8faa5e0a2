"""Is a measured circle a disk? A small network over what the maps say about it.

`vision.accept` measures each candidate circle on the face / rim / height maps (`CircleEvidence`: how much of its own
outline shows, whether the outline in the open is there, a face inside and none outside, a step up in height where
it lies inside another disk, ...). Two hand-set thresholds on two of these numbers traded recall for precision
badly: a printed ring inside a disk's art and a small disk lying on it differ in how high their faces lie, not in
how much outline shows. The verdict weighs every measure at once, with weights learned on the randomized world's
training families (`python -m vision.verdict_training`, seeds the face network never saw), and its output is a
probability: the confidence a new disk is reported with.

It has one hidden layer: a weighted sum of the measures (a logistic model) cannot say that a step up in height
matters only where the circle lies wholly on another disk's face, and there its weight on the step came out near
zero, so disks lying within others were judged as rings in the art (`benchmarks/results/vision.md`).

The weights live in `vision/models/verdict.json` beside the network whose maps they read.
"""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from tablesight.errors import InputError

VERDICT_PATH = Path(__file__).resolve().parent / "models" / "verdict.json"
FORMAT = "tablesight.verdict/2"


@dataclass(frozen=True)
class CircleEvidence:
    """What the maps say about one circle, measured against the disks accepted before it."""

    rim_own: float            # share of its outline shown and not explained by an accepted disk's outline
    open_consistency: float   # share of the outline in the open (under no accepted disk) that shows
    rim_all: float            # share of its outline shown, explained or not
    open_share: float         # share of its outline in the open
    peak_shown: float         # mean rim-map peak on the rays that show the outline (0: none)
    residual_mm: float        # rms distance of the shown outline from the circle
    face_inside: float        # mean face probability over its inside
    face_outside: float       # mean face probability a little outside its outline
    height_step: float        # its inside's height minus the height of the face around it (0: no face around)
    radius_mm: float          # the size class's radius

    def __post_init__(self) -> None:
        for name in FEATURES:     # the fields, named once (fields() is slow, and every judged circle is checked)
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"CircleEvidence.{name}: expected a finite number, got {v!r}")

    def vector(self) -> np.ndarray:
        # the fields read directly: dataclasses.astuple deep-copies, and this runs for every circle judged
        return np.array([getattr(self, name) for name in FEATURES], np.float64)


FEATURES: tuple[str, ...] = tuple(f.name for f in fields(CircleEvidence))


@dataclass(frozen=True, eq=False)
class Verdict:
    """p = sigmoid(bias + weights . tanh(z @ hidden_weights + hidden_bias)), z = (x - mean) / scale."""

    mean: np.ndarray
    scale: np.ndarray
    hidden_weights: np.ndarray   # (len(FEATURES), H)
    hidden_bias: np.ndarray      # (H,)
    weights: np.ndarray          # (H,)
    bias: float
    about: str = ""

    def __post_init__(self) -> None:
        n = len(FEATURES)
        for name in ("mean", "scale"):
            a = np.asarray(getattr(self, name), np.float64)
            if a.shape != (n,) or not np.all(np.isfinite(a)):
                raise ValueError(f"Verdict.{name}: expected {n} finite numbers")
            object.__setattr__(self, name, a)
        hidden = np.asarray(self.hidden_weights, np.float64)
        if hidden.ndim != 2 or hidden.shape[0] != n or hidden.shape[1] < 1 or not np.all(np.isfinite(hidden)):
            raise ValueError(f"Verdict.hidden_weights: expected {n} rows of finite numbers, one column a unit")
        object.__setattr__(self, "hidden_weights", hidden)
        for name in ("hidden_bias", "weights"):
            a = np.asarray(getattr(self, name), np.float64)
            if a.shape != (hidden.shape[1],) or not np.all(np.isfinite(a)):
                raise ValueError(f"Verdict.{name}: expected {hidden.shape[1]} finite numbers (one a hidden unit)")
            object.__setattr__(self, name, a)
        if not np.all(self.scale > 0):
            raise ValueError("Verdict.scale: every entry must be > 0")
        if not math.isfinite(self.bias):
            raise ValueError("Verdict.bias: expected a finite number")

    def probability(self, evidence: CircleEvidence) -> float:
        return float(self.probabilities(evidence.vector()[None, :])[0])

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """p for each row of x (N, len(FEATURES))."""
        return 1.0 / (1.0 + np.exp(-np.clip(self.logits(x), -40.0, 40.0)))

    def logits(self, x: np.ndarray) -> np.ndarray:
        z = (np.asarray(x, np.float64) - self.mean) / self.scale
        return self.bias + np.tanh(z @ self.hidden_weights + self.hidden_bias) @ self.weights

    def to_json(self) -> dict:
        r = lambda a: np.round(np.asarray(a, np.float64), 6).tolist()  # noqa: E731
        return {"format": FORMAT, "about": self.about, "features": list(FEATURES),
                "mean": r(self.mean), "scale": r(self.scale), "hidden_weights": r(self.hidden_weights),
                "hidden_bias": r(self.hidden_bias), "weights": r(self.weights), "bias": round(float(self.bias), 6)}

    @classmethod
    def from_json(cls, data: object) -> "Verdict":
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"expected a {FORMAT} object (retrain it with 'python -m vision.verdict_training')")
        if data.get("features") != list(FEATURES):
            raise ValueError(f"features must be {list(FEATURES)} (this version's measures)")
        return cls(mean=np.asarray(data["mean"], np.float64), scale=np.asarray(data["scale"], np.float64),
                   hidden_weights=np.asarray(data["hidden_weights"], np.float64),
                   hidden_bias=np.asarray(data["hidden_bias"], np.float64),
                   weights=np.asarray(data["weights"], np.float64), bias=float(data["bias"]),
                   about=str(data.get("about", "")))


_lock = threading.Lock()
_loaded: dict[str, Verdict] = {}


def load_verdict(path: Path | str | None = None) -> Verdict:
    """The verdict model (default: the shipped one), read once per process; a missing or malformed file is one
    clear InputError."""
    p = Path(path) if path is not None else VERDICT_PATH
    key = str(p)
    with _lock:
        if key not in _loaded:
            if not p.is_file():
                raise InputError(f"the eye's verdict file is missing: {p} (retrain it with "
                                 "'python -m vision.verdict_training')")
            try:
                _loaded[key] = Verdict.from_json(json.loads(p.read_text(encoding="utf-8")))
            except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
                raise InputError(f"the eye's verdict file {p} is malformed: {str(exc)[:200]}") from None
        return _loaded[key]
