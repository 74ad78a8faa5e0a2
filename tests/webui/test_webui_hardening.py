"""Issue 18's ten findings, each with its regression test (`test_fNN_...`): bad requests get a clear 4xx and
change nothing, the next valid request works, files that hold anything never crash a worker or the CLI."""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tablesight.errors import InputError
from tablesight.limits import MAX_BODY_BYTES, MAX_DISKS, check_text, parse_json
from tablesight.scene import Scene, SceneError
from webui.feeds import SceneFileFeed

ROOT = Path(__file__).resolve().parents[2]
DEEP = "[" * 100_000 + "]" * 100_000


def raw_post(client, path, text, content_type="application/json"):
    """POST a body exactly as given (for what json= cannot send: NaN, lone surrogates, deep nesting)."""
    h = {"Host": "127.0.0.1:8650", "Origin": "http://127.0.0.1:8650", "X-Tablesight-Token": client.comp.write_key}
    return client.http.post(path, data=text, content_type=content_type, headers=h)


def started_book(client):
    r = client.post("/api/book/new", {"players": ["orcs", "empire"]})
    assert r.status_code == 200, r.get_json()
    return r.get_json()


def _events(client):
    return client.get("/api/book/events").get_json()["events"]


# -- F1: a failed book write rolls back; the next valid write works ----------------------------------------------

@pytest.mark.parametrize("path, body", [
    ("/api/book/tokens", '{"disk": "d1", "player": ["orcs"], "damage": 1}'),
    ("/api/book/vp", '{"player": ["orcs"], "points": 1}'),
    ("/api/book/initiative", '{"order": ["orcs", 2]}'),
    ("/api/book/melee", json.dumps({"melee": {"format": "tablesight.melee/1", "casualties": [], "scene_after": {
        "disks": [{"id": "d1", "player": "orcs", "tokens": {"damage": "two"}}]}}})),
    ("/api/book/melee", json.dumps({"melee": {"format": "tablesight.melee/1", "casualties": [], "scene_after": {
        "disks": [{"id": "d1", "player": "orcs", "tokens": "damage"}]}}})),
    ("/api/book/vp", '{"player": "orcs", "points": 1, "reason": "\\ud800"}'),
])
def test_f01_a_refused_book_write_rolls_back_and_the_next_valid_write_works(client, path, body):
    started_book(client)
    before = _events(client)
    r = raw_post(client, path, body)
    assert r.status_code == 400, (r.status_code, r.get_data(as_text=True))
    assert "error" in r.get_json()
    assert _events(client) == before
    ok = client.post("/api/book/tokens", {"disk": "d1", "player": "orcs", "damage": 1})
    assert ok.status_code == 200, ok.get_json()
    assert len(_events(client)) == len(before) + 1


def test_f01_any_failure_inside_a_write_rolls_the_transaction_back(tmp_path, monkeypatch):
    from webui import book as bookmod

    b = bookmod.GameBook(tmp_path / "b.sqlite")
    b.new_game(["orcs", "empire"])
    monkeypatch.setattr(bookmod, "apply_event", lambda *a: (_ for _ in ()).throw(RuntimeError("boom")))
    with pytest.raises(RuntimeError):
        b.set_tokens("d1", player="orcs", damage=1)
    assert not b._conn.in_transaction
    monkeypatch.undo()
    assert b.set_tokens("d1", player="orcs", damage=1)["disks"][0]["damage"] == 1
    b.close()


# -- F2: catalogs load whatever their file names' order ----------------------------------------------------------

def test_f02_a_catalog_using_a_unit_of_a_later_named_catalog_keeps_the_routes_working(client):
    z = {"format": "tablesight.catalog/1", "name": "z", "units": [{"key": "zz-hero", "name": "Zz Hero"},
                                                                    {"key": "zz-troop", "name": "Zz Troop"}]}
    a = {"format": "tablesight.catalog/1", "name": "a", "units": [],
         "regiments": [{"name": "Mine", "hero": "zz-hero", "units": [{"unit": "zz-troop"}]}]}
    assert client.post("/api/book/catalog", {"name": "z", "catalog": z}).status_code == 200
    assert client.post("/api/book/catalog", {"name": "a", "catalog": a}).status_code == 200
    cat = client.get("/api/catalog")
    assert cat.status_code == 200 and any(u["key"] == "zz-hero" for u in cat.get_json()["units"])
    assert client.get("/api/melee").status_code == 200
    # replacing z with a catalog that drops the units a needs is refused, and changes nothing
    r = client.post("/api/book/catalog", {"name": "z", "catalog": dict(z, units=[])})
    assert r.status_code == 400 and "zz-" in r.get_json()["error"]
    assert client.get("/api/catalog").status_code == 200


