"""Motion gate: is the table still, and has anything changed since the last committed scene?

Works on a small rectified image (a few px per cm): the difference to the previous small frame says whether
something is moving now; skin-coloured blobs that the last committed frame did not have say a hand rests over the
table; the difference to the committed frame says whether the scene changed. A new scene is committed only after
the table has been still (no motion, no hand) for `still_s`; while busy the last stable scene is served. When the
still table equals the committed frame nothing else runs: the fast path costs a downscale and a few differences.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np


@dataclass(frozen=True)
class MotionConfig:
    """Thresholds of the motion gate (image levels are 0-255; areas in mm² on the table)."""

    px_per_mm: float = 0.25          # scale of the gate's small rectified image
    still_s: float = 0.6             # the table must be still this long before a scene is committed
    pixel_threshold: float = 14.0    # per-pixel change (max over channels, after a light blur) that counts
    motion_area_mm2: float = 400.0   # changed area between consecutive frames that means "moving"
    change_area_mm2: float = 150.0   # changed area against the committed frame that means "the scene changed"
    hand_area_mm2: float = 2500.0    # a new skin-coloured blob this large is a hand over the table
    hand_still_s: float = 1.5        # ... unless nothing on the table has moved for this long (0: always a hand)
    refresh_s: float = 0.0           # re-detect a still, unchanged table this often anyway (0: never)

    def __post_init__(self) -> None:
        if not 0.05 <= self.px_per_mm <= 1.0:
            raise ValueError("px_per_mm must be within 0.05..1")
        for name in ("still_s", "refresh_s", "hand_still_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        for name in ("pixel_threshold", "motion_area_mm2", "change_area_mm2", "hand_area_mm2"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0")


@dataclass(frozen=True)
class GateDecision:
    busy: bool             # motion or a hand: hold the last stable scene
    run_detection: bool    # still long enough and changed (or never detected): detect and commit
    reason: str            # "moving", "hand", "settling", "changed", "first", "refresh", "unchanged"
    motion_mm2: float      # area changed since the previous frame
    changed_mm2: float     # area changed since the committed frame
    hand: bool


def skin_mask(small_bgr: np.ndarray) -> np.ndarray:
    """Skin-like pixels (YCrCb box that covers light to dark skin under white light)."""
    ycc = cv2.cvtColor(small_bgr, cv2.COLOR_BGR2YCrCb)
    return cv2.inRange(ycc, (40, 135, 80), (250, 178, 130)) > 0


class MotionGate:
    """Feed every small rectified frame to `update`; call `committed` with the frame a scene was taken from."""

    def __init__(self, config: MotionConfig | None = None):
        self.config = config or MotionConfig()
        self._prev: np.ndarray | None = None
        self._ref: np.ndarray | None = None
        self._ref_skin: np.ndarray | None = None
        self._still_since: float | None = None
        self._last_commit_t: float | None = None
        # Skin-coloured pixels of the frame a still period began with: the baseline for "a new hand" until the
        # first commit gives a reference (disk art and terrain are full of skin tones that are no hand).
        self._settle_skin: np.ndarray | None = None
        self._quiet_since: float | None = None   # nothing has moved since (hands or not)

    def reset(self) -> None:
        self._prev = self._ref = self._ref_skin = self._settle_skin = None
        self._still_since = self._last_commit_t = self._quiet_since = None

    def _largest_blob_mm2(self, mask: np.ndarray) -> float:
        opened = cv2.morphologyEx(mask.astype(np.uint8), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
        n, _, stats, _ = cv2.connectedComponentsWithStats(opened, connectivity=8)
        return self._area_px(int(stats[1:, cv2.CC_STAT_AREA].max())) if n > 1 else 0.0

    def _area_px(self, count: int) -> float:
        ppm = self.config.px_per_mm
        return float(count) / (ppm * ppm)

    def _prep(self, small_bgr: np.ndarray) -> np.ndarray:
        return cv2.GaussianBlur(small_bgr, (3, 3), 0)

    def _differs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Pixels where any colour channel differs by more than the threshold, isolated pixels (noise, JPEG)
        left out: motion and change are connected patches. (OpenCV element-wise work: this runs on every frame.)"""
        d = cv2.absdiff(a, b)
        if d.ndim == 3:
            chans = cv2.split(d)
            d = chans[0]
            for c in chans[1:]:
                d = cv2.max(d, c)
        over = (d > self.config.pixel_threshold).astype(np.uint8)
        return cv2.morphologyEx(over, cv2.MORPH_OPEN, np.ones((2, 2), np.uint8)) > 0

    def _area(self, mask: np.ndarray) -> float:
        return self._area_px(int(np.count_nonzero(mask)))

    def update(self, small_bgr: np.ndarray, t: float) -> GateDecision:
        cfg = self.config
        cur = self._prep(small_bgr)
        if self._prev is None or self._prev.shape != cur.shape:
            self._prev = cur
            self._still_since = t
            motion = 0.0
        else:
            motion = self._area(self._differs(cur, self._prev))
            self._prev = cur
        skin = skin_mask(small_bgr)
        if self._ref_skin is None and self._settle_skin is None:
            self._settle_skin = skin  # the first frame of a still period is the baseline until the first commit
        baseline = self._ref_skin if self._ref_skin is not None else self._settle_skin
        new_skin = skin
        if baseline is not None and baseline.shape == skin.shape:
            # A pixel or two of jitter around the baseline's skin tones is not a new blob.
            grown = cv2.dilate(baseline.astype(np.uint8), np.ones((3, 3), np.uint8)) > 0
            new_skin = skin & ~grown
        # A hand is one large connected blob, not the sum of many small skin-toned spots in the art.
        hand = self._largest_blob_mm2(new_skin) >= cfg.hand_area_mm2
        if motion >= cfg.motion_area_mm2:
            self._quiet_since = None
        elif self._quiet_since is None:
            self._quiet_since = t
        quiet_long = self._quiet_since is not None and t - self._quiet_since >= cfg.hand_still_s
        if hand and cfg.hand_still_s > 0 and quiet_long:
            # A hand over a table never stays this still: the blob is skin-toned disk art moved into view (a disk
            # flipped, a casualty's removal uncovering one). It joins the baseline, and the table, quiet since then,
            # may be committed; otherwise it was "a hand" for good and the table never committed again.
            if self._ref_skin is not None:
                self._ref_skin = self._ref_skin | skin
            else:
                self._settle_skin = skin
            hand = False
            if self._still_since is None:
                self._still_since = self._quiet_since
        if self._ref is not None and self._ref.shape == cur.shape:
            changed = self._area(self._differs(cur, self._ref))
        else:
            changed = float("inf")
        if motion >= cfg.motion_area_mm2 or hand:
            self._still_since = None
            self._settle_skin = None
            return GateDecision(True, False, "hand" if hand else "moving", motion, changed, hand)
        if self._still_since is None:
            self._still_since = t
        if t - self._still_since < cfg.still_s:
            return GateDecision(True, False, "settling", motion, changed, hand)
        if self._ref is None:
            return GateDecision(False, True, "first", motion, changed, hand)
        if changed >= cfg.change_area_mm2:
            return GateDecision(False, True, "changed", motion, changed, hand)
        if cfg.refresh_s and self._last_commit_t is not None and t - self._last_commit_t >= cfg.refresh_s:
            return GateDecision(False, True, "refresh", motion, changed, hand)
        return GateDecision(False, False, "unchanged", motion, changed, hand)

    def committed(self, small_bgr: np.ndarray, t: float) -> None:
        """The scene was (re)detected from this frame: it is the new reference."""
        self._ref = self._prep(small_bgr)
        self._ref_skin = skin_mask(small_bgr)
        self._settle_skin = None
        self._last_commit_t = t
