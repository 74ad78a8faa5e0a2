"""The book's Flask blueprint in a minimal app: melee for the current scene, book changes, validation (400)."""

import json
from pathlib import Path

import pytest
from flask import Flask

from tablesight.scene import load_scene
from webui.book import GameBook
from webui.book_api import blueprint

from scene_feed import SceneFeed

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture
def app(tmp_path):
    app = Flask("test_book_api")
    app.extensions["tablesight.book"] = GameBook(tmp_path / "book.sqlite")
    app.extensions["tablesight.feed"] = SceneFeed(load_scene(DATA / "rb_p18_contest.scene.json"))
    app.extensions["tablesight.data_dir"] = tmp_path
    app.register_blueprint(blueprint)
    yield app
    app.extensions["tablesight.book"].close()


@pytest.fixture
def client(app):
    return app.test_client()


def post(client, url, body=None):
    return client.post(url, data=None if body is None else json.dumps(body), content_type="application/json")


def test_melee_of_the_current_scene(client):
    doc = client.get("/api/melee").get_json()
    assert doc["format"] == "tablesight.melee/1"
    assert doc["casualties"] == ["spearmen", "mage", "riders"]
    # the players' choice through the query: Teclis strikes the riders instead of the troll
    doc = client.get("/api/melee?target=teclis:riders").get_json()
    teclis = [s for st in doc["steps"] for s in st["strikes"] if s["disk"] == "teclis"]
    assert teclis[0]["target"] == "riders" and teclis[0]["options"] == ["riders", "troll"]
    assert "troll" not in doc["wounded"]
    bad = client.get("/api/melee?target=teclis")
    assert bad.status_code == 400 and "DISK:TARGET" in bad.get_json()["error"]
    assert client.get("/api/melee?target=teclis:nobody").status_code == 400


def test_a_game_through_the_api(client):
    r = post(client, "/api/book/new", {"players": ["orcs", "elves"], "name": "contest"})
    assert r.status_code == 200 and r.get_json()["round"] == 1
    assert post(client, "/api/book/tokens", {"disk": "troll", "player": "orcs", "activation": 1}).status_code == 200
    assert post(client, "/api/book/phase", {"round": 1, "phase": "melee"}).status_code == 200
    r = post(client, "/api/book/melee", {"targets": {"teclis": "troll", "riders": "mage"}})
    assert r.status_code == 200
    book = r.get_json()["book"]
    assert {p["id"]: p["victory_points"] for p in book["players"]} == {"orcs": 2, "elves": 1}
    assert {d["disk"]: d["wound"] for d in book["disks"]} == {"teclis": 1, "troll": 1}
    book = post(client, "/api/book/end-phase").get_json()
    assert all(d["activation"] == 0 for d in book["disks"])
    assert post(client, "/api/book/vp", {"player": "orcs", "points": 1, "reason": "objective"}).status_code == 200
    exported = client.get("/api/book/export").get_json()
    assert exported["format"] == "tablesight.game/1"
    book = post(client, "/api/book/undo", {"steps": 2}).get_json()
    assert book["phase"] == "melee" and {p["id"]: p["victory_points"] for p in book["players"]}["orcs"] == 2
    book = post(client, "/api/book/import", exported).get_json()
    assert book["phase"] == "end" and book["awards"][0]["points"] == 1
    assert len(client.get("/api/book/events?limit=3").get_json()["events"]) == 3
    assert client.get("/api/book").get_json() == book


# a melee phase with no fights: nothing to apply, so it can be recorded in any state
QUIET_MELEE = {"format": "tablesight.melee/1", "steps": [], "casualties": [], "wounded": [],
               "scene_after": {"format": "tablesight.scene/1", "disks": []}}


def test_a_melee_is_recorded_once_per_round(client):
    """Regression: after a reload the page offered to record the same melee again, and the book took it twice."""
    post(client, "/api/book/new", {"players": ["orcs", "elves"]})
    assert client.get("/api/book").get_json()["melee_recorded"] is False
    first = post(client, "/api/book/melee", {"targets": {}})
    assert first.status_code == 200 and first.get_json()["book"]["melee_recorded"] is True
    piles = client.get("/api/book").get_json()["casualty_piles"]
    again = post(client, "/api/book/melee", {"targets": {}})
    assert again.status_code == 400
    assert again.get_json()["error"] == ("record_melee: the melee phase of round 1 is already recorded "
                                         "(undo it to record it again)")
    assert client.get("/api/book").get_json()["casualty_piles"] == piles  # nothing changed
    # Undo frees it; so does the next round.
    assert post(client, "/api/book/undo").get_json()["melee_recorded"] is False
    assert post(client, "/api/book/melee", {"targets": {}}).status_code == 200
    assert post(client, "/api/book/phase", {"round": 2, "phase": "activation"}).get_json()["melee_recorded"] is False
    assert post(client, "/api/book/melee", {"melee": QUIET_MELEE}).status_code == 200
    assert "round 2 is already recorded" in post(client, "/api/book/melee", {"melee": QUIET_MELEE}).get_json()["error"]


