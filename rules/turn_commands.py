"""`tablesight shoot`, `tablesight move` and `tablesight deploy`: the I/O shells around the pure activation rules
(`rules.diskwars.shooting`, `rules.diskwars.movement`, `rules.diskwars.deployment`). Also the one place that
turns the command line's `--tolerance-mm` and `--set NAME=VALUE` into settings objects for every rules command."""

from __future__ import annotations

import argparse
from typing import Any

from tablesight.errors import InputError
from tablesight.formats import dump_json
from tablesight.scene import load_scene


def settings_from_args(args: argparse.Namespace, with_melee: bool = False) -> Any:
    """DiskwarsSettings (and MeleeSettings when `with_melee`) from `--tolerance-mm` and `--set NAME=VALUE`."""
    from rules.diskwars.settings import DiskwarsSettings, parse_assignments

    groups: list[type] = [DiskwarsSettings]
    if with_melee:
        from rules.diskwars.melee import MeleeSettings

        groups.append(MeleeSettings)
    sets = parse_assignments(list(getattr(args, "set", None) or []), *groups)
    tol = getattr(args, "tolerance_mm", None)
    if tol is not None:
        if not (tol >= 0 and tol != float("inf")):
            raise InputError(f"--tolerance-mm: must be a finite number >= 0, got {tol}")
        sets[0]["tolerance_mm"] = tol
    rules = DiskwarsSettings(**sets[0])
    if not with_melee:
        return rules
    return rules, sets[1]


def _catalog(args: argparse.Namespace):
    from rules.melee_commands import load_catalogs

    return load_catalogs(getattr(args, "catalog", []) or [])


def shoot(args: argparse.Namespace) -> int:
    from rules.diskwars.shooting import ranged_attack

    scene = load_scene(args.scene)
    settings = settings_from_args(args)
    result = ranged_attack(scene, args.shooter, catalog=_catalog(args), settings=settings,
                           activated=getattr(args, "activated", None) or ())
    print(dump_json(result.to_json()))
    return 0


def move(args: argparse.Namespace) -> int:
    from rules.diskwars.movement import move_consequences

    before = load_scene(args.before)
    after = load_scene(args.after)
    settings = settings_from_args(args)
    result = move_consequences(before, after, catalog=_catalog(args), settings=settings,
                               move_bonus=getattr(args, "move_bonus", 0) or 0)
    print(dump_json(result.to_json()))
    return 0


def deploy(args: argparse.Namespace) -> int:
    from rules.diskwars.deployment import check_deployment, parse_edges

    scene = load_scene(args.scene)
    settings = settings_from_args(args)
    edges = parse_edges(getattr(args, "edge", None) or [])
    result = check_deployment(scene, edges=edges, reinforcements=getattr(args, "reinforcement", None) or (),
                              settings=settings)
    print(dump_json(result.to_json()))
    return 0
