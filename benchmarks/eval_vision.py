"""Evaluate disk detectors on synthetic folders with ground truth, against the plain HoughCircles baseline.

    .venv/bin/python benchmarks/eval_vision.py DIR [DIR ...] --out results.md
    .venv/bin/python benchmarks/eval_vision.py --generate gate --tier standard --count 2 --out results.md

Folders are what `tablesight synth` writes. `--generate tuning|gate` renders one folder per seed of the named
range (vision/synth/seeds.py) into `--workdir` (default: a temporary folder) first. Detectors are callables
`detect(frame_bgr, calibration, diameters_mm) -> Scene` named `module:function` (`--detector`, repeatable); by
default `vision.detect:detect_frame` when it imports, and always the baseline `vision.baseline:detect`.

The table calibration is built once per folder from its first frames with `calibration.table.calibrate_table`
(lens intrinsics from the camera truth, or from the folder's board photos with `--intrinsics boards`); with
`--calibration truth`, or when that fails, the exact calibration from the camera truth is used.

Metrics (a disk's `visible_fraction` comes from the ground truth; disks under 25 % visible are "don't care":
finding them is no error and missing them is no miss):
- recall >=50 % / 25-50 %: found / present among the disks that visible; a find is the nearest unclaimed
  detection within a quarter of the true radius of the true centre (disks at least 25 % visible claim first).
- precision: finds / detections (detections on don't-care disks not counted), overall and counting the 25-50 %
  disks as don't-care too.
- centre error median / p95 (mm) over finds; size-class accuracy over finds.
- stacking order: pairs of overlapping true disks, both found: the detected z order agrees (ties are wrong).
- pins: the pin set of `rules.diskwars.report.build_report` on the detected scene vs the true scene (detected
  disks renamed to the true disk they found; pins involving don't-care disks left out).
- ms per frame: wall time of the detector call (median, p95).
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tablesight.errors import InputError  # noqa: E402
from tablesight.scene import SIZE_CLASSES, Scene, load_scene  # noqa: E402
# The one matching of detections to true disks, shared with the web demo's truth overlay.
from vision.scene_match import match  # noqa: E402,F401
from vision.scene_match import visible_fraction  # noqa: E402

BASELINE = "vision.baseline:detect"
DEFAULT_DETECTOR = "vision.detect:detect_frame"
VISIBLE, PARTLY = 0.5, 0.25


# ---------------------------------------------------------------------------------------------------------------
# Matching and per-frame counts


@dataclass
class Tally:
    """Counts summed over frames for one detector."""

    present: dict[str, int] = field(default_factory=lambda: {"visible": 0, "partly": 0})
    found: dict[str, int] = field(default_factory=lambda: {"visible": 0, "partly": 0})
    detections: int = 0  # detections not on don't-care disks
    detections_on_partly: int = 0
    centre_err_mm: list[float] = field(default_factory=list)
    size_ok: int = 0
    size_n: int = 0
    order_ok: int = 0
    order_n: int = 0
    pins_true: int = 0
    pins_found: int = 0
    pins_detected: int = 0
    pins_available: bool = True
    ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    frames: int = 0


def eye_config(settings, prog: str):
    """The shipped eye's settings with each `NAME=VALUE` of `settings` changed (`DetectorConfig.changed`; how the
    benchmarks take `--setting`), or None after one clear line on stderr, `prog: what is wrong`."""
    from vision.fit import DEFAULT_CONFIG

    config = DEFAULT_CONFIG
    try:
        for setting in settings:
            config = config.changed(setting)
    except ValueError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return None
    return config


def dated_report(doc: str, command: str, lines: list[str], out: Path | None) -> str:
    """A benchmark's result as markdown: its command, the time and `lines`; printed, and written to `out` under the
    first line of the script's docstring `doc` as title."""
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = "\n".join([f"Command: `.venv/bin/python {command}`", "", f"Date: {when}", "", *lines]) + "\n"
    print(text)
    if out is not None:
        out.write_text(f"# {doc.splitlines()[0]}\n\n{text}", encoding="utf-8")
    return text


def _size_of(d, diameters: tuple[float, float, float]) -> str:
    if d.size is not None:
        return d.size
    return SIZE_CLASSES[int(np.argmin([abs(2 * d.radius_mm - x) for x in diameters]))]


