"""Feeds: where the page's scenes come from.

A feed has the methods of `vision.live.LiveTable` — `start()`, `stop()`, `state() -> LiveState` and
`wait_for_change(after_version, timeout_s) -> LiveState` — so the web app serves a camera, a video, a scene file
or the demo table the same way. The camera and video feeds are `vision.live.LiveTable` itself; this module holds
the two that need no camera: a scene file (reloaded when it changes on disk) and the demo table (a looping
synthetic game: ground-truth scenes with their rendered frames; `tablesight serve --demo truth`). The default demo
table, the same game rendered and detected by the camera pipeline, is `webui.demo_eye.DemoEyeFeed`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from tablesight.errors import InputError
from tablesight.scene import Scene, load_scene

from vision.live import Health, LiveState  # the one definition of the feed state types


def health_json(health: Any) -> dict[str, Any]:
    """The health line as JSON (spec/interfaces.md §5), from any object with the Health fields."""

    def num(v: Any, nd: int) -> float | None:
        return None if v is None else round(float(v), nd)

    return {
        "source": str(health.source),
        "fps": num(health.fps, 1) or 0.0,
        "latency_ms": num(health.latency_ms, 1) or 0.0,
        "calibration_age_s": num(health.calibration_age_s, 1),
        "calibration_error_mm": num(health.calibration_error_mm, 2),
        "message": str(health.message or ""),
    }


class _VersionedState:
    """The one lock + condition pattern both feeds share: publish a LiveState, let waiters block on it."""

    def __init__(self, initial: LiveState) -> None:
        self._cond = threading.Condition()
        self._state = initial

    def state(self) -> LiveState:
        with self._cond:
            return self._state

    def publish(self, new: LiveState) -> None:
        with self._cond:
            self._state = new
            self._cond.notify_all()

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def wait_for_change(self, after_version: int, timeout_s: float, stop: threading.Event | None = None) -> LiveState:
        deadline = time.monotonic() + max(0.0, float(timeout_s))
        with self._cond:
            while self._state.version <= after_version and not (stop is not None and stop.is_set()):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(left, 0.5))
            return self._state


# ---------------------------------------------------------------------------------------------------------------


class SceneFileFeed:
    """Serves one scene file. The file is re-read when its modification time changes (a hand-edited scene shows
    up on the page at once); a broken edit keeps the last good scene and says why in the health message."""

    def __init__(self, path: str | Path, poll_s: float = 0.5) -> None:
        self.path = Path(path)
        self.poll_s = float(poll_s)
        scene = load_scene(self.path)  # raises InputError with one clear line
        self._mtime = self._stat()
        self._box = _VersionedState(LiveState(1, scene, False, None, self._health("")))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def kind(self) -> str:
        return "file"

    def _stat(self) -> float | None:
        try:
            return self.path.stat().st_mtime
        except OSError:
            return None

    def _health(self, message: str) -> Health:
        return Health("file", 0.0, 0.0, None, None, message or f"scene file {self.path.name}")

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._watch, name="scene-file-feed", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._box.wake()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None

    def state(self) -> LiveState:
        return self._box.state()

    def wait_for_change(self, after_version: int, timeout_s: float) -> LiveState:
        return self._box.wait_for_change(after_version, timeout_s, self._stop)

    def reload_if_changed(self) -> bool:
        """Re-read the file if it changed; return True when a new scene was published."""
        mtime = self._stat()
        if mtime == self._mtime:
            return False
        self._mtime = mtime
        cur = self._box.state()
        try:
            scene = load_scene(self.path)
        except InputError as exc:
            self._box.publish(replace(cur, health=self._health(f"keeping the last good scene: {exc}")))
            return False
        if scene.to_json() == cur.scene.to_json():
            # Touched or rewritten with the same content: nothing for the page to redraw.
            self._box.publish(replace(cur, health=self._health("")))
            return False
        self._box.publish(LiveState(cur.version + 1, scene, False, None, self._health("")))
        return True

    def _watch(self) -> None:
        # Nothing a file holds may end this thread: a failure keeps the last good scene and says why.
        while not self._stop.wait(self.poll_s):
            try:
                self.reload_if_changed()
            except Exception as exc:
                cur = self._box.state()
                self._box.publish(replace(cur, health=self._health(
                    f"keeping the last good scene: {self.path.name} could not be read "
                    f"({exc.__class__.__name__}: {str(exc)[:200]})")))

    def workers(self) -> dict[str, bool]:
        """The file watcher, and whether it runs (once started)."""
        return {} if self._thread is None else {"scene-file watcher": self._thread.is_alive()}


# ---------------------------------------------------------------------------------------------------------------

#: One item of a demo sequence: (frame_bgr or None, ground-truth scene, is_stable).
DemoItem = tuple[Any, Scene, bool]

#: The demo plays the clip at half its frame rate: a move every few seconds, time to read the page between.
DEMO_SLOWDOWN = 2.0
FRAME_MARGIN_MM = 40.0


def _default_sequence(seed: int) -> Iterable[DemoItem]:
    from vision.synth.sequence import demo_sequence

    return demo_sequence(seed)


def encode_jpeg(frame_bgr: Any, quality: int = 80) -> bytes | None:
    """JPEG bytes of a BGR frame (None when there is no frame or it cannot be encoded)."""
    if frame_bgr is None:
        return None
    import cv2

    ok, buf = cv2.imencode(".jpg", frame_bgr, [int(cv2.IMWRITE_JPEG_QUALITY), int(quality)])
    return buf.tobytes() if ok else None


def camera_rectifier(camera: Any, battlefield_mm: tuple[float, float], px_per_mm: float = 1.0,
                     margin_mm: float = FRAME_MARGIN_MM) -> Callable[[Any], Any]:
    """frame -> top-down image of the table (origin at table mm (-margin, -margin), `px_per_mm`), for a camera
    that knows its true projection (`camera.project(points_mm) -> image px`, lens distortion included): one
    remap table built here, one cv2.remap per frame. The same geometry as TableCalibration.rectify."""
    import cv2
    import numpy as np

    w = int(round((battlefield_mm[0] + 2 * margin_mm) * px_per_mm))
    h = int(round((battlefield_mm[1] + 2 * margin_mm) * px_per_mm))
    xs = (np.arange(w, dtype=np.float64) + 0.5) / px_per_mm - margin_mm
    ys = (np.arange(h, dtype=np.float64) + 0.5) / px_per_mm - margin_mm
    gx, gy = np.meshgrid(xs, ys)
    uv = np.asarray(camera.project(np.column_stack([gx.ravel(), gy.ravel()])), np.float32)
    map_x = np.ascontiguousarray(uv[:, 0].reshape(h, w))
    map_y = np.ascontiguousarray(uv[:, 1].reshape(h, w))

    def rectify(frame: Any) -> Any:
        return cv2.remap(frame, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=(16, 16, 16))

    return rectify


class DemoFeed:
    """The demo table: loops a synthetic game clip, `item_s` seconds per item.

    Stable items whose ground truth differs from the last committed scene commit a new version (like the live
    pipeline committing a settled table); unstable items mark the table busy and keep the last scene. Only
    committed items are rendered (a clip from `vision.synth.sequence` gives its ground truth without rendering);
    the frame is shown rectified (top-down) when the clip's camera is known, else the page draws the map.
    """

    def __init__(
        self,
        seed: int = 7,
        item_s: float | None = None,
        sequence_factory: Callable[[int], Iterable[DemoItem]] | None = None,
        rectify: Callable[[Any], Any] | None = None,
    ) -> None:
        self.seed = int(seed)
        self._factory = sequence_factory or _default_sequence
        self._sequence = self._factory(self.seed)
        fps = getattr(self._sequence, "fps", None)
        if item_s is None:
            item_s = DEMO_SLOWDOWN / fps if fps else 1.0
        if item_s <= 0:
            raise InputError(f"demo item duration must be > 0 s, got {item_s}")
        self.item_s = float(item_s)
        self._rectify = rectify
        self._iter: Iterator[tuple[Callable[[], Any], Scene, bool]] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        frame_of, scene, _ = self._first_stable()
        bf = scene.battlefield
        if self._rectify is None and hasattr(getattr(self._sequence, "camera", None), "project"):
            self._rectify = camera_rectifier(self._sequence.camera, (bf.width_mm, bf.height_mm))
        self.frame_calibration = (_RectifiedGeometry((bf.width_mm, bf.height_mm)) if self._rectify is not None
                                  else None)
        self._box = _VersionedState(LiveState(1, scene, False, self._jpeg(frame_of()), self._health(False)))

    @property
    def kind(self) -> str:
        return "demo"

    def _health(self, busy: bool) -> Health:
        msg = "demo table: a looping synthetic game (no camera)"
        if busy:
            msg += " — a move is being made"
        return Health("demo", round(1.0 / self.item_s, 2), 0.0, None, None, msg)

    def _jpeg(self, frame: Any) -> bytes | None:
        if frame is None:
            return None
        if self._rectify is not None:
            frame = self._rectify(frame)
        return encode_jpeg(frame)

    def _pass(self) -> Iterator[tuple[Callable[[], Any], Scene, bool]]:
        """One pass over the clip: (frame thunk, scene, stable), rendering nothing until asked."""
        seq = self._sequence
        if hasattr(seq, "truth") and hasattr(seq, "steps"):
            for i in range(len(seq)):
                yield (lambda i=i: seq[i][0]), seq.truth(i), bool(seq.steps[i].stable)
        else:
            for frame, scene, stable in seq:
                yield (lambda f=frame: f), scene, bool(stable)

    def _items(self) -> Iterator[tuple[Callable[[], Any], Scene, bool]]:
        while not self._stop.is_set():
            n = 0
            for item in self._pass():
                n += 1
                yield item
            if n == 0:
                raise InputError("the demo sequence is empty")

    def _first_stable(self) -> tuple[Callable[[], Any], Scene, bool]:
        for item in self._pass():
            if item[2]:
                return item
        raise InputError("the demo sequence has no stable moment")

    def advance(self) -> LiveState:
        """Play one item (the thread calls this every `item_s`; tests call it directly)."""
        if self._iter is None:
            self._iter = self._items()
        frame_of, scene, stable = next(self._iter)
        cur = self._box.state()
        if not stable:
            if not cur.busy:
                self._box.publish(replace(cur, busy=True, health=self._health(True)))
        elif scene != cur.scene:
            self._box.publish(LiveState(cur.version + 1, scene, False, self._jpeg(frame_of()), self._health(False)))
        elif cur.busy:
            self._box.publish(replace(cur, busy=False, health=self._health(False)))
        return self._box.state()

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="demo-feed", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._box.wake()
        if self._thread is not None:
            self._thread.join(timeout=10.0)
            self._thread = None

    def workers(self) -> dict[str, bool]:
        return {} if self._thread is None else {"demo table": self._thread.is_alive()}

    def _run(self) -> None:
        next_t = time.monotonic() + self.item_s  # the first stable moment is already on show
        while not self._stop.wait(max(0.0, next_t - time.monotonic())):
            try:
                self.advance()  # a first render can take longer than an item: the clip then just runs slower
            except Exception as exc:  # keep the last scene on the page and say what broke
                cur = self._box.state()
                self._box.publish(replace(cur, health=replace(cur.health, message=f"demo stopped: {exc}")))
                return
            next_t = max(next_t + self.item_s, time.monotonic())

    def state(self) -> LiveState:
        return self._box.state()

    def wait_for_change(self, after_version: int, timeout_s: float) -> LiveState:
        return self._box.wait_for_change(after_version, timeout_s, self._stop)


@dataclass(frozen=True)
class _RectifiedGeometry:
    """Where the demo's rectified frame lies on the table (read as from a TableCalibration)."""

    battlefield_mm: tuple[float, float]
    rectified_origin_mm: tuple[float, float] = (-FRAME_MARGIN_MM, -FRAME_MARGIN_MM)
    rectified_px_per_mm: float = 1.0
