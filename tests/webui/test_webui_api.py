"""The JSON API (spec/interfaces.md §5 and docs/webui.md) through Flask's test client, bad input included."""

from __future__ import annotations

import json
import re

import pytest


def test_scene_is_the_contract_format(client):
    r = client.get("/api/scene")
    assert r.status_code == 200
    doc = r.get_json()
    assert doc["format"] == "tablesight.scene/1"
    assert {d["id"] for d in doc["disks"]} == {"d1", "d2", "d3", "d4", "d5", "d6", "d7"}
    assert r.headers["Cache-Control"] == "no-store"


def test_report_is_the_rules_report_of_that_scene(client):
    from rules.diskwars.report import build_report
    from tablesight.scene import Scene

    scene = Scene.from_json(client.get("/api/scene").get_json())
    doc = client.get("/api/report").get_json()
    assert doc == json.loads(json.dumps(build_report(scene).to_json()))
    assert doc["format"] == "tablesight.report/1"
    # The skirmish fixture: the orc (d2) lies on the empire swordsmen (d1) and under another empire disk (d3).
    pins = {(p["pinner"], p["pinned"]) for p in doc["pins"]}
    assert ("d2", "d1") in pins and ("d3", "d2") in pins
    assert "d2" in doc["harried"]


def test_health_has_the_contract_fields(client):
    doc = client.get("/api/health").get_json()
    for k in ("source", "fps", "latency_ms", "calibration_age_s", "calibration_error_mm", "message"):
        assert k in doc
    assert doc["source"] == "file"
    assert doc["version"] == 1 and doc["busy"] is False


def test_view_bundles_scene_report_and_health(client):
    doc = client.get("/api/view").get_json()
    assert doc["key"] == "1.0"
    assert doc["scene"]["format"] == "tablesight.scene/1"
    assert doc["report"]["format"] == "tablesight.report/1"
    assert doc["has_frame"] is False
    assert doc["frame_geometry"] == {"origin_mm": [-40.0, -40.0], "size_mm": [980.0, 980.0]}


def test_disk_details_come_from_the_report(client):
    doc = client.get("/api/disk/d1").get_json()
    assert doc["disk"]["id"] == "d1"
    others = {o["id"]: o for o in doc["others"]}
    assert set(others) == {"d2", "d3", "d4", "d5", "d6", "d7"}
    report = client.get("/api/report").get_json()
    pair = next(p for p in report["pairs"] if {p["a"], p["b"]} == {"d1", "d5"})
    assert others["d5"]["band"] == pair["band"]
    assert others["d5"]["distance_mm"] == pytest.approx(pair["distance_mm"], abs=0.01)
    # Sorted nearest first, and the witness line starts on the asked disk.
    dists = [o["distance_mm"] for o in doc["others"]]
    assert dists == sorted(dists)
    for o in doc["others"]:
        if o["los"]:
            (x, y), _ = o["los_line_mm"]
            assert ((x - 420) ** 2 + (y - 300) ** 2) ** 0.5 <= 32.0 + 0.01
    assert doc["pinned_by"] == ["d2"]
    assert doc["deviation"] is not None and doc["deviation_error"] is None
    assert doc["deviation"][0]["disk"] == "d2"  # the disk engaged with it is always nearest


def test_disk_on_terrain_is_reported(client):
    # d1 does not touch the forest; a disk placed inside it would (checked through a correction-free scene edit).
    assert client.get("/api/disk/d1").get_json()["terrain_under"] == []


@pytest.mark.parametrize("path,status", [
    ("/api/disk/nope", 404),
    ("/api/frame.jpg", 404),
    ("/api/nothing", 404),
    ("/api/calibration/frame.jpg", 404),
])
def test_missing_things_are_404_with_a_reason(client, path, status):
    r = client.get(path)
    assert r.status_code == status
    assert r.get_json()["error"]


def test_wrong_method_is_405_json(client):
    r = client.post("/api/scene", {})
    assert r.status_code == 405
    assert "not allowed" in r.get_json()["error"]


def test_pages_are_served_with_local_assets_only(client):
    for path in ("/", "/calibration"):
        r = client.get(path)
        assert r.status_code == 200
        html = r.get_data(as_text=True)
        assert not re.search(r'(src|href)="(https?:)?//', html)  # no CDN: every asset is served here
    for asset in ("/static/table.js", "/static/style.css", "/static/calibration.js", "/static/icon.svg"):
        assert client.get(asset).status_code == 200


