"""Change-driven detection: after the first commit, the detector looks again only where the table changed.

Between two settled tables a game changes a few disks: one flipped, a casualty taken away, a disk put on another.
A disk whose surroundings show no change since it was measured is carried over as it was measured; the detector
runs on the changed parts of the frame only (each widened so that every disk touching a change lies wholly
inside), seeded by the previous scene, and the stacking order is then taken again over all disks (the carried
ones bring their order as history). Change is measured against the very pixels each carried disk was measured
on, so a disk nudged a little at each of several commits cannot drift away unseen. When much of the table
changed (a lamp over part of it, a bumped camera) `detect_changed` declines and the whole frame is detected; the
whole picture's exposure or white balance changing (a webcam adjusting itself) is no change of the table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sequence

import cv2
import numpy as np

from tablesight.scene import SIZE_CLASSES, Scene
from vision.arrival import DEFAULT_ARRIVAL, ArrivalConfig, arrived_disks
from vision.detect import (Detection, battlefield_px, detect_disks, finish_detection, map_scale, network_px_per_mm,
                           px_per_mm, seeds_from)
from vision.facemap import FaceMaps
from vision.fit import DEFAULT_CONFIG, DetectorConfig, DiskFit
from vision.sizes import DiskSizes


@dataclass(frozen=True)
class ChangeConfig:
    """What counts as a change of the table between two commits."""

    level: float = 30.0        # colour difference (0-255, the largest channel's, 2x2 averaged) that is a change
    speck_px: int = 3          # changes thinner than this (half-resolution px) are noise and JPEG, not the table
    margin_px: float = 3.0     # a disk whose rim comes this close to a change is measured again
    max_changed: float = 0.3   # a larger changed share of the frame (light, a bumped camera): detect it all
    match_exposure: bool = True  # the whole picture brighter or tinted (the webcam's exposure) is no change
    outline_match: float | None = 0.5  # a disk no change came near is carried only while its outline band still
                                       # looks as it did (normalised cross-correlation of the band's colours; a
                                       # dim disk on a cloth of its shade can leave its place without a change of
                                       # `level`); None: not checked
    outline_contrast: float = 6.0  # ... where the band shows this much colour spread (std, 0-255) in the reference

    def __post_init__(self) -> None:
        if not 1.0 <= self.level <= 255.0:
            raise ValueError("level must be within 1..255")
        if not 0 <= self.speck_px <= 15:
            raise ValueError("speck_px must be within 0..15")
        if not 0.0 <= self.margin_px <= 50.0:
            raise ValueError("margin_px must be within 0..50")
        if not 0.0 < self.max_changed <= 1.0:
            raise ValueError("max_changed must be within (0, 1]")
        if self.outline_match is not None and not -1.0 <= self.outline_match <= 1.0:
            raise ValueError("outline_match must be within -1..1 or None")
        if not self.outline_contrast >= 0:
            raise ValueError("outline_contrast must be >= 0")


DEFAULT_CHANGE = ChangeConfig()
STILL_FACE = 0.05   # share of a disk's face, or of its outline, that may change while what was measured there stands
PASTE_BAND_MM = 16  # a crop's maps are kept only this far inside its edges (the network's view ends there)


@dataclass(frozen=True)
class Reference:
    """What the last commit saw: the rectified frame (under each carried disk, the pixels it was measured on),
    its face / rim maps, and its fits, each with the committed scene's id and z as its seed (no id: the tracker
    dropped it)."""

    rect: np.ndarray
    fits: tuple[DiskFit, ...]
    maps: FaceMaps

    def __post_init__(self) -> None:
        if not isinstance(self.rect, np.ndarray) or self.rect.ndim != 3 or self.rect.dtype != np.uint8:
            raise ValueError("Reference.rect must be a rectified 8-bit colour image")
        if not all(isinstance(f, DiskFit) for f in self.fits):
            raise ValueError("Reference.fits must be DiskFits")


@dataclass(frozen=True)
class ChangedDetection:
    """A detection made where the table changed: the Detection, the reference frame for the next commit, the
    changed share of the frame, how many disks were carried over and in how many regions the detector ran."""

    detection: Detection
    reference_rect: np.ndarray
    changed_share: float
    carried: int
    regions: int


def reference_for(reference_rect: np.ndarray, detection: Detection, track_ids: Mapping[str, str],
                  committed: Scene) -> Reference:
    """The Reference after a commit: the detection's fits seeded with the ids and z the tracker committed."""
    z_of = {d.id: d.z for d in committed.disks}
    fits = []
    for f, d in zip(detection.fits, detection.scene.disks):
        tid = track_ids.get(d.id)
        fits.append(replace(f, seed_id=tid, seed_z=z_of.get(tid, d.z) if tid is not None else None))
    return Reference(reference_rect, tuple(fits), detection.maps)


