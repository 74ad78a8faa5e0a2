"""Score the eye through the command line exactly as a user (or an outside check) runs it, on a folder of frames
with ground truth that the project was never built on.

    .venv/bin/python benchmarks/eval_cli.py DIR [--out results.md] [--intrinsics camera.json] [--look-for-mm S,M,L]

DIR holds `NAME.jpg` (or .png) frames, each with `NAME.scene.json` beside it: a `tablesight.scene/1` of the true
disks (table mm, `z` bottom to top, and the visible share of each disk's outline as `visible` or
`visible_fraction`). For every frame: `tablesight calibrate NAME.jpg -o table.json`, then `tablesight detect NAME.jpg
--calibration table.json --timing`; the scene it prints is scored as `benchmarks/eval_vision.py` scores (recall by
visibility, precision, centre error, size class, stacking order of overlapping pairs, pins), plus the share of
frames whose pin set is exactly right. The plain marker + rectify + HoughCircles pipeline (`vision.baseline`) is
timed in the same run, on the same calibration, for the speed ratio.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.eval_vision import Tally, metrics, score_frame  # noqa: E402
from tablesight.scene import SIZE_CLASSES, Scene, load_scene  # noqa: E402


def _cli() -> list[str]:
    exe = Path(sys.executable).with_name("tablesight")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "tablesight"]


def truth_scene(path: Path, diameters: tuple[float, float, float]) -> Scene:
    """The true scene with each disk's visible share under `visible_fraction` and its size class named."""
    scene = load_scene(path)
    disks = []
    for d in scene.disks:
        extra = dict(d.extra)
        if "visible_fraction" not in extra and "visible" in extra:
            extra["visible_fraction"] = float(extra["visible"])
        size = d.size or SIZE_CLASSES[int(np.argmin([abs(2 * d.radius_mm - x) for x in diameters]))]
        disks.append(replace(d, extra=extra, size=size))
    return replace(scene, disks=tuple(disks))


def frames_of(folder: Path) -> list[tuple[Path, Path]]:
    out = []
    for img in sorted(list(folder.glob("*.jpg")) + list(folder.glob("*.png"))):
        truth = img.with_name(img.stem + ".scene.json")
        if truth.exists():
            out.append((img, truth))
    return out


@dataclass(frozen=True)
class CliFrame:
    """One frame of a folder as the command line read it: the calibration file `tablesight calibrate` wrote (None
    when it failed), the scene `tablesight detect` printed (empty when it failed), the true scene, the frame's
    processing time (`--timing`) and what failed."""

    image: Path
    truth: Scene
    calibration: Path | None
    detected: Scene
    ms: float | None
    failure: str | None


