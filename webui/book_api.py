"""The melee book's web API: a Flask blueprint (`blueprint`) the app factory registers.

The app factory provides, in `app.extensions`:
- `"tablesight.book"`: the `webui.book.GameBook` (None: the book routes answer 503);
- `"tablesight.webui"` (optional): the companion whose `view()` gives the corrected scene and its report; without
  it, `"tablesight.feed"`'s `state().scene` is used with `rules.diskwars.report.build_report`;
- `"tablesight.data_dir"` (optional): where user catalog files are kept (`catalogs/*.json`).
State-changing routes are plain POSTs: the app's before_request guard (token / same-origin / write key) covers
them. Bad requests get 400 with `{"error": reason}` and change nothing. Routes: docs/book.md.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Callable

from flask import Blueprint, Response, current_app, jsonify, request

from tablesight.errors import InputError, StorageError
from webui.http import json_body, json_error
from tablesight.limits import parse_limit

blueprint = Blueprint("tablesight_book", __name__)

_CATALOG_NAME = re.compile(r"[a-z0-9][a-z0-9_\-]{0,40}")  # fullmatch: no "$" that lets a final newline by


@blueprint.errorhandler(InputError)
def _bad_input(exc: InputError) -> Response:
    return json_error(400, str(exc))


def _book():
    book = current_app.extensions.get("tablesight.book")
    if book is None:
        raise _Unavailable("the game book is not available on this server")
    return book


class _Unavailable(Exception):
    pass


@blueprint.errorhandler(_Unavailable)
def _unavailable(exc: _Unavailable) -> Response:
    return json_error(503, str(exc))


def _body() -> dict[str, Any]:
    # No body at all reads as {}: the routes that need fields say which are missing.
    return json_body(empty_ok=True)


def _only(body: dict[str, Any], allowed: set[str]) -> dict[str, Any]:
    unknown = set(body) - allowed
    if unknown:
        raise InputError(f"unknown field(s) {sorted(unknown)} (allowed: {', '.join(sorted(allowed)) or 'none'})")
    return body


# -- the current scene, its report and the catalog ---------------------------------------------------------------


def _scene_and_report():
    comp = current_app.extensions.get("tablesight.webui")
    if comp is not None and hasattr(comp, "view"):
        v = comp.view()
        if getattr(v, "report_state", "ready") == "computing":
            raise _Unavailable("the rules report of the current table is still being computed; try again in a moment")
        if v.report is None:
            raise InputError(v.report_error or "the rules could not judge the current scene")
        return v.scene, v.report
    feed = current_app.extensions.get("tablesight.feed")
    if feed is None:
        raise _Unavailable("no table feed on this server")
    from rules.diskwars.report import build_report

    scene = feed.state().scene
    return scene, build_report(scene)


def _catalog_dir() -> Path | None:
    data_dir = current_app.extensions.get("tablesight.data_dir")
    return None if data_dir is None else Path(data_dir) / "catalogs"


def current_catalog():
    """The shipped unit catalog merged with the data directory's `catalogs/*.json` (the page's and the
    corrections' catalog)."""
    return _catalog()


def _catalog():
    from rules.melee_commands import load_catalogs

    d = _catalog_dir()
    return load_catalogs(sorted(d.glob("*.json")) if d is not None and d.is_dir() else [])


def _with_targets(scene, targets: dict[str, str]):
    """The scene with the players' target choices (disk id -> target id) written into `melee_target`."""
    from dataclasses import replace

    ids = {d.id for d in scene.disks}
    for k, v in targets.items():
        if not isinstance(k, str) or not isinstance(v, str) or k not in ids or v not in ids:
            raise InputError(f"targets: {k!r} -> {v!r}: both must be disk ids of the current scene")
    return scene.with_disks(replace(d, melee_target=targets.get(d.id, d.melee_target)) for d in scene.disks)


def _targets_from_query() -> dict[str, str]:
    out = {}
    for item in request.args.getlist("target"):
        disk, sep, target = item.partition(":")
        if not sep or not disk or not target:
            raise InputError(f"target={item!r}: expected DISK:TARGET")
        out[disk] = target
    return out


