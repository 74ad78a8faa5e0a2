"""The eye on its tuning seeds: where its settings are chosen, never on gate seeds or held-out families.

    .venv/bin/python benchmarks/tune_eye.py [--frames 6] [--skip N] [--height-weight W] [--judge-weight W]
                                            [--accept-probability P] [--rim-level L] [--min-rim R]
                                            [--rays N]
                                            [--model NET.onnx --verdict VERDICT.json]
                                            [--judge JUDGE.onnx] [--nest-judge NEST.onnx]
                                            [--nest-probability P|off] [--nest-search N]
                                            [--lone-judge LONE.onnx] [--lone-probability P|off]
                                            [--tier standard|piled|hard|alike|heaped] [--camera-scale N]
                                            [--network-px-per-mm S] [--setting NAME=VALUE ...]

Frames of twelve training families of the randomized world (two on the `scatter` cloths; `WORLD_TUNING_SEEDS`) and
of the classic look (`TUNING_SEEDS`), calibrated exactly; one line of totals (recall of disks >= 50 % visible,
precision, centre error, stacking order, pins), then one line per family with `--per-family`. `--height-weight`,
`--judge-weight`, `--accept-probability`, `--rim-level`, `--min-rim`, `--rays` and `--network-px-per-mm` override
`StackingConfig.height_weight`, `StackingConfig.judge_weight`, `DetectorConfig.accept_probability`,
`DetectorConfig.rim_level`, `DetectorConfig.min_rim`, `DetectorConfig.rays` and `DetectorConfig.network_px_per_mm`,
so a setting's choice can be rerun (the verdict stays the shipped one unless `--verdict` names another); `--model`
and `--verdict` run a retrained network (and the verdict learned on its maps) instead of the shipped ones, `--judge`
a retrained pair judge, `--nest-judge` a retrained nest judge; `--nest-probability` overrides
`DetectorConfig.nest_probability` (`off`: the nest judge is not asked); `--nest-search` overrides
`DetectorConfig.nest_search` (0: the judge is asked about suspicions only); `--lone-judge` a retrained lone judge,
`--lone-probability` overrides `DetectorConfig.lone_probability` (`off`: the lone judge is not asked). `--tier piled` plays tables with melee
piles instead, `--tier hard` the hard tier's tables (`vision.synth.tiers`), `--tier alike` tables whose disks of
one army and size are printed alike (chips of a set; the classic look has none), `--tier heaped` the same prints in
one or two heaps of 12-24 (a bag of chips poured out). `--camera-scale N` sees the same rooms with N times the
camera's pixels a side (a 4K webcam, a phone's photo). `--setting NAME=VALUE` changes any other `DetectorConfig`
setting (`DetectorConfig.changed`), e.g. `--setting map_views=2`.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from eval_vision import Tally, metrics, score_frame  # noqa: E402

FAMILIES = ("photo-thin-felt", "paint-wide-printed", "shapes-none-wood", "flat-wide-black", "photo-none-black",
            "paint-thin-wood", "shapes-wide-felt", "flat-none-printed", "photo-wide-wood", "paint-none-black",
            "shapes-thin-scatter", "photo-none-scatter", "classic")


def tuning_frames(count: int, tier: str = "standard", skip: int = 0):
    """(family, setup, camera) of `count` tuning frames per family, of the `tier`'s tables, after the first `skip`
    seeds."""
    from vision.synth.camera import table_camera
    from vision.synth.scenes import random_table
    from vision.synth.seeds import TUNING_SEEDS, WORLD_TUNING_SEEDS
    from vision.synth.tiers import tier_settings
    from vision.synth.world import ALIKE_TIERS, world_table

    for family in FAMILIES:
        if family == "classic" and tier in ALIKE_TIERS:   # the classic look prints every disk its own way
            continue
        for seed in (TUNING_SEEDS if family == "classic" else WORLD_TUNING_SEEDS)[skip:skip + count]:
            if family == "classic":
                yield family, random_table(seed, tier), table_camera(seed, tier_settings(tier).camera)
            else:
                yield (family, *world_table(seed, family, tier=tier))


def line(name: str, t: Tally) -> str:
    m = metrics(t)
    pct = lambda k: f"{100 * m[k]:.1f}" if m[k] is not None else "n/a"  # noqa: E731
    return (f"{name:22s} recall {pct('recall >=50% visible')} precision {pct('precision (>=25% visible)')} "
            f"centre {m['centre error median (mm)']:.2f}/{m['centre error p95 (mm)']:.2f} mm "
            f"stacking {pct('stacking order accuracy (overlapping pairs)')} "
            f"pins {pct('pin precision')}/{pct('pin recall')}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", type=int, default=6, help="tuning frames per family")
    p.add_argument("--skip", type=int, default=0, help="leave out each family's first N tuning seeds (other frames "
                                                       "to judge a candidate on once more)")
    p.add_argument("--height-weight", type=float, default=None)
    p.add_argument("--judge-weight", type=float, default=None)
    p.add_argument("--accept-probability", type=float, default=None)
    p.add_argument("--rim-level", type=float, default=None)
    p.add_argument("--min-rim", type=float, default=None)
    p.add_argument("--min-face", type=float, default=None, help="DetectorConfig.min_face")
    p.add_argument("--rays", type=int, default=None, help="DetectorConfig.rays: rim rays per circle")
    p.add_argument("--network-px-per-mm", type=float, default=None,
                   help="the scale the network reads the tables at (learn a verdict at it: vision.verdict_training)")
    p.add_argument("--model", default=None, help="a face network of one's own (default: the shipped one)")
    p.add_argument("--verdict", default=None, help="a verdict file of one's own (default: the shipped one)")
    p.add_argument("--judge", default=None, help="a pair judge of one's own (default: the shipped one)")
    p.add_argument("--nest-judge", default=None, help="a nest judge of one's own (default: the shipped one)")
    p.add_argument("--nest-probability", default=None, help="DetectorConfig.nest_probability, or off")
    p.add_argument("--nest-search", type=int, default=None, help="DetectorConfig.nest_search")
    p.add_argument("--lone-judge", default=None, help="a lone judge of one's own (default: the shipped one)")
    p.add_argument("--lone-probability", default=None, help="DetectorConfig.lone_probability, or off")
    p.add_argument("--tier", default="standard", choices=["standard", "piled", "hard", "alike", "heaped"],
                   help="the tables: standard, piled (melee piles), hard (`vision.synth.tiers`), alike (disks "
                        "printed alike, the randomized world's families only: `vision.synth.world`) or heaped (the "
                        "same prints in heaps of 12-24)")
    p.add_argument("--camera-scale", type=int, default=1, choices=[1, 2, 3, 4],
                   help="see the rooms with N times the camera's pixels a side (`SynthCamera.sharper`)")
    p.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                   help="any other DetectorConfig setting (repeatable; `off` for None)")
    p.add_argument("--per-family", action="store_true")
    args = p.parse_args(argv)
    if args.frames < 1 or args.skip < 0:
        print("tune_eye: --frames must be >= 1 and --skip >= 0", file=sys.stderr)
        return 2
    for name in ("model", "verdict", "judge", "nest_judge", "lone_judge"):
        path = getattr(args, name)
        if path is not None and not Path(path).is_file():
            print(f"tune_eye: --{name.replace('_', '-')} {path}: no such file", file=sys.stderr)
            return 2
    from vision import detect, stacking
    from vision.fit import DEFAULT_CONFIG
    from vision.synth.render import render_frame
    from vision.synth.truth import truth_calibration

    try:   # the settings' own checks: a value out of range is one line
        config = replace(DEFAULT_CONFIG, model_path=args.model, verdict_path=args.verdict, nest_model=args.nest_judge,
                         lone_model=args.lone_judge)
        if args.lone_probability is not None:
            config = replace(config, lone_probability=None if args.lone_probability == "off"
                             else float(args.lone_probability))
        if args.nest_probability is not None:
            config = replace(config, nest_probability=None if args.nest_probability == "off"
                             else float(args.nest_probability))
        if args.nest_search is not None:
            config = replace(config, nest_search=args.nest_search)
        if args.accept_probability is not None:
            config = replace(config, accept_probability=args.accept_probability)
        if args.rim_level is not None:
            config = replace(config, rim_level=args.rim_level)
        if args.min_rim is not None:
            config = replace(config, min_rim=args.min_rim)
        if args.rays is not None:
            config = replace(config, rays=args.rays)
        if args.min_face is not None:
            config = replace(config, min_face=args.min_face)
        if args.network_px_per_mm is not None:
            config = replace(config, network_px_per_mm=args.network_px_per_mm)
        for setting in args.setting:
            config = config.changed(setting)
        chosen = stacking.DEFAULT_STACKING
        for name in ("height_weight", "judge_weight"):
            if getattr(args, name) is not None:
                chosen = replace(chosen, **{name: getattr(args, name)})
        if args.judge is not None:
            chosen = replace(chosen, judge_model=args.judge)
    except ValueError as exc:
        print(f"tune_eye: {exc}", file=sys.stderr)
        return 2
    if chosen != stacking.DEFAULT_STACKING:
        detect.order_stacks = lambda *a, **k: stacking.order_stacks(*a, config=chosen, **k)  # noqa: E731
    total, per = Tally(), {}
    for family, setup, camera in tuning_frames(args.frames, args.tier, args.skip):
        camera = camera.sharper(args.camera_scale)
        frame = render_frame(setup, camera)
        diam = tuple(float(v) for v in setup.diameters_mm)
        scene = detect.detect_frame(frame.image, truth_calibration(camera, diam), diam, config=config)
        for t in (total, per.setdefault(family, Tally())):
            t.frames += 1
            score_frame(t, frame.scene, scene, diam)
    print(line("all tuning frames", total))
    print(f"  ({total.found['visible']} of {total.present['visible']} disks >= 50 % visible found, "
          f"{total.detections - sum(total.found.values())} of {total.detections} detections not a disk; "
          f"pins {total.pins_found} of {total.pins_detected} detected right, of {total.pins_true} true; "
          f"{total.order_ok} of {total.order_n} overlapping pairs ordered right)")
    if args.per_family:
        for family, t in per.items():
            print(line(family, t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
