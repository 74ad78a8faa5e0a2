"""The printed tags read in the randomized world's rooms: ruler tags and corner markers, as `tablesight calibrate`
and the eye's ruler step read them (`calibration.aruco.detect_markers`).

    .venv/bin/python benchmarks/bench_tags.py [--split tuning|held-out] [--frames 6] [--out FILE]

Frames: the tuning seeds of the twelve training families `benchmarks/tune_eye.py` chooses on (`--split tuning`), or
the gate seeds of the three held-out families (`--split held-out`, reporting only), standard tier, 1080p. A tag
counts as read when its id is found with every corner within 3 px of where the room's camera puts it; a marker
read elsewhere, or an id the room does not hold, counts as wrong. Each frame is read twice, in one process on one
core: as OpenCV's detector reads it, and with the small quads whose bits it could not read read again from a crop
upsampled (`detect_markers(..., reread=False)` and the default); processor time per frame for both. Tags under a
hand count as present: the rooms draw hands over the table.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.tune_eye import FAMILIES as TUNING_FAMILIES  # noqa: E402

WITHIN_PX = 3.0


def rooms(split: str, frames: int):
    """(family, seed, frame BGR, {id: true 4x2 corners in frame px}, {ruler tag ids}) of a split's rooms."""
    from calibration.layout import default_layout
    from vision.synth.render import render_frame
    from vision.synth.seeds import WORLD_GATE_SEEDS, WORLD_TUNING_SEEDS
    from vision.synth.world import HELD_OUT_FAMILIES, world_table

    families = [f for f in TUNING_FAMILIES if f != "classic"] if split == "tuning" else list(HELD_OUT_FAMILIES)
    seeds = (WORLD_TUNING_SEEDS if split == "tuning" else WORLD_GATE_SEEDS)[:frames]
    layout = default_layout()
    for family in families:
        for seed in seeds:
            setup, camera = world_table(seed, family)
            truth = {m.id: camera.project(np.asarray(m.corners_mm, np.float64), 0.0) for m in layout.corners}
            tags = setup.ruler_tag_corners_mm(layout) if setup.ruler is not None else {}
            truth.update({i: camera.project(np.asarray(c, np.float64), 0.0) for i, c in tags.items()})
            yield family, seed, render_frame(setup, camera).image, truth, set(tags)


def main(argv: list[str] | None = None) -> int:
    from calibration.aruco import detect_markers

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--split", default="tuning", choices=["tuning", "held-out"])
    p.add_argument("--frames", type=int, default=6, help="seeds per family (default 6)")
    p.add_argument("--out", type=Path, help="append the markdown to this file")
    args = p.parse_args(argv)
    import cv2

    cv2.setNumThreads(1)
    modes = {"as OpenCV reads the frame": False, "small quads read again upsampled": True}
    count = {m: {"ruler": 0, "corner": 0, "wrong": 0, "rulers found": 0} for m in modes}
    ms: dict[str, list[float]] = {m: [] for m in modes}
    n_tags = n_corners = n_rulers = 0
    for family, seed, image, truth, tag_ids in rooms(args.split, args.frames):
        n_tags += len(tag_ids)
        n_corners += len(truth) - len(tag_ids)
        n_rulers += bool(tag_ids)
        line = []
        for mode, reread in modes.items():
            t0 = time.process_time()
            found = detect_markers(image, ids=set(range(8)), reread=reread)
            ms[mode].append(1e3 * (time.process_time() - t0))
            c = count[mode]
            for i, m in found.items():
                if i not in truth or np.abs(m.corners_px - truth[i]).max() > WITHIN_PX:
                    c["wrong"] += 1
                elif i in tag_ids:
                    c["ruler"] += 1
                else:
                    c["corner"] += 1
            c["rulers found"] += bool(tag_ids & set(found))
            line.append(str(len(tag_ids & set(found))))
        print(f"{family} {seed}: ruler tags {len(tag_ids)}, read {' -> '.join(line)}", file=sys.stderr, flush=True)
    command = "benchmarks/bench_tags.py " + " ".join(argv if argv is not None else sys.argv[1:])
    rows = [f"| {m} | {c['ruler']} of {n_tags} | {c['rulers found']} of {n_rulers} | {c['corner']} of {n_corners} | "
            f"{c['wrong']} | {np.median(ms[m]):.1f} / {np.percentile(ms[m], 95):.1f} |" for m, c in count.items()]
    text = "\n".join([f"Command: `{command.strip()}`", "",
                      f"Date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}", "",
                      "| read | ruler tags | rooms whose ruler is found (a tag or more) | corner markers | wrong | "
                      "processor ms median / p95 |", "|---|---|---|---|---|---|", *rows]) + "\n"
    print(text)
    if args.out:
        with args.out.open("a") as f:
            f.write("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
