"""Which measured circles are disks: greedy acceptance with explanation-away, judged by the learned verdict.

Strongest rim first: rim that an accepted disk's outline explains is taken from every other candidate; rays that
fall inside an accepted disk may be hidden under it and do not count against a candidate. A candidate needs a face
all over its inside (`min_face`: a disk's inside is always some disk's top, its own or one lying on it) and at
least `min_rim` of its outline shown before it is judged; the judgement is `vision.verdict`'s learned probability
over everything measured about it (`CircleEvidence`), which must reach `accept_probability`. A circle overlapping
accepted disks is read twice: as lying under them (measured without the rays they explain or cover) and as lying
on them (its outline running over their faces counts); the verdict keeps the likelier reading. Disks of the
previous scene (history) need only `min_rim_history` of their own outline and the open part of it
`open_consistency_history` shown. Passes repeat until nothing more is accepted (a lower disk is judged once the
upper one explains its hidden arc); a circle is judged again only when a disk accepted since lies near enough to
change what it reads. Map px throughout.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from typing import Callable

import numpy as np

from vision.candidates import Candidates, inside_points
from vision.facemap import FaceMaps, sample
from vision.fit import DetectorConfig, RimReading, fit_circles
from vision.verdict import FEATURES, CircleEvidence, load_verdict


@dataclass(frozen=True)
class Accepted:
    """An accepted circle in map px with its measures."""

    index: int            # into the candidates
    u: float
    v: float
    r: float
    r_class: float
    rim_fraction: float
    open_consistency: float
    face: float
    residual: float
    shown: np.ndarray     # (K,) rays that show the outline
    probability: float | None = None  # the verdict's, for a new disk (None: a disk of the previous scene)


def outline_against(u: np.ndarray, v: np.ndarray, r: np.ndarray, offset: np.ndarray, angles: np.ndarray,
                    disks: np.ndarray, explain: float, others: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Circles (u, v, r) with the outline found at `offset` (M, K) on each ray, against disks (their u, v, r first,
    one row each): (explained, covered), (M, K) each. Explained: the outline found on the ray runs along a disk's
    outline; covered: the circle there lies inside a disk (it may be hidden under it). `others`: the disks are the
    circles themselves, each read against the others only."""
    explained, covered = np.zeros(offset.shape, bool), np.zeros(offset.shape, bool)
    # only (circle, disk) pairs near enough to touch its rays (a farther disk can neither explain nor cover any)
    close = np.hypot(disks[:, 0] - u[:, None], disks[:, 1] - v[:, None]) <= disks[:, 2] + r[:, None] + explain + 1
    if others:
        np.fill_diagonal(close, False)
    m, d = np.nonzero(close)
    if not len(m):
        return explained, covered
    um, vm, rm, off = u[m, None], v[m, None], r[m, None], offset[m]
    au, av, ar = disks[d, 0:1], disks[d, 1:2], disks[d, 2:3]
    ca, sa = np.cos(angles), np.sin(angles)
    px, py = um + (rm + off) * ca, vm + (rm + off) * sa          # (pairs, K)
    cx, cy = um + rm * ca, vm + rm * sa
    rows, first = np.unique(m, return_index=True)                # the pairs come sorted by circle
    explained[rows] = np.logical_or.reduceat(np.abs(np.hypot(px - au, py - av) - ar) <= explain, first, axis=0)
    covered[rows] = np.logical_or.reduceat(np.hypot(cx - au, cy - av) < ar - explain, first, axis=0)
    return explained, covered


