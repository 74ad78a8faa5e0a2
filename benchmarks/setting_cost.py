"""What one setting of the eye costs on a whole frame, against the HoughCircles baseline, measured interleaved.

    .venv/bin/python benchmarks/setting_cost.py lone_probability=off [--speed-seeds 3] [--rounds 5] [--chips-mm D]

On the speed tables of `bench_vision.py` (two 1080p frames of a 40-disk standard table per gate seed, one core),
`detect_frame` with the shipped settings and with SETTING=VALUE (`off`: None) and the plain HoughCircles pipeline
run one after the other on each frame, `--rounds` times over: the machine's drift between runs (back-to-back runs of
`bench_vision.py` moved the ratio by -0.3 to +1.1x for the same code) falls on all three alike. Prints the CPU
medians and both ratios. `--chips-mm D`: instead of the speed tables, the gate rooms of the held-out family
`heraldic-wide-felt` (one frame per seed) drawn with chips all of diameter D, looked for with that one diameter (what
`DetectorConfig.one_size_mm` costs).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import cv2  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_vision import speed_frames  # noqa: E402


def chip_frames(diameter_mm: float, seeds: int) -> list:
    """(image, calibration) of the first `seeds` gate rooms of `heraldic-wide-felt` drawn with chips of one size."""
    from vision.synth.render import render_frame
    from vision.synth.seeds import WORLD_GATE_SEEDS
    from vision.synth.truth import truth_calibration
    from vision.synth.world import world_table

    diam = (diameter_mm, diameter_mm + 0.1, diameter_mm + 0.2)   # one size, drawn as eval_sizes.py draws it
    out = []
    for seed in WORLD_GATE_SEEDS[:seeds]:
        setup, camera = world_table(seed, "heraldic-wide-felt", diameters_mm=diam)
        cal = truth_calibration(camera, diam)
        cal.rectify_maps()
        out.append((render_frame(setup, camera).image, cal))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("setting", help="NAME=VALUE of DetectorConfig (VALUE `off`: None)")
    p.add_argument("--speed-seeds", type=int, default=3)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--chips-mm", type=float, default=None,
                   help="gate rooms drawn with chips of this one diameter instead of the 40-disk speed tables")
    args = p.parse_args(argv)
    from vision.fit import DEFAULT_CONFIG

    try:
        other = DEFAULT_CONFIG.changed(args.setting)
    except ValueError as exc:
        print(f"setting_cost: {exc}", file=sys.stderr)
        return 2
    if args.speed_seeds < 1 or args.rounds < 1 or (args.chips_mm is not None and not 5 <= args.chips_mm <= 300):
        print("setting_cost: --speed-seeds and --rounds must be positive, --chips-mm within 5..300", file=sys.stderr)
        return 2
    cv2.setNumThreads(1)
    from vision.baseline import detect as baseline_detect
    from vision.detect import detect_frame
    from vision.synth.seeds import GATE_SEEDS

    if args.chips_mm is None:
        frames = [(img, cal) for _, _, _, img, cal in speed_frames(GATE_SEEDS[:args.speed_seeds], 40)]
        sizes = None
    else:
        frames, sizes = chip_frames(args.chips_mm, args.speed_seeds), f"{args.chips_mm:g}"
    runs = {"shipped": lambda img, cal: detect_frame(img, cal, sizes, config=DEFAULT_CONFIG),
            args.setting: lambda img, cal: detect_frame(img, cal, sizes, config=other),
            "baseline": lambda img, cal: baseline_detect(img, cal, None)}
    for img, cal in frames:             # first-call costs are start-up
        for run in runs.values():
            run(img, cal)
    ms: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.rounds):
        for img, cal in frames:
            for name, run in runs.items():
                t = time.process_time()
                run(img, cal)
                ms[name].append((time.process_time() - t) * 1000)
    m = {k: float(np.median(v)) for k, v in ms.items()}
    print(f"{len(frames)} frames x {args.rounds} rounds, CPU medians: shipped {m['shipped']:.1f} ms, "
          f"{args.setting} {m[args.setting]:.1f} ms, HoughCircles baseline {m['baseline']:.1f} ms; "
          f"ratio {m['shipped'] / m['baseline']:.2f}x shipped, {m[args.setting] / m['baseline']:.2f}x with "
          f"{args.setting}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
