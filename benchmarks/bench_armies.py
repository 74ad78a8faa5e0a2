"""Setting up the armies: what grouping the disks by ring colour and the unit names' autocomplete cost.

Run: .venv/bin/python benchmarks/bench_armies.py   (writes benchmarks/results/armies.md)

- grouping (`webui.armies.group_armies`): tables of 14 (the demo), 100 and 300 disks (the scene limit), four armies
  whose ring colours vary by ±15 per channel (a print seen across a lit table), plus the demo table as the eye sees
  it (seed 7); median / p95 / max of 20 runs, and whether each army found is one true army;
- `GET /api/armies` on the demo table through the Flask test client (grouping + JSON), 20 requests;
- autocomplete (`webui.armies.units_by_prefix` over the shipped catalog): one to four typed letters.
"""

from __future__ import annotations

import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ARMIES = [(40, 40, 190), (170, 80, 30), (40, 140, 50), (30, 200, 220)]


def _ms(values: list[float]) -> str:
    v = sorted(values)
    p95 = v[min(len(v) - 1, int(round(0.95 * (len(v) - 1))))]
    return f"{statistics.median(v) * 1000:.2f} / {p95 * 1000:.2f} / {v[-1] * 1000:.2f}"


def _timed(fn, n=20):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def table(n: int, seed: int = 1):
    from webui.armies import DiskLook

    rng = random.Random(seed)
    looks, truth = [], {}
    for i in range(n):
        base = ARMIES[i % len(ARMIES)]
        looks.append(DiskLook(f"d{i}", tuple(min(255.0, max(0.0, c + rng.uniform(-15, 15))) for c in base)))
        truth[f"d{i}"] = i % len(ARMIES)
    return looks, truth


def run() -> str:
    from rules.melee_commands import load_catalogs
    from vision.scene_match import match
    from webui.armies import group_armies, looks_of_scene, units_by_prefix
    from webui.demo_eye import DemoEyeFeed

    rows = []
    for n in (14, 100, 300):
        looks, truth = table(n)
        g = group_armies(looks)
        right = all(len({truth[d] for d in a.disks}) == 1 for a in g.armies) and len(g.armies) == len(ARMIES)
        rows.append(f"| {n} random disks, 4 armies | {_ms(_timed(lambda: group_armies(looks)))} | {len(g.armies)} | {'yes' if right else 'NO'} |")
    feed = DemoEyeFeed()
    scene = feed.state().scene
    truth_scene = feed.truth_for(feed.state().version)
    owner = {d: truth_scene.disk(t).player for d, t in match(truth_scene, scene).items()}
    looks = looks_of_scene(scene)
    g = group_armies(looks)
    right = all(len({owner[d] for d in a.disks if d in owner}) == 1 for a in g.armies)
    rows.append(f"| the demo table seen by the eye ({len(looks)} disks) | {_ms(_timed(lambda: group_armies(looks)))} | {len(g.armies)} | {'yes' if right else 'NO'} |")

    from webui.app import create_app

    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(feed, tmp, start=False)
        client = app.test_client()
        headers = {"Host": "127.0.0.1:8650"}
        client.get("/api/armies", headers=headers)  # the view and its report computed once
        api = _timed(lambda: client.get("/api/armies", headers=headers))
        app.extensions["tablesight.webui"].stop()

    units = load_catalogs([]).units
    ac = []
    for typed in ("o", "or", "orc", "orc b"):
        ac.append(f"| `{typed}` | {_ms(_timed(lambda: units_by_prefix(units, typed), 50))} | {len(units_by_prefix(units, typed))} |")

    return "\n".join([
        "# Setting up the armies",
        "",
        f"`.venv/bin/python benchmarks/bench_armies.py` — {platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs (shared), {time.strftime('%Y-%m-%d')}.",
        "",
        "## Grouping by ring colour (`webui.armies.group_armies`, ms: median / p95 / max of 20)",
        "",
        "| table | ms | armies found | each army one true army |",
        "| --- | --- | --- | --- |",
        *rows,
        "",
        f"`GET /api/armies` on the demo table (test client, grouping + JSON): {_ms(api)} ms.",
        "",
        f"## Unit names by their first letters (`units_by_prefix`, {len(units)} catalog units, ms of 50)",
        "",
        "| typed | ms | units offered (at most 8) |",
        "| --- | --- | --- |",
        *ac,
        "",
    ])


def main() -> None:
    text = run()
    out = ROOT / "benchmarks" / "results" / "armies.md"
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
