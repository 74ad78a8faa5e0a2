"""Which disk lies on which: rim continuity in the overlap lens, history, and one consistent `z` per pile.

For two overlapping disks A and B, look at A's rim where it runs inside B (the lens), away from any third disk:
if A is on top, its outline runs unbroken there; if A is under B, that arc is hidden under B's face. The rim map
of `vision.facemap` was taught exactly this (only the upper disk's outline is an outline), whatever the disks' art:
each lens ray reads the map's peak near A's circle; the evidence is summed over the rays (a small disk lying on a
large one has many lens rays, the large one's rim only a few, barely covered), and the difference of the two sums orders the pair. A disk whose rim
lies nearly all inside the other is the upper one: under it, it could not have been found. Pairs are judged with
the size classes' radii, as the rules judge overlaps; the rim is read on each disk's measured silhouette.
History (the previous scene's order of the same two disks; a disk that arrives onto a resting disk is above it)
settles pairs whose lens says little, and a pair where a clear frame reading and history disagree, or where
neither says anything, is reported as uncertain with lowered confidences, never silently. Pairwise orders become
`z` by a topological order (longest chain from the bottom); a cycle is broken at its weakest pair, which is then
reported as uncertain.

The rim map reads the lens at 2 mm per pixel, and often loses the thin cue there (a border running on unbroken,
an edge and side wall over the other disk's face). `vision.pairjudge` reads the same lens from the rectified image
at 1 px/mm, learned on the training families: its logit that one disk lies on the other adds to the lens evidence
(`judge_weight`, chosen on the tuning seeds), as a reading of the occlusion like the rim's own.

The height map is a third reading of the frame: how high each visible face lies in its pile. Of two overlapping
disks the upper lies higher, so the difference of their faces' mean heights (read away from the lens and from
any third disk) adds to the lens evidence. Two disks overlapping less than `touch_depth_mm` that no earlier scene
saw stacked lie side by side in base contact: so shallow a lens is measurement noise, not a pin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from vision.facemap import FaceMaps, sample
from vision.fit import DiskFit
from vision.pairjudge import Circle, judge_pairs


@dataclass(frozen=True)
class PairEvidence:
    upper: int            # index into the fits
    lower: int
    strength: float       # 0..1, how clearly the frame (and history) say so
    source: str           # "rim", "nested", "history", "arrival", "rim+history", "guess", "implied"
    uncertain: bool


@dataclass(frozen=True)
class StackOrder:
    z: tuple[int, ...]
    uncertain_pairs: tuple[tuple[int, int], ...]
    confidences: tuple[float, ...]
    pairs: tuple[PairEvidence, ...]
    touching: tuple[tuple[int, int], ...] = ()   # pairs read as lying side by side in contact, not stacked


@dataclass(frozen=True)
class StackingConfig:
    """How much rim evidence orders a pair, and how history weighs in."""

    rays: int = 120               # rays round each disk (the lens rays are those inside the other disk)
    clear_margin: float = 0.25    # score difference that orders a pair from the frame alone
    strong_margin: float = 0.5    # a frame reading this clear overrides history
    lens_inside_mm: float = 1.0   # a lens ray's rim point lies at least this far inside the other disk
    lens_full_mm: float = 3.0     # ... and counts fully from this depth (shallower: the other disk's rim blurs in)
    rim_search_mm: float = 1.5    # the outline is looked for this far either side of the measured circle
    ray_logit_cap: float = 2.0    # one lens ray's evidence (logit of the rim map's peak) is capped at this
    evidence_scale: float = 15.0  # summed ray evidence (logits) per unit of the margins below
    nested_fraction: float = 0.85  # a disk with this much of its rim inside the other lies on it (0: not used)
    touch_depth_mm: float = 1.5   # a pair overlapping less than this, no stack remembered, is in contact
                                  # (tuning seeds: 1.0 / 1.5 / 2.0 -> pin precision 86.9 / 90.1 / 90.4 %,
                                  # stacking 97.7 / 97.2 / 95.5 %)
    height_weight: float = 5.0    # evidence per unit of height difference of the two faces (chosen on tuning seeds:
                                  # the network reads one level up as much less than the 0.5 it was taught)
    judge_weight: float = 2.0     # evidence per unit of the pair judge's logit (vision.pairjudge; 0: not asked;
                                  # chosen on tuning seeds by pin F1: 1 -> 81.4, 2 -> 81.8 % (stacking 97.1 / 97.6
                                  # % of pairs); an older network: 0.3 -> 96.6 %, 1 and 3 -> 97.7 %, 0 -> 88.1 %)
    judge_model: str | None = None  # a pair judge of one's own (None: the shipped one)
    uncertain_confidence_factor: float = 0.7

    def __post_init__(self) -> None:
        if not 24 <= self.rays <= 720:
            raise ValueError("rays must be within 24..720")
        if not 0.0 <= self.lens_inside_mm < self.lens_full_mm:
            raise ValueError("need 0 <= lens_inside_mm < lens_full_mm")
        if not 0.0 < self.rim_search_mm <= 5.0:
            raise ValueError("rim_search_mm must be within (0, 5]")
        if not 0.0 <= self.nested_fraction <= 1.0:
            raise ValueError("nested_fraction must be within 0..1 (0: not used)")
        if not 0.0 <= self.touch_depth_mm <= 5.0:
            raise ValueError("touch_depth_mm must be within 0..5 (0: every overlap is a stack)")
        if not 0.0 <= self.height_weight <= 10.0:
            raise ValueError("height_weight must be within 0..10 (0: the height map is not read)")
        if not 0.0 <= self.judge_weight <= 10.0:
            raise ValueError("judge_weight must be within 0..10 (0: the pair judge is not asked)")
        if self.judge_model is not None and not isinstance(self.judge_model, str):
            raise ValueError("judge_model must be a file path (str) or None")
        if not (self.ray_logit_cap > 0 and self.evidence_scale > 0):
            raise ValueError("ray_logit_cap and evidence_scale must be > 0")
        if not 0 < self.clear_margin <= self.strong_margin <= 1:
            raise ValueError("need 0 < clear_margin <= strong_margin <= 1")


DEFAULT_STACKING = StackingConfig()


OVERLAP_MARGIN_PX = 0.5   # circles overlapping by no more than this are a pair in contact, not an overlap


def overlaps(x: np.ndarray, y: np.ndarray, r: np.ndarray, margin_px: float = OVERLAP_MARGIN_PX) -> np.ndarray:
    """(M, M): which of the circles (x, y, r) overlap which by more than `margin_px` (a circle overlaps itself)."""
    x, y, r = (np.asarray(a, np.float64) for a in (x, y, r))
    return np.hypot(x[:, None] - x, y[:, None] - y) < r[:, None] + r - margin_px


def overlapping_pairs(fits: Sequence[DiskFit], margin_px: float = OVERLAP_MARGIN_PX) -> list[tuple[int, int]]:
    """The pairs (i < j) of fits whose class circles overlap by more than `margin_px`, in order."""
    x, y, r = (np.array([getattr(f, name) for f in fits], np.float64) for name in ("cx", "cy", "r_px"))
    return [(int(i), int(j)) for i, j in zip(*np.nonzero(np.triu(overlaps(x, y, r, margin_px), 1)))]


def _map_circles(fits: Sequence[DiskFit], scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Centres and class radii of fits in map px (`scale`: rectified px per map px)."""
    cx, cy, r = (np.array([getattr(f, name) for f in fits], np.float64) for name in ("cx", "cy", "r_px"))
    return (cx + 0.5) / scale - 0.5, (cy + 0.5) / scale - 0.5, r / scale