# -- F3: deep nesting: no dead watcher, no 500, no traceback ------------------------------------------------------

def test_f03_deep_nesting_is_refused_everywhere(client, scene_path, tmp_path):
    with pytest.raises(InputError, match="nested too deeply"):
        parse_json(DEEP, "doc")
    r = raw_post(client, "/api/corrections/owner", '{"disk": ' + DEEP + "}")
    assert r.status_code == 400 and "nested too deeply" in r.get_json()["error"]
    r = raw_post(client, "/api/book/new", '{"players": ' + DEEP + "}")
    assert r.status_code == 400


def test_f03_the_scene_watcher_survives_a_deeply_nested_file(scene_path):
    feed = SceneFileFeed(scene_path, poll_s=0.05)
    feed.start()
    try:
        scene_path.write_text(DEEP)
        os.utime(scene_path, (time.time() + 5, time.time() + 5))
        deadline = time.monotonic() + 5
        while "keeping the last good scene" not in feed.state().health.message and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "keeping the last good scene" in feed.state().health.message
        assert feed.workers() == {"scene-file watcher": True}
        assert feed.state().version == 1
    finally:
        feed.stop()


def test_f03_a_stopped_worker_makes_health_unhealthy(make_client, scene_path):
    class DeadFeed(SceneFileFeed):
        def workers(self):
            return {"scene-file watcher": False}

    c = make_client(feed=DeadFeed(scene_path))
    r = c.get("/api/health")
    assert r.status_code == 503
    h = r.get_json()
    assert h["healthy"] is False and h["workers"]["scene-file watcher"] is False and "stopped" in h["message"]
    ok = make_client().get("/api/health")
    assert ok.status_code == 200 and ok.get_json()["healthy"] is True