def _pins(scene: Scene) -> set[tuple[str, str]] | None:
    from rules.diskwars.report import build_report

    rep = build_report(scene)
    return {(p.pinner, p.pinned) for p in rep.pins}


def pin_sets(truth: Scene, detected: Scene, matched: dict[str, str]
             ) -> tuple[set[tuple[str, str]], set[tuple[str, str]]] | None:
    """(true pins, detected pins) as (pinner, pinned) true ids, pins with a disk under 25 % visible left out on
    both sides (disks in a hand are not on the table); `matched`: detected id -> true id (`match`). None when the
    rules cannot be imported."""
    tdisks = tuple(t for t in truth.disks if not t.extra.get("held"))
    truth_pins = _pins(replace(truth, disks=tdisks))
    if truth_pins is None:
        return None
    # the detected scene with owners dropped (pins do not depend on them) and ids renamed to the true ones
    renamed = [replace(d, id=matched.get(d.id) or f"unmatched:{d.id}", player=None, extra={})
               for d in detected.disks]
    det_pins = _pins(Scene(disks=tuple(renamed), battlefield=truth.battlefield)) or set()
    dontcare = {t.id for t in tdisks if visible_fraction(t) < PARTLY}
    care = {t.id for t in tdisks} - dontcare
    return ({p for p in truth_pins if p[0] in care and p[1] in care},
            {p for p in det_pins if p[0] not in dontcare and p[1] not in dontcare})


def score_frame(tally: Tally, truth: Scene, detected: Scene, diameters: tuple[float, float, float]) -> None:
    m = match(truth, detected)
    tdisks = {t.id: t for t in truth.disks if not t.extra.get("held")}
    ddisks = {d.id: d for d in detected.disks}
    cls = {}
    for t in tdisks.values():
        v = visible_fraction(t)
        cls[t.id] = "visible" if v >= VISIBLE else "partly" if v >= PARTLY else "dontcare"
    for tid, c in cls.items():
        if c != "dontcare":
            tally.present[c] += 1
    for did, d in ddisks.items():
        tid = m.get(did)
        c = cls.get(tid) if tid else None
        if c == "dontcare":
            continue
        tally.detections += 1
        if c == "partly":
            tally.detections_on_partly += 1
        if c is None:
            continue
        t = tdisks[tid]
        tally.found[c] += 1
        tally.centre_err_mm.append(math.hypot(t.x_mm - d.x_mm, t.y_mm - d.y_mm))
        tally.size_n += 1
        tally.size_ok += int(_size_of(d, diameters) == t.size)
    inv = {tid: did for did, tid in m.items()}
    tl = list(tdisks.values())
    for i, a in enumerate(tl):
        for b in tl[i + 1:]:
            if math.hypot(a.x_mm - b.x_mm, a.y_mm - b.y_mm) >= a.radius_mm + b.radius_mm - 0.5:
                continue
            if a.id not in inv or b.id not in inv or a.z == b.z:
                continue
            tally.order_n += 1
            da, db = ddisks[inv[a.id]], ddisks[inv[b.id]]
            tally.order_ok += int((da.z - db.z) * (a.z - b.z) > 0)
    if not tally.pins_available:
        return
    pins = pin_sets(truth, detected, m)
    if pins is None:
        tally.pins_available = False
        return
    truth_pins, det_pins = pins
    tally.pins_true += len(truth_pins)
    tally.pins_detected += len(det_pins)
    tally.pins_found += len(truth_pins & det_pins)


# ---------------------------------------------------------------------------------------------------------------
# Folders, calibration, detectors


def load_detector(spec: str) -> Callable[..., Scene]:
    mod, _, fn = spec.partition(":")
    if not fn:
        raise InputError(f"--detector {spec!r}: expected module:function")
    return getattr(importlib.import_module(mod), fn)


