"""The unit catalog (`tablesight.catalog/1`): units with their printed numbers, keywords and traits.

Pure parsing and validation of catalog documents; reading the files is the command module's job
(`rules.melee_commands.load_catalogs`). A stat the source does not state is `None` (JSON `null`) and stays
unknown: the melee resolution reports what it cannot decide instead of guessing. The shipped catalog
(`rules/diskwars/catalog/*.json`) holds only what the rulebook's text states, each unit with the pages it
comes from; users add their own files in the same format (docs/book.md).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from tablesight.errors import InputError
from tablesight.formats import check_format, format_string

CATALOG = "tablesight.catalog"
UNIT_STATS = ("move", "attack", "counter", "toughness", "vigor", "command", "recruit")
RACES = ("empire", "high_elves", "orcs", "chaos")
SIZES = ("small", "medium", "large")
RANGES = ("short", "medium", "long", "siege")
DAMAGE_KINDS = ("physical", "arcane")
#: Keywords whose argument the melee resolution reads; others are kept as written.
TIMING_ARGS = ("attack", "counter")
_KEYWORD_RE = re.compile(r"^[a-z][a-z0-9_]*(?::[a-z0-9_+?]+)?\Z")
_KEY_RE = re.compile(r"^[a-z0-9][a-z0-9\-]*\Z")


class CatalogError(InputError):
    """A catalog document that does not follow `tablesight.catalog/1`; the message names the field."""


def slug(name: str) -> str:
    """The catalog key spelling of a name: ASCII, lower case, words joined by '-' ("Peña de" -> "pena-de")."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")


def keyword_parts(keyword: str) -> tuple[str, str | None]:
    """'swift:counter' -> ('swift', 'counter'); 'frenzy' -> ('frenzy', None)."""
    name, _, arg = keyword.partition(":")
    return name, (arg or None)


def check_keyword(keyword: Any, path: str) -> str:
    """Validate one keyword string (`name` or `name:argument`) and return it in canonical lower case."""
    if not isinstance(keyword, str) or not keyword.strip():
        raise CatalogError(f"{path}: expected a keyword string, got {keyword!r}")
    kw = keyword.strip().lower()
    if not _KEYWORD_RE.match(kw):
        raise CatalogError(f"{path}: keyword {keyword!r} must look like 'name' or 'name:argument'")
    name, arg = keyword_parts(kw)
    if name in ("swift", "slow") and arg not in TIMING_ARGS:
        raise CatalogError(f"{path}: {name} needs ':attack' or ':counter', got {keyword!r}")
    if name in ("resistant", "immune") and not arg:
        raise CatalogError(f"{path}: {name} needs what it applies to, e.g. '{name}:physical'")
    if name in ("impact", "magic") and arg is not None and arg != "?" and not arg.isdigit():
        raise CatalogError(f"{path}: {name} takes a whole number, e.g. '{name}:2', got {keyword!r}")
    return kw


def _opt_int(value: Any, path: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CatalogError(f"{path}: expected a whole number >= 0 or null, got {value!r}")
    return value


def _opt_bool(value: Any, path: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise CatalogError(f"{path}: expected true, false or null, got {value!r}")


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise CatalogError(f"{path}: expected a non-empty string, got {value!r}")
    return value.strip()


def _str_list(value: Any, path: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise CatalogError(f"{path}: expected a list, got {type(value).__name__}")
    return tuple(_str(v, f"{path}[{i}]") for i, v in enumerate(value))


@dataclass(frozen=True)
class UnitStats:
    """Printed numbers of a disk (RB p.24): `None` = the source does not say."""

    move: int | None = None
    attack: int | None = None
    counter: int | None = None
    toughness: int | None = None
    vigor: int | None = None
    command: int | None = None  # heroes only
    recruit: int | None = None  # a hero's recruitment points, a unit's recruitment cost

    def __post_init__(self) -> None:
        for k in UNIT_STATS:
            _opt_int(getattr(self, k), f"stats.{k}")

    def to_json(self) -> dict[str, int | None]:
        return {k: getattr(self, k) for k in UNIT_STATS}


@dataclass(frozen=True)
class RangedAttack:
    """A ranged attack line `ß: <max range> <dice> <strength> <damage kind>` (RB p.11)."""

    max_range: str | None = None
    dice: int | None = None
    strength: int | None = None
    damage: str | None = None
    note: str = ""

    def __post_init__(self) -> None:
        if self.max_range is not None and self.max_range not in RANGES:
            raise CatalogError(f"ranged.max_range: one of {', '.join(RANGES)} or null, got {self.max_range!r}")
        if self.damage is not None and self.damage not in DAMAGE_KINDS:
            raise CatalogError(f"ranged.damage: one of {', '.join(DAMAGE_KINDS)} or null, got {self.damage!r}")
        _opt_int(self.dice, "ranged.dice")
        _opt_int(self.strength, "ranged.strength")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"max_range": self.max_range, "dice": self.dice, "strength": self.strength,
                               "damage": self.damage}
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class Unit:
    key: str
    name: str
    race: str | None = None
    size: str | None = None
    hero: bool | None = None
    unique: bool | None = None
    elite: bool | None = None
    stats: UnitStats = UnitStats()
    keywords: tuple[str, ...] = ()
    traits: tuple[str, ...] = ()
    ranged: RangedAttack | None = None
    text: str = ""
    aliases: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not _KEY_RE.match(self.key):
            raise CatalogError(f"unit key {self.key!r}: use lower-case letters, digits and '-'")
        if self.race is not None and self.race not in RACES:
            raise CatalogError(f"unit {self.key!r}.race: one of {', '.join(RACES)} or null, got {self.race!r}")
        if self.size is not None and self.size not in SIZES:
            raise CatalogError(f"unit {self.key!r}.size: one of {', '.join(SIZES)} or null, got {self.size!r}")

    def has(self, keyword: str) -> bool:
        return keyword in self.keywords

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "key": self.key, "name": self.name, "race": self.race, "size": self.size, "hero": self.hero,
            "unique": self.unique, "elite": self.elite, "stats": self.stats.to_json(),
            "keywords": list(self.keywords), "traits": list(self.traits),
            "ranged": None if self.ranged is None else self.ranged.to_json(),
        }
        if self.text:
            out["text"] = self.text
        if self.aliases:
            out["aliases"] = list(self.aliases)
        out["sources"] = list(self.sources)
        if self.notes:
            out["notes"] = list(self.notes)
        return out


@dataclass(frozen=True)
class RegimentEntry:
    unit: str
    count: int = 1

    def to_json(self) -> dict[str, Any]:
        return {"unit": self.unit, "count": self.count}


@dataclass(frozen=True)
class Regiment:
    """A pregenerated regiment or army (RB p.4, 17): a hero (None for the introductory armies' list form)."""

    key: str
    name: str
    hero: str | None
    units: tuple[RegimentEntry, ...]
    command_cards: tuple[str, ...] | None = None  # None: the text cannot be read reliably
    sources: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "name": self.name, "hero": self.hero, "units": [u.to_json() for u in self.units],
                "command_cards": None if self.command_cards is None else list(self.command_cards),
                "sources": list(self.sources)}


