"""What one setting of the eye costs on a whole frame, against the HoughCircles baseline, measured interleaved.

    .venv/bin/python benchmarks/setting_cost.py lone_probability=off [--speed-seeds 3] [--rounds 5]

On the speed tables of `bench_vision.py` (two 1080p frames of a 40-disk standard table per gate seed, one core),
`detect_frame` with the shipped settings and with SETTING=VALUE (`off`: None) and the plain HoughCircles pipeline
run one after the other on each frame, `--rounds` times over: the machine's drift between runs (back-to-back runs of
`bench_vision.py` moved the ratio by -0.3 to +1.1x for the same code) falls on all three alike. Prints the CPU
medians and both ratios.
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("setting", help="NAME=VALUE of DetectorConfig (VALUE `off`: None)")
    p.add_argument("--speed-seeds", type=int, default=3)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    from vision.fit import DEFAULT_CONFIG

    try:
        other = DEFAULT_CONFIG.changed(args.setting)
    except ValueError as exc:
        print(f"setting_cost: {exc}", file=sys.stderr)
        return 2
    if args.speed_seeds < 1 or args.rounds < 1:
        print("setting_cost: --speed-seeds and --rounds must be positive", file=sys.stderr)
        return 2
    cv2.setNumThreads(1)
    from vision.baseline import detect as baseline_detect
    from vision.detect import detect_frame
    from vision.synth.seeds import GATE_SEEDS

    frames = [(img, cal) for _, _, _, img, cal in speed_frames(GATE_SEEDS[:args.speed_seeds], 40)]
    runs = {"shipped": lambda img, cal: detect_frame(img, cal, config=DEFAULT_CONFIG),
            args.setting: lambda img, cal: detect_frame(img, cal, config=other),
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
