"""Why the eye misses the disks it misses: each missed disk (>= 50 % visible) traced to the step that lost it.

    .venv/bin/python benchmarks/miss_modes.py [--seeds tuning|gate] [--tier standard|hard|piled|alike|heaped]
                                              [--frames 6] [--family NAME ...] [--out benchmarks/results/misses.md]
                                              [--model NET.onnx --verdict VERDICT.json]
                                              [--network-px-per-mm S]
    .venv/bin/python benchmarks/miss_modes.py --folder DIR [--disk-diameters-mm 44,64,89] [--intrinsics camera.json]

Frames: the tuning seeds of `benchmarks/tune_eye.py`'s families (`--seeds tuning`, where the eye's settings are
chosen), or the gate seeds of `benchmarks/eval_families.py` (`--seeds gate`: for reporting only, never for
choosing), calibrated exactly; or (`--folder`) frames of any source with their true scenes beside them, as
`benchmarks/eval_cli.py` reads them (`FRAME.jpg` with `FRAME.scene.json`), each calibrated by `tablesight
calibrate` as the command line runs it and grouped by look (the name less its trailing digits): the foreign
frames, for looking at failures only. Each true disk the eye misses is put in the first of these that holds:

- `another size there`: a disk of another size class was found on its centre (most often a small disk lying
  nearly concentric on a larger one: only the larger is found);
- `found, then dropped`: a circle of its size was accepted there, and stacking dropped it (weak confidence);
- `rejected, outline read off`: a circle of its size was judged near it but measured more than 3 mm off its
  centre (another outline pulled the fit), and the verdict said no;
- `rejected by the verdict`: judged within 3 mm of its centre, the verdict's probability below the threshold (and,
  for a suspicion, the nest judge's below its own: `vision.nestjudge`, asked here as the single frame asks it);
- `never judged`: a candidate circle was there, but too little outline or face inside it to be judged at all;
- `inside not a face`: the rim map's ring votes make a candidate of its size there, but the face map does not
  mark its inside as a face, and a circle whose inside is no face is none (`DetectorConfig.min_face`) unless the
  lone judge takes it (`vision.lonejudge`, asked here as the single frame asks it);
- `no candidate`: the rim map shows too little of its outline for a candidate of its size.

Each mode also counts how many of its disks lie on another disk (some of its face over a lower disk: a true
scene's `z` may be a stack's level or, as in the foreign frames, an order over the whole table). Phantoms are not
traced here (see `families.md` for precision).

A second table asks whether the maps show the commonest miss, a smaller disk lying within a larger one: along the
outline of each such disk (found or missed), the rim map's median, and the height map's step from its inside to
the ring just outside it; against the same for circles of each smaller size at the centre of lone disks, where
printed art puts its rings (nothing lies there, so whatever the maps show there is what a ring in art gives).

Two more tables say where the misses fall and what they cost. Recall of disks >= 50 % visible by size and by how
much of each lies over lower disks (its face sampled on a grid against the lower disks' circles): clear of others,
under 30 %, 30-70 %, 70-99 %, wholly. And each true pin (`rules.diskwars.report`) the detected scene lacks, by
cause: the upper disk (the pinner) not found, the lower one not found, neither, both found but read the other way
up, both found and no pin between them.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import tempfile
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

COVER_BANDS = ("clear of others", "under 30 %", "30-70 %", "70-99 %", "wholly")
PIN_CAUSES = ("pinner not found", "pinned not found", "neither found", "read the other way up", "both found, no pin")
MODES = ("another size there", "found, then dropped", "rejected, outline read off", "rejected by the verdict",
         "never judged", "inside not a face", "no candidate")
OFF_MM = 3.0  # a judged circle farther than this from the true centre was pulled by another outline


def frames(seeds: str, tier: str, count: int, families: list[str] | None):
    """(family, setup, camera) of the frames asked for."""
    if seeds == "tuning":
        from tune_eye import tuning_frames

        if tier == "hard":
            raise SystemExit("miss_modes: --tier hard is read on the gate seeds only (--seeds gate)")
        for family, setup, camera in tuning_frames(count, tier):
            if families is None or family in families:
                yield family, setup, camera
        return
    from eval_families import frames_of
    from vision.synth.world import FAMILIES

    for family in families or ["classic", *FAMILIES]:
        for setup, camera in frames_of(family, count, tier):
            yield family, setup, camera


def folder_frames(folder: Path, diameters: tuple[float, float, float], intrinsics: Path | None, tmp: Path):
    """(look, image, true scene, calibration) of each frame of a folder, calibrated by `tablesight calibrate`; a
    frame it cannot calibrate is said on stderr and left out."""
    import cv2
    from eval_cli import calibrate, frames_of, truth_scene

    from calibration.table import TableCalibration

    for img, truth_path in frames_of(folder):
        cal_path = tmp / f"{img.stem}.table.json"
        failure = calibrate(img, cal_path, intrinsics)
        if failure is not None:
            print(f"miss_modes: {failure}", file=sys.stderr)
            continue
        yield (re.sub(r"\d+$", "", img.stem), cv2.imread(str(img)), truth_scene(truth_path, diameters),
               TableCalibration.load(cal_path))


NESTED = ("found, lying within a larger disk", "missed, lying within a larger disk",
          "a ring at a lone disk's centre (no disk there)")


def _map_point(cal, scale: float, disk) -> tuple[float, float]:
    """A true disk's centre in map px."""
    from vision.detect import table_to_rect

    x, y = table_to_rect(cal, np.array([[disk.x_mm, disk.y_mm]]))[0]
    return (x + 0.5) / scale - 0.5, (y + 0.5) / scale - 0.5


