"""`tablesight report SCENE.json...`: the I/O shell around `rules.diskwars.build_report`."""

from __future__ import annotations

import argparse
import json

from tablesight.formats import dump_json
from tablesight.scene import load_scene


def report(args: argparse.Namespace) -> int:
    """One scene: the report as indented JSON (or text). Several: every file is read and checked before anything
    is printed; JSON Lines, one compact report per line in the order given, each with `scene_file` added; text
    sections headed by the file name."""
    from rules.diskwars.report import build_report
    from rules.text import report_text
    from rules.turn_commands import settings_from_args

    scenes = [(path, load_scene(path)) for path in args.scenes]
    settings = settings_from_args(args)
    several = len(scenes) > 1
    docs = [(path, build_report(scene, settings).to_json()) for path, scene in scenes]
    if args.format == "text":
        print("\n\n".join(report_text(doc, title=path if several else None) for path, doc in docs))
    elif several:
        for path, doc in docs:
            print(json.dumps({**doc, "scene_file": str(path)}, ensure_ascii=False, separators=(",", ":")))
    else:
        print(dump_json(docs[0][1]))
    return 0
