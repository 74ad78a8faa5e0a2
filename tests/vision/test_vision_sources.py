"""Frame sources: image folders, videos, newest-frame-only capture, drops with reasons, reopen with backoff."""

from __future__ import annotations

import threading
import time

import cv2
import numpy as np
import pytest

from tablesight.errors import InputError
from vision.sources import (CallableSource, ImageFolderSource, VideoSource, check_image, open_source,
                            open_video_checked)


def _img(v: int, size=(64, 48)) -> np.ndarray:
    img = np.full((size[1], size[0], 3), v, np.uint8)
    img[0, :8] = (0, 0, 0)  # not one flat colour (survives video compression)
    return img


def test_image_folder_plays_in_name_order_and_drops_corrupt_files(tmp_path):
    for i in (2, 0, 1):
        cv2.imwrite(str(tmp_path / f"f{i}.png"), _img(10 * i + 5))
    (tmp_path / "f15.png").write_bytes(b"not a png")
    (tmp_path / "notes.txt").write_text("ignored")
    src = ImageFolderSource(tmp_path, every_frame=True)
    with src:
        frames = list(src.frames(timeout_s=2.0))
    assert [int(f.image[5, 5, 0]) for f in frames] == [5, 15, 25]
    st = src.status()
    assert st.state == "ended" and st.dropped == 1 and "f15.png" in st.last_drop_reason


def test_missing_folder_and_video_are_input_errors(tmp_path):
    with pytest.raises(InputError):
        ImageFolderSource(tmp_path / "nope")
    with pytest.raises(InputError):
        VideoSource(tmp_path / "nope.mp4")
    (tmp_path / "bad.avi").write_bytes(b"garbage")
    with pytest.raises(InputError, match="cannot decode"):
        open_video_checked(tmp_path / "bad.avi")


def test_video_file_is_read_to_its_end(tmp_path):
    path = tmp_path / "clip.avi"
    w = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 10, (64, 48))
    assert w.isOpened()
    for i in range(6):
        w.write(_img(40 * i + 10))
    w.release()
    src = VideoSource(path, every_frame=True)
    with src:
        frames = list(src.frames(timeout_s=2.0))
    assert len(frames) == 6
    assert src.status().state == "ended"


def test_capture_keeps_only_the_newest_frame():
    counter = iter(range(10_000))

    def produce():
        i = next(counter)
        if i >= 200:
            raise StopIteration
        return _img(i % 250)

    src = CallableSource(produce)
    src.start()
    time.sleep(0.3)  # the consumer is slow: frames pile up at the source
    f = src.read(after=-1, timeout_s=1.0)
    src.stop()
    assert f is not None and f.index > 50  # not the first frame: the backlog was dropped


@pytest.mark.parametrize("img, reason", [
    (None, "no image"),
    (np.zeros((0, 3, 3), np.uint8), "empty"),
    (np.zeros((10, 10, 3), np.float32), "pixel type"),
    (np.zeros((20, 20, 3), np.uint8), "blank"),
])
def test_bad_frames_have_a_reason(img, reason):
    assert reason in check_image(img)


def test_size_change_is_dropped_with_reason():
    frames = [_img(10), _img(20, size=(32, 32)), _img(30)]

    def produce():
        if not frames:
            raise StopIteration
        return frames.pop(0)

    src = CallableSource(produce, every_frame=True)
    with src:
        got = list(src.frames(timeout_s=2.0))
    assert len(got) == 2
    assert "changed" in src.status().last_drop_reason


def test_lost_camera_is_reported_and_reopened_with_backoff():
    state = {"calls": 0, "opens": 0}
    lock = threading.Lock()

    class Flaky(CallableSource):
        def _open(self):
            with lock:
                state["opens"] += 1

    def produce():
        with lock:
            state["calls"] += 1
            n = state["calls"]
        if 3 <= n <= 5:
            raise StopIteration  # the device stops answering
        return _img(n % 200)

    src = Flaky(produce, live=True, backoff_s=(0.05, 0.2))
    seen_lost = False
    src.start()
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        st = src.status()
        seen_lost |= st.state == "lost"
        if seen_lost and st.state == "live" and st.frames > 4:
            break
        time.sleep(0.01)
    src.stop()
    assert seen_lost
    assert state["opens"] >= 3
    assert src.status().reopen_attempts >= 2


def test_open_source_needs_exactly_one_choice(tmp_path):
    with pytest.raises(InputError):
        open_source()
    with pytest.raises(InputError):
        open_source(camera=0, demo=True)


def test_demo_source_gives_frames_with_their_truth():
    from vision.sources import DemoSource

    src = DemoSource(fps=None)
    with src:
        f = src.read(-1, timeout_s=60.0)
    assert f is not None and f.image.ndim == 3 and f.truth is not None and f.stable_truth in (True, False)
    assert src.status().kind == "demo"
