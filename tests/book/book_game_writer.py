"""Plays `book_game_script.game_script()` into a book, resuming after the changes already there; prints the
index of each change after its commit. Usage: python book_game_writer.py BOOK"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from book_game_script import game_script  # noqa: E402
from webui.book import GameBook  # noqa: E402

book = GameBook(sys.argv[1])
script = game_script()
done = book.state()["events"]
print(f"resume {done}", flush=True)
for i in range(done, len(script)):
    kind, data = script[i]
    book.change(kind, data)
    print(i, flush=True)
print("finished", flush=True)