@pytest.mark.parametrize("argv", [["report", "{f}"], ["melee", "{f}"], ["detect", "x.png", "--calibration", "{f}"]])
def test_f03_the_cli_says_one_line_and_exits_2_on_a_deeply_nested_file(tmp_path, argv):
    f = tmp_path / "deep.json"
    f.write_text(DEEP)
    p = subprocess.run([sys.executable, "-m", "tablesight", *[a.format(f=f) for a in argv]], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert "nested too deeply" in p.stderr


def test_f03_serve_says_one_line_and_exits_2_on_a_deeply_nested_corrections_file(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "corrections.json").write_text(DEEP)
    p = subprocess.run([sys.executable, "-m", "tablesight", "serve", "--port", "8796", "--data-dir", str(data),
                        "--scene", str(Path(__file__).parent / "scene_webui_skirmish.json")],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert "corrections" in p.stderr and "nested too deeply" in p.stderr


def test_f03_a_deeply_nested_corrections_file_is_one_clear_error(tmp_path):
    from webui.corrections import Corrections

    (tmp_path / "corrections.json").write_text(DEEP)
    with pytest.raises(InputError, match="nested too deeply"):
        Corrections(tmp_path)


# -- F4: a connection flood cannot keep the page out (the real server) -------------------------------------------

@pytest.mark.slow
def test_f04_health_answers_with_a_thousand_idle_sockets_open(make_client):
    from webui.server import create_server, raise_fd_limit

    raise_fd_limit()
    c = make_client()
    server = create_server(c.app, "127.0.0.1", 0)
    port = int(server.effective_port)
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    idle = []
    try:
        for _ in range(1000):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            idle.append(s)
        t0 = time.monotonic()
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        took = time.monotonic() - t0
        assert data.startswith(b"HTTP/1.1 200"), data[:200]
        assert b"\r\nServer:" not in data  # no version banner
        assert took < 8.0, took
    finally:
        for s in idle:
            s.close()
        server.close()


def test_f04_event_streams_beyond_the_cap_are_told_to_come_back(client):
    comp = client.comp
    comp.set_max_streams(1)
    first = comp.events(keepalive_s=0.1)
    assert "event: state" in next(first)  # holds the one stream
    second = "".join(comp.events(keepalive_s=0.1))
    assert second.startswith("retry: ") and "event: state" in second
    first.close()
    third = comp.events(keepalive_s=0.1)
    assert next(third).startswith("event: state")  # the slot is free again
    third.close()


# -- F5: request size and text limits ----------------------------------------------------------------------------

def test_f05_a_huge_body_is_413_and_long_or_control_text_is_400(client):
    started_book(client)
    before = _events(client)
    big = json.dumps({"player": "orcs", "points": 1, "reason": "x" * (MAX_BODY_BYTES + 10)})
    assert raw_post(client, "/api/book/vp", big).status_code == 413
    assert client.post("/api/book/vp", {"player": "orcs", "points": 1, "reason": "x" * 501}).status_code == 400
    for bad in ("d\x001", "d\u202e1", "d1\n"):
        r = client.post("/api/book/tokens", {"disk": bad, "player": "orcs", "damage": 1})
        assert r.status_code == 400, bad
    assert client.post("/api/book/new", {"players": ["orcs\x00", "empire"]}).status_code == 400
    assert _events(client) == before


# -- F6: NaN/Infinity, Unicode digits, a non-object import state -------------------------------------------------

def test_f06_nan_unicode_digits_and_a_bad_import_state_are_400(client):
    started_book(client)
    before = _events(client)
    for const in ("NaN", "Infinity", "-Infinity"):
        r = raw_post(client, "/api/book/vp", '{"player": "orcs", "points": %s}' % const)
        assert r.status_code == 400 and "finite" in r.get_json()["error"]
    assert client.get("/api/book/events?limit=\u00b2").status_code == 400
    assert client.get("/api/book/events?limit=\u0663").status_code == 400
    export = client.get("/api/book/export").get_json()
    r = client.post("/api/book/import", dict(export, state="not an object"))
    assert r.status_code == 400 and "state" in r.get_json()["error"]
    assert _events(client) == before
    json.loads(client.get("/api/book").get_data(as_text=True))  # still valid JSON


# -- F7: catalog file names ----------------------------------------------------------------------------------------

def test_f07_catalog_names_are_matched_whole_and_a_failed_save_leaves_no_tmp(client, data_dir):
    cat = {"format": "tablesight.catalog/1", "name": "h", "units": [{"key": "hh", "name": "Hh"}]}
    assert client.post("/api/book/catalog", {"name": "house\n", "catalog": cat}).status_code == 400
    r = raw_post(client, "/api/book/catalog",
                 '{"name": "house", "catalog": {"format": "tablesight.catalog/1", "name": "\\udc80", "units": []}}')
    assert r.status_code == 400
    folder = data_dir / "catalogs"
    assert not folder.exists() or not any(folder.iterdir())


# -- F8: a full disk while saving ---------------------------------------------------------------------------------

def test_f08_a_full_disk_while_saving_corrections_is_507_and_changes_nothing(client, data_dir, monkeypatch):
    assert client.post("/api/corrections/owner", {"disk": "d6", "player": "empire"}).status_code == 200
    saved = (data_dir / "corrections.json").read_bytes()
    before = client.get("/api/corrections").get_json()
    import webui.corrections as corr

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(corr.os, "fsync", full)
    r = client.post("/api/corrections/owner", {"disk": "d6", "player": "orcs"})
    assert r.status_code == 507 and "not saved" in r.get_json()["error"]
    monkeypatch.undo()
    assert (data_dir / "corrections.json").read_bytes() == saved
    assert client.get("/api/corrections").get_json() == before
    assert [p.name for p in data_dir.iterdir() if p.name.endswith(".tmp")] == []
    assert client.post("/api/corrections/owner", {"disk": "d6", "player": "orcs"}).status_code == 200


def test_f08_a_full_disk_while_writing_the_book_is_507_and_the_game_is_as_it_was(client, monkeypatch):
    import sqlite3

    started_book(client)
    book = client.app.extensions["tablesight.book"]
    before = client.get("/api/book").get_json()
    real = book._conn

    class Full:
        def __getattr__(self, name):
            return getattr(real, name)

        def execute(self, sql, *a):
            if sql.startswith("INSERT"):
                raise sqlite3.OperationalError("database or disk is full")
            return real.execute(sql, *a)

    monkeypatch.setattr(book, "_conn", Full())
    r = client.post("/api/book/tokens", {"disk": "d1", "player": "orcs", "damage": 1})
    assert r.status_code == 507 and "not saved" in r.get_json()["error"]
    monkeypatch.undo()
    assert not real.in_transaction
    assert client.get("/api/book").get_json() == before
    assert client.post("/api/book/tokens", {"disk": "d1", "player": "orcs", "damage": 1}).status_code == 200


# -- F9: implausible calibrations ---------------------------------------------------------------------------------

def _calibration_doc():
    import numpy as np

    from calibration.table import TableCalibration

    return TableCalibration(image_size=(1280, 720), homography=np.diag([0.8, 0.8, 1.0])).to_json()


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["rectified"].update(px_per_mm=1000), "rectified.px_per_mm"),
    (lambda d: d["rectified"].update(px_per_mm=0.001), "rectified.px_per_mm"),
    (lambda d: d.update(image_size=[100000, 720]), "image_size"),
    (lambda d: d["battlefield"].update(width_mm=1e7), "battlefield"),
])
def test_f09_an_implausible_calibration_is_refused_at_load_naming_the_field(tmp_path, edit, field):
    from calibration.table import TableCalibration

    doc = _calibration_doc()
    edit(doc)
    f = tmp_path / "table.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=field.replace(".", r"\.")):
        TableCalibration.load(f)
    for argv in (["detect", "frame.png", "--calibration", str(f)],
                 ["serve", "--images", str(tmp_path), "--calibration", str(f), "--port", "8799"]):
        p = subprocess.run([sys.executable, "-m", "tablesight", *argv], capture_output=True, text=True,
                           timeout=120, cwd=tmp_path)
        assert p.returncode == 2 and field in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


