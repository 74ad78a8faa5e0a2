"""Setting up the table through the API: the armies by ring colour, one owner per army through the corrections,
unit names by first letters, and the table saved as a scene file that `serve --scene` reopens."""

from __future__ import annotations

import json

import pytest

from armies_scene import write_unknown_owner_scene
from tablesight.scene import Scene
from webui.corrections import Corrections
from webui.feeds import SceneFileFeed


@pytest.fixture
def unknown(make_client, tmp_path):
    path = tmp_path / "unknown.json"
    truth = write_unknown_owner_scene(path)
    return make_client(feed=SceneFileFeed(path)), truth


def owners(client):
    return {d["id"]: d["player"] for d in client.get("/api/scene").get_json()["disks"]}


def test_armies_group_the_disks_by_their_true_army(unknown):
    client, truth = unknown
    doc = client.get("/api/armies").get_json()
    assert doc["players"] == ["orcs", "empire"]  # by initiative
    groups = [sorted(a["disks"]) for a in doc["armies"]]
    assert groups == [sorted(d for d, p in truth.items() if p == "empire"),
                      sorted(d for d, p in truth.items() if p == "orcs"), ["d6"]]
    assert all(a["player"] is None and a["owners"] == [{"player": None, "count": a["count"]}] for a in doc["armies"])
    assert doc["no_colour"] == [] and doc["threshold_delta_e"] > 0 and doc["key"]
    assert doc["armies"][0]["colour"].startswith("#")


def test_one_request_per_army_writes_every_owner_through_the_corrections(unknown, data_dir):
    client, truth = unknown
    rev = client.get("/api/corrections").get_json()["revision"]
    for army in client.get("/api/armies").get_json()["armies"][:2]:
        player = truth[army["disks"][0]]
        r = client.post("/api/armies/owner", {"disks": army["disks"], "player": player})
        assert r.status_code == 200, r.get_json()
    assert owners(client) == truth  # d6 stays unknown: it was not named
    after = client.get("/api/armies").get_json()["armies"]
    assert sorted(a["player"] or "-" for a in after) == ["-", "empire", "orcs"]
    # stored as ordinary owner corrections, one revision per army, on disk
    stored = Corrections(data_dir).to_json()["disks"]
    assert {k: v["player"] for k, v in stored.items()} == {k: v for k, v in truth.items() if v}
    assert client.get("/api/corrections").get_json()["revision"] == rev + 2
    # the report sees the owners: the stack d1-d2-d3 now fights
    assert client.get("/api/report").get_json()["engagements"]
    # an army can be set back to unknown with one request too
    assert client.post("/api/armies/owner", {"disks": ["d1", "d3"], "player": None}).status_code == 200
    assert owners(client)["d1"] is None and owners(client)["d3"] is None


@pytest.mark.parametrize("body, reason", [
    ({"disks": ["d1"], "player": "dwarfs"}, "unknown player 'dwarfs'"),
    ({"disks": ["d1", "nope"], "player": "orcs"}, "disks[1]: no disk 'nope'"),
    ({"disks": ["d1", "d1"], "player": "orcs"}, "listed twice"),
    ({"disks": [], "player": "orcs"}, "disks: expected a list"),
    ({"disks": "d1", "player": "orcs"}, "disks: expected a list"),
    ({"disks": ["d1"]}, "missing field(s): player"),
    ({"disks": ["d1"], "player": "orcs", "colour": 3}, "unknown field(s) 'colour'"),
    ({"disks": ["d 1"], "player": "orcs"}, "disks[0]: expected an id"),
])
def test_a_bad_army_owner_request_is_400_naming_the_field_and_changes_nothing(unknown, body, reason):
    client, _ = unknown
    before = client.get("/api/corrections").get_json()
    r = client.post("/api/armies/owner", body)
    assert r.status_code == 400 and reason in r.get_json()["error"], r.get_json()
    assert client.get("/api/corrections").get_json() == before


def test_army_owners_reach_a_tracking_feed(make_client, tmp_path):
    path = tmp_path / "unknown.json"
    write_unknown_owner_scene(path)

    class Tracking(SceneFileFeed):
        def __init__(self, p):
            super().__init__(p)
            self.told = []

        def apply_correction(self, c):
            self.told.append((c.track_id, c.kind, c.value))

    feed = Tracking(path)
    client = make_client(feed=feed)
    assert client.post("/api/armies/owner", {"disks": ["d2", "d4"], "player": "orcs"}).status_code == 200
    assert feed.told == [("d2", "owner", "orcs"), ("d4", "owner", "orcs")]


def test_unit_names_by_their_first_letters(client):
    r = client.get("/api/units?prefix=orc%20b").get_json()
    assert r["units"][0]["key"] == "pena-de-guerreroz-orkoz" and r["units"][0]["matched"] == "Orc Boyz"
    assert len(client.get("/api/units?prefix=e&limit=2").get_json()["units"]) == 2
    assert client.get("/api/units?prefix=").get_json()["units"] == []
    for bad in ("/api/units?prefix=a&limit=0", "/api/units?prefix=a&limit=x", "/api/units?prefix=" + "x" * 65):
        r = client.get(bad)
        assert r.status_code == 400 and ("limit" in r.get_json()["error"] or "prefix" in r.get_json()["error"])


def test_the_saved_table_reopens_with_its_owners_and_units(unknown, make_client, tmp_path):
    client, truth = unknown
    client.post("/api/armies/owner", {"disks": ["d2", "d4", "d7"], "player": "orcs"})
    client.post("/api/corrections/unit", {"disk": "d7", "unit": "orc-boyz"})
    client.post("/api/corrections/on-top", {"upper": "d1", "lower": "d2"})
    r = client.get("/api/table/save")
    assert r.status_code == 200 and r.mimetype == "application/json"
    assert r.headers["Content-Disposition"].startswith('attachment; filename="table-')
    saved = tmp_path / "saved.scene.json"
    saved.write_bytes(r.data)
    doc = json.loads(r.data)
    assert all("corrected" not in d for d in doc["disks"])  # the page's marks are not part of the table
    # reopened by `serve --scene` on a fresh data directory: the same table, no corrections needed
    again = make_client(feed=SceneFileFeed(saved), data=tmp_path / "other-data")
    scene = Scene.from_json(again.get("/api/scene").get_json())
    before = Scene.from_json(client.get("/api/scene").get_json())
    assert {d.id: (d.player, d.unit, d.z) for d in scene.disks} == {d.id: (d.player, d.unit, d.z) for d in before.disks}
    assert scene.disk("d7").unit == "pena-de-guerreroz-orkoz" and scene.disk("d1").z > scene.disk("d2").z
    assert scene.disk("d2").extra["ring_bgr"] == before.disk("d2").extra["ring_bgr"]
    assert again.get("/api/report").get_json() == client.get("/api/report").get_json()
