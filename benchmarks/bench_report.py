"""Time `build_report` on crowded random tables (seeded) and write benchmarks/results/rules.md.

    .venv/bin/python benchmarks/bench_report.py            # writes benchmarks/results/rules.md
    .venv/bin/python benchmarks/bench_report.py --profile  # also prints a cProfile of the 40-disk case

A table: 900 x 900 mm, `n` disks (a third of them in stacks up to 3 high, the rest anywhere), 6 terrain pieces
(random polygons, about half Blocks LOS, one Elevated), 2-4 players. Timings are the median over seeds of
one build_report call on one core (numpy may not use more for these sizes).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one core
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rules.diskwars.report import build_report  # noqa: E402
from tablesight.limits import MAX_DISKS  # noqa: E402
from tablesight.scene import DEFAULT_DISK_DIAMETERS_MM, Scene  # noqa: E402

SIZES = list(DEFAULT_DISK_DIAMETERS_MM.items())
#: table sizes measured: up to the documented limit of a scene (tablesight.limits.MAX_DISKS)
SIZES_DISKS = (10, 20, 40, 60, 80, 150, MAX_DISKS)
KEYWORD_SETS = [["blocks_los"], ["blocks_los", "cover"], ["rough"], ["elevated"], ["blocks_los", "defensive"],
                ["dangerous"]]


def random_terrain(rng: random.Random, k: int) -> dict:
    cx, cy = rng.uniform(130, 770), rng.uniform(130, 770)
    n = rng.randint(4, 7)
    angles = sorted(rng.uniform(0, 2 * math.pi) for _ in range(n))
    pts = [[round(cx + rng.uniform(35, 80) * math.cos(a), 2), round(cy + rng.uniform(35, 80) * math.sin(a), 2)]
           for a in angles]
    return {"id": f"t{k + 1}", "name": f"piece {k + 1}", "polygon_mm": pts, "keywords": KEYWORD_SETS[k % 6]}


def random_table(seed: int, n_disks: int, n_terrain: int = 6) -> Scene:
    rng = random.Random(seed)
    n_players = rng.randint(2, 4)
    players = [{"id": f"p{i + 1}", "initiative": i + 1} for i in range(n_players)]
    terrain = []
    while len(terrain) < n_terrain:
        t = random_terrain(rng, len(terrain))
        from shapely.geometry import Polygon

        if Polygon(t["polygon_mm"]).is_valid:
            terrain.append(t)
    disks = []
    stacked = n_disks // 3
    k = 0
    while k < n_disks:
        size, diam = rng.choice(SIZES)
        x, y = rng.uniform(30, 870), rng.uniform(30, 870)
        height = min(rng.randint(2, 3), stacked) if stacked >= 2 else 1
        if height >= 2:
            stacked -= height
        height = min(height, n_disks - k)
        for level in range(height):
            if level:
                size, diam = rng.choice(SIZES)
                ang = rng.uniform(0, 2 * math.pi)
                step = rng.uniform(0.3, 0.8) * diam / 2
                x, y = x + step * math.cos(ang), y + step * math.sin(ang)
            disks.append({"id": f"d{k + 1}", "player": rng.choice(players)["id"] if rng.random() > 0.05 else None,
                          "x_mm": round(x, 2), "y_mm": round(y, 2), "radius_mm": diam / 2, "z": level,
                          "size": size})
            k += 1
    return Scene.from_json({"format": "tablesight.scene/1", "players": players, "disks": disks,
                            "terrain": terrain})


def time_report(scene: Scene, repeats: int = 5) -> tuple[float, float]:
    """(CPU ms, wall ms) of one build_report call: the best of `repeats` (the least disturbed by other work)."""
    cpu = wall = math.inf
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        build_report(scene)
        cpu = min(cpu, time.process_time() - c0)
        wall = min(wall, time.perf_counter() - w0)
    return cpu * 1000.0, wall * 1000.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10, help="random tables per size (seeds 0..N-1)")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "rules.md"))
    args = ap.parse_args(argv)
    build_report(random_table(999, 10))  # warm imports
    if args.profile:
        import cProfile
        import pstats

        scene = random_table(0, 40)
        profiler = cProfile.Profile()
        profiler.runcall(lambda: [build_report(scene) for _ in range(5)])
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    rows = []
    for n in SIZES_DISKS:
        times = [time_report(random_table(seed, n)) for seed in range(args.seeds)]
        cpu = [c for c, _ in times]
        wall = [w for _, w in times]
        rows.append((n, statistics.median(cpu), max(cpu), statistics.median(wall)))
        print(f"{n:3d} disks: CPU median {rows[-1][1]:6.1f} ms, worst {rows[-1][2]:6.1f} ms; "
              f"wall median {rows[-1][3]:6.1f} ms", flush=True)
    forty = next(r for r in rows if r[0] == 40)
    verdict = "met" if forty[1] < 50 else "NOT met"
    try:
        load = "load average %.1f / %.1f / %.1f while measuring" % os.getloadavg()
    except OSError:
        load = ""
    lines = [
        "# Rules layer: report speed",
        "",
        "Command: `.venv/bin/python benchmarks/bench_report.py` (rerun it to refresh this file).",
        "",
        f"Random crowded tables, seeds 0-{args.seeds - 1} per size: 900 x 900 mm, a third of the disks in stacks "
        "up to 3 high, 6 terrain pieces (about half Blocks LOS, one Elevated), 2-4 players. Each figure is the "
        "best of 5 `build_report` calls on one table; the table gives the median over the seeds and the worst "
        "seed. CPU time is the process's own time on one core (numpy limited to one thread); wall time also "
        "counts waiting for the core when the machine is shared.",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; {load}.",
        "",
        "| disks | CPU median ms | CPU worst ms | wall median ms |",
        "| ---: | ---: | ---: | ---: |",
        *[f"| {n} | {med:.1f} | {worst:.1f} | {wall:.1f} |" for n, med, worst, wall in rows],
        "",
        f"Target: under 50 ms for 40 disks and 6 terrain pieces: **{verdict}** (CPU median {forty[1]:.1f} ms, "
        f"worst table {forty[2]:.1f} ms).",
        "",
        "Where the time goes (40 disks, `--profile`): line of sight and its borderline margins are most of it —",
        "one batched pass over all pairs along the centre lines, then the common tangents, vertex tangents and",
        "vertex-vertex lines only for the pairs still blocked, one batch re-checking the calls near a flip, and",
        "two batches for the margins; pins, deviation and terrain checks take a few milliseconds together.",
        "The pairs that can overlap or touch, the disks near each terrain piece and the pieces each sight line",
        "can meet come from STRtree queries; what still grows with the square of the disks is the report's",
        "complete pair list (every pair's distance, bands and line of sight: 44,850 pairs at 300 disks) and the",
        "exact line of sight of the pairs whose disks' box meets a blocking piece (about half of them on these",
        "tables). A report that takes longer than a page can wait never blocks a view: the server answers with",
        "the last report, marked as computing (docs/webui.md).",
        "",
    ]
    Path(args.out).write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
