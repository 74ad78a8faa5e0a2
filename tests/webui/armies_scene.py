"""The skirmish table as a camera first sees it: every owner unknown, each disk with the ring colour the eye
reports (`extra.ring_bgr`), the colour of its army's print seen a little lighter or darker across the table.
d6 (no owner in the skirmish) has an odd colour: a disk of no army on the table."""

from __future__ import annotations

import json
from pathlib import Path

SKIRMISH = Path(__file__).parent / "scene_webui_skirmish.json"
RINGS = {"orcs": [(42, 130, 48), (50, 145, 58), (36, 118, 44)],           # green, as the eye sees it
         "empire": [(170, 82, 32), (184, 94, 42), (152, 72, 26)],         # blue
         None: [(30, 200, 225)]}                                          # a yellow marker


def unknown_owner_scene() -> tuple[dict, dict[str, str | None]]:
    """The scene document and the true owner of each disk."""
    doc = json.loads(SKIRMISH.read_text())
    truth, seen = {}, {}
    for d in doc["disks"]:
        owner = d.get("player")
        truth[d["id"]] = owner
        k = seen.get(owner, 0)
        seen[owner] = k + 1
        d["ring_bgr"] = list(RINGS[owner][k % len(RINGS[owner])])
        d["player"] = None
    return doc, truth


def write_unknown_owner_scene(path: Path) -> dict[str, str | None]:
    doc, truth = unknown_owner_scene()
    path.write_text(json.dumps(doc))
    return truth
