"""A detected scene against the true one: which detection found which true disk, and where they disagree.

One matching for the detector benchmarks (`benchmarks/eval_vision.py`) and the web demo's truth overlay: greedy
by centre distance, within a quarter of the true radius, disks at least 25 % visible claiming first, then
detections of the true disk's size. What the
camera got wrong, in the players' words:
- a *missed* disk: a true disk no detection found;
- a *phantom* disk: a detection that found no true disk;
- a *wrong order*: two overlapping true disks, both found, whose detected stacking order is not the true one
  (equal detected heights count as wrong: the rules would not know which one is on top).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tablesight.scene import Disk, Scene

#: A true disk less visible than this from above is "hidden": a detection of its stack's top claims first.
HIDDEN_BELOW = 0.25
#: A detection finds a true disk when its centre lies within this share of the true radius.
MATCH_RADIUS_SHARE = 0.25

DISAGREEMENT_KINDS = ("missed", "phantom", "order")


def visible_fraction(d: Disk) -> float:
    """How much of a true disk's top the camera sees (the renderer's `visible_fraction`; 1 when not given)."""
    v = d.extra.get("visible_fraction")
    return 1.0 if v is None else float(v)


def _counted(truth: Scene) -> list[Disk]:
    # a disk held in a hand is not on the table
    return [t for t in truth.disks if not t.extra.get("held")]


def match(truth: Scene, detected: Scene) -> dict[str, str]:
    """Detected id -> true id: greedy by distance, within a quarter of the true radius; true disks at least 25 %
    visible first (a detection of the top disk of a near-centred stack is that disk's, not the hidden one's
    below, even when the hidden one's centre lies nearer), then a detection of the true disk's size first (of a
    medium disk lying near-centred on a large one, the medium detection is the medium disk's: matched by distance
    alone, the two could be swapped and a right stacking order scored wrong)."""
    pairs = []
    for t in _counted(truth):
        hidden = int(visible_fraction(t) < HIDDEN_BELOW)
        for d in detected.disks:
            dist = math.hypot(t.x_mm - d.x_mm, t.y_mm - d.y_mm)
            if dist <= MATCH_RADIUS_SHARE * t.radius_mm:
                pairs.append((hidden, int(d.size != t.size), dist, d.id, t.id))
    pairs.sort()
    used_d, used_t, out = set(), set(), {}
    for _, _, _, did, tid in pairs:
        if did in used_d or tid in used_t:
            continue
        used_d.add(did)
        used_t.add(tid)
        out[did] = tid
    return out


@dataclass(frozen=True)
class Disagreement:
    """One thing the camera got wrong. `truth_ids` / `detected_ids`: the disks concerned (a wrong order names
    the lower true disk first); x_mm, y_mm, radius_mm: where to mark it (the true disk, or the phantom)."""

    kind: str  # one of DISAGREEMENT_KINDS
    truth_ids: tuple[str, ...]
    detected_ids: tuple[str, ...]
    x_mm: float
    y_mm: float
    radius_mm: float
    hidden: bool = False  # a missed disk the camera could not see (under HIDDEN_BELOW visible)

    def __post_init__(self) -> None:
        if self.kind not in DISAGREEMENT_KINDS:
            raise ValueError(f"disagreement kind must be one of {DISAGREEMENT_KINDS}, got {self.kind!r}")

    def to_json(self) -> dict:
        return {"kind": self.kind, "truth_ids": list(self.truth_ids), "detected_ids": list(self.detected_ids),
                "x_mm": round(self.x_mm, 2), "y_mm": round(self.y_mm, 2), "radius_mm": round(self.radius_mm, 2),
                "hidden": self.hidden}


def _overlap(a: Disk, b: Disk) -> bool:
    return math.hypot(a.x_mm - b.x_mm, a.y_mm - b.y_mm) < a.radius_mm + b.radius_mm - 0.5


def disagreements(truth: Scene, detected: Scene) -> list[Disagreement]:
    """Missed disks, phantom disks and wrong stacking orders of `detected` against `truth`, in that order (each
    kind by id)."""
    m = match(truth, detected)
    inv = {tid: did for did, tid in m.items()}
    tdisks = _counted(truth)
    ddisks = {d.id: d for d in detected.disks}
    out: list[Disagreement] = []
    for t in sorted(tdisks, key=lambda t: t.id):
        if t.id not in inv:
            out.append(Disagreement("missed", (t.id,), (), t.x_mm, t.y_mm, t.radius_mm,
                                    hidden=visible_fraction(t) < HIDDEN_BELOW))
    for d in sorted(detected.disks, key=lambda d: d.id):
        if d.id not in m:
            out.append(Disagreement("phantom", (), (d.id,), d.x_mm, d.y_mm, d.radius_mm))
    for i, a in enumerate(tdisks):
        for b in tdisks[i + 1:]:
            if a.z == b.z or a.id not in inv or b.id not in inv or not _overlap(a, b):
                continue
            da, db = ddisks[inv[a.id]], ddisks[inv[b.id]]
            if (da.z - db.z) * (a.z - b.z) > 0:
                continue
            low, high = (a, b) if a.z < b.z else (b, a)
            out.append(Disagreement("order", (low.id, high.id), (inv[low.id], inv[high.id]),
                                    (low.x_mm + high.x_mm) / 2, (low.y_mm + high.y_mm) / 2,
                                    min(low.radius_mm, high.radius_mm)))
    return out


def summary(found: list[Disagreement]) -> dict[str, int]:
    """How many of each kind."""
    return {k: sum(1 for d in found if d.kind == k) for k in DISAGREEMENT_KINDS}
