"""The scene-file and demo feeds: the LiveTable duck type, versions, busy, reloads, waiting."""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import replace

import numpy as np
import pytest

from tablesight.errors import InputError
from tablesight.scene import load_scene
from webui.feeds import DemoFeed, SceneFileFeed, health_json

SKIRMISH = "tests/webui/scene_webui_skirmish.json"


def _touch_later(path):
    st = path.stat()
    os.utime(path, (st.st_atime, st.st_mtime + 5))


def test_scene_file_feed_serves_the_file(scene_path):
    feed = SceneFileFeed(scene_path)
    st = feed.state()
    assert st.version == 1 and not st.busy and st.frame_jpeg is None
    assert st.health.source == "file"
    assert st.scene == load_scene(scene_path)


def test_scene_file_feed_reloads_a_change_and_keeps_the_last_good_scene(scene_path):
    feed = SceneFileFeed(scene_path)
    assert feed.reload_if_changed() is False
    doc = json.loads(scene_path.read_text())
    doc["disks"][0]["x_mm"] = 111.0
    scene_path.write_text(json.dumps(doc))
    _touch_later(scene_path)
    assert feed.reload_if_changed() is True
    assert feed.state().version == 2 and feed.state().scene.disk("d1").x_mm == 111.0
    scene_path.write_text('{"format": "tablesight.scene/1", "disks": [{"id": "x"}]}')
    _touch_later(scene_path)
    assert feed.reload_if_changed() is False
    st = feed.state()
    assert st.version == 2 and st.scene.disk("d1").x_mm == 111.0
    assert "keeping the last good scene" in st.health.message and "x_mm" in st.health.message


def test_scene_file_feed_refuses_a_bad_file_with_one_line(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text("{nope")
    with pytest.raises(InputError, match="malformed JSON"):
        SceneFileFeed(p)
    with pytest.raises(InputError, match="no such file"):
        SceneFileFeed(tmp_path / "missing.json")


def test_wait_for_change_returns_at_once_on_a_new_version(scene_path):
    feed = SceneFileFeed(scene_path, poll_s=0.05)
    feed.start()
    try:
        got = []
        t = threading.Thread(target=lambda: got.append(feed.wait_for_change(1, 5.0)))
        t.start()
        time.sleep(0.1)
        doc = json.loads(scene_path.read_text())
        doc["disks"] = doc["disks"][:2]
        scene_path.write_text(json.dumps(doc))
        _touch_later(scene_path)
        t0 = time.monotonic()
        t.join(5.0)
        assert got and got[0].version == 2 and len(got[0].scene.disks) == 2
        assert time.monotonic() - t0 < 2.0
        # Nothing new: it waits out its timeout and returns the same state.
        assert feed.wait_for_change(2, 0.05).version == 2
    finally:
        feed.stop()


def _sequence(scenes_and_stable):
    def factory(seed):
        return [(np.full((20, 30, 3), 40 * i % 255, np.uint8), sc, stable) for i, (sc, stable) in enumerate(scenes_and_stable)]
    return factory


def test_demo_feed_commits_stable_changes_and_holds_while_busy():
    a = load_scene(SKIRMISH)
    b = a.with_disks([replace(d, x_mm=d.x_mm + 10) if d.id == "d5" else d for d in a.disks])
    feed = DemoFeed(item_s=0.01, sequence_factory=_sequence([(a, True), (a, False), (b, False), (b, True), (b, True)]))
    st = feed.state()
    assert st.version == 1 and st.scene == a and not st.busy and st.frame_jpeg[:2] == b"\xff\xd8"
    assert st.health.source == "demo"
    states = [feed.advance() for _ in range(5)]
    assert [s.version for s in states] == [1, 1, 1, 2, 2]
    assert [s.busy for s in states] == [False, True, True, False, False]
    assert states[2].scene == a  # held while hands are over the table
    assert states[3].scene == b
    # It loops: back to scene a, a new version again.
    states = [feed.advance() for _ in range(2)]
    assert states[0].scene == a and states[0].version == 3


def test_demo_feed_thread_plays_and_stops():
    a = load_scene(SKIRMISH)
    b = a.with_disks(a.disks[:3])
    feed = DemoFeed(item_s=0.02, sequence_factory=_sequence([(a, True), (b, True)]))
    feed.start()
    try:
        st = feed.wait_for_change(1, 3.0)
        assert st.version >= 2
    finally:
        feed.stop()


@pytest.mark.parametrize("items,reason", [
    ([], "no stable moment"),
])
def test_demo_feed_refuses_a_useless_sequence(items, reason):
    with pytest.raises(InputError, match=reason):
        DemoFeed(sequence_factory=_sequence(items))


def test_demo_feed_item_time_must_be_positive():
    with pytest.raises(InputError):
        DemoFeed(item_s=0, sequence_factory=_sequence([(load_scene(SKIRMISH), True)]))


def test_health_json_rounds_and_keeps_nulls(scene_path):
    h = replace(SceneFileFeed(scene_path).state().health, fps=29.9712, latency_ms=12.345, calibration_error_mm=0.4567)
    doc = health_json(h)
    assert doc["fps"] == 30.0 and doc["latency_ms"] == 12.3 and doc["calibration_error_mm"] == 0.46
    assert doc["calibration_age_s"] is None


def test_a_touched_scene_file_with_the_same_content_is_not_a_new_version(scene_path):
    """Regression: a file rewritten or touched without a change bumped the version (the page redrew for nothing,
    and a waiter could see two versions for one edit)."""
    feed = SceneFileFeed(scene_path)
    before = feed.state().version
    _touch_later(scene_path)
    assert feed.reload_if_changed() is False
    assert feed.state().version == before
