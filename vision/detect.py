"""The eye: from a rectified frame to the Scene — face, rim and height maps, circles of the calibrated radii, which
lies on which, table millimetres.

    vision.facemap     the learned face / rim / height maps of the rectified frame (the only look-dependent step)
    vision.candidates  circles of the calibrated radii where the rim map shows enough outline
    vision.verdict     the learned judgement of a measured circle: how likely it is a disk
    vision.fit         sub-pixel circles of the calibrated radii on the rim map
    vision.accept      which circles are disks: the verdict on what they explain
    vision.locate      the whole geometric step, centres refined on the image
    vision.nestjudge   is a circle within a disk a disk lying on it, or a ring in its art: the image asked again
    vision.lonejudge   is a face-less circle whose outline shows whole a chip, or a round spot of the cloth
    vision.isolate     circles the image's edges vote for, read by the network one window each (fields of chips)
    vision.stacking    which disk lies on which: outline evidence in each overlap lens, face heights, history
    vision.ruler       where the range ruler lies (no disk is read on it when the table is read at another scale)
    vision.detect      this module: the steps in order, history seeds, table mm and the Scene

The rectified image is a top-down map of the table (`calibration.rectify`, 1 px/mm by default), so every disk is a
circle of one of the calibrated radii. `detect_frame` is the single-frame entry point the evaluation harness and
`tablesight detect` call; the live table calls `locate_disks` and, where only part of the table changed,
`detect_disks` on crops and `finish_detection` over the whole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import cv2
import numpy as np

from tablesight.errors import InputError
from tablesight.scene import SIZE_CLASSES, Disk, Scene
from vision.candidates import Seed
from vision.facemap import STRIDE, TRAINED_DIAMETERS_MM, FaceMaps, face_maps
from vision.fit import DEFAULT_CONFIG, DetectorConfig, DiskFit
from vision.isolate import confirmed_alone, edge_circles
from vision.locate import lone_circles, locate_in_maps, peaks_of
from vision.lonejudge import confirmed_lone
from vision.nestjudge import confirmed_nests
from vision.refine import align_centres, rays_over_lower
from vision.ruler import RulerStrip, find_ruler
from vision.sizes import DiskSizes
from vision.stacking import order_stacks, overlaps, separate_touching

# ---------------------------------------------------------------------------------------------------------------
# Calibration access: the eye only needs the rectified image and the pixel <-> table mm mapping.


def rectified_frame(frame_bgr: Any, calibration: Any) -> np.ndarray:
    """Check the frame and rectify it; bad frames raise InputError with the reason."""
    if frame_bgr is None or not isinstance(frame_bgr, np.ndarray) or frame_bgr.size == 0:
        raise InputError("empty frame")
    if frame_bgr.ndim == 2:
        frame_bgr = cv2.cvtColor(frame_bgr, cv2.COLOR_GRAY2BGR)
    if frame_bgr.ndim != 3 or frame_bgr.shape[2] not in (3, 4):
        raise InputError(f"frame: expected a colour image, got shape {frame_bgr.shape}")
    if frame_bgr.shape[2] == 4:
        frame_bgr = cv2.cvtColor(frame_bgr, cv2.COLOR_BGRA2BGR)
    if frame_bgr.dtype != np.uint8:
        raise InputError(f"frame: expected 8-bit pixels, got {frame_bgr.dtype}")
    check = getattr(calibration, "check_frame", None)
    if check is not None:
        check(frame_bgr)
    rect = calibration.rectify(frame_bgr)
    if rect is None or rect.size == 0:
        raise InputError("frame: rectification gave an empty image")
    return rect


def px_per_mm(calibration: Any) -> float:
    return float(getattr(calibration, "rectified_px_per_mm", 1.0) or 1.0)


def rect_to_table(calibration: Any, pts: np.ndarray) -> np.ndarray:
    pts = np.asarray(pts, dtype=np.float64).reshape(-1, 2)
    fn = getattr(calibration, "rectified_to_table", None)
    if fn is not None:
        return np.asarray(fn(pts), dtype=np.float64).reshape(-1, 2)
    ox, oy = getattr(calibration, "rectified_origin_mm", (-40.0, -40.0))
    return pts / px_per_mm(calibration) + np.array([ox, oy])


def table_to_rect(calibration: Any, pts: np.ndarray) -> np.ndarray:
    pts = np.asarray(pts, dtype=np.float64).reshape(-1, 2)
    fn = getattr(calibration, "table_to_rectified", None)
    if fn is not None:
        return np.asarray(fn(pts), dtype=np.float64).reshape(-1, 2)
    ox, oy = getattr(calibration, "rectified_origin_mm", (-40.0, -40.0))
    return (pts - np.array([ox, oy])) * px_per_mm(calibration)


def battlefield_px(calibration: Any) -> tuple[float, float, float, float]:
    """The battlefield's (x0, y0, x1, y1) in rectified px."""
    ppm = px_per_mm(calibration)
    ox, oy = getattr(calibration, "rectified_origin_mm", (-40.0, -40.0))
    bw, bh = getattr(calibration, "battlefield_mm", (900.0, 900.0))
    return (-ox * ppm, -oy * ppm, (bw - ox) * ppm, (bh - oy) * ppm)