def exposure_gain(rect: np.ndarray, reference: np.ndarray, change: ChangeConfig = DEFAULT_CHANGE
                  ) -> np.ndarray | None:
    """Per channel, how much brighter `rect` is than `reference` all over (the median ratio of the two, which the
    table's unchanged pixels, most of them, set), or None when that is within 2 % (or not asked for): a change of
    the whole picture's exposure or white balance (a webcam adjusting itself, a cloud) is not a change of the
    table."""
    if rect.ndim != 3 or not change.match_exposure:
        return None
    a = rect[::8, ::8].reshape(-1, 3).astype(np.float32)
    b = reference[::8, ::8].reshape(-1, 3).astype(np.float32)
    lit = (a.min(1) > 20) & (b.min(1) > 20)      # ratios of near-black pixels are noise
    if lit.sum() < 100:
        return None
    gain = np.median(a[lit] / b[lit], axis=0)
    return gain if np.abs(gain - 1.0).max() > 0.02 else None


def matched(reference: np.ndarray, gain: np.ndarray | None) -> np.ndarray:
    """`reference` brought to another exposure (`exposure_gain`)."""
    if gain is None:
        return reference
    return cv2.convertScaleAbs(reference.astype(np.float32) * gain.astype(np.float32).reshape(1, 1, 3))


def change_mask(rect: np.ndarray, reference: np.ndarray, change: ChangeConfig = DEFAULT_CHANGE) -> np.ndarray:
    """Half-resolution 0/1 map of where `rect` differs from `reference` (same shape, both rectified BGR), the
    reference first brought to the frame's exposure (`exposure_gain`)."""
    return _changed(rect, matched(reference, exposure_gain(rect, reference, change)), change)


def _changed(rect: np.ndarray, reference: np.ndarray, change: ChangeConfig) -> np.ndarray:
    """`change_mask` of a reference already at the frame's exposure."""
    a = cv2.resize(rect, None, fx=0.5, fy=0.5, interpolation=cv2.INTER_AREA)
    b = cv2.resize(reference, None, fx=0.5, fy=0.5, interpolation=cv2.INTER_AREA)
    d = cv2.absdiff(a, b)
    if d.ndim == 3:
        d = cv2.max(cv2.max(d[..., 0], d[..., 1]), d[..., 2])
    m = (d > change.level).astype(np.uint8)
    if change.speck_px > 0:
        k = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (change.speck_px, change.speck_px))
        m = cv2.morphologyEx(m, cv2.MORPH_OPEN, k)
    return m


def _face_still(mask: np.ndarray, fit: DiskFit, ppm: float) -> bool:
    """Next to nothing changed on the half-resolution change map over the disk's face (1.5 mm inside its outline)
    nor along its outline (1.5 mm either side): a dark disk taken off a dark cloth changes its face too little to
    show, its border all round."""
    h, w = mask.shape
    cx, cy = (fit.cx + 0.5) / 2 - 0.5, (fit.cy + 0.5) / 2 - 0.5
    r_in, r_out = (fit.r_px - 1.5 * ppm) / 2, (fit.r_px + 1.5 * ppm) / 2
    x0, y0 = max(int(cx - r_out) - 1, 0), max(int(cy - r_out) - 1, 0)
    x1, y1 = min(int(cx + r_out) + 2, w), min(int(cy + r_out) + 2, h)
    if r_in <= 1 or x1 <= x0 or y1 <= y0:
        return False
    y, x = np.ogrid[y0:y1, x0:x1]
    d2 = (x - cx) ** 2 + (y - cy) ** 2
    window = mask[y0:y1, x0:x1]
    face, outline = d2 <= r_in * r_in, (d2 > r_in * r_in) & (d2 <= r_out * r_out)
    return bool(face.any() and outline.any()) and float(window[face].mean()) < STILL_FACE \
        and float(window[outline].mean()) < STILL_FACE


