"""Is the eye honest about what it is unsure of? How often a detection is a real disk, by the confidence it reports.

    .venv/bin/python benchmarks/confidence.py [--seeds tuning|gate] [--frames 6] [--tier standard|hard|piled]
                                              [--family NAME ...] [--folder DIR] [--out results.md [--append]]

Every disk of a detected scene carries `confidence` (0-1; the page says "camera N % sure" and marks a disk below
`LOW_CONFIDENCE` in `webui/static/table.js` with "?" and a request to check it). This script bins the detections by
that confidence and says, per bin, how many are real disks (matched to a true disk, `vision.scene_match.match`) and
how many are made up; then, for a few levels the page could mark at, how many of the made-up disks such a mark
would catch and how many real disks it would mark needlessly. Detections matched to a true disk under 25 % visible
count as neither (as `benchmarks/eval_vision.py` scores precision). Last, of the overlapping true pairs whose disks
were both found, how many the scene ordered right and wrong, and how many of each it reported as uncertain
(`uncertain_pairs`, which the page asks the players about).

Frames: `--seeds tuning` (default) the tuning seeds of `benchmarks/tune_eye.py`'s families, exactly calibrated
(where a level may be chosen); `--seeds gate` the gate frames of `benchmarks/eval_families.py` (the classic look
and the held-out families unless `--family` names others), calibrated from their own markers with the true lens
(reporting only); `--folder DIR` a folder of `NAME.jpg` + `NAME.scene.json` through the command line as
`benchmarks/eval_cli.py` runs it (reporting only).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(p) for p in (ROOT, ROOT / "benchmarks") if str(p) not in sys.path]

from eval_vision import PARTLY, dated_report  # noqa: E402  (PARTLY: a true disk less visible counts for nothing)
from tablesight.scene import Scene  # noqa: E402
from vision.scene_match import match, visible_fraction  # noqa: E402

#: The confidence bins of the table (lower edges; the last bin ends at 1 inclusive).
BIN_EDGES = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)
#: The levels a page could mark "unsure" below: 0.6 is the verdict's accepting level (the page's until it moved to
#: 0.8, `LOW_CONFIDENCE`).
MARK_LEVELS = (0.6, 0.7, 0.8, 0.9)


@dataclass(frozen=True)
class Judged:
    """One detection: the confidence it reported, and whether it is a real disk."""

    confidence: float
    real: bool

    def __post_init__(self) -> None:
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"confidence must be within 0..1, got {self.confidence}")


def judged(truth: Scene, detected: Scene) -> list[Judged]:
    """Each detection of `detected` that counts (not a true disk under `PARTLY` visible), real or made up. A
    detection without a confidence is taken as sure (1.0), as the page takes it."""
    m = match(truth, detected)
    tdisks = {t.id: t for t in truth.disks if not t.extra.get("held")}
    out = []
    for d in detected.disks:
        tid = m.get(d.id)
        if tid is not None and visible_fraction(tdisks[tid]) < PARTLY:
            continue
        out.append(Judged(1.0 if d.confidence is None else float(d.confidence), tid is not None))
    return out


@dataclass(frozen=True)
class JudgedPair:
    """One overlapping true pair whose disks were both found: whether the scene orders it right, and whether it
    reports the pair's order as uncertain (`uncertain_pairs`: the page asks the players)."""

    right: bool
    uncertain: bool


def judged_pairs(truth: Scene, detected: Scene) -> list[JudgedPair]:
    """The true overlapping pairs (a stack, not two disks side by side) whose disks were both found."""
    m = match(truth, detected)
    inv = {tid: did for did, tid in m.items()}
    ddisks = {d.id: d for d in detected.disks}
    asked = {frozenset(p) for p in (detected.extra.get("uncertain_pairs") or ())}
    tdisks = [t for t in truth.disks if not t.extra.get("held") and t.id in inv]
    out = []
    for i, a in enumerate(tdisks):
        for b in tdisks[i + 1:]:
            if a.z == b.z or math.hypot(a.x_mm - b.x_mm, a.y_mm - b.y_mm) >= a.radius_mm + b.radius_mm - 0.5:
                continue
            da, db = ddisks[inv[a.id]], ddisks[inv[b.id]]
            out.append(JudgedPair((da.z - db.z) * (a.z - b.z) > 0, frozenset((da.id, db.id)) in asked))
    return out


def pair_rows(pairs: list[JudgedPair]) -> list[str]:
    """How many of the pairs ordered right and wrong the scene reported as uncertain."""
    lines = ["| overlapping pairs, both disks found | ordered right | ordered wrong |", "|---|---|---|"]
    for name, flag in (("reported uncertain (the page asks)", True), ("not reported", False)):
        right = sum(p.right and p.uncertain == flag for p in pairs)
        wrong = sum(not p.right and p.uncertain == flag for p in pairs)
        lines.append(f"| {name} | {right} | {wrong} |")
    return lines


def bin_rows(items: list[Judged]) -> list[str]:
    """The reliability table: per confidence bin, detections, real disks among them and the share of all made-up
    disks that fall in it."""
    made_up = sum(not j.real for j in items)
    lines = ["| confidence | detections | real disks | share real | of all made-up disks |", "|---|---|---|---|---|"]
    edges = list(BIN_EDGES) + [1.0]
    for k, lo in enumerate(BIN_EDGES):
        hi = edges[k + 1]
        sel = [j for j in items if lo <= j.confidence < hi or (hi == 1.0 and j.confidence == 1.0)]
        if not sel:
            continue
        real = sum(j.real for j in sel)
        lines.append(f"| {lo:.2f}-{hi:.2f} | {len(sel)} | {real} | {100 * real / len(sel):.1f} % | "
                     f"{len(sel) - real} of {made_up} |")
    return lines


