"""A disk's unit and keywords, for the activation rules (shooting, moving): the disk's own fields first, the
unit catalog's second. Pure; an unknown unit is an input error here (a shot or a move cannot be judged for a
unit the players named wrongly), unlike the melee resolution, which reports the gap and goes on."""

from __future__ import annotations

from tablesight.errors import InputError
from tablesight.scene import Disk

from rules.diskwars.catalog import Catalog, Unit, keyword_parts


def unit_of(disk: Disk, catalog: Catalog | None, what: str) -> Unit | None:
    """The catalog unit of a disk; None when the disk names no unit or no catalog is given. A unit the catalog
    does not know raises InputError naming it."""
    if disk.unit is None or catalog is None:
        return None
    unit = catalog.unit(disk.unit)
    if unit is None:
        raise InputError(f"{what}: unit {disk.unit!r} of disk {disk.id!r} is not in the catalog "
                         f"(add it with --catalog FILE, or correct the disk's unit)")
    return unit


def keywords_of(disk: Disk, unit: Unit | None) -> frozenset[str]:
    return frozenset(disk.keywords) | frozenset(unit.keywords if unit is not None else ())


def keyword_arg(keywords: frozenset[str] | set[str], name: str) -> tuple[bool, str | None]:
    """(present, argument) of keyword `name` ('impact:2' -> (True, '2')); the first one by sort order."""
    for kw in sorted(keywords):
        n, arg = keyword_parts(kw)
        if n == name:
            return True, arg
    return False, None


def knows_keywords(disk: Disk, unit: Unit | None) -> bool:
    """Whether the absence of a keyword means something: the unit is known, or the disk lists its keywords."""
    return unit is not None or bool(disk.keywords)
