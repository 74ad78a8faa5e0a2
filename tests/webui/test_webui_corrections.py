"""Corrections: each POST route, its validation (400 with a reason, nothing changed), persistence by track id."""

from __future__ import annotations

import importlib

import json

import pytest

from tablesight.errors import InputError
from tablesight.scene import load_scene
from webui.corrections import Corrections, keywords_for_name


def disk(client, disk_id):
    return next((d for d in client.get("/api/scene").get_json()["disks"] if d["id"] == disk_id), None)


def test_owner_correction_changes_the_scene_and_the_report(client):
    assert client.get("/api/report").get_json()["engagements"]  # d6 has no owner and fights nobody yet
    r = client.post("/api/corrections/owner", {"disk": "d6", "player": "orcs"})
    assert r.status_code == 200, r.get_json()
    d6 = disk(client, "d6")
    assert d6["player"] == "orcs" and d6["corrected"] == ["player"]
    assert client.post("/api/corrections/owner", {"disk": "d6", "player": None}).status_code == 200
    assert disk(client, "d6")["player"] is None


def test_unit_correction(client):
    assert client.post("/api/corrections/unit", {"disk": "d3", "unit": "espadachines-de-marienburgo"}).status_code == 200
    assert disk(client, "d3")["unit"] == "espadachines-de-marienburgo"
    # An alias or a name in any spelling is stored as the catalog key.
    assert client.post("/api/corrections/unit", {"disk": "d3", "unit": "Wolf Riders"}).status_code == 400  # a space
    assert client.post("/api/corrections/unit", {"disk": "d3", "unit": "wolf-riders"}).status_code == 200
    assert disk(client, "d3")["unit"] == "jinetez-de-lobo"
    assert client.post("/api/corrections/unit", {"disk": "d3", "unit": None}).status_code == 200
    assert "unit" not in disk(client, "d3")


def test_on_top_swaps_the_stack_and_the_pins_follow(client):
    pins = {(p["pinner"], p["pinned"]) for p in client.get("/api/report").get_json()["pins"]}
    assert ("d2", "d1") in pins
    r = client.post("/api/corrections/on-top", {"upper": "d1", "lower": "d2"})
    assert r.status_code == 200
    assert disk(client, "d1")["z"] > disk(client, "d2")["z"]
    pins = {(p["pinner"], p["pinned"]) for p in client.get("/api/report").get_json()["pins"]}
    assert ("d1", "d2") in pins and ("d2", "d1") not in pins
    # The newest call about a pair replaces the older one.
    client.post("/api/corrections/on-top", {"upper": "d2", "lower": "d1"})
    assert client.get("/api/corrections").get_json()["on_top"] == [["d2", "d1"]]


def test_not_a_disk_hides_it_and_restore_brings_it_back(client):
    assert client.post("/api/corrections/not-a-disk", {"disk": "d7"}).status_code == 200
    assert disk(client, "d7") is None
    v = client.get("/api/view").get_json()
    assert v["hidden_disks"] == ["d7"]
    assert all("d7" not in (p["a"], p["b"]) for p in v["report"]["pairs"])
    # It can still be restored: it is in the raw scene.
    assert client.post("/api/corrections/not-a-disk", {"disk": "d7", "not_disk": False}).status_code == 200
    assert disk(client, "d7") is not None


def test_terrain_name_gives_keywords(client):
    """A rulebook piece's name gives the keywords its card states (RB p.13: Rocas = Cover, Fortified)."""
    r = client.post("/api/corrections/terrain", {"terrain": "t2", "name": "Rocas"})
    assert r.status_code == 200
    t2 = next(t for t in client.get("/api/scene").get_json()["terrain"] if t["id"] == "t2")
    assert t2["name"] == "Rocas"
    assert t2["keywords"] == ["cover", "fortified"]
    assert "keywords_needed" not in t2
    r = client.post("/api/corrections/terrain", {"terrain": "t2", "name": "ruin", "keywords": ["rough"]})
    assert r.status_code == 200
    t2 = next(t for t in client.get("/api/scene").get_json()["terrain"] if t["id"] == "t2")
    assert t2["keywords"] == ["rough"]


