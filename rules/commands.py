"""`tablesight report SCENE.json`: the I/O shell around `rules.diskwars.build_report`."""

from __future__ import annotations

import argparse

from tablesight.errors import InputError
from tablesight.formats import dump_json
from tablesight.scene import load_scene


def report(args: argparse.Namespace) -> int:
    from rules.diskwars.report import build_report
    from rules.diskwars.settings import DiskwarsSettings

    scene = load_scene(args.scene)
    tol = getattr(args, "tolerance_mm", None)
    if tol is not None and not (tol >= 0 and tol != float("inf")):
        raise InputError(f"--tolerance-mm: must be a finite number >= 0, got {tol}")
    settings = DiskwarsSettings() if tol is None else DiskwarsSettings(tolerance_mm=tol)
    print(dump_json(build_report(scene, settings).to_json()))
    return 0