def folder_calibration(folder: Path, frames: list[Path], mode: str, intrinsics_mode: str,
                       diameters: tuple[float, float, float]) -> tuple[Any, str]:
    from vision.synth.camera import SynthCamera
    from vision.synth.truth import truth_calibration

    cam = SynthCamera.from_json(json.loads((folder / "camera_truth.json").read_text()))
    exact = truth_calibration(cam, diameters)
    if mode == "truth":
        return exact, "camera truth"
    from calibration.camera import CameraIntrinsics
    from calibration.table import calibrate_table

    intr = CameraIntrinsics.from_json(json.loads((folder / "camera_truth.json").read_text())["intrinsics"])
    how = "markers, true lens"
    if intrinsics_mode == "boards":
        try:
            from calibration.camera import BoardSpec, calibrate_camera_images

            imgs = [(p.name, cv2.imread(str(p))) for p in sorted((folder / "boards").glob("board_*.png"))]
            intr = calibrate_camera_images(imgs, BoardSpec.parse("chessboard:9x6", 25.0)).intrinsics
            how = "markers, lens from board photos"
        except Exception as exc:  # noqa: BLE001 - fall back to the true lens, say so
            how = f"markers, true lens (board calibration failed: {exc})"
    for f in frames[:5]:
        try:
            cal = calibrate_table(cv2.imread(str(f)), intrinsics=intr)
            return cal.with_disk_diameters(diameters) if hasattr(cal, "with_disk_diameters") else cal, how
        except InputError:
            continue
    return exact, "camera truth (no frame calibrated)"


def calibration_error_mm(folder: Path, cal: Any) -> float:
    """Largest distance (mm) between where the calibration and the camera truth put felt points seen over the
    battlefield (a 10 x 10 grid)."""
    from vision.synth.camera import SynthCamera

    cam = SynthCamera.from_json(json.loads((folder / "camera_truth.json").read_text()))
    g = np.linspace(0.0, 900.0, 10)
    pts = np.array([(x, y) for x in g for y in g])
    return float(np.linalg.norm(cal.image_to_table(cam.project(pts)) - pts, axis=1).max())


def evaluate(folders: list[Path], detectors: dict[str, Callable], calibration_mode: str, intrinsics_mode: str,
             stable_only: bool = True, log=print) -> tuple[dict[str, Tally], list[dict]]:
    tallies = {name: Tally() for name in detectors}
    info = []
    for folder in folders:
        man_path = folder / "manifest.json"
        if not man_path.exists():
            raise InputError(f"{folder}: no manifest.json (not a `tablesight synth` folder)")
        man = json.loads(man_path.read_text())
        diam = tuple(float(man["disk_diameters_mm"][k]) for k in SIZE_CLASSES)
        entries = [e for e in man["frames"] if not stable_only or e.get("stable", True)]
        paths = [folder / e["image"] for e in entries]
        cal, how = folder_calibration(folder, paths, calibration_mode, intrinsics_mode, diam)
        info.append({"folder": folder.name, "tier": man["tier"], "seed": man["seed"], "frames": len(entries),
                     "calibration": how, "calibration_error_mm": calibration_error_mm(folder, cal),
                     # the first frame of a folder also builds the camera's per-pixel ray map: counted apart
                     "render_first_ms": [e.get("render_ms") for e in man["frames"][:1] if e.get("render_ms")],
                     "render_ms": [e.get("render_ms") for e in man["frames"][1:] if e.get("render_ms")],
                     "render_cpu_ms": [e.get("render_cpu_ms") for e in man["frames"][1:] if e.get("render_cpu_ms")]})
        if paths:  # one untimed, unscored call per detector: start-up (caches, remap maps) is not per-frame cost
            warm = cv2.imread(str(paths[0]))
            for fn in detectors.values():
                try:
                    fn(warm, cal, diam)
                except Exception:  # noqa: BLE001 - the scored call records it
                    pass
        for e, path in zip(entries, paths):
            frame = cv2.imread(str(path))
            truth = load_scene(folder / e["scene"])
            for name, fn in detectors.items():
                t = tallies[name]
                t0 = time.perf_counter()
                try:
                    det = fn(frame, cal, diam)
                except Exception as exc:  # noqa: BLE001 - a detector crash is a result, recorded
                    t.errors.append(f"{folder.name}/{path.name}: {exc.__class__.__name__}: {exc}")
                    det = Scene()
                t.ms.append((time.perf_counter() - t0) * 1000.0)
                t.frames += 1
                score_frame(t, truth, det, diam)
        log(f"{folder.name}: {len(entries)} frames ({how})")
    return tallies, info


