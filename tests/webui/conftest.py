"""Fixtures for the web companion's tests: an app on the skirmish scene file, with a fresh data directory."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from webui.app import create_app
from webui.feeds import SceneFileFeed

HERE = Path(__file__).parent
SKIRMISH = HERE / "scene_webui_skirmish.json"
LOCAL = {"Host": "127.0.0.1:8650"}
ORIGIN = "http://127.0.0.1:8650"


@pytest.fixture
def scene_path(tmp_path: Path) -> Path:
    p = tmp_path / "scene.json"
    shutil.copy(SKIRMISH, p)
    return p


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "gamedata"


class Client:
    """A Flask test client that talks like the page: loopback Host, same Origin, the write key on POSTs."""

    def __init__(self, app, token: str | None = None):
        self.app = app
        self.http = app.test_client()
        self.comp = app.extensions["tablesight.webui"]
        self.token = token

    def get(self, path: str, **kw):
        headers = dict(LOCAL)
        if self.token:
            headers["X-Tablesight-Token"] = self.token
        headers.update(kw.pop("headers", {}))
        return self.http.get(path, headers=headers, **kw)

    def post(self, path: str, body=None, headers: dict | None = None, **kw):
        h = dict(LOCAL, Origin=ORIGIN)
        h["X-Tablesight-Token"] = self.comp.write_key
        h.update(headers or {})
        return self.http.post(path, json=body, headers=h, **kw)


@pytest.fixture
def make_client(scene_path: Path, data_dir: Path):
    made = []

    def make(token: str | None = None, data: Path | None = None, feed=None) -> Client:
        feed = feed or SceneFileFeed(scene_path)
        app = create_app(feed, data or data_dir, token=token)
        made.append((app, feed))
        return Client(app, token)

    yield make
    for app, feed in made:
        feed.stop()
        app.extensions["tablesight.webui"].stop()


@pytest.fixture
def client(make_client) -> Client:
    return make_client()
