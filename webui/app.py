"""The web companion's Flask app: the live table page, the calibration page and the JSON API (docs/webui.md).

`create_app(feed, data_dir, token=None)` builds it around a feed (anything with the `vision.live.LiveTable`
methods). One background thread blocks on `feed.wait_for_change` and wakes every page's server-sent-event
stream (`/api/events`); pages then fetch `/api/view` — the corrected scene, its report and the health line,
computed once per (scene version, corrections revision) however many phones are watching.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator

from flask import Flask, Response, jsonify, render_template, request

from tablesight.errors import InputError, StorageError
from tablesight.limits import MAX_BODY_BYTES
from tablesight.scene import Scene
from webui import queries
from webui.corrections import Corrections, TERRAIN_NAME_KEYWORDS
from webui.feeds import health_json
from webui.security import TOKEN_HEADER, host_name, is_loopback, new_token, same_origin, same_token
from webui.http import json_body, json_error

log = logging.getLogger(__name__)

SSE_KEEPALIVE_S = 15.0
#: Event streams held open at once; a page beyond them is told the state and to come back (`retry`), so every open
#: page still hears of each change (within SSE_RETRY_MS) while server threads stay free for the other requests.
MAX_EVENT_STREAMS = 24
SSE_RETRY_MS = 3000
#: How long a view waits for its report before answering with the scene and a "computing" report state.
REPORT_WAIT_S = 0.5
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
_STATE_CHANGING = ("POST", "PUT", "PATCH", "DELETE")


@dataclass(frozen=True)
class View:
    """One corrected scene and everything the page draws from it."""

    key: str  # "<scene version>.<corrections revision>" (+ "-computing"): changes whenever the page must redraw
    version: int
    busy: bool
    raw_scene: Scene
    scene: Scene
    report: Any | None  # rules.report.Report of THIS scene; None when the rules could not judge it or are at work
    # The report the page draws: this scene's when ready; while the rules are at work on this scene, the last
    # finished report (of an earlier version of the table, named by report_key/report_version), or None.
    report_json: dict[str, Any] | None
    report_error: str | None
    frame_jpeg: bytes | None
    report_state: str = "ready"  # "computing": the rules are still at work on this scene (report is None)
    report_key: str | None = None  # the view key ("<scene version>.<corrections revision>") report_json is of
    report_version: int | None = None  # the scene version report_json is of (< version while computing)


def _version_of(key: str) -> int:
    """The scene version of a view key "<scene version>.<corrections revision>"."""
    return int(key.split(".", 1)[0])


def _build_report(scene: Scene) -> Any:
    from rules.diskwars.report import build_report

    return build_report(scene)


class Companion:
    """The state behind one app: the feed, the corrections, the cached view and the event hub."""

    def __init__(self, feed: Any, data_dir: Path, token: str | None,
                 report_builder: Callable[[Scene], Any] = _build_report) -> None:
        self.feed = feed
        self.data_dir = data_dir
        self.token = token
        # On loopback the page gets a per-start write key inside its HTML (see webui/security.py).
        self.write_key = token or new_token()
        self.boot_id = new_token()[:8]
        self.corrections = Corrections(data_dir)
        self._report_builder = report_builder
        self._view_lock = threading.Lock()
        self._view: View | None = None
        self._hub = threading.Condition()
        self._seq = 0
        self._event: dict[str, Any] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.max_streams = MAX_EVENT_STREAMS
        self._streams = threading.BoundedSemaphore(MAX_EVENT_STREAMS)
        # The report worker: one thread computes the report of the newest scene asked for, so a slow report never
        # holds up a view (the page gets the scene at once and the report when it is ready).
        self._report_cond = threading.Condition()
        self._report_want: tuple[str, Scene] | None = None
        self._report_done: tuple[str, Any, Any, str | None] | None = None
        self._report_thread: threading.Thread | None = None

    def set_max_streams(self, n: int) -> None:
        self.max_streams = max(1, int(n))
        self._streams = threading.BoundedSemaphore(self.max_streams)

    # -- the report worker -------------------------------------------------------------------------------------
    def _compute_report(self, scene: Scene, version: Any) -> tuple[Any, Any, str | None]:
        try:
            report = self._report_builder(scene)
            return report, report.to_json(), None
        except InputError as exc:
            return None, None, f"the rules cannot judge this scene: {exc}"
        except Exception as exc:  # a fault in the rules must not take the table page down with it
            log.exception("rules failed on scene version %s", version)
            return None, None, f"the rules failed on this scene ({exc.__class__.__name__}: {exc})"

    def _report_for(self, key: str, scene: Scene, wait_s: float) -> tuple[Any, Any, str | None] | None:
        """The report of `scene` (under `key`), waiting at most `wait_s`; None while it is still being computed."""
        deadline = time.monotonic() + wait_s
        with self._report_cond:
            if self._report_done is not None and self._report_done[0] == key:
                return self._report_done[1:]
            if self._report_want is None or self._report_want[0] != key:
                self._report_want = (key, scene)
                self._report_cond.notify_all()
            if self._report_thread is None or not self._report_thread.is_alive():
                self._report_thread = threading.Thread(target=self._run_reports, name="webui-report", daemon=True)
                self._report_thread.start()
            while not (self._report_done is not None and self._report_done[0] == key):
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._report_cond.wait(left)
            return self._report_done[1:]

    def _run_reports(self) -> None:
        while True:
            with self._report_cond:
                while self._report_want is None:
                    if not self._report_cond.wait(30.0) and self._report_want is None:
                        self._report_thread = None
                        return  # idle: the next view starts another
                key, scene = self._report_want
            result = self._compute_report(scene, key)
            with self._report_cond:
                self._report_done = (key, *result)
                if self._report_want is not None and self._report_want[0] == key:
                    self._report_want = None
                self._report_cond.notify_all()
            try:
                self.poke()  # pages that got "computing" fetch the view again
            except Exception:  # the feed's own failure is reported by the hub
                log.exception("publishing a finished report failed")

    def _pending(self, base_key: str) -> bool:
        with self._report_cond:
            return self._report_want is not None and self._report_want[0] == base_key and not (
                self._report_done is not None and self._report_done[0] == base_key)

    # -- the view ----------------------------------------------------------------------------------------------
    def view(self) -> View:
        st = self.feed.state()
        key = f"{st.version}.{self.corrections.revision}"
        with self._view_lock:
            v = self._view
            if v is not None and v.key == key:
                if v.busy != st.busy or (v.frame_jpeg is None and st.frame_jpeg is not None):
                    v = replace(v, busy=st.busy, frame_jpeg=v.frame_jpeg or st.frame_jpeg)
                    self._view = v
                return v
            if v is not None and v.key == f"{key}-computing":
                scene = v.scene
            else:
                scene = self.corrections.apply(st.scene)
            done = self._report_for(key, scene, REPORT_WAIT_S)
            if done is None:
                v = self._computing_view(key, st, scene)
            else:
                report, report_json, error = done
                v = View(key, st.version, st.busy, st.scene, scene, report, report_json, error, st.frame_jpeg,
                         report_key=key if report_json is not None else None,
                         report_version=st.version if report_json is not None else None)
            self._view = v
        if v.report_state == "computing":
            self.poke()
        return v

    def _computing_view(self, key: str, st: Any, scene: Scene) -> View:
        """The view of a scene whose report is still being computed: the scene at once, with the last finished
        report (of an earlier table) for the page to keep showing, marked as computing."""
        with self._report_cond:
            last = self._report_done
        if last is not None and last[2] is not None:
            last_key = last[0]
            return View(f"{key}-computing", st.version, st.busy, st.scene, scene, None, last[2], None,
                        st.frame_jpeg, report_state="computing", report_key=last_key,
                        report_version=_version_of(last_key))
        return View(f"{key}-computing", st.version, st.busy, st.scene, scene, None, None,
                    "computing the rules report for this table…", st.frame_jpeg, report_state="computing")

    def tell_tracker(self, track_id: str, kind: str, value: Any) -> None:
        """Pass a stored correction on to a feed whose tracker takes them (vision.live.LiveTable), so that it
        also guides tracking and stacking over time. The stored correction is applied to every scene anyway;
        a tracker that cannot take it (e.g. a player it does not know) is not an error for the player."""
        apply = getattr(self.feed, "apply_correction", None)
        if apply is None:
            return
        try:
            from vision.tracker import Correction

            apply(Correction(track_id, kind, value))
        except (ImportError, InputError) as exc:
            log.info("tracker did not take correction %s %s: %s", track_id, kind, exc)

    def workers(self) -> dict[str, bool]:
        """Each background thread this app relies on, and whether it still runs."""
        out: dict[str, bool] = {}
        if self._thread is not None:
            out["events"] = self._thread.is_alive()
        feed_workers = getattr(self.feed, "workers", None)
        if feed_workers is not None:
            try:
                out.update(feed_workers())
            except Exception as exc:  # a feed that cannot even say is not healthy
                log.info("feed workers() failed: %s", exc)
                out["feed"] = False
        return out

    def health(self) -> dict[str, Any]:
        st = self.feed.state()
        out = health_json(st.health)
        out["busy"] = bool(st.busy)
        out["version"] = st.version
        out["kind"] = getattr(self.feed, "kind", "live")
        workers = self.workers()
        stopped = sorted(k for k, alive in workers.items() if not alive)
        out["workers"] = workers
        out["healthy"] = not stopped
        if stopped:
            out["message"] = (f"stopped: {', '.join(stopped)} — restart tablesight serve. " + out["message"]).strip()
        return out

    # -- the event hub -------------------------------------------------------------------------------------------
    def _snapshot(self) -> dict[str, Any]:
        st = self.feed.state()
        key = f"{st.version}.{self.corrections.revision}"
        if self._pending(key):
            key += "-computing"
        return {"key": key, "version": st.version, "busy": bool(st.busy), "health": health_json(st.health)}

    def poke(self) -> None:
        """Publish the current state to every event stream (after a correction, or when the feed changed)."""
        snap = self._snapshot()
        with self._hub:
            if snap != self._event:
                self._event = snap
                self._seq += 1
                self._hub.notify_all()

    def _run_hub(self) -> None:
        last = -1
        while not self._stop.is_set():
            try:
                st = self.feed.wait_for_change(last, 0.5)
                last = st.version
                self.poke()
            except Exception as exc:  # a feed failure must not kill the hub: show it and keep trying
                with self._hub:
                    self._event = dict(self._event, error=f"{exc.__class__.__name__}: {exc}")
                    self._seq += 1
                    self._hub.notify_all()
                self._stop.wait(1.0)

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self.poke()
            self._thread = threading.Thread(target=self._run_hub, name="webui-hub", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self._hub:
            self._hub.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=3.0)
            self._thread = None

    def events(self, keepalive_s: float = SSE_KEEPALIVE_S, max_s: float | None = None) -> Iterator[str]:
        """The server-sent event stream of one page: the state at once, then every change.

        At most `max_streams` streams are held open; a page beyond them gets the state and is told to reconnect
        in SSE_RETRY_MS (the browser does that by itself), so it still hears of every change."""
        held = self._streams
        if not held.acquire(blocking=False):
            with self._hub:
                event = dict(self._event)
            yield f"retry: {SSE_RETRY_MS}\nevent: state\ndata: {json.dumps(event)}\n\n"
            return
        try:
            seq = -1
            started = time.monotonic()
            while not self._stop.is_set():
                with self._hub:
                    if self._seq == seq:
                        self._hub.wait(keepalive_s)
                    changed = self._seq != seq
                    seq, event = self._seq, dict(self._event)
                if changed:
                    yield f"event: state\ndata: {json.dumps(event)}\n\n"
                else:
                    yield ": keepalive\n\n"
                if max_s is not None and time.monotonic() - started > max_s:
                    return
        finally:
            held.release()


# ---------------------------------------------------------------------------------------------------------------


def frame_geometry(feed: Any, scene: Scene) -> dict[str, Any]:
    """Where the rectified frame lies on the table: table mm at its top-left corner and the mm it spans.

    The span, not the pixel scale, places the image: a feed may encode the page's view smaller than its
    calibration's rectified scale (the rectified area is the battlefield plus a margin on every side)."""
    calib = getattr(feed, "frame_calibration", None) or getattr(feed, "calibration", None)
    ox, oy = (float(v) for v in getattr(calib, "rectified_origin_mm", (-40.0, -40.0)))
    bw, bh = getattr(calib, "battlefield_mm", (scene.battlefield.width_mm, scene.battlefield.height_mm))
    return {"origin_mm": [ox, oy], "size_mm": [float(bw) - 2 * ox, float(bh) - 2 * oy]}