@dataclass(frozen=True)
class Catalog:
    units: tuple[Unit, ...] = ()
    regiments: tuple[Regiment, ...] = ()
    names: tuple[str, ...] = ()  # the catalog names merged into this one, in order
    _index: Mapping[str, Unit] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        index: dict[str, Unit] = {}
        for u in self.units:  # aliases first so that a real key always wins over someone's alias
            for a in u.aliases:
                index.setdefault(slug(a), u)
        for u in self.units:
            index[u.key] = u
        object.__setattr__(self, "_index", index)

    def unit(self, key_or_name: str | None) -> Unit | None:
        """The unit for a scene's `unit` field: its key, an alias or its name in any spelling; None if unknown."""
        if not key_or_name:
            return None
        return self._index.get(key_or_name) or self._index.get(slug(key_or_name))

    def merged(self, other: "Catalog") -> "Catalog":
        """This catalog with `other`'s units added; a unit of `other` with the same key replaces this one's."""
        keys = {u.key for u in other.units}
        rkeys = {r.key for r in other.regiments}
        return Catalog(
            units=tuple(u for u in self.units if u.key not in keys) + other.units,
            regiments=tuple(r for r in self.regiments if r.key not in rkeys) + other.regiments,
            names=self.names + other.names,
        )

    def to_json(self, name: str = "merged") -> dict[str, Any]:
        return {"format": format_string(CATALOG), "name": name, "units": [u.to_json() for u in self.units],
                "regiments": [r.to_json() for r in self.regiments]}