def sizes_for(calibration: Any, diameters_mm: Any = None) -> DiskSizes:
    """The disk sizes to look for: given ones, else those measured at calibration, else the defaults."""
    if diameters_mm is None and getattr(calibration, "disk_diameters_mm", None):
        diameters_mm = calibration.disk_diameters_mm
    return DiskSizes.coerce(diameters_mm)


# ---------------------------------------------------------------------------------------------------------------
# Maps and disks


def network_px_per_mm(sizes: DiskSizes, config: DetectorConfig = DEFAULT_CONFIG) -> float:
    """The scale (px per mm) the face network reads the table at: `config.network_px_per_mm` (1, where it learned)
    unless that shows the disks outside the diameters it learned (`TRAINED_DIAMETERS_MM`): then the nearest scale
    that brings them in, small chips shown larger (their smallest size at the smallest it learned) and very large
    disks smaller; where no scale brings all of them in, the small ones are kept in range. Chips all of one size
    are shown at least `config.one_size_mm` across: at the very edge of the learned range a field of them reads to
    the network as a cloth's pattern."""
    preferred, one_size_mm = config.network_px_per_mm, config.one_size_mm
    lo, hi = TRAINED_DIAMETERS_MM
    if one_size_mm is not None and sizes.small == sizes.large:
        lo = max(lo, min(one_size_mm, hi))
    least, most = lo / sizes.small, hi / sizes.large
    return min(max(preferred, least), most) if least <= most else least


def maps_of(rect: np.ndarray, px_per_mm_: float, config: DetectorConfig = DEFAULT_CONFIG,
            network_ppm: float = 1.0) -> FaceMaps:
    """The face / rim maps of a rectified image; the network reads `network_ppm` px/mm, so other scales are
    resampled."""
    img = rect
    ratio = px_per_mm_ / network_ppm
    if abs(ratio - 1.0) > 1e-6:
        h, w = rect.shape[:2]
        img = cv2.resize(rect, (max(1, int(round(w / ratio))), max(1, int(round(h / ratio)))),
                         interpolation=cv2.INTER_AREA if ratio > 1 else cv2.INTER_LINEAR)
    return face_maps(img, config.model_path, config.map_views)


def map_scale(px_per_mm_: float, network_ppm: float = 1.0) -> float:
    """Rectified px per map px (the network reading the table at `network_ppm` px/mm)."""
    return STRIDE * px_per_mm_ / network_ppm


def seeds_from(previous: Scene | None, calibration: Any, sizes: DiskSizes) -> list[Seed]:
    """The previous scene's disks as candidates (rectified px)."""
    if previous is None or not previous.disks:
        return []
    pts = table_to_rect(calibration, np.array([[d.x_mm, d.y_mm] for d in previous.disks]))
    seeds = []
    for d, (x, y) in zip(previous.disks, pts):
        size = sizes.canonical(d.size or min(SIZE_CLASSES, key=lambda s: abs(sizes.radius(s) - d.radius_mm)))
        seeds.append(Seed(float(x), float(y), SIZE_CLASSES.index(size), d.id, d.z))
    return seeds


