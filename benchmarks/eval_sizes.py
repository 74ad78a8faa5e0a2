"""The eye on disk sizes no training run drew: small chips, chips all of one size, very large disks.

    .venv/bin/python benchmarks/eval_sizes.py [--frames 3] [--split tuning|held-out] [--lower-bound MM]
        [--tier standard|alike|heaped] [--rows 0,3] [--at-scale-only] [--setting NAME=VALUE ...] [--out FILE]

The face network learned disks of 28-110 mm at 1 px/mm (`vision.facemap.TRAINED_DIAMETERS_MM`); the eye shows it
other sizes at a scale that brings them in (`vision.detect.network_px_per_mm`). Frames: the tuning seeds of six
training families (`WORLD_TUNING_SEEDS`, where the eye's settings are chosen; `--split held-out`: the gate seeds
of the three held-out families, `WORLD_GATE_SEEDS`, for reporting only), each room drawn again with the
disks of a row's sizes (`world_table(..., diameters_mm=...)`), calibrated exactly; detected with the row's sizes
(a row of one size renders three sizes 0.1 mm apart and detects with that one diameter), once with the table read
at the network's scale and once at 1 px/mm whatever the sizes (the reading before). Recall of disks >= 50 %
visible, precision, centre error and stacking order (`benchmarks/eval_vision.py`'s scoring); size classes are
not scored (chips of one size have one). `--lower-bound MM` reads the table as if the network had learned disks
from MM up (the choice of the bound: 24 / 28 / 32 mm were compared on the tuning split). `--tier alike` / `heaped`
draws each army's disks printed alike in lines and heaps / poured out in heaps instead of the usual tables;
`--setting` changes one of the eye's settings (`DetectorConfig.changed`; e.g. `one_size_mm=off`, how chips of one
size were read before).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from eval_vision import Tally, eye_config, metrics, score_frame  # noqa: E402

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
            lower_bound: float | None = None, tier: str = "standard", config=None) -> Tally:
    from vision import detect
    from vision.synth.render import render_frame
    from vision.synth.truth import truth_calibration
    from vision.synth.world import world_table

    config = config or detect.DEFAULT_CONFIG
    trained = detect.TRAINED_DIAMETERS_MM
    if not at_network_scale:   # every size inside the "trained" range: the table is read at 1 px/mm
        detect.TRAINED_DIAMETERS_MM = (0.0, float("inf"))
        config = replace(config, one_size_mm=None)
    elif lower_bound is not None:
        detect.TRAINED_DIAMETERS_MM = (lower_bound, trained[1])
    try:
        tally = Tally()
        families, seeds = split_frames(split)
        for family in families:
            for seed in seeds[:frames]:
                setup, camera = world_table(seed, family, tier=tier, diameters_mm=rendered)
                frame = render_frame(setup, camera)
                diam = tuple(float(v) for v in setup.diameters_mm)
                scene = detect.detect_frame(frame.image, truth_calibration(camera, diam),
                                            detected_with if detected_with is not None else diam,
                                            config=config)
                tally.frames += 1
                score_frame(tally, frame.scene, scene, diam)
        return tally
    finally:
        detect.TRAINED_DIAMETERS_MM = trained


def _scale(sizes, lower_bound: float | None, config) -> float:
    """The network's px/mm for `sizes`, with the learned range's lower bound taken as `lower_bound` if given."""
    from vision import detect

    trained = detect.TRAINED_DIAMETERS_MM
    if lower_bound is not None:
        detect.TRAINED_DIAMETERS_MM = (lower_bound, trained[1])
    try:
        return detect.network_px_per_mm(sizes, config)
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
    p.add_argument("--tier", default="standard", choices=("standard", "alike", "heaped"),
                   help="the world's tables: as usual, or each army's disks printed alike in lines and heaps "
                        "(`alike`), or poured out in heaps of 12-24 (`heaped`)")
    p.add_argument("--rows", default=None,
                   help="only these rows, by their number in the table (0-5, comma-separated)")
    p.add_argument("--at-scale-only", action="store_true",
                   help="read each row at the network's scale only (not also at 1 px/mm, the reading before)")
    p.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                   help="one of the eye's settings changed (DetectorConfig; repeatable; `off` for None)")
    p.add_argument("--out", default=None, help="write the markdown here")
    args = p.parse_args(argv)
    config = eye_config(args.setting, "eval_sizes")
    if config is None:
        return 2
    try:
        rows = [ROWS[int(k)] for k in args.rows.split(",")] if args.rows else list(ROWS)
    except (ValueError, IndexError):
        print(f"eval_sizes: --rows {args.rows!r}: expected row numbers 0-{len(ROWS) - 1}, comma-separated",
              file=sys.stderr)
        return 2
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
    bound += "" if args.tier == "standard" else f" --tier {args.tier}"
    bound += "" if not args.rows else f" --rows {args.rows}"
    bound += " --at-scale-only" if args.at_scale_only else ""
    bound += "".join(f" --setting {setting}" for setting in args.setting)
    lines = [f"Command: `.venv/bin/python benchmarks/eval_sizes.py --frames {args.frames} --split {args.split}{bound}`",
             "",
             f"Date: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC", "",
             f"{len(families)} {what.format(args.frames)} frames per row: {', '.join(families)}.", "",
             "| disks | network px/mm | read at | recall >= 50 % visible | precision | centre median / p95 (mm) "
             "| stacking order |",
             "|---|---|---|---|---|---|---|"]
    for name, rendered, detected_with in rows:
        scale = 1.0 if detected_with is None else _scale(DiskSizes.parse(detected_with), args.lower_bound, config)
        ways = (True,) if scale == 1.0 or args.at_scale_only else (False, True)
        for at_scale in ways:
            t = run_row(rendered, detected_with, args.frames, at_scale, args.split, args.lower_bound, args.tier,
                        config)
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
