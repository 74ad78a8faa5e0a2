"""The game book: the record of one game of Diskwars in SQLite, kept safe against crashes.

Everything that happens is an EVENT appended to an append-only log (`events` table); the game's state (players,
initiative, round and phase, command cards, each disk's tokens, reserves, casualty piles, victory points, the
game's end) is the fold of the current game's events (`fold_events`, pure; the round's rules are
`rules.diskwars.turn`). One change = one event = one SQLite transaction (WAL journal, synchronous=FULL), so
killing the process at any moment loses at most the change in flight, and reopening the file resumes the game
exactly. Undo appends an `undo` event naming the event it cancels: nothing is ever rewritten.

A file that is not a tablesight game book (another program's SQLite database, a corrupt file, a newer schema) is
refused with a clear message and never written to. New books are built in a temporary file and renamed into
place, so a crash while creating one leaves no half-made book behind.

Game export/import: `tablesight.game/1` (docs/book.md).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

from rules.diskwars import turn as round_rules
from tablesight.errors import InputError, StorageError
from tablesight.formats import check_format, format_string
from tablesight.limits import MAX_NAME, MAX_TEXT, check_json, check_text

APPLICATION_ID = 0x54534742  # "TSGB" in the SQLite header: marks the file as a tablesight game book
SCHEMA_VERSION = 1
GAME = "tablesight.game"
ROUNDS = round_rules.ROUNDS  # RB p.11
PHASES = round_rules.PHASES  # RB p.7
TOKEN_KINDS = ("activation", "damage", "wound", "power")
OBJECTIVE_KINDS = ("introductory", "scenario")
EVENT_KINDS = ("new_game", "set_phase", "set_initiative", "set_tokens", "casualty", "restore_disk", "award_vp",
               "set_objective", "record_melee", "end_phase", "import_game", "reveal_cards", "resolve_card",
               "set_reserve")
_SQLITE_MAGIC = b"SQLite format 3\x00"


class BookError(InputError):
    """A change the book refuses (the message says why) or a file that is not a usable game book."""


class BookStorageError(StorageError):
    """A valid change SQLite could not write (disk full, read-only file, locked too long): nothing was saved."""


def _storage_error(path: Path, what: str, exc: Exception) -> BookStorageError:
    return BookStorageError(f"game book '{path}': the {what} was not saved ({exc}); the game is as it was")


# ---------------------------------------------------------------------------------------------------------------
# Validation helpers for event data (every event is validated the same way when written, read or imported).


def _req_str(data: dict, key: str, kind: str, max_len: int = MAX_NAME) -> str:
    v = data.get(key)
    if not isinstance(v, str) or not v.strip():
        raise BookError(f"{kind}.{key}: expected a non-empty string, got {_short(v)}")
    try:
        return check_text(v, f"{kind}.{key}", max_len).strip()
    except InputError as exc:
        raise BookError(str(exc)) from None


def _opt_text(data: dict, key: str, kind: str, max_len: int = MAX_TEXT) -> str:
    """An optional one-line free text (a name, a reason): '' when absent."""
    v = data.get(key, "")
    if v is None:
        return ""
    try:
        return check_text(v, f"{kind}.{key}", max_len, allow_empty=True)
    except InputError as exc:
        raise BookError(str(exc)) from None


def _short(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 80 else r[:77] + "..."


def _req_int(data: dict, key: str, kind: str, lo: int | None = None, hi: int | None = None) -> int:
    v = data.get(key)
    if isinstance(v, bool) or not isinstance(v, int):
        raise BookError(f"{kind}.{key}: expected a whole number, got {v!r}")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise BookError(f"{kind}.{key}: must be {rng}, got {v}")
    return v


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


# ---------------------------------------------------------------------------------------------------------------
# The state and its fold (pure).


@dataclass(frozen=True)
class BookEvent:
    seq: int
    at: str
    kind: str
    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "at": self.at, "kind": self.kind, "data": self.data}


def _empty_state() -> dict[str, Any]:
    return {"started": False, "name": "", "players": [], "round": 0, "phase": None,
            "objective": {"kind": "introductory"}, "disks": {}, "piles": {}, "awards": [], "events": 0,
            "command_cards": [], "reserves": {}, "ended_round": 0, "melee_rounds": []}


def _player_ids(state: dict) -> set[str]:
    return {p["id"] for p in state["players"]}


def _check_player(state: dict, player: Any, kind: str) -> None:
    if not isinstance(player, str) or player not in _player_ids(state):
        raise BookError(f"{kind}: unknown player {_short(player)} (players: {sorted(_player_ids(state))})")


def _objective(data: Any, kind: str) -> dict[str, Any]:
    if data is None:
        return {"kind": "introductory"}
    if not isinstance(data, dict):
        raise BookError(f"{kind}.objective: expected an object")
    k = data.get("kind", "introductory")
    if k not in OBJECTIVE_KINDS:
        raise BookError(f"{kind}.objective.kind: one of {', '.join(OBJECTIVE_KINDS)}, got {k!r}")
    if k == "introductory":
        return {"kind": "introductory"}
    out = {"kind": "scenario", "name": _req_str(data, "name", f"{kind}.objective"),
           "text": _opt_text(data, "text", f"{kind}.objective"), "vp_per_enemy_casualty": None}
    if data.get("vp_per_enemy_casualty") is not None:
        out["vp_per_enemy_casualty"] = _req_int(data, "vp_per_enemy_casualty", f"{kind}.objective", 0, 100)
    return out


def _register_disk(state: dict, disk: str, player: Any, unit: Any, kind: str) -> dict:
    if player is not None and not isinstance(player, str):
        raise BookError(f"{kind}.player: expected a player id or null, got {_short(player)}")
    if any(c["disk"] == disk for pile in state["piles"].values() for c in pile):
        raise BookError(f"{kind}: disk {disk!r} is in a casualty pile (restore it first)")
    rec = state["disks"].get(disk)
    if rec is None:
        if player is None:
            raise BookError(f"{kind}: disk {disk!r} is new to the book: say its player")
        _check_player(state, player, kind)
        rec = {"disk": disk, "player": player, "unit": None, "activation": 0, "damage": 0, "wound": 0, "power": 0}
        state["disks"][disk] = rec
        for reserve in state["reserves"].values():  # a disk from a reserve enters as a reinforcement (RB p.13)
            if disk in reserve:
                reserve.remove(disk)
    elif player is not None and player != rec["player"]:
        _check_player(state, player, kind)
        rec["player"] = player
    if unit is not None:
        if not isinstance(unit, str) or not unit.strip():
            raise BookError(f"{kind}.unit: expected a non-empty string or null")
        rec["unit"] = _req_str({"unit": unit}, "unit", kind)
    return rec


def apply_event(state: dict[str, Any], kind: str, data: Any) -> dict[str, Any]:
    """One step of the fold: validate `data` for `kind` against `state` and return the new state (BookError if the
    change is not allowed). `state` is a plain JSON-like dict that this function may modify and return.

    Whatever `data` holds, the only exception that leaves here is BookError: a shape the checks below did not
    foresee is refused as malformed, never a crash that would leave the write half done."""
    try:
        return _apply_event(state, kind, data)
    except BookError:
        raise
    except InputError as exc:
        raise BookError(str(exc)) from None
    except (TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError) as exc:
        raise BookError(f"{kind}: malformed data ({exc.__class__.__name__}: {exc})"[:300]) from None


def _apply_event(state: dict[str, Any], kind: str, data: Any) -> dict[str, Any]:
    if not isinstance(kind, str) or kind not in EVENT_KINDS:
        raise BookError(f"unknown change {_short(kind)} (known: {', '.join(EVENT_KINDS)})")
    if not isinstance(data, dict):
        raise BookError(f"{kind}: expected an object, got {type(data).__name__}")
    if kind == "new_game":
        return _new_game(data)
    if kind == "import_game":
        return fold_events(_import_events(data))
    if not state["started"]:
        raise BookError(f"{kind}: no game yet: start a new game first")
    if kind == "set_phase":
        state["round"] = _req_int(data, "round", kind, 1, ROUNDS)
        if state["round"] != state["ended_round"]:
            state["ended_round"] = 0  # a round whose end phase was undone or set back by hand
        phase = data.get("phase")
        if phase not in PHASES:
            raise BookError(f"{kind}.phase: one of {', '.join(PHASES)}, got {phase!r}")
        state["phase"] = phase
    elif kind == "set_initiative":
        order = data.get("order")
        if (not isinstance(order, list) or not all(isinstance(p, str) for p in order)
                or sorted(order) != sorted(_player_ids(state)) or len(set(order)) != len(order)):
            raise BookError(f"{kind}.order: list every player exactly once, got {_short(order)}")
        rank = {p: i + 1 for i, p in enumerate(order)}
        state["players"] = sorted(({"id": p["id"], "initiative": rank[p["id"]]} for p in state["players"]),
                                  key=lambda p: p["initiative"])
    elif kind == "set_tokens":
        disk = _req_str(data, "disk", kind)
        unknown = set(data) - {"disk", "player", "unit", *TOKEN_KINDS}
        if unknown:
            raise BookError(f"{kind}: unknown field(s) {sorted(unknown)}")
        rec = _register_disk(state, disk, data.get("player"), data.get("unit"), kind)
        for t in TOKEN_KINDS:
            if t in data:
                rec[t] = _req_int(data, t, kind, 0, 1 if t == "power" else 99)  # RB p.8: at most one power token
    elif kind == "casualty":
        disk = _req_str(data, "disk", kind)
        rec = _register_disk(state, disk, data.get("player"), data.get("unit"), kind)
        del state["disks"][disk]
        state["piles"].setdefault(rec["player"], []).append(
            {"disk": disk, "unit": rec["unit"], "round": state["round"], "wound": rec["wound"]})
    elif kind == "restore_disk":
        disk = _req_str(data, "disk", kind)
        for player, pile in state["piles"].items():
            for c in pile:
                if c["disk"] == disk:
                    pile.remove(c)
                    state["disks"][disk] = {"disk": disk, "player": player, "unit": c["unit"], "activation": 0,
                                            "damage": 0, "wound": c.get("wound", 0), "power": 0}
                    return state
        raise BookError(f"{kind}: disk {disk!r} is not in a casualty pile")
    elif kind == "award_vp":
        player = _req_str(data, "player", kind)
        _check_player(state, player, kind)
        points = _req_int(data, "points", kind, -100, 100)
        state["awards"].append({"player": player, "points": points, "reason": _opt_text(data, "reason", kind),
                                "round": state["round"]})
    elif kind == "set_objective":
        state["objective"] = _objective(data, kind)
    elif kind == "record_melee":
        _record_melee(state, data)
    elif kind == "end_phase":
        _end_phase(state)
    elif kind == "reveal_cards":
        _reveal_cards(state, data)
    elif kind == "resolve_card":
        _resolve_card(state, data)
    elif kind == "set_reserve":
        _set_reserve(state, data)
    return state


def _end_phase(state: dict) -> None:
    """RB p.10: every token but wounds comes off and the command cards go back to hand. RB p.11: after the fifth
    round every disk left in a reserve goes to its owner's casualty pile."""
    for rec in state["disks"].values():
        rec.update({t: 0 for t in round_rules.TOKENS_CLEARED_AT_END_PHASE})
    state["phase"] = "end"
    state["ended_round"] = state["round"]
    if state["round"] == ROUNDS:
        for player, reserve in state["reserves"].items():
            state["piles"].setdefault(player, []).extend(
                {"disk": d, "unit": None, "round": ROUNDS, "wound": 0, "from_reserve": True} for d in reserve)
            reserve.clear()


