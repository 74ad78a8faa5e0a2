"""Vision speed and history benchmarks on rendered gate-seed tables (never used for tuning).

    .venv/bin/python benchmarks/bench_vision.py --out benchmarks/results/vision_bench.md
    .venv/bin/python benchmarks/bench_vision.py --speed-seeds 3 --clip-seeds 2 --tier standard
    .venv/bin/python benchmarks/bench_vision.py --speed-seeds 0 --clip-seeds 0 --cover-seeds 20

Speed (OpenCV and numpy's BLAS on one thread, exact calibration from the camera truth, 1080p):
- per-frame processing of `detect_frame` on `standard` tables with 40 disks, against the plain HoughCircles
  baseline (`vision.baseline:detect`) on the same frames: CPU and wall milliseconds, median and p95, and the
  share of it that rectification and the face network take;
- the still-table fast path: one `LiveTable.process` call on an unchanged frame after a commit (small rectified
  copy + motion gate, no detection);
- the live table over every frame of game-like clips (`--live-seeds`, `--live-disks` disks on the table): per-frame
  CPU of `LiveTable.process`, which looks at every frame and runs a detection only when a changed table has
  settled: of the whole frame at the first commit, of the parts that changed at the later ones.
History (game-like clips, `vision.synth.sequence`): at the last frame of every stable moment the pipeline's
detection is seeded by the previous stable scene and passed through the tracker, as the live table does; scored
with the evaluation harness's matching: recall of 25-50 % visible disks, stacking order of overlapping pairs and
whether the pin set is exact, with history (the whole frame seeded, and the live table's detection of the changed
parts, `vision.incremental`) and from the single frame alone.
Partly covered disks (cover clips, `vision.synth.sequence.build_cover_script`): the same play and scoring on clips
where, one move at a time, a disk is put on another so that the lower one stays 25-50 % visible; this is where the
target "25-50 % visible: recall >= 90 % with history" is measured (the game-like clips have next to no such disks
at their stable moments).
Stacks formed in play (stack clips, `--stack-seeds`, `vision.synth.sequence.build_stack_script`): a smaller disk
carried wholly onto a larger one at each move; the row "disks put on another since the clip began" counts how many
of them each path finds (the live table's looks for disks seen arriving, `vision.arrival`).
`--families F1,F2`: the game, cover and stack clips played again in those families' rooms of the randomized world
(`Sequence(..., family=...)`: cloth, light, art, borders, sizes, camera), on their world gate seeds.
`--seeds tuning` plays the clips on tuning seeds instead (where the live table's settings are chosen; `--seeds test`
on the classic look's test seeds, a second check of a choice), and
`--alike` prints the families' disks alike, each army's of one size in one print, set out in lines and heaps (a set
of chips: `Sequence(..., alike=True)`).
`--arrival SETTING=VALUE` (or `off`), `--change SETTING=VALUE`, `--no-exposure-match`, `--live-detector
SETTING=VALUE` (a `DetectorConfig` setting of the live table's eye where the table changed) and
`--live-whole-detector SETTING=VALUE` (of its eye on a whole frame: its first commit) change the live table's
settings, so that each choice of `vision.arrival`, `vision.incremental` and the live table's eyes
(`vision.live.PipelineConfig`) can be rerun, e.g.
`--seeds tuning --clip-seeds 0 --cover-seeds 0 --speed-seeds 0 --live-seeds 0 --stack-seeds 4 --arrival rest_mm=1`.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import fields, replace
from datetime import datetime, timezone
from pathlib import Path

# "One core" is measured honestly only if numpy's BLAS (the eye's batched solves) runs on one thread too:
# the thread count is read when numpy is first imported, so it is set before that.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import cv2  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from tablesight.scene import Scene  # noqa: E402


def _pct(vals, q):
    return float(np.percentile(vals, q)) if len(vals) else float("nan")


def speed_frames(seeds, disks: int):
    """(setup, image, calibration) of the speed tables: two 1080p frames of a standard table of `disks` disks (no
    hands) per gate seed, calibrated exactly, the rectification maps built."""
    from vision.synth.render import render_frame
    from vision.synth.scenes import random_table
    from vision.synth.tiers import TIERS
    from vision.synth.truth import truth_calibration
    from vision.synth.writer import folder_camera

    tier = replace(TIERS["standard"], name="standard", disks=(disks, disks), hand_probability=0.0)
    for seed in seeds:
        cam = folder_camera(seed, "standard", "1080p")
        cal = truth_calibration(cam)
        cal.rectify_maps()
        for frame in range(2):
            setup = random_table(seed, tier, frame=frame)
            yield seed, frame, setup, render_frame(setup, cam).image, cal


def speed(seeds, disks: int, log) -> dict:
    from vision.baseline import detect as baseline_detect
    from vision.detect import detect_frame
    from vision.facemap import face_maps
    from vision.live import LiveTable, PipelineConfig
    from vision.motion import MotionConfig

    cpu, wall, base_cpu, base_wall, fast, counts, rect_ms, net_ms = [], [], [], [], [], [], [], []
    for seed, frame, setup, img, cal in speed_frames(seeds, disks):
        detect_frame(img, cal)  # first-call costs are start-up
        for _ in range(3):
            t, w = time.process_time(), time.perf_counter()
            scene = detect_frame(img, cal)
            cpu.append((time.process_time() - t) * 1000)
            wall.append((time.perf_counter() - w) * 1000)
            t, w = time.process_time(), time.perf_counter()
            baseline_detect(img, cal, None)
            base_cpu.append((time.process_time() - t) * 1000)
            base_wall.append((time.perf_counter() - w) * 1000)
            t = time.process_time()
            rect = cal.rectify(img)
            rect_ms.append((time.process_time() - t) * 1000)
            t = time.process_time()
            face_maps(rect)
            net_ms.append((time.process_time() - t) * 1000)
        counts.append(len(setup.disks))
        # Still table: commit once, then time the unchanged frames.
        table = LiveTable(None, cal, PipelineConfig(motion=MotionConfig(still_s=0.2)))
        for k in range(4):
            table.process(img, now=0.1 * k)
        for k in range(10):
            t = time.process_time()
            table.process(img, now=1.0 + 0.1 * k)
            fast.append((time.process_time() - t) * 1000)
        log(f"speed seed {seed} frame {frame}: {len(setup.disks)} disks, {len(scene.disks)} found, "
            f"detect {np.median(cpu[-3:]):.1f} ms CPU, baseline {np.median(base_cpu[-3:]):.1f} ms CPU")
    return {"frames": len(counts), "disks": counts, "cpu": cpu, "wall": wall, "base_cpu": base_cpu,
            "base_wall": base_wall, "fast": fast, "rectify": rect_ms,
            "network": net_ms}


def live(seeds, tier: str, log, disks_per_table: int | None = None, config=None) -> dict:
    """Every frame of game-like clips through the live table (`LiveTable.process`: motion gate on each frame, a
    detection when a changed table has been still long enough: of the whole frame at the first commit, then of
    the parts that changed), one core: what watching a camera costs per frame. `config`: the live pipeline's
    settings (default `vision.live.PipelineConfig()`)."""
    from vision.live import LiveTable
    from vision.synth.sequence import Sequence
    from vision.synth.truth import truth_calibration

    per_frame, commits, whole, changed, disks = [], [], [], [], []
    for seed in seeds:
        seq = Sequence(seed, tier=tier, resolution="1080p", cache_frames=2, kind="game", disks=disks_per_table)
        cal = truth_calibration(seq.camera)
        cal.rectify_maps()
        table = LiveTable(None, cal, config)
        truth = None
        for k in range(len(seq)):
            img, truth, _ = seq[k]
            t = time.process_time()
            committed = table.process(img, now=k / seq.fps)
            ms = (time.process_time() - t) * 1000
            per_frame.append(ms)
            if committed:
                commits.append(ms)
                (whole if table.last_commit.whole_frame else changed).append(ms)
        disks.append(len(truth.disks) if truth is not None else 0)
        log(f"live clip seed {seed}: {len(seq)} frames, {len(commits)} commits so far, "
            f"median {np.median(per_frame):.1f} ms CPU per frame")
    return {"per_frame": per_frame, "commits": commits, "whole": whole, "changed": changed, "disks": disks}


PATHS = ("history", "changed", "single")


def history(seeds, tier: str, log, kind: str = "game", family: str | None = None, live_settings: dict | None = None,
            paths: tuple[str, ...] = PATHS, alike: bool = False, live=None) -> dict:
    """Play clips of `kind` (`vision.synth.sequence.CLIP_KINDS`) through the pipeline with history and from the
    single frame; tallies scored at the last frame of every stable moment. `family`: played in that family's rooms
    of the randomized world (default: the classic look); `alike`: their disks printed alike, in lines and heaps
    (`Sequence(..., alike=True)`). `live_settings`: keyword arguments for the live table's `detect_changed`
    (`arrival`, `change`); `live`: the live table's settings, its eyes among them (default
    `vision.live.PipelineConfig()`). `paths`: which
    of `PATHS` to play (the whole frame seeded by history, the live table's changed parts, the single frame)."""
    from eval_vision import match
    from vision.scene_match import visible_fraction
    from vision.detect import detect_frame, locate_disks, sizes_for
    from vision.incremental import detect_changed, reference_for
    from vision.live import PipelineConfig
    from vision.synth.sequence import Sequence
    from vision.synth.truth import truth_calibration
    from vision.tracker import Tracker

    if not paths or set(paths) - set(PATHS):
        raise ValueError(f"paths must be some of {PATHS}")
    tallies = {path: _new_tally() for path in paths}
    live = live or PipelineConfig()   # its eyes, its passes
    for seed in seeds:
        seq = Sequence(seed, tier=tier, resolution="1080p", cache_frames=2, kind=kind, family=family, alike=alike)
        cal = truth_calibration(seq.camera, None if family is None else seq.steps[0].setup.diameters_mm)
        sizes = sizes_for(cal)
        tracker, live_tracker = Tracker(), Tracker()
        previous = live_previous = reference = None
        seen: set[str] = set()  # disks >= 50 % visible at an earlier stable moment: what history can know of
        start: dict[str, tuple[float, float]] = {}  # where each disk lay at the clip's first stable moment
        for first, last in seq.stable_moments:
            img, truth, _ = seq[last]
            start = start or {d.id: (d.x_mm, d.y_mm) for d in truth.disks}
            # disks put on another since the clip began: what the live table saw arrive
            arrived = {d.id for d in truth.disks if d.z > 0 and d.id in start
                       and math.hypot(d.x_mm - start[d.id][0], d.y_mm - start[d.id][1]) > 1.0}
            rect = cal.rectify(img)
            if "history" in tallies:
                previous = tracker.update(locate_disks(rect, cal, sizes, previous, live.detector).scene)
                _score(tallies["history"], truth, previous, match, seen, arrived)
            if "changed" in tallies:
                # As the live table does: the whole frame (in two passes) at the first commit, then only where the
                # table changed.
                changed = None if reference is None else detect_changed(rect, cal, sizes, live_previous, reference,
                                                                             live.detector, **(live_settings or {}))
                det = changed.detection if changed is not None else \
                    locate_disks(rect, cal, sizes, live_previous, live.whole_detector, passes=live.whole_passes)
                live_previous = live_tracker.update(det.scene)
                reference = reference_for(rect if changed is None else changed.reference_rect, det,
                                          live_tracker.last_ids, live_previous)
                _score(tallies["changed"], truth, live_previous, match, seen, arrived)
            if "single" in tallies:
                _score(tallies["single"], truth, detect_frame(img, cal, sizes), match, seen, arrived)
            seen |= {d.id for d in truth.disks if visible_fraction(d) >= 0.5 and not d.extra.get("held")}
        h = tallies[paths[0]]
        log(f"{kind} clip {family or 'classic'} seed {seed}: {len(seq.stable_moments)} stable moments, pins exact "
            f"{h['pins_exact']}/{h['moments']}, 25-50 % visible found {h['partly_found']}/{h['partly']} so far")
    return tallies


def _new_tally() -> dict:
    return {"partly": 0, "partly_found": 0, "visible": 0, "visible_found": 0, "order_n": 0, "order_ok": 0,
            "moments": 0, "pins_exact": 0, "detections": 0, "false": 0, "partly_seen": 0, "partly_seen_found": 0,
            "arrived": 0, "arrived_found": 0}


def _score(t: dict, truth: Scene, detected: Scene, match, seen: set[str] = frozenset(),
           arrived: set[str] = frozenset()) -> None:
    from eval_vision import pin_sets
    from vision.scene_match import visible_fraction as visible_of

    truth = replace(truth, disks=tuple(d for d in truth.disks if not d.extra.get("held")))
    m = match(truth, detected)
    inv = {tid: did for did, tid in m.items()}
    cls = {d.id: ("visible" if visible_of(d) >= 0.5 else "partly" if visible_of(d) >= 0.25 else "dontcare")
           for d in truth.disks}
    for tid, c in cls.items():
        if c == "dontcare":
            continue
        t[c] += 1
        t[c + "_found"] += int(tid in inv)
        if tid in arrived:
            t["arrived"] += 1
            t["arrived_found"] += int(tid in inv)
        if c == "partly" and tid in seen:
            t["partly_seen"] += 1
            t["partly_seen_found"] += int(tid in inv)
    for d in detected.disks:
        tid = m.get(d.id)
        if tid is not None and cls[tid] == "dontcare":
            continue
        t["detections"] += 1
        t["false"] += int(tid is None)
    det = {d.id: d for d in detected.disks}
    tl = list(truth.disks)
    for i, a in enumerate(tl):
        for b in tl[i + 1:]:
            if math.hypot(a.x_mm - b.x_mm, a.y_mm - b.y_mm) >= a.radius_mm + b.radius_mm - 0.5 or a.z == b.z:
                continue
            if a.id in inv and b.id in inv:
                t["order_n"] += 1
                t["order_ok"] += int((det[inv[a.id]].z - det[inv[b.id]].z) * (a.z - b.z) > 0)
    pins = pin_sets(truth, detected, m)
    if pins is None:
        return
    t["moments"] += 1
    t["pins_exact"] += int(pins[0] == pins[1])


def _median(vals) -> float:
    return float(np.median(vals)) if len(vals) else float("nan")


def _max(vals) -> float:
    return float(np.max(vals)) if len(vals) else float("nan")


def _rate(a: int, b: int) -> str:
    return f"{100.0 * a / b:.1f} % ({a}/{b})" if b else "n/a"


def markdown(sp: dict | None, hist: dict | None, command: str, args, cover: dict | None = None,
             lv: dict | None = None, stack: dict | None = None, in_families: dict | None = None) -> str:
    lines = ["# Vision benchmarks (speed, history)", "", f"Command: `{command}`", "",
             f"Date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}", ""]
    if sp:
        clock = "CPU" if args.threads == 1 else "wall"   # CPU time adds up the threads'
        threads = "OpenCV and numpy's BLAS on one thread" if args.threads == 1 else \
            f"OpenCV and ONNX Runtime on {args.threads} threads, numpy's BLAS on one"
        lines += [f"## Speed (1080p, {threads}, gate seeds "
                  + ", ".join(map(str, args.speed_seed_list)) +
                  f", {args.disks}-disk standard tables)", "",
                  f"{sp['frames']} frames, disks per table: {sorted(set(sp['disks']))}", "",
                  "| measure | median ms | p95 ms |", "|---|---|---|",
                  f"| detect_frame, CPU | {np.median(sp['cpu']):.1f} | {_pct(sp['cpu'], 95):.1f} |",
                  f"| detect_frame, wall | {np.median(sp['wall']):.1f} | {_pct(sp['wall'], 95):.1f} |",
                  f"| HoughCircles baseline, CPU | {np.median(sp['base_cpu']):.1f} | {_pct(sp['base_cpu'], 95):.1f} |",
                  f"| HoughCircles baseline, wall | {np.median(sp['base_wall']):.1f} | "
                  f"{_pct(sp['base_wall'], 95):.1f} |",
                  f"| of which rectification (calibration.rectify), CPU | {np.median(sp['rectify']):.1f} | "
                  f"{_pct(sp['rectify'], 95):.1f} |",
                  f"| of which the face network (vision.facemap.face_maps), CPU | {np.median(sp['network']):.1f} | "
                  f"{_pct(sp['network'], 95):.1f} |",
                  f"| still-table fast path (LiveTable.process, unchanged frame), CPU | {np.median(sp['fast']):.2f} | "
                  f"{_pct(sp['fast'], 95):.2f} |", "",
                  f"Ratio detect_frame / baseline ({clock} medians): "
                  f"{np.median(sp[clock.lower()]) / np.median(sp['base_' + clock.lower()]):.2f}x",
                  ""]
    if lv:
        pf = np.asarray(lv["per_frame"])
        lines += [f"## Live table, every frame (game clips, tier {args.tier}, gate seeds "
                  + ", ".join(map(str, args.live_seed_list)) + ", one core)", "",
                  f"{len(pf)} frames of clips with {sorted(set(lv['disks']))} disks, played through "
                  "`LiveTable.process` (the motion gate on every frame; a detection when a changed table has been "
                  "still for `MotionConfig.still_s`).", "",
                  "| measure | value |", "|---|---|",
                  f"| per-frame CPU, median | {np.median(pf):.1f} ms |",
                  f"| per-frame CPU, p95 | {_pct(pf, 95):.1f} ms |",
                  f"| frames within 33 ms | {100.0 * float((pf <= 33.0).mean()):.1f} % |",
                  f"| frames that ran a detection (commits) | {len(lv['commits'])}, median "
                  f"{_median(lv['commits']):.1f} ms, max {_max(lv['commits']):.1f} ms |",
                  f"| - the first commit of a clip (the whole frame) | {len(lv['whole'])}, median "
                  f"{_median(lv['whole']):.1f} ms |",
                  f"| - later commits (the changed parts only) | {len(lv['changed'])}, median "
                  f"{_median(lv['changed']):.1f} ms, max {_max(lv['changed']):.1f} ms |", ""]
    if hist:
        lines += [f"## History (clips, tier {args.tier}, {args.seeds} seeds "
                  + ", ".join(map(str, args.clip_seed_list)) +
                  "; last frame of each stable moment, exact calibration)", ""] + _history_table(hist)
    if cover:
        lines += _clip_section(
            "History on partly covered disks (cover clips", args.tier, args.cover_seed_list,
            "Each clip: a still table, then (up to) 4 times a disk carried by hand onto another one so that the lower "
            "disk stays 25-50 % visible, each move followed by a still table "
            "(`vision.synth.sequence.build_cover_script`). A covered disk counts at every later stable moment too.",
            cover, args.seeds)
    if stack:
        lines += _clip_section(
            "History on stacks formed in play (stack clips", args.tier, args.stack_seed_list,
            "Each clip: a still table; a stack already there taken apart and put back; then (up to) 4 times a "
            "smaller disk carried by hand wholly onto a larger one and another disk put down beside the new stack, "
            "each move followed by a still table, the picture's exposure settling 15 % darker halfway "
            "(`vision.synth.sequence.build_stack_script`). The live table looks for disks seen arriving "
            "(`vision.arrival`); the whole frame seeded by history does not.", stack, args.seeds)
    for (kind, family), tallies in (in_families or {}).items():
        seeds = args.world_seed_lists[kind]
        lines += [f"## {kind.capitalize()} clips in the rooms of `{family}` (tier {args.tier}, world {args.seeds} "
                  "seeds " +
                  ", ".join(map(str, seeds)) + ")", "",
                  "The same clips dressed in the family's room: its cloth, light, disk art and borders, sizes and "
                  "camera (`Sequence(..., family=...)`)" + (
                      "; each army's disks of one size printed alike, set out in lines and heaps "
                      "(`Sequence(..., alike=True)`)." if args.alike else "."), ""] + _history_table(tallies)
    return "\n".join(lines)


def _clip_section(title: str, tier: str, seeds: list[int], about: str, tallies: dict, word: str = "gate"
                  ) -> list[str]:
    """A markdown section of one clip kind's history tallies."""
    return [f"## {title}, tier {tier}, {word} seeds " + ", ".join(map(str, seeds)) +
            "; last frame of each stable moment, exact calibration)", "", about, ""] + _history_table(tallies)


def _history_table(hist: dict) -> list[str]:
    cols = [hist["history"], hist["changed"], hist["single"]]

    def row(name: str, rate) -> str:
        return f"| {name} | " + " | ".join(rate(t) for t in cols) + " |"

    return ["| metric | with history (whole frame seeded + tracker) | live table (changed parts seeded + tracker) "
            "| single frame |", "|---|---|---|---|",
            row("recall >=50 % visible", lambda t: _rate(t["visible_found"], t["visible"])),
            row("recall 25-50 % visible", lambda t: _rate(t["partly_found"], t["partly"])),
            row("- of which seen >= 50 % visible at an earlier stable moment",
                lambda t: _rate(t["partly_seen_found"], t["partly_seen"])),
            row("- never seen >= 50 % visible before",
                lambda t: _rate(t["partly_found"] - t["partly_seen_found"], t["partly"] - t["partly_seen"])),
            row("disks put on another since the clip began", lambda t: _rate(t["arrived_found"], t["arrived"])),
            row("precision", lambda t: _rate(t["detections"] - t["false"], t["detections"])),
            row("stacking order (overlapping pairs)", lambda t: _rate(t["order_ok"], t["order_n"])),
            row("pin set exact (stable moments)", lambda t: _rate(t["pins_exact"], t["moments"])), ""]


def main(argv=None) -> int:
    from vision.synth.seeds import GATE_SEEDS, WORLD_GATE_SEEDS

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--speed-seeds", type=int, default=3, help="gate seeds for the speed tables (default 3)")
    p.add_argument("--disks", type=int, default=40, help="disks per speed table (default 40)")
    p.add_argument("--clip-seeds", type=int, default=2, help="gate seeds for the history clips (default 2)")
    p.add_argument("--cover-seeds", type=int, default=3,
                   help="gate seeds for the cover clips: disks left 25-50 %% visible (default 3)")
    p.add_argument("--stack-seeds", type=int, default=3,
                   help="gate seeds for the stack clips: smaller disks put wholly on larger ones (default 3)")
    p.add_argument("--families", default="",
                   help="families of the randomized world (comma-separated) whose rooms the game, cover and stack "
                        "clips are played in too, as many of each on their world gate seeds (default: none)")
    p.add_argument("--live-seeds", type=int, default=2,
                   help="gate seeds for the live table's per-frame cost over whole clips (default 2)")
    p.add_argument("--live-disks", type=int, default=40,
                   help="disks on the live clips' tables (default 40; 0: the calm 14-18 of the history clips)")
    p.add_argument("--tier", default="standard", choices=["easy", "standard", "hard"])
    p.add_argument("--seeds", default="gate", choices=["gate", "tuning", "test"],
                   help="the clips' seeds: gate (reporting; default), tuning (where the live table's settings are "
                        "chosen) or test (the classic look's test seeds, a second check of a choice; the families' "
                        "rooms have none and are not played); the speed tables are always on gate seeds")
    p.add_argument("--arrival", action="append", default=[], metavar="SETTING=VALUE|off",
                   help="a `vision.arrival.ArrivalConfig` setting for the live table (repeatable), or off")
    p.add_argument("--alike", action="store_true",
                   help="the families' clips with each army's disks of one size printed alike, set out in lines and "
                        "heaps (a set of chips: the world's `alike` tables)")
    p.add_argument("--live-detector", action="append", default=[], metavar="SETTING=VALUE|off",
                   help="a `vision.fit.DetectorConfig` setting of the live table's eye (repeatable), e.g. "
                        "lone_probability=0.9")
    p.add_argument("--live-whole-detector", action="append", default=[], metavar="SETTING=VALUE|off",
                   help="a setting of the eye of the live table's commits that read the whole frame (its first; "
                        "`PipelineConfig.whole_detector`; repeatable)")
    p.add_argument("--change", action="append", default=[], metavar="SETTING=VALUE|off",
                   help="a `vision.incremental.ChangeConfig` setting for the live table (repeatable), e.g. level=20 "
                        "or outline_match=off")
    p.add_argument("--no-exposure-match", action="store_true",
                   help="the live table compares commits without bringing them to one exposure")
    p.add_argument("--threads", type=int, default=1,
                   help="OpenCV's threads, and so ONNX Runtime's (default 1: one core; numpy's BLAS stays on one); "
                        "with more than one the speed ratio is taken of wall times")
    p.add_argument("--out", type=Path, help="write the markdown here")
    args = p.parse_args(argv)
    if not 1 <= args.threads <= 64:
        p.error("--threads must be within 1..64")
    for name in ("speed_seeds", "clip_seeds", "cover_seeds", "stack_seeds", "live_seeds"):
        if not 0 <= getattr(args, name) <= len(GATE_SEEDS):
            p.error(f"--{name.replace('_', '-')} must be within 0..{len(GATE_SEEDS)}")
    if args.disks < 1:
        p.error("--disks must be >= 1")
    if args.live_disks != 0 and not 2 <= args.live_disks <= 60:
        p.error("--live-disks must be 0 or within 2..60")
    from vision.arrival import ArrivalConfig
    from vision.incremental import DEFAULT_CHANGE, ChangeConfig
    from vision.synth.seeds import TEST_SEEDS, TUNING_SEEDS, WORLD_TUNING_SEEDS
    from vision.synth.world import FAMILIES

    try:
        arrival = None if args.arrival == ["off"] else ArrivalConfig(**{
            k: None if v == "off" else float(v) for k, _, v in (a.partition("=") for a in args.arrival)})
    except (TypeError, ValueError) as exc:
        p.error(f"--arrival: {exc}")
    changes = {}
    for name, _, value in (c.partition("=") for c in args.change):
        if name not in {f.name for f in fields(ChangeConfig)} - {"match_exposure"}:
            p.error(f"--change: unknown setting {name!r} (--no-exposure-match turns the exposure matching off)")
        changes[name] = value
    try:
        change = ChangeConfig(match_exposure=not args.no_exposure_match, **{
            k: None if v == "off" else type(getattr(DEFAULT_CHANGE, k))(v) for k, v in changes.items()})
    except (TypeError, ValueError) as exc:
        p.error(f"--change: {exc}")
    live_settings = {"arrival": arrival, "change": change}
    from vision.live import PipelineConfig

    eyes = {}
    for option, values in (("detector", args.live_detector), ("whole_detector", args.live_whole_detector)):
        eyes[option] = getattr(PipelineConfig(), option)
        try:
            for setting in values:
                eyes[option] = eyes[option].changed(setting)
        except ValueError as exc:
            p.error(f"--live-{option.replace('_', '-')}: {exc}")
    live_config = PipelineConfig(change=change, **eyes)
    args.family_list = [f for f in args.families.split(",") if f]
    if args.alike and not args.family_list:
        p.error("--alike: disks printed alike are the randomized world's (give --families)")
    unknown = [f for f in args.family_list if f not in FAMILIES]
    if unknown:
        p.error(f"--families: unknown family {unknown[0]!r}")
    if args.seeds == "test" and args.family_list:
        p.error("--families: the families' rooms have no test seeds (use --seeds tuning or gate)")
    clip_seeds, world_seeds = {"gate": (GATE_SEEDS, WORLD_GATE_SEEDS), "tuning": (TUNING_SEEDS, WORLD_TUNING_SEEDS),
                               "test": (TEST_SEEDS, ())}[args.seeds]
    cv2.setNumThreads(args.threads)
    args.speed_seed_list = list(GATE_SEEDS[: args.speed_seeds])
    args.clip_seed_list = list(clip_seeds[-args.clip_seeds:]) if args.clip_seeds else []
    args.cover_seed_list = list(clip_seeds[: args.cover_seeds])
    args.stack_seed_list = list(clip_seeds[: args.stack_seeds])
    args.live_seed_list = list(GATE_SEEDS[-args.live_seeds:]) if args.live_seeds else []
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    sp = speed(args.speed_seed_list, args.disks, log) if args.speed_seeds else None
    hist = history(args.clip_seed_list, args.tier, log, live_settings=live_settings, live=live_config) \
        if args.clip_seeds else None
    cover = history(args.cover_seed_list, args.tier, log, "cover", live_settings=live_settings, live=live_config) \
        if args.cover_seeds else None
    stack = history(args.stack_seed_list, args.tier, log, "stack", live_settings=live_settings, live=live_config) \
        if args.stack_seeds else None
    counts = {"game": args.clip_seeds, "cover": args.cover_seeds, "stack": args.stack_seeds}
    args.world_seed_lists = {k: list(world_seeds[:n]) for k, n in counts.items()}
    in_families = {(kind, f): history(args.world_seed_lists[kind], args.tier, log, kind, f, live_settings,
                                      alike=args.alike, live=live_config)
                   for f in args.family_list for kind, n in counts.items() if n}
    # the live table's per-frame cost with the eyes and change detection the options chose
    lv = live(args.live_seed_list, args.tier, log, args.live_disks or None, live_config) if args.live_seeds else None
    command = "benchmarks/bench_vision.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = markdown(sp, hist, command.strip(), args, cover, lv, stack, in_families)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
