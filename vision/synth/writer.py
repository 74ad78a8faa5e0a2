"""Write a synthetic folder: frames, ground-truth scenes, camera truth, board photos and the manifest.

Layout (see docs/synth.md):
    DIR/frame_0000.jpg            what the camera recorded (the JPEG the ground truth was measured on)
    DIR/frame_0000.scene.json     ground truth `tablesight.scene/1` (+ visible_fraction, marker corners in px)
    DIR/camera_truth.json         true lens and pose (`tablesight.camera-truth/1`, with a `tablesight.camera/1`)
    DIR/boards/board_00.png ...   chessboard photos by the same camera; DIR/boards/truth.json their true corners
    DIR/manifest.json             `tablesight.synth-manifest/1`: tier, seed, resolution, diameters, frames
"""

from __future__ import annotations

import time
from pathlib import Path

import cv2
import numpy as np

from tablesight.formats import dump_json
from tablesight.scene import SIZE_CLASSES
from vision.synth.boards import BOARD_FORMAT, ChessboardSpec, render_boards
from vision.synth.camera import SynthCamera, table_camera
from vision.synth.render import render_frame
from vision.synth.scenes import random_table
from vision.synth.tiers import tier_settings

MANIFEST_FORMAT = "tablesight.synth-manifest/1"


def folder_camera(seed: int, tier: str, resolution: str) -> SynthCamera:
    return table_camera(seed, tier_settings(tier).camera, resolution)


def camera_truth_doc(camera: SynthCamera) -> dict:
    """camera_truth.json: the camera's truth plus where the (fixed) corner markers appear in its frames."""
    from calibration.layout import default_layout

    doc = camera.to_json()
    doc["corner_markers_px"] = {str(m.id): np.round(camera.project(np.array(m.corners_mm)), 3).tolist()
                                for m in default_layout().corners}
    return doc


def _write_bytes(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def write_boards(out: Path, camera: SynthCamera, background: np.ndarray, seed: int, count: int = 12,
                 spec: ChessboardSpec | None = None) -> list[str]:
    spec = spec or ChessboardSpec()
    bdir = out / "boards"
    bdir.mkdir(parents=True, exist_ok=True)
    names, truth = [], []
    for k, (img, corners) in enumerate(render_boards(camera, background, count=count, seed=seed, spec=spec)):
        name = f"board_{k:02d}.png"
        cv2.imwrite(str(bdir / name), img)
        names.append(name)
        truth.append({"image": name, "corners_px": np.round(corners, 3).tolist()})
    doc = {"format": BOARD_FORMAT, "board": "chessboard", "inner_corners": [spec.inner_cols, spec.inner_rows],
           "square_mm": spec.square_mm, "images": truth}
    (bdir / "truth.json").write_text(dump_json(doc) + "\n", encoding="utf-8")
    return names


def write_folder(out: str | Path, seed: int, count: int, tier: str = "standard", resolution: str = "1080p",
                 diameters_mm: tuple[float, float, float] | None = None, boards: int = 12,
                 progress=None, family: str | None = None) -> dict:
    """Render `count` frames of seed `seed` into `out`; returns the manifest. `family`: a family of the randomized
    world (`vision.synth.world`) instead of the classic look of `tier` (its camera and disk sizes are the world's;
    1080p only)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if family is not None:
        from vision.synth.world import world_table

        camera = world_table(seed, family)[1]
        diameters_mm = world_table(seed, family)[0].diameters_mm
        tier, resolution = family, "1080p"
    else:
        camera = folder_camera(seed, tier, resolution)
    (out / "camera_truth.json").write_text(dump_json(camera_truth_doc(camera)) + "\n", encoding="utf-8")
    frames = []
    first_image = None
    t0 = time.perf_counter()
    for i in range(count):
        if family is not None:
            setup = world_table(seed, family, frame=i)[0]
        else:
            setup = random_table(seed, tier, frame=i, diameters_mm=diameters_mm)
        fr = render_frame(setup, camera)
        name = f"frame_{i:04d}"
        _write_bytes(out / f"{name}.jpg", fr.jpeg)
        (out / f"{name}.scene.json").write_text(dump_json(fr.scene.to_json()) + "\n", encoding="utf-8")
        frames.append({"image": f"{name}.jpg", "scene": f"{name}.scene.json", "render_ms": round(fr.render_ms, 1),
                       "render_cpu_ms": round(fr.render_cpu_ms, 1)})
        if first_image is None:
            first_image = fr.image
        if progress:
            progress(i, fr)
    board_names = write_boards(out, camera, first_image, seed, count=boards) if boards and first_image is not None \
        else []
    diam = diameters_mm or setup_default_diameters()
    manifest = {
        "format": MANIFEST_FORMAT,
        "seed": int(seed), "tier": tier, "resolution": resolution, "image_size": list(camera.image_size),
        "disk_diameters_mm": dict(zip(SIZE_CLASSES, [float(v) for v in diam])),
        "camera_truth": "camera_truth.json",
        "boards": {"kind": "chessboard", "inner_corners": [9, 6], "square_mm": 25.0,
                   "images": [f"boards/{n}" for n in board_names]},
        "frames": frames,
        "render_seconds": round(time.perf_counter() - t0, 2),
    }
    (out / "manifest.json").write_text(dump_json(manifest) + "\n", encoding="utf-8")
    return manifest


def setup_default_diameters() -> tuple[float, float, float]:
    from tablesight.scene import DEFAULT_DISK_DIAMETERS_MM

    return tuple(DEFAULT_DISK_DIAMETERS_MM[k] for k in SIZE_CLASSES)

