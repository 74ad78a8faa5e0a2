"""The eye on disk sizes no training run drew: small chips, chips all of one size, very large disks.

    .venv/bin/python benchmarks/eval_sizes.py [--frames 3] [--split tuning|held-out] [--lower-bound MM] [--out FILE]

The face network learned disks of 28-110 mm at 1 px/mm (`vision.facemap.TRAINED_DIAMETERS_MM`); the eye shows it
other sizes at a scale that brings them in (`vision.detect.network_px_per_mm`). Frames: the tuning seeds of six
training families (`WORLD_TUNING_SEEDS`, where the eye's settings are chosen; `--split held-out`: the gate seeds
of the three held-out families, `WORLD_GATE_SEEDS`, for reporting only), each room drawn again with the
disks of a row's sizes (`world_table(..., diameters_mm=...)`), calibrated exactly; detected with the row's sizes
(a row of one size renders three sizes 0.1 mm apart and detects with that one diameter), once with the table read
at the network's scale and once at 1 px/mm whatever the sizes (the reading before). Recall of disks >= 50 %
visible, precision, centre error and stacking order (`benchmarks/eval_vision.py`'s scoring); size classes are
not scored (chips of one size have one). `--lower-bound MM` reads the table as if the network had learned disks
from MM up (the choice of the bound: 24 / 28 / 32 mm were compared on the tuning split).
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from eval_vision import Tally, metrics, score_frame  # noqa: E402

FAMILIES = ("photo-thin-felt", "paint-wide-printed", "shapes-none-wood", "flat-wide-black", "photo-none-black",
            "paint-thin-wood")
SPLITS = ("tuning", "held-out")
# (name, rendered S/M/L, detected with): None renders each room's own sizes and detects with them
ROWS = (("the rooms' own sizes (28-110 mm)", None, None),
        ("20 / 26 / 34 mm", (20.0, 26.0, 34.0), "20,26,34"),
        ("22 / 30 / 40 mm", (22.0, 30.0, 40.0), "22,30,40"),
        ("25 mm, all one size", (25.0, 25.1, 25.2), "25"),
        ("39 mm, all one size", (39.0, 39.1, 39.2), "39"),
        ("60 / 95 / 140 mm", (60.0, 95.0, 140.0), "60,95,140"))


def split_frames(split: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The families and seeds of a split."""
    from vision.synth.seeds import WORLD_GATE_SEEDS, WORLD_TUNING_SEEDS
    from vision.synth.world import HELD_OUT_FAMILIES

    return (FAMILIES, WORLD_TUNING_SEEDS) if split == "tuning" else (HELD_OUT_FAMILIES, WORLD_GATE_SEEDS)


def run_row(rendered, detected_with, frames: int, at_network_scale: bool, split: str = "tuning",
            lower_bound: float | None = None) -> Tally:
    from vision import detect
    from vision.synth.render import render_frame
    from vision.synth.truth import truth_calibration
    from vision.synth.world import world_table

    trained = detect.TRAINED_DIAMETERS_MM
    if not at_network_scale:   # every size inside the "trained" range: the table is read at 1 px/mm
        detect.TRAINED_DIAMETERS_MM = (0.0, float("inf"))
    elif lower_bound is not None:
        detect.TRAINED_DIAMETERS_MM = (lower_bound, trained[1])
    try:
        tally = Tally()
        families, seeds = split_frames(split)
        for family in families:
            for seed in seeds[:frames]:
                setup, camera = world_table(seed, family, diameters_mm=rendered)
                frame = render_frame(setup, camera)
                diam = tuple(float(v) for v in setup.diameters_mm)
                scene = detect.detect_frame(frame.image, truth_calibration(camera, diam),
                                            detected_with if detected_with is not None else diam)
                tally.frames += 1
                score_frame(tally, frame.scene, scene, diam)
        return tally
    finally:
        detect.TRAINED_DIAMETERS_MM = trained


def _scale(sizes, lower_bound: float | None) -> float:
    """The network's px/mm for `sizes`, with the learned range's lower bound taken as `lower_bound` if given."""
    from vision import detect

    trained = detect.TRAINED_DIAMETERS_MM
    if lower_bound is not None:
        detect.TRAINED_DIAMETERS_MM = (lower_bound, trained[1])
    try:
        return detect.network_px_per_mm(sizes)
    finally:
        detect.TRAINED_DIAMETERS_MM = trained


def _cells(t: Tally) -> str:
    m = metrics(t)
    pct = lambda k: f"{100 * m[k]:.1f} %" if m[k] is not None else "n/a"  # noqa: E731
    return (f"{pct('recall >=50% visible')} | {pct('precision (>=25% visible)')} | "
            f"{m['centre error median (mm)']:.2f} / {m['centre error p95 (mm)']:.2f} | "
            f"{pct('stacking order accuracy (overlapping pairs)')}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", type=int, default=3, help="frames per family and row")
    p.add_argument("--split", default="tuning", choices=SPLITS,
                   help="the training families' tuning seeds, or the held-out families' gate seeds")
    p.add_argument("--lower-bound", type=float, default=None, help="the smallest diameter taken as learned (mm)")
    p.add_argument("--out", default=None, help="write the markdown here")
    args = p.parse_args(argv)
    if args.frames < 1:
        print("eval_sizes: --frames must be at least 1", file=sys.stderr)
        return 2
    if args.lower_bound is not None and not 5.0 <= args.lower_bound <= 100.0:
        print("eval_sizes: --lower-bound must be within 5..100 mm", file=sys.stderr)
        return 2
    from vision.sizes import DiskSizes

    families, _ = split_frames(args.split)
    what = "training families x {} tuning" if args.split == "tuning" else "held-out families x {} gate"
    bound = "" if args.lower_bound is None else f" --lower-bound {args.lower_bound:g}"
    lines = [f"Command: `.venv/bin/python benchmarks/eval_sizes.py --frames {args.frames} --split {args.split}{bound}`",
             "",
             f"Date: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC", "",
             f"{len(families)} {what.format(args.frames)} frames per row: {', '.join(families)}.", "",
             "| disks | network px/mm | read at | recall >= 50 % visible | precision | centre median / p95 (mm) "
             "| stacking order |",
             "|---|---|---|---|---|---|---|"]
    for name, rendered, detected_with in ROWS:
        scale = 1.0 if detected_with is None else _scale(DiskSizes.parse(detected_with), args.lower_bound)
        ways = (True,) if scale == 1.0 else (False, True)
        for at_scale in ways:
            t = run_row(rendered, detected_with, args.frames, at_scale, args.split, args.lower_bound)
            read = "the network's scale" if at_scale and scale != 1.0 else "1 px/mm"
            lines.append(f"| {name} | {scale:.2f} | {read} | {_cells(t)} |")
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