def detect_disks(rect: np.ndarray, sizes: DiskSizes, px_per_mm_: float = 1.0, seeds: Sequence[Seed] = (),
                 config: DetectorConfig = DEFAULT_CONFIG,
                 battlefield_px: tuple[float, float, float, float] | None = None,
                 where: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None
                 ) -> tuple[list[DiskFit], FaceMaps]:
    """Disks in a rectified BGR image (or a crop of one), and the maps they were read from. `seeds`: the previous
    scene's disks; `battlefield_px` and `where`: see `vision.locate.locate_in_maps`."""
    net = network_px_per_mm(sizes, config)
    maps = maps_of(rect, px_per_mm_, config, net)
    radii = [sizes.radius(s) * px_per_mm_ for s in SIZE_CLASSES]
    scale = map_scale(px_per_mm_, net)
    peaks = peaks_of(maps, radii, scale, config)
    fits = locate_in_maps(maps, rect, radii, scale, net / STRIDE, seeds, config, battlefield_px, where, peaks=peaks)
    fits = confirmed_lone(rect, fits, lone_circles(maps, rect, fits, radii, scale, net / STRIDE, config,
                                                   battlefield_px, where, peaks=peaks), px_per_mm_, config)
    fits = confirmed_alone(rect, fits, radii, px_per_mm_, net, config, battlefield_px, where)
    return confirmed_nests(rect, fits, px_per_mm_, config), maps


def disk_centres_mm(fits: Sequence[DiskFit], z: Sequence[int], calibration: Any,
                    disk_thickness_mm: float = DEFAULT_CONFIG.disk_thickness_mm) -> np.ndarray:
    """Table mm of the fits' centres, corrected for the parallax of each disk's top ((z + 1) thicknesses up)."""
    if not fits:
        return np.zeros((0, 2))
    centres = rect_to_table(calibration, np.array([[f.cx, f.cy] for f in fits]))
    if disk_thickness_mm > 0:
        from vision.parallax import camera_position

        cam = camera_position(calibration)
        if cam is not None:
            heights = (np.asarray(z, np.float64) + 1.0) * disk_thickness_mm
            centres = cam.correct(centres, heights)
    return centres


def fits_to_scene(fits: Sequence[DiskFit], z: Sequence[int], calibration: Any, sizes: DiskSizes,
                  previous: Scene | None = None, uncertain_pairs: Sequence[tuple[int, int]] = (),
                  confidences: Sequence[float] | None = None,
                  disk_thickness_mm: float = DEFAULT_CONFIG.disk_thickness_mm) -> Scene:
    """Build the Scene (table mm) from fits in rectified px; ids continue the previous scene where seeded."""
    centres = disk_centres_mm(fits, z, calibration, disk_thickness_mm)
    taken = {f.seed_id for f in fits if f.seed_id is not None}
    if previous is not None:
        taken |= {d.id for d in previous.disks}
    counter = 1
    ids = []
    for f in fits:
        if f.seed_id is not None:
            ids.append(f.seed_id)
            continue
        while f"d{counter}" in taken:
            counter += 1
        ids.append(f"d{counter}")
        taken.add(f"d{counter}")
    players = previous.players if previous is not None else ()
    prev_by_id = {d.id: d for d in previous.disks} if previous is not None else {}
    disks = []
    for k, (f, (x, y)) in enumerate(zip(fits, centres)):
        prev = prev_by_id.get(ids[k])
        conf = confidences[k] if confidences is not None else f.confidence
        disks.append(Disk(
            id=ids[k], x_mm=float(x), y_mm=float(y), radius_mm=sizes.radius(f.size), z=int(z[k]),
            player=prev.player if prev is not None else None, size=f.size,
            unit=prev.unit if prev is not None else None, confidence=round(float(conf), 4),
            extra={"rim_visible": round(f.rim_fraction, 3),
                   "ring_bgr": [int(round(c)) for c in f.ring_bgr]},
        ))
    extra: dict[str, Any] = {}
    if uncertain_pairs:
        extra["uncertain_pairs"] = [sorted([ids[a], ids[b]]) for a, b in uncertain_pairs]
    suspected = suspected_disks(fits, z, ids, calibration, sizes, disk_thickness_mm)
    if suspected:
        extra["suspected_disks"] = suspected
    base = previous if previous is not None else Scene()
    return replace(base, disks=tuple(disks), players=players,
                   extra={**{k: v for k, v in base.extra.items() if k not in ("uncertain_pairs", "suspected_disks")},
                          **extra})