# -- F10: the network promise, banners, signals, scale, content types ---------------------------------------------

def test_f10_only_127_0_0_1_and_ipv6_loopback_serve_without_a_token():
    from webui.security import bind_needs_token, check_token

    assert not bind_needs_token("127.0.0.1") and not bind_needs_token("::1") and not bind_needs_token("[::1]")
    for host in ("127.0.0.2", "0.0.0.0", "::", "192.168.1.20"):
        assert bind_needs_token(host), host
    addrs = {i[4][0] for i in socket.getaddrinfo("localhost", None)}
    assert bind_needs_token("localhost") == (not addrs <= {"127.0.0.1", "::1"})
    with pytest.raises(InputError, match="128 bits"):
        check_token("short")
    assert check_token("A" * 22)


def test_f10_the_real_server_sends_no_version_banner(make_client):
    from webui.server import create_server

    c = make_client()
    server = create_server(c.app, "127.0.0.1", 0)
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    try:
        with socket.create_connection(("127.0.0.1", int(server.effective_port)), timeout=10) as s:
            s.sendall(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        head = data.split(b"\r\n\r\n", 1)[0].lower()
        assert head.startswith(b"http/1.1 200"), data[:200]
        assert b"\r\nserver:" not in head and b"waitress" not in head and b"python" not in head
    finally:
        server.close()


def test_f10_a_token_shorter_than_128_bits_is_refused_by_serve(tmp_path):
    env = dict(os.environ, TABLESIGHT_TOKEN="abc123")
    p = subprocess.run([sys.executable, "-m", "tablesight", "serve", "--host", "127.0.0.2", "--port", "8798",
                        "--scene", str(Path(__file__).parent / "scene_webui_skirmish.json")],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert p.returncode == 2 and "TABLESIGHT_TOKEN" in p.stderr


@pytest.mark.slow
def test_f10_sigterm_stops_serve_cleanly_and_checkpoints_the_book(tmp_path):
    _serve_then_signal(tmp_path, signal.SIGTERM)


@pytest.mark.slow
def test_f10_sigint_stops_serve_cleanly_and_checkpoints_the_book(tmp_path):
    _serve_then_signal(tmp_path, signal.SIGINT)


def _serve_then_signal(tmp_path, sig):
    """Start `tablesight serve`, send it `sig`: it must stop with exit 0 and leave the book checkpointed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "tablesight", "serve", "--port", str(port), "--data-dir",
                             str(tmp_path / "data"), "--scene", str(Path(__file__).parent / "scene_webui_skirmish.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                time.sleep(0.2)
        assert (tmp_path / "data" / "book.sqlite").exists()
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "stopped" in out
    assert not (tmp_path / "data" / "book.sqlite-wal").exists() or (tmp_path / "data" / "book.sqlite-wal").stat().st_size == 0


def test_f10_a_scene_over_the_disk_limit_is_refused_with_a_clear_message():
    doc = {"format": "tablesight.scene/1", "players": [],
           "disks": [{"id": f"d{i}", "x_mm": i, "y_mm": 0, "radius_mm": 10} for i in range(MAX_DISKS + 1)]}
    with pytest.raises(SceneError, match=f"at most {MAX_DISKS}"):
        Scene.from_json(doc)


def test_f10_the_report_of_40_disks_takes_under_50_ms():
    from rules.diskwars.report import build_report

    disks = [{"id": f"d{i}", "player": "a" if i % 2 else "b", "x_mm": 60 + (i % 8) * 105,
              "y_mm": 60 + (i // 8) * 160, "radius_mm": 22 if i % 3 else 32, "z": 0} for i in range(40)]
    scene = Scene.from_json({"format": "tablesight.scene/1", "players": [{"id": "a", "initiative": 1},
                                                                          {"id": "b", "initiative": 2}],
                             "disks": disks})
    build_report(scene)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        build_report(scene)
        times.append(time.perf_counter() - t0)
    assert sorted(times)[2] < 0.050, times


def test_f10_a_slow_report_never_blocks_a_view(make_client, monkeypatch):
    import webui.app as appmod

    monkeypatch.setattr(appmod, "REPORT_WAIT_S", 0.05)
    gate = threading.Event()
    c = make_client()

    real = c.comp._report_builder

    def slow(scene):
        gate.wait(10)
        return real(scene)

    c.comp._report_builder = slow
    c.comp.corrections.revision += 1  # a new key: the report must be computed again
    t0 = time.monotonic()
    v = c.get("/api/view").get_json()
    assert time.monotonic() - t0 < 2
    assert v["report_state"] == "computing" and v["report"] is None and v["key"].endswith("-computing")
    assert c.get("/api/report").status_code == 503
    gate.set()
    deadline = time.monotonic() + 10
    while c.get("/api/view").get_json()["report_state"] != "ready" and time.monotonic() < deadline:
        time.sleep(0.05)
    v = c.get("/api/view").get_json()
    assert v["report_state"] == "ready" and v["report"] is not None and not v["key"].endswith("-computing")


def test_f10_a_slow_report_leaves_the_last_report_on_the_page(make_client, monkeypatch):
    """While the rules work on a new table, /api/view carries the last finished report, named by the key and
    scene version it belongs to, with report_state "computing"; the new scene is there at once."""
    import webui.app as appmod

    monkeypatch.setattr(appmod, "REPORT_WAIT_S", 0.05)
    c = make_client()
    first = c.get("/api/view").get_json()
    assert first["report_state"] == "ready" and first["report_key"] == first["key"]
    assert first["report_version"] == first["version"]
    gate = threading.Event()
    real = c.comp._report_builder

    def slow(scene):
        gate.wait(10)
        return real(scene)

    c.comp._report_builder = slow
    c.comp.corrections.revision += 1  # a new table state: its report must be computed again
    t0 = time.monotonic()
    v = c.get("/api/view").get_json()
    assert time.monotonic() - t0 < 2
    assert v["report_state"] == "computing" and v["key"].endswith("-computing")
    assert v["report"] == first["report"] and v["report_key"] == first["key"]
    assert v["report_version"] == first["version"] and v["report_error"] is None
    assert v["scene"]["disks"]
    # the melee book never records from the earlier report, and /api/report does not pass it off as current
    assert c.get("/api/report").status_code == 503
    assert c.get("/api/melee").status_code == 503
    gate.set()
    deadline = time.monotonic() + 10
    while c.get("/api/view").get_json()["report_state"] != "ready" and time.monotonic() < deadline:
        time.sleep(0.05)
    v = c.get("/api/view").get_json()
    assert v["report_state"] == "ready" and v["report_key"] == v["key"] == first["key"].split(".")[0] + ".1"


def test_f10_json_is_never_parsed_by_guessing_the_content_type(client):
    started_book(client)
    r = raw_post(client, "/api/book/vp", '{"player": "orcs", "points": 1}', content_type="text/plain")
    assert r.status_code == 400 and "Content-Type" in r.get_json()["error"]


def test_check_text_refuses_what_is_not_printable_text():
    for bad in ("", " ", "a\x00", "a\u202eb", "\ud800", "a\nb", "x" * 65):
        with pytest.raises(InputError):
            check_text(bad, "f")
    assert check_text("Reikwald copse", "f") == "Reikwald copse"


def test_f07_no_pattern_lets_a_final_newline_or_a_unicode_digit_by(client):
    from tablesight.errors import FormatError
    from tablesight.formats import check_format

    for fmt in ("tablesight.scene/1\n", "tablesight.scene/\u00b9"):
        with pytest.raises(FormatError):
            check_format({"format": fmt}, "tablesight.scene")
    r = client.post("/api/corrections/owner", {"disk": "d6\n", "player": "orcs"})
    assert r.status_code == 400
    from rules.diskwars.catalog import CatalogError, Unit

    with pytest.raises(CatalogError):
        Unit(key="hh\n", name="Hh")