def _rim_and_step(maps, u: float, v: float, r: float, outer: float) -> tuple[float, float]:
    """The rim map's median along the circle (u, v, r) and the height map's mean inside 0.6 r less its mean in the
    ring from 1.25 r to `outer` (map px)."""
    t = np.linspace(0.0, 2.0 * np.pi, 72, endpoint=False)
    h, w = maps.rim.shape
    xs = np.clip(np.round(u + r * np.cos(t)).astype(int), 0, w - 1)
    ys = np.clip(np.round(v + r * np.sin(t)).astype(int), 0, h - 1)
    yy, xx = np.mgrid[0:h, 0:w]
    d = np.hypot(xx - u, yy - v)
    inside, ring = maps.height[d < 0.6 * r], maps.height[(d >= 1.25 * r) & (d < outer)]
    step = float(inside.mean() - ring.mean()) if inside.size and ring.size else float("nan")
    return float(np.median(maps.rim[ys, xs])), step


def cover_band(share: float) -> str:
    """The band of `COVER_BANDS` a share over lower disks falls in."""
    return COVER_BANDS[0 if share <= 0.0 else 1 if share < 0.3 else 2 if share < 0.7 else 3 if share < 0.99 else 4]


def pin_misses(truth, detected, matched: dict[str, str]) -> list[str]:
    """The cause (`PIN_CAUSES`) of each true pin between disks >= 25 % visible that `detected` lacks."""
    from eval_vision import pin_sets

    pins = pin_sets(truth, detected, matched)
    if pins is None:
        return []
    true_pins, found_pins = pins
    found = set(matched.values())
    out = []
    for upper, lower in sorted(true_pins - found_pins):
        if upper not in found or lower not in found:
            out.append(PIN_CAUSES[2] if upper not in found and lower not in found else
                       PIN_CAUSES[0] if upper not in found else PIN_CAUSES[1])
        else:
            out.append(PIN_CAUSES[3] if (lower, upper) in found_pins else PIN_CAUSES[4])
    return out


def trace_frame(setup, camera, config=None) -> tuple[list[tuple[str, bool]], list[tuple[str, float, float]],
                                                     list[tuple[str, str, bool]], list[str]]:
    """`trace_image` on one rendered frame, calibrated exactly."""
    from vision.synth.render import render_frame
    from vision.synth.truth import truth_calibration

    frame = render_frame(setup, camera)
    diam = tuple(float(v) for v in setup.diameters_mm)
    return trace_image(frame.image, frame.scene, truth_calibration(camera, diam), diam, config)


