"""The demo table through the eye: what serving it costs.

Run: .venv/bin/python benchmarks/bench_demo.py [--loops 2]   (writes benchmarks/results/demo.md)

`webui.demo_eye.DemoEyeFeed` (seed 7, 720p) driven step by step as its threads would drive it, `item_s` apart
on a virtual clock (so the numbers are the work, not the waiting):
- start: the clip scripted, its first frame rendered, the table calibrated from the frame's markers and the first
  still table detected on the whole frame (before `tablesight serve` prints its address);
- per change: a move has been made: the frame rendered (first loop; later loops decode the kept JPEG) and,
  once the table has been still long enough, the live pipeline's detection of what changed (`LiveTable.process`
  on the committing frame);
- per still frame: a frame with nothing new (motion gate + the page's view every 0.25 s);
- CPU share: process CPU time over one loop of the clip divided by the loop's play time (what the demo takes from
  a laptop's cores while it plays).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _ms(values: list[float]) -> str:
    if not values:
        return "–"
    v = sorted(values)
    p95 = v[min(len(v) - 1, int(round(0.95 * (len(v) - 1))))]
    return f"{statistics.median(v) * 1000:.0f} / {p95 * 1000:.0f} / {v[-1] * 1000:.0f}"


def run(loops: int) -> str:
    from webui.demo_eye import DemoEyeFeed

    t0, c0 = time.perf_counter(), time.process_time()
    feed = DemoEyeFeed()
    start_s, start_cpu = time.perf_counter() - t0, time.process_time() - c0
    src, live = feed.source, feed.live
    n = len(feed.sequence)
    rows = []
    now = time.monotonic()
    for loop in range(loops):
        renders, detects, still = [], [], []
        c0 = time.process_time()
        for _ in range(n):
            before = src.renders
            t = time.perf_counter()
            image = src.step()
            r = time.perf_counter() - t
            if src.renders != before:
                renders.append(r)
            t = time.perf_counter()
            committed = live.process(image, now)
            d = time.perf_counter() - t
            (detects if committed else still).append(d)
            now += src.item_s
        cpu = time.process_time() - c0
        rows.append((loop + 1, renders, detects, still, cpu, n * src.item_s))
    feed.stop()
    lines = [
        "# The demo table through the eye: cost of serving it",
        "",
        f"`.venv/bin/python benchmarks/bench_demo.py --loops {loops}` — {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}.",
        "",
        f"Demo clip: seed 7, 720p, {n} steps, {src.item_s:.2f} s a step ({n * src.item_s:.0f} s a loop); "
        f"calibration: {feed.calibration_how}.",
        "",
        f"Start (script + first render + marker calibration + first detection): {start_s:.2f} s wall, "
        f"{start_cpu:.2f} s CPU.",
        "",
        "| loop | changes | render ms (median / p95 / max) | detect ms (median / p95 / max) | still frame ms "
        "(median / p95 / max) | CPU share |",
        "|---|---|---|---|---|---|",
    ]
    for loop, renders, detects, still, cpu, play in rows:
        lines.append(f"| {loop} | {len(detects)} | {_ms(renders)} | {_ms(detects)} | {_ms(still)} | "
                     f"{100 * cpu / play:.1f} % |")
    lines += ["", "A change costs one render (first loop only) plus one detection; a still frame only the motion "
              "gate and, every 0.25 s, the page's view.", ""]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loops", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "demo.md"))
    a = ap.parse_args()
    if a.loops < 1:
        print("bench_demo: --loops must be >= 1", file=sys.stderr)
        return 2
    text = run(a.loops)
    Path(a.out).write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
