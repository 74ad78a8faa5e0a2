"""How well the eye says where a disk it did not claim may lie on another (the scene extra `suspected_disks`).

    .venv/bin/python benchmarks/suspects.py [--seeds tuning|test|gate] [--frames 3] [--family NAME ...]
                                            [--out benchmarks/results/suspects.md]

Seen from above, a small disk lying wholly on a larger one looks like a ring printed in the larger one's art: the
eye's commonest miss. Where the verdict turned such a circle down but found it likely enough
(`DetectorConfig.suspect_probability`), the scene says a disk may lie there instead of claiming one.

Frames, calibrated exactly, through `vision.detect.detect_frame`: the tuning seeds of `benchmarks/tune_eye.py`'s
families (`--seeds tuning`, where the setting was chosen), the classic look's test seeds in the same rooms
(`--seeds test`, a second check of that choice), or the gate seeds of `benchmarks/eval_families.py` (`--seeds
gate`: reporting only). Counted per family: true disks >= 50 % visible lying with 70 % or more of their face within
one larger disk, those of them the eye missed, and those of the missed a suspicion points at (one of their size
within half their radius); and every suspicion: pointing at such a missed disk, or at no disk (a ring in art).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from eval_vision import dated_report, eye_config, match  # noqa: E402
from vision.scene_match import visible_fraction  # noqa: E402

WITHIN = 0.7   # share of a disk's face over one larger disk that makes it one lying on it
LEVELS = (0.2, 0.3, 0.4, 0.5)   # suspicions counted again at these probabilities (the shipped level first)


def _face_within(upper, lower, n: int = 24) -> float:
    """Share of `upper`'s face (a grid of points) that lies over `lower`'s circle."""
    k = [(i + 0.5) / n * 2 - 1 for i in range(n)]
    pts = [(x, y) for x in k for y in k if x * x + y * y <= 1]
    inside = sum(math.hypot(upper.x_mm + x * upper.radius_mm - lower.x_mm, upper.y_mm + y * upper.radius_mm
                            - lower.y_mm) <= lower.radius_mm for x, y in pts)
    return inside / len(pts)


def frame_counts(setup, camera, config=None) -> dict[str, int]:
    from vision.detect import DEFAULT_CONFIG, detect_frame
    from vision.synth.render import render_frame
    from vision.synth.truth import truth_calibration

    frame = render_frame(setup, camera)
    diam = tuple(float(v) for v in setup.diameters_mm)
    scene = detect_frame(frame.image, truth_calibration(camera, diam), diam, config=config or DEFAULT_CONFIG)
    truth = [t for t in frame.scene.disks if not t.extra.get("held")]
    found = set(match(frame.scene, scene).values())
    lying = [t for t in truth if visible_fraction(t) >= 0.5 and any(
        o.radius_mm > t.radius_mm and o.z < t.z and _face_within(t, o) >= WITHIN for o in truth)]
    missed = [t for t in lying if t.id not in found]
    suspects = scene.extra.get("suspected_disks", [])

    def points_at(s, t) -> bool:
        return s["size"] == t.size and math.hypot(s["x_mm"] - t.x_mm, s["y_mm"] - t.y_mm) < 0.5 * t.radius_mm

    out = {}
    for level in LEVELS:
        at = [s for s in suspects if s["probability"] >= level]
        out |= {(level, "missed_flagged"): sum(any(points_at(s, t) for s in at) for t in missed),
                (level, "flags"): len(at),
                (level, "flags_right"): sum(any(points_at(s, t) for t in missed) for s in at),
                (level, "flags_on_nothing"): sum(not any(points_at(s, t) for t in truth) for s in at)}
    return {"lying": len(lying), "missed": len(missed), "disks": len(scene.disks), **out}


def frames(seeds: str, families: list[str], count: int, skip: int = 0):
    """(family, setup, camera) of `count` frames a family, after the first `skip` seeds (tuning and test seeds)."""
    if seeds == "tuning":
        from tune_eye import tuning_frames

        for family, setup, camera in tuning_frames(count, skip=skip):
            if not families or family in families:
                yield family, setup, camera
        return
    if seeds == "test":
        from tune_eye import FAMILIES
        from vision.synth.camera import table_camera
        from vision.synth.scenes import random_table
        from vision.synth.seeds import TEST_SEEDS
        from vision.synth.tiers import tier_settings
        from vision.synth.world import world_table

        for family in families or FAMILIES:
            for seed in TEST_SEEDS[skip:skip + count]:
                yield (family, random_table(seed, "standard"), table_camera(seed, tier_settings("standard").camera)) \
                    if family == "classic" else (family, *world_table(seed, family))
        return
    from eval_families import frames_of

    for family in families:
        for setup, camera in frames_of(family, count, "standard"):
            yield family, setup, camera


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", choices=("tuning", "test", "gate"), default="tuning")
    p.add_argument("--frames", type=int, default=3, help="frames per family")
    p.add_argument("--skip", type=int, default=0, help="leave out the first N tuning or test seeds (frames "
                   "not used before)")
    p.add_argument("--family", action="append", default=[], help="families (default: tune_eye's; --seeds gate "
                   "needs them)")
    p.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                   help="one of the eye's settings changed (DetectorConfig; repeatable; `off` for None), e.g. "
                        "`nest_probability=off` for the suspicions the live table shows")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    config = eye_config(args.setting, "suspects")
    if config is None:
        return 2
    if args.frames < 1 or args.skip < 0 or (args.seeds == "gate" and (not args.family or args.skip)):
        print("suspects: --frames must be >= 1, --skip >= 0, and --seeds gate needs --family (and no --skip)",
              file=sys.stderr)
        return 2
    from tablesight.errors import InputError

    rows: dict[str, dict[str, int]] = {}
    try:
        for family, setup, camera in frames(args.seeds, args.family, args.frames, args.skip):
            c = frame_counts(setup, camera, config)
            t = rows.setdefault(family, dict.fromkeys(c, 0) | {"frames": 0})
            t["frames"] += 1
            for k, v in c.items():
                t[k] += v
    except InputError as exc:      # an unknown family
        print(f"suspects: {exc}", file=sys.stderr)
        return 2
    if not rows:
        print("suspects: no frames (the families asked for are not among the tuning ones)", file=sys.stderr)
        return 2
    total = {k: sum(r[k] for r in rows.values()) for k in next(iter(rows.values()))}
    level = config.suspect_probability
    head = ["| family | frames | disks lying on a larger one | missed | of them pointed at | suspicions | "
            "pointing at a missed disk | at no disk |", "|---|---|---|---|---|---|---|---|"]
    lines = [f"At the shipped probability {level}:", "", *head]
    for name, r in [*rows.items(), ("all", total)]:
        lines.append(f"| {name} | {r['frames']} | {r['lying']} | {r['missed']} | {r[(level, 'missed_flagged')]} | "
                     f"{r[(level, 'flags')]} | {r[(level, 'flags_right')]} | {r[(level, 'flags_on_nothing')]} |")
    lines += ["", "All families, suspicions counted from other probabilities:", "",
              head[0].replace("family", "probability"), head[1]]
    for lv in (v for v in LEVELS if v >= level):
        lines.append(f"| {lv} | {total['frames']} | {total['lying']} | {total['missed']} | "
                     f"{total[(lv, 'missed_flagged')]} | {total[(lv, 'flags')]} | {total[(lv, 'flags_right')]} | "
                     f"{total[(lv, 'flags_on_nothing')]} |")
    lines += ["", f"Disks the eye reported in all: {total['disks']}" +
              (f" (settings changed: {', '.join(args.setting)})" if args.setting else "")]
    dated_report(__doc__, " ".join(["benchmarks/suspects.py", *(argv if argv is not None else sys.argv[1:])]), lines,
                 args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