def test_a_log_with_two_melees_in_one_round_still_loads(tmp_path):
    """The once-per-round refusal holds for new changes only: a book written before it replays as it was."""
    book = GameBook(tmp_path / "old.sqlite")
    book.new_game(["orcs", "elves"])
    book._append("record_melee", {"melee": QUIET_MELEE})  # as an older tablesight wrote it, twice
    book._append("record_melee", {"melee": QUIET_MELEE})
    book.close()
    reopened = GameBook(tmp_path / "old.sqlite")
    assert reopened.state()["events"] == 3 and reopened.state()["melee_recorded"] is True
    reopened.close()


@pytest.mark.parametrize("url, body, message", [
    ("/api/book/new", {"players": ["solo"]}, "2 to 4 players"),
    ("/api/book/new", {}, "missing field"),
    ("/api/book/phase", {"round": 0, "phase": "melee"}, "round"),
    ("/api/book/phase", {"round": 1, "phase": "melee", "extra": 1}, "unknown field"),
    ("/api/book/tokens", {"disk": "x"}, "say its player"),
    ("/api/book/tokens", {"disk": "x", "player": "orcs", "power": 5}, "power"),
    ("/api/book/casualty", {"player": "orcs"}, "missing field"),
    ("/api/book/vp", {"player": "goblins", "points": 1}, "unknown player"),
    ("/api/book/objective", {"kind": "secret"}, "objective.kind|kind"),
    ("/api/book/melee", {"melee": {"format": "tablesight.melee/9"}}, "major version"),
    ("/api/book/melee", {"targets": ["x"]}, "targets"),
    ("/api/book/undo", {"steps": 0}, "steps"),
    ("/api/book/undo", {"steps": 9}, "can be undone"),
    ("/api/book/import", {"format": "tablesight.game/1", "events": [{"kind": "set_phase", "data": {}}]}, "new_game"),
    ("/api/book/import", {"format": "tablesight.scene/1"}, "format"),
    ("/api/book/initiative", {"order": ["orcs", "orcs"]}, "exactly once"),
])
def test_bad_requests_get_400_with_a_reason_and_change_nothing(client, url, body, message):
    post(client, "/api/book/new", {"players": ["orcs", "elves"]})
    before = client.get("/api/book/events").get_json()
    r = post(client, url, body)
    assert r.status_code == 400, r.get_json()
    import re
    assert re.search(message, r.get_json()["error"])
    assert client.get("/api/book/events").get_json() == before


def test_non_json_body_is_400(client):
    r = client.post("/api/book/new", data="players=orcs", content_type="application/x-www-form-urlencoded")
    assert r.status_code == 400 and "JSON object" in r.get_json()["error"]


def test_without_a_book_the_routes_answer_503(tmp_path):
    app = Flask("nobook")
    app.extensions["tablesight.book"] = None
    app.register_blueprint(blueprint)
    r = app.test_client().get("/api/book")
    assert r.status_code == 503 and "not available" in r.get_json()["error"]


def test_user_catalog_through_the_api(client):
    cat = {"format": "tablesight.catalog/1", "name": "house",
           "units": [{"key": "teclis", "name": "Teclis", "stats": {"counter": 9, "toughness": 5, "vigor": 1}}]}
    assert post(client, "/api/book/catalog", {"name": "house", "catalog": cat}).status_code == 200
    doc = client.get("/api/melee").get_json()
    teclis = [s for st in doc["steps"] for s in st["strikes"] if s["disk"] == "teclis"]
    assert teclis[0]["strength"] == 9  # the house catalog's Teclis replaced the rulebook's
    bad = post(client, "/api/book/catalog", {"name": "../evil", "catalog": cat})
    assert bad.status_code == 400
    bad = post(client, "/api/book/catalog", {"name": "worse", "catalog": {"format": "tablesight.catalog/1",
                                                                         "units": [{"name": "X", "size": "huge"}]}})
    assert bad.status_code == 400 and "size" in bad.get_json()["error"]
    assert client.get("/api/catalog").get_json()["format"] == "tablesight.catalog/1"
