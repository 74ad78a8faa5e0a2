"""`tablesight serve`: choosing the source, clear one-line refusals, the printed address, a real server."""

from __future__ import annotations

import importlib

import json
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tablesight.cli import build_parser, main
from tablesight.errors import InputError
from webui import commands
from webui.feeds import SceneFileFeed

SKIRMISH = str(Path(__file__).parent / "scene_webui_skirmish.json")


def args(*argv):
    return build_parser().parse_args(["serve", *argv])


def test_scene_source(tmp_path):
    feed, what = commands.make_feed(args("--scene", SKIRMISH), tmp_path)
    assert isinstance(feed, SceneFileFeed) and "scene file" in what


@pytest.mark.parametrize("argv,reason", [
    (["--video", "no-such-video.mp4"], "no such file"),
    (["--images", "no-such-folder"], "no such folder"),
    (["--scene", "no-such-scene.json"], "no such file"),
    (["--camera", "3", "--calibration", "no-such-table.json"], "no such file"),
])
def test_missing_inputs_are_one_line(tmp_path, argv, reason):
    with pytest.raises(InputError, match=reason):
        commands.make_feed(args(*argv), tmp_path)


def test_camera_without_calibration_says_how_to_get_one(tmp_path):
    with pytest.raises(InputError, match="needs a table calibration.*tablesight calibrate"):
        commands.make_feed(args("--camera", "3"), tmp_path)


def test_camera_probe_never_hangs():
    t0 = time.monotonic()
    ok = commands.probe_camera(97, timeout_s=1.0)
    assert ok is False
    assert time.monotonic() - t0 < 2.0


def test_page_urls_carry_the_token_only_when_shared():
    assert commands.page_urls("127.0.0.1", 8650, None) == ["http://127.0.0.1:8650/"]
    urls = commands.page_urls("192.168.1.5", 8650, "abc")
    assert urls == ["http://192.168.1.5:8650/?token=abc"]
    assert all(u.endswith("/?token=abc") for u in commands.page_urls("0.0.0.0", 8650, "abc"))