def _seats(state: dict) -> list[round_rules.BookSeat]:
    return [round_rules.BookSeat(p["id"], p["initiative"]) for p in state["players"]]


def current_cards(state: dict) -> dict[str, Any] | None:
    """The command cards revealed last in this round (None: none yet)."""
    steps = [c for c in state["command_cards"] if c["round"] == state["round"]]
    return steps[-1] if steps else None


def card_turn(state: dict) -> str | None:
    """Whose revealed command card resolves now (RB p.7 step 2), None when every revealed card is resolved."""
    step = current_cards(state)
    if step is None or state["phase"] != "activation":
        return None
    return next((p for p in step["order"] if p not in step["resolved"]), None)


def _reveal_cards(state: dict, data: dict) -> None:
    kind = "reveal_cards"
    if state["phase"] != "activation":
        raise BookError(f"{kind}: command cards are revealed in the activation phase (now: {state['phase']})")
    waiting = card_turn(state)
    if waiting is not None:
        raise BookError(f"{kind}: {waiting}'s card is still to resolve: resolve the revealed cards first")
    cards = data.get("cards")
    if not isinstance(cards, dict) or not cards:
        raise BookError(f"{kind}.cards: expected {{player: strategy}} for the players who reveal a card")
    unknown = set(data) - {"cards"}
    if unknown:
        raise BookError(f"{kind}: unknown field(s) {sorted(unknown)}")
    revealed = []
    for player, strategy in cards.items():
        _check_player(state, player, f"{kind}.cards")
        if not isinstance(strategy, str):
            raise BookError(f"{kind}.cards.{player}: one of {', '.join(round_rules.STRATEGIES)}")
        try:
            revealed.append(round_rules.CommandCard(player, strategy))
        except InputError:
            raise BookError(f"{kind}.cards.{player}: one of {', '.join(round_rules.STRATEGIES)}, "
                            f"got {_short(strategy)}") from None
    order = round_rules.command_order(revealed, _seats(state))
    state["command_cards"].append({"round": state["round"], "cards": {c.player: c.strategy for c in revealed},
                                   "order": list(order), "resolved": []})