def _resolve(targets: dict[str, str]) -> dict[str, Any]:
    from rules.melee_commands import melee_json

    scene, report = _scene_and_report()
    if targets:
        scene = _with_targets(scene, targets)  # only melee_target changes: the report stays valid
    return melee_json(scene, catalog=_catalog(), report=report)


@blueprint.get("/api/melee")
def api_melee() -> Response:
    """tablesight.melee/1 for the current scene; `?target=DISK:TARGET` (repeatable) applies players' choices."""
    return jsonify(_resolve(_targets_from_query()))


@blueprint.get("/api/catalog")
def api_catalog() -> Response:
    return jsonify(_catalog().to_json())


@blueprint.post("/api/book/catalog")
def api_add_catalog() -> Response:
    """Add (or replace) a user catalog file: {"name": "house", "catalog": {tablesight.catalog/1}}.

    The whole set (shipped files, the user's files, this one in its place) must load together before anything is
    written, so an upload can never leave the melee and catalog routes broken."""
    from rules.diskwars.catalog import merge_catalogs
    from rules.melee_commands import builtin_catalog_paths
    from tablesight.formats import load_json_file

    body = _only(_body(), {"name", "catalog"})
    name = body.get("name")
    if not isinstance(name, str) or not _CATALOG_NAME.fullmatch(name):
        raise InputError("name: lower-case letters, digits, '-' or '_' (up to 41 characters)")
    d = _catalog_dir()
    if d is None:
        raise _Unavailable("this server keeps no data directory for catalogs")
    target = d / f"{name}.json"
    others = [p for p in (sorted(d.glob("*.json")) if d.is_dir() else []) if p.name != target.name]
    docs = [(f"catalog '{p}'", load_json_file(p, what="catalog")) for p in builtin_catalog_paths() + others]
    merge_catalogs(docs + [("catalog", body.get("catalog"))])  # validates; a bad file or set -> 400
    data = (json.dumps(body["catalog"], ensure_ascii=False, indent=2, allow_nan=False) + "\n").encode("utf-8")
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".{name}.json.tmp"
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StorageError(f"catalog '{name}' was not saved ({exc.strerror or exc}); the catalogs are as they "
                           f"were") from None
    return jsonify({"saved": name, "units": len(body["catalog"].get("units", []))})


# -- the book -------------------------------------------------------------------------------------------------------


@blueprint.get("/api/book")
def api_book() -> Response:
    return jsonify(_book().state())


@blueprint.get("/api/book/events")
def api_book_events() -> Response:
    limit = parse_limit(request.args.get("limit"), "limit", 1, 10000, 200)
    return jsonify({"events": _book().events(limit=limit)})


@blueprint.route("/api/book/export", methods=["GET", "POST"])
def api_book_export() -> Response:
    resp = jsonify(_book().export_game())
    resp.headers["Content-Disposition"] = 'attachment; filename="tablesight-game.json"'
    return resp


def _change(kind: str, allowed: set[str], required: set[str] = frozenset()) -> Callable[[], Response]:
    def route() -> Response:
        body = _only(_body(), allowed)
        missing = sorted(required - set(body))
        if missing:
            raise InputError(f"missing field(s) {missing}")
        return jsonify(_book().change(kind, body))

    route.__name__ = f"api_book_{kind}"
    return route


blueprint.add_url_rule("/api/book/new", view_func=_change("new_game", {"players", "objective", "name"}, {"players"}),
                       methods=["POST"])
blueprint.add_url_rule("/api/book/phase", view_func=_change("set_phase", {"round", "phase"}, {"round", "phase"}),
                       methods=["POST"])
blueprint.add_url_rule("/api/book/initiative", view_func=_change("set_initiative", {"order"}, {"order"}),
                       methods=["POST"])
blueprint.add_url_rule("/api/book/tokens", view_func=_change(
    "set_tokens", {"disk", "player", "unit", "activation", "damage", "wound", "power"}, {"disk"}), methods=["POST"])