def trace_image(image, truth, cal, diam, config=None) -> tuple[list[tuple[str, bool]], list[tuple[str, float, float]],
                                                              list[tuple[str, str, bool]], list[str]]:
    """(mode, lies on another disk) of every disk >= 50 % visible the eye misses in one frame (`truth`: its true
    scene, `cal`: its calibration, `diam`: the disk diameters); (one of `NESTED`, rim median, height step) of every
    disk lying within a larger one and of the rings at lone disks' centres; (size, `COVER_BANDS` band, found) of
    every disk >= 50 % visible; the causes of the missed pins. `config`: the detector's settings (default
    `DEFAULT_CONFIG`)."""
    from tablesight.scene import SIZE_CLASSES
    from vision.candidates import find_candidates
    from vision.detect import (battlefield_px, finish_detection, map_scale, maps_of, network_px_per_mm, px_per_mm,
                               rectified_frame, sizes_for)
    from vision.fit import DEFAULT_CONFIG
    from vision.locate import locate_in_maps, lone_circles
    from vision.lonejudge import confirmed_lone
    from vision.nestjudge import confirmed_nests
    from vision.scene_match import match, visible_fraction
    from vision.synth.facemaps import share_over_lower

    cfg = DEFAULT_CONFIG if config is None else config
    sizes = sizes_for(cal, diam)
    rect = rectified_frame(image, cal)
    ppm = px_per_mm(cal)
    net = network_px_per_mm(sizes, cfg)
    scale = map_scale(ppm, net)
    mm = ppm / scale                                   # map px per mm
    maps = maps_of(rect, ppm, cfg, net)
    radii = [sizes.radius(s) * ppm for s in SIZE_CLASSES]
    judged: list[tuple[float, float, float, bool]] = []
    fits = locate_in_maps(maps, rect, radii, scale, mm, (), cfg, battlefield_px(cal),
                          log=lambda ev, u, v, r, ok, prob: judged.append((u, v, r, ok)))
    # as vision.detect does: face-less circles the lone judge takes, then suspicions the nest judge takes
    fits = confirmed_lone(rect, fits, lone_circles(maps, rect, fits, radii, scale, mm, cfg, battlefield_px(cal)),
                          ppm, cfg)
    fits = confirmed_nests(rect, fits, ppm, cfg)
    scene = finish_detection(maps, fits, rect, cal, sizes, None, cfg).scene
    matched = match(truth, scene)
    found = set(matched.values())
    disks = [t for t in truth.disks if not t.extra.get("held")]
    cover = [(t.size, cover_band(share_over_lower(t, disks)), t.id in found) for t in disks
             if visible_fraction(t) >= 0.5]
    radii_map = [r / scale for r in radii]
    cand = find_candidates(maps, radii_map, cfg.vote_min, cfg.max_candidates_per_size, (), None, 0.8 * cfg.min_face)
    voted = find_candidates(maps, radii_map, cfg.vote_min, cfg.max_candidates_per_size, (), None, 0.0)
    out = []
    for t in truth.disks:
        if t.extra.get("held") or visible_fraction(t) < 0.5 or t.id in found:
            continue
        u, v = _map_point(cal, scale, t)
        k = SIZE_CLASSES.index(t.size)
        r = radii_map[k]
        near = [f for f in fits if math.hypot((f.cx + 0.5) / scale - 0.5 - u, (f.cy + 0.5) / scale - 0.5 - v) < 0.5 * r]
        mine = [(math.hypot(ju - u, jv - v) / mm) for ju, jv, jr, _ in judged
                if abs(jr - r) < 1e-6 and math.hypot(ju - u, jv - v) < 0.35 * r]
        if near and not any(f.size == t.size for f in near):
            mode = "another size there"
        elif near:
            mode = "found, then dropped"
        elif mine:
            mode = "rejected, outline read off" if min(mine) > OFF_MM else "rejected by the verdict"
        elif ((cand.size_index == k) & (np.hypot(cand.u - u, cand.v - v) < 0.35 * r)).any():
            mode = "never judged"
        elif ((voted.size_index == k) & (np.hypot(voted.u - u, voted.v - v) < 0.35 * r)).any():
            mode = "inside not a face"
        else:
            mode = "no candidate"
        out.append((mode, share_over_lower(t, disks) > 0.0))
    return out, _nested(truth, cal, scale, radii_map, maps, found), cover, pin_misses(truth, scene, matched)


