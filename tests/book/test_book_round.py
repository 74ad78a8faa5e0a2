"""The round in the game book and its API: command cards, who may activate, the reserve, the end phase and the
game's end (RB p.7-11, 13, 15, 18, 20). Bad input: 400 naming the field, nothing written."""

import json

import pytest
from flask import Flask

from tablesight.scene import Scene
from webui.book import BookError, GameBook
from webui.book_api import blueprint

from scene_feed import SceneFeed

PLAYERS = [{"id": "orcs", "initiative": 1}, {"id": "empire", "initiative": 2}]


def scene_doc(disks):
    return Scene.from_json({"format": "tablesight.scene/1", "players": PLAYERS, "disks": disks})


def d(id, x, y, player, z=0, **kw):
    return {"id": id, "x_mm": x, "y_mm": y, "radius_mm": 22.0, "z": z, "player": player, **kw}


TABLE = [d("boyz", 100, 100, "orcs"), d("swords", 110, 100, "empire", z=1),  # swords pin boyz
         d("troll", 500, 500, "orcs"), d("xbows", 700, 700, "empire")]


@pytest.fixture
def app(tmp_path):
    app = Flask("test_book_round")
    app.extensions["tablesight.book"] = GameBook(tmp_path / "book.sqlite")
    app.extensions["tablesight.feed"] = SceneFeed(scene_doc(TABLE))
    app.register_blueprint(blueprint)
    yield app
    app.extensions["tablesight.book"].close()


@pytest.fixture
def client(app):
    return app.test_client()


def post(client, url, body=None):
    return client.post(url, data=json.dumps(body or {}), content_type="application/json")


def test_rb_p7_p15_cards_resolve_in_strategy_order_one_turn_at_a_time(client):
    post(client, "/api/book/new", {"players": PLAYERS})
    # RB p.7 example: Bold (orcs, first player) against Cunning (empire): the Cunning card resolves first.
    book = post(client, "/api/book/cards", {"cards": {"orcs": "bold", "empire": "cunning"}}).get_json()
    assert book["command_cards"][-1]["order"] == ["empire", "orcs"] and book["card_turn"] == "empire"
    bad = post(client, "/api/book/card-done", {"player": "orcs"})
    assert bad.status_code == 400 and "player" in bad.get_json()["error"] and "empire" in bad.get_json()["error"]
    again = post(client, "/api/book/cards", {"cards": {"orcs": "slow"}})
    assert again.status_code == 400 and "resolve the revealed cards first" in again.get_json()["error"]
    assert post(client, "/api/book/card-done", {"player": "empire"}).get_json()["card_turn"] == "orcs"
    book = post(client, "/api/book/card-done", {"player": "orcs"}).get_json()
    assert book["card_turn"] is None
    assert client.get("/api/book/turn").get_json()["card_turn"] is None


def test_bad_cards_are_refused_naming_the_field_and_change_nothing(client):
    post(client, "/api/book/new", {"players": PLAYERS})
    before = client.get("/api/book").get_json()["events"]
    for body, field in [({"cards": {"orcs": "sneaky"}}, "cards.orcs"), ({"cards": {"goblins": "bold"}}, "cards"),
                        ({"cards": []}, "cards"), ({}, "cards"), ({"cards": {"orcs": 3}}, "cards.orcs")]:
        r = post(client, "/api/book/cards", body)
        assert r.status_code == 400 and field in r.get_json()["error"], (body, r.get_json())
    post(client, "/api/book/phase", {"round": 1, "phase": "melee"})
    r = post(client, "/api/book/cards", {"cards": {"orcs": "bold"}})
    assert r.status_code == 400 and "activation phase" in r.get_json()["error"]
    assert client.get("/api/book").get_json()["events"] == before + 1  # only the phase change


