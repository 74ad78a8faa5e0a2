"""The eye's geometric step: disks of one rectified image from its face and rim maps.

Candidates of the calibrated radii (`vision.candidates`) are measured on the rim map (`vision.fit`), judged and
accepted by what they explain (`vision.accept`), and the accepted centres refined on the full-resolution image
(`vision.refine`) from the rays that show each disk's own outline with no other disk along or over it. The result
is `vision.fit.DiskFit`s in rectified px (map px inside: `scale` rectified px per map px).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Callable, Sequence

import cv2
import numpy as np

from tablesight.scene import SIZE_CLASSES
from vision.accept import Accepted, JudgementLog, accept, outline_against
from vision.candidates import Peaks, Seed, find_candidates, ring_peaks, ring_votes
from vision.facemap import FaceMaps
from vision.fit import (DEFAULT_CONFIG, DetectorConfig, DiskFit, LoneCircle, NestPlace, RimReading, SuspectedDisk,
                       first_reading, fit_circles, ray_angles, read_rims)
from vision.refine import DEFAULT_ALIGN, align_centres, masked_median
from vision.verdict import CircleEvidence


PLACE_RAYS = 48                                   # rays a nest place is aligned on...
PLACE_ALIGN = replace(DEFAULT_ALIGN, passes=1)    # ...in one pass (a quarter of a disk's alignment's cost)
PLACE_CLEAR_MM = 0.5                              # a nest place lies this far inside its disk's outline


def _to_rect(a, scale: float) -> np.ndarray:
    """Map px -> rectified px (`scale` rectified px per map px; pixel centres kept)."""
    return (np.asarray(a) + 0.5) * scale - 0.5


def on_battlefield(u: np.ndarray, v: np.ndarray, scale: float,
                   battlefield_px: tuple[float, float, float, float] | None) -> np.ndarray:
    """Whether each centre (map px, `scale` rectified px each: 1 for rectified px) may be a disk's: off the
    battlefield (x0, y0, x1, y1; rectified px) on one side at most (a disk hanging over an edge), never beyond two
    (the marker tiles' corners)."""
    if battlefield_px is None:
        return np.ones(len(u), bool)
    x0, y0, x1, y1 = battlefield_px
    x, y = _to_rect(u, scale), _to_rect(v, scale)
    return ((x < x0).astype(int) + (x > x1) + (y < y0) + (y > y1)) <= 1


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
    explained, covered = outline_against(u, v, r, np.zeros((len(done), K)), ang, np.stack([u, v, r], axis=1),
                                         cfg.explain_mm * mm, others=True)
    usable = np.array([a.shown for a in done]) & ~explained & ~covered
    cx, cy = align_centres(rect, _to_rect(u, scale), _to_rect(v, scale), r * scale, usable)
    return [replace(a, u=float((x + 0.5) / scale - 0.5), v=float((y + 0.5) / scale - 0.5))
            for a, x, y in zip(done, cx, cy)]


def lies_within(x, y, r, bx, by, br) -> np.ndarray:
    """Whether circle (x, y, r) lies wholly within the circle (bx, by, br) of a larger size class, at most 30 % of
    its radius out (any units, arrays broadcast): a place where a disk may lie on that one."""
    x, y, r, bx, by, br = (np.asarray(a, np.float64) for a in (x, y, r, bx, by, br))
    return (r < 0.95 * br) & (np.hypot(x - bx, y - by) + r <= br + 0.3 * r)


def _suspects(done: list[Accepted], turned_down: list[tuple[float, float, float, float, float]],
              radii_map: Sequence[float], scale: float, cfg: DetectorConfig) -> list[SuspectedDisk | None]:
    """For each accepted disk, the likeliest circle the verdict turned down (u, v, r_class, probability, share of
    its outline shown; map px)
    lying wholly within it (a smaller class, at most 30 % of its radius out) and no copy of an accepted disk: a disk
    that may lie on it. None where there is none."""
    if not turned_down or not done:
        return [None] * len(done)
    t = np.array(turned_down)
    acc = np.array([(a.u, a.v, a.r_class) for a in done])
    copy = ((np.abs(acc[None, :, 2] - t[:, None, 2]) < 0.5)
            & (np.hypot(acc[None, :, 0] - t[:, None, 0], acc[None, :, 1] - t[:, None, 1])
               < cfg.copy_distance * t[:, None, 2])).any(1)
    out: list[SuspectedDisk | None] = []
    for a in done:
        within = ~copy & lies_within(t[:, 0], t[:, 1], t[:, 2], a.u, a.v, a.r_class)
        if not within.any():
            out.append(None)
            continue
        u, v, rc, p, shown = t[np.flatnonzero(within)[np.argmax(t[within, 3])]]
        size = SIZE_CLASSES[int(np.argmin([abs(r - rc) for r in radii_map]))]
        out.append(SuspectedDisk(cx=float(_to_rect(u, scale)), cy=float(_to_rect(v, scale)), r_px=float(rc * scale),
                                 size=size, probability=round(float(p), 3), rim_shown=float(shown)))
    return out


def _nest_places(maps: FaceMaps, rect: np.ndarray, done: list[Accepted], suspects: list[SuspectedDisk | None],
                 radii_map: Sequence[float], scale: float, mm: float, cfg: DetectorConfig
                 ) -> list[tuple[NestPlace, ...]]:
    """For each accepted disk, the places within it where the rim map most suggests a disk of a smaller size lying
    on it (`cfg.nest_search` per size: the highest ring votes there, at least `vote_min`, fitted like a disk's
    outline and aligned more coarsely), besides its suspicion and any accepted disk of that size: where the nest
    judge looks. A place lies wholly inside the disk, `PLACE_CLEAR_MM` clear of its outline (a circle crossing it
    reads the disk's own cut edge as a disk's: tuning frames, pin F1 85.4 with such circles, 86.4 without, the judge
    trained on both). A disk lying wholly on another shows its outline faintly in the rim map, too faintly to be
    judged at all most of the time (`benchmarks/results/misses.md`); the judge reads the place at full resolution.
    Only where the judge is asked (`cfg.nest_probability`, `cfg.nest_suspect_probability`)."""
    out: list[tuple[NestPlace, ...]] = [() for _ in done]
    asked = cfg.nest_probability is not None or cfg.nest_suspect_probability is not None
    if not asked or cfg.nest_search == 0 or not done:
        return out
    smaller = sorted({r for r in radii_map if any(r < 0.95 * a.r_class for a in done)})
    if not smaller:
        return out
    votes = dict(zip(smaller, ring_votes(maps.rim, smaller)))
    h, w = maps.rim.shape
    clear = PLACE_CLEAR_MM * mm                                 # map px
    places: list[tuple[int, float, float, float]] = []         # (disk, u, v, radius), map px
    acc = np.array([(a.u, a.v, a.r_class) for a in done])
    for k, a in enumerate(done):
        sizes = [rc for rc in smaller if rc < 0.95 * a.r_class]
        y0, y1 = max(0, int(a.v - a.r_class)), min(h, int(math.ceil(a.v + a.r_class)) + 1)
        x0, x1 = max(0, int(a.u - a.r_class)), min(w, int(math.ceil(a.u + a.r_class)) + 1)
        if not sizes or y1 <= y0 or x1 <= x0:
            continue
        vv, uu = np.mgrid[y0:y1, x0:x1].astype(np.float64)
        inside = np.hypot(uu - a.u, vv - a.v)
        near = [done[j] for j in np.flatnonzero(np.hypot(acc[:, 0] - a.u, acc[:, 1] - a.v) < a.r_class + acc[:, 2])
                if j != k]
        # not on another accepted disk no larger than this one (one lying partly on it: its own places)
        free = np.ones(inside.shape, bool)
        for b in near:
            if b.r_class <= a.r_class:
                free &= np.hypot(uu - b.u, vv - b.v) >= b.r_class
        for rc in sizes:
            ok = free & (inside + rc <= a.r_class - clear)
            # not where a disk of this size was accepted, nor where the suspicion already asks
            taken = [(b.u, b.v) for b in near if abs(b.r_class - rc) < 0.5]
            s = suspects[k]
            if s is not None and abs(s.r_px / scale - rc) < 0.5:
                taken.append(((s.cx + 0.5) / scale - 0.5, (s.cy + 0.5) / scale - 0.5))
            for tu, tv in taken:
                ok &= np.hypot(uu - tu, vv - tv) >= cfg.copy_distance * rc
            score = np.where(ok, votes[rc][y0:y1, x0:x1], -1.0)
            for _ in range(cfg.nest_search):
                j = np.unravel_index(int(np.argmax(score)), score.shape)
                if score[j] < cfg.vote_min:
                    break
                places.append((k, float(uu[j]), float(vv[j]), rc))
                score[np.hypot(uu - uu[j], vv - vv[j]) < rc] = -1.0
    if not places:
        return out
    k_of = np.array([p[0] for p in places])
    rc = np.array([p[3] for p in places])
    reading = fit_circles(maps.rim, np.array([p[1] for p in places]), np.array([p[2] for p in places]), rc, cfg, mm)
    shown = ((reading.peak >= cfg.rim_level) & (np.abs(reading.offset) <= cfg.rim_tolerance_mm * mm)).mean(1)
    cx, cy = _to_rect(reading.u, scale), _to_rect(reading.v, scale)
    if cfg.align:
        # a coarser alignment than an accepted disk's: the judge reads the place within a millimetre or so
        cx, cy = align_centres(rect, cx, cy, rc * scale, np.ones((len(places), PLACE_RAYS), bool), PLACE_ALIGN)
    # the fit may have left the disk: then it is no place within it
    u, v = (cx + 0.5) / scale - 0.5, (cy + 0.5) / scale - 0.5
    within = np.hypot(u - acc[k_of, 0], v - acc[k_of, 1]) + rc <= acc[k_of, 2] - clear
    found: list[list[NestPlace]] = [[] for _ in done]
    for k, x, y, r, sh in zip(k_of[within], cx[within], cy[within], rc[within], shown[within]):
        size = SIZE_CLASSES[int(np.argmin([abs(q - r) for q in radii_map]))]
        found[k].append(NestPlace(cx=float(x), cy=float(y), r_px=float(r * scale), size=size, rim_shown=float(sh)))
    return [tuple(f) for f in found]


def ring_colours(rect: np.ndarray, x: np.ndarray, y: np.ndarray, r: np.ndarray, shown: np.ndarray) -> np.ndarray:
    """Each circle's border colour (BGR, (M, 3)), the tracker's identity cue: the median on the circles of radius
    `r` round (x, y) (rectified px; a little inside each outline) over the rays `shown` (M, K; all rays when fewer
    than four are)."""
    if not len(x):
        return np.zeros((0, 3))
    angles = ray_angles(shown.shape[1])
    xs = np.asarray(x, np.float64)[:, None] + np.asarray(r, np.float64)[:, None] * np.cos(angles)
    ys = np.asarray(y, np.float64)[:, None] + np.asarray(r, np.float64)[:, None] * np.sin(angles)
    cols = cv2.remap(rect, xs.astype(np.float32), ys.astype(np.float32), cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_REPLICATE).astype(np.float64)          # (M, K, 3)
    return masked_median(cols, shown | (shown.sum(1, keepdims=True) < 4))


def _ring_colours(rect: np.ndarray, done: list[Accepted], scale: float, mm: float, cfg: DetectorConfig
                  ) -> np.ndarray:
    """The accepted disks' border colours (`ring_colours`), `ring_depth_mm` inside their outlines."""
    if not done:
        return np.zeros((0, 3))
    return ring_colours(rect, _to_rect(np.array([a.u for a in done]), scale),
                        _to_rect(np.array([a.v for a in done]), scale),
                        np.array([a.r for a in done]) * scale - cfg.ring_depth_mm * mm * scale,
                        np.array([a.shown for a in done]))



def locate_in_maps(maps: FaceMaps, rect: np.ndarray, radii_px: Sequence[float], scale: float, mm: float,
                   seeds: Sequence[Seed] = (), cfg: DetectorConfig = DEFAULT_CONFIG,
                   battlefield_px: tuple[float, float, float, float] | None = None,
                   where: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None,
                   verdict: Callable[[CircleEvidence], float] | None = None, log: JudgementLog | None = None,
                   peaks: Peaks | None = None) -> list[DiskFit]:
    """Disks of one rectified image (`rect`, BGR) from its maps. `radii_px`: the size classes' radii in rectified
    px; `scale`: rectified px per map px; `mm`: map px per mm. `seeds`: the previous scene's disks (rectified px).
    `battlefield_px` (x0, y0, x1, y1): a disk's centre may lie off the battlefield on one side (hanging over an
    edge), never beyond two (the marker tiles' corners). `where(x, y, r)` (rectified px): the part of the image
    wanted; seeds elsewhere are context (they explain and cover their neighbours) and are not returned.
    `verdict` and `log`: see `accept`. `peaks`: the maps' `peaks_of`, when already read."""
    radii_map = [r / scale for r in radii_px]
    seed_xy = np.array([[(s.cx + 0.5) / scale - 0.5, (s.cy + 0.5) / scale - 0.5] for s in seeds]).reshape(-1, 2)
    # a candidate's centre may be a couple of mm off: its inside is judged on 80 % of the radius, more leniently
    cand = find_candidates(maps, radii_map, cfg.vote_min, cfg.max_candidates_per_size, seeds, seed_xy,
                           0.8 * cfg.min_face, peaks=peaks)
    if len(cand) == 0:
        return []
    r_class = np.array([radii_map[k] for k in cand.size_index], np.float64)
    allowed = on_battlefield(cand.u, cand.v, scale, battlefield_px)
    # a coarse look first: circles off the battlefield, or with next to no outline anywhere near, are not fitted.
    # Its 24 rays are among the fit's (every fourth of the default 96): then the fit's first reading is made for all
    # candidates and the coarse look is its columns, the same samples read once (on whole frames next to no
    # candidate is dropped: none on the speed and tuning frames tried)
    is_seed = np.array([s is not None for s in cand.seed])
    coarse_angles = np.arange(24) * (math.pi / 12)
    every = cfg.rays // 24
    first: RimReading | None = None
    if cfg.rays % 24 == 0 and np.array_equal(ray_angles(cfg.rays)[::every], coarse_angles):
        first = first_reading(maps.rim, cand.u, cand.v, r_class, cfg, mm)
        coarse = first.peak[:, ::every]
    else:
        coarse = read_rims(maps.rim, cand.u, cand.v, r_class, coarse_angles, cfg.profile_reach_mm * mm).peak
    keep = is_seed | (allowed & ((coarse >= cfg.rim_level).mean(1) >= 0.5 * cfg.min_rim_history))
    cand, r_class, allowed = cand.subset(keep), r_class[keep], allowed[keep]
    if len(cand) == 0:
        return []
    if first is None:
        first = first_reading(maps.rim, cand.u, cand.v, r_class, cfg, mm)
    elif not keep.all():
        first = first.take(np.nonzero(keep)[0])
    reading = fit_circles(maps.rim, cand.u, cand.v, r_class, cfg, mm, first=first)
    context = np.zeros(len(cand), bool)
    if where is not None:
        want = np.asarray(where(_to_rect(reading.u, scale), _to_rect(reading.v, scale), reading.r * scale), bool)
        is_seed = np.array([s is not None for s in cand.seed])
        context = is_seed & ~want
        allowed &= want | is_seed
    turned_down: list[tuple[float, float, float, float, float]] = []

    def noted(ev: CircleEvidence, u: float, v: float, rc: float, accepted: bool, probability: float) -> None:
        if not accepted and probability >= cfg.suspect_probability:
            turned_down.append((u, v, rc, probability, ev.rim_all))
        if log is not None:
            log(ev, u, v, rc, accepted, probability)

    done = accept(maps, cand, reading, r_class, cfg, mm, allowed, verdict, noted, first=first)
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
    rings = _ring_colours(rect, done, scale, mm, cfg)
    fits = []
    suspects = _suspects(done, turned_down, radii_map, scale, cfg)
    places = _nest_places(maps, rect, done, suspects, radii_map, scale, mm, cfg)
    for a, ring, suspect, nest_places in zip(done, rings, suspects, places):
        if context[a.index]:
            continue
        seed = seed_of[a.index]
        size = SIZE_CLASSES[int(cand.size_index[a.index])]
        fits.append(DiskFit(cx=float(_to_rect(a.u, scale)), cy=float(_to_rect(a.v, scale)), r_px=a.r_class * scale,
                            size=size,
                            rim_fraction=a.rim_fraction, open_consistency=a.open_consistency,
                            residual_px=a.residual * scale, ring_bgr=(float(ring[0]), float(ring[1]), float(ring[2])),
                            confidence=confidence(a.rim_fraction, a.open_consistency, a.face)
                            if a.probability is None else min(a.probability, 0.999),
                            seed_id=None if seed is None else seed.id, seed_z=None if seed is None else seed.z,
                            rim_r_px=a.r * scale, suspect=suspect, nest_places=nest_places))
    return fits


def peaks_of(maps: FaceMaps, radii_px: Sequence[float], scale: float, cfg: DetectorConfig = DEFAULT_CONFIG
             ) -> Peaks:
    """The ring votes' peaks `locate_in_maps` and `lone_circles` choose their circles from (read once for both)."""
    return ring_peaks(maps, [r / scale for r in radii_px], cfg.vote_min)


def lone_circles(maps: FaceMaps, rect: np.ndarray, fits: Sequence[DiskFit], radii_px: Sequence[float], scale: float,
                 mm: float, cfg: DetectorConfig = DEFAULT_CONFIG,
                 battlefield_px: tuple[float, float, float, float] | None = None,
                 where: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None,
                 min_shown: float | None = None, peaks: Peaks | None = None) -> list[LoneCircle]:
    """Circles of the calibrated radii whose inside the face map does not read as a face (`find_candidates`'
    `faceless`) but whose fitted outline the rim map shows on at least `min_shown` of its rays (default
    `cfg.lone_rim`), overlapping no disk of `fits` (beyond the outline's tolerance) nor each other (the most
    shown first), centres aligned on the image: where the lone judge looks (`vision.lonejudge`). A field of chips
    printed alike reads to the network as a cloth's pattern, their faces lost, while their outlines still show
    (`benchmarks/results/misses.md`); so does a cloth printed with round spots, which the judge tells apart at
    full resolution (a chip's cut edge, side wall and shadow). Arguments as `locate_in_maps`'; [] when the judge
    is not asked (`cfg.lone_probability`) and no `min_shown` is given."""
    level = cfg.lone_rim if min_shown is None else min_shown
    if cfg.lone_probability is None and min_shown is None:
        return []
    radii_map = [r / scale for r in radii_px]
    cand = find_candidates(maps, radii_map, max(cfg.vote_min, 0.5 * level), cfg.max_candidates_per_size,
                           min_face=0.8 * cfg.min_face, faceless=True, peaks=peaks)
    if len(cand) == 0:
        return []
    r_class = np.array([radii_map[k] for k in cand.size_index], np.float64)
    keep = on_battlefield(cand.u, cand.v, scale, battlefield_px)
    slack = cfg.rim_tolerance_mm * mm
    placed = [((f.cx + 0.5) / scale - 0.5, (f.cy + 0.5) / scale - 0.5, f.r_px / scale) for f in fits]
    if placed:
        # most such peaks are rings in an accepted disk's art or the gaps round it: a circle overlapping a disk by
        # more than the fit moves it in one pass (its profiles' reach) is not fitted at all (on the 52 tuning
        # frames tried, the same circles asked about as when every one was fitted)
        at = np.array(placed)
        reach = cfg.profile_reach_mm * mm
        d = np.hypot(cand.u[:, None] - at[None, :, 0], cand.v[:, None] - at[None, :, 1])
        keep &= ~(d < r_class[:, None] + at[None, :, 2] - slack - reach).any(1)
    if not keep.any():
        return []
    # the coarse look of `locate_in_maps` first: every fourth of the fit's rays, half the share wanted
    idx = np.flatnonzero(keep)
    angles = ray_angles(cfg.rays)[::max(1, cfg.rays // 24)]
    coarse = read_rims(maps.rim, cand.u[idx], cand.v[idx], r_class[idx], angles, cfg.profile_reach_mm * mm).peak
    idx = idx[(coarse >= cfg.rim_level).mean(1) >= 0.5 * level]
    if not idx.size:
        return []
    reading = fit_circles(maps.rim, cand.u[idx], cand.v[idx], r_class[idx], cfg, mm)
    shown = (reading.peak >= cfg.rim_level) & (np.abs(reading.offset) <= cfg.rim_tolerance_mm * mm)
    share = shown.mean(1)
    ok = share >= level
    if where is not None:
        ok &= np.asarray(where(_to_rect(reading.u, scale), _to_rect(reading.v, scale), reading.r * scale), bool)
    picked: list[int] = []
    for i in np.argsort(-share, kind="stable"):
        if not ok[i]:
            continue
        u, v, r = float(reading.u[i]), float(reading.v[i]), float(r_class[idx[i]])
        if any(math.hypot(u - pu, v - pv) < r + pr - slack for pu, pv, pr in placed):
            continue
        placed.append((u, v, r))
        picked.append(int(i))
    if not picked:
        return []
    p = np.array(picked)
    rc = r_class[idx[p]]
    cx, cy = _to_rect(reading.u[p], scale), _to_rect(reading.v[p], scale)
    if cfg.align:
        cx, cy = align_centres(rect, cx, cy, rc * scale, shown[p])
    return [LoneCircle(cx=float(x), cy=float(y), r_px=float(r * scale),
                       size=SIZE_CLASSES[int(np.argmin([abs(q - r) for q in radii_map]))], rim_shown=float(share[i]))
            for x, y, r, i in zip(cx, cy, rc, p)]