def _resolve_card(state: dict, data: dict) -> None:
    kind = "resolve_card"
    player = _req_str(data, "player", kind)
    turn = card_turn(state)
    if turn is None:
        raise BookError(f"{kind}.player: no revealed command card is waiting (reveal the next cards first)")
    if player != turn:
        raise BookError(f"{kind}.player: it is {turn}'s card that resolves now, not {player!r}'s (RB p.7)")
    current_cards(state)["resolved"].append(player)


def _set_reserve(state: dict, data: dict) -> None:
    """A player's reserve (RB p.13): the disks not deployed, which may enter later as reinforcements."""
    kind = "set_reserve"
    player = _req_str(data, "player", kind)
    _check_player(state, player, kind)
    disks = data.get("disks")
    if not isinstance(disks, list) or len(disks) > 200:
        raise BookError(f"{kind}.disks: expected a list of disk ids")
    ids = [_req_str({"disk": d}, "disk", f"{kind}.disks") for d in disks]
    if len(set(ids)) != len(ids):
        raise BookError(f"{kind}.disks: a disk is listed twice")
    for d in ids:
        if d in state["disks"]:
            raise BookError(f"{kind}.disks: {d!r} is on the battlefield in the book, not in a reserve")
        if any(c["disk"] == d for pile in state["piles"].values() for c in pile):
            raise BookError(f"{kind}.disks: {d!r} is in a casualty pile")
        if any(d in r for p, r in state["reserves"].items() if p != player):
            raise BookError(f"{kind}.disks: {d!r} is in another player's reserve")
    state["reserves"][player] = ids


