"""Who may read and change the table: loopback Host check, access token, cross-site refusal, the data dir only."""

from __future__ import annotations

import importlib

import pytest

from webui.security import host_name, is_loopback, same_origin

TOKEN = "s3cret-token-value"


@pytest.mark.parametrize("headers,status", [
    ({"X-Tablesight-Token": None}, 403),  # no write key
    ({"X-Tablesight-Token": "wrong"}, 403),
    ({"Origin": "http://evil.example"}, 403),
    ({"Origin": "null"}, 403),
    ({"Origin": "http://127.0.0.1:9999"}, 403),  # another port is another site
    ({"Origin": None, "Referer": "http://evil.example/page"}, 403),
    ({"Origin": None, "Referer": "http://127.0.0.1:8650/"}, 200),
    ({"Origin": None}, 200),  # a non-browser client (curl) sends neither; the write key still guards it
])
def test_state_changing_requests_need_the_write_key_and_this_origin(client, headers, status):
    comp = client.comp
    h = {"Host": "127.0.0.1:8650", "Origin": "http://127.0.0.1:8650", "X-Tablesight-Token": comp.write_key}
    h.update(headers)
    h = {k: v for k, v in h.items() if v is not None}
    r = client.http.post("/api/corrections/owner", json={"disk": "d6", "player": "orcs"}, headers=h)
    assert r.status_code == status, r.get_json()
    if status != 200:
        assert r.get_json()["error"]
        assert client.get("/api/corrections").get_json()["disks"] == {}


def test_the_page_carries_the_write_key_on_loopback(client):
    html = client.get("/").get_data(as_text=True)
    assert f'content="{client.comp.write_key}"' in html


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8650", "192.168.1.20:8650"])
def test_loopback_server_refuses_foreign_host_names(client, host):
    """DNS rebinding: a foreign name that resolves to 127.0.0.1 must not reach the API."""
    r = client.http.get("/api/scene", headers={"Host": host})
    assert r.status_code == 403


@pytest.mark.parametrize("host", ["127.0.0.1:8650", "localhost:8650", "[::1]:8650", "localhost"])
def test_loopback_names_are_accepted(client, host):
    assert client.http.get("/api/health", headers={"Host": host}).status_code == 200


def test_token_server_needs_the_token_for_every_data_route(make_client):
    c = make_client(token=TOKEN)
    anon = c.http
    h = {"Host": "192.168.1.20:8650"}
    for path in ("/api/scene", "/api/report", "/api/health", "/api/view", "/api/events", "/api/frame.jpg",
                 "/api/disk/d1", "/api/corrections", "/api/calibration"):
        r = anon.get(path, headers=h)
        assert r.status_code == 401, path
        assert "token" in r.get_json()["error"]
    assert anon.get("/", headers=h).status_code == 401  # the page says how to get in
    assert anon.get("/api/health", headers=dict(h, **{"X-Tablesight-Token": "nope"})).status_code == 401
    assert anon.get(f"/api/health?token={TOKEN}", headers=h).status_code == 200
    assert anon.get("/api/health", headers=dict(h, **{"X-Tablesight-Token": TOKEN})).status_code == 200
    assert anon.get(f"/?token={TOKEN}", headers=h).status_code == 200
    assert anon.get("/static/table.js", headers=h).status_code == 200  # page code is public


def test_token_server_page_does_not_embed_the_token(make_client):
    c = make_client(token=TOKEN)
    html = c.http.get(f"/?token={TOKEN}", headers={"Host": "192.168.1.20:8650"}).get_data(as_text=True)
    assert TOKEN not in html


def test_token_in_the_address_alone_does_not_allow_writes(make_client):
    c = make_client(token=TOKEN)
    h = {"Host": "192.168.1.20:8650", "Origin": "http://192.168.1.20:8650"}
    r = c.http.post(f"/api/corrections/owner?token={TOKEN}", json={"disk": "d6", "player": "orcs"}, headers=h)
    assert r.status_code == 403
    r = c.http.post("/api/corrections/owner", json={"disk": "d6", "player": "orcs"},
                    headers=dict(h, **{"X-Tablesight-Token": TOKEN}))
    assert r.status_code == 200


@pytest.mark.parametrize("path", [
    "/static/../app.py", "/static/%2e%2e/app.py", "/static/..%2fcorrections.py", "/static//etc/passwd",
])
def test_no_route_reads_outside_its_folders(client, path):
    assert client.get(path, follow_redirects=True).status_code == 404


def test_responses_carry_protective_headers(client):
    r = client.get("/")
    assert r.headers["X-Frame-Options"] == "DENY"
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert "script-src 'self'" in r.headers["Content-Security-Policy"]


@pytest.mark.parametrize("host,expected", [
    ("127.0.0.1", True), ("localhost", True), ("::1", True), ("[::1]", True), ("127.0.0.2", True),
    ("0.0.0.0", False), ("192.168.1.5", False), ("example.com", False),
])
def test_is_loopback(host, expected):
    assert is_loopback(host) is expected


@pytest.mark.parametrize("header,name", [
    ("127.0.0.1:8650", "127.0.0.1"), ("localhost", "localhost"), ("[::1]:80", "::1"), ("[::1]", "::1"),
])
def test_host_name(header, name):
    assert host_name(header) == name


@pytest.mark.parametrize("url,host,expected", [
    ("http://127.0.0.1:8650", "127.0.0.1:8650", True),
    ("http://127.0.0.1:8650/some/page?x=1", "127.0.0.1:8650", True),
    ("https://127.0.0.1:8650", "127.0.0.1:8650", True),
    ("http://127.0.0.1:8651", "127.0.0.1:8650", False),
    ("file:///etc", "127.0.0.1:8650", False),
    ("null", "127.0.0.1:8650", False),
])
def test_same_origin(url, host, expected):
    assert same_origin(url, host) is expected


def test_the_game_books_routes_are_guarded_too(client):
    importlib.import_module("webui.book_api")
    body = {"players": [{"id": "orcs", "initiative": 1}, {"id": "empire", "initiative": 2}]}
    h = {"Host": "127.0.0.1:8650", "Origin": "http://evil.example", "X-Tablesight-Token": client.comp.write_key}
    assert client.http.post("/api/book/new", json=body, headers=h).status_code == 403
    assert client.post("/api/book/new", body).status_code == 200