def test_a_name_the_rulebook_does_not_give_asks_for_keywords(client):
    """A name that is not a rulebook piece gives no keywords (no guessing from words): the piece asks for them."""
    client.post("/api/corrections/terrain", {"terrain": "t2", "name": "Wooded hill"})
    t2 = next(t for t in client.get("/api/scene").get_json()["terrain"] if t["id"] == "t2")
    assert t2["keywords"] == [] and t2["keywords_needed"] is True


@pytest.mark.parametrize("name,keywords", [
    ("Rocas", ("cover", "fortified")),  # RB p.13
    ("rocks", ("cover", "fortified")),
    ("Barranco", ("rough", "dangerous")),  # RB p.13
    ("COLINA", ("blocks_los", "defensive", "rough", "elevated")),  # RB p.3
    ("Hill", ("blocks_los", "defensive", "rough", "elevated")),
    ("lago", ("rough",)),  # RB p.3
    ("Bosque pequeño", ()),  # RB p.14 names it; its keywords are not readable there
    ("forest", ()),
    ("the old tower", ()),
    ("mystery", ()),
])
def test_keywords_for_name(name, keywords):
    assert keywords_for_name(name) == keywords


def test_players_the_camera_cannot_know(client):
    assert client.post("/api/corrections/owner", {"disk": "d6", "player": "chaos"}).status_code == 400
    r = client.post("/api/corrections/players", {"players": [{"id": "chaos", "initiative": 3}]})
    assert r.status_code == 200
    assert client.post("/api/corrections/owner", {"disk": "d6", "player": "chaos"}).status_code == 200
    scene = client.get("/api/scene").get_json()
    assert [p["id"] for p in scene["players"]] == ["orcs", "empire", "chaos"]


def test_clear_forgets_a_disks_corrections(client):
    client.post("/api/corrections/owner", {"disk": "d6", "player": "orcs"})
    client.post("/api/corrections/on-top", {"upper": "d1", "lower": "d2"})
    assert client.post("/api/corrections/clear", {"disk": "d1"}).status_code == 200
    doc = client.get("/api/corrections").get_json()
    assert doc["on_top"] == [] and "d6" in doc["disks"]


@pytest.mark.parametrize("route,body,reason", [
    ("owner", {"disk": "d6", "player": "elves"}, "unknown player"),
    ("owner", {"disk": "zz", "player": "orcs"}, "no disk 'zz'"),
    ("owner", {"disk": "d6"}, "missing field"),
    ("owner", {"disk": "d6", "player": "orcs", "extra": 1}, "unknown field"),
    ("owner", {"disk": 5, "player": "orcs"}, "expected an id"),
    ("owner", ["d6", "orcs"], "JSON object"),
    ("unit", {"disk": "d1", "unit": "../../etc/passwd"}, "expected an id"),
    ("unit", {"disk": "d1", "unit": ""}, "expected an id"),
    ("on-top", {"upper": "d1", "lower": "d1"}, "two different disks"),
    ("on-top", {"upper": "d1"}, "missing field"),
    ("not-a-disk", {"disk": "d1", "not_disk": "yes"}, "true or false"),
    ("terrain", {"terrain": "t9", "name": "forest"}, "no terrain piece"),
    ("terrain", {"terrain": "t1", "name": ""}, "name"),
    ("terrain", {"terrain": "t1", "name": "x" * 41}, "1-40"),
    ("terrain", {"terrain": "t1", "name": "wood", "keywords": ["lava"]}, "unknown keyword"),
    ("players", {"players": [{"id": "a", "initiative": "1"}]}, "initiative"),
    ("players", {"players": [{"id": "a", "initiative": 1}, {"id": "a", "initiative": 2}]}, "duplicate"),
    ("players", {"players": "orcs"}, "list"),
    ("clear", {}, "exactly one"),
    ("clear", {"disk": "d1", "terrain": "t1"}, "exactly one"),
])
def test_bad_corrections_are_400_and_change_nothing(client, data_dir, route, body, reason):
    before = client.get("/api/corrections").get_json()
    r = client.post(f"/api/corrections/{route}", body)
    assert r.status_code == 400
    assert reason in r.get_json()["error"]
    assert client.get("/api/corrections").get_json() == before
    assert not (data_dir / "corrections.json").exists()


