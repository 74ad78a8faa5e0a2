"""`tablesight report SCENE.json`: the I/O shell around `rules.diskwars.build_report`."""

from __future__ import annotations

import argparse

from tablesight.formats import dump_json
from tablesight.scene import load_scene


def report(args: argparse.Namespace) -> int:
    from rules.diskwars.report import build_report
    from rules.turn_commands import settings_from_args

    scene = load_scene(args.scene)
    settings = settings_from_args(args)
    print(dump_json(build_report(scene, settings).to_json()))
    return 0
