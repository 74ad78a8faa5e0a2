"""A writer process for the kill-safety test: appends numbered changes to a game book as fast as it can.

Usage: python book_writer_loop.py BOOK COUNT. Change number i sets disk d{i % 5}'s damage to i % 90 and its
activation to 1; after each commit it prints i (so the parent knows what was committed before it kills us).
On start it resumes after the changes already in the book.
"""

import sys

from webui.book import GameBook

book = GameBook(sys.argv[1])
count = int(sys.argv[2])
state = book.state()
if not state["started"]:
    state = book.new_game(["orcs", "empire"], name="kill test")
done = state["events"] - 1  # changes after the new_game event
print(f"resume {done}", flush=True)
for i in range(done, count):
    book.set_tokens(f"d{i % 5}", player="orcs" if i % 2 else "empire", damage=i % 90, activation=1)
    print(i, flush=True)