def test_events_stream_sends_the_state_at_once(client):
    client.app.config["TABLESIGHT_SSE_MAX_S"] = 0.0
    r = client.get("/api/events")
    assert r.mimetype == "text/event-stream"
    text = r.get_data(as_text=True)
    first = text.split("\n\n")[0]
    assert first.startswith("event: state\ndata: ")
    ev = json.loads(first.split("data: ", 1)[1])
    assert ev["key"] == "1.0" and ev["busy"] is False and ev["health"]["source"] == "file"


def test_events_wake_on_a_correction(client):
    comp = client.comp
    stream = comp.events(keepalive_s=5.0)
    first = next(stream)
    assert '"key": "1.0"' in first
    assert client.post("/api/corrections/owner", {"disk": "d6", "player": "orcs"}).status_code == 200
    second = next(stream)  # returns as soon as the hub publishes, long before the keepalive
    assert '"key": "1.1"' in second


def test_scene_file_change_reaches_the_view(client, scene_path):
    doc = json.loads(scene_path.read_text())
    doc["disks"] = doc["disks"][:3]
    scene_path.write_text(json.dumps(doc))
    import os
    st = scene_path.stat()
    os.utime(scene_path, (st.st_atime, st.st_mtime + 5))
    assert client.comp.feed.reload_if_changed()
    v = client.get("/api/view").get_json()
    assert v["key"] == "2.0" and len(v["scene"]["disks"]) == 3


def test_calibration_is_not_faked_for_a_scene_file(client):
    doc = client.get("/api/calibration").get_json()
    assert doc["available"] is False
    assert "not available for this source" in doc["reason"]
    r = client.post("/api/calibration/recalibrate", {})
    assert r.status_code == 409
    assert "not available" in r.get_json()["error"]


def test_a_rules_fault_leaves_the_page_working(tmp_path):
    def broken(scene):
        raise ZeroDivisionError("boom")

    from webui.app import create_app
    from webui.feeds import SceneFileFeed

    app = create_app(SceneFileFeed("tests/webui/scene_webui_skirmish.json"), tmp_path, report_builder=broken,
                     start=False)
    c = app.test_client()
    h = {"Host": "127.0.0.1"}
    v = c.get("/api/view", headers=h).get_json()
    assert v["report"] is None and "ZeroDivisionError" in v["report_error"]
    assert len(v["scene"]["disks"]) == 7
    r = c.get("/api/report", headers=h)
    assert r.status_code == 503 and "rules failed" in r.get_json()["error"]
    assert c.get("/api/disk/d1", headers=h).status_code == 200


def test_frame_is_served_once_per_scene_version(make_client):
    import numpy as np

    from tablesight.scene import load_scene
    from webui.feeds import DemoFeed

    scene = load_scene("tests/webui/scene_webui_skirmish.json")
    frame = np.zeros((40, 60, 3), np.uint8)
    c = make_client(feed=DemoFeed(item_s=60, sequence_factory=lambda seed: [(frame, scene, True)]))
    r = c.get("/api/frame.jpg")
    assert r.status_code == 200 and r.mimetype == "image/jpeg" and r.data[:2] == b"\xff\xd8"
    etag = r.headers["ETag"]
    assert c.get("/api/frame.jpg", headers={"If-None-Match": etag}).status_code == 304
    assert c.get("/api/view").get_json()["has_frame"] is True


def test_large_answers_are_compressed_for_clients_that_ask(client):
    import gzip

    plain = client.get("/api/view")
    assert "Content-Encoding" not in plain.headers
    packed = client.get("/api/view", headers={"Accept-Encoding": "gzip, deflate"})
    if len(plain.data) >= 8192:
        assert packed.headers["Content-Encoding"] == "gzip"
        assert json.loads(gzip.decompress(packed.data)) == plain.get_json()
    small = client.get("/api/health", headers={"Accept-Encoding": "gzip"})
    assert "Content-Encoding" not in small.headers


def test_events_tell_the_page_when_hands_are_over_the_table(make_client):
    from tablesight.scene import load_scene
    from webui.feeds import DemoFeed

    scene = load_scene("tests/webui/scene_webui_skirmish.json")
    feed = DemoFeed(item_s=60, sequence_factory=lambda seed: [(None, scene, True), (None, scene, False)])
    c = make_client(feed=feed)
    stream = c.comp.events(keepalive_s=5.0)
    assert '"busy": false' in next(stream)
    feed.advance()  # the first, stable item again
    feed.advance()  # hands over the table: same version, busy
    assert feed.state().busy and feed.state().version == 1
    ev = next(stream)  # the hub notices within its poll of the feed, well before the keepalive
    assert '"busy": true' in ev and '"key": "1.0"' in ev