def test_a_non_json_body_is_400(client):
    r = client.post("/api/corrections/owner", None, data="disk=d1", content_type="application/x-www-form-urlencoded")
    assert r.status_code == 400 and "JSON" in r.get_json()["error"]
    r = client.post("/api/corrections/owner", None, data="{not json", content_type="application/json")
    assert r.status_code == 400


def test_corrections_survive_a_restart(make_client, data_dir):
    first = make_client()
    assert first.post("/api/corrections/owner", {"disk": "d6", "player": "empire"}).status_code == 200
    assert first.post("/api/corrections/not-a-disk", {"disk": "d7"}).status_code == 200
    stored = json.loads((data_dir / "corrections.json").read_text())
    assert stored["format"] == "tablesight.corrections/1"
    second = make_client()  # a new server on the same data directory
    assert disk(second, "d6")["player"] == "empire"
    assert disk(second, "d7") is None


def test_corrections_follow_the_track_id_across_frames(tmp_path):
    store = Corrections(tmp_path)
    raw = load_scene("tests/webui/scene_webui_skirmish.json")
    store.set_owner(raw, "d6", "orcs")
    # The next frame: the same track moved, and a new disk appeared.
    from dataclasses import replace

    moved = raw.with_disks([replace(d, x_mm=d.x_mm + 30) if d.id == "d6" else d for d in raw.disks])
    out = store.apply(moved)
    d6 = out.disk("d6")
    assert d6.player == "orcs" and d6.x_mm == raw.disk("d6").x_mm + 30
    # A correction for a track that left the table is kept, and harmless.
    gone = raw.with_disks([d for d in raw.disks if d.id != "d6"])
    assert {d.id for d in store.apply(gone).disks} == {d.id for d in gone.disks}
    assert "d6" in store.to_json()["disks"]


def test_atomic_write_leaves_no_temporary_files(tmp_path):
    store = Corrections(tmp_path)
    raw = load_scene("tests/webui/scene_webui_skirmish.json")
    for i in range(5):
        store.set_unit(raw, "d1", f"unit-{i}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corrections.json"]


@pytest.mark.parametrize("content,reason", [
    ("{broken", "malformed JSON"),
    ('{"format": "tablesight.corrections/9"}', "unknown major version"),
    ('{"format": "tablesight.scene/1"}', "expected 'tablesight.corrections/1'"),
    ('{"format": "tablesight.corrections/1", "disks": {"d1": {"color": "red"}}}', "unknown field"),
    ('{"format": "tablesight.corrections/1", "on_top": [["d1"]]}', "expected [upper, lower]"),
])
def test_a_broken_corrections_file_is_one_clear_error(tmp_path, content, reason):
    (tmp_path / "corrections.json").write_text(content)
    with pytest.raises(InputError, match=reason.replace("[", r"\[").replace("]", r"\]")):
        Corrections(tmp_path)


def test_corrections_are_passed_on_to_a_tracking_feed(make_client, scene_path):
    """A feed with a tracker (vision.live.LiveTable) also hears each correction, as a vision.tracker.Correction."""
    tracker = importlib.import_module("vision.tracker")
    from webui.feeds import SceneFileFeed

    class TrackingFeed(SceneFileFeed):
        def __init__(self, path):
            super().__init__(path)
            self.heard = []

        def apply_correction(self, correction):
            assert isinstance(correction, tracker.Correction)
            self.heard.append((correction.track_id, correction.kind, correction.value))

    feed = TrackingFeed(scene_path)
    c = make_client(feed=feed)
    assert c.post("/api/corrections/owner", {"disk": "d6", "player": "orcs"}).status_code == 200
    assert c.post("/api/corrections/on-top", {"upper": "d1", "lower": "d2"}).status_code == 200
    assert c.post("/api/corrections/not-a-disk", {"disk": "d7"}).status_code == 200
    assert c.post("/api/corrections/unit", {"disk": "d7", "unit": "orc-boyz"}).status_code == 200
    assert c.post("/api/corrections/owner", {"disk": "d6", "player": "nobody"}).status_code == 400
    assert feed.heard == [("d6", "owner", "orcs"), ("d1", "above", "d2"), ("d7", "not_a_disk", True),
                          ("d7", "unit", "orc-boyz")]


