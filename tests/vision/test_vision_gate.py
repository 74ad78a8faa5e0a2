"""Gate checks on rendered gate-seed frames (never used for tuning or training): a subset of the benchmarks'
metrics with thresholds under the measured results. The classic look's gate seeds, and frames of the randomized
world's held-out families, whose art and cloths no training run ever saw (standard tables, tables with melee
piles, tables of disks printed alike, and such disks in heaps): the stored baseline (`gate_baseline.json`,
measured with the commands it names) may not regress by more than its slack."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytestmark = pytest.mark.slow

FRAMES = 8  # gate seeds, one standard-tier 1080p frame each


def _match(truth, scene):
    """True id -> (detected id, centre distance mm): the harness's matching (`vision.scene_match.match`)."""
    from vision.scene_match import match

    by_id = {t.id: t for t in truth.disks}
    out = {}
    for did, tid in match(truth, scene).items():
        t, d = by_id[tid], scene.disk(did)
        out[tid] = (did, math.hypot(t.x_mm - d.x_mm, t.y_mm - d.y_mm))
    return out


@pytest.fixture(scope="module")
def gate_results():
    from vision.detect import detect_frame
    from vision.synth.render import render_frame
    from vision.synth.scenes import random_table
    from vision.synth.seeds import GATE_SEEDS
    from vision.synth.truth import truth_calibration
    from vision.synth.writer import folder_camera

    out = []
    for seed in GATE_SEEDS[:FRAMES]:
        cam = folder_camera(seed, "standard", "1080p")
        cal = truth_calibration(cam)
        fr = render_frame(random_table(seed, "standard", frame=0), cam)
        out.append((fr.scene, detect_frame(fr.image, cal)))
    return out


def test_gate_detection_metrics(gate_results):
    present = found = detections = false = size_ok = 0
    errs = []
    for truth, scene in gate_results:
        truth_disks = [t for t in truth.disks if not t.extra.get("held")]
        vis = {t.id: t.extra.get("visible_fraction", 1.0) for t in truth_disks}
        m = _match(truth, scene)
        matched_d = {did: tid for tid, (did, _) in m.items()}
        for t in truth_disks:
            if vis[t.id] >= 0.5:
                present += 1
                if t.id in m:
                    found += 1
                    d = scene.disk(m[t.id][0])
                    errs.append(m[t.id][1])
                    size_ok += int(d.size == t.size)
        for d in scene.disks:
            tid = matched_d.get(d.id)
            if tid is not None and vis[tid] < 0.25:
                continue
            detections += 1
            false += int(tid is None)
    # measured with the shipped model on six of these frames: recall 94.6 %, precision 100 %, centre 0.15 / 0.80 mm
    # (families.md)
    assert found / present >= 0.90, f"recall {found}/{present}"
    assert (detections - false) / detections >= 0.96, f"precision {detections - false}/{detections}"
    assert np.median(errs) <= 0.5
    assert np.percentile(errs, 95) <= 1.5, "centre error p95 (the sub-pixel rim alignment)"
    assert size_ok / max(found, 1) >= 0.97


def test_gate_stacking_order(gate_results):
    n = ok = 0
    for truth, scene in gate_results:
        m = _match(truth, scene)
        tl = [t for t in truth.disks if not t.extra.get("held")]
        for i, a in enumerate(tl):
            for b in tl[i + 1:]:
                if a.z == b.z or math.hypot(a.x_mm - b.x_mm, a.y_mm - b.y_mm) >= a.radius_mm + b.radius_mm - 0.5:
                    continue
                if a.id in m and b.id in m:
                    n += 1
                    za, zb = scene.disk(m[a.id][0]).z, scene.disk(m[b.id][0]).z
                    ok += int((za - zb) * (a.z - b.z) > 0)
    assert n >= 3
    # measured 23 of 23 from single frames with the pair judge (without it 83.3 %)
    assert ok / n >= 0.9, f"order {ok}/{n}"