blueprint.add_url_rule("/api/book/casualty", view_func=_change("casualty", {"disk", "player", "unit"}, {"disk"}),
                       methods=["POST"])
blueprint.add_url_rule("/api/book/restore", view_func=_change("restore_disk", {"disk"}, {"disk"}), methods=["POST"])
blueprint.add_url_rule("/api/book/vp", view_func=_change("award_vp", {"player", "points", "reason"},
                                                         {"player", "points"}), methods=["POST"])
blueprint.add_url_rule("/api/book/objective", view_func=_change(
    "set_objective", {"kind", "name", "text", "vp_per_enemy_casualty"}, {"kind"}), methods=["POST"])
blueprint.add_url_rule("/api/book/end-phase", view_func=_change("end_phase", set()), methods=["POST"])


@blueprint.post("/api/book/melee")
def api_book_melee() -> Response:
    """Record a melee result: {"melee": tablesight.melee/1} as given, or {"targets": {disk: target}} (optional) to
    resolve the current scene now and record that."""
    body = _only(_body(), {"melee", "targets"})
    if "melee" in body and "targets" in body:
        raise InputError("give either 'melee' (a result to record) or 'targets' (resolve the current scene), not both")
    melee = body.get("melee")
    if melee is None:
        targets = body.get("targets") or {}
        if not isinstance(targets, dict):
            raise InputError("targets: expected an object {disk: target}")
        melee = _resolve(targets)
    state = _book().record_melee(melee)
    return jsonify({"book": state, "melee": melee})


@blueprint.post("/api/book/undo")
def api_book_undo() -> Response:
    body = _only(_body(), {"steps"})
    return jsonify(_book().undo(body.get("steps", 1)))


@blueprint.post("/api/book/import")
def api_book_import() -> Response:
    """Body: a `tablesight.game/1` document (as exported)."""
    return jsonify(_book().import_game(_body()))


# -- the round: command cards, who may activate, the reserve, the game's end (rules.diskwars.turn) -----------------

blueprint.add_url_rule("/api/book/cards", view_func=_change("reveal_cards", {"cards"}, {"cards"}), methods=["POST"])
blueprint.add_url_rule("/api/book/card-done", view_func=_change("resolve_card", {"player"}, {"player"}),
                       methods=["POST"])
blueprint.add_url_rule("/api/book/reserve", view_func=_change("set_reserve", {"player", "disks"},
                                                              {"player", "disks"}), methods=["POST"])


def _turn_of(book_state: dict[str, Any]) -> dict[str, Any]:
    """The round as the page shows it: the book's state plus, from the current scene, which disks may activate
    and who has no disk on the battlefield (eliminated, RB p.11, 20)."""
    from rules.diskwars.shooting import activated_in_book
    from rules.diskwars.turn import BookSeat, activation_phase_over, activation_status, players_without_disks
    from webui.book import ROUNDS

    from rules.diskwars.settings import readings_json
    from rules.diskwars.turn import RoundSettings

    out: dict[str, Any] = {"round": book_state["round"], "phase": book_state["phase"], "rounds": ROUNDS,
                           "settings": readings_json(RoundSettings()),
                           "card_turn": book_state["card_turn"], "activation": None, "may_activate": [],
                           "activation_phase_over": None, "eliminated": [], "scene_error": None}
    result = book_state["result"]
    if book_state["started"]:
        try:
            scene, report = _scene_and_report()
        except (InputError, _Unavailable) as exc:
            out["scene_error"] = str(exc)
        else:
            status = activation_status(scene, report, activated_in_book(book_state))
            out["activation"] = [s.to_json() for s in status]
            out["may_activate"] = [s.disk for s in status if s.may_activate]
            out["activation_phase_over"] = activation_phase_over(status)
            seats = [BookSeat(p["id"], p["initiative"]) for p in book_state["players"]]
            out["eliminated"] = list(players_without_disks(scene, report, seats))
            if out["eliminated"]:
                result = _book().game_end(out["eliminated"])
    out["result"] = result
    return out