def _parse_unit(doc: Any, i: int) -> Unit:
    p = f"units[{i}]"
    if not isinstance(doc, dict):
        raise CatalogError(f"{p}: expected an object, got {type(doc).__name__}")
    known = {"key", "name", "race", "size", "hero", "unique", "elite", "stats", "keywords", "traits", "ranged",
             "text", "aliases", "sources", "notes"}
    unknown = set(doc) - known
    if unknown:
        raise CatalogError(f"{p}: unknown field(s) {sorted(unknown)} (known: {', '.join(sorted(known))})")
    name = _str(doc.get("name"), f"{p}.name")
    key = doc.get("key") or slug(name)
    key = _str(key, f"{p}.key")
    p = f"units[{i}] ({key})"
    stats_doc = doc.get("stats") or {}
    if not isinstance(stats_doc, dict):
        raise CatalogError(f"{p}.stats: expected an object, got {type(stats_doc).__name__}")
    bad = set(stats_doc) - set(UNIT_STATS)
    if bad:
        raise CatalogError(f"{p}.stats: unknown stat(s) {sorted(bad)} (known: {', '.join(UNIT_STATS)})")
    stats = UnitStats(**{k: _opt_int(v, f"{p}.stats.{k}") for k, v in stats_doc.items()})
    kws = doc.get("keywords") or []
    if not isinstance(kws, list):
        raise CatalogError(f"{p}.keywords: expected a list")
    keywords = tuple(check_keyword(k, f"{p}.keywords[{j}]") for j, k in enumerate(kws))
    ranged = None
    if doc.get("ranged") is not None:
        r = doc["ranged"]
        if not isinstance(r, dict):
            raise CatalogError(f"{p}.ranged: expected an object or null")
        bad = set(r) - {"max_range", "dice", "strength", "damage", "note"}
        if bad:
            raise CatalogError(f"{p}.ranged: unknown field(s) {sorted(bad)}")
        try:
            ranged = RangedAttack(max_range=r.get("max_range"), dice=_opt_int(r.get("dice"), f"{p}.ranged.dice"),
                                  strength=_opt_int(r.get("strength"), f"{p}.ranged.strength"),
                                  damage=r.get("damage"), note=str(r.get("note", "")))
        except CatalogError as exc:
            raise CatalogError(f"{p}.{exc}") from None
    text = doc.get("text", "")
    if not isinstance(text, str):
        raise CatalogError(f"{p}.text: expected a string")
    try:
        return Unit(
            key=key, name=name, race=doc.get("race"), size=doc.get("size"),
            hero=_opt_bool(doc.get("hero"), f"{p}.hero"), unique=_opt_bool(doc.get("unique"), f"{p}.unique"),
            elite=_opt_bool(doc.get("elite"), f"{p}.elite"), stats=stats, keywords=keywords,
            traits=_str_list(doc.get("traits"), f"{p}.traits"), ranged=ranged, text=text,
            aliases=_str_list(doc.get("aliases"), f"{p}.aliases"),
            sources=_str_list(doc.get("sources"), f"{p}.sources"),
            notes=_str_list(doc.get("notes"), f"{p}.notes"),
        )
    except CatalogError as exc:
        raise CatalogError(f"{p}: {exc}") from None


def _parse_regiment(doc: Any, i: int, unit_keys: set[str]) -> Regiment:
    p = f"regiments[{i}]"
    if not isinstance(doc, dict):
        raise CatalogError(f"{p}: expected an object")
    name = _str(doc.get("name"), f"{p}.name")
    key = _str(doc.get("key") or slug(name), f"{p}.key")
    hero = doc.get("hero")
    if hero is not None and hero not in unit_keys:
        raise CatalogError(f"{p}.hero: unknown unit {hero!r}")
    entries = []
    units = doc.get("units")
    if not isinstance(units, list) or not units:
        raise CatalogError(f"{p}.units: expected a non-empty list")
    for j, e in enumerate(units):
        if not isinstance(e, dict) or not isinstance(e.get("unit"), str):
            raise CatalogError(f"{p}.units[{j}]: expected {{\"unit\": KEY, \"count\": N}}")
        if e["unit"] not in unit_keys:
            raise CatalogError(f"{p}.units[{j}].unit: unknown unit {e['unit']!r}")
        count = _opt_int(e.get("count", 1), f"{p}.units[{j}].count")
        if not count:
            raise CatalogError(f"{p}.units[{j}].count: must be >= 1")
        entries.append(RegimentEntry(unit=e["unit"], count=count))
    cards = doc.get("command_cards")
    return Regiment(key=key, name=name, hero=hero, units=tuple(entries),
                    command_cards=None if cards is None else _str_list(cards, f"{p}.command_cards"),
                    sources=_str_list(doc.get("sources"), f"{p}.sources"))


def parse_catalog(doc: Any, what: str = "catalog", base: Catalog | None = None) -> Catalog:
    """Parse and validate one catalog document. Regiments may name units of `base` (catalogs merged before)."""
    check_format(doc, CATALOG, what=what)
    try:
        units_doc = doc.get("units", [])
        if not isinstance(units_doc, list):
            raise CatalogError("units: expected a list")
        units = tuple(_parse_unit(u, i) for i, u in enumerate(units_doc))
        seen: set[str] = set()
        for u in units:
            if u.key in seen:
                raise CatalogError(f"units: duplicate key {u.key!r}")
            seen.add(u.key)
        keys = seen | ({u.key for u in base.units} if base else set())
        regs_doc = doc.get("regiments", [])
        if not isinstance(regs_doc, list):
            raise CatalogError("regiments: expected a list")
        regiments = tuple(_parse_regiment(r, i, keys) for i, r in enumerate(regs_doc))
        name = doc.get("name", what)
        return Catalog(units=units, regiments=regiments, names=(str(name),))
    except CatalogError as exc:
        raise CatalogError(f"{what}: {exc}") from None


def merge_catalogs(docs: Iterable[tuple[str, Any]]) -> Catalog:
    """Parse (what, document) pairs and merge them in order: later files add units or replace same keys.

    A regiment may name a unit of any catalog of the set, whatever the order of the files (units are gathered
    from every file first): two files that use each other's units load the same in any order."""
    docs = list(docs)
    every_unit = Catalog()
    for what, doc in docs:
        units_only = {**doc, "regiments": []} if isinstance(doc, dict) else doc
        every_unit = every_unit.merged(parse_catalog(units_only, what=what))
    out = Catalog()
    for what, doc in docs:
        out = out.merged(parse_catalog(doc, what=what, base=every_unit))
    return out
