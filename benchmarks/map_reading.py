"""How the face network reads its own targets, network against network, on the same validation frames.

    .venv/bin/python benchmarks/map_reading.py [--model NET.onnx ...] [--frames 24] [--cache DIR]
                                               [--out benchmarks/results/maps.md]

Frames: the trainer's validation frames (`vision.facemap_training`: its training families and the classic look,
`WORLD_TUNING_SEEDS`), never a held-out family or a gate seed. Each network (the shipped one, then every
`--model`) is read twice:

- on the trainer's validation crops (`validation_crops`, drawn alike for every run), scored by
  `validation_scores`: what a training log says, for any network;
- on the frames whole, the height map split by where each face pixel lies: on the table with nothing beneath,
  raised over a lower disk (two or more disks' circles hold it, the top one visible), raised but out over the
  table (a disk partly on another); and raised over a lower disk by the table's disk thickness. A face lying on
  another is what tells a disk on a disk from a ring printed in art (`misses.md`).
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

LEVEL_RIGHT = 0.25  # a level read within a quarter is right (`validation_scores`)
THICKNESS_BANDS = ((0.0, 1.0, "0-1 mm"), (1.0, 2.0, "1-2 mm"), (2.0, float("inf"), "2-3 mm"))


def face_groups(face: np.ndarray, height: np.ndarray, over: np.ndarray) -> dict[str, np.ndarray]:
    """Face pixels by where they lie; `over`: how many disks' circles hold each pixel."""
    faces = face > 0.9
    raised = faces & (height > 0.25)
    return {"on the table, nothing beneath": faces & (height < 0.1) & (over <= 1),
            "raised, over a lower disk": raised & (over >= 2),
            "raised, out over the table": raised & (over <= 1),
            "two or more up, over lower disks": faces & (height > 0.9) & (over >= 2)}


def circles_over(setup, camera, shape: tuple[int, int], stride: int) -> np.ndarray:
    """How many lying disks' circles hold each output pixel (exact calibration; a raised top's parallax aside)."""
    from vision.synth.truth import truth_calibration

    cal = truth_calibration(camera, setup.diameters_mm)
    lying = [d for d in setup.disks if d.id not in setup.held]
    count = np.zeros(shape, np.int32)
    if not lying:
        return count
    xy = np.asarray(cal.table_to_rectified(np.array([[d.x_mm, d.y_mm] for d in lying])), np.float64).reshape(-1, 2)
    r = np.array([d.radius_mm for d in lying]) * cal.rectified_px_per_mm
    yy, xx = np.mgrid[0:shape[0], 0:shape[1]]
    x, y = xx * stride + (stride - 1) / 2, yy * stride + (stride - 1) / 2
    for (cx, cy), rr in zip(xy, r):
        count += (x - cx) ** 2 + (y - cy) ** 2 <= rr * rr
    return count


def read_network(model: Path | None, samples, tables, crops) -> dict:
    """Validation-crop scores and the height split of one network."""
    import onnxruntime as ort

    from vision.facemap import MODEL_PATH, face_maps
    from vision.facemap_training import validation_scores
    from vision.synth.facemaps import OUTPUT_STRIDE

    # the crops through the exported file as it is, as the trainer scores them (not the eye's CPU-rewritten
    # session); the frames whole through the eye's own `face_maps`
    session = ort.InferenceSession(str(model or MODEL_PATH), providers=["CPUExecutionProvider"])
    vx, vf, vr, vh = crops
    maps = np.concatenate([session.run(None, {"bgr": np.ascontiguousarray(vx[k:k + 1].transpose(0, 3, 1, 2))})[0]
                           for k in range(len(vx))])
    split: dict[str, list[int]] = {}
    for s, (setup, camera) in zip(samples, tables):
        h2, w2 = s.face.shape
        height_map = np.asarray(face_maps(s.rect, model).height)[:h2, :w2]
        height = s.height / 255.0
        right = np.abs(height_map - height) < LEVEL_RIGHT
        groups = face_groups(s.face / 255.0, height, circles_over(setup, camera, (h2, w2), OUTPUT_STRIDE))
        band = next(name for lo, hi, name in THICKNESS_BANDS if lo <= setup.disk_thickness_mm < hi)
        groups[f"raised over a lower disk, disks {band} thick"] = groups["raised, over a lower disk"]
        for name, g in groups.items():
            tally = split.setdefault(name, [0, 0])
            tally[0] += int(g.sum())
            tally[1] += int(right[g].sum())
    return {"scores": validation_scores(maps, vf, vr, vh), "split": split}


def report(readings: dict[str, dict], frames: int, command: str) -> str:
    names = list(readings)
    lines = ["# How the face network reads its targets", "", f"Command: `{command}`", "",
             f"Date: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC", "",
             f"The trainer's validation crops ({frames} validation frames of the training families and the classic "
             "look, tuning seeds):", "",
             "| network | face error | rim precision | rim recall | level read right, faces | level read right, "
             "raised faces |", "|---|---|---|---|---|---|"]
    for n in names:
        s = readings[n]["scores"]
        lines.append(f"| {n} | {s.face_mae:.4f} | {s.rim_precision:.3f} | {s.rim_recall:.3f} | "
                     f"{100 * s.height_right:.1f} % | {100 * s.raised_height_right:.1f} % |")
    groups = sorted({g for n in names for g in readings[n]["split"]},
                    key=lambda g: (g.startswith("raised over a lower disk, disks"), g))
    lines += ["", "The height map over the frames whole, the level read right (face pixels):", "",
              "| where the face lies | pixels | " + " | ".join(names) + " |",
              "|---|---|" + "---|" * len(names)]
    for g in groups:
        n_px = readings[names[0]]["split"].get(g, [0, 0])[0]
        cells = []
        for n in names:
            total, ok = readings[n]["split"].get(g, [0, 0])
            cells.append(f"{100 * ok / total:.1f} %" if total else "-")
        lines.append(f"| {g} | {n_px} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, action="append", default=[], help="a network of one's own (repeatable)")
    p.add_argument("--frames", type=int, default=24, help="validation frames (the trainer's default: 24)")
    p.add_argument("--cache", type=Path, help="rendered frames kept here (the trainer's --cache)")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    for m in args.model:
        if not m.is_file():
            print(f"map_reading: --model {m}: no such file", file=sys.stderr)
            return 2
    if args.frames < 1:
        print("map_reading: --frames must be >= 1", file=sys.stderr)
        return 2
    from vision import facemap_training as ft
    from vision.synth import seeds

    jobs = ft.training_jobs(ft.families_to_train(None), args.frames, seeds.WORLD_TUNING_SEEDS)
    samples = ft.render_samples(jobs, 2, args.cache)
    tables = [ft.table_for(*job) for job in jobs]
    crops = ft.validation_crops(samples)
    readings = {"shipped": read_network(None, samples, tables, crops)}
    for m in args.model:
        readings[m.stem] = read_network(m, samples, tables, crops)
    command = "benchmarks/map_reading.py " + " ".join(sys.argv[1:] if argv is None else argv)
    text = report(readings, args.frames, command.strip())
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