GZIP_MIN_BYTES = 8192


def _gzip(resp: Response) -> Response:
    """Compress a large JSON answer (a report of many disks) for a phone on a busy wifi."""
    if (resp.mimetype != "application/json" or resp.direct_passthrough or resp.status_code != 200
            or "gzip" not in request.headers.get("Accept-Encoding", "").lower()
            or "Content-Encoding" in resp.headers):
        return resp
    data = resp.get_data()
    if len(data) < GZIP_MIN_BYTES:
        return resp
    import gzip

    resp.set_data(gzip.compress(data, compresslevel=5))
    resp.headers["Content-Encoding"] = "gzip"
    resp.headers["Vary"] = "Accept-Encoding"
    return resp


def _json_body() -> dict[str, Any]:
    return json_body()


def create_app(feed: Any, data_dir: str | Path, token: str | None = None, *,
               report_builder: Callable[[Scene], Any] | None = None, start: bool = True) -> Flask:
    """The companion app around `feed`, keeping corrections (and the game book) in `data_dir`.

    `token`: the access token every request must carry (give one whenever the server listens beyond loopback).
    The feed is started here (unless `start=False`); `app.extensions["tablesight.webui"].stop()` stops the
    event hub (the caller stops the feed).
    """
    data_dir = Path(data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    _preload_rules()
    comp = Companion(feed, data_dir, token, report_builder or _build_report)
    here = Path(__file__).parent
    app = Flask("webui", static_folder=str(here / "static"), template_folder=str(here / "templates"),
                static_url_path="/static")
    app.config["JSON_SORT_KEYS"] = False
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES  # a larger body: 413 before anything reads it
    app.json.sort_keys = False  # keep the contract's field order
    app.extensions["tablesight.webui"] = comp
    app.extensions["tablesight.feed"] = feed
    app.extensions["tablesight.data_dir"] = data_dir
    _register_book(app, data_dir)

    @app.errorhandler(InputError)
    def _bad_input(exc: InputError) -> Response:
        return json_error(400, str(exc))

    @app.errorhandler(StorageError)
    def _not_saved(exc: StorageError) -> Response:
        log.warning("not saved: %s", exc)
        return json_error(507, str(exc))

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> Response:
        from werkzeug.exceptions import HTTPException

        if isinstance(exc, HTTPException):
            return exc  # type: ignore[return-value]
        log.exception("unexpected error on %s %s", request.method, request.path)
        return json_error(500, f"internal error ({exc.__class__.__name__}); see the server log")

    @app.errorhandler(413)
    def _too_large(exc: Any) -> Response:
        return json_error(413, f"request body too large (at most {MAX_BODY_BYTES} bytes)")

    @app.errorhandler(404)
    def _not_found(exc: Any) -> Response:
        if request.path.startswith("/api/"):
            return json_error(404, f"no such route: {request.method} {request.path}")
        return Response("Not found", 404, mimetype="text/plain")

    @app.errorhandler(405)
    def _bad_method(exc: Any) -> Response:
        return json_error(405, f"{request.method} is not allowed on {request.path}")

    @app.before_request
    def _guard() -> Response | None:
        host = request.headers.get("Host", "")
        if comp.token is None and not is_loopback(host_name(host)):
            return json_error(403, "this server answers only on 127.0.0.1 / localhost (start it with --host to share it)")
        if comp.token is not None and request.endpoint != "static":  # page code is public; data is not
            given = request.headers.get(TOKEN_HEADER) or request.args.get("token")
            if not same_token(given, comp.token):
                if request.path.startswith("/api/"):
                    return json_error(401, "missing or wrong access token: open the address printed by 'tablesight serve'")
                return Response(_NEEDS_TOKEN_HTML, 401, mimetype="text/html")
        if request.method in _STATE_CHANGING:
            origin = request.headers.get("Origin")
            referer = request.headers.get("Referer")
            if origin is not None and not same_origin(origin, host):
                return json_error(403, "cross-site request refused (Origin is not this server)")
            if origin is None and referer is not None and not same_origin(referer, host):
                return json_error(403, "cross-site request refused (Referer is not this server)")
            if not same_token(request.headers.get(TOKEN_HEADER), comp.write_key):
                return json_error(403, f"missing or wrong {TOKEN_HEADER} header")
        return None

    @app.after_request
    def _headers(resp: Response) -> Response:
        resp.headers.setdefault("X-Content-Type-Options", "nosniff")
        resp.headers.setdefault("Referrer-Policy", "same-origin")
        resp.headers.setdefault("X-Frame-Options", "DENY")
        # Everything the page uses is served from here; nothing inline runs (inline styles are attributes only).
        resp.headers.setdefault("Content-Security-Policy", CSP)
        if request.path.startswith("/api/") and "Cache-Control" not in resp.headers:
            resp.headers["Cache-Control"] = "no-store"
        return _gzip(resp)

    # -- pages -------------------------------------------------------------------------------------------------
    def _page(name: str) -> str:
        # On loopback the page carries the write key; with an access token the page takes it from its address.
        return render_template(name, write_key="" if comp.token else comp.write_key,
                               needs_token=comp.token is not None)

    @app.get("/")
    def index() -> str:
        return _page("index.html")

    @app.get("/calibration")
    def calibration_page() -> str:
        return _page("calibration.html")

    # -- read routes ---------------------------------------------------------------------------------------------
    @app.get("/api/scene")
    def api_scene() -> Response:
        return jsonify(comp.view().scene.to_json())

    @app.get("/api/report")
    def api_report() -> Response:
        v = comp.view()
        if v.report_state == "computing":
            resp = json_error(503, v.report_error or "computing")
            resp.headers["Retry-After"] = "1"
            return resp
        if v.report_json is None:
            return json_error(503, v.report_error or "no report")
        return jsonify(v.report_json)

    @app.get("/api/health")
    def api_health() -> Response:
        h = comp.health()
        resp = jsonify(h)
        if not h["healthy"]:
            resp.status_code = 503  # a stopped worker: the page may still answer, but the table no longer updates
        return resp

    @app.get("/api/view")
    def api_view() -> Response:
        v = comp.view()
        return jsonify({
            "key": v.key,
            "version": v.version,
            "busy": v.busy,
            "scene": v.scene.to_json(),
            "report": v.report_json,
            "report_error": v.report_error,
            "report_state": v.report_state,
            "report_key": v.report_key,
            "report_version": v.report_version,
            "has_frame": v.frame_jpeg is not None,
            "frame_geometry": frame_geometry(comp.feed, v.scene),
            "health": comp.health(),
            "corrections": comp.corrections.to_json(),
            "hidden_disks": comp.corrections.hidden_disks(),
        })

    @app.get("/api/disk/<disk_id>")
    def api_disk(disk_id: str) -> Response:
        v = comp.view()
        if disk_id not in {d.id for d in v.scene.disks}:
            return json_error(404, f"no disk {disk_id[:80]!r} on the table now")
        return jsonify(queries.disk_details(v.scene, v.report, disk_id))

    @app.get("/api/frame.jpg")
    def api_frame() -> Response:
        v = comp.view()
        if v.frame_jpeg is None:
            return json_error(404, "no camera image for this source")
        # Revalidated every time (a restarted server starts its versions again), answered 304 while unchanged.
        etag = f'"{comp.boot_id}-{v.key}"'
        headers = {"ETag": etag, "Cache-Control": "private, no-cache"}
        if request.headers.get("If-None-Match") == etag:
            return Response(status=304, headers=headers)
        return Response(v.frame_jpeg, mimetype="image/jpeg", headers=headers)

    @app.get("/api/events")
    def api_events() -> Response:
        max_s = app.config.get("TABLESIGHT_SSE_MAX_S")  # tests end the stream; browsers reconnect anyway
        return Response(comp.events(max_s=max_s), mimetype="text/event-stream",
                        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    @app.get("/api/corrections")
    def api_corrections() -> Response:
        out = comp.corrections.to_json()
        out["terrain_name_keywords"] = {k: list(v) for k, v in TERRAIN_NAME_KEYWORDS.items()}
        return jsonify(out)

    # -- corrections ---------------------------------------------------------------------------------------------
    def _correct(fn: Callable[[dict[str, Any], Scene], dict[str, Any]],
                 tracker: Callable[[dict[str, Any]], tuple[str, str, Any]] | None = None) -> Response:
        body = _json_body()
        out = fn(body, comp.feed.state().scene)
        if tracker is not None:
            comp.tell_tracker(*tracker(body))
        comp.poke()
        return jsonify(out)

    def _only(body: dict[str, Any], *allowed: str) -> None:
        unknown = sorted(set(body) - set(allowed))
        if unknown:
            raise InputError(f"unknown field(s) {', '.join(map(repr, unknown))} (allowed: {', '.join(allowed)})")
        missing = [k for k in allowed if k not in body and k not in ("keywords", "not_disk")]
        if missing:
            raise InputError(f"missing field(s): {', '.join(missing)}")

    @app.post("/api/corrections/owner")
    def correct_owner() -> Response:
        def fn(b: dict[str, Any], raw: Scene) -> dict[str, Any]:
            _only(b, "disk", "player")
            return comp.corrections.set_owner(raw, b["disk"], b["player"])
        return _correct(fn, lambda b: (b["disk"], "owner", b["player"]))

    @app.post("/api/corrections/unit")
    def correct_unit() -> Response:
        def fn(b: dict[str, Any], raw: Scene) -> dict[str, Any]:
            from webui.book_api import current_catalog

            _only(b, "disk", "unit")
            return comp.corrections.set_unit(raw, b["disk"], b["unit"], catalog=current_catalog())
        return _correct(fn, lambda b: (b["disk"], "unit", b["unit"]))

    @app.post("/api/corrections/not-a-disk")
    def correct_not_disk() -> Response:
        def fn(b: dict[str, Any], raw: Scene) -> dict[str, Any]:
            _only(b, "disk", "not_disk")
            return comp.corrections.set_not_disk(raw, b["disk"], b.get("not_disk", True))
        return _correct(fn, lambda b: (b["disk"], "not_a_disk", b.get("not_disk", True)))

    @app.post("/api/corrections/on-top")
    def correct_on_top() -> Response:
        def fn(b: dict[str, Any], raw: Scene) -> dict[str, Any]:
            _only(b, "upper", "lower")
            return comp.corrections.set_on_top(raw, b["upper"], b["lower"])
        return _correct(fn, lambda b: (b["upper"], "above", b["lower"]))

    @app.post("/api/corrections/terrain")
    def correct_terrain() -> Response:
        def fn(b: dict[str, Any], raw: Scene) -> dict[str, Any]:
            _only(b, "terrain", "name", "keywords")
            return comp.corrections.set_terrain(raw, b["terrain"], b["name"], b.get("keywords"))
        return _correct(fn)

    @app.post("/api/corrections/players")
    def correct_players() -> Response:
        def fn(b: dict[str, Any], raw: Scene) -> dict[str, Any]:
            _only(b, "players")
            return comp.corrections.set_players(b["players"])
        return _correct(fn)

    @app.post("/api/corrections/clear")
    def correct_clear() -> Response:
        def fn(b: dict[str, Any], raw: Scene) -> dict[str, Any]:
            unknown = sorted(set(b) - {"disk", "terrain"})
            if unknown:
                raise InputError(f"unknown field(s) {', '.join(map(repr, unknown))} (allowed: disk, terrain)")
            return comp.corrections.clear(b.get("disk"), b.get("terrain"))
        return _correct(fn)

    # -- calibration ---------------------------------------------------------------------------------------------
    from webui import calibration_view

    calibration_view.register(app, comp)
    from webui import phone

    phone.register(app)

    # -- the demo's ground truth (webui/demo_view.py) -----------------------------------------------------------
    from webui import demo_view

    demo_view.register(app, comp)

    # -- setting up the armies, unit names by first letters, saving the table (webui/setup_api.py) ---------------
    from webui import setup_api

    setup_api.register(app, comp)

    if start:
        feed.start()
        comp.start()
    return app


def _preload_rules() -> None:
    """Import the rules once, here, before request threads and the hub import them at the same moment (a
    package imported concurrently from two threads can be seen half-initialised)."""
    import importlib

    for name in ("rules.diskwars", "rules.diskwars.report", "rules.melee_commands"):
        importlib.import_module(name)


def _register_book(app: Flask, data_dir: Path) -> None:
    """The melee book's blueprint (webui/book_api.py) with its GameBook."""
    from webui.book import GameBook
    from webui.book_api import blueprint

    app.extensions["tablesight.book"] = GameBook(data_dir / "book.sqlite")
    app.register_blueprint(blueprint)


_NEEDS_TOKEN_HTML = """<!doctype html><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>tablesight: access token needed</title>
<body style="font:18px system-ui;margin:2em;max-width:30em;background:#15181c;color:#eee">
<h1>Access token needed</h1>
<p>This table is shared on the network. Open the full address that <code>tablesight serve</code> printed
(it ends in <code>?token=...</code>).</p></body>"""
