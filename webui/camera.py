"""The camera feed the web companion serves: `vision.live.LiveTable` plus what the calibration page needs.

`LiveTable` turns frames into stable scenes. Around it this adds, for the calibration page: the newest raw frame,
the drift monitor (`calibration.drift.DriftMonitor`: the corner markers re-detected every few seconds while
serving, so a bumped camera is noticed) and recalibration from the current frame. A new calibration (from the
button or from the drift monitor) is saved as `table.json` in the data directory, where the next
`tablesight serve` finds it; the running pipeline takes it at once when it offers `set_calibration`.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from tablesight.errors import InputError

log = logging.getLogger(__name__)


class CameraFeed:
    """A LiveTable (the feed duck type) with `latest_frame()`, `drift`, `recalibrate()` and `calibration`."""

    kind = "live"

    def __init__(self, live: Any, data_dir: str | Path, drift_settings: Any = None) -> None:
        from calibration.drift import DriftMonitor

        self.live = live
        self.data_dir = Path(data_dir)
        self.drift = DriftMonitor(live.calibration, drift_settings, on_recalibrated=self._use)
        self.message = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the feed ------------------------------------------------------------------------------------------
    @property
    def calibration(self) -> Any:
        return self.live.calibration

    def start(self) -> None:
        self.live.start()
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._watch, name="calibration-drift", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
        self.live.stop()

    def state(self) -> Any:
        return self.live.state()

    def workers(self) -> dict[str, bool]:
        out = {}
        live_workers = getattr(self.live, "workers", None)
        if live_workers is not None:
            out.update(live_workers())
        if self._thread is not None:
            out["calibration drift check"] = self._thread.is_alive()
        return out

    def wait_for_change(self, after_version: int, timeout_s: float) -> Any:
        return self.live.wait_for_change(after_version, timeout_s)

    def apply_correction(self, correction: Any) -> Any:
        return self.live.apply_correction(correction)

    # -- calibration -------------------------------------------------------------------------------------------
    def latest_frame(self, timeout_s: float = 0.5) -> Any:
        """The newest raw camera frame (BGR), or None when the source has given none."""
        read = getattr(getattr(self.live, "source", None), "read", None)
        if read is None:
            return None
        frame = read(-1, timeout_s)
        return None if frame is None else frame.image

    def _watch(self) -> None:
        while not self._stop.wait(1.0):
            try:
                if self.drift.due():
                    frame = self.latest_frame(0.2)
                    if frame is not None:
                        self.drift.offer(frame)
            except Exception as exc:  # a failed check is shown, never fatal
                self.message = f"drift check failed: {exc}"
                log.info("drift check failed: %s", exc)

    def recalibrate(self) -> None:
        """Calibrate the table again from the current frame (the same lens intrinsics) and use it."""
        from calibration.table import calibrate_table

        frame = self.latest_frame()
        if frame is None:
            raise InputError("no camera frame to calibrate from")
        cal = calibrate_table(frame, intrinsics=getattr(self.calibration, "intrinsics", None),
                              layout=getattr(self.calibration, "layout", None))
        self._use(cal)

    def _use(self, calibration: Any) -> None:
        """A new calibration: saved in the data directory, and handed to the pipeline if it can take it."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        calibration.save(self.data_dir / "table.json")
        take = getattr(self.live, "set_calibration", None)
        if take is not None:
            take(calibration)
            self.message = "new calibration in use (saved as table.json in the data directory)"
        else:
            self.message = ("new calibration saved as table.json in the data directory: restart tablesight serve "
                            "(without --calibration) to use it")