@pytest.fixture(scope="module")
def live_on_gate_clips():
    """The live table's path on game-like gate clips (the whole frame in two passes at the first commit, then the
    changed parts, the tracker)."""
    import importlib.util
    import sys
    from pathlib import Path

    from vision.synth.seeds import GATE_SEEDS

    spec = importlib.util.spec_from_file_location(
        "gate_bench_vision", Path(__file__).resolve().parents[2] / "benchmarks" / "bench_vision.py")
    bench = importlib.util.module_from_spec(spec)
    sys.modules["gate_bench_vision"] = bench
    spec.loader.exec_module(bench)
    return bench.history(list(GATE_SEEDS[-3:]), "standard", lambda _: None)["changed"]


def test_gate_live_table_keeps_few_false_disks_on_game_clips(live_on_gate_clips):
    live = live_on_gate_clips
    assert live["moments"] >= 9
    # a missed disk breaks a moment's pin set: the eye's recall (~93 %) leaves few exact; what the live table must
    # keep is its precision and its stacking with history
    assert (live["detections"] - live["false"]) / live["detections"] >= 0.96


def test_gate_live_table_keeps_the_stacking_order_on_game_clips(live_on_gate_clips):
    # regression: without the pair judge the three-map eye ordered 22 of 29 pairs right here
    live = live_on_gate_clips
    assert live["order_ok"] / max(live["order_n"], 1) >= 0.95


def _bench(name: str):
    import importlib.util
    import sys
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        f"gate_{name}", Path(__file__).resolve().parents[2] / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[f"gate_{name}"] = mod
    spec.loader.exec_module(mod)
    return mod


# Gate frames of each held-out family in the stored-baseline check. Two frames held some 16 overlapping pairs: with
# every one ordered right there, one pair more read wrong failed the check, and a network that met the 98 % stacking
# target would fail it about 3 times in 10 (0.98 ** 16). Four hold 29 pairs, so one pair is within the slack.
# The piled tables (melee piles, `vision.synth.tiers`) hold more pairs a frame: two frames a family; the alike
# tables (disks printed alike, in lines and heaps, `vision.synth.world`) and the heaped ones (in heaps of 12-24) more
# disks: two frames a family.
HELD_OUT_FRAMES = {"standard": 4, "piled": 2, "alike": 2, "heaped": 2}
BASELINE_KEY = {"standard": "held_out", "piled": "held_out_piled", "alike": "held_out_alike",
                "heaped": "held_out_heaped"}


@pytest.fixture(scope="module", params=["standard", "piled", "alike", "heaped"])
def held_out_results(request):
    """The first gate frames of each held-out family (of the tier: standard tables, tables with melee piles,
    tables of disks printed alike, or of such disks in heaps), calibrated from their own markers, scored as the
    benchmark does."""
    from vision.synth.world import HELD_OUT_FAMILIES

    families = _bench("eval_families")
    tier = request.param
    return tier, [families.evaluate_family(f, HELD_OUT_FRAMES[tier], tier, log=lambda _: None)
                  for f in HELD_OUT_FAMILIES]


def test_held_out_families_against_the_stored_baseline(held_out_results):
    import json
    from pathlib import Path

    ev = _bench("eval_vision")
    tier, results = held_out_results
    base = json.loads((Path(__file__).with_name("gate_baseline.json")).read_text())[BASELINE_KEY[tier]]
    total = ev.Tally()
    for r in results:
        t = r["eye"]
        for k in ("visible", "partly"):
            total.present[k] += t.present[k]
            total.found[k] += t.found[k]
        total.detections += t.detections
        total.detections_on_partly += t.detections_on_partly
        total.centre_err_mm += t.centre_err_mm
        total.order_ok += t.order_ok
        total.order_n += t.order_n
    m = ev.metrics(total)
    slack = base["slack"]
    assert m["recall >=50% visible"] >= base["recall"] - slack["rate"], m
    assert m["precision (>=25% visible)"] >= base["precision"] - slack["rate"], m
    assert m["centre error median (mm)"] <= base["centre_median_mm"] + slack["mm"], m
    assert m["centre error p95 (mm)"] <= base["centre_p95_mm"] + 2 * slack["mm"], m
    assert m["stacking order accuracy (overlapping pairs)"] >= base["stacking"] - 2 * slack["rate"], m
