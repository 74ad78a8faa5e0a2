"""Setting up the table from the camera: the armies by their look, their owners with one tap per army, unit names
by their first letters, and the table saved as a scene file to reopen later.

- `GET /api/armies`: the current table's disks grouped by ring colour (`webui.armies.group_armies`), with the
  players an army may be given to.
- `POST /api/armies/owner` `{"disks": [...], "player": "orcs"}` (`null`: unknown): the owner of every disk listed,
  through the corrections (`Corrections.set_owners`: each disk's owner correction, saved once), passed on to a
  tracking feed like any owner correction.
- `GET /api/units?prefix=or&limit=8`: the catalog's units with a word of their key, name or an alias starting
  with what was typed (`webui.armies.units_by_prefix`; the catalog of `/api/catalog`).
- `GET /api/table/save`: the table as it stands, the players' corrections applied (owners, units, stack order,
  names), as a `tablesight.scene/1` download; `tablesight serve --scene FILE` reopens it (the game book stays in
  the data directory, or goes along with `/api/book/export`).
"""

from __future__ import annotations

import time
from typing import Any

from flask import Flask, Response, jsonify, request

from tablesight.errors import InputError
from tablesight.formats import dump_json
from webui.armies import group_armies, looks_of_scene, units_by_prefix
from webui.http import json_body

#: Fields the page derives from the corrections (applied again when the file is served): not saved in the file.
_DERIVED = ("corrected", "keywords_needed")


def saved_scene_json(scene: Any) -> dict[str, Any]:
    """The scene's JSON without the fields the corrections add for the page (`corrected`, `keywords_needed`): a
    reopened table shows its owners and units as the table's own."""
    doc = scene.to_json()
    for key in ("disks", "terrain"):
        for item in doc.get(key, []):
            for f in _DERIVED:
                item.pop(f, None)
    return doc


def armies_json(scene: Any) -> dict[str, Any]:
    out = group_armies(looks_of_scene(scene)).to_json()
    out["players"] = [p.id for p in sorted(scene.players, key=lambda p: (p.initiative, p.id))]
    return out


def register(app: Flask, comp: Any) -> None:
    @app.get("/api/armies")
    def api_armies() -> Response:
        v = comp.view()
        out = armies_json(v.scene)
        out["key"] = v.key
        return jsonify(out)

    @app.post("/api/armies/owner")
    def api_armies_owner() -> Response:
        body = json_body()
        unknown = sorted(set(body) - {"disks", "player"})
        if unknown:
            raise InputError(f"unknown field(s) {', '.join(map(repr, unknown))} (allowed: disks, player)")
        missing = [k for k in ("disks", "player") if k not in body]
        if missing:
            raise InputError(f"missing field(s): {', '.join(missing)}")
        out = comp.corrections.set_owners(comp.feed.state().scene, body["disks"], body["player"])
        for disk_id in body["disks"]:
            comp.tell_tracker(disk_id, "owner", body["player"])
        comp.poke()
        return jsonify(out)

    @app.get("/api/units")
    def api_units() -> Response:
        from webui.book_api import current_catalog

        limit = request.args.get("limit", "8")
        if not (limit.isascii() and limit.isdigit()):
            raise InputError(f"limit: expected a whole number 1-50, got {limit[:20]!r}")
        prefix = request.args.get("prefix", "")
        return jsonify({"prefix": prefix[:64],
                        "units": units_by_prefix(current_catalog().units, prefix, int(limit))})

    @app.get("/api/table/save")
    def api_table_save() -> Response:
        v = comp.view()
        stamp = time.strftime("%Y%m%d-%H%M", time.localtime())
        return Response(dump_json(saved_scene_json(v.scene)) + "\n", mimetype="application/json", headers={
            "Content-Disposition": f'attachment; filename="table-{stamp}.scene.json"'})
