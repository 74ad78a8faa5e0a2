"""The `tablesight` command line: one entry point, one subcommand per job.

Each subcommand's work lives in its package's `commands` module (the I/O shell around pure code) and is imported
only when that subcommand runs, so `tablesight report` never loads OpenCV. User mistakes (InputError) become one
line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Callable, Sequence

# numpy's BLAS would spread the eye's small batched solves over every core, burning the one the camera thread
# and the web server need for no gain; it reads this once, when numpy is first imported (below, lazily).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from tablesight import __version__
from tablesight.errors import InputError

EXIT_BAD_INPUT = 2


def _handler(target: str) -> Callable[[argparse.Namespace], int | None]:
    """Lazily resolve 'package.module:function'."""

    def run(args: argparse.Namespace) -> int | None:
        module_name, func_name = target.split(":")
        return getattr(importlib.import_module(module_name), func_name)(args)

    return run


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tablesight",
        description="A computer-vision table companion for Warhammer: Diskwars. "
        "Run 'tablesight serve' and open the printed address.",
    )
    parser.add_argument("--version", action="version", version=f"tablesight {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("serve", help="the web companion (no source and no camera: the built-in demo table)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--camera", type=int, metavar="N", help="camera index")
    src.add_argument("--video", metavar="FILE", help="a video file")
    src.add_argument("--url", metavar="URL", help="a network stream")
    src.add_argument("--images", metavar="DIR", help="a folder of frames, played in name order")
    src.add_argument("--scene", metavar="FILE", help="a scene JSON file (no camera; the page shows the drawn map)")
    src.add_argument("--demo", nargs="?", const="eye", choices=("eye", "truth"),
                     help="the built-in demo table, a looping synthetic game: 'eye' (the default) renders it and "
                     "detects it through the camera pipeline, with the ground truth to compare; 'truth' plays "
                     "the ground truth itself")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; 0.0.0.0 needs a token)")
    p.add_argument("--port", type=int, default=8650, help="port (default 8650)")
    p.add_argument("--calibration", metavar="table.json", help="table calibration for a camera source")
    p.add_argument("--data-dir", metavar="DIR", help="where the game book and corrections live (default ./gamedata)")
    p.set_defaults(func=_handler("webui.commands:serve"))

    p = sub.add_parser("report", help="print the rules report for one or more scenes")
    p.add_argument("scenes", nargs="+", metavar="SCENE.json",
                   help="scene file(s); with several, --format json prints one report per line (JSON Lines)")
    _add_format(p)
    p.add_argument("--tolerance-mm", type=float, default=None,
                   help="measurement tolerance for borderline calls (default 1 mm)")
    _add_set(p)
    p.set_defaults(func=_handler("rules.commands:report"))

    p = sub.add_parser("shoot", help="what a ranged attack by one disk may do now (tablesight.ranged/1)")
    p.add_argument("scene", metavar="SCENE.json")
    p.add_argument("shooter", metavar="SHOOTER", help="the id of the disk that shoots")
    _add_turn_options(p)
    p.add_argument("--activated", metavar="DISK", action="append", default=[],
                   help="a disk already activated though the scene shows no token (repeatable)")
    p.set_defaults(func=_handler("rules.turn_commands:shoot"))

    p = sub.add_parser("move", help="the consequences of one disk's move between two scenes (tablesight.move/1)")
    p.add_argument("before", metavar="BEFORE.json")
    p.add_argument("after", metavar="AFTER.json")
    _add_turn_options(p)
    p.add_argument("--move-bonus", type=int, default=0, metavar="N",
                   help="Move a command card added to the disk (default 0)")
    p.set_defaults(func=_handler("rules.turn_commands:move"))

    p = sub.add_parser("deploy", help="deployment zones and deployment/reinforcement checks (tablesight.deployment/1)")
    p.add_argument("scene", metavar="SCENE.json")
    p.add_argument("--edge", metavar="PLAYER=EDGE", action="append", default=[],
                   help="a player's battlefield edge (top, bottom, left, right), repeatable: zones run from it "
                        "to medium range (the scene's deployment_zones win when given)")
    p.add_argument("--reinforcement", metavar="DISK", action="append", default=[],
                   help="a disk that entered as a reinforcement (repeatable)")
    _add_turn_options(p, catalog=False)
    p.set_defaults(func=_handler("rules.turn_commands:deploy"))

    p = sub.add_parser("melee", help="resolve the melee phase of a scene (tablesight.melee/1)")
    p.add_argument("scene", metavar="SCENE.json")
    _add_format(p)
    p.add_argument("--catalog", metavar="FILE", action="append", default=[],
                   help="extra unit catalog file(s) (repeatable)")
    p.add_argument("--default-target", choices=["likely_wound", "first_by_id"], default="likely_wound",
                   help="whom a disk strikes without a melee_target (default: the enemy closest to a wound)")
    p.add_argument("--keep-declared-targets", action="store_true",
                   help="a strike whose target fell earlier in the engagement is lost (default: strike another)")
    _add_set(p)
    p.set_defaults(func=_handler("rules.melee_commands:melee"))

    p = sub.add_parser("markers", help="the marker layout (--json) or printable sheets (-o FILE.pdf)")
    p.add_argument("--json", action="store_true", help="print the layout as JSON")
    p.add_argument("-o", "--output", metavar="FILE.pdf", help="write true-to-scale marker sheets")
    p.add_argument("--paper", choices=["a4", "letter"], default="a4", help="paper size for -o (default a4)")
    p.add_argument("--battlefield-mm", metavar="W[xH]", help="battlefield size the markers surround (default 900)")
    p.set_defaults(func=_handler("calibration.commands:markers"))

    p = sub.add_parser("calibrate-camera", help="lens intrinsics from chessboard/ChArUco photos")
    p.add_argument("images", nargs="+", metavar="IMAGE")
    p.add_argument("-o", "--output", required=True, metavar="camera.json")
    p.add_argument("--board", default="chessboard:9x6",
                   help="board kind and inner corners, e.g. chessboard:9x6 (default) or charuco:7x5")
    p.add_argument("--square-mm", type=float, default=25.0, help="board square size in mm (default 25)")
    p.set_defaults(func=_handler("calibration.commands:calibrate_camera"))

    p = sub.add_parser("calibrate", help="table plane calibration from a frame showing the markers (and ruler)")
    p.add_argument("image", metavar="IMAGE")
    p.add_argument("--intrinsics", metavar="camera.json")
    p.add_argument("-o", "--output", required=True, metavar="table.json")
    p.add_argument("--battlefield-mm", metavar="W[xH]", help="battlefield size the markers surround (default 900)")
    p.add_argument("--px-per-mm", type=float, default=1.0, help="rectified view resolution (default 1 px/mm)")
    p.add_argument("--measure-disks", metavar="IMAGE",
                   help="also measure the three disk diameters from a frame of disks lying apart on the table")
    p.set_defaults(func=_handler("calibration.commands:calibrate"))

    p = sub.add_parser("detect", help="one scene JSON per image (JSON Lines when several)")
    p.add_argument("images", nargs="+", metavar="IMAGE")
    p.add_argument("--calibration", required=True, metavar="table.json")
    p.add_argument("--disk-diameters-mm", metavar="S,M,L",
                   help="disk diameters, e.g. 44,64,89; equal sizes, or one number (39), for chips all of one size")
    p.add_argument("--timing", action="store_true", help="per-frame processing milliseconds on stderr as JSON")
    p.set_defaults(func=_handler("vision.commands:detect"))

    p = sub.add_parser("track", help="stable scenes over time from a video, as JSON Lines, one per change")
    p.add_argument("video", metavar="VIDEO")
    p.add_argument("--calibration", required=True, metavar="table.json")
    p.add_argument("--disk-diameters-mm", metavar="S,M,L",
                   help="disk diameters, e.g. 44,64,89; equal sizes, or one number (39), for chips all of one size")
    p.set_defaults(func=_handler("vision.commands:track"))

    p = sub.add_parser("synth", help="render synthetic table frames with ground truth")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--tier", choices=["easy", "standard", "hard", "piled"], default="standard")
    p.add_argument("--video", action="store_true", help="render a game-like sequence instead of still frames")
    p.add_argument("--kind", choices=["game", "cover"], default="game",
                   help="with --video: a game-like clip, or a cover clip (disks carried onto others, default game)")
    p.add_argument("--resolution", choices=["1080p", "720p"], default="1080p")
    p.add_argument("--world", metavar="FAMILY",
                   help="a family of the randomized world (ART-BORDER-CLOTH, e.g. paint-thin-felt) instead of "
                        "the classic look (see docs/synth.md)")
    p.add_argument("--disk-diameters-mm", metavar="S,M,L", help="disk diameters to draw (default 44,64,89)")
    p.add_argument("--boards", type=int, default=12, help="chessboard photos to write in DIR/boards (default 12)")
    p.set_defaults(func=_handler("vision.synth.commands:synth"))

    return parser


def _add_set(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", metavar="NAME=VALUE", action="append", default=[],
                   help="a rules reading or tolerance, e.g. deviation_nearest=centre (repeatable; docs/rules.md)")


def _add_format(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=["json", "text"], default="json",
                   help="json (default, for pipes and programs) or text (a readable summary)")


def _add_turn_options(p: argparse.ArgumentParser, catalog: bool = True) -> None:
    if catalog:
        p.add_argument("--catalog", metavar="FILE", action="append", default=[],
                       help="extra unit catalog file(s) (repeatable)")
    p.add_argument("--tolerance-mm", type=float, default=None,
                   help="measurement tolerance for borderline calls (default 1 mm)")
    _add_set(p)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        rc = args.func(args)
    except InputError as exc:
        print(f"tablesight {args.command}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return int(rc or 0)
