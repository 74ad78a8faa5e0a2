"""Small helpers to write test scenes compactly (imported by the rules tests)."""

from tablesight.scene import Scene

PLAYERS = [{"id": "orcs", "initiative": 1}, {"id": "empire", "initiative": 2}]


def disk(id, x, y, r=22.0, z=0, player=None, **kw):
    return {"id": id, "player": player, "x_mm": x, "y_mm": y, "radius_mm": r, "z": z, **kw}


def piece(id, poly, *keywords, name=""):
    return {"id": id, "name": name or id, "polygon_mm": [list(p) for p in poly], "keywords": list(keywords)}


def rect(x0, y0, x1, y1):
    return [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]


def scene(disks, terrain=(), players=PLAYERS, **extra):
    doc = {"format": "tablesight.scene/1", "players": list(players), "disks": list(disks), "terrain": list(terrain)}
    doc.update(extra)
    return Scene.from_json(doc)
