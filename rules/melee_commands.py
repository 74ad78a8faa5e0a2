"""`tablesight melee SCENE.json [--catalog FILE]...`: the I/O shell around `rules.diskwars.melee.resolve_melee`.

Also the one place that reads catalog files (`load_catalogs`), for the command line and the web page alike.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Iterable

from tablesight.formats import dump_json, load_json_file

CATALOG_DIR = Path(__file__).resolve().parent / "diskwars" / "catalog"


def builtin_catalog_paths() -> list[Path]:
    """The shipped catalog files, in name order."""
    return sorted(CATALOG_DIR.glob("*.json"))


def load_catalogs(extra_paths: Iterable[str | Path] = (), include_builtin: bool = True):
    """The shipped catalog merged with the user's files (in the order given; later units replace same keys)."""
    from rules.diskwars.catalog import merge_catalogs

    paths = (builtin_catalog_paths() if include_builtin else []) + [Path(p) for p in extra_paths]
    return merge_catalogs((f"catalog '{p}'", load_json_file(p, what="catalog")) for p in paths)


def melee_json(scene, catalog=None, settings=None, report=None, rules_settings=None) -> dict:
    """Scene -> rules report (unless given) -> melee resolution, as the `tablesight.melee/1` document, plus
    `deferred_pins`: enemy pins that exist only because a casualty was removed — fights of the next melee phase
    (RB p.20) — and `rules_settings`, the readings the report was built with."""
    from rules.diskwars.melee import resolve_melee
    from rules.diskwars.report import build_report
    from rules.diskwars.settings import DiskwarsSettings

    if rules_settings is None and report is not None and report.settings:
        rules_settings = DiskwarsSettings(**report.settings)
    report = report if report is not None else build_report(scene, rules_settings)
    result = resolve_melee(scene, report, catalog=catalog, settings=settings)
    doc = result.to_json()
    doc["rules_settings"] = dict(report.settings)
    before = {(p.pinner, p.pinned) for p in report.pins if p.enemy}
    after = build_report(result.scene_after, rules_settings)
    doc["deferred_pins"] = [{"pinner": p.pinner, "pinned": p.pinned} for p in after.pins
                            if p.enemy and (p.pinner, p.pinned) not in before]
    return doc


def melee(args: argparse.Namespace) -> int:
    from tablesight.scene import load_scene

    from rules.diskwars.melee import MeleeSettings

    from rules.diskwars.report import build_report
    from rules.turn_commands import settings_from_args

    scene = load_scene(args.scene)
    catalog = load_catalogs(getattr(args, "catalog", []) or [])
    rules_settings, melee_sets = settings_from_args(args, with_melee=True)
    melee_sets.setdefault("default_target", getattr(args, "default_target", "likely_wound"))
    melee_sets.setdefault("retarget_removed_target", not getattr(args, "keep_declared_targets", False))
    settings = MeleeSettings(**melee_sets)
    report = build_report(scene, rules_settings)
    doc = melee_json(scene, catalog=catalog, settings=settings, report=report)
    if getattr(args, "format", "json") == "text":
        from rules.text import melee_text

        print(melee_text(doc))
    else:
        print(dump_json(doc))
    return 0
