"""Frame sources behind one interface: camera index, video file, network stream, image folder, synthetic demo.

A capture thread reads frames as fast as the source gives them and keeps only the newest one, so a slow consumer
always sees the present, never a backlog (`every_frame=True` instead hands over every frame of a file, for
offline tracking). Corrupt or empty frames are dropped with a reason. A camera or stream that stops answering is
reported as lost and reopened with exponential backoff; a file that ends is reported as ended.

    src = open_source(camera=0)          # or video=..., url=..., images=..., demo=True
    src.start()
    frame = src.read(after=-1, timeout_s=1.0)   # the newest Frame newer than index `after`, or None
    src.status()                          # SourceStatus: state, message, frame counts, drop reasons
    src.stop()
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from tablesight.errors import InputError

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")

# Source states: "starting", "live" (frames arrive), "lost" (device/stream silent, reopening), "ended" (a file
# played to its end), "stopped".


@dataclass(frozen=True)
class Frame:
    image: np.ndarray       # BGR uint8
    index: int              # 0, 1, 2, ... in arrival order (dropped frames take no index)
    captured_s: float       # time.monotonic() when it was read
    stable_truth: bool | None = None  # demo only: the renderer's "table is still" flag
    truth: Any = None       # demo only: the ground-truth Scene of this frame


@dataclass(frozen=True)
class SourceStatus:
    kind: str               # "camera", "video", "url", "images", "demo"
    state: str
    message: str
    frames: int             # frames accepted
    dropped: int            # frames refused (corrupt, empty, size change)
    last_drop_reason: str | None
    reopen_attempts: int
    fps: float              # arrival rate over the last second or so


def check_image(img: Any, expected_size: tuple[int, int] | None = None) -> str | None:
    """Why a frame cannot be used (None when it can)."""
    if img is None:
        return "no image"
    if not isinstance(img, np.ndarray):
        return f"not an image ({type(img).__name__})"
    if img.size == 0 or img.ndim not in (2, 3):
        return f"empty or malformed image (shape {getattr(img, 'shape', None)})"
    if img.dtype != np.uint8:
        return f"unsupported pixel type {img.dtype}"
    if img.ndim == 3 and img.shape[2] not in (1, 3, 4):
        return f"unsupported channel count {img.shape[2]}"
    if expected_size is not None and (img.shape[1], img.shape[0]) != tuple(expected_size):
        return f"frame size {img.shape[1]}x{img.shape[0]} changed from {expected_size[0]}x{expected_size[1]}"
    if img.ndim == 3 and img.shape[2] == 3 and img.shape[0] >= 8 and img.shape[1] >= 8:
        # A grabber that returns a frozen all-black or all-one-colour buffer: no information.
        sub = img[:: max(1, img.shape[0] // 16), :: max(1, img.shape[1] // 16)]
        if int(sub.max()) - int(sub.min()) == 0:
            return "blank frame (one flat colour)"
    return None


def _to_bgr(img: np.ndarray) -> np.ndarray:
    import cv2

    if img.ndim == 2 or img.shape[2] == 1:
        return cv2.cvtColor(img, cv2.COLOR_GRAY2BGR)
    if img.shape[2] == 4:
        return cv2.cvtColor(img, cv2.COLOR_BGRA2BGR)
    return img


class FrameSource:
    """The common capture thread. Subclasses give `_open`, `_read` and `_close`; `live` sources reopen."""

    kind = "source"
    live = False              # a device/stream: reopen when it goes silent; else a file: it ends
    health_name = "file"      # what the web page's health shows: "live", "demo" or "file"

    def __init__(self, *, every_frame: bool = False, loop: bool = False, fps: float | None = None,
                 backoff_s: tuple[float, float] = (0.5, 10.0), lost_after_s: float = 2.0):
        if fps is not None and not fps > 0:
            raise InputError("fps must be > 0")
        self.every_frame = every_frame
        self.loop = loop
        self.fps_limit = fps
        self.backoff_s = backoff_s
        self.lost_after_s = lost_after_s
        self._cond = threading.Condition()
        self._latest: Frame | None = None
        self._taken = -1
        self._index = 0
        self._dropped = 0
        self._last_drop: str | None = None
        self._state = "starting"
        self._message = ""
        self._reopens = 0
        self._size: tuple[int, int] | None = None
        self._arrivals: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._reason: str | None = None  # why the last attempt gave no image, when the reader knows

    # -- subclass hooks ------------------------------------------------------------------------------------
    def _open(self) -> None:
        raise NotImplementedError

    def _read(self) -> tuple[bool, Any]:
        """(True, image-or-None) for a frame attempt, (False, None) when the source has ended / is silent."""
        raise NotImplementedError

    def _close(self) -> None:
        pass

    def _extra(self) -> dict:
        return {}

    # -- public --------------------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"tablesight-{self.kind}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout=5.0)
        self._thread = None
        with self._cond:
            if self._state not in ("ended",):
                self._state = "stopped"

    def __enter__(self) -> "FrameSource":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def read(self, after: int = -1, timeout_s: float = 1.0) -> Frame | None:
        """The newest frame with index > `after`; None after `timeout_s` without one (or once ended)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                f = self._latest
                if f is not None and f.index > after:
                    self._taken = f.index
                    self._cond.notify_all()
                    return f
                if self._state in ("ended", "stopped") and (f is None or f.index <= after):
                    return None
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)

    def frames(self, timeout_s: float = 5.0) -> Iterator[Frame]:
        """Iterate frames until the source ends (or stays silent for `timeout_s`)."""
        after = -1
        while True:
            f = self.read(after, timeout_s)
            if f is None:
                return
            after = f.index
            yield f

    def status(self) -> SourceStatus:
        with self._cond:
            now = time.monotonic()
            recent = [t for t in self._arrivals if now - t <= 2.0]
            fps = (len(recent) - 1) / (recent[-1] - recent[0]) if len(recent) >= 2 and recent[-1] > recent[0] else 0.0
            return SourceStatus(self.kind, self._state, self._message, self._index, self._dropped, self._last_drop,
                                self._reopens, round(fps, 2))

    @property
    def ended(self) -> bool:
        return self._state == "ended"

    # -- the thread ----------------------------------------------------------------------------------------
    def _set_state(self, state: str, message: str = "") -> None:
        with self._cond:
            self._state = state
            self._message = message
            self._cond.notify_all()

    def _drop(self, reason: str) -> None:
        with self._cond:
            self._dropped += 1
            self._last_drop = reason

    def _publish(self, img: np.ndarray, **extra: Any) -> None:
        with self._cond:
            if self.every_frame:
                while self._latest is not None and self._taken < self._latest.index and not self._stop.is_set():
                    self._cond.wait(0.1)
            f = Frame(image=img, index=self._index, captured_s=time.monotonic(), **extra)
            self._index += 1
            self._latest = f
            self._arrivals.append(f.captured_s)
            if len(self._arrivals) > 120:
                del self._arrivals[:60]
            self._cond.notify_all()

    def _run(self) -> None:
        delay = self.backoff_s[0]
        opened = False
        while not self._stop.is_set():
            if not opened:
                try:
                    self._open()
                    opened = True
                    delay = self.backoff_s[0]
                    self._set_state("live" if self.live else "playing", "")
                except Exception as exc:  # a device that is not there (yet)
                    if not self.live:
                        self._set_state("ended", f"cannot open: {exc}")
                        return
                    with self._cond:
                        self._reopens += 1
                    self._set_state("lost", f"cannot open ({exc}); retrying in {delay:.1f} s")
                    self._stop.wait(delay)
                    delay = min(delay * 2.0, self.backoff_s[1])
                    continue
            t0 = time.monotonic()
            try:
                ok, img = self._read()
            except Exception as exc:
                ok, img = False, None
                self._drop(f"read failed: {exc}")
            if not ok:
                self._close()
                opened = False
                if self.live:
                    with self._cond:
                        self._reopens += 1
                    self._set_state("lost", f"no frames; reopening in {delay:.1f} s")
                    self._stop.wait(delay)
                    delay = min(delay * 2.0, self.backoff_s[1])
                    continue
                if self.loop:
                    continue
                self._set_state("ended", "end of input")
                return
            reason = check_image(img, self._size if not self._allow_size_change() else None)
            if reason is not None and self._reason:
                reason, self._reason = self._reason, None
            if reason is not None:
                self._drop(reason)
            else:
                img = _to_bgr(img)
                if self._size is None:
                    self._size = (img.shape[1], img.shape[0])
                self._publish(img, **self._extra())
            if self.fps_limit:
                wait = 1.0 / self.fps_limit - (time.monotonic() - t0)
                if wait > 0:
                    self._stop.wait(wait)

    def _allow_size_change(self) -> bool:
        return False