def _new_game(data: dict) -> dict[str, Any]:
    kind = "new_game"
    players = data.get("players")
    if not isinstance(players, list) or not 2 <= len(players) <= 4:
        raise BookError(f"{kind}.players: expected 2 to 4 players, got {_short(players)}")
    out = []
    for i, p in enumerate(players):
        if isinstance(p, str):
            p = {"id": p, "initiative": i + 1}
        if not isinstance(p, dict):
            raise BookError(f"{kind}.players[{i}]: expected an object or a name")
        out.append({"id": _req_str(p, "id", f"{kind}.players[{i}]"),
                    "initiative": _req_int({"initiative": p.get("initiative", i + 1)}, "initiative",
                                           f"{kind}.players[{i}]", 1, len(players))})
    if len({p["id"] for p in out}) != len(out):
        raise BookError(f"{kind}.players: player ids must differ")
    if sorted(p["initiative"] for p in out) != list(range(1, len(out) + 1)):
        raise BookError(f"{kind}.players: initiatives must be 1..{len(out)}, each once")
    state = _empty_state()
    state.update(started=True, name=_opt_text(data, "name", kind), round=1, phase="activation",
                 players=sorted(out, key=lambda p: p["initiative"]),
                 objective=_objective(data.get("objective"), kind))
    state["piles"] = {p["id"]: [] for p in out}
    state["reserves"] = {p["id"]: [] for p in out}
    return state


