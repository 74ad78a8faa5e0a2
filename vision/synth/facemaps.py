"""Ground truth for the learned eye: per rectified pixel, is a disk's top face seen there, and does a disk's own
outline run there.

The renderer's label image says which disk's top face each camera pixel shows (`RenderedFrame.label`). Mapped into
the rectified frame with the exact calibration of the camera truth, it gives the two maps `vision.facemap` learns:

- `face`: the pixel shows the top face of some disk (counters lying on a disk count as its face);
- `rim`: the pixel lies on a visible stretch of a disk's own outline. Where two disks overlap, the boundary
  between them is the outline of the UPPER disk only: the lower disk's outline is absent there. That is the
  occlusion cue the stacking order is read from, and it holds whatever the disks' art looks like. A boundary
  with a hand is no outline (the hand hides it).
- `height`: where a face is seen, how high in its pile that disk lies (its `z`: 0 on the table, 1 on one disk,
  2 or more on two; as 0, 0.5, 1). Of two overlapping disks the upper one always lies higher, so this orders a
  pair from the faces themselves; it is undefined (0) where no face is seen, and the network is taught it only
  on faces.

All three are returned at the facemap's output scale (half the rectified resolution), as area fractions in 0..1.
Beside the maps, each sample names where its disks lying on other disks' faces are (`FaceTruth.nested`): a
small disk lying wholly on a larger one is the eye's commonest miss, and the trainer can centre crops there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from vision.synth.camera import SynthCamera
from vision.synth.render import HAND_LABEL, RenderedFrame
from vision.synth.scenes import TableSetup
from vision.synth.truth import truth_calibration

OUTPUT_STRIDE = 2  # the facemap's output pixel is this many rectified pixels
HEIGHT_LEVELS = 2  # the height target tells apart 0, 1 and 2-or-more disks underneath
NESTED_SHARE = 0.7  # a disk with at least this share of its face over lower disks lies on them (`nested_centres`)


@dataclass(frozen=True, eq=False)
class FaceTruth:
    """One training sample: the rectified frame (BGR uint8, 1 px/mm) and its targets (uint8, 0-255, half size)."""

    rect: np.ndarray
    face: np.ndarray
    rim: np.ndarray
    height: np.ndarray
    # (k, 2) int (row, column) at the output scale: the centres of the disks lying on others (`nested_centres`)
    nested: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int32))

    def __post_init__(self) -> None:
        h, w = self.rect.shape[:2]
        want = (h // OUTPUT_STRIDE, w // OUTPUT_STRIDE)
        if not self.face.shape == self.rim.shape == self.height.shape == want:
            raise ValueError(f"targets must be {want}, got {self.face.shape}, {self.rim.shape} and "
                             f"{self.height.shape}")
        if self.nested.ndim != 2 or self.nested.shape[1] != 2:
            raise ValueError(f"nested must be (k, 2) centres, got shape {self.nested.shape}")


def draw_rank(setup: TableSetup) -> np.ndarray:
    """Each disk's place in the renderer's bottom-up drawing order (higher lies over lower)."""
    keys = [(d.top_height_mm + d.lift_mm, d.z) for d in setup.disks]
    order = sorted(range(len(keys)), key=lambda i: keys[i])
    rank = np.empty(len(keys), np.int32)
    rank[order] = np.arange(len(keys))
    return rank


def outline_mask(label: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Pixels on either side of a disk's own visible outline: a boundary of disk i's face with the felt (or
    anything not a disk face) or with a disk drawn below it. Boundaries with a disk above, or with a hand, are not
    i's outline."""
    lab = label.astype(np.int32)
    h, w = lab.shape
    r = np.full(len(rank) + 2, -1, np.int64)  # rank lookup with room for the felt (-1) and hand (-2) labels
    r[: len(rank)] = rank
    mask = np.zeros((h, w), bool)
    for dy, dx in ((0, 1), (1, 0), (1, 1), (1, -1)):
        # a: each pixel, b: its neighbour at (+dy, +dx)
        sa = (slice(0, h - dy), slice(max(0, -dx), w - max(0, dx)))
        sb = (slice(dy, h), slice(max(0, dx), w - max(0, -dx)))
        a, b = lab[sa], lab[sb]
        ra, rb = r[np.where(a >= 0, a, len(rank))], r[np.where(b >= 0, b, len(rank))]
        hand = (a == HAND_LABEL) | (b == HAND_LABEL)
        # the edge between them is a's outline when a is a disk above b (b felt, or a lower disk), and b's the
        # other way round; both pixels are marked, so the band is centred on the edge
        own = (a != b) & ~hand & (((a >= 0) & ((b < 0) | (ra > rb))) | ((b >= 0) & ((a < 0) | (rb > ra))))
        mask[sa] |= own
        mask[sb] |= own
    return mask


