"""`tablesight synth`: render a folder of synthetic frames (or a game-like clip) with ground truth."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tablesight.errors import InputError


def parse_diameters(text: str | None) -> tuple[float, float, float] | None:
    if text is None:
        return None
    try:
        vals = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise InputError(f"--disk-diameters-mm: expected three numbers like 44,64,89, got {text!r}") from None
    if len(vals) != 3 or not all(v > 0 for v in vals) or not vals[0] < vals[1] < vals[2]:
        raise InputError(f"--disk-diameters-mm: expected three growing positive sizes (small,medium,large), "
                         f"got {text!r}")
    if vals[2] > 200:
        raise InputError(f"--disk-diameters-mm: {vals[2]} mm is not a disk size (at most 200 mm)")
    return vals  # type: ignore[return-value]


def synth(args: argparse.Namespace) -> int:
    from vision.synth.writer import write_folder

    if args.seed < 0 or args.seed >= 2 ** 63:
        raise InputError(f"--seed must be a whole number >= 0, got {args.seed}")
    if args.count < 1 or args.count > 10000:
        raise InputError(f"--count must be within 1..10000, got {args.count}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out '{out}': exists and is not a folder")
    diam = parse_diameters(getattr(args, "disk_diameters_mm", None))
    boards = getattr(args, "boards", 12)
    if boards < 0 or boards > 100:
        raise InputError(f"--boards must be within 0..100, got {boards}")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--out '{out}': cannot create it ({exc.strerror})") from None
    if getattr(args, "world", None) is not None and args.video:
        raise InputError("--world renders still frames: leave out --video")
    if getattr(args, "kind", "game") != "game" and not args.video:
        raise InputError("--kind needs --video (it names the kind of clip)")
    if args.video:
        from vision.synth.sequence import write_sequence

        kind = getattr(args, "kind", "game")
        manifest = write_sequence(out, seed=args.seed, tier=args.tier, resolution=args.resolution,
                                  diameters_mm=diam, boards=boards, kind=kind)
        print(f"wrote a {len(manifest['frames'])}-frame {kind} clip ({len(manifest['stable_frames'])} stable) to {out}")
        return 0

    def progress(i, fr):
        print(f"frame {i + 1}/{args.count}: {len(fr.scene.disks)} disks, {fr.render_ms:.0f} ms", file=sys.stderr)

    family = getattr(args, "world", None)
    if family is not None:
        from vision.synth.world import FAMILIES

        if family not in FAMILIES:
            raise InputError(f"--world: unknown family {family!r} (families are ART-BORDER-CLOTH, e.g. "
                             f"paint-thin-felt; see docs/synth.md)")
        if diam is not None:
            raise InputError("--world draws its own disk sizes: leave out --disk-diameters-mm")
    manifest = write_folder(out, seed=args.seed, count=args.count, tier=args.tier, resolution=args.resolution,
                            diameters_mm=diam, boards=boards, progress=progress, family=family)
    print(f"wrote {len(manifest['frames'])} frames, {len(manifest['boards']['images'])} board photos to {out}")
    return 0