def test_rb_p8_who_may_activate_and_activating_through_the_api(client):
    post(client, "/api/book/new", {"players": PLAYERS})
    turn = client.get("/api/book/turn").get_json()
    assert turn["round"] == 1 and turn["phase"] == "activation"
    assert [r["name"] for r in turn["settings"]] == ["card_order_after_first"]  # the reading taken
    assert turn["may_activate"] == ["swords", "troll", "xbows"]  # boyz are pinned
    boyz = next(a for a in turn["activation"] if a["disk"] == "boyz")
    assert boyz["pinned_by"] == ["swords"] and "RB p.8" in boyz["why_not"][0]
    r = post(client, "/api/book/activate", {"disk": "boyz"})
    assert r.status_code == 400 and r.get_json()["error"].startswith("disk: boyz cannot activate: pinned by swords")
    book = post(client, "/api/book/activate", {"disk": "troll"}).get_json()
    assert next(x for x in book["disks"] if x["disk"] == "troll")["activation"] == 1
    r = post(client, "/api/book/activate", {"disk": "troll"})
    assert r.status_code == 400 and "already activated" in r.get_json()["error"]
    assert post(client, "/api/book/activate", {"disk": "nobody"}).status_code == 400
    post(client, "/api/book/activate", {"disk": "swords"})
    turn = post(client, "/api/book/activate", {"disk": "xbows"}) and client.get("/api/book/turn").get_json()
    assert turn["may_activate"] == [] and turn["activation_phase_over"]  # RB p.7: all activated or pinned
    post(client, "/api/book/phase", {"round": 1, "phase": "melee"})
    r = post(client, "/api/book/activate", {"disk": "troll"})
    assert r.status_code == 400 and "activation phase" in r.get_json()["error"]


def test_rb_p10_end_phase_clears_every_token_but_wounds_and_the_cards(tmp_path):
    book = GameBook(tmp_path / "b.sqlite")
    book.new_game(PLAYERS)
    book.reveal_cards({"orcs": "direct"})
    book.set_tokens("troll", player="orcs", activation=1, damage=2, wound=1, power=1)
    state = book.end_phase()
    troll = state["disks"][0]
    assert (troll["activation"], troll["damage"], troll["power"], troll["wound"]) == (0, 0, 0, 1)
    assert state["card_turn"] is None and state["phase"] == "end" and not state["game_over"]
    state = book.set_phase(2, "activation")
    state = book.reveal_cards({"orcs": "slow", "empire": "bold"})  # a new round: cards back in hand
    assert state["card_turn"] == "empire" and [c["round"] for c in state["command_cards"]] == [1, 2]
    book.close()


def test_rb_p11_reserve_goes_to_the_casualty_pile_after_round_5_and_the_game_ends(tmp_path):
    book = GameBook(tmp_path / "b.sqlite")
    book.new_game(PLAYERS)
    book.set_reserve("empire", ["handgunners", "knights"])
    book.set_reserve("orcs", ["wolves"])
    with pytest.raises(BookError, match="another player's reserve"):
        book.set_reserve("orcs", ["knights"])
    state = book.set_tokens("knights", player="empire", activation=1)  # RB p.13: a reinforcement enters
    assert state["reserves"] == {"orcs": ["wolves"], "empire": ["handgunners"]}
    book.add_casualty("wolves-2", player="orcs")
    book.end_phase()
    assert not book.state()["game_over"]
    book.set_phase(5, "melee")
    state = book.end_phase()
    assert state["game_over"] and state["result"]["why"] == "round_5"
    assert [c["disk"] for c in state["casualty_piles"]["empire"]] == ["handgunners"]
    assert [c["disk"] for c in state["casualty_piles"]["orcs"]] == ["wolves-2", "wolves"]
    # Introductory objective: 1 VP per enemy casualty (RB p.11): orcs 1, empire 2.
    assert {p["id"]: p["victory_points"] for p in state["players"]} == {"orcs": 1, "empire": 2}
    assert state["result"]["winner"] == "empire"
    # Undo the end phase: the reserve is back, the game goes on.
    state = book.undo()
    assert not state["game_over"] and state["reserves"]["empire"] == ["handgunners"]
    book.close()
    reopened = GameBook(tmp_path / "b.sqlite")  # survives a restart
    assert reopened.state()["reserves"]["empire"] == ["handgunners"]
    reopened.close()


def test_rb_p11_player_with_no_disk_on_the_battlefield_is_eliminated(app, client):
    post(client, "/api/book/new", {"players": PLAYERS})
    app.extensions["tablesight.feed"].scene = scene_doc([d("troll", 500, 500, "orcs"),
                                                         d("xbows", -300, 700, "empire")])  # wholly outside
    turn = client.get("/api/book/turn").get_json()
    assert turn["eliminated"] == ["empire"]
    assert turn["result"]["game_over"] and turn["result"]["why"] == "eliminated"
    assert turn["result"]["winner"] == "orcs"