def share_over_lower(disk, disks) -> float:
    """The share of `disk`'s face lying over disks lower in the pile than it (`z`), sampled on a polar grid of 192
    points; `disk` and `disks` need `x_mm`, `y_mm`, `radius_mm` and `z` (truth scene or setup disks alike)."""
    a = np.linspace(0.0, 2.0 * np.pi, 24, endpoint=False)
    rr = np.sqrt(np.linspace(0.05, 1.0, 8))[:, None] * disk.radius_mm
    x, y = (disk.x_mm + rr * np.cos(a)).ravel(), (disk.y_mm + rr * np.sin(a)).ravel()
    over = np.zeros(x.shape, bool)
    for o in disks:
        if o.z < disk.z:
            over |= np.hypot(x - o.x_mm, y - o.y_mm) < o.radius_mm
    return float(over.mean())


def nested_centres(setup: TableSetup, camera: SynthCamera) -> np.ndarray:
    """(k, 2) int (row, column) at the output scale of the centres of the disks lying on the table (not in a
    hand) with at least `NESTED_SHARE` of their face over lower disks: where a disk's whole outline runs over
    another's face, read from the exact calibration of `camera`."""
    lying = [d for d in setup.disks if d.id not in setup.held]
    on = [d for d in lying if d.z > 0 and share_over_lower(d, lying) >= NESTED_SHARE]
    if not on:
        return np.zeros((0, 2), np.int32)
    cal = truth_calibration(camera, setup.diameters_mm)
    xy = np.asarray(cal.table_to_rectified(np.array([[d.x_mm, d.y_mm] for d in on])), np.float64).reshape(-1, 2)
    return np.round(xy[:, ::-1] / OUTPUT_STRIDE).astype(np.int32)


def face_truth(frame: RenderedFrame, setup: TableSetup, camera: SynthCamera) -> FaceTruth:
    """The rectified frame and its face/rim targets, through the exact calibration of `camera`."""
    if frame.label is None:
        raise ValueError("the rendered frame has no label image")
    cal = truth_calibration(camera, setup.diameters_mm)
    m1, m2 = cal.rectify_maps()
    rect = cv2.remap(frame.image, m1, m2, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
    lab = cv2.remap(frame.label, m1, m2, cv2.INTER_NEAREST, borderMode=cv2.BORDER_CONSTANT, borderValue=-1)
    h, w = rect.shape[:2]
    h2, w2 = h // OUTPUT_STRIDE, w // OUTPUT_STRIDE
    rect = rect[: h2 * OUTPUT_STRIDE, : w2 * OUTPUT_STRIDE]
    lab = lab[: h2 * OUTPUT_STRIDE, : w2 * OUTPUT_STRIDE]
    face = (lab >= 0).astype(np.float32)
    rim = outline_mask(lab, draw_rank(setup)).astype(np.float32)
    levels = np.array([min(d.z, HEIGHT_LEVELS) / HEIGHT_LEVELS for d in setup.disks] + [0.0], np.float32)
    height = levels[np.where((lab >= 0) & (lab < len(setup.disks)), lab, len(setup.disks))]
    face = cv2.resize(face, (w2, h2), interpolation=cv2.INTER_AREA)
    # the mean level over the face part of each output pixel
    height = cv2.resize(height, (w2, h2), interpolation=cv2.INTER_AREA) / np.maximum(face, 1e-6)
    # the outline band is 2 px wide at full size: about half of each output pixel it crosses
    rim = np.clip(cv2.resize(rim, (w2, h2), interpolation=cv2.INTER_AREA) * 2.0, 0.0, 1.0)
    return FaceTruth(rect=np.ascontiguousarray(rect), face=np.round(face * 255).astype(np.uint8),
                     rim=np.round(rim * 255).astype(np.uint8),
                     height=np.round(np.clip(height, 0.0, 1.0) * 255).astype(np.uint8),
                     nested=nested_centres(setup, camera))