# ---------------------------------------------------------------------------------------------------------------
# Report


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def metrics(t: Tally) -> dict[str, float | None]:
    def div(a, b):
        return a / b if b else None

    found = t.found["visible"] + t.found["partly"]
    return {
        "recall >=50% visible": div(t.found["visible"], t.present["visible"]),
        "recall 25-50% visible": div(t.found["partly"], t.present["partly"]),
        "precision (>=25% visible)": div(found, t.detections),
        "precision (>=50% visible)": div(t.found["visible"], t.detections - t.detections_on_partly),
        "centre error median (mm)": float(np.median(t.centre_err_mm)) if t.centre_err_mm else None,
        "centre error p95 (mm)": float(np.percentile(t.centre_err_mm, 95)) if t.centre_err_mm else None,
        "size-class accuracy": div(t.size_ok, t.size_n),
        "stacking order accuracy (overlapping pairs)": div(t.order_ok, t.order_n),
        "pin precision": div(t.pins_found, t.pins_detected) if t.pins_available else None,
        "pin recall": div(t.pins_found, t.pins_true) if t.pins_available else None,
        "ms per frame median": float(np.median(t.ms)) if t.ms else None,
        "ms per frame p95": float(np.percentile(t.ms, 95)) if t.ms else None,
    }


def _fmt(v: float | None, key: str) -> str:
    if v is None:
        return "n/a"
    if "mm" in key or "ms" in key:
        return f"{v:.2f}" if "mm" in key else f"{v:.0f}"
    return f"{100 * v:.1f} %"


def markdown(tallies: dict[str, Tally], info: list[dict], command: str, baseline_name: str) -> str:
    names = list(tallies)
    rows = {n: metrics(t) for n, t in tallies.items()}
    keys = list(next(iter(rows.values())).keys())
    others = [n for n in names if n != baseline_name]
    head = ["metric"] + names + [f"{n} / baseline" for n in others]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in keys:
        cells = [k] + [_fmt(rows[n][k], k) for n in names]
        for n in others:
            r = _ratio(rows[n][k], rows[baseline_name][k]) if baseline_name in rows else None
            cells.append("n/a" if r is None else f"{r:.2f}x")
        lines.append("| " + " | ".join(cells) + " |")
    t0 = next(iter(tallies.values()))
    counts = (f"{t0.frames} frames; true disks >=50 % visible: {t0.present['visible']}, 25-50 %: "
              f"{t0.present['partly']}; overlapping pairs scored: " +
              ", ".join(f"{n} {t.order_n}" for n, t in tallies.items()) +
              f"; true pins: {t0.pins_true if t0.pins_available else 'n/a (rules not importable)'}")
    render = [ms for i in info for ms in i["render_ms"]]
    render_cpu = [ms for i in info for ms in i.get("render_cpu_ms", [])]
    render_first = [ms for i in info for ms in i.get("render_first_ms", [])]
    out = [f"Command: `{command}`", "",
           f"Date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}", "",
           _folders_line(info), "",
           counts, ""]
    if render:
        cpu = (f"; processor time median {np.median(render_cpu):.0f} ms, p95 {np.percentile(render_cpu, 95):.0f} ms"
               if render_cpu else "")
        first = (f"; a folder's first frame (builds the camera's ray map) median {np.median(render_first):.0f} ms"
                 if render_first else "")
        out += [f"Synthetic renderer, per frame after a folder's first: wall median {np.median(render):.0f} ms, "
                f"p95 {np.percentile(render, 95):.0f} ms{cpu}{first}", ""]
    out += lines
    for n, t in tallies.items():
        if t.errors:
            out += ["", f"{n}: {len(t.errors)} frame(s) raised; first: {t.errors[0]}"]
    return "\n".join(out) + "\n"


def _folders_line(info: list[dict]) -> str:
    from collections import Counter

    tiers = sorted({str(i["tier"]) for i in info})
    seeds = sorted(int(i["seed"]) for i in info)
    frames = sum(i["frames"] for i in info)
    cal = Counter(i["calibration"] for i in info)
    if len(seeds) == 1:
        seed_text = f"seed {seeds[0]}"
    elif seeds == list(range(seeds[0], seeds[-1] + 1)):
        seed_text = f"seeds {seeds[0]}-{seeds[-1]}"
    else:
        seed_text = "seeds " + ", ".join(map(str, seeds))
    err = [i["calibration_error_mm"] for i in info if i.get("calibration_error_mm") is not None]
    err_text = (f"; its error over the battlefield against the camera truth: median {np.median(err):.2f} mm, "
                f"worst {max(err):.2f} mm (largest over a 10 x 10 grid per folder)" if err else "")
    return (f"{len(info)} folder(s), tier {', '.join(tiers)}, {seed_text}, {frames} frames scored; table "
            "calibration: " + "; ".join(f"{k} ({v})" for k, v in cal.items()) + err_text)


