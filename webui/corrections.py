"""Players' corrections to what the camera saw, kept in the data directory and applied to every scene.

Corrections are keyed by track id (the vision pipeline keeps a disk's id while it stays on the table), so a
correction made once holds for every later frame and, being stored in `corrections.json`
(`tablesight.corrections/1`, written atomically), across a server restart:

- a disk's owner (`player`, may be `null` = not known) and `unit` (catalog key, `null` clears it);
- which of two disks is on top (`on_top`: [upper, lower] pairs, newest last);
- a detection that is not a disk (`not_disk`), dropped from the scene;
- a terrain piece's name; the keywords the name states (`TERRAIN_NAME_KEYWORDS`) are added to the piece's own,
  unless keywords are given explicitly (then they are the piece's keywords);
- players (`players`: id and initiative): added to scenes that lack them, and their initiative set in the
  scenes that have them.

Every setter validates its input and raises InputError with a reason; nothing is written then.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from tablesight.errors import InputError, StorageError
from tablesight.formats import check_format, dump_json, format_string, load_json_file
from tablesight.scene import TERRAIN_KEYWORDS, Player, Scene

CORRECTIONS = "tablesight.corrections"
FILE_NAME = "corrections.json"

#: The rulebook's terrain pieces whose keywords its text states (rules.diskwars.terrain_presets), by their names in
#: Spanish and English: a piece named so gets those keywords. Any other name gives none: the players pick them
#: from the card (the piece is marked `keywords_needed` until they do).
def _preset_table() -> dict[str, tuple[str, ...]]:
    from rules.diskwars.terrain_presets import PRESETS, normalised_name

    return {normalised_name(n): p.keywords for p in PRESETS if p.keywords is not None for n in (p.name_es, p.name_en)}


TERRAIN_NAME_KEYWORDS: dict[str, tuple[str, ...]] = _preset_table()

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,63}\Z")
_NAME_MAX = 40


def keywords_for_name(name: str) -> tuple[str, ...]:
    """The keywords the rulebook states for the piece a name names (RB p.3, 13), in TERRAIN_KEYWORDS order; ()
    for any other name — never a guess from a word."""
    from rules.diskwars.terrain_presets import keywords_for_name as preset_keywords

    found = set(preset_keywords(name) or ())
    return tuple(k for k in TERRAIN_KEYWORDS if k in found)


def _check_id(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _ID_RE.match(value):
        raise InputError(f"{what}: expected an id (letters, digits, _ . : -; at most 64), got {value!r}")
    return value


def _catalog_key(catalog: Any, unit: str) -> str:
    """The catalog key of `unit` (a key, alias or name); InputError naming close matches when there is none."""
    import difflib

    from rules.diskwars.catalog import slug

    found = catalog.unit(unit)
    if found is not None:
        return found.key
    names = {u.key: u.key for u in catalog.units}
    for u in catalog.units:  # aliases and names point at their key: "wolf riders" suggests jinetez-de-lobo
        for other in (u.name, *u.aliases):
            names.setdefault(slug(other), u.key)
    close = []
    for match in difflib.get_close_matches(slug(unit), list(names), n=8, cutoff=0.6):
        if names[match] not in close:
            close.append(names[match])
    hint = f"; did you mean {', '.join(close[:3])}?" if close else "; the Catalog lists the known units"
    raise InputError(f"unit: {unit!r} is not in the unit catalog{hint}")


class Corrections:
    """The correction store of one data directory. Thread-safe; every change is saved before it is visible."""

    def __init__(self, data_dir: str | Path) -> None:
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / FILE_NAME
        self._lock = threading.Lock()
        self.revision = 0
        self._doc = self._empty()
        if self.path.exists():
            self._doc = self._parse(load_json_file(self.path, what="corrections"))

    # -- file ----------------------------------------------------------------------------------------------
    @staticmethod
    def _empty() -> dict[str, Any]:
        return {"format": format_string(CORRECTIONS), "disks": {}, "on_top": [], "terrain": {}, "players": []}

    def _parse(self, doc: Any) -> dict[str, Any]:
        where = f"corrections '{self.path}'"
        check_format(doc, CORRECTIONS, what=where)
        out = self._empty()
        try:
            for disk_id, c in dict(doc.get("disks", {})).items():
                _check_id(disk_id, f"{where}: disks key")
                entry = {}
                for k, v in dict(c).items():
                    if k == "player":
                        entry[k] = None if v is None else _check_id(v, f"{where}: disks.{disk_id}.player")
                    elif k == "unit":
                        entry[k] = None if v is None else _check_id(v, f"{where}: disks.{disk_id}.unit")
                    elif k == "not_disk":
                        entry[k] = bool(v)
                    else:
                        raise InputError(f"{where}: disks.{disk_id}: unknown field {k!r}")
                out["disks"][disk_id] = entry
            for i, pair in enumerate(list(doc.get("on_top", []))):
                if not isinstance(pair, list) or len(pair) != 2:
                    raise InputError(f"{where}: on_top[{i}]: expected [upper, lower]")
                out["on_top"].append([_check_id(pair[0], f"{where}: on_top[{i}]"), _check_id(pair[1], f"{where}: on_top[{i}]")])
            for tid, t in dict(doc.get("terrain", {})).items():
                _check_id(tid, f"{where}: terrain key")
                out["terrain"][tid] = self._terrain_entry(t.get("name"), t.get("keywords"), f"{where}: terrain.{tid}")
            for i, p in enumerate(list(doc.get("players", []))):
                out["players"].append(self._player_entry(p, f"{where}: players[{i}]"))
        except (TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(f"{where}: malformed ({exc}); fix or remove the file") from None
        return out

    def _save(self, doc: dict[str, Any]) -> None:
        """Atomic write: a temporary file in the same directory, flushed to disk, then renamed over the old.
        A failed write (a full disk: ENOSPC) leaves the old file and the state in memory as they were, and says so
        (StorageError: the API answers 507)."""
        data = (dump_json(doc) + "\n").encode("utf-8")
        tmp = None
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".corrections-", suffix=".tmp", dir=self.data_dir)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException as exc:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            if isinstance(exc, OSError):
                raise StorageError(f"corrections were not saved ({exc.strerror or exc}); the last saved ones "
                                   f"stand") from None
            raise

    def _commit(self, doc: dict[str, Any]) -> dict[str, Any]:
        self._save(doc)
        self._doc = doc
        self.revision += 1
        return self.to_json()

    def _copy(self) -> dict[str, Any]:
        import copy

        return copy.deepcopy(self._doc)

    def to_json(self) -> dict[str, Any]:
        import copy

        out = copy.deepcopy(self._doc)
        out["revision"] = self.revision
        return out

    def hidden_disks(self) -> list[str]:
        """Track ids marked "not a disk" (whether or not they are in view now)."""
        with self._lock:
            return sorted(k for k, v in self._doc["disks"].items() if v.get("not_disk"))

    # -- validation helpers ------------------------------------------------------------------------------------
    @staticmethod
    def _terrain_entry(name: Any, keywords: Any, what: str) -> dict[str, Any]:
        if not isinstance(name, str) or not name.strip() or len(name.strip()) > _NAME_MAX:
            raise InputError(f"{what}.name: expected a name of 1-{_NAME_MAX} characters, got {name!r}")
        name = " ".join(name.split())
        if not name.isprintable():
            raise InputError(f"{what}.name: must be printable text")
        entry: dict[str, Any] = {"name": name}
        if keywords is not None:
            if not isinstance(keywords, list):
                raise InputError(f"{what}.keywords: expected a list of keywords, got {keywords!r}")
            kws = []
            for kw in keywords:
                if not isinstance(kw, str) or kw.strip().lower() not in TERRAIN_KEYWORDS:
                    raise InputError(f"{what}.keywords: unknown keyword {kw!r} (known: {', '.join(TERRAIN_KEYWORDS)})")
                if kw.strip().lower() not in kws:
                    kws.append(kw.strip().lower())
            entry["keywords"] = kws
        return entry

    @staticmethod
    def _player_entry(p: Any, what: str) -> dict[str, Any]:
        if not isinstance(p, dict):
            raise InputError(f"{what}: expected {{\"id\": ..., \"initiative\": N}}")
        pid = _check_id(p.get("id"), f"{what}.id")
        ini = p.get("initiative")
        if isinstance(ini, bool) or not isinstance(ini, int) or not 0 <= ini <= 99:
            raise InputError(f"{what}.initiative: expected a whole number 0-99, got {ini!r}")
        return {"id": pid, "initiative": ini}

    @staticmethod
    def _require_disk(raw: Scene, disk_id: Any, what: str = "disk") -> str:
        disk_id = _check_id(disk_id, what)
        if disk_id not in {d.id for d in raw.disks}:
            raise InputError(f"{what}: no disk {disk_id!r} on the table now")
        return disk_id

    def _players_of(self, raw: Scene) -> set[str]:
        return {p.id for p in raw.players} | {p["id"] for p in self._doc["players"]}

    def _require_owner(self, raw: Scene, player: Any) -> str | None:
        """A known player's id, or None (owner unknown)."""
        if player is None:
            return None
        player = _check_id(player, "player")
        known = self._players_of(raw)
        if player not in known:
            raise InputError(f"player: unknown player {player!r} (players: {', '.join(sorted(known)) or 'none'})")
        return player

    # -- setters (raw = the scene as the feed gave it, before corrections) -------------------------------------
    def set_owner(self, raw: Scene, disk_id: Any, player: Any) -> dict[str, Any]:
        with self._lock:
            disk_id = self._require_disk(raw, disk_id)
            player = self._require_owner(raw, player)
            doc = self._copy()
            doc["disks"].setdefault(disk_id, {})["player"] = player
            return self._commit(doc)

    def set_owners(self, raw: Scene, disk_ids: Any, player: Any) -> dict[str, Any]:
        """One owner for several disks (an army, named with one tap), stored as each disk's owner correction and
        saved once: all of them or, on any bad id, none."""
        with self._lock:
            if not isinstance(disk_ids, list) or not 1 <= len(disk_ids) <= 300:
                raise InputError("disks: expected a list of 1-300 disk ids")
            ids = [self._require_disk(raw, d, f"disks[{i}]") for i, d in enumerate(disk_ids)]
            if len(set(ids)) != len(ids):
                raise InputError("disks: a disk is listed twice")
            player = self._require_owner(raw, player)
            doc = self._copy()
            for disk_id in ids:
                doc["disks"].setdefault(disk_id, {})["player"] = player
            return self._commit(doc)

    def set_unit(self, raw: Scene, disk_id: Any, unit: Any, catalog: Any = None) -> dict[str, Any]:
        """A unit of `catalog` (a rules.diskwars.catalog.Catalog) by its key, an alias or its name; the key is
        stored. A unit the catalog does not know is refused, naming it and the closest known units, so a typo is
        never saved as a unit with no stats. Without a catalog any well-formed key is kept."""
        with self._lock:
            disk_id = self._require_disk(raw, disk_id)
            if unit is not None:
                unit = _check_id(unit, "unit")
                if catalog is not None:
                    unit = _catalog_key(catalog, unit)
            doc = self._copy()
            doc["disks"].setdefault(disk_id, {})["unit"] = unit
            return self._commit(doc)

    def set_not_disk(self, raw: Scene, disk_id: Any, not_disk: Any = True) -> dict[str, Any]:
        with self._lock:
            disk_id = _check_id(disk_id, "disk")
            if not (not_disk is False and self._doc["disks"].get(disk_id, {}).get("not_disk")):
                # Restoring needs no disk in the scene: a tracking feed may have dropped it already.
                disk_id = self._require_disk(raw, disk_id)
            if not isinstance(not_disk, bool):
                raise InputError(f"not_disk: expected true or false, got {not_disk!r}")
            doc = self._copy()
            entry = doc["disks"].setdefault(disk_id, {})
            if not_disk:
                entry["not_disk"] = True
            else:
                entry.pop("not_disk", None)
                if not entry:
                    del doc["disks"][disk_id]
            return self._commit(doc)

    def set_on_top(self, raw: Scene, upper: Any, lower: Any) -> dict[str, Any]:
        with self._lock:
            upper = self._require_disk(raw, upper, "upper")
            lower = self._require_disk(raw, lower, "lower")
            if upper == lower:
                raise InputError("upper and lower: must be two different disks")
            doc = self._copy()
            # The newest call about this pair replaces any older one, in either direction.
            doc["on_top"] = [p for p in doc["on_top"] if set(p) != {upper, lower}] + [[upper, lower]]
            return self._commit(doc)

    def set_terrain(self, raw: Scene, terrain_id: Any, name: Any, keywords: Any = None) -> dict[str, Any]:
        with self._lock:
            terrain_id = _check_id(terrain_id, "terrain")
            if terrain_id not in {t.id for t in raw.terrain}:
                raise InputError(f"terrain: no terrain piece {terrain_id!r} on the table now")
            entry = self._terrain_entry(name, keywords, "terrain")
            doc = self._copy()
            doc["terrain"][terrain_id] = entry
            return self._commit(doc)

    def set_players(self, players: Any) -> dict[str, Any]:
        with self._lock:
            if not isinstance(players, list) or len(players) > 8:
                raise InputError("players: expected a list of at most 8 {\"id\", \"initiative\"} objects")
            entries = [self._player_entry(p, f"players[{i}]") for i, p in enumerate(players)]
            if len({e["id"] for e in entries}) != len(entries):
                raise InputError("players: duplicate player id")
            doc = self._copy()
            doc["players"] = entries
            return self._commit(doc)

    def clear(self, disk_id: Any = None, terrain_id: Any = None) -> dict[str, Any]:
        """Forget the corrections of one disk (its owner, unit, not-a-disk and on-top calls) or one terrain piece."""
        with self._lock:
            if (disk_id is None) == (terrain_id is None):
                raise InputError("clear: give exactly one of 'disk' or 'terrain'")
            doc = self._copy()
            if disk_id is not None:
                disk_id = _check_id(disk_id, "disk")
                doc["disks"].pop(disk_id, None)
                doc["on_top"] = [p for p in doc["on_top"] if disk_id not in p]
            else:
                doc["terrain"].pop(_check_id(terrain_id, "terrain"), None)
            return self._commit(doc)

    # -- applying ----------------------------------------------------------------------------------------------
    def apply(self, raw: Scene) -> Scene:
        """The scene with every correction that concerns it applied; corrected fields are listed per disk/terrain
        in `corrected` so the page can show them."""
        with self._lock:
            doc = self._doc
        # The players' list sets the initiative of players the scene already has, too (the Players... dialog
        # reorders them), and adds the ones the camera cannot know.
        initiative = {p["id"]: p["initiative"] for p in doc["players"]}
        players = [replace(p, initiative=initiative[p.id]) if p.id in initiative else p for p in raw.players]
        have = {p.id for p in players}
        for p in doc["players"]:
            if p["id"] not in have:
                players.append(Player(p["id"], p["initiative"]))
                have.add(p["id"])
        disks = []
        for d in raw.disks:
            c = doc["disks"].get(d.id)
            if not c:
                disks.append(d)
                continue
            if c.get("not_disk"):
                continue
            changes: dict[str, Any] = {}
            if "player" in c and (c["player"] is None or c["player"] in have):
                changes["player"] = c["player"]
            if "unit" in c:
                changes["unit"] = c["unit"]
            if changes:
                extra = dict(d.extra)
                extra["corrected"] = sorted(changes)
                d = replace(d, extra=extra, **changes)
            disks.append(d)
        by_id = {d.id: i for i, d in enumerate(disks)}
        for upper, lower in doc["on_top"]:
            if upper in by_id and lower in by_id:
                u, lo = disks[by_id[upper]], disks[by_id[lower]]
                if u.z > lo.z:
                    continue
                uz, lz = (lo.z, u.z) if u.z != lo.z else (lo.z + 1, lo.z)
                for i, d, z in ((by_id[upper], u, uz), (by_id[lower], lo, lz)):
                    extra = dict(d.extra)
                    extra["corrected"] = sorted(set(extra.get("corrected", [])) | {"z"})
                    disks[i] = replace(d, z=z, extra=extra)
        terrain = []
        for t in raw.terrain:
            c = doc["terrain"].get(t.id)
            if c:
                # Keywords given with the name are the players' pick from the card; a name alone adds the keywords
                # the rulebook states for it to the ones the piece has (a wood named keeps blocks_los and cover).
                if "keywords" in c:
                    kws = tuple(c["keywords"])
                else:
                    named = set(t.keywords) | set(keywords_for_name(c["name"]))
                    kws = tuple(k for k in TERRAIN_KEYWORDS if k in named)
                extra = dict(t.extra)
                extra["corrected"] = ["keywords", "name"]
                t = replace(t, name=c["name"], keywords=kws, extra=extra)
            if not t.keywords and "keywords_needed" not in t.extra:
                # every rulebook piece has keywords (RB p.13): the players pick them from its card
                t = replace(t, extra={**t.extra, "keywords_needed": True})
            terrain.append(t)
        return replace(raw, players=tuple(players), disks=tuple(disks), terrain=tuple(terrain))
