"""Melee book benchmark: melee resolution time and game-book change latency.

Run: .venv/bin/python benchmarks/bench_book.py [--out benchmarks/results/book.md]

- Melee: seeded random tables (seeds 0-19) of 40 disks in pairs and stacks (two players, random stats), timed
  for `resolve_melee` alone (the report is built first, untimed) and for scene -> report -> melee.
- Book: a fresh book in a temporary directory; 500 changes (tokens, phases, melee results, end phases) timed one
  by one (each is one fsync'ed transaction), then reopening the book (replaying its log) and reading the state.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rules.diskwars.melee import resolve_melee  # noqa: E402
from rules.diskwars.report import build_report  # noqa: E402
from tablesight.scene import Scene  # noqa: E402
from webui.book import GameBook  # noqa: E402


def random_table(seed: int, n: int = 40) -> Scene:
    rng = random.Random(seed)
    disks = []
    for i in range(0, n, 2):
        x, y = rng.uniform(60, 840), rng.uniform(60, 840)
        for k in range(2):
            disks.append({"id": f"d{i + k:02d}", "player": ("red", "blue")[(i // 2 + k) % 2],
                          "x_mm": x + k * rng.uniform(15, 35), "y_mm": y + rng.uniform(-10, 10),
                          "radius_mm": rng.choice([22, 32, 44.5]), "z": k,
                          "stats": {"attack": rng.randint(1, 6), "counter": rng.randint(0, 5),
                                    "toughness": rng.randint(2, 7), "vigor": rng.choice([0, 0, 1])},
                          "keywords": rng.sample(["swift:attack", "slow:counter", "frenzy", "resistant:physical"],
                                                 rng.randint(0, 1))})
    return Scene.from_json({"format": "tablesight.scene/1",
                            "players": [{"id": "red", "initiative": 1}, {"id": "blue", "initiative": 2}],
                            "disks": disks})


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def bench_melee() -> dict:
    melee_ms, full_ms, engagements = [], [], []
    for seed in range(20):
        scene = random_table(seed)
        report = build_report(scene)
        engagements.append(len(report.engagements))
        for _ in range(5):
            t0 = time.perf_counter()
            resolve_melee(scene, report)
            melee_ms.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        resolve_melee(scene, build_report(scene))
        full_ms.append((time.perf_counter() - t0) * 1000)
    return {"melee_median": statistics.median(melee_ms), "melee_p95": pct(melee_ms, 0.95),
            "full_median": statistics.median(full_ms), "full_p95": pct(full_ms, 0.95),
            "engagements": statistics.mean(engagements)}


def bench_book() -> dict:
    scene = random_table(0)
    melee = resolve_melee(scene, build_report(scene)).to_json()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "book.sqlite"
        book = GameBook(path)
        book.new_game(["red", "blue"])
        times = []
        i = 0
        for rnd in range(1, 6):
            for step in range(100):
                t0 = time.perf_counter()
                if step == 0:
                    book.set_phase(rnd, "activation")
                elif step == 50:
                    book.record_melee(melee) if rnd == 1 else book.set_phase(rnd, "melee")
                elif step == 99:
                    book.end_phase()
                else:
                    book.set_tokens(f"x{i % 30}", player=("red", "blue")[i % 2], activation=1, damage=i % 5)
                times.append((time.perf_counter() - t0) * 1000)
                i += 1
        book.close()
        t0 = time.perf_counter()
        again = GameBook(path)
        state = again.state()
        reopen_ms = (time.perf_counter() - t0) * 1000
        again.close()
    return {"changes": len(times), "change_median": statistics.median(times), "change_p95": pct(times, 0.95),
            "reopen_ms": reopen_ms, "events": state["events"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/book.md"))
    args = ap.parse_args()
    m = bench_melee()
    b = bench_book()
    text = f"""# Melee book benchmark

Command: `.venv/bin/python benchmarks/bench_book.py` (writes this file). Machine: the project's 2-core CI box,
shared with other work while this ran, so treat the numbers as upper bounds.

## Melee resolution (seeded tables 0-19, 40 disks each, {m['engagements']:.1f} engagements on average)
| measure | median | p95 |
| --- | --- | --- |
| `resolve_melee` (report given) | {m['melee_median']:.2f} ms | {m['melee_p95']:.2f} ms |
| scene -> `build_report` -> `resolve_melee` | {m['full_median']:.1f} ms | {m['full_p95']:.1f} ms |

## Game book ({b['changes']} changes of a 5-round game; each one fsync'ed SQLite transaction, WAL)
| measure | value |
| --- | --- |
| one change (validate, write, commit, new state), median | {b['change_median']:.2f} ms |
| one change, p95 | {b['change_p95']:.2f} ms |
| reopen the book and fold its {b['events']} events | {b['reopen_ms']:.1f} ms |
"""
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
