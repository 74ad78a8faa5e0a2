"""Fuzzing the API and the file formats: whatever JSON arrives, the answer is a success or a 4xx, never a 500,
and a refused request changes nothing (the game book's log and the corrections stay as they were)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tablesight.errors import InputError

ROUTES = {
    "/api/book/new": ("players", "objective", "name"),
    "/api/book/phase": ("round", "phase"),
    "/api/book/initiative": ("order",),
    "/api/book/tokens": ("disk", "player", "unit", "activation", "damage", "wound", "power"),
    "/api/book/casualty": ("disk", "player", "unit"),
    "/api/book/restore": ("disk",),
    "/api/book/vp": ("player", "points", "reason"),
    "/api/book/objective": ("kind", "name", "text", "vp_per_enemy_casualty"),
    "/api/book/melee": ("melee", "targets"),
    "/api/book/undo": ("steps",),
    "/api/book/import": ("format", "events", "state"),
    "/api/book/catalog": ("name", "catalog"),
    "/api/book/cards": ("cards",),
    "/api/book/card-done": ("player",),
    "/api/book/reserve": ("player", "disks"),
    "/api/book/activate": ("disk",),
    "/api/corrections/owner": ("disk", "player"),
    "/api/corrections/unit": ("disk", "unit"),
    "/api/corrections/on-top": ("upper", "lower"),
    "/api/corrections/not-a-disk": ("disk", "not_disk"),
    "/api/corrections/terrain": ("terrain", "name", "keywords"),
    "/api/corrections/players": ("players",),
    "/api/corrections/clear": ("disk", "terrain"),
}

# Text that an attacker or a clumsy user sends: ids of the table, control and bidi characters, lone surrogates.
text = st.one_of(st.sampled_from(["orcs", "empire", "d1", "d6", "t2", "activation", "melee", "scenario",
                                  "tablesight.game/1", "tablesight.melee/1", "", " ", "\x00", "\u202e", "\ud800",
                                  "²", "house\n"]),
                 st.text(max_size=12))
scalar = st.one_of(st.none(), st.booleans(), st.integers(-5, 120), st.integers(), text,
                   st.floats(allow_nan=True, allow_infinity=True))
value = st.recursive(scalar, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(text, inner, max_size=4)), max_leaves=12)


def body_for(route):
    keys = ROUTES[route]
    return st.dictionaries(st.one_of(st.sampled_from(keys), text), value, max_size=len(keys) + 1)


def _post_raw(client, route, body):
    data = json.dumps(body, allow_nan=True, ensure_ascii=True)  # NaN and lone surrogates as JSON text carries them
    h = {"Host": "127.0.0.1:8650", "Origin": "http://127.0.0.1:8650", "X-Tablesight-Token": client.comp.write_key}
    return client.http.post(route, data=data, content_type="application/json", headers=h)


@pytest.fixture
def fuzz_client(make_client):
    c = make_client()
    assert c.post("/api/book/new", {"players": ["orcs", "empire"]}).status_code == 200
    return c


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(data=st.data())
def test_any_json_body_on_any_route_is_a_success_or_a_4xx_and_a_refusal_changes_nothing(fuzz_client, data):
    c = fuzz_client
    route = data.draw(st.sampled_from(sorted(ROUTES)))
    body = data.draw(body_for(route))
    book_before = c.get("/api/book/events?limit=10000").get_json()
    corr_before = c.get("/api/corrections").get_json()
    r = _post_raw(c, route, body)
    assert r.status_code < 500, (route, body, r.get_data(as_text=True))
    if r.status_code >= 400:
        assert "error" in r.get_json()
        assert c.get("/api/book/events?limit=10000").get_json() == book_before
        assert c.get("/api/corrections").get_json() == corr_before
    # whatever happened, the next valid write works and every answer is valid JSON
    ok = c.post("/api/book/tokens", {"disk": "fuzz-check", "player": c.get("/api/book").get_json()["players"][0]["id"]
                                     if c.get("/api/book").get_json()["players"] else "orcs", "damage": 1})
    assert ok.status_code in (200, 400), ok.get_data(as_text=True)
    json.loads(c.get("/api/book").get_data(as_text=True))
    assert c.get("/api/view").status_code == 200


@settings(max_examples=200, deadline=None)
@given(doc=value)
def test_any_document_is_a_scene_or_one_input_error(doc):
    from tablesight.limits import check_json
    from tablesight.scene import Scene

    for candidate in (doc, {"format": "tablesight.scene/1", "disks": doc}, {"format": "tablesight.scene/1",
                                                                           "disks": [doc], "players": doc}):
        try:
            check_json(candidate, "scene")
            Scene.from_json(candidate)
        except InputError:
            pass


@settings(max_examples=200, deadline=None)
@given(doc=value)
def test_any_document_is_a_catalog_calibration_or_corrections_file_or_one_input_error(doc, tmp_path_factory):
    from calibration.table import TableCalibration
    from rules.diskwars.catalog import merge_catalogs
    from tablesight.limits import check_json
    from webui.corrections import Corrections

    for fmt, load in (("tablesight.catalog/1", lambda d: merge_catalogs([("catalog", d)])),
                      ("tablesight.table/1", TableCalibration.from_json)):
        for candidate in (doc, {"format": fmt, "units": doc, "homography": doc, "image_size": doc}):
            try:
                check_json(candidate, "doc")
                load(candidate)
            except InputError:
                pass
    folder = tmp_path_factory.mktemp("corr")
    (folder / "corrections.json").write_text(json.dumps({"format": "tablesight.corrections/1", "disks": doc,
                                                         "terrain": doc, "players": doc, "on_top": doc}))
    try:
        Corrections(folder)
    except InputError:
        pass
