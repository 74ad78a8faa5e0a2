"""Disks from the face and rim maps: sub-pixel circles of the calibrated radii, accepted by what they explain.

1. Each candidate (`vision.candidates`) is measured on `rays` rays: along each ray the rim map's profile across
   the circle is read, its peak (parabolic, sub-pixel) is where the outline runs on that ray. The centre is refitted
   by least squares with the radius fixed to the size class (a disk seen mostly whole may differ from its class
   radius by `radius_freedom_mm`, the print's cut), rays far off dropped, a few passes.
2. Greedy acceptance with explanation-away, strongest rim first: rim that an accepted disk's outline explains is
   taken from every other candidate; rays that fall inside an accepted disk may be hidden under it and do not
   count against a candidate. A candidate needs a face all over its inside (`min_face`: a disk's inside is always
   some disk's top, its own or one lying on it) and at least `min_rim` of its outline shown before it is judged;
   the judgement is `vision.verdict`'s learned probability over everything measured about it (`CircleEvidence`),
   which must reach `accept_probability`. A circle overlapping accepted disks is read twice: as lying under them
   (measured without the rays they explain or cover) and as lying on them (its outline running over their faces
   counts); the verdict keeps the likelier reading. Disks of the previous scene (history) need only
   `min_rim_history` of their own outline and the open part of it `open_consistency_history` shown. Passes repeat until nothing more
   is accepted (a lower disk is judged once the upper one explains its hidden arc); a circle is judged again only
   when a disk accepted since lies near enough to change what it reads.
3. The accepted centres are refined on the full-resolution image (`vision.refine`), from the rays that show each
   disk's own outline with no other disk along or over it.

Everything is read from the maps of `vision.facemap`, so no threshold here is about colours or art. Coordinates:
rectified px outside this module, map px inside (`scale` rectified px per map px).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import cv2
import numpy as np

from tablesight.scene import SIZE_CLASSES
from vision.candidates import Candidates, Seed, find_candidates, inside_points
from vision.facemap import FaceMaps, sample
from vision.refine import align_centres, masked_median
from vision.verdict import FEATURES, CircleEvidence, load_verdict


@dataclass(frozen=True)
class DetectorConfig:
    """Settings of the eye; the defaults are chosen on the training families' tuning seeds only."""

    model_path: str | None = None        # a face/rim network of one's own (None: the shipped one)
    rays: int = 96                       # rim rays per disk
    vote_min: float = 0.12               # candidate: this share of a circle's outline in the rim map
    max_candidates_per_size: int = 160
    profile_reach_mm: float = 5.0        # each ray's rim profile is read this far either side of the circle
    rim_level: float = 0.3               # rim probability at which a ray shows the outline (tuning seeds, by pin
                                         # F1: 0.4 -> 81.8, 0.35 -> 82.1, 0.3 -> 82.5 %)
    rim_tolerance_mm: float = 2.0        # a shown outline supports the circle within this distance
    explain_mm: float = 2.0              # outline this close to an accepted disk's outline is explained by it
    min_rim: float = 0.2                 # share of its outline a new circle shows (its own) to be judged at all
    accept_probability: float = 0.5      # the verdict's probability a new circle needs (vision.verdict)
    verdict_path: str | None = None      # a verdict model of one's own (None: the shipped one)
    min_rim_history: float = 0.1         # share of its own outline a disk the previous scene had there shows
    open_consistency_history: float = 0.3  # ... and of its outline in the open (under no accepted disk)
    min_face: float = 0.6                # mean face probability over the disk's inside
    radius_freedom_mm: float = 1.5       # a disk seen >= 85 % may differ this much from its class radius
    fit_passes: int = 3
    copy_distance: float = 0.3           # a circle of an accepted disk's size this close (share of its radius) is
                                         # a copy of it
    ring_depth_mm: float = 2.5           # where the border colour is sampled, inside the outline (tracking)
    disk_thickness_mm: float = 2.0       # a disk's top lies this much above what it rests on (parallax; 0: none)
    min_confidence: float = 0.3          # disks below this confidence after stacking are dropped (not history)
    keep_rim_fraction: float = 0.78      # ... unless this much of their outline is seen
    align: bool = True                   # centres refined on the image's rim profile (vision.refine)

    def __post_init__(self) -> None:
        if not 24 <= self.rays <= 720:
            raise ValueError("rays must be within 24..720")
        for name in ("vote_min", "rim_level", "min_rim", "min_rim_history", "accept_probability",
                     "open_consistency_history", "min_face", "copy_distance"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be within 0..1, got {v!r}")
        for name in ("profile_reach_mm", "rim_tolerance_mm", "explain_mm", "ring_depth_mm"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0")
        if not 0 <= self.radius_freedom_mm <= 10:
            raise ValueError("radius_freedom_mm must be within 0..10")
        if not 1 <= self.fit_passes <= 10:
            raise ValueError("fit_passes must be within 1..10")
        if not 0 <= self.disk_thickness_mm <= 20:
            raise ValueError("disk_thickness_mm must be within 0..20")
        for name in ("model_path", "verdict_path"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a file path (str) or None")


DEFAULT_CONFIG = DetectorConfig()


@dataclass(frozen=True)
class DiskFit:
    """One accepted disk in rectified pixels (the eye's own result, before table mm and ids)."""

    cx: float
    cy: float
    r_px: float              # the size class's radius: the rules judge overlaps by it, so stacking does too
    size: str
    rim_fraction: float      # share of the outline shown (rays with the outline on the fitted circle)
    open_consistency: float  # share of the outline in the open that is shown (1.0 when none is open)
    residual_px: float
    ring_bgr: tuple[float, float, float]
    confidence: float
    seed_id: str | None = None   # the previous scene's disk this one continues, when seeded by history
    seed_z: int | None = None
    rim_r_px: float | None = None  # the measured outline's radius (None: r_px)

    @property
    def rim_r(self) -> float:
        return self.r_px if self.rim_r_px is None else self.rim_r_px


# ---------------------------------------------------------------------------------------------------------------
# Measuring circles on the rim map


@dataclass(frozen=True, eq=False)
class RimReading:
    """Per circle and ray: the outline's radial offset from the circle (map px) and the rim map's peak there."""

    u: np.ndarray
    v: np.ndarray
    r: np.ndarray
    offset: np.ndarray   # (M, K)
    peak: np.ndarray     # (M, K)
    angles: np.ndarray   # (K,)

    def take(self, idx: np.ndarray) -> "RimReading":
        """The circles `idx` alone."""
        return RimReading(u=self.u[idx], v=self.v[idx], r=self.r[idx], offset=self.offset[idx], peak=self.peak[idx],
                          angles=self.angles)

    @staticmethod
    def joined(a: "RimReading", b: "RimReading") -> "RimReading":
        """The circles of `a`, then those of `b` (read on the same rays)."""
        return RimReading(u=np.concatenate([a.u, b.u]), v=np.concatenate([a.v, b.v]), r=np.concatenate([a.r, b.r]),
                          offset=np.concatenate([a.offset, b.offset]), peak=np.concatenate([a.peak, b.peak]),
                          angles=a.angles)


def read_rims(rim: np.ndarray, u: np.ndarray, v: np.ndarray, r: np.ndarray, angles: np.ndarray, reach: float,
              step: float = 0.5) -> RimReading:
    """Each ray's rim profile across the circle (+-reach map px): the sub-pixel offset of its peak, and its height."""
    t = np.arange(-reach, reach + 1e-9, step)
    T = len(t)
    ca, sa = np.cos(angles), np.sin(angles)
    # profiles laid out sample-major, (T, M, K), in the sampler's float32: the sample points are the circle's
    # points plus each sample's step along the ray (fast to broadcast)
    x, y = np.empty((2, T, len(u), len(angles)), np.float32)
    np.add((u[:, None] + r[:, None] * ca)[None], t[:, None, None] * ca, out=x, casting="unsafe")
    np.add((v[:, None] + r[:, None] * sa)[None], t[:, None, None] * sa, out=y, casting="unsafe")
    prof = sample(rim, x, y).reshape(T, -1)
    best = prof.max(0)
    k = np.argmax(prof == best, axis=0)    # the first highest sample, as argmax picks it (faster across rows)
    kk = np.minimum(np.maximum(k, 1), T - 2)
    flat, n = prof.reshape(-1), prof.shape[1]
    at = kk * n + np.arange(n)
    p0, p1, p2 = flat[at - n], flat[at], flat[at + n]
    den = p0 - 2 * p1 + p2
    curved = den < -1e-6
    frac = np.where(curved, 0.5 * (p0 - p2) / np.where(curved, den, -1.0), 0.0)
    shape = (len(u), len(angles))
    offset = (t[kk] + np.clip(frac, -0.5, 0.5) * step).reshape(shape)
    return RimReading(u=u, v=v, r=r, offset=offset, peak=best.reshape(shape), angles=angles)


def fit_circles(rim: np.ndarray, u: np.ndarray, v: np.ndarray, r_class: np.ndarray, cfg: DetectorConfig,
                mm: float, exclude: np.ndarray | None = None) -> RimReading:
    """Centres (and, for disks seen nearly whole, radii) fitted to the rim map's outline, ray by ray.

    `mm`: map px per mm. `exclude` (M, K): rays not to fit on (another disk's outline runs there)."""
    K = cfg.rays
    angles = np.arange(K) * (2.0 * math.pi / K)
    ca, sa = np.cos(angles), np.sin(angles)
    basis = np.stack([ca * ca, ca * sa, sa * sa, ca, sa, np.ones(K)], axis=1)    # (K, 6)
    u, v, r = u.astype(np.float64).copy(), v.astype(np.float64).copy(), r_class.astype(np.float64).copy()
    reach = cfg.profile_reach_mm * mm
    tol = cfg.rim_tolerance_mm * mm
    freedom = cfg.radius_freedom_mm * mm
    reading = read_rims(rim, u, v, r, angles, reach)
    for p in range(cfg.fit_passes):
        # the first pass takes every shown outline within reach, later ones only those near the circle
        lim = reach if p == 0 else max(tol, reach * 0.5 ** p)
        w = ((reading.peak >= cfg.rim_level) & (np.abs(reading.offset) <= lim)).astype(np.float64)
        if exclude is not None:
            w[exclude] = 0.0
        w *= reading.peak
        # offset_k ~ dx cos + dy sin (+ dr): weighted least squares per circle, its sums as two matrix products
        n = (w > 0).sum(1)
        a11, a12, a22, a13, a23, a33 = (w @ basis).T
        b1, b2, b3 = ((w * reading.offset) @ basis[:, 3:]).T
        free = n / K >= 0.85
        # batched normal equations; the radius row is pinned (zero shift) for disks not seen nearly whole
        A = np.zeros((len(u), 3, 3))
        A[:, 0, 0], A[:, 0, 1], A[:, 1, 1] = a11, a12, a22
        A[:, 1, 0] = a12
        A[:, 0, 2] = A[:, 2, 0] = np.where(free, a13, 0.0)
        A[:, 1, 2] = A[:, 2, 1] = np.where(free, a23, 0.0)
        A[:, 2, 2] = np.where(free, a33, 1.0)
        bvec = np.stack([b1, b2, np.where(free, b3, 0.0)], axis=1)
        enough = (n >= 5) & (np.abs(np.linalg.det(A)) > 1e-9)
        sol = np.zeros((len(u), 3))
        if enough.any():
            sol[enough] = np.linalg.solve(A[enough], bvec[enough][..., None])[..., 0]
        dx, dy, dr = sol[:, 0], sol[:, 1], sol[:, 2]
        step = np.hypot(dx, dy)
        big = step > reach
        dx[big] *= reach / step[big]
        dy[big] *= reach / step[big]
        u += dx
        v += dy
        r = r_class + np.clip(r + dr - r_class, -freedom, freedom)
        reading = read_rims(rim, u, v, r, angles, reach)
    return reading


# ---------------------------------------------------------------------------------------------------------------
# Acceptance


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


def _against(u: np.ndarray, v: np.ndarray, r: np.ndarray, offset: np.ndarray, angles: np.ndarray,
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
    covered) per ray, (M, K) each (`_against`)."""
    shown = (reading.peak >= cfg.rim_level) & (np.abs(reading.offset) <= cfg.rim_tolerance_mm * mm)
    return (shown, *_against(reading.u, reading.v, reading.r, reading.offset, reading.angles, disks,
                             cfg.explain_mm * mm))
    u, v, r, off = reading.u[m, None], reading.v[m, None], reading.r[m, None], reading.offset[m]
    au, av, ar = disks[d, 0:1], disks[d, 1:2], disks[d, 2:3]
    ca, sa = np.cos(reading.angles), np.sin(reading.angles)
    px, py = u + (r + off) * ca, v + (r + off) * sa          # (pairs, K)
    cx, cy = u + r * ca, v + r * sa
    rows, first = np.unique(m, return_index=True)            # the pairs come sorted by circle
    explained[rows] = np.logical_or.reduceat(np.abs(np.hypot(px - au, py - av) - ar) <= explain, first, axis=0)
    covered[rows] = np.logical_or.reduceat(np.hypot(cx - au, cy - av) < ar - explain, first, axis=0)
    return shown, explained, covered


def circle_evidence(maps: FaceMaps, reading: RimReading, shown: np.ndarray, explained: np.ndarray,
                    covered: np.ndarray, r_class: np.ndarray, mm: float) -> list[CircleEvidence]:
    """Everything `vision.verdict` weighs about each circle of `reading` (map px; `mm`: map px per mm), from its
    rays (`_rays`)."""
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
    columns = [np.broadcast_to(np.asarray(measures[name], np.float64), (len(reading.u),)).tolist()
               for name in FEATURES]
    return [CircleEvidence(*row) for row in zip(*columns)]


@dataclass(frozen=True, eq=False)
class _Judged:
    """One candidate judged against the accepted disks (`_judge`): an accepted disk again (`copy`), too little of
    its own outline to be judged (`evidence` None), or its likelier reading and the verdict's probability."""

    copy: bool = False
    evidence: CircleEvidence | None = None
    probability: float = 0.0
    u: float = 0.0
    v: float = 0.0
    r: float = 0.0
    shown: np.ndarray | None = None
    offset: np.ndarray | None = None


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
           verdict: Callable[[list[CircleEvidence]], np.ndarray]) -> list[_Judged]:
    """Candidates `idx` judged against the accepted disks (`disks`: u, v, r, r_class rows), all at once."""
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
        alts = fit_circles(maps.rim, cand.u[at], cand.v[at], r_class[at], cfg, mm, exclude=np.stack(excl))
        weighed = RimReading.joined(weighed, alts)
        w_rays = tuple(np.concatenate([a, b]) for a, b in zip(w_rays, _rays(alts, disks, cfg, mm)))
        whose = np.concatenate([plain, owner])
    evidence = circle_evidence(maps, weighed, *w_rays, rc[whose], mm)
    prob = [float(p) for p in verdict(evidence)] if evidence else []
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
            out.append(_Judged(evidence=evidence[row], probability=prob[row], u=float(weighed.u[row]),
                               v=float(weighed.v[row]), r=float(weighed.r[row]), shown=w_rays[0][row],
                               offset=weighed.offset[row]))
    return out


#: The verdict's view of one judged circle, for whoever learns from it: (evidence, u, v, r_class, accepted).
JudgementLog = Callable[[CircleEvidence, float, float, float, bool], None]


def accept(maps: FaceMaps, cand: Candidates, reading: RimReading, r_class: np.ndarray, cfg: DetectorConfig,
           mm: float, allowed: np.ndarray, verdict: Callable[[CircleEvidence], float] | None = None,
           log: JudgementLog | None = None, batch: int = 32) -> list[Accepted]:
    """Greedy acceptance with explanation-away (module docstring); `allowed`: candidates that may be accepted.
    A candidate overlapping accepted disks is measured again without the rays their outlines explain or cover:
    there the outline found is theirs, and it pulls the circle. `verdict`: the probability that a new circle is a
    disk (default: the shipped `vision.verdict` model); `log` sees every new circle judged.

    Candidates are judged `batch` at a time, ahead of the walk (numpy's cost is per call, not per circle); a
    judgement is used only if no disk accepted since lies near enough to change it, so the walk decides exactly as
    one judging each candidate in turn would."""
    if verdict is None:
        model = load_verdict(cfg.verdict_path)
        verdicts = lambda evs: model.probabilities(np.array([ev.vector() for ev in evs]))  # noqa: E731
    else:
        verdicts = lambda evs: [verdict(ev) for ev in evs]  # noqa: E731
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
                ahead = [j for j in walk[pos:] if not taken[j] and (j == i or j not in left or left[j][0] != near[j])
                         and (j not in known or known[j][0] != near[j])][:batch]
                for j, judged in zip(ahead, _judge(maps, cand, reading, np.array(ahead), r_class, need_rim,
                                                   disks[:len(done)], cfg, mm, verdicts)):
                    known[j] = (int(near[j]), judged)
            j = known.pop(i)[1]
            if j.copy:
                taken[i] = True
                continue
            if j.evidence is None:
                continue
            ev, prob = j.evidence, j.probability
            if is_seed[i]:
                prob = None         # a disk of the previous scene keeps its own rule (module docstring)
                ok = ev.rim_own >= need_rim[i] and ev.open_consistency >= cfg.open_consistency_history
            else:
                ok = ev.rim_own >= need_rim[i] and prob >= cfg.accept_probability
                if log is not None:
                    log(ev, j.u, j.v, float(r_class[i]), ok)
                    left[i] = (int(near[i]), (ev, j.u, j.v, float(r_class[i]), ok))
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


def confidence(rim_fraction: float, open_consistency: float, face: float) -> float:
    """0..1 for a disk of the previous scene: how much of the outline is seen, how well the open outline shows,
    and a face inside (a new disk's confidence is the verdict's probability)."""
    return float(np.clip((0.35 + min(rim_fraction, 0.65)) * (0.5 + 0.5 * open_consistency) * min(1.0, face / 0.9),
                         0.0, 0.999))


def _aligned(done: list[Accepted], rect: np.ndarray, scale: float, mm: float, cfg: DetectorConfig
             ) -> list[Accepted]:
    """The accepted disks with centres refined on the image (`vision.refine`), from the rays that show their own
    outline with no other accepted disk along or over it."""
    if not cfg.align or not done:
        return done
    K = cfg.rays
    ang = np.arange(K) * (2.0 * math.pi / K)
    u, v, r = (np.array([getattr(a, f) for a in done]) for f in ("u", "v", "r"))
    # each disk's outline against every other disk (as a circle is read against accepted disks)
    explained, covered = _against(u, v, r, np.zeros((len(done), K)), ang, np.stack([u, v, r], axis=1),
                                  cfg.explain_mm * mm, others=True)
    usable = np.array([a.shown for a in done]) & ~explained & ~covered
    to_rect = lambda a: (np.asarray(a) + 0.5) * scale - 0.5  # noqa: E731
    cx, cy = align_centres(rect, to_rect(np.array([a.u for a in done])), to_rect(np.array([a.v for a in done])),
                           np.array([a.r for a in done]) * scale, usable)
    return [replace(a, u=float((x + 0.5) / scale - 0.5), v=float((y + 0.5) / scale - 0.5))
            for a, x, y in zip(done, cx, cy)]


def _ring_colours(rect: np.ndarray, done: list[Accepted], angles: np.ndarray, scale: float, mm: float,
                  cfg: DetectorConfig) -> np.ndarray:
    """Each disk's border colour (BGR, (M, 3)): the median a little inside its outline on the rays that show it
    (all rays when fewer than four do), the tracker's identity cue."""
    if not done:
        return np.zeros((0, 3))
    to_rect = lambda a: (np.asarray(a) + 0.5) * scale - 0.5  # noqa: E731
    rr = np.array([a.r for a in done]) * scale - cfg.ring_depth_mm * mm * scale
    xs = to_rect(np.array([a.u for a in done]))[:, None] + rr[:, None] * np.cos(angles)
    ys = to_rect(np.array([a.v for a in done]))[:, None] + rr[:, None] * np.sin(angles)
    cols = cv2.remap(rect, xs.astype(np.float32), ys.astype(np.float32), cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_REPLICATE).astype(np.float64)          # (M, K, 3)
    shown = np.array([a.shown for a in done])
    return masked_median(cols, shown | (shown.sum(1, keepdims=True) < 4))


# ---------------------------------------------------------------------------------------------------------------
# The whole step


def locate_in_maps(maps: FaceMaps, rect: np.ndarray, radii_px: Sequence[float], scale: float, mm: float,
                   seeds: Sequence[Seed] = (), cfg: DetectorConfig = DEFAULT_CONFIG,
                   battlefield_px: tuple[float, float, float, float] | None = None,
                   where: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None,
                   verdict: Callable[[CircleEvidence], float] | None = None, log: JudgementLog | None = None
                   ) -> list[DiskFit]:
    """Disks of one rectified image (`rect`, BGR) from its maps. `radii_px`: the size classes' radii in rectified
    px; `scale`: rectified px per map px; `mm`: map px per mm. `seeds`: the previous scene's disks (rectified px).
    `battlefield_px` (x0, y0, x1, y1): a disk's centre may lie off the battlefield on one side (hanging over an
    edge), never beyond two (the marker tiles' corners). `where(x, y, r)` (rectified px): the part of the image
    wanted; seeds elsewhere are context (they explain and cover their neighbours) and are not returned.
    `verdict` and `log`: see `accept`."""
    radii_map = [r / scale for r in radii_px]
    seed_xy = np.array([[(s.cx + 0.5) / scale - 0.5, (s.cy + 0.5) / scale - 0.5] for s in seeds]).reshape(-1, 2)
    # a candidate's centre may be a couple of mm off: its inside is judged on 80 % of the radius, more leniently
    cand = find_candidates(maps, radii_map, cfg.vote_min, cfg.max_candidates_per_size, seeds, seed_xy,
                           0.8 * cfg.min_face)
    if len(cand) == 0:
        return []
    to_rect = lambda a: (np.asarray(a) + 0.5) * scale - 0.5  # noqa: E731
    r_class = np.array([radii_map[k] for k in cand.size_index], np.float64)
    allowed = np.ones(len(cand), bool)
    if battlefield_px is not None:
        x0, y0, x1, y1 = battlefield_px
        x, y = to_rect(cand.u), to_rect(cand.v)
        off = (x < x0).astype(int) + (x > x1) + (y < y0) + (y > y1)
        allowed &= off <= 1
    # a coarse look first: circles off the battlefield, or with next to no outline anywhere near, are not fitted
    is_seed = np.array([s is not None for s in cand.seed])
    coarse = read_rims(maps.rim, cand.u, cand.v, r_class, np.arange(24) * (math.pi / 12), cfg.profile_reach_mm * mm)
    keep = is_seed | (allowed & ((coarse.peak >= cfg.rim_level).mean(1) >= 0.5 * cfg.min_rim_history))
    cand, r_class, allowed = cand.subset(keep), r_class[keep], allowed[keep]
    if len(cand) == 0:
        return []
    reading = fit_circles(maps.rim, cand.u, cand.v, r_class, cfg, mm)
    context = np.zeros(len(cand), bool)
    if where is not None:
        want = np.asarray(where(to_rect(reading.u), to_rect(reading.v), reading.r * scale), bool)
        is_seed = np.array([s is not None for s in cand.seed])
        context = is_seed & ~want
        allowed &= want | is_seed
    done = accept(maps, cand, reading, r_class, cfg, mm, allowed, verdict, log)
    # a disk found anew where the previous scene had one of its size continues it (its id and order)
    seed_of = {a.index: cand.seed[a.index] for a in done}
    used = {id(s) for s in seed_of.values() if s is not None}
    seeded = [k for k, s in enumerate(cand.seed) if s is not None]
    for a in done:
        if seed_of[a.index] is not None:
            continue
        near = [s for k, s in ((k, cand.seed[k]) for k in seeded) if id(s) not in used
                and cand.size_index[k] == cand.size_index[a.index]
                and math.hypot(cand.u[k] - a.u, cand.v[k] - a.v) < cfg.copy_distance * a.r]
        if near:
            best = min(near, key=lambda s: math.hypot((s.cx + 0.5) / scale - 0.5 - a.u,
                                                      (s.cy + 0.5) / scale - 0.5 - a.v))
            seed_of[a.index] = best
            used.add(id(best))
    done = _aligned(done, rect, scale, mm, cfg)
    rings = _ring_colours(rect, done, reading.angles, scale, mm, cfg)
    fits = []
    for a, ring in zip(done, rings):
        if context[a.index]:
            continue
        seed = seed_of[a.index]
        size = SIZE_CLASSES[int(cand.size_index[a.index])]
        fits.append(DiskFit(cx=float(to_rect(a.u)), cy=float(to_rect(a.v)), r_px=a.r_class * scale, size=size,
                            rim_fraction=a.rim_fraction, open_consistency=a.open_consistency,
                            residual_px=a.residual * scale, ring_bgr=(float(ring[0]), float(ring[1]), float(ring[2])),
                            confidence=confidence(a.rim_fraction, a.open_consistency, a.face)
                            if a.probability is None else min(a.probability, 0.999),
                            seed_id=None if seed is None else seed.id, seed_z=None if seed is None else seed.z,
                            rim_r_px=a.r * scale))
    return fits