def calibrate(image: Path, out: Path, intrinsics: Path | None) -> str | None:
    """`tablesight calibrate IMAGE -o OUT` as the command line runs it: None, or what failed."""
    cmd = _cli() + ["calibrate", str(image), "-o", str(out)]
    if intrinsics is not None:
        cmd += ["--intrinsics", str(intrinsics)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return None if r.returncode == 0 else f"{image.name}: calibrate: {r.stderr.strip()[:200]}"


def cli_frames(folder: Path, diameters: tuple[float, float, float], intrinsics: Path | None, tmp: Path,
               look_for_mm: str | None = None):
    """`tablesight calibrate` then `tablesight detect --timing` on every frame of a folder (calibrations written
    into `tmp`): a `CliFrame` each. `look_for_mm` ("S,M,L" or one size): passed to `detect` as
    `--disk-diameters-mm` (else the sizes the calibration measured, or the defaults)."""
    for img, truth_path in frames_of(folder):
        truth = truth_scene(truth_path, diameters)
        cal_path = tmp / f"{img.stem}.table.json"
        failure = calibrate(img, cal_path, intrinsics)
        if failure is not None:
            yield CliFrame(img, truth, None, Scene(), None, failure)
            continue
        sizes = [] if look_for_mm is None else ["--disk-diameters-mm", look_for_mm]
        r = subprocess.run(_cli() + ["detect", str(img), "--calibration", str(cal_path), "--timing"] + sizes,
                           capture_output=True, text=True)
        if r.returncode != 0:
            yield CliFrame(img, truth, cal_path, Scene(), None, f"{img.name}: detect: {r.stderr.strip()[:200]}")
            continue
        timing = [json.loads(line) for line in r.stderr.splitlines() if line.startswith("{")]
        yield CliFrame(img, truth, cal_path, Scene.from_json(json.loads(r.stdout)),
                       float(timing[-1]["ms"]) if timing else None, None)


def run(folder: Path, diameters: tuple[float, float, float], intrinsics: Path | None, log=print,
        look_for_mm: str | None = None) -> tuple[Tally, Tally, int, list[str]]:
    """(eye tally, baseline tally, frames with the exact pin set, failures) over a folder (`look_for_mm`: as
    `cli_frames`)."""
    from calibration.table import TableCalibration
    from vision.baseline import detect as baseline

    eye, base = Tally(), Tally()
    exact = 0
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for f in cli_frames(folder, diameters, intrinsics, Path(tmp), look_for_mm):
            if f.failure is not None:
                failures.append(f.failure)
            if f.calibration is None:
                continue
            img, truth, detected, cal_path = f.image, f.truth, f.detected, f.calibration
            if f.ms is not None:
                eye.ms.append(f.ms)
            before = (eye.pins_found, eye.pins_true, eye.pins_detected)
            score_frame(eye, truth, detected, diameters)
            eye.frames += 1
            found, true_, det = (eye.pins_found - before[0], eye.pins_true - before[1],
                                 eye.pins_detected - before[2])
            exact += int(found == true_ == det)
            # the baseline, in this process, on the same calibration (its first call warms the remap maps)
            cal = TableCalibration.load(cal_path)
            frame = cv2.imread(str(img))
            baseline(frame, cal, diameters)
            t0 = time.perf_counter()
            bdet = baseline(frame, cal, diameters)
            base.ms.append((time.perf_counter() - t0) * 1000.0)
            base.frames += 1
            score_frame(base, truth, bdet, diameters)
            log(f"{img.name}: {len(detected.disks)} disks detected, {len(truth.disks)} true")
    return eye, base, exact, failures


def report(folder: Path, eye: Tally, base: Tally, exact: int, failures: list[str], command: str) -> str:
    me, mb = metrics(eye), metrics(base)
    lines = [f"Command: `{command}`", "", f"Date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}", "",
             f"Folder `{folder.name}`: {eye.frames} frames; true disks >= 50 % visible {eye.present['visible']}, "
             f"25-50 % {eye.present['partly']}; overlapping pairs scored {eye.order_n}; true pins {eye.pins_true}",
             "", "| metric | tablesight detect | HoughCircles baseline | ratio |", "|---|---|---|---|"]
    for k in me:
        a, b = me[k], mb[k]
        fa = "n/a" if a is None else (f"{a:.2f}" if "mm" in k else f"{a:.0f}" if "ms" in k else f"{100 * a:.1f} %")
        fb = "n/a" if b is None else (f"{b:.2f}" if "mm" in k else f"{b:.0f}" if "ms" in k else f"{100 * b:.1f} %")
        ratio = f"{a / b:.2f}x" if (a is not None and b) else "n/a"
        lines.append(f"| {k} | {fa} | {fb} | {ratio} |")
    lines.append(f"| pin sets exact (frames) | {exact} of {eye.frames} | | |")
    if failures:
        lines += ["", "Failures:"] + [f"- {f}" for f in failures]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", type=Path)
    p.add_argument("--out", type=Path)
    p.add_argument("--intrinsics", type=Path, help="camera.json for `tablesight calibrate --intrinsics`")
    p.add_argument("--disk-diameters-mm", default="44,64,89", help="the true disks' size classes (for scoring)")
    p.add_argument("--look-for-mm", help="passed to `tablesight detect` as --disk-diameters-mm (S,M,L or one size; "
                                         "default: the sizes the calibration measured)")
    args = p.parse_args(argv)
    if not args.folder.is_dir() or not frames_of(args.folder):
        print(f"eval_cli: {args.folder}: no NAME.jpg + NAME.scene.json pairs", file=sys.stderr)
        return 2
    diam = tuple(float(v) for v in args.disk_diameters_mm.split(","))
    eye, base, exact, failures = run(args.folder, diam, args.intrinsics,  # type: ignore[arg-type]
                                     look_for_mm=args.look_for_mm)
    text = report(args.folder, eye, base, exact, failures, "benchmarks/eval_cli.py " + " ".join(argv or sys.argv[1:]))
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