def _record_melee(state: dict, data: dict) -> None:
    kind = "record_melee"
    # One melee phase per round (RB p.7, 10): a second record in a round is refused when it is written
    # (`_melee_not_recorded_yet`), not here, so a book written before that check replays as it was.
    if state["round"] not in state["melee_rounds"]:
        state["melee_rounds"].append(state["round"])
    melee = data.get("melee")
    try:
        check_format(melee, "tablesight.melee", what=f"{kind}.melee")
    except InputError as exc:
        raise BookError(str(exc)) from None
    scene = melee.get("scene_after")
    casualties = melee.get("casualties")
    if not isinstance(scene, dict) or not isinstance(scene.get("disks"), list) or not isinstance(casualties, list):
        raise BookError(f"{kind}.melee: needs 'scene_after' with its disks and a 'casualties' list")
    details = melee.get("casualty_details", [])
    if not isinstance(details, list):
        raise BookError(f"{kind}.melee.casualty_details: expected a list")
    owners = {c["disk"]: c for c in details if isinstance(c, dict) and isinstance(c.get("disk"), str)}
    for i, d in enumerate(scene["disks"]):
        if not isinstance(d, dict) or not isinstance(d.get("id"), str):
            raise BookError(f"{kind}.melee.scene_after.disks[{i}]: expected a disk with an id")
        tokens = d.get("tokens")
        if not tokens or d.get("player") is None:
            continue
        if not isinstance(tokens, dict):
            raise BookError(f"{kind}.melee.scene_after.disks[{i}].tokens: expected an object")
        rec = _register_disk(state, d["id"], d["player"], d.get("unit"), kind)
        for t in ("damage", "wound"):
            if t in tokens:
                rec[t] = _req_int(tokens, t, f"{kind}.melee.scene_after.disks[{i}].tokens", 0, 99)
    for disk in casualties:
        if not isinstance(disk, str):
            raise BookError(f"{kind}.melee.casualties: expected disk ids")
        detail = owners.get(disk, {})
        apply_event(state, "casualty", {"disk": disk, "player": detail.get("player"), "unit": detail.get("unit")})
    state["phase"] = "melee"


def _melee_recorded(state: dict[str, Any]) -> bool:
    """Is the melee phase of the current round recorded? (A round has one melee phase, RB p.10.)"""
    return bool(state["started"]) and state["round"] in state["melee_rounds"]


def _melee_not_recorded_yet(state: dict[str, Any]) -> None:
    if _melee_recorded(state):
        raise BookError(f"record_melee: the melee phase of round {state['round']} is already recorded "
                        f"(undo it to record it again)")


def _import_events(doc: Any) -> list[tuple[str, dict]]:
    """The (kind, data) list of an exported game (`tablesight.game/1`), checked to start with a new game."""
    try:
        check_format(doc, GAME, what="game")
    except InputError as exc:
        raise BookError(str(exc)) from None
    events = doc.get("events")
    if not isinstance(events, list) or not events:
        raise BookError("game.events: expected a non-empty list")
    out = []
    for i, e in enumerate(events):
        if not isinstance(e, dict) or not isinstance(e.get("kind"), str) or not isinstance(e.get("data"), dict):
            raise BookError(f"game.events[{i}]: expected {{\"kind\": ..., \"data\": {{...}}}}")
        if e["kind"] == "import_game":
            raise BookError(f"game.events[{i}]: an exported game cannot contain another import")
        out.append((e["kind"], e["data"]))
    if out[0][0] != "new_game":
        raise BookError("game.events[0]: an exported game starts with its new_game event")
    return out


def fold_events(events: Iterable[tuple[str, dict]]) -> dict[str, Any]:
    """The state after a list of (kind, data) events (pure; raises BookError naming the first bad event)."""
    state = _empty_state()
    n = 0
    for i, (kind, data) in enumerate(events):
        try:
            state = apply_event(state, kind, json.loads(json.dumps(data)))
        except BookError as exc:
            raise BookError(f"event {i + 1} ({kind}): {exc}") from None
        n += 1
    state["events"] = n
    return state


def victory_points(state: dict[str, Any]) -> dict[str, int]:
    """Victory points so far: introductory objective 1 per enemy casualty (RB p.11); a scenario card's objective
    gives what was entered (`vp_per_enemy_casualty`, if the card is of that kind) plus the points awarded."""
    per = 1 if state["objective"]["kind"] == "introductory" else (state["objective"].get("vp_per_enemy_casualty") or 0)
    return round_rules.victory_points(_seats(state), state["piles"], per,
                                      [(a["player"], a["points"]) for a in state["awards"]])


def game_end(state: dict[str, Any], eliminated: Iterable[str] = ()) -> round_rules.GameEnd:
    """The game's end as far as the book knows (round 5's end phase done) and, given the players with no disk on
    the battlefield (`eliminated`, from the current scene), elimination (RB p.11, 20)."""
    return round_rules.game_end(state["round"], state["phase"], state["ended_round"] == ROUNDS, _seats(state),
                                victory_points(state), eliminated)


