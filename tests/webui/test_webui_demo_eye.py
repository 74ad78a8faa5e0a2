"""The demo table seen through the eye: synthetic frames detected by the live pipeline, the truth beside them."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tablesight.errors import InputError
from tablesight.scene import Disk, Scene, load_scene
from tablesight.cli import build_parser
from vision.live import Health, LiveState
from vision.scene_match import match
from vision.synth.sequence import SequenceStep
from webui import commands
from webui.demo_eye import ClipFrameSource
from webui.demo_view import truth_json

SKIRMISH = Path(__file__).parent / "scene_webui_skirmish.json"


class FakeClip:
    """A clip of hand-made scenes: (scene, stable) per step; counts the frames it renders."""

    fps = 8.0
    camera = None

    def __init__(self, items):
        self.items = items
        self.steps = [SequenceStep(None, stable, "still" if stable else "flip") for _, stable in items]
        self.rendered = []

    def __len__(self):
        return len(self.items)

    def truth(self, i):
        return self.items[i][0]

    def __getitem__(self, i):
        self.rendered.append(i)
        return np.full((8, 8, 3), i, np.uint8), self.items[i][0], self.items[i][1]


def test_the_clip_is_rendered_only_when_the_still_table_changes():
    a = Scene(disks=(Disk("d1", 100, 100, 22),))
    b = Scene(disks=(Disk("d1", 144, 100, 22),))
    clip = FakeClip([(a, True), (a, True), (a, False), (b, False), (b, True), (b, True)])
    src = ClipFrameSource(clip, item_s=0.1)
    assert clip.rendered == [0]  # the first still table, shown from the start
    first = src.image
    frames = [src.step() for _ in range(6)]
    assert clip.rendered == [0, 4]  # a hand over the table is not rendered: the last frame stays on show
    assert all(f is first for f in frames[:4]) and frames[4] is frames[5] is not first
    assert src.truth_of(frames[4]) == b and src.truth_of(first) == a
    assert src.truth_of(np.zeros((8, 8, 3), np.uint8)) is None
    # looping: back to the first table, rendered again (a real clip keeps its rendered frames)
    src.step()
    assert clip.rendered == [0, 4, 0] and src.truth == a


def test_a_clip_without_a_still_moment_or_a_bad_pace_is_refused():
    a = Scene(disks=(Disk("d1", 100, 100, 22),))
    with pytest.raises(InputError, match="no stable moment"):
        ClipFrameSource(FakeClip([(a, False)]), item_s=0.1)
    with pytest.raises(InputError, match="must be > 0"):
        ClipFrameSource(FakeClip([(a, True)]), item_s=0)


def test_demo_option_picks_the_eye_by_default_and_the_truth_on_request(monkeypatch, tmp_path):
    parse = lambda *a: build_parser().parse_args(["serve", *a])  # noqa: E731
    assert parse("--demo").demo == "eye" and parse("--demo", "truth").demo == "truth" and parse().demo is None
    made = []
    monkeypatch.setattr("webui.demo_eye.DemoEyeFeed", lambda: made.append("eye") or "eye feed")
    monkeypatch.setattr("webui.feeds.DemoFeed", lambda: made.append("truth") or "truth feed")
    monkeypatch.setattr(commands, "probe_camera", lambda *a, **k: False)
    assert commands.make_feed(parse(), tmp_path)[0] == "eye feed"  # no camera: the demo through the eye
    assert commands.make_feed(parse("--demo"), tmp_path)[0] == "eye feed"
    assert commands.make_feed(parse("--demo", "truth"), tmp_path)[0] == "truth feed"
    assert made == ["eye", "eye", "truth"]
    with pytest.raises(InputError, match="--demo"):
        commands.demo_feed("dream")


class TruthFeed:
    """A still feed that knows the truth of its scene (what the API needs of the demo feed)."""

    kind = "demo"

    def __init__(self, detected, truth):
        self._state = LiveState(3, detected, False, None, Health("demo", 4.0, 10.0, None, None, ""))
        self.truth = truth

    def start(self): pass
    def stop(self): pass
    def state(self): return self._state
    def wait_for_change(self, after_version, timeout_s): return self._state
    def truth_for(self, version): return self.truth if version >= 1 else None


def test_the_api_gives_the_truth_and_the_disagreements(make_client):
    truth = load_scene(SKIRMISH)
    first = truth.disks[0]
    # the camera: ids of its own, the first disk missed and one phantom far from every disk
    det = [replace(d, id=f"t{i}") for i, d in enumerate(truth.disks[1:])]
    det.append(replace(first, id="t99", x_mm=5.0, y_mm=5.0))
    feed = TruthFeed(replace(truth, disks=tuple(det)), truth)
    c = make_client(feed=feed)
    doc = c.get("/api/demo/truth").get_json()
    assert doc["version"] == 3 and len(doc["truth"]["disks"]) == len(truth.disks)
    assert doc["summary"] == {"missed": 1, "phantom": 1, "order": 0}
    assert [(d["kind"], d["truth_ids"], d["detected_ids"]) for d in doc["disagreements"]] == [
        ("missed", [first.id], []), ("phantom", [], ["t99"])]
    assert truth_json(feed) == doc


def test_the_api_says_when_a_source_has_no_truth(client):
    r = client.get("/api/demo/truth")
    assert r.status_code == 404 and "only the demo table" in r.get_json()["error"]


# -- the real demo: rendered, calibrated from its markers, detected ------------------------------------------------


@pytest.fixture(scope="module")
def eye():
    from webui.demo_eye import DemoEyeFeed

    feed = DemoEyeFeed()
    yield feed
    feed.stop()


@pytest.mark.slow
def test_the_demo_feed_serves_detected_scenes_not_the_truth(eye):
    st = eye.state()
    truth = eye.truth_for(st.version)
    assert st.version >= 1 and st.health.source == "demo" and st.frame_jpeg[:2] == b"\xff\xd8"
    assert "printed corner markers" in eye.calibration_how
    # the calibration page shows that calibration on the rendered frame, as for a camera
    from webui.calibration_view import calibration_json

    cal = calibration_json(eye)
    assert cal["available"] and cal["frame_url"] and not cal["can_recalibrate"] and cal["error_mm"] < 2.0
    assert truth is not None and st.scene.disks
    # the players the table was set up with; the disks as the detector measured them (it gives confidences)
    assert st.scene != truth and all(d.confidence is not None for d in st.scene.disks)
    assert [p.id for p in st.scene.players] == [p.id for p in truth.players]
    m = match(truth, st.scene)
    assert len(m) >= len(truth.disks) - 2
    tdisks = {t.id: t for t in truth.disks}
    errors = sorted(math.hypot(d.x_mm - tdisks[m[d.id]].x_mm, d.y_mm - tdisks[m[d.id]].y_mm)
                    for d in st.scene.disks if d.id in m)
    # measured, so close but never exactly the truth
    assert 0.0 < errors[len(errors) // 2] < 3.0 and all(e > 0 for e in errors)


@pytest.mark.slow
def test_the_demo_detects_each_move_once_and_keeps_the_truth_of_each_version(eye):
    seq = eye.sequence
    v0, renders0 = eye.state().version, eye.source.renders
    now = 1000.0
    committed = []
    for _ in range(len(seq) + 6):  # the whole clip, and back to its first table
        if eye.step(now):
            committed.append(eye.state().version)
        now += eye.source.item_s
    changes = eye.source.renders - renders0
    assert changes >= 3  # the flip, the casualty and the loop back at least
    assert len(committed) == changes and committed == list(range(v0 + 1, v0 + 1 + changes))
    for v in committed:
        assert eye.truth_for(v) is not None
    # the last table is the first one again: as many disks as at the start, and the truth of that frame
    assert eye.truth_for(committed[-1]) == eye.truth_for(v0)
    doc = truth_json(eye)
    assert doc["version"] == committed[-1] and set(doc["summary"]) == {"missed", "phantom", "order"}


@pytest.mark.slow
def test_the_demo_page_routes_serve_the_eye(eye, tmp_path):
    from webui.app import create_app

    app = create_app(eye, tmp_path / "data", start=False)  # the feed's threads stay off: the other tests step it
    http = app.test_client()

    def get(path):
        return http.get(path, headers={"Host": "127.0.0.1:8650"})

    view = get("/api/view").get_json()
    truth = get("/api/demo/truth").get_json()
    assert view["health"]["source"] == "demo" and view["has_frame"] and view["scene"]["disks"]
    assert truth["version"] == view["version"] and truth["truth"]["disks"]
    r = get("/api/calibration/frame.jpg")  # the rendered frame with its markers as calibration saw them
    assert r.status_code == 200 and r.data[:2] == b"\xff\xd8"