OUTLINE_RAYS = 48                      # rays round a carried disk on which its outline band is compared...
OUTLINE_BAND_MM = (-3.0, -2.0, -1.0, 0.0, 1.0, 2.0)   # ... at these distances from its outline


def outline_kept(rect: np.ndarray, before: np.ndarray, fits: Sequence[DiskFit], ppm: float,
                 change: ChangeConfig = DEFAULT_CHANGE) -> np.ndarray:
    """For each disk, whether its outline band (3 mm inside to 2 mm outside its outline, on `OUTLINE_RAYS` rays)
    looks in `rect` as it did in `before` (both rectified BGR, at one exposure): the normalised cross-correlation
    of the band's colours reaches `change.outline_match`, or the band showed too little colour spread to tell
    (`outline_contrast`). A disk that left its place takes its cut edge with it, whatever the level of the colour
    step. All True when `outline_match` is None."""
    keep = np.ones(len(fits), bool)
    if change.outline_match is None or not len(fits):
        return keep
    ang = np.arange(OUTLINE_RAYS) * (2.0 * math.pi / OUTLINE_RAYS)
    cx, cy, r = (np.array([getattr(f, k) for f in fits], np.float64)[:, None, None] for k in ("cx", "cy", "r_px"))
    rho = r + np.asarray(OUTLINE_BAND_MM)[None, None, :] * ppm                      # (M, 1, T)
    mx = (cx + rho * np.cos(ang)[None, :, None]).astype(np.float32).reshape(len(fits), -1)
    my = (cy + rho * np.sin(ang)[None, :, None]).astype(np.float32).reshape(len(fits), -1)
    a, b = (cv2.remap(img, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE).astype(np.float32)
            for img in (before, rect))                                              # (M, K * T, 3)
    a -= a.mean(1, keepdims=True)
    b -= b.mean(1, keepdims=True)
    aa, bb = (a * a).sum((1, 2)), (b * b).sum((1, 2))
    spread = np.sqrt(aa / (a.shape[1] * a.shape[2]))
    ncc = (a * b).sum((1, 2)) / (np.sqrt(aa * bb) + 1e-6)
    return (spread < change.outline_contrast) | (ncc >= change.outline_match)


def _near_change(mask: np.ndarray, slack: float) -> Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """Whether circles (x, y, r; full-resolution px) come within `slack` px of a change of the half-resolution
    `mask`: the distance from their centre to the nearest change under their radius plus the slack."""
    if not mask.any():
        return lambda x, y, r: np.zeros(np.shape(x), bool)
    dist = cv2.distanceTransform((1 - mask).astype(np.uint8), cv2.DIST_L2, cv2.DIST_MASK_PRECISE) * 2.0
    h2, w2 = dist.shape

    def near(x: np.ndarray, y: np.ndarray, r: np.ndarray) -> np.ndarray:
        ix = np.clip((np.asarray(x) / 2.0).astype(int), 0, w2 - 1)
        iy = np.clip((np.asarray(y) / 2.0).astype(int), 0, h2 - 1)
        return dist[iy, ix] <= np.asarray(r) + slack
    return near


def _boxes(mask: np.ndarray, grow: int, shape: tuple[int, ...]) -> list[tuple[int, int, int, int]]:
    """Full-resolution (x0, y0, x1, y1) around every changed blob, grown by `grow` px, overlapping ones merged."""
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    h, w = shape[:2]
    boxes = []
    for c in contours:
        x, y, bw, bh = cv2.boundingRect(c)
        boxes.append([max(0, 2 * x - grow), max(0, 2 * y - grow), min(w, 2 * (x + bw) + grow),
                      min(h, 2 * (y + bh) + grow)])
    merged = True
    while merged:
        merged = False
        for i in range(len(boxes)):
            for j in range(i + 1, len(boxes)):
                a, b = boxes[i], boxes[j]
                if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]:
                    boxes[i] = [min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])]
                    del boxes[j]
                    merged = True
                    break
            if merged:
                break
    return [tuple(b) for b in boxes]  # type: ignore[misc]