def suspected_disks(fits: Sequence[DiskFit], z: Sequence[int], ids: Sequence[str], calibration: Any,
                    sizes: DiskSizes, disk_thickness_mm: float = DEFAULT_CONFIG.disk_thickness_mm
                    ) -> list[dict[str, Any]]:
    """The scene extra `suspected_disks`: for each disk with a `DiskFit.suspect`, where a disk may lie on it
    (`{"on", "x_mm", "y_mm", "radius_mm", "size", "probability"}`, its top one thickness above the disk's), unless a
    disk of that size was found there after all."""
    out = []
    for k, f in enumerate(fits):
        s = f.suspect
        if s is None or any(o.size == s.size and math.hypot(o.cx - s.cx, o.cy - s.cy) < 0.5 * s.r_px for o in fits):
            continue
        (x, y), = disk_centres_mm([replace(f, cx=s.cx, cy=s.cy)], [int(z[k]) + 1], calibration, disk_thickness_mm)
        out.append({"on": ids[k], "x_mm": round(float(x), 1), "y_mm": round(float(y), 1),
                    "radius_mm": sizes.radius(s.size), "size": s.size, "probability": s.probability})
    return out


@dataclass(frozen=True, eq=False)
class Detection:
    """One detection: the Scene, the fits it was built from (rectified px, in the scene's disk order) and the maps
    they were read from (kept by the live table: a later commit detects again only where the table changed)."""

    scene: Scene
    fits: tuple[DiskFit, ...]
    maps: FaceMaps

    def __post_init__(self) -> None:
        if len(self.fits) != len(self.scene.disks):
            raise ValueError("a Detection needs one fit per scene disk")


def _aligned_over_lower(rect: np.ndarray, fits: list[DiskFit], z: Sequence[int], ppm: float, config: DetectorConfig,
                        unchanged: Sequence[bool] | None) -> list[DiskFit]:
    """The disks lying over others aligned on the image again, now with their outline over the disks under them
    (`vision.refine.rays_over_lower`); fits carried over unchanged keep their centres."""
    if not config.align or len(fits) < 2:
        return fits
    x, y, r = (np.array([getattr(f, k) for f in fits]) for k in ("cx", "cy", "r_px"))
    usable, over = rays_over_lower(x, y, r, np.asarray(z), config.explain_mm * ppm, config.rays)
    if unchanged is not None:
        over &= ~np.asarray(unchanged, bool)
    if not over.any():
        return fits
    k = np.nonzero(over)[0]
    ax, ay = align_centres(rect, x[k], y[k], r[k], usable[k])
    # the order was read for the pairs that overlap (`vision.stacking.overlaps`): a move that would make a pair of
    # them, or undo one, is not taken (a disk in contact, nudged a fraction of a mm onto its neighbour, would pin
    # it unjudged); two disks moved are checked against each other as they end up
    tx, ty = x.copy(), y.copy()
    tx[k], ty[k] = ax, ay
    first = overlaps(x, y, r)
    move = over.copy()
    while True:     # each round undoes at least one move, so it ends
        nx, ny = np.where(move, tx, x), np.where(move, ty, y)
        changed = move & (overlaps(nx, ny, r) != first).any(1)
        if not changed.any():
            break
        move &= ~changed
    out = list(fits)
    for i in np.nonzero(move)[0]:
        out[i] = replace(fits[i], cx=float(nx[i]), cy=float(ny[i]))
    return out


def finish_detection(maps: FaceMaps, fits: Sequence[DiskFit], rect: np.ndarray, calibration: Any, sizes: DiskSizes,
                     previous: Scene | None, config: DetectorConfig = DEFAULT_CONFIG,
                     unchanged: Sequence[bool] | None = None) -> Detection:
    """Stacking order of the fits (outline evidence of the maps and of the rectified image `rect`, and their
    history), weak new circles dropped, disks in contact moved apart: the Detection. `unchanged`: fits carried over
    with nothing changed around them (their pairs keep the previous order)."""
    ppm = px_per_mm(calibration)
    scale = map_scale(ppm, network_px_per_mm(sizes, config))
    guessed = frozenset(frozenset(p) for p in (previous.extra.get("uncertain_pairs") or ())) \
        if previous is not None else frozenset()
    fits = list(fits)
    flags = None if unchanged is None else list(unchanged)
    order = order_stacks(maps, fits, scale, ppm, uncertain_before=guessed, unchanged=flags, image=rect)
    # A weak new circle is more often art or texture than a disk (one the previous scene had here is kept);
    # the order is taken again without it, so no pair refers to a dropped disk.
    keep = [k for k, f in enumerate(fits) if order.confidences[k] >= config.min_confidence
            or f.seed_id is not None or f.rim_fraction >= config.keep_rim_fraction]
    if len(keep) < len(fits):
        fits = [fits[k] for k in keep]
        flags = None if flags is None else [flags[k] for k in keep]
        order = order_stacks(maps, fits, scale, ppm, uncertain_before=guessed, unchanged=flags, image=rect)
    fits = _aligned_over_lower(rect, fits, order.z, ppm, config, flags)
    fits = separate_touching(fits, order.touching)
    scene = fits_to_scene(fits, order.z, calibration, sizes, previous, order.uncertain_pairs, order.confidences,
                          config.disk_thickness_mm)
    return Detection(scene, tuple(fits), maps)


