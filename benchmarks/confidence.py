"""Is the eye honest about what it is unsure of? How often a detection is a real disk, by the confidence it reports.

    .venv/bin/python benchmarks/confidence.py [--seeds tuning|gate] [--frames 6] [--tier standard|hard|piled]
                                              [--family NAME ...] [--folder DIR] [--out results.md [--append]]

Every disk of a detected scene carries `confidence` (0-1; the page says "camera N % sure" and marks a disk below
`LOW_CONFIDENCE` in `webui/static/table.js` with "?" and a request to check it). This script bins the detections by
that confidence and says, per bin, how many are real disks (matched to a true disk, `vision.scene_match.match`) and
how many are made up; then, for a few levels the page could mark at, how many of the made-up disks such a mark
would catch and how many real disks it would mark needlessly. Then where the made-up disks lie (`MADE_UP_KINDS`,
the first that holds) and the pins they and the real disks bring that the table does not hold (`FALSE_PIN_CAUSES`):
a made-up disk costs the players most when it invents a pin. Detections matched to a true disk under 25 % visible
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
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(p) for p in (ROOT, ROOT / "benchmarks") if str(p) not in sys.path]

from eval_vision import PARTLY, dated_report, pin_sets  # noqa: E402  (PARTLY: a less visible true disk counts for nothing)
from tablesight.scene import Disk, Scene  # noqa: E402
from vision.scene_match import match, visible_fraction  # noqa: E402

#: The confidence bins of the table (lower edges; the last bin ends at 1 inclusive).
BIN_EDGES = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)
#: The levels a page could mark "unsure" below: 0.6 is the verdict's accepting level (the page's until it moved to
#: 0.8, `LOW_CONFIDENCE`).
MARK_LEVELS = (0.6, 0.7, 0.8, 0.9)
#: The page's level (`LOW_CONFIDENCE` in `webui/static/table.js`): a disk reported less sure is marked "?".
PAGE_LEVEL = 0.8
#: Where a made-up disk lies, the first that holds: on a true disk's place that no detection found (that disk, its
#: centre read more than a quarter of its radius off or its size wrong); round a true disk that was found, larger
#: (a lower disk that is not there); wholly within a true disk (a ring in its art, or a disk read lying on it); a
#: quarter or more of it over true disks (outlines of several read as one); a quarter or more on a terrain piece;
#: on the cloth (its print, its folds, the light).
MADE_UP_KINDS = ("a missed disk read off", "round a found disk", "within a disk", "across disks", "on terrain",
                 "on the cloth")
#: Why a detected pin is not a true one (pins with a disk under 25 % visible left out, as `pin_sets` scores).
FALSE_PIN_CAUSES = ("made-up upper disk", "made-up lower disk", "read the other way up",
                    "touching, read as overlapping", "overlapping, no pin between them")
TOUCH_MM = 0.5      # two true disks overlapping less than this are touching
NEAR_SHARE = 0.5    # a made-up disk's centre within this share of a true disk's radius is at that disk's place
OVER_SHARE = 0.25   # a made-up disk with this share of its area over true disks (or terrain) lies across them


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
class MadeUp:
    """One made-up disk: where it lies (`MADE_UP_KINDS`), the confidence it reported, and whether it brings a pin
    the table does not hold."""

    kind: str
    confidence: float
    false_pin: bool

    def __post_init__(self) -> None:
        if self.kind not in MADE_UP_KINDS:
            raise ValueError(f"kind must be one of {MADE_UP_KINDS}, got {self.kind!r}")


def _share_over(d: Disk, disks: list[Disk], terrain) -> tuple[float, float]:
    """The share of `d`'s area over the true `disks`, and over the `terrain` pieces (a grid of points over it)."""
    import numpy as np
    from shapely import contains_xy
    from shapely.geometry import Polygon

    g = np.linspace(-1.0, 1.0, 21)
    gx, gy = np.meshgrid(g, g)
    keep = gx ** 2 + gy ** 2 <= 1.0
    x, y = d.x_mm + d.radius_mm * gx[keep], d.y_mm + d.radius_mm * gy[keep]
    on_disk = np.zeros(x.shape, bool)
    for t in disks:
        on_disk |= np.hypot(x - t.x_mm, y - t.y_mm) < t.radius_mm
    on_terrain = np.zeros(x.shape, bool)
    for piece in terrain:
        on_terrain |= contains_xy(Polygon(piece.polygon_mm), x, y)
    return float(on_disk.mean()), float(on_terrain.mean())