def lens_evidence(maps: FaceMaps, fits: Sequence[DiskFit], i: int, j: int, scale: float, mm: float,
                  cfg: StackingConfig, circles: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
                  ) -> tuple[float, int]:
    """How much disk i's outline shows where it runs inside disk j, as evidence that i lies above j: > 0 for above,
    < 0 for under, 0 with no lens rays; and the number of lens rays. `scale`: rectified px per map px; `mm`: map px
    per mm.

    Each lens ray's evidence is the logit of the rim map's peak near i's measured circle, capped (neighbouring rays
    share pixels) and weighted by how deep inside j the ray lies (near the crossing points j's own outline blurs
    in). Summing, not averaging, lets the many rays of a small disk lying on a large one outweigh the few rays of
    the large disk's outline that the small one barely covers. Where a third disk lies too, an outline that shows
    is above both, but a hidden one may be under either: such rays count only for. `circles`: every fit's
    `_map_circles`, when already made."""
    a, b = fits[i], fits[j]
    K = cfg.rays
    ang = np.arange(K) * (2.0 * math.pi / K)
    ax, ay, ar = (a.cx + 0.5) / scale - 0.5, (a.cy + 0.5) / scale - 0.5, a.rim_r / scale
    bx, by, br = (b.cx + 0.5) / scale - 0.5, (b.cy + 0.5) / scale - 0.5, b.r_px / scale
    px, py = ax + ar * np.cos(ang), ay + ar * np.sin(ang)
    depth = (br - np.hypot(px - bx, py - by)) / mm
    sel = depth > cfg.lens_inside_mm
    n = int(sel.sum())
    if n == 0:
        return 0.0, 0
    others = np.ones(len(fits), bool)
    others[[i, j]] = False
    fx, fy, fr = (c[others] for c in (circles if circles is not None else _map_circles(fits, scale)))
    third = (np.hypot(px[:, None] - fx, py[:, None] - fy) <= fr + 2.0 * mm).any(1)
    reach = cfg.rim_search_mm * mm
    t = np.linspace(-reach, reach, 5)
    ca, sa = np.cos(ang[sel]), np.sin(ang[sel])
    rr = ar + t[None, :]
    peak = sample(maps.rim, ax + rr * ca[:, None], ay + rr * sa[:, None]).max(axis=1)
    p = np.clip(peak, 1e-4, 1.0 - 1e-4)
    w = np.clip((depth[sel] - cfg.lens_inside_mm) / (cfg.lens_full_mm - cfg.lens_inside_mm), 0.0, 1.0)
    logit = np.clip(np.log(p / (1.0 - p)), -cfg.ray_logit_cap, cfg.ray_logit_cap)
    logit = np.where(third[sel], np.maximum(logit, 0.0), logit)
    return float((w * logit).sum()) / cfg.evidence_scale, n


