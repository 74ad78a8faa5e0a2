"""A whole 5-round game written by a process that is SIGKILLed again and again: each restart resumes where the
book stopped, and the finished game is exactly the game played without interruption."""

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

from book_game_script import game_script
from webui.book import GameBook, fold_events, state_json

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def test_five_round_game_survives_repeated_kills_and_finishes_the_same(tmp_path):
    book_path = tmp_path / "game.sqlite"
    script = game_script()
    rng = random.Random(5)
    kills = 0
    for _ in range(40):
        proc = subprocess.Popen([sys.executable, str(HERE / "book_game_writer.py"), str(book_path)],
                                stdout=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        try:
            first = proc.stdout.readline()
            assert first.startswith("resume"), first
            resumed_at = int(first.split()[1])
            budget = rng.randint(1, 12)
            finished = False
            for line in proc.stdout:
                if line.strip() == "finished":
                    finished = True
                    break
                budget -= 1
                if budget <= 0:
                    proc.send_signal(signal.SIGKILL)
                    kills += 1
                    break
            proc.wait(timeout=30)
            rest = proc.stdout.read()
            finished = finished or "finished" in rest
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        with GameBook(book_path) as book:
            n = book.state()["events"]
            assert n >= resumed_at
            # After any crash the book equals the script's first n changes: nothing half-written.
            expected = state_json(fold_events(script[:n]))
            got = book.state()
            got.pop("can_undo")
            assert got == expected
        if finished:
            break
    assert kills >= 3
    with GameBook(book_path) as book:
        final = book.state()
    assert final["game_over"] and final["events"] == len(script)
    assert {p["id"]: p["victory_points"] for p in final["players"]} == {"orcs": 5, "empire": 3}