def made_up_kind(d: Disk, truth: Scene, found: set[str]) -> str:
    """Where the made-up detection `d` lies (`MADE_UP_KINDS`); `found`: the ids of the true disks some detection
    found."""
    disks = [t for t in truth.disks if not t.extra.get("held")]
    near = [t for t in disks if math.hypot(t.x_mm - d.x_mm, t.y_mm - d.y_mm) <= NEAR_SHARE * t.radius_mm]
    if any(t.id not in found and visible_fraction(t) >= PARTLY for t in near):
        return MADE_UP_KINDS[0]
    if any(t.id in found and d.radius_mm > t.radius_mm + 1.0 for t in near):
        return MADE_UP_KINDS[1]
    if any(math.hypot(t.x_mm - d.x_mm, t.y_mm - d.y_mm) + d.radius_mm <= t.radius_mm + 1.0 for t in disks):
        return MADE_UP_KINDS[2]
    over_disks, over_terrain = _share_over(d, disks, truth.terrain)
    if over_disks >= OVER_SHARE:
        return MADE_UP_KINDS[3]
    return MADE_UP_KINDS[4] if over_terrain >= OVER_SHARE else MADE_UP_KINDS[5]


UNMATCHED = "unmatched:"    # how `pin_sets` names a detection that found no true disk (this prefix, then its id)


def made_up_and_false_pins(truth: Scene, detected: Scene) -> tuple[list[MadeUp], list[str]]:
    """Each made-up disk of `detected` (a detection matching no true disk) and the cause (`FALSE_PIN_CAUSES`) of
    each detected pin that is not a true one (no causes, and no made-up disk bringing one, when the rules cannot be
    imported)."""
    m = match(truth, detected)
    found = set(m.values())
    pins = pin_sets(truth, detected, m)
    true_pins, det_pins = pins if pins is not None else (set(), set())
    wrong = det_pins - true_pins
    in_wrong = {x for p in wrong for x in p}
    made_up = [MadeUp(made_up_kind(d, truth, found), 1.0 if d.confidence is None else float(d.confidence),
                      UNMATCHED + d.id in in_wrong) for d in detected.disks if d.id not in m]
    tdisks = {t.id: t for t in truth.disks}
    causes = []
    for upper, lower in sorted(wrong):
        if upper.startswith(UNMATCHED) or lower.startswith(UNMATCHED):
            causes.append(FALSE_PIN_CAUSES[0] if upper.startswith(UNMATCHED) else FALSE_PIN_CAUSES[1])
        elif (lower, upper) in true_pins:
            causes.append(FALSE_PIN_CAUSES[2])
        else:
            a, b = tdisks[upper], tdisks[lower]
            # as `eval_vision.score_frame` counts overlapping pairs: under half a mm is a touch (disks placed in contact)
            apart = math.hypot(a.x_mm - b.x_mm, a.y_mm - b.y_mm) >= a.radius_mm + b.radius_mm - TOUCH_MM
            causes.append(FALSE_PIN_CAUSES[3] if apart else FALSE_PIN_CAUSES[4])
    return made_up, causes


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


def made_up_rows(made_up: list[MadeUp]) -> list[str]:
    """The made-up disks by where they lie: how many, how many the page marks "?", how many bring a false pin."""
    lines = [f"| where the made-up disk lies | made up | marked \"?\" (below {PAGE_LEVEL:.1f}) | bringing a false pin |",
             "|---|---|---|---|"]
    for kind in (*MADE_UP_KINDS, None):
        sel = [u for u in made_up if kind is None or u.kind == kind]
        if sel or kind is None:
            lines.append(f"| {kind or 'all'} | {len(sel)} | {sum(u.confidence < PAGE_LEVEL for u in sel)} | "
                         f"{sum(u.false_pin for u in sel)} |")
    return lines