def face_height(maps: FaceMaps, fits: Sequence[DiskFit], i: int, j: int, scale: float, mm: float,
                circles: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> float | None:
    """Mean height (height map, weighted by the face map) of disk i's own face: its inside away from disk j and
    from every other disk (whichever lies above, those parts may not be i's). None when too little is left.
    `circles`: every fit's `_map_circles`, when already made."""
    a = fits[i]
    ax, ay, ar = (a.cx + 0.5) / scale - 0.5, (a.cy + 0.5) / scale - 0.5, a.r_px / scale
    f = np.concatenate([np.full(8, 0.3), np.full(16, 0.55), np.full(24, 0.8)])
    ang = np.concatenate([np.arange(n) * (2 * math.pi / n) for n in (8, 16, 24)])
    px, py = ax + f * ar * np.cos(ang), ay + f * ar * np.sin(ang)
    others = np.arange(len(fits)) != i
    bx, by, br = (c[others] for c in (circles if circles is not None else _map_circles(fits, scale)))
    own = (np.hypot(px[:, None] - bx, py[:, None] - by) > br + 2.0 * mm).all(1)
    if own.sum() < 4:
        return None
    w = sample(maps.face, px[own], py[own])
    if w.sum() < 2.0:
        return None
    return float((w * sample(maps.height, px[own], py[own])).sum() / w.sum())


def separate_touching(fits: Sequence[DiskFit], touching: Sequence[tuple[int, int]], passes: int = 4
                      ) -> list[DiskFit]:
    """Fits of disks read as touching moved apart along the line of their centres until their class circles just
    touch: two disks lying side by side cannot interpenetrate, and the rules read any overlap as a pin. Each disk
    of a pair moves half the depth; a few passes settle chains of disks in contact."""
    if not touching:
        return list(fits)
    x = np.array([f.cx for f in fits], np.float64)
    y = np.array([f.cy for f in fits], np.float64)
    r = np.array([f.r_px for f in fits], np.float64)
    for _ in range(passes):
        for i, j in touching:
            dx, dy = x[j] - x[i], y[j] - y[i]
            d = math.hypot(dx, dy)
            depth = r[i] + r[j] - d
            if depth <= 0 or d < 1e-6:
                continue
            ux, uy = dx / d, dy / d
            x[i] -= ux * depth / 2
            y[i] -= uy * depth / 2
            x[j] += ux * depth / 2
            y[j] += uy * depth / 2
    return [replace(f, cx=float(x[k]), cy=float(y[k])) for k, f in enumerate(fits)]


def _rim_inside(a: DiskFit, b: DiskFit, K: int, margin_px: float) -> float:
    """Share of disk a's rim that lies more than `margin_px` inside disk b."""
    ang = np.arange(K) * (2.0 * math.pi / K)
    d = np.hypot(a.cx + a.r_px * np.cos(ang) - b.cx, a.cy + a.r_px * np.sin(ang) - b.cy)
    return float((d < b.r_px - margin_px).mean())


def _reachable(adj: dict[int, set[int]], s: int, t: int) -> bool:
    seen, stack = {s}, [s]
    while stack:
        u = stack.pop()
        if u == t:
            return True
        for v in adj.get(u, ()):
            if v not in seen:
                seen.add(v)
                stack.append(v)
    return False


def order_stacks(maps: FaceMaps, fits: Sequence[DiskFit], scale: float, px_per_mm_: float = 1.0,
                 config: StackingConfig = DEFAULT_STACKING,
                 uncertain_before: frozenset[frozenset[str]] = frozenset(),
                 unchanged: Sequence[bool] | None = None, image: np.ndarray | None = None) -> StackOrder:
    """z for every fit (0 = on the felt) from the outline evidence of the rim map (`scale`: rectified px per map
    px), the pair judge's reading of the rectified `image` (None: not asked) and the history the fits carry (seed
    ids and z);
    `uncertain_before`: the pairs (of seed ids) the previous scene reported uncertain, whose order it only guessed;
    `unchanged`: the fits carried over from the previous scene with nothing changed around them: a pair of two
    such keeps its previous order (a guess stays a guess) without reading the frame again."""
    n = len(fits)
    if n == 0:
        return StackOrder((), (), (), ())
    K = config.rays
    mm = px_per_mm_ / scale  # map px per mm
    decided: list[PairEvidence] = []
    weak: list[PairEvidence] = []
    touching: list[tuple[int, int]] = []
    pairs = overlapping_pairs(fits)
    if unchanged is not None:
        if len(unchanged) != n:
            raise ValueError("unchanged: one flag per fit")
        for i, j in [p for p in pairs if unchanged[p[0]] and unchanged[p[1]]]:
            a, b = fits[i], fits[j]
            if a.seed_z is None or b.seed_z is None or a.seed_z == b.seed_z:
                continue                                  # read it: nothing to keep
            pairs.remove((i, j))
            up, lo = (i, j) if a.seed_z > b.seed_z else (j, i)
            if frozenset((a.seed_id, b.seed_id)) in uncertain_before:
                weak.append(PairEvidence(up, lo, 0.05, "guess", True))
            else:
                decided.append(PairEvidence(up, lo, 0.9, "history", False))
    judged = np.zeros(len(pairs))
    # the judge learned pairs that lie on one another; two disks in base contact, measured a px or so into each
    # other, are no question for it (their shallow lens is left to the rim, which reads nothing there)
    deep = [k for k, (i, j) in enumerate(pairs) if fits[i].r_px + fits[j].r_px - math.hypot(
        fits[i].cx - fits[j].cx, fits[i].cy - fits[j].cy) >= config.touch_depth_mm * px_per_mm_]
    if image is not None and config.judge_weight > 0 and deep:
        circle = lambda f: Circle(f.cx / px_per_mm_, f.cy / px_per_mm_, f.r_px / px_per_mm_)  # noqa: E731
        judged[deep] = judge_pairs(image, [(circle(fits[pairs[k][0]]), circle(fits[pairs[k][1]])) for k in deep],
                                   px_per_mm_, config.judge_model)
    circles = _map_circles(fits, scale)     # every fit in map px, read by each pair against the others
    for (i, j), logit in zip(pairs, judged):
        a, b = fits[i], fits[j]
        stacked_before = (a.seed_z is not None and b.seed_z is not None and a.seed_z != b.seed_z
                          and frozenset((a.seed_id, b.seed_id)) not in uncertain_before)
        if not stacked_before and config.touch_depth_mm > 0 \
                and a.r_px + b.r_px - math.hypot(a.cx - b.cx, a.cy - b.cy) < config.touch_depth_mm * px_per_mm_:
            # Disks moved into base contact are measured a px or so into each other as often as not, and so
            # shallow a lens has too few rays deep enough to read: what it seems to say is noise. With no stack
            # remembered, they lie side by side (an arrival next to a disk is no evidence of lying on it). Before,
            # a shallow lens that read "clear" made a stack, and most false pins on the tuning seeds were two
            # disks in base contact (pin precision 86.5 -> 90.1 %, recall 74.6 -> 74.1 %).
            touching.append((i, j))
            continue
        ei, _ = lens_evidence(maps, fits, i, j, scale, mm, config, circles)
        ej, _ = lens_evidence(maps, fits, j, i, scale, mm, config, circles)
        frame = None  # +1: i above j
        # the rim map's lens and the judge's look at the lens at full resolution: two readings of one occlusion
        diff = ei - ej + config.judge_weight * float(logit)
        rim_diff = diff  # the outline's reading alone: only it may overrule history (heights are read coarsely)
        if config.height_weight > 0 and a.seed_id is None and b.seed_id is None:
            # Heights are read coarsely: they help a pair seen for the first time, never against what history knows
            hi = face_height(maps, fits, i, j, scale, mm, circles)
            hj = face_height(maps, fits, j, i, scale, mm, circles)
            if hi is not None and hj is not None:
                diff += config.height_weight * (hi - hj)
        nested = False
        if config.nested_fraction > 0:
            # Under the other disk, a disk whose rim lies (nearly) all inside it would show too little rim to be
            # found at all: found, it is the upper one, whatever its rim reads (a small disk centred on a large
            # one reads much like the large disk's own printed ring).
            fi = _rim_inside(a, b, K, config.lens_inside_mm * px_per_mm_)
            fj = _rim_inside(b, a, K, config.lens_inside_mm * px_per_mm_)
            if max(fi, fj) >= config.nested_fraction:
                diff = rim_diff = config.strong_margin if fi > fj else -config.strong_margin
                nested = True
        if abs(diff) >= config.clear_margin:
            frame = 1 if diff > 0 else -1
        hist = None
        hsource = None
        if stacked_before:
            # The previous scene's order of the two, unless that order was itself a guess (reported uncertain
            # then): history must not turn a guess into a certainty.
            if frozenset((a.seed_id, b.seed_id)) not in uncertain_before:
                hist = 1 if a.seed_z > b.seed_z else -1
                hsource = "history"
        elif (a.seed_id is None) != (b.seed_id is None):
            # The new disk arrived onto the resting one: it is above it.
            hist = 1 if a.seed_id is None else -1
            hsource = "arrival"
        if frame is not None and (hist is None or hist == frame):
            up, lo = (i, j) if frame > 0 else (j, i)
            reading = "nested" if nested else "rim"
            src = reading if hist is None else f"{reading}+{hsource}"
            decided.append(PairEvidence(up, lo, min(1.0, abs(diff) + (0.3 if hist else 0.0)), src, False))
        elif frame is not None and abs(rim_diff) >= config.strong_margin:
            up, lo = (i, j) if frame > 0 else (j, i)
            decided.append(PairEvidence(up, lo, abs(diff), "nested" if nested else "rim", False))
        elif frame is not None:
            # A clear reading against history: keep history's order, say it is uncertain.
            up, lo = (i, j) if hist > 0 else (j, i)
            decided.append(PairEvidence(up, lo, 0.2, hsource, True))
        elif hist is not None:
            up, lo = (i, j) if hist > 0 else (j, i)
            decided.append(PairEvidence(up, lo, 0.4, hsource, False))
        else:
            # Nothing clear: the disk with more of its rim visible is more likely on top; say so.
            if abs(diff) > 1e-9:
                up_first = diff > 0
            else:
                up_first = a.rim_fraction >= b.rim_fraction
            up, lo = (i, j) if up_first else (j, i)
            weak.append(PairEvidence(up, lo, 0.05, "guess", True))

    # Break cycles among the decided pairs at their weakest pair.
    adj: dict[int, set[int]] = {}
    kept: list[PairEvidence] = []
    for e in sorted(decided, key=lambda e: -e.strength):
        if _reachable(adj, e.lower, e.upper):
            kept.append(PairEvidence(e.lower, e.upper, 0.0, e.source, True))  # flipped to stay consistent
            adj.setdefault(e.lower, set()).add(e.upper)
            continue
        adj.setdefault(e.upper, set()).add(e.lower)
        kept.append(e)
    for e in weak:
        if _reachable(adj, e.upper, e.lower):
            kept.append(PairEvidence(e.upper, e.lower, 0.3, "implied", False))
            continue
        if _reachable(adj, e.lower, e.upper):
            kept.append(PairEvidence(e.lower, e.upper, 0.3, "implied", False))
            continue
        adj.setdefault(e.upper, set()).add(e.lower)
        kept.append(e)

    # z = length of the longest chain of disks below (memoised DFS on the acyclic graph).
    z = [-1] * n

    def depth(u: int) -> int:
        if z[u] >= 0:
            return z[u]
        z[u] = 0
        best = 0
        for v in adj.get(u, ()):
            best = max(best, depth(v) + 1)
        z[u] = best
        return best

    for u in range(n):
        depth(u)
    uncertain = tuple(sorted((min(e.upper, e.lower), max(e.upper, e.lower)) for e in kept if e.uncertain))
    conf = [f.confidence for f in fits]
    for a, b in uncertain:
        conf[a] *= config.uncertain_confidence_factor
        conf[b] *= config.uncertain_confidence_factor
    return StackOrder(tuple(z), uncertain, tuple(conf), tuple(kept), tuple(touching))