def state_json(state: dict[str, Any]) -> dict[str, Any]:
    """The book's state as the page and the export show it."""
    vp = victory_points(state) if state["started"] else {}
    order = {p["id"]: p["initiative"] for p in state["players"]}
    leader = None
    if vp:  # ties go by initiative order (RB p.11, 15)
        leader = min(vp, key=lambda p: (-vp[p], order[p]))
    return {
        "started": state["started"],
        "name": state["name"],
        "round": state["round"],
        "phase": state["phase"],
        "game_over": state["started"] and state["ended_round"] == ROUNDS,
        "objective": state["objective"],
        "players": [{"id": p["id"], "initiative": p["initiative"], "victory_points": vp.get(p["id"], 0),
                     "casualties": len(state["piles"].get(p["id"], []))} for p in state["players"]],
        "leader": leader,
        "disks": [dict(state["disks"][k]) for k in sorted(state["disks"])],
        "casualty_piles": {p: list(pile) for p, pile in state["piles"].items()},
        "awards": list(state["awards"]),
        "events": state["events"],
        "command_cards": [dict(c) for c in state["command_cards"]],
        "card_turn": card_turn(state) if state["started"] else None,
        "melee_recorded": _melee_recorded(state),  # this round's melee phase: the page offers to record it once
        "reserves": {p: list(r) for p, r in state["reserves"].items()},
        "result": game_end(state).to_json() if state["started"] else None,
    }


# ---------------------------------------------------------------------------------------------------------------
# The store.

_SCHEMA = """
CREATE TABLE book_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    undoes INTEGER REFERENCES events(seq)
);
"""