def generate(range_name: str, tier: str, count: int, resolution: str, workdir: Path, limit: int | None,
             boards: int = 0, log=print) -> list[Path]:
    from vision.synth.seeds import GATE_SEEDS, TUNING_SEEDS
    from vision.synth.writer import write_folder

    seeds = {"tuning": TUNING_SEEDS, "gate": GATE_SEEDS}[range_name]
    if limit:
        seeds = seeds[:limit]
    out = []
    for s in seeds:
        d = workdir / f"{range_name}-{tier}-{resolution}-{s}"
        man = d / "manifest.json"
        if not man.exists() or len(json.loads(man.read_text())["frames"]) != count or \
                (boards and not json.loads(man.read_text())["boards"]["images"]):
            write_folder(d, seed=s, count=count, tier=tier, resolution=resolution, boards=boards)
            log(f"rendered {d.name}")
        out.append(d)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folders", nargs="*", type=Path, metavar="DIR")
    p.add_argument("--generate", choices=["tuning", "gate"], help="render one folder per seed of this range")
    p.add_argument("--tier", action="append", choices=["easy", "standard", "hard"],
                   help="tier of the generated folders (repeatable: one table per tier; default standard)")
    p.add_argument("--count", type=int, default=3, help="frames per generated folder (default 3)")
    p.add_argument("--seeds", type=int, default=None, help="use only the first N seeds of the range")
    p.add_argument("--resolution", default="1080p", choices=["1080p", "720p"])
    p.add_argument("--workdir", type=Path, help="where generated folders go (default: a temporary folder)")
    p.add_argument("--detector", action="append", default=[], metavar="MODULE:FUNCTION",
                   help=f"a detector to evaluate (repeatable; default {DEFAULT_DETECTOR} if it imports)")
    p.add_argument("--calibration", choices=["frame", "truth"], default="frame",
                   help="table calibration from the frame's markers (default) or the exact camera truth")
    p.add_argument("--intrinsics", choices=["truth", "boards"], default="truth",
                   help="lens for the marker calibration: the true one (default) or calibrated from DIR/boards")
    p.add_argument("--all-frames", action="store_true", help="score clip frames in motion too (default: stable)")
    p.add_argument("--out", type=Path, help="write the markdown table here")
    args = p.parse_args(argv)
    try:
        if not args.folders and not args.generate:
            raise InputError("give synth folders or --generate tuning|gate")
        detectors: dict[str, Callable] = {}
        for spec in args.detector or [DEFAULT_DETECTOR]:
            try:
                detectors[spec] = load_detector(spec)
            except (ImportError, AttributeError) as exc:
                if args.detector:
                    raise InputError(f"--detector {spec}: cannot import it ({exc})") from None
                print(f"note: {spec} not available ({exc}); evaluating the baseline only", file=sys.stderr)
        detectors[BASELINE] = load_detector(BASELINE)
        command = ".venv/bin/python benchmarks/eval_vision.py " + " ".join(argv if argv is not None else sys.argv[1:])
        sections = []
        groups: list[tuple[str | None, list[Path]]] = []
        if args.folders:
            groups.append((None, list(args.folders)))
        tmp = None
        if args.generate:
            workdir = args.workdir
            if workdir is None:
                tmp = tempfile.TemporaryDirectory(prefix="tablesight-eval-")
                workdir = Path(tmp.name)
            for tier in args.tier or ["standard"]:
                groups.append((tier, generate(args.generate, tier, args.count, args.resolution, workdir, args.seeds,
                                              boards=12 if args.intrinsics == "boards" else 0,
                                              log=lambda m: print(m, file=sys.stderr))))
        for tier, folders in groups:
            tallies, info = evaluate(folders, detectors, args.calibration, args.intrinsics,
                                     stable_only=not args.all_frames, log=lambda m: print(m, file=sys.stderr))
            title = f"## {args.generate} seeds, tier {tier}" if tier else "## Folders"
            sections.append(title + "\n\n" + markdown(tallies, info, command, BASELINE))
        text = "# Vision evaluation on synthetic frames\n\n" + "\n".join(sections)
        print(text)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(text, encoding="utf-8")
        if tmp is not None:
            tmp.cleanup()
    except InputError as exc:
        print(f"eval_vision: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