class _CaptureSource(FrameSource):
    """A source read through cv2.VideoCapture (camera, stream, video file): open, read and release in one place."""

    _cap: Any = None

    def _capture(self, device: int | str, missing: str) -> Any:
        import cv2

        cap = cv2.VideoCapture(device)
        if not cap.isOpened():
            cap.release()
            raise OSError(missing)
        return cap

    def _read(self) -> tuple[bool, Any]:
        ok, img = self._cap.read()
        return (bool(ok), img if ok else None)

    def _close(self) -> None:
        if self._cap is not None:
            self._cap.release()
            self._cap = None


class CameraSource(_CaptureSource):
    kind = "camera"
    live = True
    health_name = "live"

    def __init__(self, index: int, size: tuple[int, int] | None = None, **kw: Any):
        super().__init__(**kw)
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise InputError(f"camera index must be a whole number >= 0, got {index!r}")
        self.index = index
        self.size = size
        self._cap = None

    def _device(self) -> tuple[int | str, str]:
        """What cv2.VideoCapture opens, and how to say it is not there."""
        return self.index, f"camera {self.index} is not available"

    def _open(self) -> None:
        import cv2

        cap = self._capture(*self._device())
        if self.size:
            cap.set(cv2.CAP_PROP_FRAME_WIDTH, self.size[0])
            cap.set(cv2.CAP_PROP_FRAME_HEIGHT, self.size[1])
        cap.set(cv2.CAP_PROP_BUFFERSIZE, 1)
        self._cap = cap


