"""Train the judge of `vision.lonejudge` from scratch on the randomized synthetic world.

    .venv/bin/python -m vision.lone_training [--out vision/models/lonejudge.onnx] [--frames N]

Frames of the training families and the classic look are rendered from `WORLD_VERDICT_SEEDS` (rooms the face
network never trained on, so its maps make the mistakes it makes on a new table; frames 1 and up), their tables
by turns standard, heaped (the alike prints poured out: where such circles are commonest), alike (in lines) and
with melee piles, and run through the eye as shipped. Every lone circle (`vision.locate.lone_circles`, asked at a
lower outline share than the eye asks, `TRAIN_SHOWN`: more of both kinds to learn from) is one example, labelled
against the renderer's truth: a disk (a true disk of its size at least a quarter in view, its centre within
`MATCH_SHARE` of the radius) or not (no true disk of its size there: a cloth's spot, a ring of art in the open,
the gap between chips); so is every true disk at least half in view that the eye missed and that overlaps no disk
it found, at its true place. Round spots on a cloth are the hardest of the circles that are no disks (a flat
print of no border, 0 mm thick, is such a spot but for its edge), so `--scatter-frames` more frames (frames 2
and up) are drawn on the `scatter` cloths alone. Validation: the same from `WORLD_TUNING_SEEDS`. Patches get the
nest judge's photometric augmentation and mirror images, and its network and loop (`vision.nest_training`). Needs the `train`
extra (torch, onnx). On two CPU cores about 33 minutes to render and run the eye on the 2400 frames, 10 to train
the 4000 steps (the defaults: the shipped judge's command).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

from vision.nest_training import (MATCH_SHARE, MIN_VISIBLE, NestExample, crop_example, examples_of, jobs_of,
                                  train_and_write, training_frame)
from vision.pairjudge import Circle

TRAIN_SHOWN = 0.3        # the lone circles learned from show at least this share of their outline
MISSED_VISIBLE = 0.5     # a missed true disk this much in view is one more example of a disk
TIER_TURNS = ("standard", "heaped", "alike", "standard", "piled", "heaped")


def frame_examples(job: tuple[str, int, int, str]) -> list[NestExample]:
    """The examples of one frame (module docstring)."""
    from tablesight.scene import SIZE_CLASSES
    from vision.detect import STRIDE, battlefield_px, maps_of
    from vision.fit import DEFAULT_CONFIG
    from vision.locate import locate_in_maps, lone_circles

    family, seed, frame_no, tier = job
    tf = training_frame(family, seed, frame_no, tier)
    if tf is None:
        return []
    rect, cal, sizes, scale, net, seen, tr, vis = (tf.rect, tf.calibration, tf.sizes, tf.scale, tf.net, tf.seen,
                                                  tf.radius, tf.visible)
    ppm = 1.0
    cfg = DEFAULT_CONFIG
    maps = maps_of(rect, ppm, cfg, net)
    radii = [sizes.radius(s) * ppm for s in SIZE_CLASSES]
    bf = battlefield_px(cal)
    fits = locate_in_maps(maps, rect, radii, scale, net / STRIDE, (), cfg, bf)
    lone = lone_circles(maps, rect, fits, radii, scale, net / STRIDE, cfg, bf,
                        min_shown=TRAIN_SHOWN)
    out: list[NestExample] = []
    for s in lone:
        d = np.hypot(seen[:, 0] - s.cx, seen[:, 1] - s.cy)
        same = np.flatnonzero((np.abs(tr - s.r_px) < 0.5) & (d < MATCH_SHARE * s.r_px))
        if same.size and vis[same[np.argmin(d[same])]] < MIN_VISIBLE:
            continue                                    # a disk all but hidden: neither to be found nor invented
        a = Circle(s.cx, s.cy, s.r_px)
        e = crop_example(rect, a, a, disk=bool(same.size), judged=True, probability=s.rim_shown)
        if e is not None:
            out.append(e)
    # true disks the eye missed, in the open, at their true places
    slack = cfg.rim_tolerance_mm
    acc = np.array([(f.cx, f.cy, f.r_px) for f in fits]).reshape(-1, 3)
    for t in range(len(tr)):
        if vis[t] < MISSED_VISIBLE:
            continue
        d = np.hypot(acc[:, 0] - seen[t, 0], acc[:, 1] - seen[t, 1])
        found = ((np.abs(acc[:, 2] - tr[t]) < 0.5) & (d < MATCH_SHARE * tr[t])).any()
        if found or (d < acc[:, 2] + tr[t] - slack).any():
            continue                                    # found, or overlapping a disk found: not a lone circle
        a = Circle(float(seen[t, 0]), float(seen[t, 1]), float(tr[t]))
        e = crop_example(rect, a, a, disk=True, judged=False, probability=float("nan"))
        if e is not None:
            out.append(e)
    return out


def tiered_jobs(families: list[str], count: int, seeds: tuple[int, ...], first_frame: int
                ) -> list[tuple[str, int, int, str]]:
    """`vision.nest_training.jobs_of`'s frames, each with its tables' tier by turns (`TIER_TURNS`); when the count of
    families shares a factor with the turns', the turns step one further each time the families come round again,
    so that every family gets every tier."""
    n, shift = len(TIER_TURNS), math.gcd(len(families), len(TIER_TURNS)) > 1
    return [(f, s, m, TIER_TURNS[(k + (k // len(families) if shift else 0)) % n])
            for k, (f, s, m) in enumerate(jobs_of(families, count, seeds, first_frame))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="vision/models/lonejudge.onnx")
    p.add_argument("--frames", type=int, default=1800, help="training frames rendered")
    p.add_argument("--scatter-frames", type=int, default=600,
                   help="more training frames of the families on the scatter cloths (spots, cobbles, camouflage)")
    p.add_argument("--valid-frames", type=int, default=144)
    p.add_argument("--steps", type=int, default=4000)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--workers", type=int, default=2, help="processes rendering frames")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--examples", type=Path, help="keep the examples in this folder and reuse them")
    args = p.parse_args(argv)
    if min(args.frames, args.valid_frames, args.steps, args.batch, args.workers) < 1 or args.scatter_frames < 0:
        print("lone_training: --frames, --valid-frames, --steps, --batch and --workers must be positive, "
              "--scatter-frames not negative",
              file=sys.stderr)
        return 2
    import pickle

    from vision.synth.seeds import WORLD_TUNING_SEEDS, WORLD_VERDICT_SEEDS
    from vision.synth.world import FAMILIES, TRAINING_FAMILIES

    every = list(TRAINING_FAMILIES) + ["classic"]
    scatter = [f for f in TRAINING_FAMILIES if FAMILIES[f].cloth == "scatter"]

    def gathered(name: str, count: int, seeds: tuple[int, ...], families: list[str] = every, first_frame: int = 1
                 ) -> list[NestExample]:
        """The examples of `count` frames of `seeds`, kept in (and read again from) the --examples folder."""
        path = None if args.examples is None else args.examples / f"lone-{name}-{count}.pickle"
        if count == 0:
            return []
        if path is not None and path.is_file():
            return pickle.loads(path.read_bytes())
        print(f"rendering {count} {name} frames of {len(families)} families and running the eye ...", flush=True)
        got = examples_of(tiered_jobs(families, count, seeds, first_frame), args.workers, frame_examples)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(pickle.dumps(got))
        return got

    examples = gathered("training", args.frames, WORLD_VERDICT_SEEDS)
    examples += gathered("scatter", args.scatter_frames, WORLD_VERDICT_SEEDS, scatter, 2)
    valid = gathered("validation", args.valid_frames, WORLD_TUNING_SEEDS)
    return train_and_write("lone_training", "lone circles the eye found", examples, valid, args)


if __name__ == "__main__":
    sys.exit(main())
