"""The round's benchmark: who may activate, the command-card order, and the book's round routes.

Run: .venv/bin/python benchmarks/bench_round.py [--out benchmarks/results/round.md]

- Rules: seeded random tables (seeds 0-19) of 40 disks in pairs and stacks; `activation_status` timed alone (the
  report built first, untimed), and `command_order` of four players' cards.
- API: `GET /api/book/turn` and `POST /api/book/activate` through Flask's test client on one such table (the
  feed path: the report is built per request, as without the live companion's cache), and reopening a book of a
  whole five-round game with command cards (replaying its log).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_book import pct, random_table  # noqa: E402
from rules.diskwars.report import build_report  # noqa: E402
from rules.diskwars.turn import BookSeat, CommandCard, activation_status, command_order  # noqa: E402
from webui.book import GameBook  # noqa: E402


def timed(f, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "round.md"))
    args = ap.parse_args()
    rows = []

    status_ms = []
    for seed in range(20):
        sc = random_table(seed)
        rep = build_report(sc)
        status_ms += timed(lambda: activation_status(sc, rep, {"d00", "d05"}), 5)
    rows.append(("activation_status, 40 disks (20 tables x 5)", status_ms))
    seats = [BookSeat(p, i + 1) for i, p in enumerate("abcd")]
    cards = [CommandCard("a", "slow"), CommandCard("b", "cunning"), CommandCard("c", "direct"), CommandCard("d", "bold")]
    rows.append(("command_order, 4 players", timed(lambda: command_order(cards, seats), 1000)))

    from dataclasses import dataclass

    from flask import Flask

    from webui.book_api import blueprint

    @dataclass
    class _State:
        scene: object

    class Feed:
        def __init__(self, scene):
            self.scene = scene

        def state(self):
            return _State(self.scene)

    with tempfile.TemporaryDirectory() as tmp:
        sc = random_table(0)
        app = Flask("bench_round")
        app.extensions["tablesight.book"] = GameBook(Path(tmp) / "book.sqlite")
        app.extensions["tablesight.feed"] = Feed(sc)
        app.register_blueprint(blueprint)
        client = app.test_client()
        post = lambda url, body: client.post(url, data=json.dumps(body), content_type="application/json")  # noqa: E731
        post("/api/book/new", {"players": ["red", "blue"]})
        rows.append(("GET /api/book/turn, 40 disks (report built per request)",
                     timed(lambda: client.get("/api/book/turn"), 30)))
        may = client.get("/api/book/turn").get_json()["may_activate"]
        rows.append(("POST /api/book/activate (one fsync'ed change)",
                     timed(lambda: post("/api/book/activate", {"disk": may.pop()}), min(10, len(may)))))
        book = app.extensions["tablesight.book"]
        for r in range(1, 6):
            book.set_phase(r, "activation")
            for _ in range(3):
                book.reveal_cards({"red": "bold", "blue": "cunning"})
                book.resolve_card("blue")
                book.resolve_card("red")
            book.set_phase(r, "melee")
            book.end_phase()
        n_events = book.state()["events"]
        book.close()
        def reopen() -> None:
            with GameBook(Path(tmp) / "book.sqlite") as again:
                again.state()

        rows.append((f"reopen a 5-round book ({n_events} events) and read its state", timed(reopen, 5)))

    lines = ["# Round benchmark", "", "`.venv/bin/python benchmarks/bench_round.py`", "",
             "| what | n | p50 ms | p95 ms |", "| --- | --- | --- | --- |"]
    for name, ms in rows:
        lines.append(f"| {name} | {len(ms)} | {pct(ms, 0.5):.3f} | {pct(ms, 0.95):.3f} |")
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