class UrlSource(CameraSource):
    kind = "url"

    def __init__(self, url: str, **kw: Any):
        FrameSource.__init__(self, **kw)
        if not isinstance(url, str) or "://" not in url:
            raise InputError(f"stream URL must look like scheme://host/path, got {url!r}")
        self.url = url
        self.size = None
        self._cap = None

    def _device(self) -> tuple[int | str, str]:
        return self.url, "stream does not answer"


class VideoSource(_CaptureSource):
    kind = "video"

    def __init__(self, path: str | Path, realtime: bool = True, **kw: Any):
        super().__init__(**kw)
        self.path = Path(path)
        if not self.path.is_file():
            raise InputError(f"video '{self.path}': no such file")
        self.realtime = realtime
        self._cap = None

    def _open(self) -> None:
        import cv2

        cap = self._capture(str(self.path), f"cannot decode '{self.path}'")
        if self.realtime and not self.fps_limit and not self.every_frame:
            fps = cap.get(cv2.CAP_PROP_FPS)
            self.fps_limit = fps if fps and 1 <= fps <= 240 else 30.0
        self._cap = cap


def open_video_checked(path: str | Path) -> None:
    """Raise InputError unless `path` is a video OpenCV can decode at least one frame of."""
    import cv2

    p = Path(path)
    if not p.is_file():
        raise InputError(f"video '{p}': no such file")
    cap = cv2.VideoCapture(str(p))
    try:
        ok, img = cap.read() if cap.isOpened() else (False, None)
    finally:
        cap.release()
    if not ok or check_image(img) is not None:
        raise InputError(f"video '{p}': cannot decode it (not a video, or corrupt)")