class GameBook:
    """The game record in one SQLite file. Thread-safe (one lock around one connection).

    Every method that changes the game writes exactly one event in one transaction and returns the new state
    (as `state()` does); a refused change raises BookError and writes nothing.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        if not self.path.exists() or self.path.stat().st_size == 0:
            self._create(self.path)
        self._check_file()
        self._conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False, timeout=10.0)
        try:
            self._check_marker(self._conn)
            mode = self._conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise BookError(f"game book '{self.path}': cannot use the WAL journal (got {mode!r})")
            self._conn.execute("PRAGMA synchronous=FULL")
            check = self._conn.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise BookError(f"game book '{self.path}' is damaged ({check}); it was left untouched")
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise BookError(f"game book '{self.path}' cannot be read ({exc}); it was left untouched") from None
        except BookError:
            self._conn.close()
            raise
        self._cache: tuple[int, list[BookEvent], dict[str, Any]] | None = None
        try:
            self._load()
        except BookError as exc:
            self._conn.close()
            raise BookError(f"game book '{self.path}': {exc}; it was left untouched") from None

    # Opening ----------------------------------------------------------------------------------------------------
    @staticmethod
    def _create(path: Path) -> None:
        """Build an empty book in a temporary file and move it into place (never over a non-empty file)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.new-{os.getpid()}-{threading.get_ident()}")
        for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm"), Path(f"{tmp}-journal")):
            leftover.unlink(missing_ok=True)
        conn = sqlite3.connect(str(tmp), isolation_level=None)
        try:
            conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.executescript("BEGIN;" + _SCHEMA + "COMMIT;")
            conn.execute("INSERT INTO book_meta VALUES ('format', 'tablesight.book/1')")
            conn.execute("INSERT INTO book_meta VALUES ('created', ?)", (_utc_now(),))
            conn.execute("PRAGMA journal_mode=DELETE")
        finally:
            conn.close()
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        if path.exists() and path.stat().st_size > 0:  # someone else made one meanwhile: keep theirs
            tmp.unlink(missing_ok=True)
            return
        os.replace(tmp, path)

    def _check_file(self) -> None:
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(100)
        except OSError as exc:
            raise BookError(f"game book '{self.path}': cannot read it ({exc})") from None
        if not head.startswith(_SQLITE_MAGIC):
            raise BookError(f"'{self.path}' is not a tablesight game book (not an SQLite database); it was left "
                            f"untouched — choose another file")
        app_id = int.from_bytes(head[68:72], "big")
        if app_id != APPLICATION_ID:
            raise BookError(f"'{self.path}' is an SQLite database of another program (application id {app_id:#x}), "
                            f"not a tablesight game book; it was left untouched — choose another file")

    def _check_marker(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise BookError(f"game book '{self.path}' was written by a newer tablesight (schema {version}, this one "
                            f"reads {SCHEMA_VERSION}); it was left untouched")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"events", "book_meta"} <= tables:
            raise BookError(f"game book '{self.path}' lacks its tables; it was left untouched")

    def close(self) -> None:
        """Close the book, folding the WAL journal back into the file first (a clean stop leaves one file)."""
        with self._lock:
            try:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error:
                pass  # the WAL is replayed on the next open anyway
            self._conn.close()

    def __enter__(self) -> "GameBook":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # Reading ----------------------------------------------------------------------------------------------------
    def _rows(self) -> list[BookEvent]:
        rows = self._conn.execute("SELECT seq, at, kind, data, undoes FROM events ORDER BY seq").fetchall()
        out = []
        for seq, at, kind, data, undoes in rows:
            try:
                doc = json.loads(data)
            except json.JSONDecodeError:
                raise BookError(f"event {seq} is not valid JSON") from None
            if kind == "undo":
                doc = {"seq": undoes}
            out.append(BookEvent(seq=seq, at=at, kind=kind, data=doc))
        return out

    @staticmethod
    def _effective(events: list[BookEvent]) -> list[BookEvent]:
        undone = {e.data["seq"] for e in events if e.kind == "undo"}
        return [e for e in events if e.kind != "undo" and e.seq not in undone]

    @staticmethod
    def _current_game(effective: list[BookEvent]) -> list[tuple[str, dict]]:
        """The current game's events, an import expanded into the events it carried."""
        game: list[tuple[str, dict]] = []
        for e in effective:
            if e.kind == "new_game":
                game = [(e.kind, e.data)]
            elif e.kind == "import_game":
                game = _import_events(e.data)
            else:
                game.append((e.kind, e.data))
        return game

    def _load(self) -> tuple[list[BookEvent], dict[str, Any]]:
        last = self._conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0]
        if self._cache is not None and self._cache[0] == last:
            return self._cache[1], self._cache[2]
        events = self._rows()
        effective = self._effective(events)
        state = fold_events(self._current_game(effective))
        self._cache = (last, effective, state)
        return effective, state

    def state(self) -> dict[str, Any]:
        """The current game as JSON (see `state_json`), plus how many steps can be undone."""
        with self._lock:
            effective, state = self._load()
            out = state_json(state)
            out["can_undo"] = len(effective)
            return out

    def game_end(self, eliminated: Iterable[str] = ()) -> dict[str, Any] | None:
        """The game's end (`state()["result"]`) with `eliminated` players (those with no disk on the
        battlefield in the current scene) taken into account."""
        with self._lock:
            _, state = self._load()
            return game_end(state, eliminated).to_json() if state["started"] else None

    def events(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The raw log, newest last (undo events included)."""
        with self._lock:
            events = self._rows()
        return [e.to_json() for e in (events[-limit:] if limit else events)]

    # Writing ----------------------------------------------------------------------------------------------------
    def _append(self, kind: str, data: dict[str, Any],
                check: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
        try:
            check_json(data, kind)
        except InputError as exc:
            raise BookError(str(exc)) from None
        data = json.loads(json.dumps(data, allow_nan=False))  # a plain JSON copy: what is validated is stored
        with self._lock:
            try:
                # The write lock is taken before reading, so a change is validated against the latest log even
                # when another process writes the same book.
                self._conn.execute("BEGIN IMMEDIATE")
                effective, state = self._load()
                if check is not None:  # a refusal that holds for new changes only, never for replaying the log
                    check(state)
                new_state = apply_event(json.loads(json.dumps(state)), kind, json.loads(json.dumps(data)))
                if kind == "new_game":
                    new_state["events"] = 1
                elif kind != "import_game":  # an import's fold counts its own events
                    new_state["events"] = state["events"] + 1
                at = _utc_now()
                cur = self._conn.execute("INSERT INTO events (at, kind, data, undoes) VALUES (?, ?, ?, NULL)",
                                         (at, kind, json.dumps(data, ensure_ascii=False, sort_keys=True,
                                                               allow_nan=False)))
                self._conn.execute("COMMIT")
                # The fold advanced by one event: no need to replay the whole log on the next read.
                self._cache = (cur.lastrowid, effective + [BookEvent(cur.lastrowid, at, kind, data)], new_state)
            except BaseException as exc:
                # All or nothing: whatever went wrong, the transaction is rolled back so the next write works.
                self._rollback()
                if isinstance(exc, sqlite3.Error):
                    raise _storage_error(self.path, "change", exc) from None
                raise
            return self.state()

    def _rollback(self) -> None:
        self._cache = None  # re-read the log on the next access: it is the truth
        try:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass

    def new_game(self, players: list, objective: dict | None = None, name: str = "") -> dict[str, Any]:
        data: dict[str, Any] = {"players": players, "name": name}
        if objective is not None:
            data["objective"] = objective
        return self._append("new_game", data)

    def set_phase(self, round: int, phase: str) -> dict[str, Any]:
        return self._append("set_phase", {"round": round, "phase": phase})

    def set_initiative(self, order: list[str]) -> dict[str, Any]:
        return self._append("set_initiative", {"order": order})

    def set_tokens(self, disk: str, player: str | None = None, unit: str | None = None, **tokens: int) -> dict[str, Any]:
        data: dict[str, Any] = {"disk": disk, **tokens}
        if player is not None:
            data["player"] = player
        if unit is not None:
            data["unit"] = unit
        return self._append("set_tokens", data)

    def add_casualty(self, disk: str, player: str | None = None, unit: str | None = None) -> dict[str, Any]:
        return self._append("casualty", {"disk": disk, "player": player, "unit": unit})

    def restore_disk(self, disk: str) -> dict[str, Any]:
        return self._append("restore_disk", {"disk": disk})

    def award_vp(self, player: str, points: int, reason: str = "") -> dict[str, Any]:
        return self._append("award_vp", {"player": player, "points": points, "reason": reason})

    def set_objective(self, objective: dict[str, Any]) -> dict[str, Any]:
        return self._append("set_objective", objective)

    def record_melee(self, melee: Any) -> dict[str, Any]:
        """Apply a melee result (a `MeleeResult` or its `tablesight.melee/1` JSON): damage and wound tokens of the
        disks in its `scene_after`, casualties to their owners' piles, phase = melee."""
        if hasattr(melee, "to_json"):
            melee = melee.to_json()
        return self._append("record_melee", {"melee": melee}, check=_melee_not_recorded_yet)

    def end_phase(self) -> dict[str, Any]:
        return self._append("end_phase", {})

    def reveal_cards(self, cards: dict[str, str]) -> dict[str, Any]:
        """The command cards revealed at once ({player: strategy}); the book orders them (RB p.7, 15, 18)."""
        return self._append("reveal_cards", {"cards": cards})

    def resolve_card(self, player: str) -> dict[str, Any]:
        """`player`'s revealed card is resolved (must be the one whose turn it is)."""
        return self._append("resolve_card", {"player": player})

    def set_reserve(self, player: str, disks: list[str]) -> dict[str, Any]:
        return self._append("set_reserve", {"player": player, "disks": disks})

    def change(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        """Any change by its event kind (the web API's one entry point)."""
        if kind == "undo":
            raise BookError("use undo() to undo")
        if kind == "record_melee":
            return self._append(kind, data, check=_melee_not_recorded_yet)
        return self._append(kind, data)

    def undo(self, steps: int = 1) -> dict[str, Any]:
        """Cancel the last `steps` changes (one transaction). The log keeps them, marked undone."""
        if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= 50:
            raise BookError(f"undo.steps: must be 1..50, got {steps!r}")
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                effective, _ = self._load()
                if len(effective) < steps:
                    raise BookError(f"undo: only {len(effective)} change(s) can be undone")
                for seq in [e.seq for e in effective[-steps:]][::-1]:
                    self._conn.execute("INSERT INTO events (at, kind, data, undoes) VALUES (?, 'undo', '{}', ?)",
                                       (_utc_now(), seq))
                self._conn.execute("COMMIT")
            except BaseException as exc:
                self._rollback()
                if isinstance(exc, sqlite3.Error):
                    raise _storage_error(self.path, "undo", exc) from None
                raise
            return self.state()

    # Export / import ---------------------------------------------------------------------------------------------
    def export_game(self) -> dict[str, Any]:
        """The current game as a `tablesight.game/1` document: its events (undone ones left out) and its state."""
        with self._lock:
            effective, state = self._load()
            game = self._current_game(effective)
        if not game:
            raise BookError("export: no game to export yet")
        return {"format": format_string(GAME), "exported": _utc_now(),
                "events": [{"kind": k, "data": d} for k, d in game], "state": state_json(state)}

    def import_game(self, doc: Any) -> dict[str, Any]:
        """Make an exported game the current one (one undoable change). Its events are replayed and checked, and
        the state it carries, if any, must match the replay."""
        events = _import_events(doc)
        replayed = state_json(fold_events(events))
        if isinstance(doc, dict) and doc.get("state") is not None:
            if not isinstance(doc["state"], dict):
                raise BookError("game.state: expected an object (the state the export carried) or nothing")
            theirs = dict(doc["state"])
            for k in ("can_undo", "melee_recorded"):  # not in every export; melee_recorded follows from the events
                theirs.pop(k, None)
                replayed.pop(k, None)
            if theirs != replayed:
                raise BookError("game: its 'state' does not match its events (edited by hand?); not imported")
        return self._append("import_game", {"format": doc["format"], "events": doc["events"]})