def test_a_disk_dropped_by_the_tracker_can_still_be_restored(client, scene_path):
    """Regression: with a tracking feed the 'not a disk' detection vanishes from the raw scene as well."""
    assert client.post("/api/corrections/not-a-disk", {"disk": "d7"}).status_code == 200
    doc = json.loads(scene_path.read_text())
    doc["disks"] = [d for d in doc["disks"] if d["id"] != "d7"]
    scene_path.write_text(json.dumps(doc))
    import os
    st = scene_path.stat()
    os.utime(scene_path, (st.st_atime, st.st_mtime + 5))
    assert client.comp.feed.reload_if_changed()
    assert client.get("/api/view").get_json()["hidden_disks"] == ["d7"]
    assert client.post("/api/corrections/not-a-disk", {"disk": "d7", "not_disk": False}).status_code == 200
    assert client.get("/api/view").get_json()["hidden_disks"] == []
    # Hiding still needs the disk to be there.
    assert client.post("/api/corrections/not-a-disk", {"disk": "d7"}).status_code == 400


@pytest.mark.parametrize("typo, suggested", [
    ("jinetez-de-lobos", "jinetez-de-lobo"),
    ("river-trol", "troll-de-rio"),          # an alias's typo suggests the unit's key
    ("espadachines-de-marienbrugo", "espadachines-de-marienburgo"),
    ("zzzz-nothing-like-it", None),
])
def test_unit_name_typo_is_refused_naming_the_unit_with_suggestions(client, typo, suggested):
    """Regression: a typo in a unit name was answered "saved" and left the disk with no stats."""
    before = client.get("/api/corrections").get_json()
    r = client.post("/api/corrections/unit", {"disk": "d3", "unit": typo})
    assert r.status_code == 400
    error = r.get_json()["error"]
    assert error.startswith("unit: ") and repr(typo) in error and "not in the unit catalog" in error
    if suggested:
        assert f"did you mean {suggested}" in error
    else:
        assert "did you mean" not in error
    after = client.get("/api/corrections").get_json()
    assert after["disks"] == before["disks"] and "unit" not in (disk(client, "d3") or {})


def test_naming_a_terrain_piece_merges_its_keywords(client):
    """Regression: naming the wood replaced its keywords, so it lost blocks_los and cover."""
    client.post("/api/corrections/terrain", {"terrain": "t1", "name": "Bosque pequeño"})  # names no keywords
    t1 = next(t for t in client.get("/api/scene").get_json()["terrain"] if t["id"] == "t1")
    assert t1["name"] == "Bosque pequeño" and t1["keywords"] == ["blocks_los", "cover"]
    assert "keywords_needed" not in t1
    client.post("/api/corrections/terrain", {"terrain": "t1", "name": "Rocas"})  # RB p.13: cover, fortified
    t1 = next(t for t in client.get("/api/scene").get_json()["terrain"] if t["id"] == "t1")
    assert t1["keywords"] == ["blocks_los", "cover", "fortified"]
    # Keywords given explicitly are the players' pick from the card: they stand as given.
    client.post("/api/corrections/terrain", {"terrain": "t1", "name": "Rocas", "keywords": ["cover"]})
    t1 = next(t for t in client.get("/api/scene").get_json()["terrain"] if t["id"] == "t1")
    assert t1["keywords"] == ["cover"]


def test_players_dialog_changes_the_initiative(client):
    """Regression: the Players... dialog saved the order but the scene kept the old initiative."""
    assert client.get("/api/report").get_json()["melee_order"]["first_player"] == "orcs"
    r = client.post("/api/corrections/players", {"players": [{"id": "empire", "initiative": 1},
                                                             {"id": "orcs", "initiative": 2}]})
    assert r.status_code == 200
    players = {p["id"]: p["initiative"] for p in client.get("/api/scene").get_json()["players"]}
    assert players == {"empire": 1, "orcs": 2}
    assert client.get("/api/report").get_json()["melee_order"]["first_player"] == "empire"
