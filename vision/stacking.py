"""Which disk lies on which: rim continuity in the overlap lens, history, and one consistent `z` per pile.

For two overlapping disks A and B, look at A's rim where it runs inside B (the lens), away from any third disk:
if A is on top, its rim is an unbroken edge there with A's border ring just inside it; if A is under B, that arc
is hidden and the pixels there are B's art. The same for B's rim inside A. The rim verifier's ray network reads
each lens ray; the evidence is summed over the rays (a small disk lying on a large one has many lens rays, the
large one's rim only a few, barely covered), and the difference of the two sums orders the pair. A disk whose rim
lies nearly all inside the other is the upper one: under it, it could not have been found. Pairs are judged with
the size classes' radii, as the rules judge overlaps; the rim is read on each disk's measured silhouette.
History (the previous scene's order of the same two disks; a disk that arrives onto a resting disk is above it)
settles pairs whose lens says little, and a pair where a clear frame reading and history disagree, or where
neither says anything, is reported as uncertain with lowered confidences, never silently. Pairwise orders become
`z` by a topological order (longest chain from the bottom); a cycle is broken at its weakest pair, which is then
reported as uncertain.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from tablesight.scene import SIZE_CLASSES
from vision.detect import DEFAULT_CONFIG, DetectorConfig, DiskFit, _rim_points, _sample


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

    min_samples: int = 4          # lens rays needed for a rim reading (edge reading; the verifier weighs each ray)
    clear_margin: float = 0.25    # score difference that orders a pair from the frame alone
    strong_margin: float = 0.5    # a frame reading this clear overrides history
    ring_match: float = 38.0      # colour distance (0-255 BGR) for "this is my border ring"
    lens_inside_px: float = 1.0   # a lens ray's rim point lies at least this far inside the other disk
    lens_full_px: float = 2.0     # ... and counts fully from this depth (shallower: the other disk's rim blurs in)
    ray_logit_cap: float = 1.5    # one lens ray's evidence (logit of its rim score) is capped at this
    evidence_scale: float = 20.0  # summed ray evidence (logits) per unit of the margins below
    nested_fraction: float = 0.85  # a disk with this much of its rim inside the other lies on it (0: not used)
    touch_depth_mm: float = 1.5   # a pair overlapping less than this whose lens reads nothing clear is in contact
    uncertain_confidence_factor: float = 0.7

    def __post_init__(self) -> None:
        if self.min_samples < 1:
            raise ValueError("min_samples must be >= 1")
        if not 0.0 <= self.lens_inside_px < self.lens_full_px:
            raise ValueError("need 0 <= lens_inside_px < lens_full_px")
        if not 0.0 <= self.nested_fraction <= 1.0:
            raise ValueError("nested_fraction must be within 0..1 (0: not used)")
        if not 0.0 <= self.touch_depth_mm <= 5.0:
            raise ValueError("touch_depth_mm must be within 0..5 (0: every overlap is a stack)")
        if not (self.ray_logit_cap > 0 and self.evidence_scale > 0):
            raise ValueError("ray_logit_cap and evidence_scale must be > 0")
        if not 0 < self.clear_margin <= self.strong_margin <= 1:
            raise ValueError("need 0 < clear_margin <= strong_margin <= 1")


DEFAULT_STACKING = StackingConfig()


def overlapping(a: DiskFit, b: DiskFit, margin_px: float = 0.5) -> bool:
    return math.hypot(a.cx - b.cx, a.cy - b.cy) < a.r_px + b.r_px - margin_px


def _lens_evidence(img: np.ndarray, fits: Sequence[DiskFit], i: int, j: int, K: int,
                   cfg: DetectorConfig, scfg: StackingConfig, ppm: float, rim_p: np.ndarray | None = None
                   ) -> tuple[float, int]:
    """How much disk i's rim shows where it runs inside disk j, as evidence that i lies above j: > 0 for above,
    < 0 for under, 0 with no lens rays; and the number of lens rays.

    With `rim_p` (n, K), every fit's rim verifier ray scores, the evidence is the sum over the lens rays of the
    score's logit, each capped (neighbouring rays share pixels) and weighted by how deep inside j the ray's rim
    point lies (near the crossing points j's own rim blurs into the ray). Summing, not averaging, lets the many
    rays of a small disk lying on a large one outweigh the few rays of the large disk's rim that the small one
    barely covers. Without it: the share of rays with a rim edge and the disk's border ring just inside it,
    minus one half."""
    a, b = fits[i], fits[j]
    ang = np.arange(K) * (2.0 * math.pi / K)
    px = a.cx + a.r_px * np.cos(ang)
    py = a.cy + a.r_px * np.sin(ang)
    depth = b.r_px - np.hypot(px - b.cx, py - b.cy)
    # The ray network reads a rim hidden from 1 px under the other disk (as it was taught); edges need 2 px.
    sel = depth > (scfg.lens_inside_px if rim_p is not None else 2.0)
    third = np.zeros(K, bool)
    for k, f in enumerate(fits):
        if k not in (i, j):
            third |= np.hypot(px - f.cx, py - f.cy) <= f.r_px + 2.0
    if rim_p is not None:
        # The rim verifier's ray network was taught exactly this: does the disk's rim show on this ray, or does
        # something lying on it hide it? Where a third disk lies too, a rim that shows is above both, but a hidden
        # one may be under either: such rays count only for.
        n = int(sel.sum())
        if n == 0:
            return 0.0, 0
        p = np.clip(rim_p[i][sel], 1e-4, 1.0 - 1e-4)
        w = np.clip((depth[sel] - scfg.lens_inside_px) / (scfg.lens_full_px - scfg.lens_inside_px), 0.0, 1.0)
        logit = np.clip(np.log(p / (1.0 - p)), -scfg.ray_logit_cap, scfg.ray_logit_cap)
        logit = np.where(third[sel], np.maximum(logit, 0.0), logit)
        return float((w * logit).sum()) / scfg.evidence_scale, n
    sel &= ~third
    n = int(sel.sum())
    if n == 0:
        return 0.0, 0
    angles = ang[sel]
    off, _, _ = _rim_points(img, np.array([a.cx]), np.array([a.cy]), np.array([a.r_px]), angles, 2.0, cfg)
    edge = np.isfinite(off[0]) & (np.abs(np.nan_to_num(off[0], nan=9.0)) <= cfg.rim_tolerance_px + 0.3)
    ring_depth = cfg.ring_depth_mm * ppm
    ring = _sample(img, (a.cx + (a.r_px - ring_depth) * np.cos(angles))[None, :],
                   (a.cy + (a.r_px - ring_depth) * np.sin(angles))[None, :])[0]
    ring_ok = np.linalg.norm(ring - np.array(a.ring_bgr, np.float32)[None, :], axis=1) <= scfg.ring_match
    return float((0.5 * edge + 0.5 * ring_ok).mean()) - 0.5, n


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


def order_stacks(rect: np.ndarray, fits: Sequence[DiskFit], px_per_mm_: float = 1.0,
                 config: StackingConfig = DEFAULT_STACKING,
                 detector: DetectorConfig = DEFAULT_CONFIG,
                 uncertain_before: frozenset[frozenset[str]] = frozenset(),
                 unchanged: Sequence[bool] | None = None) -> StackOrder:
    """z for every fit (0 = on the felt) from rim evidence and the history the fits carry (seed ids and z);
    `uncertain_before`: the pairs (of seed ids) the previous scene reported uncertain, whose order it only guessed;
    `unchanged`: the fits carried over from the previous scene with nothing changed around them: a pair of two
    such keeps its previous order (a guess stays a guess) without reading the frame again."""
    n = len(fits)
    if n == 0:
        return StackOrder((), (), (), ())
    img = rect.astype(np.float32) if rect.dtype != np.float32 else rect
    K = detector.rays
    decided: list[PairEvidence] = []
    weak: list[PairEvidence] = []
    touching: list[tuple[int, int]] = []
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if overlapping(fits[i], fits[j])]
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
    rim_p = None
    if pairs and detector.use_verifier:
        from vision.verifier import load_verifier

        ang = np.arange(K) * (2.0 * math.pi / K)
        used = sorted({k for pair in pairs for k in pair})     # only disks that overlap another need reading
        sub = [fits[k] for k in used]
        rim_p = np.zeros((n, K))
        rim_p[used] = load_verifier(detector.verifier_path).ray_scores(
            img, np.array([f.cx for f in sub]), np.array([f.cy for f in sub]), np.array([f.rim_r for f in sub]),
            np.array([SIZE_CLASSES.index(f.size) for f in sub]), ang, px_per_mm_)
    for i, j in pairs:
        a, b = fits[i], fits[j]
        ei, ni = _lens_evidence(img, fits, i, j, K, detector, config, px_per_mm_, rim_p)
        ej, nj = _lens_evidence(img, fits, j, i, K, detector, config, px_per_mm_, rim_p)
        frame = None  # +1: i above j
        # An arc with too few rays says nothing (the verifier's evidence is weighted ray by ray instead).
        need = 1 if rim_p is not None else config.min_samples
        diff = (ei if ni >= need else 0.0) - (ej if nj >= need else 0.0)
        nested = False
        if config.nested_fraction > 0:
            # Under the other disk, a disk whose rim lies (nearly) all inside it would show too little rim to be
            # found at all: found, it is the upper one, whatever its rim reads (a small disk centred on a large
            # one reads much like the large disk's own printed ring).
            fi = _rim_inside(a, b, K, config.lens_inside_px)
            fj = _rim_inside(b, a, K, config.lens_inside_px)
            if max(fi, fj) >= config.nested_fraction:
                diff = config.strong_margin if fi > fj else -config.strong_margin
                nested = True
        if abs(diff) >= config.clear_margin:
            frame = 1 if diff > 0 else -1
        hist = None
        hsource = None
        stacked_before = (a.seed_z is not None and b.seed_z is not None and a.seed_z != b.seed_z
                          and frozenset((a.seed_id, b.seed_id)) not in uncertain_before)
        if frame is None and not stacked_before and config.touch_depth_mm > 0 \
                and a.r_px + b.r_px - math.hypot(a.cx - b.cx, a.cy - b.cy) < config.touch_depth_mm * px_per_mm_:
            # Disks moved into base contact are measured a px or so into each other as often as not, and so
            # shallow a lens has too few rays deep enough to read. With nothing clear in the frame and no stack
            # remembered, they lie side by side (an arrival next to a disk is no evidence of lying on it).
            touching.append((i, j))
            continue
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
        elif frame is not None and abs(diff) >= config.strong_margin:
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
