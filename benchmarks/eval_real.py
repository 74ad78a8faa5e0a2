"""Real chips on a drawn table: the eye through the command line on a real photograph's round chips.

    .venv/bin/python benchmarks/eval_real.py [--out benchmarks/results/real.md] [--keep DIR]

No photograph of disks on a table with the corner markers is at hand, but Debian's `opencv-doc` holds a real scan of
24 coins of one size (`benchmarks/data/real_chips.json`: the file, its checksum and each coin's centre and radius,
found by HoughCircles and checked by eye). Each frame here is a room of the randomized world drawn with nothing on
its table (the corner markers and the ruler only), the coins laid into it through the room's camera at 39 mm a coin
(a poker chip), in four arrangements:
- `sheet`: the scan as it is, its white paper and all, on the cloth: 24 coins touching in a heap;
- `heap`: each coin cut out at its outline, on the cloth where it lay in the scan (the heap without the paper);
- `grid`: the coins cut out in six rows of four, 1.6 diameters apart;
- `scattered`: the coins cut out at random places at least 1.5 diameters apart.
The rooms are the classic look's and the held-out families' gate rooms (seeds no training or tuning run drew);
the coins are pixels no run of the eye ever saw. Every frame goes through `tablesight calibrate` and `tablesight
detect --disk-diameters-mm 39` (`eval_cli.py`); scored as `eval_vision.py` scores (size classes are not: the
chips have one). The coins' own light is kept (the scan's), so a frame's light does not fall on them: these
frames test the eye on real chips' pixels, not on a real room.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.eval_cli import run  # noqa: E402
from benchmarks.eval_vision import metrics  # noqa: E402
from tablesight.scene import Disk, Scene  # noqa: E402

OPENCV_DOC = Path("/usr/share/doc/opencv-doc")   # Debian's opencv-doc package
LABELS = ROOT / "benchmarks" / "data" / "real_chips.json"
CHIP_MM = 39.0
ARRANGEMENTS = ("sheet", "heap", "grid", "scattered")
ROOMS = (("classic", 9000), ("heraldic-wide-felt", 9500), ("paint-thin-patterned", 9500),
         ("heraldic-none-patterned", 9500))
ORIGIN_MM = (330.0, 300.0)      # where the scan's top-left corner (and the grid's first chip) lies on the table


class MissingPhoto(RuntimeError):
    """The real photograph is not installed, or is not the file the labels were made on."""


def real_chips(name: str = "coins") -> tuple[np.ndarray, np.ndarray]:
    """(the photograph, BGR; its chips as rows of x, y, radius in image px). Raises MissingPhoto."""
    spec = json.loads(LABELS.read_text())[name]
    path = OPENCV_DOC / spec["image"]
    if not path.is_file():
        raise MissingPhoto(f"{path} is missing (Debian's opencv-doc package holds it)")
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != spec["sha256"]:
        raise MissingPhoto(f"{path} is not the photograph the labels were made on (checksum differs)")
    img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    return img, np.asarray(spec["chips_px"], np.float64)


def chip_places(arrangement: str, chips: np.ndarray, mm_per_px: float, seed: int = 0) -> np.ndarray:
    """Table mm of each chip's centre in an arrangement (rows as `chips`)."""
    x0, y0 = ORIGIN_MM
    if arrangement in ("sheet", "heap"):
        return np.column_stack([(chips[:, 0] + 0.5) * mm_per_px + x0, (chips[:, 1] + 0.5) * mm_per_px + y0])
    if arrangement == "grid":
        k = np.arange(len(chips))
        return np.column_stack([x0 + (k % 4) * 1.6 * CHIP_MM, y0 + (k // 4) * 1.6 * CHIP_MM])
    if arrangement == "scattered":
        rng = np.random.default_rng([seed, 0xC0145])
        places: list[tuple[float, float]] = []
        while len(places) < len(chips):
            x, y = rng.uniform(150.0, 830.0, 2)
            if all(np.hypot(x - a, y - b) >= 1.5 * CHIP_MM for a, b in places):
                places.append((float(x), float(y)))
        return np.asarray(places)
    raise ValueError(f"unknown arrangement {arrangement!r} (known: {', '.join(ARRANGEMENTS)})")


def composite(family: str, seed: int, arrangement: str) -> tuple[np.ndarray, Scene]:
    """(the frame, BGR uint8; the true scene) of one room with the real chips laid in."""
    from vision.facemap_training import table_for
    from vision.synth.render import render_frame
    from vision.synth.scenes import place_ruler

    photo, chips = real_chips()
    mm_per_px = CHIP_MM / 2.0 / float(np.median(chips[:, 2]))
    places = chip_places(arrangement, chips, mm_per_px, seed)
    h, w = photo.shape[:2]
    disks = tuple(Disk(id=f"c{k + 1}", x_mm=float(x), y_mm=float(y), radius_mm=CHIP_MM / 2.0, size="small",
                       extra={"visible_fraction": 1.0}) for k, (x, y) in enumerate(places))
    # the ruler laid clear of the chips (and of the scan's paper, by its corners), as a player would
    paper = [Disk(id=f"p{k}", x_mm=ORIGIN_MM[0] + i * w * mm_per_px, y_mm=ORIGIN_MM[1] + j * h * mm_per_px,
                  radius_mm=12.0) for k, (i, j) in enumerate([(0, 0), (1, 0), (0, 1), (1, 1), (0.5, 0), (0.5, 1),
                                                              (0, 0.5), (1, 0.5)])] if arrangement == "sheet" else []
    setup, camera = table_for(family, seed, 0)
    setup = replace(setup, disks=(), tokens=(), hands=(), terrain=(),
                    ruler=place_ruler(np.random.default_rng([seed, 0x2B1E2]), list(disks) + paper))
    frame = render_frame(setup, camera).image.astype(np.float32)
    X, Y = camera.plane_coords(0.0)      # table mm seen by each frame pixel
    src = photo.astype(np.float32)
    if arrangement == "sheet":           # the whole scan, its edge blended over 2 mm
        u = ((X - ORIGIN_MM[0]) / mm_per_px - 0.5).astype(np.float32)
        v = ((Y - ORIGIN_MM[1]) / mm_per_px - 0.5).astype(np.float32)
        laid = cv2.remap(src, u, v, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        a = np.clip(np.minimum.reduce([u + 0.5, v + 0.5, w - 0.5 - u, h - 0.5 - v]) * mm_per_px / 2.0, 0.0, 1.0)
        frame = frame * (1.0 - a[..., None]) + laid * a[..., None]
    else:                                # each chip cut at its outline (antialiased over 1.4 px of the scan)
        for (cx, cy, r), (tx, ty) in zip(chips, places):
            u = ((X - tx) / mm_per_px + cx).astype(np.float32)
            v = ((Y - ty) / mm_per_px + cy).astype(np.float32)
            a = np.clip((r + 0.7 - np.hypot(u - cx, v - cy)) / 1.4, 0.0, 1.0)
            box = np.nonzero(a > 0)
            if not box[0].size:
                continue
            y0, y1, x0, x1 = box[0].min(), box[0].max() + 1, box[1].min(), box[1].max() + 1
            laid = cv2.remap(src, u[y0:y1, x0:x1], v[y0:y1, x0:x1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
            aa = a[y0:y1, x0:x1, None]
            frame[y0:y1, x0:x1] = frame[y0:y1, x0:x1] * (1.0 - aa) + laid * aa
    return np.clip(frame, 0, 255).astype(np.uint8), Scene(disks=disks)


def write_folder(folder: Path, arrangement: str) -> int:
    """Every room's frame of one arrangement as NAME.png + NAME.scene.json (what `eval_cli.py` reads)."""
    folder.mkdir(parents=True, exist_ok=True)
    for family, seed in ROOMS:
        img, truth = composite(family, seed, arrangement)
        name = f"{arrangement}-{family}-{seed}"
        cv2.imwrite(str(folder / f"{name}.png"), img)
        (folder / f"{name}.scene.json").write_text(json.dumps(truth.to_json()))
    return len(ROOMS)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path)
    p.add_argument("--keep", type=Path, help="write the frames and their truth here (a folder) instead of a "
                                             "temporary one")
    args = p.parse_args(argv)
    try:
        real_chips()
    except MissingPhoto as exc:
        print(f"eval_real: {exc}", file=sys.stderr)
        return 2
    diam = (CHIP_MM, CHIP_MM + 0.1, CHIP_MM + 0.2)   # one size: scored as three 0.1 mm apart (eval_sizes.py)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        for arrangement in ARRANGEMENTS:
            folder = base / arrangement
            write_folder(folder, arrangement)
            eye, _, _, failures = run(folder, diam, None, log=lambda m: print(m, file=sys.stderr),
                                      look_for_mm=f"{CHIP_MM:g}")
            m = metrics(eye)
            made_up = eye.detections - sum(eye.found.values())
            med, p95 = m["centre error median (mm)"], m["centre error p95 (mm)"]
            rows.append(f"| {arrangement} | {eye.frames} | {eye.found['visible']} of {eye.present['visible']} "
                        f"({100 * (m['recall >=50% visible'] or 0.0):.1f} %) | {made_up} of {eye.detections} | "
                        + ("n/a" if med is None else f"{med:.2f} / {p95:.2f}") + " |"
                        + (f" {len(failures)} failed" if failures else ""))
    command = "benchmarks/eval_real.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = "\n".join([f"Command: `{command.strip()}`", "",
                      f"Date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}", "",
                      f"Rooms: {', '.join(f'{f} {s}' for f, s in ROOMS)}; {CHIP_MM:g} mm chips, looked for with "
                      f"`--disk-diameters-mm {CHIP_MM:g}`.", "",
                      "| arrangement | frames | chips found | detections not a chip | centre median / p95 (mm) |",
                      "|---|---|---|---|---|", *rows]) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