def false_pin_rows(causes: list[str]) -> list[str]:
    """The detected pins that are not true ones, by cause."""
    return ["| " + " | ".join(FALSE_PIN_CAUSES) + " |", "|---" * len(FALSE_PIN_CAUSES) + "|",
            "| " + " | ".join(str(causes.count(c)) for c in FALSE_PIN_CAUSES) + " |"]


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f} %" if b else "n/a"


@dataclass
class Gathered:
    """What the frames gave: every detection judged, the overlapping pairs, the made-up disks, the false pins'
    causes, and the frames the command line could not read."""

    items: list[Judged] = field(default_factory=list)
    pairs: list[JudgedPair] = field(default_factory=list)
    made_up: list[MadeUp] = field(default_factory=list)
    false_pins: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def add(self, truth: Scene, detected: Scene) -> None:
        self.items += judged(truth, detected)
        self.pairs += judged_pairs(truth, detected)
        made_up, causes = made_up_and_false_pins(truth, detected)
        self.made_up += made_up
        self.false_pins += causes


def synthetic_items(seeds: str, frames: int, tier: str, families: list[str]) -> Gathered:
    from tune_eye import tuning_frames
    from vision.detect import detect_frame
    from vision.synth.render import render_frame
    from vision.synth.truth import truth_calibration

    out = Gathered()
    if seeds == "tuning":
        for family, setup, camera in tuning_frames(frames, tier):
            if families and family not in families:
                continue
            frame = render_frame(setup, camera)
            diam = tuple(float(v) for v in setup.diameters_mm)
            out.add(frame.scene, detect_frame(frame.image, truth_calibration(camera, diam), diam))
        return out
    from eval_families import frame_calibration, frames_of

    for family in families:
        for setup, camera in frames_of(family, frames, tier):
            frame = render_frame(setup, camera)
            diam = tuple(float(v) for v in setup.diameters_mm)
            cal, _ = frame_calibration(frame.image, camera, diam)
            out.add(frame.scene, detect_frame(frame.image, cal, diam))
    return out


def folder_items(folder: Path, diameters: tuple[float, float, float]) -> Gathered:
    from eval_cli import cli_frames

    out = Gathered()
    with tempfile.TemporaryDirectory() as tmp:
        for f in cli_frames(folder, diameters, None, Path(tmp)):
            if f.failure is not None:
                out.failures.append(f.failure)
            else:
                out.add(f.truth, f.detected)
    return out


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
        got = folder_items(args.folder, diam)
        what = f"the folder `{args.folder.name}` through the command line"
        command = f"benchmarks/confidence.py --folder {args.folder}"
    else:
        families = args.family
        if args.seeds == "gate" and not families:
            from vision.synth.world import HELD_OUT_FAMILIES

            families = ["classic", *HELD_OUT_FAMILIES]
        try:
            got = synthetic_items(args.seeds, args.frames, args.tier, families)
        except (KeyError, ValueError) as exc:
            print(f"confidence: {exc}", file=sys.stderr)
            return 2
        what = (f"{args.seeds} seeds, {args.tier} tier, {args.frames} frames a family"
                + (f" ({', '.join(families)})" if families else ""))
        command = (f"benchmarks/confidence.py --seeds {args.seeds} --frames {args.frames} --tier {args.tier}"
                   + "".join(f" --family {f}" for f in args.family))
    if args.out:
        command += f" --out {args.out}" + (" --append" if args.append else "")
    items = got.items
    lines = [f"Detections by the confidence they report ({what}): {len(items)} detections, "
             f"{sum(not j.real for j in items)} made up.", "", *bin_rows(items), "", *mark_rows(items), "",
             "The stacking order's doubt (`uncertain_pairs`):", "", *pair_rows(got.pairs), "",
             "Where the made-up disks lie:", "", *made_up_rows(got.made_up), "",
             f"Detected pins that are not true ones ({len(got.false_pins)}), by cause:", "",
             *false_pin_rows(got.false_pins)]
    if got.failures:
        lines += ["", "Failures:"] + [f"- {f}" for f in got.failures]
    if args.append and args.out is not None and args.out.exists():
        before = args.out.read_text(encoding="utf-8")
        text = dated_report(__doc__, command, lines, None)
        args.out.write_text(before.rstrip("\n") + "\n\n" + text, encoding="utf-8")
    else:
        dated_report(__doc__, command, lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
