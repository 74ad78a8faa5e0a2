"""`tablesight serve`: choosing the source, clear one-line refusals, the printed address, a real server."""

from __future__ import annotations

import json
import os
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


@pytest.mark.slow
def test_serve_prints_the_address_and_serves(tmp_path):
    port = free_port()
    exe = [sys.executable, "-m", "tablesight", "serve", "--scene", SKIRMISH, "--port", str(port),
           "--data-dir", str(tmp_path / "data")]
    proc = subprocess.Popen(exe, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "open http" in line:
                break
        url = re.search(r"open (http://\S+)", "".join(lines)).group(1)
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