def _off_the_ruler(calibration: Any, ruler: RulerStrip) -> Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """`locate_in_maps`' `where`: the circles (rectified px) whose centre does not lie on the ruler."""
    return lambda x, y, r: ~ruler.contains(rect_to_table(calibration, np.stack([x, y], axis=1)))


def locate_disks(rect: np.ndarray, calibration: Any, sizes: DiskSizes, previous: Scene | None = None,
                 config: DetectorConfig = DEFAULT_CONFIG, passes: int = 1, ruler: RulerStrip | None = None
                 ) -> Detection:
    """Disks of the whole rectified frame, seeded by `previous`, stacked and placed: the Detection. With `passes`
    2 the maps are read again seeded by the first pass: a disk seen only in part, missed at first, is judged
    again knowing the disks around it (the network runs once). `ruler`: where the range ruler lies; when the
    network reads the table at another scale than it learned, no new disk is read centred on it
    (`vision.ruler`)."""
    if not 1 <= passes <= 3:
        raise ValueError("passes must be within 1..3")
    ppm = px_per_mm(calibration)
    net = network_px_per_mm(sizes, config)
    maps = maps_of(rect, ppm, config, net)
    radii = [sizes.radius(s) * ppm for s in SIZE_CLASSES]
    where = None if ruler is None or net == 1.0 else _off_the_ruler(calibration, ruler)
    detection: Detection | None = None
    scale = map_scale(ppm, net)
    peaks = peaks_of(maps, radii, scale, config)       # the seeds change from pass to pass, the maps do not
    edges = edge_circles(rect, radii, config.isolate_votes, config.isolate_most) \
        if config.isolate_face is not None else None    # nor do the image's edges
    for _ in range(passes):
        seeds_of = previous if detection is None else detection.scene
        fits = locate_in_maps(maps, rect, radii, scale, net / STRIDE, seeds_from(seeds_of, calibration, sizes),
                              config, battlefield_px(calibration), where, peaks=peaks)
        fits = confirmed_lone(rect, fits, lone_circles(maps, rect, fits, radii, scale, net / STRIDE, config,
                                                       battlefield_px(calibration), where, peaks=peaks), ppm, config)
        fits = confirmed_alone(rect, fits, radii, ppm, net, config, battlefield_px(calibration), where, edges)
        fits = confirmed_nests(rect, fits, ppm, config)
        detection = finish_detection(maps, fits, rect, calibration, sizes, seeds_of, config)
    assert detection is not None
    return detection


def detect_rectified(rect: np.ndarray, calibration: Any, sizes: DiskSizes, previous: Scene | None = None,
                     config: DetectorConfig = DEFAULT_CONFIG) -> Scene:
    """`detect_frame` on an image already rectified with `calibration` (the live pipeline rectifies once)."""
    return locate_disks(rect, calibration, sizes, previous, config).scene


def detect_frame(frame_bgr: Any, calibration: Any, diameters_mm: Any = None, previous: Scene | None = None,
                 config: DetectorConfig = DEFAULT_CONFIG) -> Scene:
    """Disks of the calibrated sizes in one camera frame -> Scene (table mm, z from outline evidence + history).

    `diameters_mm`: a DiskSizes, {small, medium, large} mapping or (S, M, L); default: the calibration's
    measured diameters, else 44/64/89. `previous`: the last scene, which seeds partly covered disks, keeps their
    ids and settles stacking pairs the frame cannot. Raises InputError for an empty or corrupt frame, one whose
    size does not match the calibration, or a missing model file.
    """
    sizes = sizes_for(calibration, diameters_mm)
    rect = rectified_frame(frame_bgr, calibration)
    net = network_px_per_mm(sizes, config)
    ruler = find_ruler(frame_bgr, calibration) if net != 1.0 else None
    return locate_disks(rect, calibration, sizes, previous, config, ruler=ruler).scene
