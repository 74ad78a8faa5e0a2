"""Score the eye family by family on the randomized synthetic world: the families it trained on and, above all, the
held-out ones no training or tuning run ever saw.

    .venv/bin/python benchmarks/eval_families.py [--frames 6] [--family NAME ...]
                                                 [--tier standard|hard|piled|alike|heaped]
                                                 [--lens truth|markers|plain] [--camera-scale N]
                                                 [--setting NAME=VALUE ...]
                                                 [--out benchmarks/results/families.md]

For every family (default: the classic look, every training family and every held-out family of
`vision.synth.world`), `--frames` frames are rendered from `WORLD_GATE_SEEDS` (the classic look: `GATE_SEEDS`),
calibrated from their own markers with the camera's true lens (as `tablesight calibrate --intrinsics` would be),
detected with `vision.detect.detect_frame`, and scored as `benchmarks/eval_vision.py` scores them, plus the share of
frames whose pin set is exactly right. The plain HoughCircles pipeline (`vision.baseline`) runs on the same frames
and calibrations for the speed ratio; both are timed on one core (OpenCV and BLAS threads set to 1).
`--lens markers` calibrates without the lens, as `tablesight calibrate IMAGE` does with no `--intrinsics` (the
lens's distortion estimated from the markers, `calibration.lens`); `--lens plain` without the lens and without
that estimate (a plain homography, how such frames were calibrated before). `--camera-scale N` sees every room
with a camera of N times the pixels a side (`SynthCamera.sharper`: the same view and lens, a 4K webcam or a phone's
photo at 2 and 3): the eye reads the table at its own scale whatever the camera's, so its figures should hold.
`--setting NAME=VALUE` runs the eye with one of its settings changed (`DetectorConfig.changed`; repeatable).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from datetime import datetime, timezone  # noqa: E402
from pathlib import Path  # noqa: E402

import cv2  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.eval_vision import Tally, eye_config, metrics, score_frame  # noqa: E402
from tablesight.errors import InputError  # noqa: E402


def frames_of(family: str, count: int, tier: str, camera_scale: int = 1):
    """(setup, camera) of `count` gate frames of a family: one table per seed, cycling seeds; the camera with
    `camera_scale` times its pixels a side."""
    for setup, camera in _gate_frames(family, count, tier):
        yield setup, camera.sharper(camera_scale)


def _gate_frames(family: str, count: int, tier: str):
    from vision.synth import seeds

    if family == "classic":
        from vision.synth.camera import table_camera
        from vision.synth.scenes import random_table
        from vision.synth.tiers import tier_settings

        for k in range(count):
            seed = seeds.GATE_SEEDS[k % len(seeds.GATE_SEEDS)]
            yield random_table(seed, tier), table_camera(seed, tier_settings(tier).camera)
        return
    from vision.synth.world import world_table

    for k in range(count):
        seed = seeds.WORLD_GATE_SEEDS[k % len(seeds.WORLD_GATE_SEEDS)]
        yield world_table(seed, family, frame=k // len(seeds.WORLD_GATE_SEEDS), tier=tier)


def frame_calibration(image, camera, diameters: tuple[float, float, float], lens: str = "truth"):
    """(calibration, whether it came from the frame's markers): calibrated from the frame's own markers, with the
    camera's true lens (`lens` "truth"), the lens estimated from the markers ("markers") or none ("plain"); where
    the markers are hidden (a hand), the exact calibration."""
    from calibration.camera import CameraIntrinsics
    from calibration.table import calibrate_table
    from vision.synth.truth import truth_calibration

    intr = CameraIntrinsics(camera_matrix=camera.camera_matrix, dist_coeffs=camera.dist_coeffs,
                            image_size=camera.image_size, rms_px=0.0)
    try:
        return calibrate_table(image, intrinsics=intr if lens == "truth" else None,
                               estimate_distortion=lens == "markers").with_disk_diameters(diameters), True
    except InputError:
        return truth_calibration(camera, diameters), False


def evaluate_family(family: str, count: int, tier: str, log=print, lens: str = "truth", camera_scale: int = 1,
                    config=None) -> dict:
    from vision.baseline import detect as baseline
    from vision.detect import detect_frame as detect_default
    from vision.fit import DEFAULT_CONFIG
    from vision.synth.render import render_frame

    def detect_frame(image, cal, diam):
        return detect_default(image, cal, diam, config=config or DEFAULT_CONFIG)

    eye, base = Tally(), Tally()
    exact = calibrated = 0
    for setup, camera in frames_of(family, count, tier, camera_scale):
        frame = render_frame(setup, camera)
        diam = tuple(float(v) for v in setup.diameters_mm)
        cal, from_markers = frame_calibration(frame.image, camera, diam, lens)
        calibrated += int(from_markers)
        for tally, fn in ((eye, detect_frame), (base, baseline)):
            fn(frame.image, cal, diam)          # warm: the remap maps and first-call costs are not per frame
            t0 = time.perf_counter()
            det = fn(frame.image, cal, diam)
            tally.ms.append((time.perf_counter() - t0) * 1000.0)
            tally.frames += 1
            before = (tally.pins_found, tally.pins_true, tally.pins_detected)
            score_frame(tally, frame.scene, det, diam)
            if tally is eye:
                d = (tally.pins_found - before[0], tally.pins_true - before[1], tally.pins_detected - before[2])
                exact += int(d[0] == d[1] == d[2])
    log(f"{family} ({tier}): {eye.frames} frames")
    return {"family": family, "tier": tier, "eye": eye, "base": base, "exact": exact, "calibrated": calibrated}


def _fmt(v, key: str) -> str:
    if v is None:
        return "n/a"
    if "mm" in key:
        return f"{v:.2f}"
    if "ms" in key:
        return f"{v:.0f}"
    return f"{100 * v:.1f} %"


KEYS = ("recall >=50% visible", "recall 25-50% visible", "precision (>=25% visible)", "centre error median (mm)",
        "centre error p95 (mm)", "size-class accuracy", "stacking order accuracy (overlapping pairs)",
        "pin precision", "pin recall")


def markdown(results: list[dict], held_out: set[str], command: str) -> str:
    head = ["family", "split", "frames", "disks >=50 %"] + list(KEYS) + ["pin sets exact", "ms median",
                                                                         "x HoughCircles"]
    lines = [f"Command: `{command}`", "", f"Date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        m, mb = metrics(r["eye"]), metrics(r["base"])
        split = "held out" if r["family"] in held_out else ("old gate" if r["family"] == "classic" else "training")
        ratio = m["ms per frame median"] / mb["ms per frame median"] if mb["ms per frame median"] else None
        cells = [r["family"], split, str(r["eye"].frames), str(r["eye"].present["visible"])]
        cells += [_fmt(m[k], k) for k in KEYS]
        cells += [f"{r['exact']} of {r['eye'].frames}", _fmt(m["ms per frame median"], "ms"),
                  "n/a" if ratio is None else f"{ratio:.2f}x"]
        lines.append("| " + " | ".join(cells) + " |")
    uncal = [f"{r['family']} {r['eye'].frames - r['calibrated']}" for r in results if r["calibrated"] < r["eye"].frames]
    if uncal:
        lines += ["", "Frames whose markers could not be calibrated (a hand over a marker), scored with the exact "
                  "calibration: " + ", ".join(uncal)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", type=int, default=6, help="frames per family (default 6)")
    p.add_argument("--family", action="append", help="only these families (repeatable)")
    p.add_argument("--tier", default="standard", choices=["standard", "hard", "piled", "alike", "heaped"],
                   help="the tables (`alike`: disks printed alike in lines and heaps, `heaped`: in heaps of 12-24, "
                        "the randomized world's families only)")
    p.add_argument("--lens", default="truth", choices=["truth", "markers", "plain"],
                   help="calibrate with the true lens (default), with none (estimated from the markers, as "
                        "`tablesight calibrate` without --intrinsics), or with none and no estimate")
    p.add_argument("--camera-scale", type=int, default=1, choices=[1, 2, 3, 4],
                   help="cameras with this many times the pixels a side (default 1: 1920x1080)")
    p.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                   help="one of the eye's settings changed (DetectorConfig; repeatable; `off` for None)")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    cv2.setNumThreads(1)
    config = eye_config(args.setting, "eval_families")
    if config is None:
        return 2
    try:
        from vision.synth.world import ALIKE_TIERS, HELD_OUT_FAMILIES, TRAINING_FAMILIES
    except ImportError:
        TRAINING_FAMILIES, HELD_OUT_FAMILIES, ALIKE_TIERS = (), (), ()
    families = args.family or (["classic"] + list(TRAINING_FAMILIES) + list(HELD_OUT_FAMILIES))
    if args.tier in ALIKE_TIERS and "classic" in families:
        print(f"eval_families: the classic look has no {args.tier} tables: left out", file=sys.stderr)
        families = [f for f in families if f != "classic"]
    results = [evaluate_family(f, args.frames, args.tier, log=lambda m: print(m, file=sys.stderr), lens=args.lens,
                               camera_scale=args.camera_scale, config=config) for f in families]
    text = markdown(results, set(HELD_OUT_FAMILIES),
                    ".venv/bin/python benchmarks/eval_families.py " + " ".join(argv or sys.argv[1:]))
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