def test_turn_without_a_scene_still_shows_the_round(tmp_path):
    app = Flask("no_feed")
    app.extensions["tablesight.book"] = GameBook(tmp_path / "b.sqlite")
    app.register_blueprint(blueprint)
    c = app.test_client()
    post(c, "/api/book/new", {"players": PLAYERS})
    turn = c.get("/api/book/turn").get_json()
    assert turn["round"] == 1 and turn["activation"] is None and "feed" in turn["scene_error"]
    app.extensions["tablesight.book"].close()


def test_rb_p7_the_melee_of_a_round_is_recorded_once(tmp_path):
    from melee_helpers import report_of, scene_of

    from rules.diskwars.melee import resolve_melee

    book = GameBook(tmp_path / "b.sqlite")
    book.new_game(PLAYERS)
    sc = scene_of([{"id": "boss", "player": "orcs", "stats": {"attack": 5, "counter": 1, "toughness": 9}},
                   {"id": "e1", "player": "empire", "stats": {"attack": 0, "counter": 2, "toughness": 4}}],
                  players=("orcs", "empire"))
    melee = resolve_melee(sc, report_of([("boss", "e1")], [("E1", ["boss"], ["e1"])]))
    state = book.record_melee(melee)
    assert state["melee_recorded"] and len(state["casualty_piles"]["empire"]) == 1
    book.close()
    book = GameBook(tmp_path / "b.sqlite")  # a reload / a restart: the book still knows
    with pytest.raises(BookError, match="already recorded"):
        book.record_melee(melee)
    assert len(book.state()["casualty_piles"]["empire"]) == 1
    book.end_phase()
    book.set_phase(2, "melee")
    assert not book.state()["melee_recorded"]
    book.close()


def test_rb_p8_shoot_route_is_the_shoot_command_with_the_books_tokens(app, client):
    from rules.diskwars.shooting import ranged_attack

    post(client, "/api/book/new", {"players": PLAYERS})
    doc = client.get("/api/shoot/xbows").get_json()
    assert doc == ranged_attack(scene_doc(TABLE), "xbows").to_json()  # the same code as `tablesight shoot`
    assert doc["can_shoot"] and {t["target"] for t in doc["targets"]} == {"boyz", "swords", "troll"}
    post(client, "/api/book/activate", {"disk": "xbows"})
    doc = client.get("/api/shoot/xbows").get_json()
    assert not doc["can_shoot"] and "already activated" in doc["why_not"]  # the book's token counts (RB p.8)
    assert "pinned by swords" in client.get("/api/shoot/boyz").get_json()["why_not"]
    bad = client.get("/api/shoot/nobody")
    assert bad.status_code == 400 and bad.get_json()["error"].startswith("shooter:")


def test_rb_p8_move_route_is_the_move_command_and_refuses_naming_the_field(client):
    from rules.diskwars.movement import move_consequences

    before = {"format": "tablesight.scene/1", "players": PLAYERS, "disks": TABLE}
    moved = [dict(x, x_mm=470, y_mm=500, z=2) if x["id"] == "xbows" else x for x in TABLE]
    after = dict(before, disks=moved)
    doc = post(client, "/api/move", {"before": before, "after": after}).get_json()
    assert doc == move_consequences(Scene.from_json(before), Scene.from_json(after)).to_json()
    assert doc["moved"] == "xbows" and [p["disk"] for p in doc["newly_pinned"]] == ["troll"]
    for body, field in [({"before": before, "after": before}, "no disk moved"), ({"before": before}, "after"),
                        ({"before": {"format": "tablesight.scene/1", "disks": "x"}, "after": after}, "before:"),
                        ({"before": before, "after": after, "x": 1}, "unknown field")]:
        r = post(client, "/api/move", body)
        assert r.status_code == 400 and field in r.get_json()["error"], (field, r.get_json())


def test_deploy_route_is_the_deploy_command(client):
    from rules.diskwars.deployment import check_deployment

    doc = client.get("/api/deploy?edge=orcs=top&edge=empire=bottom").get_json()
    assert doc == check_deployment(scene_doc(TABLE), edges={"orcs": "top", "empire": "bottom"}).to_json()
    bad = client.get("/api/deploy?edge=orcs=up")
    assert bad.status_code == 400 and "edge" in bad.get_json()["error"]
