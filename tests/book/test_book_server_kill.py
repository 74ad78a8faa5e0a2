"""Kill-safety through HTTP: a real server process is SIGKILLed while the client posts changes; after a restart
the book holds every acknowledged change and at most the one in flight, and the game goes on."""

import http.client
import json
import os
import random
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

from webui.book import GameBook

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def start_server(book_path):
    proc = subprocess.Popen([sys.executable, str(HERE / "book_server_proc.py"), str(book_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}"


def post(base, path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def test_server_killed_mid_request_keeps_every_acknowledged_change(tmp_path):
    book_path = tmp_path / "book.sqlite"
    rng = random.Random(11)
    acked = 0
    for attempt in range(3):
        proc, base = start_server(book_path)
        try:
            if attempt == 0:
                post(base, "/api/book/new", {"players": ["orcs", "empire"]})
            else:  # the restarted server resumes the same game
                state = json.loads(urllib.request.urlopen(base + "/api/book", timeout=10).read())
                assert state["events"] - 1 in (acked, acked + 1)
                acked = state["events"] - 1
            killer = threading.Timer(rng.uniform(0.3, 0.8), lambda: proc.send_signal(signal.SIGKILL))
            killer.start()
            i = acked
            while True:
                try:
                    post(base, "/api/book/tokens", {"disk": f"d{i % 5}", "player": "orcs", "damage": i % 90})
                except (urllib.error.URLError, http.client.HTTPException, OSError):
                    break
                i += 1
                acked = i
            killer.join()
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        with GameBook(book_path) as book:
            changes = book.state()["events"] - 1
            assert acked <= changes <= acked + 1, (attempt, acked, changes)
            last = {f"d{j % 5}": j % 90 for j in range(changes)}
            assert {d["disk"]: d["damage"] for d in book.state()["disks"]} == last
        acked = changes
    assert acked > 10