class ImageFolderSource(FrameSource):
    """Frames from the images of a folder in name order (or an explicit list of files)."""

    kind = "images"

    def __init__(self, folder: str | Path | None = None, files: list[str | Path] | None = None, **kw: Any):
        super().__init__(**kw)
        if files is None:
            if folder is None:
                raise InputError("image folder: give a folder or a list of files")
            p = Path(folder)
            if not p.is_dir():
                raise InputError(f"image folder '{p}': no such folder")
            files = sorted(f for f in p.iterdir() if f.suffix.lower() in IMAGE_SUFFIXES)
            if not files:
                raise InputError(f"image folder '{p}': no images ({', '.join(IMAGE_SUFFIXES)})")
        self.files = [Path(f) for f in files]
        self._pos = 0
        self.names: list[str] = []

    def _open(self) -> None:
        self._pos = 0

    def _read(self) -> tuple[bool, Any]:
        import cv2

        if self._pos >= len(self.files):
            return False, None
        f = self.files[self._pos]
        self._pos += 1
        img = cv2.imread(str(f), cv2.IMREAD_COLOR)
        if img is None:
            self._reason = f"'{f.name}': not a readable image"
            return True, None
        self.names.append(f.name)
        return True, img

    def _allow_size_change(self) -> bool:
        return True  # a folder may mix sizes; the calibration check names the bad one


class DemoSource(FrameSource):
    """The synthetic demo clip (`vision.synth.sequence.demo_sequence`), looped, at `fps`."""

    kind = "demo"
    health_name = "demo"

    def __init__(self, seed: int | None = None, fps: float | None = 8.0, **kw: Any):
        kw.setdefault("loop", True)
        super().__init__(fps=fps, **kw)
        self.seed = seed
        self._seq = None
        self._pos = 0
        self._item_extra: dict = {}

    def _open(self) -> None:
        if self._seq is None:
            try:
                from vision.synth.sequence import demo_sequence
            except ImportError as exc:
                raise OSError(f"the synthetic demo is not available ({exc})") from None
            self._seq = demo_sequence() if self.seed is None else demo_sequence(self.seed)
        self._pos = 0

    def _read(self) -> tuple[bool, Any]:
        seq = self._seq
        n = len(seq)
        if self._pos >= n:
            return False, None
        frame, truth, stable = seq[self._pos]
        self._pos += 1
        self._item_extra = {"truth": truth, "stable_truth": bool(stable)}
        return True, frame

    def _extra(self) -> dict:
        return dict(self._item_extra)


def open_source(*, camera: int | None = None, video: str | None = None, url: str | None = None,
                images: str | None = None, demo: bool = False, **kw: Any) -> FrameSource:
    """One source from the command line's mutually exclusive choices (InputError when none or several)."""
    given = [k for k, v in (("camera", camera), ("video", video), ("url", url), ("images", images))
             if v is not None] + (["demo"] if demo else [])
    if len(given) != 1:
        raise InputError(f"choose exactly one frame source (camera, video, url, images, demo); got {given or 'none'}")
    if camera is not None:
        return CameraSource(camera, **kw)
    if video is not None:
        return VideoSource(video, **kw)  # played at its own frame rate unless every_frame
    if url is not None:
        return UrlSource(url, **kw)
    if images is not None:
        if not kw.get("every_frame"):
            kw.setdefault("fps", 10.0)
        return ImageFolderSource(images, **kw)
    return DemoSource(**kw)


class CallableSource(FrameSource):
    """Frames from a Python callable (tests, embedding): returns an image, None (dropped) or raises StopIteration."""

    kind = "callable"

    def __init__(self, produce: Callable[[], Any], live: bool = False, **kw: Any):
        super().__init__(**kw)
        self._produce = produce
        self.live = live
        self.health_name = "live" if live else "file"

    def _open(self) -> None:
        pass

    def _read(self) -> tuple[bool, Any]:
        try:
            return True, self._produce()
        except StopIteration:
            return False, None
