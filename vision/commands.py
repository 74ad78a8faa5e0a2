"""`tablesight detect` and `tablesight track`: the I/O shell around the vision pipeline."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from tablesight.errors import InputError
from tablesight.formats import dump_json


def _load_calibration(path: str | None) -> Any:
    if not path:
        raise InputError("--calibration: a table calibration file is required (make one with 'tablesight calibrate')")
    from calibration.table import TableCalibration

    p = Path(path)
    if not p.is_file():
        raise InputError(f"calibration '{p}': no such file")
    return TableCalibration.load(p)


def _sizes(args: argparse.Namespace, calibration: Any):
    from vision.detect import sizes_for
    from vision.sizes import DiskSizes

    text = getattr(args, "disk_diameters_mm", None)
    return DiskSizes.parse(text) if text else sizes_for(calibration)


def _read_image(path: Path):
    import cv2

    if not path.exists():
        raise InputError(f"image '{path}': no such file")
    if path.is_dir():
        raise InputError(f"image '{path}': is a folder, expected an image file")
    img = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if img is None or img.size == 0:
        raise InputError(f"image '{path}': cannot decode it (not an image, or corrupt)")
    return img


def detect(args: argparse.Namespace) -> int:
    """One scene JSON per image (JSON Lines when several); `--timing`: per-frame ms on stderr as JSON."""
    from vision.detect import detect_frame

    calibration = _load_calibration(args.calibration)
    sizes = _sizes(args, calibration)
    paths = [Path(p) for p in args.images]
    for p in paths:  # refuse missing files before any output
        if not p.exists():
            raise InputError(f"image '{p}': no such file")
    # Start-up (the rectification map, first-call costs) is not part of the per-frame time.
    maps = getattr(calibration, "rectify_maps", None)
    if maps is not None:
        maps()
    if getattr(args, "timing", False):
        import numpy as np

        from vision.detect import detect_rectified
        from vision.runtime import FIXED_AFTER

        w, h = getattr(calibration, "rectified_size", (980, 980))
        blank = np.full((h, w, 3), 90, np.uint8)
        # a size asked for this often gets a session of its own (`vision.runtime.FIXED_AFTER`), and the runtime
        # plans a session's memory over its first two runs: the network at full pace from then on
        for _ in range(FIXED_AFTER + 2):
            detect_rectified(blank, calibration, sizes)
        # a blank table asks no judge: their files are read and laid out for the CPU on a first question
        # (about 25 ms, once per process)
        from vision.lonejudge import judge_lone
        from vision.nestjudge import judge_nests
        from vision.pairjudge import Circle, judge_pairs

        judge_pairs(blank, [(Circle(200.0, 200.0, 22.0), Circle(230.0, 200.0, 32.0))])
        judge_nests(blank, [(Circle(200.0, 200.0, 22.0), Circle(205.0, 200.0, 44.5))])
        judge_lone(blank, [Circle(200.0, 200.0, 22.0)])
    several = len(paths) > 1
    for p in paths:
        img = _read_image(p)
        try:
            calibration.check_frame(img)
        except InputError as exc:
            raise InputError(f"image '{p}': {exc}") from None
        t0 = time.perf_counter()
        scene = detect_frame(img, calibration, sizes)
        ms = (time.perf_counter() - t0) * 1000.0
        doc = scene.to_json()
        if several:
            print(json.dumps(doc, ensure_ascii=False, separators=(",", ":")), flush=True)
        else:
            print(dump_json(doc), flush=True)
        if getattr(args, "timing", False):
            print(json.dumps({"image": str(p), "ms": round(ms, 2), "disks": len(scene.disks)}), file=sys.stderr,
                  flush=True)
    return 0


def _scene_key(scene) -> tuple:
    """What makes two stable scenes the same for the output (positions to the millimetre)."""
    return tuple(sorted((d.id, round(d.x_mm), round(d.y_mm), d.z, d.player, d.unit) for d in scene.disks))


def track(args: argparse.Namespace) -> int:
    """A video (or a folder of frames) -> stable scenes as JSON Lines, one per change."""
    import cv2

    from vision.live import LiveTable, PipelineConfig
    from vision.sources import ImageFolderSource, VideoSource, open_video_checked

    calibration = _load_calibration(args.calibration)
    sizes = _sizes(args, calibration)
    src_path = Path(args.video)
    if not src_path.exists():
        raise InputError(f"video '{src_path}': no such file")
    fps = 30.0
    if src_path.is_dir():
        source = ImageFolderSource(src_path, every_frame=True)
        fps = float(getattr(args, "fps", None) or 10.0)
    else:
        open_video_checked(src_path)
        cap = cv2.VideoCapture(str(src_path))
        f = cap.get(cv2.CAP_PROP_FPS)
        cap.release()
        fps = float(getattr(args, "fps", None) or (f if f and 1 <= f <= 240 else 30.0))
        source = VideoSource(src_path, realtime=False, every_frame=True)
    table = LiveTable(source, calibration, PipelineConfig(diameters_mm=sizes))
    maps = getattr(calibration, "rectify_maps", None)
    if maps is not None:
        maps()
    last_key = None
    n = 0
    refused = 0
    source.start()
    try:
        for frame in source.frames(timeout_s=30.0):
            if n == 0:
                try:
                    calibration.check_frame(frame.image)
                except InputError as exc:
                    raise InputError(f"video '{src_path}': {exc}") from None
            t = n / fps
            before = table._bad_frames
            committed = table.process(frame.image, now=t)
            refused += table._bad_frames - before
            if committed:
                scene = table.state().scene
                key = _scene_key(scene)
                if key != last_key:
                    doc = scene.to_json()
                    doc["frame"] = frame.index
                    doc["time_s"] = round(t, 3)
                    print(json.dumps(doc, ensure_ascii=False, separators=(",", ":")), flush=True)
                    last_key = key
            n += 1
    finally:
        source.stop()
    st = source.status()
    if n == 0:
        raise InputError(f"video '{src_path}': no frames could be read ({st.last_drop_reason or st.message})")
    if refused or st.dropped:
        print(f"tablesight track: {refused + st.dropped} frame(s) skipped"
              f"{' (last: ' + st.last_drop_reason + ')' if st.last_drop_reason else ''}", file=sys.stderr)
    return 0