def mark_rows(items: list[Judged]) -> list[str]:
    """For each level the page could mark disks "unsure" below: the made-up disks it would catch and the real
    disks it would mark needlessly."""
    made_up = [j for j in items if not j.real]
    real = [j for j in items if j.real]
    lines = ["| page marks below | made-up disks marked | real disks marked |", "|---|---|---|"]
    for level in MARK_LEVELS:
        caught = sum(j.confidence < level for j in made_up)
        needless = sum(j.confidence < level for j in real)
        lines.append(f"| {level:.2f} | {caught} of {len(made_up)} ({_pct(caught, len(made_up))}) | "
                     f"{needless} of {len(real)} ({_pct(needless, len(real))}) |")
    return lines


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f} %" if b else "n/a"


def synthetic_items(seeds: str, frames: int, tier: str, families: list[str]
                    ) -> tuple[list[Judged], list[JudgedPair]]:
    from tune_eye import tuning_frames
    from vision.detect import detect_frame
    from vision.synth.render import render_frame
    from vision.synth.truth import truth_calibration

    items: list[Judged] = []
    pairs: list[JudgedPair] = []
    if seeds == "tuning":
        for family, setup, camera in tuning_frames(frames, tier):
            if families and family not in families:
                continue
            frame = render_frame(setup, camera)
            diam = tuple(float(v) for v in setup.diameters_mm)
            scene = detect_frame(frame.image, truth_calibration(camera, diam), diam)
            items += judged(frame.scene, scene)
            pairs += judged_pairs(frame.scene, scene)
        return items, pairs
    from eval_families import frame_calibration, frames_of

    for family in families:
        for setup, camera in frames_of(family, frames, tier):
            frame = render_frame(setup, camera)
            diam = tuple(float(v) for v in setup.diameters_mm)
            cal, _ = frame_calibration(frame.image, camera, diam)
            scene = detect_frame(frame.image, cal, diam)
            items += judged(frame.scene, scene)
            pairs += judged_pairs(frame.scene, scene)
    return items, pairs


def folder_items(folder: Path, diameters: tuple[float, float, float]
                 ) -> tuple[list[Judged], list[JudgedPair], list[str]]:
    from eval_cli import cli_frames

    items, pairs, failures = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for f in cli_frames(folder, diameters, None, Path(tmp)):
            if f.failure is not None:
                failures.append(f.failure)
            else:
                items += judged(f.truth, f.detected)
                pairs += judged_pairs(f.truth, f.detected)
    return items, pairs, failures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", default="tuning", choices=["tuning", "gate"])
    p.add_argument("--frames", type=int, default=6, help="frames per family (default 6)")
    p.add_argument("--tier", default="standard", choices=["standard", "hard", "piled"])
    p.add_argument("--family", action="append", default=[],
                   help="a family (repeatable; default: every tuning family, or with --seeds gate the classic look "
                        "and the held-out families)")
    p.add_argument("--folder", type=Path, help="a folder of NAME.jpg + NAME.scene.json, through the command line")
    p.add_argument("--disk-diameters-mm", default="44,64,89", help="the folder's true size classes (for matching)")
    p.add_argument("--out", type=Path)
    p.add_argument("--append", action="store_true", help="add the result to the end of --out instead of replacing it")
    args = p.parse_args(argv)
    if args.frames < 1:
        print("confidence: --frames must be >= 1", file=sys.stderr)
        return 2
    failures: list[str] = []
    if args.folder is not None:
        from eval_cli import frames_of as folder_frames

        if not args.folder.is_dir() or not folder_frames(args.folder):
            print(f"confidence: {args.folder}: no NAME.jpg + NAME.scene.json pairs", file=sys.stderr)
            return 2
        try:
            diam = tuple(float(v) for v in args.disk_diameters_mm.split(","))
        except ValueError:
            diam = ()
        if len(diam) != 3 or min(diam) <= 0:
            print("confidence: --disk-diameters-mm must be three positive numbers", file=sys.stderr)
            return 2
        items, pairs, failures = folder_items(args.folder, diam)
        what = f"the folder `{args.folder.name}` through the command line"
        command = f"benchmarks/confidence.py --folder {args.folder}"
    else:
        families = args.family
        if args.seeds == "gate" and not families:
            from vision.synth.world import HELD_OUT_FAMILIES

            families = ["classic", *HELD_OUT_FAMILIES]
        try:
            items, pairs = synthetic_items(args.seeds, args.frames, args.tier, families)
        except (KeyError, ValueError) as exc:
            print(f"confidence: {exc}", file=sys.stderr)
            return 2
        what = (f"{args.seeds} seeds, {args.tier} tier, {args.frames} frames a family"
                + (f" ({', '.join(families)})" if families else ""))
        command = (f"benchmarks/confidence.py --seeds {args.seeds} --frames {args.frames} --tier {args.tier}"
                   + "".join(f" --family {f}" for f in args.family))
    if args.out:
        command += f" --out {args.out}" + (" --append" if args.append else "")
    lines = [f"Detections by the confidence they report ({what}): {len(items)} detections, "
             f"{sum(not j.real for j in items)} made up.", "", *bin_rows(items), "", *mark_rows(items), "",
             "The stacking order's doubt (`uncertain_pairs`):", "", *pair_rows(pairs)]
    if failures:
        lines += ["", "Failures:"] + [f"- {f}" for f in failures]
    if args.append and args.out is not None and args.out.exists():
        before = args.out.read_text(encoding="utf-8")
        text = dated_report(__doc__, command, lines, None)
        args.out.write_text(before.rstrip("\n") + "\n\n" + text, encoding="utf-8")
    else:
        dated_report(__doc__, command, lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
