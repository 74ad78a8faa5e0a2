"""The learned eye's first step: per pixel of the rectified frame, is a disk's top face seen there, and does a
disk's own outline run there, and how high that disk lies.

A small convolutional network (`vision/models/facemap.onnx`, trained by `python -m vision.facemap_training` on
the randomized synthetic world, never on held-out families) reads the rectified frame at 1 px/mm and gives three
maps at half that resolution:

- `face`: a disk's top face is seen here;
- `rim`: a disk's own outline runs here. Where two disks overlap, only the upper disk's outline is seen: the
  lower one's is hidden under it. Printed circles inside a disk's art are not outlines.
- `height`: where a face is seen, how high in its pile that disk lies (0: on the table, 0.5: on one disk, 1: on
  two or more). Of two overlapping disks the upper one lies higher: a second, independent cue to the stacking
  order, read from the whole look of the pile (shadows, side walls, which outlines run where). Meaningless off faces.

Everything after this (circles of the calibrated radii, their sub-pixel centres, which lies on which) is geometry
on these maps, so it does not depend on how the disks, the cloth or the light look. Inference runs on ONNX Runtime
(faster than OpenCV's dnn module on this network: `benchmarks/bench_vision.py`); the file is read once per process.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from tablesight.errors import InputError
from vision.cpu_layout import input_offset
from vision.runtime import session

MODEL_PATH = Path(__file__).resolve().parent / "models" / "facemap.onnx"
STRIDE = 2          # output px per rectified px
# The disk diameters the network learned at its 1 px/mm (the randomized world's, `vision.synth.world`): the eye shows
# it disks outside this range at a scale that brings them in (`vision.detect.network_px_per_mm`).
TRAINED_DIAMETERS_MM = (28.0, 110.0)
_ALIGN = 16         # the network's total stride: inputs are padded to a multiple of it


@dataclass(frozen=True, eq=False)
class FaceMaps:
    """The three maps of one rectified image (float32, 0..1, `STRIDE` times smaller than the image).

    Map pixel (u, v) covers rectified pixels [u*STRIDE, (u+1)*STRIDE): its centre is at rectified
    ((u + 0.5) * STRIDE - 0.5, ...). `to_map` / `to_rect` convert coordinates.
    """

    face: np.ndarray
    rim: np.ndarray
    height: np.ndarray

    def __post_init__(self) -> None:
        if not self.face.shape == self.rim.shape == self.height.shape or self.face.ndim != 2:
            raise ValueError("face, rim and height must be 2-D maps of one shape")

    @property
    def shape(self) -> tuple[int, int]:
        return self.face.shape  # type: ignore[return-value]

    @staticmethod
    def to_map(xy: np.ndarray) -> np.ndarray:
        return (np.asarray(xy, np.float64) + 0.5) / STRIDE - 0.5

    @staticmethod
    def to_rect(uv: np.ndarray) -> np.ndarray:
        return (np.asarray(uv, np.float64) + 0.5) * STRIDE - 0.5


MAP_VIEWS = (1, 2, 4)  # how many mirror images of the frame the network may read (`face_maps`)


def _check_maps(out: np.ndarray) -> None:
    if out.ndim != 4 or out.shape[1] != 3:
        raise InputError(f"the eye's model file gives {out.shape[1] if out.ndim == 4 else '?'} maps, not the 3 "
                         "(face, rim, height) this version reads: retrain it with 'python -m vision.facemap_training'")


def face_maps(rect: np.ndarray, model_path: Path | str | None = None, views: int = 1) -> FaceMaps:
    """The face, rim and height maps of a rectified BGR image (1 px/mm).

    `views` 2 or 4: the network also reads the image mirrored left-right (and upside down, and both), each view's
    maps mirrored back and all averaged (test-time augmentation). It learned every crop in its quarter turns and
    mirror images, so the views agree closely; with the shipped network the mean found no more disks on the tuning
    frames and made up more (`benchmarks/results/vision.md`), so the eye reads one view. Each view costs one more
    run of the network."""
    if views not in MAP_VIEWS:
        raise ValueError(f"views must be one of {MAP_VIEWS}, got {views!r}")
    if rect.ndim != 3 or rect.shape[2] != 3 or rect.dtype != np.uint8:
        raise InputError(f"face_maps: expected a BGR uint8 image, got {rect.dtype} {rect.shape}")
    h, w = rect.shape[:2]
    ph, pw = -(-h // _ALIGN) * _ALIGN, -(-w // _ALIGN) * _ALIGN
    sess = session(Path(model_path) if model_path is not None else MODEL_PATH, "model", "vision.facemap_training",
                   (1, 3, ph, pw))
    offset = input_offset(sess.get_modelmeta().custom_metadata_map)    # vision.cpu_layout
    # (1, 3, H, W), BGR as is, 0..255 less the offset, padded to whole strides by mirroring the last rows and columns
    if ph - h > h or pw - w > w:    # smaller than its padding: mirrored as often as it takes
        blob = np.ascontiguousarray(cv2.copyMakeBorder(rect, 0, ph - h, 0, pw - w, cv2.BORDER_REFLECT)
                                    .transpose(2, 0, 1)[None], np.float32) - np.float32(offset)
    else:                           # in one pass: the image, then its last rows and columns mirrored
        blob = np.empty((1, 3, ph, pw), np.float32)
        for k, plane in enumerate(cv2.split(rect)):    # plane by plane: faster than a strided transpose
            np.subtract(plane, np.float32(offset), out=blob[0, k, :h, :w], casting="unsafe")
        blob[0, :, h:, :w] = blob[0, :, h - 1:2 * h - ph - 1 if 2 * h > ph else None:-1, :w]
        blob[0, :, :, w:] = blob[0, :, :, w - 1:2 * w - pw - 1 if 2 * w > pw else None:-1]
    name = sess.get_inputs()[0].name
    out = sess.run(None, {name: blob})[0]
    _check_maps(out)
    # the padding is mirrored with the image, so each map pixel covers the same STRIDE x STRIDE pixels in every view
    for flips in ((3,), (2,), (2, 3))[:views - 1]:
        out = out + np.flip(sess.run(None, {name: np.ascontiguousarray(np.flip(blob, flips))})[0], flips)
    if views > 1:
        out = out / np.float32(views)
    h2, w2 = h // STRIDE, w // STRIDE
    return FaceMaps(face=np.ascontiguousarray(out[0, 0, :h2, :w2]), rim=np.ascontiguousarray(out[0, 1, :h2, :w2]),
                    height=np.ascontiguousarray(out[0, 2, :h2, :w2]))


def face_maps_batch(images: np.ndarray, model_path: Path | str | None = None) -> np.ndarray:
    """The face, rim and height maps, (N, 3, H / STRIDE, W / STRIDE) float32, of N BGR uint8 images of one size
    (N, H, W, 3), H and W whole multiples of the network's total stride: one run of the network for all of them
    (`vision.isolate` reads many small windows)."""
    if images.ndim != 4 or images.shape[3] != 3 or images.dtype != np.uint8:
        raise InputError(f"face_maps_batch: expected (N, H, W, 3) BGR uint8 images, got {images.dtype} "
                         f"{images.shape}")
    n, h, w = images.shape[:3]
    if h % _ALIGN or w % _ALIGN:
        raise ValueError(f"face_maps_batch: {h} x {w} is not a whole number of the network's strides ({_ALIGN})")
    if n == 0:
        return np.zeros((0, 3, h // STRIDE, w // STRIDE), np.float32)
    # the session that takes any shape: a batch's size changes from frame to frame (no session fixed to each)
    sess = session(Path(model_path) if model_path is not None else MODEL_PATH, "model", "vision.facemap_training")
    blob = images.transpose(0, 3, 1, 2).astype(np.float32)
    blob -= np.float32(input_offset(sess.get_modelmeta().custom_metadata_map))
    out = sess.run(None, {sess.get_inputs()[0].name: blob})[0]
    _check_maps(out)
    return out


def sample(img: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Bilinear samples of a float32 map at (x, y) of any shape (0 outside)."""
    shape = np.shape(x)
    mx = np.ascontiguousarray(np.asarray(x, np.float32).reshape(1, -1))
    my = np.ascontiguousarray(np.asarray(y, np.float32).reshape(1, -1))
    out = np.empty(mx.shape, np.float32)
    # cv2.remap wants at most 32767 px per dimension: chunk long rows, each written in place (a map of another
    # type than float32 comes back in its own)
    for s in range(0, mx.shape[1], 32000):
        part = out[:, s:s + 32000]
        got = cv2.remap(img, mx[:, s:s + 32000], my[:, s:s + 32000], cv2.INTER_LINEAR, dst=part,
                        borderMode=cv2.BORDER_CONSTANT, borderValue=0)
        if got is not part:
            part[...] = got
    return out.reshape(shape)