def _rays(reading: RimReading, disks: np.ndarray, cfg: DetectorConfig, mm: float
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each circle of `reading` against the accepted disks (`disks`: their u, v, r first): (shown, explained,
    covered) per ray, (M, K) each (`outline_against`)."""
    shown = (reading.peak >= cfg.rim_level) & (np.abs(reading.offset) <= cfg.rim_tolerance_mm * mm)
    return (shown, *outline_against(reading.u, reading.v, reading.r, reading.offset, reading.angles, disks,
                                    cfg.explain_mm * mm))


def evidence_matrix(maps: FaceMaps, reading: RimReading, shown: np.ndarray, explained: np.ndarray,
                    covered: np.ndarray, r_class: np.ndarray, mm: float) -> np.ndarray:
    """Everything `vision.verdict` weighs about each circle of `reading` (map px; `mm`: map px per mm), from its
    rays (`_rays`): (M, len(FEATURES)) float64, a `CircleEvidence` per row."""
    u, v, r = reading.u[:, None], reading.v[:, None], reading.r[:, None]
    K = len(reading.angles)
    open_ = ~covered & ~explained
    n_open, n_shown = open_.sum(1), shown.sum(1)
    some = np.maximum(n_shown, 1)
    # the face over its inside, and the height of that face
    fx, fy = inside_points(u, v, np.maximum(r - 2 * mm, 1.0))
    face_pts = sample(maps.face, fx, fy)
    face_in = face_pts.mean(1)
    height_in = (face_pts * sample(maps.height, fx, fy)).sum(1) / np.maximum(face_pts.sum(1), 1e-6)
    ox, oy = u + (r + 3 * mm) * np.cos(reading.angles), v + (r + 3 * mm) * np.sin(reading.angles)
    face_out = sample(maps.face, ox, oy)
    # the height of the face around it, where there is face around (a disk it lies on, or the art it is printed in)
    around = face_out.sum(1)
    step = np.where(around >= 0.1 * K,
                    height_in - (face_out * sample(maps.height, ox, oy)).sum(1) / np.maximum(around, 1e-6), 0.0)
    measures = {
        "rim_own": (shown & ~explained).mean(1),
        "open_consistency": np.where(n_open > 0, (shown & open_).sum(1) / np.maximum(n_open, 1), 1.0),
        "rim_all": shown.mean(1),
        "open_share": n_open / K,
        "peak_shown": np.where(n_shown > 0, (reading.peak * shown).sum(1) / some, 0.0),
        "residual_mm": np.sqrt((reading.offset ** 2 * shown).sum(1) / some) / mm,
        "face_inside": face_in,
        "face_outside": face_out.mean(1),
        "height_step": step,
        "radius_mm": np.asarray(r_class) / mm}
    out = np.empty((len(reading.u), len(FEATURES)))
    for c, name in enumerate(FEATURES):
        out[:, c] = measures[name]
    return out


@dataclass(frozen=True, eq=False)
class _Judged:
    """One candidate judged against the accepted disks (`_judge`): an accepted disk again (`copy`), too little of
    its own outline to be judged (`features` None), or its likelier reading and the verdict's probability."""

    copy: bool = False
    features: np.ndarray | None = None   # the likelier reading's `evidence_matrix` row
    probability: float = 0.0
    u: float = 0.0
    v: float = 0.0
    r: float = 0.0
    shown: np.ndarray | None = None
    offset: np.ndarray | None = None

    @property
    def evidence(self) -> CircleEvidence | None:
        # made only for the judgements the walk uses (most are judged ahead and never read)
        return None if self.features is None else CircleEvidence(*self.features.tolist())


def _copies(disks: np.ndarray, u: np.ndarray, v: np.ndarray, r_class: np.ndarray, cfg: DetectorConfig
            ) -> np.ndarray:
    """Circles an accepted disk of their size (`disks`: u, v, r, r_class rows) lies this near: that disk again
    (one of another size is a stack)."""
    if not len(disks):
        return np.zeros(len(u), bool)
    return ((disks[:, 3] == r_class[:, None]) & (np.hypot(disks[:, 0] - u[:, None], disks[:, 1] - v[:, None])
                                                 < cfg.copy_distance * disks[:, 2])).any(1)


def _judge(maps: FaceMaps, cand: Candidates, reading: RimReading, idx: np.ndarray, r_class: np.ndarray,
           need_rim: np.ndarray, disks: np.ndarray, cfg: DetectorConfig, mm: float,
           verdict: Callable[[np.ndarray], np.ndarray], first: RimReading | None) -> list[_Judged]:
    """Candidates `idx` judged against the accepted disks (`disks`: u, v, r, r_class rows), all at once; `verdict`
    gives the probability of each row of an `evidence_matrix`."""
    one = reading.take(idx)
    rc = r_class[idx]
    copy = _copies(disks, one.u, one.v, rc, cfg)
    rays = _rays(one, disks, cfg, mm)
    shown, explained, covered = rays
    # not even half the outline it needs: not worth measuring again
    judge = ~copy & ((shown & ~explained).mean(1) >= 0.5 * need_rim[idx])
    # A circle overlapping accepted disks is read twice: without the rays they explain or cover (it lies under them
    # there), and without the explained ones only (it lies on them: its outline runs over their faces); the verdict
    # keeps the likelier. Their outline found on those rays would pull it, so it is fitted again without them.
    over = judge & (explained | covered).any(1)
    owner, excl = [], []
    for k in np.nonzero(over)[0]:
        owner += [k, k] if covered[k].any() else [k]
        excl += [explained[k] | covered[k], explained[k]] if covered[k].any() else [explained[k] | covered[k]]
    plain = np.nonzero(judge & ~over)[0]
    weighed, w_rays, whose = one.take(plain), tuple(x[plain] for x in rays), plain
    if owner:
        at = idx[owner]
        alts = fit_circles(maps.rim, cand.u[at], cand.v[at], r_class[at], cfg, mm, exclude=np.stack(excl),
                           first=None if first is None else first.take(at))
        weighed = RimReading.joined(weighed, alts)
        w_rays = tuple(np.concatenate([a, b]) for a, b in zip(w_rays, _rays(alts, disks, cfg, mm)))
        whose = np.concatenate([plain, owner])
    evidence = evidence_matrix(maps, weighed, *w_rays, rc[whose], mm)
    bad = ~np.isfinite(evidence).all(1)
    if bad.any():
        CircleEvidence(*evidence[np.argmax(bad)].tolist())    # raises, naming the measure
    prob = [float(p) for p in verdict(evidence)] if len(evidence) else []
    best: dict[int, int] = {}
    for row, k in enumerate(whose):           # the first likeliest reading of each circle
        if k not in best or prob[row] > prob[best[k]]:
            best[k] = row
    rows = np.array([best.get(k, -1) for k in range(len(idx))])
    again = _copies(disks, weighed.u[rows], weighed.v[rows], rc, cfg) if len(weighed.u) else np.zeros(len(idx), bool)
    out = []
    for k in range(len(idx)):
        if copy[k] or (judge[k] and again[k]):
            out.append(_Judged(copy=True))
        elif not judge[k]:
            out.append(_Judged())
        else:
            row = rows[k]
            out.append(_Judged(features=evidence[row], probability=prob[row], u=float(weighed.u[row]),
                               v=float(weighed.v[row]), r=float(weighed.r[row]), shown=w_rays[0][row],
                               offset=weighed.offset[row]))
    return out


#: The verdict's view of one judged circle, for whoever learns from it or reports on it: (evidence, u, v, r_class,
#: accepted, probability).
JudgementLog = Callable[[CircleEvidence, float, float, float, bool, float], None]


def accept(maps: FaceMaps, cand: Candidates, reading: RimReading, r_class: np.ndarray, cfg: DetectorConfig,
           mm: float, allowed: np.ndarray, verdict: Callable[[CircleEvidence], float] | None = None,
           log: JudgementLog | None = None, batch: int = 32, first: RimReading | None = None) -> list[Accepted]:
    """Greedy acceptance with explanation-away (module docstring); `allowed`: candidates that may be accepted.
    A candidate overlapping accepted disks is measured again without the rays their outlines explain or cover:
    there the outline found is theirs, and it pulls the circle. `verdict`: the probability that a new circle is a
    disk (default: the shipped `vision.verdict` model); `log` sees every new circle judged. `first`: the
    candidates' `vision.fit.first_reading`, where such a refit starts (read again when not given).

    Candidates are judged `batch` at a time, ahead of the walk (numpy's cost is per call, not per circle); a
    judgement is used only if no disk accepted since lies near enough to change it, so the walk decides exactly as
    one judging each candidate in turn would."""
    if batch < 1:
        raise ValueError(f"accept: batch must be >= 1, got {batch}")
    if verdict is None:
        model = load_verdict(cfg.verdict_path)
        verdicts = model.probabilities
    else:
        verdicts = lambda x: [verdict(CircleEvidence(*row)) for row in x.tolist()]  # noqa: E731
    tol = cfg.rim_tolerance_mm * mm
    shown_all = (reading.peak >= cfg.rim_level) & (np.abs(reading.offset) <= tol)
    base = shown_all.mean(1)
    is_seed = np.array([s is not None for s in cand.seed])
    need_rim = np.where(is_seed, cfg.min_rim_history, cfg.min_rim)
    fx, fy = inside_points(reading.u[:, None], reading.v[:, None], reading.r[:, None] - 2 * mm)
    face = sample(maps.face, fx, fy).mean(1)
    # what can never pass: too little outline even before explanation, or no face inside
    eligible = allowed & (face >= cfg.min_face) & (base >= need_rim)
    order = [int(i) for i in np.argsort(-base) if eligible[i]]
    done: list[Accepted] = []
    disks = np.zeros((len(cand), 4))      # the accepted disks' u, v, r, r_class, in acceptance order
    taken = np.zeros(len(cand), bool)
    # A circle's judgement reads nothing farther than its fits may move (`fit_passes` reaches) plus both radii:
    # it stands, and a circle judged and left is not judged again, until an accepted disk comes that near.
    within = (cfg.fit_passes * cfg.profile_reach_mm + cfg.radius_freedom_mm + cfg.explain_mm) * mm + 2.0
    near = np.zeros(len(cand), int)       # accepted disks that near each candidate
    left: dict[int, tuple[int, tuple | None]] = {}   # candidate -> (near then, what was logged)
    known: dict[int, tuple[int, _Judged]] = {}       # judged ahead: candidate -> (near then, its judgement)
    for _ in range(4):
        added = False
        walk = [i for i in order if not taken[i]]
        for pos, i in enumerate(walk):
            if i in left and left[i][0] == near[i]:
                if log is not None and left[i][1] is not None:
                    log(*left[i][1])
                continue
            left[i] = (int(near[i]), None)
            if i not in known or known[i][0] != near[i]:
                # the next `batch` still to judge (the walk is read only as far as they reach)
                ahead = list(islice((j for j in islice(walk, pos, None) if not taken[j]
                                     and (j == i or j not in left or left[j][0] != near[j])
                                     and (j not in known or known[j][0] != near[j])), batch))
                for j, judged in zip(ahead, _judge(maps, cand, reading, np.array(ahead), r_class, need_rim,
                                                   disks[:len(done)], cfg, mm, verdicts, first)):
                    known[j] = (int(near[j]), judged)
            j = known.pop(i)[1]
            if j.copy:
                taken[i] = True
                continue
            ev, prob = j.evidence, j.probability
            if ev is None:
                continue
            if is_seed[i]:
                prob = None         # a disk of the previous scene keeps its own rule (module docstring)
                ok = ev.rim_own >= need_rim[i] and ev.open_consistency >= cfg.open_consistency_history
            else:
                ok = ev.rim_own >= need_rim[i] and prob >= cfg.accept_probability
                if log is not None:
                    log(ev, j.u, j.v, float(r_class[i]), ok, prob)
                    left[i] = (int(near[i]), (ev, j.u, j.v, float(r_class[i]), ok, prob))
            if ok:
                disks[len(done)] = (j.u, j.v, j.r, r_class[i])
                near += np.hypot(cand.u - j.u, cand.v - j.v) <= j.r + r_class + within
                done.append(Accepted(index=i, u=j.u, v=j.v, r=j.r, r_class=float(r_class[i]),
                                     rim_fraction=ev.rim_all, open_consistency=ev.open_consistency,
                                     face=float(face[i]), shown=j.shown, probability=prob,
                                     residual=float(np.sqrt(np.mean(j.offset[j.shown] ** 2)))
                                     if j.shown.any() else 0.0))
                taken[i] = True
                added = True
        if not added:
            break
    return done
