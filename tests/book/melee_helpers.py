"""Small builders for melee tests: scenes from compact disk specs and hand-made rules reports."""

from __future__ import annotations

import json
from pathlib import Path

from rules.diskwars.catalog import parse_catalog
from rules.report import Engagement, MeleeOrder, Pin, Report, TerrainOverlap
from tablesight.scene import Scene

ROOT = Path(__file__).resolve().parents[2]


def rulebook_catalog():
    return parse_catalog(json.loads((ROOT / "rules/diskwars/catalog/rulebook.json").read_text(encoding="utf-8")))


def scene_of(disks, players=("red", "blue"), terrain=()):
    """disks: dicts with at least id and player; positions default to a row so that nothing overlaps by accident."""
    docs = []
    for i, d in enumerate(disks):
        doc = {"x_mm": 100.0 + 100 * i, "y_mm": 100.0, "radius_mm": 22.0, "z": 0}
        doc.update(d)
        docs.append(doc)
    return Scene.from_json({"format": "tablesight.scene/1",
                            "players": [{"id": p, "initiative": i + 1} for i, p in enumerate(players)],
                            "disks": docs, "terrain": list(terrain)})


def report_of(pins, engagements, sequence=None, terrain_overlaps=()):
    """pins: [(pinner, pinned)]; engagements: [(id, attackers, defenders)]; terrain_overlaps: [(disk, terrain)]."""
    engs = tuple(Engagement(id=e, attackers=tuple(sorted(a)), defenders=tuple(sorted(d))) for e, a, d in engagements)
    return Report(pins=tuple(Pin(pinner=a, pinned=b, enemy=True) for a, b in pins), engagements=engs,
                  melee_order=MeleeOrder(sequence=tuple(sequence or [e.id for e in engs])),
                  terrain_overlaps=tuple(TerrainOverlap(d, t, 5.0) for d, t in terrain_overlaps))


def strikes(result):
    """[(engagement, disk, target, timing, damage)] in the order they are listed."""
    return [(st.engagement, s.disk, s.target, s.timing, s.damage) for st in result.steps for s in st.strikes]


def tokens_after(result, disk_id):
    for d in result.scene_after.disks:
        if d.id == disk_id:
            return d.tokens.as_dict() if d.tokens else {}
    return None  # removed