def _nested(truth, cal, scale: float, radii_map: list[float], maps, found: set) -> list[tuple[str, float, float]]:
    from tablesight.scene import SIZE_CLASSES
    from vision.scene_match import visible_fraction

    disks = [t for t in truth.disks if not t.extra.get("held")]
    out = []
    for t in disks:
        k = SIZE_CLASSES.index(t.size)
        r = radii_map[k]
        u, v = _map_point(cal, scale, t)
        within = any(o.z < t.z and SIZE_CLASSES.index(o.size) > k and
                     math.hypot(o.x_mm - t.x_mm, o.y_mm - t.y_mm) < o.radius_mm - t.radius_mm + 1.0 for o in disks)
        if within and visible_fraction(t) >= 0.5:
            out.append((NESTED[0] if t.id in found else NESTED[1], *_rim_and_step(maps, u, v, r, 1.5 * r)))
        lone = not any(o is not t and math.hypot(o.x_mm - t.x_mm, o.y_mm - t.y_mm) < o.radius_mm + t.radius_mm
                       for o in disks)
        if lone and visible_fraction(t) >= 0.9:
            for j in range(k):
                out.append((NESTED[2], *_rim_and_step(maps, u, v, radii_map[j], min(1.5 * radii_map[j], 0.95 * r))))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", choices=["tuning", "gate"], help="rendered frames: tuning (default) or gate seeds")
    p.add_argument("--tier", choices=["standard", "hard", "piled", "alike", "heaped"],
                   help="rendered tables (default standard)")
    p.add_argument("--frames", type=int, help="rendered frames per family (default 6)")
    p.add_argument("--family", action="append", help="only these families (repeatable)")
    p.add_argument("--out", type=Path)
    p.add_argument("--model", type=Path, help="a face network of one's own (default: the shipped one)")
    p.add_argument("--verdict", type=Path, help="the verdict learned on its maps (default: the shipped one)")
    p.add_argument("--network-px-per-mm", type=float, default=None,
                   help="the scale the network reads the tables at (DetectorConfig.network_px_per_mm)")
    p.add_argument("--folder", type=Path, help="frames with their true scenes instead of rendered ones")
    p.add_argument("--disk-diameters-mm", default="44,64,89", help="with --folder: the disks' diameters, S,M,L")
    p.add_argument("--intrinsics", type=Path, help="with --folder: camera.json for `tablesight calibrate`")
    args = p.parse_args(argv)
    rendered = [f"--{k}" for k in ("seeds", "tier", "frames", "family") if getattr(args, k) is not None]
    if args.folder is not None and rendered:
        print(f"miss_modes: {', '.join(rendered)} choose rendered frames, not frames of --folder", file=sys.stderr)
        return 2
    args.seeds, args.tier = args.seeds or "tuning", args.tier or "standard"
    args.frames = 6 if args.frames is None else args.frames
    if args.folder is not None and not args.folder.is_dir():
        print(f"miss_modes: --folder {args.folder}: no such folder", file=sys.stderr)
        return 2
    try:
        diameters = tuple(float(v) for v in args.disk_diameters_mm.split(","))
        if len(diameters) != 3 or min(diameters) <= 0:
            raise ValueError
    except ValueError:
        print(f"miss_modes: --disk-diameters-mm {args.disk_diameters_mm!r}: three positive numbers, S,M,L",
              file=sys.stderr)
        return 2
    for name in ("model", "verdict"):
        path = getattr(args, name)
        if path is not None and not path.is_file():
            print(f"miss_modes: --{name} {path}: no such file", file=sys.stderr)
            return 2
    from dataclasses import replace

    from vision.fit import DEFAULT_CONFIG
    try:   # the setting's own check: a value out of range is one line
        config = replace(DEFAULT_CONFIG, model_path=None if args.model is None else str(args.model),
                         verdict_path=None if args.verdict is None else str(args.verdict))
        if args.network_px_per_mm is not None:
            config = replace(config, network_px_per_mm=args.network_px_per_mm)
    except ValueError as exc:
        print(f"miss_modes: {exc}", file=sys.stderr)
        return 2
    import cv2

    cv2.setNumThreads(1)
    from tablesight.errors import InputError
    from tablesight.scene import SIZE_CLASSES

    per: dict[str, Counter] = {}
    stacked: dict[str, Counter] = {}
    nested: dict[str, list[tuple[float, float]]] = {k: [] for k in NESTED}
    cover: Counter = Counter()      # (size, band, found)
    pins: Counter = Counter()
    tmp = tempfile.TemporaryDirectory()
    if args.folder is not None:
        traced = ((look, trace_image(image, truth, cal, diameters, config))
                  for look, image, truth, cal in folder_frames(args.folder, diameters, args.intrinsics, Path(tmp.name)))
        what = f"folder `{args.folder.name}`"
    else:
        traced = ((family, trace_frame(setup, camera, config))
                  for family, setup, camera in frames(args.seeds, args.tier, args.frames, args.family))
        what = f"{args.seeds} seeds, {args.tier} tier"
    try:
        for family, (misses, seen, disks, pin_causes) in traced:
            c, s = per.setdefault(family, Counter()), stacked.setdefault(family, Counter())
            c["frames"] += 1
            cover.update(disks)
            pins.update(pin_causes)
            for mode, on_disk in misses:
                c[mode] += 1
                s[mode] += int(on_disk)
            for kind, rim, step in seen:
                nested[kind].append((rim, step))
            print(f"{family}: {c['frames']} frames, {sum(c[m] for m in MODES)} missed so far", file=sys.stderr)
    except InputError as exc:
        print(f"miss_modes: {exc}", file=sys.stderr)
        return 2
    finally:
        tmp.cleanup()
    total, total_s = Counter(), Counter()
    for c, s in zip(per.values(), stacked.values()):
        total.update(c)
        total_s.update(s)
    cmd = "benchmarks/miss_modes.py " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = [f"Command: `.venv/bin/python {cmd}`", "",
             f"Date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}", "",
             f"Missed disks >= 50 % visible by the step that lost them ({what}); "
             "in brackets: how many of them lie on another disk.", "",
             f"| {'look' if args.folder else 'family'} | frames | missed | " + " | ".join(MODES) + " |",
             "|---" * (len(MODES) + 3) + "|"]
    for name, c, s in [*((f, per[f], stacked[f]) for f in per), ("all", total, total_s)]:
        cells = [f"{c[m]} ({s[m]})" if c[m] else "0" for m in MODES]
        lines.append(f"| {name} | {c['frames']} | {sum(c[m] for m in MODES)} | " + " | ".join(cells) + " |")
    lines += ["", "What the maps show of disks lying within a larger one, against rings at lone disks' centres "
              "(10th / 50th / 90th percentiles):", "",
              "| circles | count | rim map along the outline | height step, inside less just outside |",
              "|---|---|---|---|"]
    for kind, vals in nested.items():
        a = np.array(vals, dtype=float).reshape(-1, 2)
        pct = (lambda col: " / ".join(f"{q:.2f}" for q in np.nanpercentile(col, [10, 50, 90]))) if len(a) else None
        lines.append(f"| {kind} | {len(a)} | {pct(a[:, 0]) if pct else 'n/a'} | {pct(a[:, 1]) if pct else 'n/a'} |")
    lines += ["", "Disks >= 50 % visible found, by size and by how much of each lies over lower disks:", "",
              "| size | " + " | ".join(COVER_BANDS) + " |", "|---" * (len(COVER_BANDS) + 1) + "|"]
    for size in SIZE_CLASSES:
        cells = []
        for band in COVER_BANDS:
            hit, n = cover[(size, band, True)], cover[(size, band, True)] + cover[(size, band, False)]
            cells.append(f"{hit}/{n} ({100 * hit / n:.0f} %)" if n else "-")
        lines.append(f"| {size} | " + " | ".join(cells) + " |")
    lines += ["", f"True pins the detected scenes lack ({sum(pins.values())}), by cause:", "",
              "| " + " | ".join(PIN_CAUSES) + " |", "|---" * len(PIN_CAUSES) + "|",
              "| " + " | ".join(str(pins[c]) for c in PIN_CAUSES) + " |"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        prefix = "\n" if args.out.exists() and args.out.stat().st_size else ""
        with args.out.open("a", encoding="utf-8") as fh:   # several runs (seeds, tiers) go in one file
            fh.write(prefix + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