@pytest.mark.parametrize("argv,reason", [
    (["--scene", SKIRMISH, "--port", "0"], "--port"),
    (["--scene", SKIRMISH, "--port", "70000"], "--port"),
])
def test_bad_port_is_exit_2(argv, reason, capsys):
    assert main(["serve", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tablesight serve:") and reason in err and len(err.strip().splitlines()) == 1


def test_data_dir_that_is_a_file_is_refused(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["serve", "--scene", SKIRMISH, "--data-dir", str(f)]) == 2
    assert "not a folder" in capsys.readouterr().err


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(exe):
    """Start `tablesight serve`, return (process, printed lines up to the address)."""
    proc = subprocess.Popen(exe, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "open http" in line:
            break
    return proc, "".join(lines)


def _stop(proc):
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return proc.returncode


@pytest.mark.slow
def test_serve_without_a_source_runs_the_demo_table(tmp_path):
    """The README's main command: no camera here, so the demo table, said in the terminal and by the API."""
    importlib.import_module("vision.synth.sequence")
    if Path("/dev/video0").exists():
        pytest.skip("this machine has a camera: serve would try it")
    port = free_port()
    proc, out = _start([sys.executable, "-m", "tablesight", "serve", "--port", str(port),
                        "--data-dir", str(tmp_path / "data")])
    try:
        assert "no camera found; running the demo table" in out
        assert f"open http://127.0.0.1:{port}/" in out
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/view", timeout=10) as r:
            view = json.loads(r.read())
        assert view["health"]["source"] == "demo" and view["has_frame"] and view["scene"]["disks"]
        assert view["report"]["format"] == "tablesight.report/1"
    finally:
        assert _stop(proc) == 0


@pytest.mark.slow
def test_serve_prints_the_address_and_serves(tmp_path):
    port = free_port()
    exe = [sys.executable, "-m", "tablesight", "serve", "--scene", SKIRMISH, "--port", str(port),
           "--data-dir", str(tmp_path / "data")]
    proc, printed = _start(exe)
    try:
        url = re.search(r"open (http://\S+)", printed).group(1)
        assert url == f"http://127.0.0.1:{port}/"
        with urllib.request.urlopen(url + "api/health", timeout=5) as r:
            assert json.loads(r.read())["source"] == "file"
        # A second server on the same port: one clear line, exit status 2.
        second = subprocess.run(exe, capture_output=True, text=True, timeout=30)
        assert second.returncode == 2
        assert second.stderr.startswith("tablesight serve: cannot listen on")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0


@pytest.mark.slow
def test_serve_an_image_folder_through_the_vision_pipeline(tmp_path):
    """--images with a calibration runs vision.live.LiveTable: the page gets its rectified frame, the calibration
    page its numbers, and a folder without a calibration is one clear line."""
    cv2 = pytest.importorskip("cv2")
    importlib.import_module("vision.live")
    seq = importlib.import_module("vision.synth.sequence").demo_sequence(7)
    from calibration.table import calibrate_table

    frames = tmp_path / "frames"
    frames.mkdir()
    frame = seq[0][0]
    for i in range(3):
        cv2.imwrite(str(frames / f"frame_{i:03d}.png"), frame)
    calibrate_table(frame).save(tmp_path / "table.json")

    with pytest.raises(InputError, match="needs a table calibration"):
        commands.make_feed(args("--images", str(frames)), tmp_path / "nodata")
    # A table.json in the data directory is used when --calibration is not given.
    data = tmp_path / "data"
    data.mkdir()
    (data / "table.json").write_bytes((tmp_path / "table.json").read_bytes())
    feed, what = commands.make_feed(args("--images", str(frames)), data)
    from webui.app import create_app

    app = create_app(feed, data)
    try:
        c = app.test_client()
        h = {"Host": "127.0.0.1"}
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not c.get("/api/view", headers=h).get_json()["has_frame"]:
            time.sleep(0.2)
        v = c.get("/api/view", headers=h).get_json()
        assert v["has_frame"] and v["health"]["kind"] == "live"
        assert v["frame_geometry"]["size_mm"] == [980.0, 980.0]
        assert c.get("/api/frame.jpg", headers=h).mimetype == "image/jpeg"
        cal = c.get("/api/calibration", headers=h).get_json()
        assert cal["available"] is True and cal["calibration"]["format"] == "tablesight.table/1"
        assert cal["drift"]["status"] in ("unchecked", "ok") and cal["can_recalibrate"] is True
        assert c.get("/api/calibration/frame.jpg", headers=h).mimetype == "image/jpeg"
        # Recalibrate: a new table.json in the data directory (the image folder still shows the same frame).
        (data / "table.json").unlink()
        comp = app.extensions["tablesight.webui"]
        r = c.post("/api/calibration/recalibrate", json={}, headers=dict(
            h, Origin="http://127.0.0.1", **{"X-Tablesight-Token": comp.write_key}))
        assert r.status_code == 200, r.get_json()
        assert (data / "table.json").is_file() and "table.json" in r.get_json()["message"]
    finally:
        feed.stop()
        app.extensions["tablesight.webui"].stop()


@pytest.mark.parametrize("content,reason", [
    ("{broken", "corrections"),
    ('{"format": "tablesight.corrections/7"}', "unknown major version"),
])
def test_a_broken_corrections_file_stops_serve_with_one_line(tmp_path, capsys, content, reason):
    data = tmp_path / "data"
    data.mkdir()
    (data / "corrections.json").write_text(content)
    assert main(["serve", "--scene", SKIRMISH, "--data-dir", str(data), "--port", str(free_port())]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tablesight serve:") and reason in err and len(err.splitlines()) == 1
    assert (data / "corrections.json").read_text() == content  # left untouched


def test_an_unwritable_data_dir_is_one_line(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert main(["serve", "--scene", SKIRMISH, "--data-dir", str(blocker / "data")]) == 2
    err = capsys.readouterr().err.strip()
    assert "cannot write there" in err and len(err.splitlines()) == 1


def test_a_refused_source_writes_nothing(tmp_path, capsys):
    data = tmp_path / "data"
    assert main(["serve", "--camera", "5", "--data-dir", str(data), "--port", str(free_port())]) == 2
    assert "needs a table calibration" in capsys.readouterr().err
    assert not data.exists()


def test_a_damaged_game_book_stops_serve_with_one_line(tmp_path, capsys):
    importlib.import_module("webui.book")
    data = tmp_path / "data"
    data.mkdir()
    (data / "book.sqlite").write_bytes(b"this is not a game book" * 100)
    assert main(["serve", "--scene", SKIRMISH, "--data-dir", str(data), "--port", str(free_port())]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tablesight serve:") and "book" in err and len(err.splitlines()) == 1
    assert (data / "book.sqlite").read_bytes() == b"this is not a game book" * 100
