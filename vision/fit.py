"""Circles of the calibrated radii measured on the rim map: the eye's settings, its result, and the fit.

Each candidate (`vision.candidates`) is measured on `rays` rays: along each ray the rim map's profile across the
circle is read, its peak (parabolic, sub-pixel) is where the outline runs on that ray. The centre is refitted by
least squares with the radius fixed to the size class (a disk seen mostly whole may differ from its class radius
by `radius_freedom_mm`, the print's cut), rays far off dropped, a few passes. Which circles are disks is
`vision.accept`'s question; `vision.locate` runs the whole step.

Everything is read from the maps of `vision.facemap`, so no threshold here is about colours or art. Coordinates:
map px (rectified px per map px: `scale`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

import numpy as np

from vision.facemap import MAP_VIEWS, sample


@dataclass(frozen=True)
class DetectorConfig:
    """Settings of the eye; the defaults are chosen on the training families' tuning seeds only."""

    model_path: str | None = None        # a face/rim network of one's own (None: the shipped one)
    network_px_per_mm: float = 1.0       # the scale the network reads a table whose disks lie within the
                                         # diameters it learned (others are brought into them:
                                         # `vision.detect.network_px_per_mm`); tuning frames, recall / precision:
                                         # 0.8 -> 89.0 / 99.4 %, 1 -> 95.0 / 98.5 %, 1.2 -> 96.5 / 97.0 %
    one_size_mm: float | None = 36.0     # chips all of one size are shown to the network at least this large
                                         # (mm across at the scale read; None: as other tables). Tuning frames,
                                         # 25 mm chips, recall / precision: the 28 mm the network learned from
                                         # 89.9 / 98.8 %, in lines and heaps of chips printed alike 64.5 / 97.5,
                                         # 47.7 / 96.5 %; 36 mm: 94.6 / 98.9, 83.6 / 98.9, 63.2 / 98.2 %; 44 mm
                                         # lost precision (25 mm chips 97.8 %, 39 mm chips printed alike
                                         # 99.7 -> 98.6 %); three sizes shown larger lost both
                                         # (`benchmarks/results/sizes.md`)
    map_views: int = 1                   # the frame and its mirror images the network reads, maps averaged
                                         # (`vision.facemap.face_maps`; each view one more run of the network)
    rays: int = 96                       # rim rays per disk
    vote_min: float = 0.12               # candidate: this share of a circle's outline in the rim map
    max_candidates_per_size: int = 160
    profile_reach_mm: float = 5.0        # each ray's rim profile is read this far either side of the circle
    rim_level: float = 0.3               # rim probability at which a ray shows the outline (tuning seeds, by pin
                                         # F1: 0.4 -> 81.8, 0.35 -> 82.1, 0.3 -> 82.5 %)
    rim_tolerance_mm: float = 2.0        # a shown outline supports the circle within this distance
    explain_mm: float = 2.0              # outline this close to an accepted disk's outline is explained by it
    min_rim: float = 0.2                 # share of its outline a new circle shows (its own) to be judged at all
    accept_probability: float = 0.6      # the verdict's probability a new circle needs (vision.verdict; tuning
                                         # seeds, by pin F1 within the precision floor: 0.5 -> 83.1 at precision
                                         # 97.8 %, 0.6 -> 83.5 at 98.6 %, 0.7 -> 82.9)
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
    suspect_probability: float = 0.2     # a circle turned down inside a larger disk at this verdict probability or
                                         # more is reported as a disk that may lie on it (tuning frames: 13 of 37
                                         # such reports point at a disk missed there; 0.3: 8 of 19)
    nest_probability: float | None = 0.9  # a suspicion or nest place the nest judge (vision.nestjudge) finds this
                                          # likely is a disk lying on the one it lies within (None: the judge is
                                          # not asked; tuning frames, by pin F1 within the precision floor: 0.7 ->
                                          # 85.6 at precision 97.95 %, 0.9 -> 86.8 at 98.5 %)
    nest_suspect_probability: float | None = None  # the judge also says which circle within each disk is its
                                          # suspicion (`suspected_disks`): the likeliest place it finds this likely,
                                          # not claimed (None: the verdict's suspicions stand)
    nest_model: str | None = None         # a nest judge of one's own (None: the shipped one)
    nest_search: int = 1                  # where the judge is asked besides the suspicions: the likeliest place of
                                          # each smaller size within each accepted disk by the rim map's ring votes
                                          # (vision.locate), this many; most disks lying wholly on others never
                                          # reach the verdict at all (0: suspicions only)
    lone_probability: float | None = 0.9  # a face-less circle whose outline shows whole (`vision.locate.lone_circles`)
                                          # the lone judge (vision.lonejudge) finds this likely is a disk (None: the
                                          # judge is not asked; tuning frames, standard / alike tables, made up and
                                          # recall: off 17, 95.0 % / 12, 89.0 %; 0.9: 17, 95.3 % / 14, 90.9 %; 0.7
                                          # made up 20 on the standard ones, and 0.5 takes all 0.7 takes)
    lone_rim: float = 0.5                 # share of its outline such a circle shows to be asked about
    lone_model: str | None = None         # a lone judge of one's own (None: the shipped one)
    isolate_face: float | None = 0.3      # a circle the image's edges vote for, read by the network alone
                                          # (vision.isolate), is a disk with this much face inside and
    isolate_rim: float = 0.8              # this share of its outline shown (None: not asked). Tuning frames, 4 a
                                          # family, standard / alike / heaped tables, circles read alone, disks and
                                          # not: 0.3 and 0.8 2 / 25 / 81 and 1 / 1 / 1; 0.3 and 0.75 2 / 29 / 89
                                          # and 4 / 5 / 4; 0.5 and 0.8 2 / 25 / 78 and 1 / 1 / 1
    isolate_window: float = 1.6           # the window it is read in, radii a side: set from the diagnosis, then
                                          # checked on tuning frames (standard / alike / heaped, found and not a
                                          # disk): 1.3 780 / 1059 / 1283 and 11 / 6 / 10; 1.6 781 / 1060 / 1285
                                          # and 10 / 5 / 7; 2.0 781 / 1061 / 1287 and 9 / 5 / 7 (not yet taken)
    isolate_overlap: bool = True          # circles partly over or under a disk found are read alone too (each
                                          # centre outside the other's disk), their outline counted only where
                                          # no disk found lies nor touches: chips in a heap lie on each other and
                                          # touch. Tuning frames, 4 a family, standard / alike / heaped, found
                                          # (not a disk): off 781 (10) / 1060 (5) / 1285 (7); on 783 (10) / 1063
                                          # (5) / 1295 (7); touching rays counted 783 / 1065 / 1292, same made up
    isolate_votes: float = 0.2            # share of its outline whose edges vote for a circle to be read at all
    isolate_most: int = 40                # circles voted for, at most, of each radius

    def __post_init__(self) -> None:
        if self.map_views not in MAP_VIEWS:
            raise ValueError(f"map_views must be one of {MAP_VIEWS}, got {self.map_views!r}")
        if not 24 <= self.rays <= 720:
            raise ValueError("rays must be within 24..720")
        if not 0.5 <= self.network_px_per_mm <= 2.0:
            raise ValueError(f"network_px_per_mm must be within 0.5..2, got {self.network_px_per_mm!r}")
        if self.one_size_mm is not None and (isinstance(self.one_size_mm, bool)
                                             or not 5.0 <= self.one_size_mm <= 300.0):
            raise ValueError(f"one_size_mm must be within 5..300 mm or None, got {self.one_size_mm!r}")
        for name in ("vote_min", "rim_level", "min_rim", "min_rim_history", "accept_probability",
                     "open_consistency_history", "min_face", "copy_distance", "suspect_probability"):
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
        if self.nest_probability is not None and not 0.0 < self.nest_probability <= 1.0:
            raise ValueError(f"nest_probability must be within (0, 1] or None, got {self.nest_probability!r}")
        if self.nest_suspect_probability is not None and not 0.0 < self.nest_suspect_probability <= 1.0:
            raise ValueError(f"nest_suspect_probability must be within (0, 1] or None, "
                             f"got {self.nest_suspect_probability!r}")
        if self.lone_probability is not None and not 0.0 < self.lone_probability <= 1.0:
            raise ValueError(f"lone_probability must be within (0, 1] or None, got {self.lone_probability!r}")
        if not 0.0 < self.lone_rim <= 1.0:
            raise ValueError(f"lone_rim must be within (0, 1], got {self.lone_rim!r}")
        if self.isolate_face is not None and not 0.0 <= self.isolate_face <= 1.0:
            raise ValueError(f"isolate_face must be within 0..1 or None, got {self.isolate_face!r}")
        for name in ("isolate_rim", "isolate_votes"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be within (0, 1], got {getattr(self, name)!r}")
        if not 1.1 <= self.isolate_window <= 4.0:
            raise ValueError(f"isolate_window must be within 1.1..4 radii, got {self.isolate_window!r}")
        if not 1 <= self.isolate_most <= 400:
            raise ValueError(f"isolate_most must be within 1..400, got {self.isolate_most!r}")
        if not 0 <= self.nest_search <= 4:
            raise ValueError(f"nest_search must be within 0..4, got {self.nest_search!r}")
        if not 0 <= self.disk_thickness_mm <= 20:
            raise ValueError("disk_thickness_mm must be within 0..20")
        for name in ("model_path", "verdict_path", "nest_model", "lone_model"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a file path (str) or None")

    def changed(self, setting: str) -> "DetectorConfig":
        """These settings with one changed, given as `NAME=VALUE` (a number; `off` for None; a path for the
        model files): how the benchmarks take a setting from their command line. ValueError naming what is wrong
        for an unknown name or a value the setting does not take."""
        name, sep, text = setting.partition("=")
        if not sep or name not in {f.name for f in fields(self)}:
            raise ValueError(f"{setting!r}: expected NAME=VALUE with NAME a DetectorConfig setting")
        old = getattr(self, name)
        if text == "off":
            value: object = None
        elif name in ("model_path", "verdict_path", "nest_model", "lone_model"):
            value = text
        elif isinstance(old, bool):
            if text not in ("true", "false"):
                raise ValueError(f"{setting!r}: {name} is true or false")
            value = text == "true"
        else:
            try:
                value = int(text) if isinstance(old, int) else float(text)
            except ValueError:
                raise ValueError(f"{setting!r}: {name} takes a {type(old).__name__}, not {text!r}") from None
        try:
            return replace(self, **{name: value})
        except TypeError:        # None where a number is needed: the checks above compare it
            raise ValueError(f"{setting!r}: {name} cannot be off") from None


DEFAULT_CONFIG = DetectorConfig()


@dataclass(frozen=True)
class SuspectedDisk:
    """A circle the verdict turned down lying wholly within an accepted disk, likely enough to be a disk lying on
    it (`DetectorConfig.suspect_probability`): seen from above, a small disk on a larger one looks like a ring in
    the larger one's art, so the eye says where it may be instead of claiming it. Rectified px."""

    cx: float
    cy: float
    r_px: float
    size: str
    probability: float
    rim_shown: float = 0.0    # share of its outline the rim map shows


@dataclass(frozen=True)
class NestPlace:
    """Where the rim map most suggests a disk of a smaller size lying wholly within an accepted disk (its ring
    votes' highest point there, fitted and aligned like a disk's outline), for the nest judge (`vision.nestjudge`)
    to look at: no claim of the eye's own. Rectified px."""

    cx: float
    cy: float
    r_px: float
    size: str
    rim_shown: float    # share of its outline the rim map shows


@dataclass(frozen=True)
class LoneCircle:
    """A circle whose outline the rim map shows nearly whole, lying on no accepted disk, but whose inside the face
    map does not read as a face: a chip among many printed alike (the network reads a field of them as a cloth's
    pattern: `benchmarks/results/misses.md`), or a round spot of the cloth. For the lone judge
    (`vision.lonejudge`) to look at: no claim of the eye's own. Rectified px."""

    cx: float
    cy: float
    r_px: float
    size: str
    rim_shown: float    # share of its outline the rim map shows


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
    suspect: SuspectedDisk | None = None   # the likeliest circle turned down within it that may be a disk on it
    nest_places: tuple[NestPlace, ...] = ()   # more places within it for the nest judge (`nest_search`)

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
    # the first highest sample, as argmax picks it: T less the samples at or after it, counted row by row (an
    # argmax down the sample axis steps through memory column by column and costs as much as the sampling)
    top = prof == best
    found = top[0].copy()
    seen = found.astype(np.min_scalar_type(T))
    for row in top[1:]:
        found |= row
        seen += found.view(np.uint8)
    k = np.where(found, T - seen.astype(np.intp), 0)    # none equal (a NaN in the map): the first, as argmax has it
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


def ray_angles(rays: int) -> np.ndarray:
    """The angles of a circle's `rays` rays, the first along +x."""
    return np.arange(rays) * (2.0 * math.pi / rays)


def first_reading(rim: np.ndarray, u: np.ndarray, v: np.ndarray, r_class: np.ndarray, cfg: DetectorConfig,
                  mm: float) -> RimReading:
    """The circles read where they start, on `fit_circles`' rays (its first reading)."""
    return read_rims(rim, np.asarray(u, np.float64), np.asarray(v, np.float64), np.asarray(r_class, np.float64),
                     ray_angles(cfg.rays), cfg.profile_reach_mm * mm)


# The normal equations of a circle's shift (dx, dy, dr) from the sums `w @ basis` in `fit_circles`: which sum each
# entry is; for a disk whose radius is pinned, only the centre's block is kept and dr's row reads dr = 0.
_NORMAL = np.array([[0, 1, 3], [1, 2, 4], [3, 4, 5]])
_CENTRE_BLOCK = np.array([[True, True, False], [True, True, False], [False, False, False]])
_PINNED = np.diag([0.0, 0.0, 1.0])


def fit_circles(rim: np.ndarray, u: np.ndarray, v: np.ndarray, r_class: np.ndarray, cfg: DetectorConfig,
                mm: float, exclude: np.ndarray | None = None, first: RimReading | None = None) -> RimReading:
    """Centres (and, for disks seen nearly whole, radii) fitted to the rim map's outline, ray by ray.

    `mm`: map px per mm. `exclude` (M, K): rays not to fit on (another disk's outline runs there). `first`: the
    circles' `first_reading` when already made (a refit of some of them starts where their first fit did)."""
    K = cfg.rays
    angles = ray_angles(K)
    ca, sa = np.cos(angles), np.sin(angles)
    basis = np.stack([ca * ca, ca * sa, sa * sa, ca, sa, np.ones(K)], axis=1)    # (K, 6)
    u, v, r = u.astype(np.float64).copy(), v.astype(np.float64).copy(), r_class.astype(np.float64).copy()
    reach = cfg.profile_reach_mm * mm
    tol = cfg.rim_tolerance_mm * mm
    freedom = cfg.radius_freedom_mm * mm
    reading = read_rims(rim, u, v, r, angles, reach) if first is None else first
    for p in range(cfg.fit_passes):
        # the first pass takes every shown outline within reach, later ones only those near the circle
        lim = reach if p == 0 else max(tol, reach * 0.5 ** p)
        use = (reading.peak >= cfg.rim_level) & (np.abs(reading.offset) <= lim)
        if exclude is not None:
            use &= ~exclude
        w = np.zeros(use.shape)
        np.copyto(w, reading.peak, where=use)
        # offset_k ~ dx cos + dy sin (+ dr): weighted least squares per circle, its sums as two matrix products
        n = (w > 0).sum(1)
        sums = w @ basis                                  # a11, a12, a22, a13, a23, a33
        free = n / K >= 0.85
        # batched normal equations; the radius row is pinned (zero shift) for disks not seen nearly whole
        A = np.where(free[:, None, None] | _CENTRE_BLOCK, sums[:, _NORMAL], _PINNED)
        bvec = np.where(free[:, None] | _CENTRE_BLOCK[0], (w * reading.offset) @ basis[:, 3:], 0.0)
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