@blueprint.get("/api/book/turn")
def api_book_turn() -> Response:
    """The round and phase, whose command card resolves, the disks that may still activate (and why the others
    may not), players eliminated and the game's end (docs/book.md)."""
    return jsonify(_turn_of(_book().state()))


@blueprint.post("/api/book/activate")
def api_book_activate() -> Response:
    """{"disk": id}: put an activation token on a disk of the current scene, refused (400, nothing written) when
    it may not activate now: not the activation phase, pinned or already activated (RB p.8)."""
    from rules.diskwars.shooting import activated_in_book
    from rules.diskwars.turn import activation_status

    body = _only(_body(), {"disk"})
    disk = body.get("disk")
    if not isinstance(disk, str) or not disk:
        raise InputError("disk: expected the id of a disk on the table")
    book = _book()
    state = book.state()
    if not state["started"]:
        raise InputError("disk: no game yet: start a new game first")
    if state["phase"] != "activation":
        raise InputError(f"disk: disks are activated in the activation phase (now: {state['phase']})")
    scene, report = _scene_and_report()
    status = {s.disk: s for s in activation_status(scene, report, activated_in_book(state))}
    s = status.get(disk)
    if s is None:
        raise InputError(f"disk: {disk!r} is not a disk on the battlefield")
    if not s.may_activate:
        raise InputError(f"disk: {disk} cannot activate: {'; '.join(s.why_not)}")
    if s.player is None:
        raise InputError(f"disk: {disk}'s owner is unknown: say whose it is first")
    unit = next((d.unit for d in scene.disks if d.id == disk), None)
    return jsonify(book.set_tokens(disk, player=s.player, unit=unit, activation=1))


# -- a ranged attack from the current table (the same code as `tablesight shoot`) ---------------------------------


@blueprint.get("/api/shoot/<disk>")
def api_shoot(disk: str) -> Response:
    """`tablesight.ranged/1` for `disk` shooting now: the current scene and report, the catalog, and the game
    book's activation tokens (an activated disk cannot shoot, RB p.8). 400 naming the shooter when it is not on
    the table or its unit is not in the catalog."""
    from rules.diskwars.shooting import activated_in_book, ranged_attack

    scene, report = _scene_and_report()
    book = current_app.extensions.get("tablesight.book")
    activated = activated_in_book(book.state()) if book is not None else set()
    return jsonify(ranged_attack(scene, disk, catalog=_catalog(), report=report, activated=activated).to_json())


@blueprint.post("/api/move")
def api_move() -> Response:
    """`tablesight.move/1` between two scenes of this table: {"before": scene, "after": scene} (the page sends the
    last two stable scenes it saw). Changes nothing; 400 naming the reason when no disk or several moved."""
    from rules.diskwars.movement import move_consequences
    from tablesight.scene import Scene

    body = _only(_body(), {"before", "after"})
    scenes = []
    for key in ("before", "after"):
        doc = body.get(key)
        if not isinstance(doc, dict):
            raise InputError(f"{key}: expected a scene (tablesight.scene/1)")
        try:
            scenes.append(Scene.from_json(doc))
        except InputError as exc:
            raise InputError(f"{key}: {exc}") from None
    return jsonify(move_consequences(scenes[0], scenes[1], catalog=_catalog()).to_json())


@blueprint.get("/api/deploy")
def api_deploy() -> Response:
    """`tablesight.deployment/1` for the current table (as `tablesight deploy`): the scene's deployment zones, or
    zones from `?edge=PLAYER=EDGE` (repeatable); `?reinforcement=DISK` (repeatable) checks a disk's entry as a
    reinforcement instead."""
    from rules.diskwars.deployment import check_deployment, parse_edges

    scene, _ = _scene_and_report()
    edges = parse_edges(request.args.getlist("edge"))
    return jsonify(check_deployment(scene, edges=edges, reinforcements=request.args.getlist("reinforcement")).to_json())
