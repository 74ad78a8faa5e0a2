"""Where the eye's centre errors come from: disks clear of others, lying on others, or under others.

    .venv/bin/python benchmarks/centre_errors.py [--frames 3] [--out benchmarks/results/centres.md]

Frames: the tuning seeds of `benchmarks/tune_eye.py`'s families (where the eye's settings are chosen), calibrated
exactly, through `vision.detect.detect_frame`. For every true disk >= 50 % visible that the eye found: the centre
error (table mm), grouped by whether any disk lies on it and whether it lies on any. A second line takes out the
part of each error no single frame can tell, the world's disk thickness (0-3 mm) against the 2 mm per disk the eye
corrects the parallax of a raised top for (`DetectorConfig.disk_thickness_mm`): the true top's seen place,
corrected as the eye corrects it, less the true centre.

A second table takes the disks clear of others by how their border is printed (`vision.synth.world`: none, thin or
wide; the classic look's print apart) and whether its colour is the cloth's own (within `NEAR_CLOTH` in BGR): where a
wide border has the cloth's colour, the rim map may take part of it for cloth and read the outline at the border's
inner edge there, and the fixed-radius fit is pulled off centre.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from eval_vision import dated_report, match  # noqa: E402
from vision.scene_match import visible_fraction  # noqa: E402
from tune_eye import tuning_frames  # noqa: E402


NEAR_CLOTH = 40.0   # a border this near the cloth's colour (BGR distance) is printed in the cloth's own colour


def border_print(disk, cloth_bgr) -> str:
    """How a setup disk's border is printed: "classic print", or its style ("none", "thin", "wide") and whether its
    colour is the cloth's own."""
    style = disk.art.style
    if style is None:
        return "classic print"
    if style.border == "none":
        return "no border"
    near = float(np.linalg.norm(np.subtract(style.border_bgr, cloth_bgr, dtype=float))) < NEAR_CLOTH
    return f"{style.border} border, {'the cloth' if near else 'another'}'s colour"


def frame_errors(setup, camera) -> list[tuple[float, float, str, str]]:
    """(error, error without the thickness mismatch, group, border print) of each found true disk >= 50 %
    visible."""
    from vision import detect
    from vision.fit import DEFAULT_CONFIG
    from vision.parallax import camera_position
    from vision.synth.render import render_frame
    from vision.synth.truth import truth_calibration

    frame = render_frame(setup, camera)
    diam = tuple(float(v) for v in setup.diameters_mm)
    cal = truth_calibration(camera, diam)
    scene = detect.detect_frame(frame.image, cal, diam)
    cam = camera_position(cal)
    truth = {t.id: t for t in frame.scene.disks if not t.extra.get("held")}
    m = match(frame.scene, scene)
    printed = {s.id: s for s in setup.disks}
    out = []
    for d in scene.disks:
        t = truth.get(m.get(d.id))
        if t is None or visible_fraction(t) < 0.5:
            continue
        err = math.hypot(t.x_mm - d.x_mm, t.y_mm - d.y_mm)
        mismatch = np.zeros(2)
        if cam is not None:
            top = float(t.extra.get("top_height_mm", 0.0))
            c, p = np.array([cam.x_mm, cam.y_mm]), np.array([t.x_mm, t.y_mm])
            seen = c + (p - c) * cam.height_mm / (cam.height_mm - top)
            assumed = (d.z + 1) * DEFAULT_CONFIG.disk_thickness_mm
            mismatch = cam.correct(seen[None], np.array([assumed]))[0] - p
        rest = math.hypot(d.x_mm - mismatch[0] - t.x_mm, d.y_mm - mismatch[1] - t.y_mm)
        near = [o for o in truth.values() if o.id != t.id
                and math.hypot(o.x_mm - t.x_mm, o.y_mm - t.y_mm) < o.radius_mm + t.radius_mm - 0.5]
        group = ("under another" if any(o.z > t.z for o in near) else
                 "on others, none on it" if any(o.z < t.z for o in near) else "clear of others")
        out.append((err, rest, group, border_print(printed[t.id], setup.look.felt_bgr)))
    return out


def table(rows: list[tuple[float, float, str, str]]) -> list[str]:
    lines = ["| disks | count | error median / p95 (mm) | over 1.5 mm | without the thickness mismatch |",
             "|---|---|---|---|---|"]
    for group in ("all", "clear of others", "on others, none on it", "under another"):
        sel = [r for r in rows if group == "all" or r[2] == group]
        if not sel:
            continue
        e, w = np.array([r[0] for r in sel]), np.array([r[1] for r in sel])
        lines.append(f"| {group} | {len(sel)} | {np.median(e):.2f} / {np.percentile(e, 95):.2f} | "
                     f"{int((e > 1.5).sum())} | {np.median(w):.2f} / {np.percentile(w, 95):.2f} |")
    return lines


PRINTS = ("classic print", "no border", "thin border, another's colour", "thin border, the cloth's colour",
          "wide border, another's colour", "wide border, the cloth's colour")


def border_table(rows: list[tuple[float, float, str, str]]) -> list[str]:
    """The disks clear of others by border print."""
    lines = ["| disks clear of others | count | error median / p95 (mm) | over 1.5 mm |", "|---|---|---|---|"]
    for printed in PRINTS:
        e = np.array([r[0] for r in rows if r[2] == "clear of others" and r[3] == printed])
        if len(e):
            lines.append(f"| {printed} | {len(e)} | {np.median(e):.2f} / {np.percentile(e, 95):.2f} | "
                         f"{int((e > 1.5).sum())} ({100 * (e > 1.5).mean():.0f} %) |")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", type=int, default=3, help="tuning frames per family")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    if args.frames < 1:
        print("centre_errors: --frames must be >= 1", file=sys.stderr)
        return 2
    rows: list[tuple[float, float, str, str]] = []
    for _, setup, camera in tuning_frames(args.frames):
        rows += frame_errors(setup, camera)
    dated_report(__doc__, f"benchmarks/centre_errors.py --frames {args.frames}"
                 + (f" --out {args.out}" if args.out else ""),
                 ["Centre errors of the disks >= 50 % visible the eye found (tuning seeds, standard tier):", "",
                  *table(rows), "", "The disks clear of others by border print:", "", *border_table(rows)],
                 args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
