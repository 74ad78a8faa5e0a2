"""The demo table seen through the eye: the synthetic game rendered as camera frames and detected by the live
pipeline, the same `vision.live.LiveTable` a webcam's frames go through, with the ground truth kept beside it.

- `ClipFrameSource` is a `vision.sources.FrameSource` that plays the demo clip (`vision.synth.sequence`) at
  `item_s` per step. It renders a frame only when the still table changes (a move has been made): between moves,
  and while a hand is making the next one, it repeats the last rendered frame. So the pipeline's motion gate
  sees a jump, then a still table, and detects once per move, where the table changed.
- The table is calibrated from the frame's own printed corner markers, as `tablesight calibrate` does (with the
  renderer's lens, as a player who calibrated the lens from board photos would have): the demo then shows the
  calibration's own error too. If the markers cannot be read the renderer's exact calibration is used and the
  calibration page says so.
- `DemoEyeFeed` is the feed the web app serves (the `vision.live.LiveTable` duck type): the detected scenes, and
  `truth_for(version)` — the true scene of the frame each version was detected on, for the page's truth overlay.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import replace
from typing import Any

from tablesight.errors import InputError
from tablesight.scene import Scene

from vision.live import LiveState, LiveTable, PipelineConfig
from vision.sources import FrameSource

#: The demo plays the clip at half its frame rate (as the ground-truth demo does): a move every few seconds.
DEMO_SLOWDOWN = 2.0
#: How many committed versions keep their truth (the page asks for the one it shows).
TRUTHS_KEPT = 32


class ClipFrameSource(FrameSource):
    """The demo clip as camera frames, looped: a new frame rendered only when the still table changed."""

    kind = "demo"
    health_name = "demo"

    def __init__(self, sequence: Any, item_s: float) -> None:
        if not item_s > 0:
            raise InputError(f"demo item duration must be > 0 s, got {item_s}")
        super().__init__(fps=1.0 / item_s, loop=True)
        self.sequence = sequence
        self.item_s = float(item_s)
        self._pos = 0
        self._shown_cheap: Scene | None = None  # the unrendered truth of the shown frame (cheap to compare)
        self._image: Any = None
        self._truth: Scene | None = None
        self._recent: deque[tuple[Any, Scene]] = deque(maxlen=4)
        self._lock = threading.Lock()
        self.renders = 0
        first = next((i for i in range(len(sequence)) if sequence.steps[i].stable), None)
        if first is None:
            raise InputError("the demo sequence has no stable moment")
        self._show(first)

    def _show(self, i: int) -> None:
        image, truth, _ = self.sequence[i]  # rendered once, then kept as JPEG by the sequence
        with self._lock:
            self._image, self._truth = image, truth
            self._shown_cheap = self.sequence.truth(i)
            self._recent.append((image, truth))
            self.renders += 1

    def step(self) -> Any:
        """Play one step of the clip; the frame to show for it (the thread calls this; tests too)."""
        seq = self.sequence
        i = self._pos
        self._pos = (self._pos + 1) % len(seq)
        if seq.steps[i].stable and seq.truth(i) != self._shown_cheap:
            self._show(i)
        return self._image

    def truth_of(self, image: Any) -> Scene | None:
        """The true scene of a frame this source gave (the very array), None if it is not one of the last few."""
        with self._lock:
            for img, truth in reversed(self._recent):
                if img is image:
                    return truth
        return None

    @property
    def image(self) -> Any:
        return self._image

    @property
    def truth(self) -> Scene | None:
        return self._truth

    # -- FrameSource hooks ---------------------------------------------------------------------------------------
    def _open(self) -> None:
        pass

    def _read(self) -> tuple[bool, Any]:
        return True, self.step()


class _TruthKeepingTable(LiveTable):
    """The live pipeline, unchanged, remembering which true scene each committed version was detected on."""

    def __init__(self, source: ClipFrameSource, calibration: Any, config: PipelineConfig | None = None) -> None:
        super().__init__(source, calibration, config)
        self._truths: dict[int, Scene] = {}
        self._truth_lock = threading.Lock()

    def process(self, image: Any, now: float | None = None) -> bool:
        truth = self.source.truth_of(image)
        committed = super().process(image, now)
        if committed and truth is not None:
            version = self.state().version
            with self._truth_lock:
                self._truths[version] = truth
                for old in sorted(self._truths)[:-TRUTHS_KEPT]:
                    del self._truths[old]
        return committed

    def truth_for(self, version: int) -> Scene | None:
        """The truth of the newest commit at or before `version` (a correction bumps the version, not the frame)."""
        with self._truth_lock:
            kept = [v for v in self._truths if v <= version]
            return self._truths[max(kept)] if kept else None


def demo_calibration(image: Any, camera: Any) -> tuple[Any, str]:
    """The table calibration of the demo's frames and how it was made: from the frame's printed corner markers
    (with the renderer's lens), else the renderer's exact calibration."""
    from calibration.camera import CameraIntrinsics
    from calibration.table import calibrate_table
    from vision.synth.truth import truth_calibration

    lens = CameraIntrinsics(camera_matrix=camera.camera_matrix, dist_coeffs=camera.dist_coeffs,
                            image_size=camera.image_size, rms_px=0.0)
    try:
        return calibrate_table(image, intrinsics=lens), "calibrated from the frame's printed corner markers"
    except InputError as exc:
        return truth_calibration(camera), f"the renderer's exact calibration (the markers could not be read: {exc})"


class DemoEyeFeed:
    """The demo table through the camera pipeline (the feed duck type of `webui.feeds`), with the truth."""

    kind = "demo"

    def __init__(self, seed: int = 7, item_s: float | None = None, sequence: Any = None,
                 config: PipelineConfig | None = None) -> None:
        if sequence is None:
            from vision.synth.sequence import demo_sequence

            sequence = demo_sequence(int(seed))
        if item_s is None:
            item_s = DEMO_SLOWDOWN / sequence.fps
        self.sequence = sequence
        self.source = ClipFrameSource(sequence, item_s)
        self.calibration, self.calibration_how = demo_calibration(self.source.image, sequence.camera)
        first = self.source.truth
        # What a player would have set up before the game: the players, zones and range bands (not the disks).
        base = replace(first, disks=(), extra={})
        self.live = _TruthKeepingTable(self.source, self.calibration, replace(config or PipelineConfig(),
                                                                              base_scene=base))
        self.message = f"demo table: {self.calibration_how}"
        self._first_commit()

    def _first_commit(self) -> None:
        """Detect the first still table before serving, so the page opens on disks rather than on "waiting":
        the first frame shown to the pipeline until it has been still long enough (times in the past, so the
        running thread's clock goes on from them)."""
        still_s = self.live.config.motion.still_s
        t = time.monotonic() - 4.0 * (still_s + self.source.item_s)
        image = self.source.image
        for _ in range(4):
            if self.live.process(image, t):
                return
            t += still_s + self.source.item_s
        raise InputError("the demo table: the first still frame was not detected")  # pragma: no cover

    # -- the feed ------------------------------------------------------------------------------------------------
    def start(self) -> None:
        self.live.start()  # starts the source too

    def stop(self) -> None:
        self.live.stop()

    def state(self) -> LiveState:
        return self.live.state()

    def wait_for_change(self, after_version: int, timeout_s: float) -> LiveState:
        return self.live.wait_for_change(after_version, timeout_s)

    def workers(self) -> dict[str, bool]:
        return self.live.workers()

    def apply_correction(self, correction: Any) -> LiveState:
        return self.live.apply_correction(correction)

    def latest_frame(self, timeout_s: float = 0.5) -> Any:
        """The newest rendered camera frame (BGR), for the calibration page."""
        return self.source.image

    # -- the truth -------------------------------------------------------------------------------------------------
    def truth_for(self, version: int) -> Scene | None:
        """The true scene of the frame the scene of `version` was detected on (None before the first commit)."""
        return self.live.truth_for(version)

    def step(self, now: float) -> bool:
        """Play one step of the clip through the pipeline at time `now` (tests and benchmarks drive the demo
        with this instead of the threads); True when a new scene was committed."""
        return self.live.process(self.source.step(), now)