def detect_changed(rect: np.ndarray, calibration: Any, sizes: DiskSizes, previous: Scene, reference: Reference,
                   config: DetectorConfig = DEFAULT_CONFIG, change: ChangeConfig = DEFAULT_CHANGE,
                   arrival: ArrivalConfig | None = DEFAULT_ARRIVAL) -> ChangedDetection | None:
    """Disks of a rectified frame, detected again only where it differs from `reference`; None when the change is
    more than `change.max_changed` of the frame or the frame does not match the reference (detect it all).
    `arrival`: what a disk seen arriving wholly on a resting one must show (`vision.arrival`; None: not looked
    for)."""
    if reference.rect.shape != rect.shape:
        return None
    before = matched(reference.rect, exposure_gain(rect, reference.rect, change))   # at this frame's exposure
    mask = _changed(rect, before, change)
    share = float(mask.mean())
    if share > change.max_changed:
        return None
    ppm = px_per_mm(calibration)
    scale = map_scale(ppm, network_px_per_mm(sizes, config))
    step = int(round(scale)) if abs(scale - round(scale)) < 1e-9 else 0
    if step < 1:
        return None   # crops must lie on the maps' grid
    slack = change.margin_px + 1.5   # the half-resolution distance map is good to a px
    near = _near_change(mask, slack)

    def touched(f: DiskFit) -> bool:
        return bool(near(np.array([f.cx]), np.array([f.cy]), np.array([f.r_px]))[0])

    # A disk no change came near whose outline no longer looks as it did left its place below the change's level
    # (a dim disk on a cloth of its shade): its place is measured again, as a change would have it. `mask` stays
    # what the pixels say (the arrivals read it).
    resting = [f for f in reference.fits if not touched(f)]
    gone = [f for f, kept in zip(resting, outline_kept(rect, before, resting, ppm, change)) if not kept]
    redo_mask = mask
    if gone:
        redo_mask = mask.copy()
        for f in gone:
            cv2.circle(redo_mask, (int(round((f.cx - 0.5) / 2.0)), int(round((f.cy - 0.5) / 2.0))),
                       int(math.ceil(f.r_px / 2.0)), 1, -1)
        near = _near_change(redo_mask, slack)
    carried = [f for f in reference.fits if not touched(f)] if gone else resting
    redo = [f for f in reference.fits if touched(f)]
    fits = list(carried)
    carried_ids = {f.seed_id for f in carried if f.seed_id is not None}
    rx = np.array([f.cx for f in redo])
    ry = np.array([f.cy for f in redo])

    def wanted(x: np.ndarray, y: np.ndarray, r: np.ndarray) -> np.ndarray:
        """Circles touching the change, and the disks measured again because they did (a px from their place
        they might just miss it)."""
        out = near(x, y, r)
        if len(rx):
            out |= (np.hypot(np.asarray(x)[:, None] - rx[None, :], np.asarray(y)[:, None] - ry[None, :])
                    < 4.0).any(1)
        return out

    boxes: list[tuple[int, int, int, int]] = []
    face, rim, height = reference.maps.face.copy(), reference.maps.rim.copy(), reference.maps.height.copy()
    if redo_mask.any():
        r_max = max(sizes.radius(s) for s in SIZE_CLASSES) * ppm
        # Every disk touching a change lies wholly within 2 radii and the margin of it, and the rim look reaches
        # a few px beyond a rim.
        boxes = _boxes(redo_mask, int(math.ceil(2.0 * r_max + slack + 8.0)), rect.shape)
        seeds = seeds_from(previous, calibration, sizes)
        bx0, by0, bx1, by1 = battlefield_px(calibration)
        for x0, y0, x1, y1 in boxes:
            # crops start on the maps' grid, so their maps paste into the whole frame's
            x0, y0 = x0 - x0 % step, y0 - y0 % step
            crop = np.ascontiguousarray(rect[y0:y1, x0:x1])
            local = [replace(s, cx=s.cx - x0, cy=s.cy - y0) for s in seeds
                     if x0 <= s.cx < x1 and y0 <= s.cy < y1]
            # Circles are looked for and measured only where they would touch the change; the disks around it
            # come as seeds, so the changed ones are judged knowing what lies on or beside them.
            found, crop_maps = detect_disks(crop, sizes, ppm, seeds=local, config=config,
                                            battlefield_px=(bx0 - x0, by0 - y0, bx1 - x0, by1 - y0),
                                            where=lambda x, y, r, x0=x0, y0=y0: wanted(x + x0, y + y0, r))
            # the crop's maps replace the kept ones, but for a band along its inner edges (the network saw no
            # context beyond them); a crop edge on the frame's edge is the frame's edge
            u0, v0 = x0 // step, y0 // step
            mh, mw = min(crop_maps.shape[0], face.shape[0] - v0), min(crop_maps.shape[1], face.shape[1] - u0)
            band = int(PASTE_BAND_MM * ppm / step)
            a0 = 0 if u0 == 0 else band
            b0 = 0 if v0 == 0 else band
            a1 = mw if u0 + mw >= face.shape[1] else mw - band
            b1 = mh if v0 + mh >= face.shape[0] else mh - band
            if a1 > a0 and b1 > b0:
                face[v0 + b0:v0 + b1, u0 + a0:u0 + a1] = crop_maps.face[b0:b1, a0:a1]
                rim[v0 + b0:v0 + b1, u0 + a0:u0 + a1] = crop_maps.rim[b0:b1, a0:a1]
                height[v0 + b0:v0 + b1, u0 + a0:u0 + a1] = crop_maps.height[b0:b1, a0:a1]
            for f in found:
                f = replace(f, cx=f.cx + x0, cy=f.cy + y0)
                # Disks away from the change are carried (or, cut by the crop's edge, not seen whole here).
                if not wanted(np.array([f.cx]), np.array([f.cy]), np.array([f.r_px]))[0]:
                    continue
                if any(o.size == f.size and math.hypot(o.cx - f.cx, o.cy - f.cy) < 0.25 * o.r_px for o in fits):
                    continue
                if f.seed_id in carried_ids:
                    f = replace(f, seed_id=None, seed_z=None)
                fits.append(f)
    # A disk lying on another, measured again because a change came near it and not found again, whose own face
    # did not change: what was measured there stands (a small disk seen arriving on a larger one is too faint for
    # one frame's eye). A disk on the table is the eye's to find again: one it no longer finds was a mistake.
    found_ids = {f.seed_id for f in fits if f.seed_id is not None}
    fits += [f for f in redo if f.seed_id is not None and f.seed_id not in found_ids and (f.seed_z or 0) > 0
             and _face_still(redo_mask, f, ppm)
             and not any(o.size == f.size and math.hypot(o.cx - f.cx, o.cy - f.cy) < 0.5 * f.r_px for o in fits)]
    if arrival is not None and mask.any():
        radii = {s: sizes.radius(s) * ppm for s in SIZE_CLASSES}
        faint = None if arrival.level is None or arrival.level == change.level else \
            _changed(rect, before, replace(change, level=arrival.level))
        fits += arrived_disks(mask, fits, reference.fits, radii, rect, before,
                              FaceMaps(face=face, rim=rim, height=height), scale, ppm, config, arrival, faint)
    detection = finish_detection(FaceMaps(face=face, rim=rim, height=height), fits, rect, calibration, sizes,
                                 previous, config, unchanged=[k < len(carried) for k in range(len(fits))])
    # The next commit compares with the pixels each disk was measured on: the new frame, except under the
    # disks carried over, which keep the reference's pixels (at the new frame's exposure).
    ref_rect = rect.copy()
    if carried:
        keep = np.zeros(rect.shape[:2], np.uint8)
        for f in carried:
            cv2.circle(keep, (int(round(f.cx)), int(round(f.cy))), int(math.ceil(f.r_px + slack)), 1, -1)
        cv2.copyTo(before, keep, ref_rect)
    return ChangedDetection(detection, ref_rect, share, len(carried), len(boxes))

