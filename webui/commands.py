"""`tablesight serve`: pick the source, build the app, print the address, serve until Ctrl-C."""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from tablesight.errors import InputError
from webui.security import bind_needs_token, check_token, new_token

DEFAULT_DATA_DIR = "gamedata"
CAMERA_PROBE_S = 3.0


def _say(msg: str) -> None:
    print(f"tablesight serve: {msg}", flush=True)


def probe_camera(index: int = 0, timeout_s: float = CAMERA_PROBE_S) -> bool:
    """True when camera `index` opens and gives a frame within `timeout_s` (never hangs the start)."""
    if sys.platform.startswith("linux") and not Path(f"/dev/video{index}").exists():
        return False
    result: list[bool] = []

    def attempt() -> None:
        try:
            import cv2

            cap = cv2.VideoCapture(index)
            try:
                result.append(bool(cap.isOpened() and cap.read()[0]))
            finally:
                cap.release()
        except Exception:
            result.append(False)

    t = threading.Thread(target=attempt, name="camera-probe", daemon=True)
    t.start()
    t.join(timeout_s)
    return bool(result and result[0])


def _calibration_path(args: argparse.Namespace, data_dir: Path) -> Path | None:
    if args.calibration:
        p = Path(args.calibration)
        if not p.is_file():
            raise InputError(f"--calibration '{p}': no such file")
        return p
    p = data_dir / "table.json"
    return p if p.is_file() else None


def _live_feed(source_kind: str, source_arg: Any, calibration_path: Path | None, data_dir: Path) -> Any:
    """A vision.live.LiveTable for a camera, video, stream or image folder (with the calibration page's extras)."""
    if calibration_path is None:
        raise InputError(
            f"a {source_kind} source needs a table calibration: run 'tablesight calibrate FRAME.jpg -o table.json' "
            "and pass --calibration table.json (or put table.json in the data directory)"
        )
    from calibration.table import TableCalibration
    from vision import sources
    from vision.live import LiveTable

    from webui.camera import CameraFeed

    calibration = TableCalibration.load(calibration_path)
    source = sources.open_source(**{source_kind: source_arg})
    return CameraFeed(LiveTable(source, calibration), data_dir)


def make_feed(args: argparse.Namespace, data_dir: Path) -> tuple[Any, str]:
    """The feed for the command line's source and a one-line description of it."""
    from webui.feeds import SceneFileFeed

    if args.scene:
        return SceneFileFeed(args.scene), f"scene file {args.scene}"
    if args.demo:
        return demo_feed(args.demo)
    for kind, value in (("camera", args.camera), ("video", args.video), ("url", args.url), ("images", args.images)):
        if value is not None:
            if kind in ("video", "images") and not Path(value).exists():
                raise InputError(f"--{kind} '{value}': no such {'file' if kind == 'video' else 'folder'}")
            return _live_feed(kind, value, _calibration_path(args, data_dir), data_dir), f"{kind} {value}"
    # No source given: camera 0 when there is one (and a calibration), else the demo table.
    if probe_camera(0):
        calib = _calibration_path(args, data_dir)
        if calib is not None:
            return _live_feed("camera", 0, calib, data_dir), "camera 0"
        _say("camera 0 found, but no table calibration (pass --calibration table.json); running the demo table")
    else:
        _say("no camera found; running the demo table")
    feed, what = demo_feed(DEFAULT_DEMO)
    return feed, f"{what} (no camera)"


#: What `--demo` plays: "eye" the synthetic game rendered and detected by the camera pipeline (the default, with
#: the ground truth beside it), "truth" the synthetic game's ground truth itself.
DEMO_KINDS = ("eye", "truth")
DEFAULT_DEMO = "eye"


def demo_feed(kind: str) -> tuple[Any, str]:
    """The demo table of that kind and a one-line description of it."""
    if kind == "truth":
        from webui.feeds import DemoFeed

        return DemoFeed(), "demo table (a looping synthetic game, its ground truth)"
    if kind == "eye":
        from webui.demo_eye import DemoEyeFeed

        return DemoEyeFeed(), "demo table (a looping synthetic game, rendered and seen by the camera pipeline)"
    raise InputError(f"--demo: expected one of {', '.join(DEMO_KINDS)}, got {kind!r}")


def _lan_addresses() -> list[str]:
    out = []
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET: nothing is sent, the OS just picks the outgoing address
            out.append(s.getsockname()[0])
        finally:
            s.close()
    except OSError:
        pass
    return out


def page_urls(host: str, port: int, token: str | None) -> list[str]:
    q = f"/?token={token}" if token else "/"
    if host in ("0.0.0.0", "::", ""):
        hosts = _lan_addresses() or ["<this computer's address>"]
    else:
        hosts = [host]
    return [f"http://{'[' + h + ']' if ':' in h else h}:{port}{q}" for h in hosts]


def _check_port_free(host: str, port: int) -> None:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise InputError(f"--host '{host}': cannot resolve it ({exc.strerror})") from None
    family, _, _, _, addr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(addr)
        except OSError as exc:
            raise InputError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); try another --port") from None


def serve(args: argparse.Namespace) -> int:
    import signal

    from webui.app import create_app
    from webui.server import create_server

    if not 0 < args.port < 65536:
        raise InputError(f"--port: expected 1-65535, got {args.port}")
    data_dir = Path(args.data_dir or DEFAULT_DATA_DIR)
    if data_dir.exists() and not data_dir.is_dir():
        raise InputError(f"--data-dir '{data_dir}': exists and is not a folder")
    token = None
    if bind_needs_token(args.host):
        given = os.environ.get("TABLESIGHT_TOKEN")
        token = check_token(given) if given else new_token()
    _check_port_free(args.host, args.port)  # before the feed starts, with one clear line
    feed, what = make_feed(args, data_dir)  # a bad source is refused before anything is written
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        probe = data_dir / ".tablesight-write-check"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise InputError(f"--data-dir '{data_dir}': cannot write there ({exc.strerror or exc})") from None
    app = create_app(feed, data_dir, token=token, start=False)
    comp = app.extensions["tablesight.webui"]
    book = app.extensions.get("tablesight.book")

    def _on_signal(signum: int, frame: Any) -> None:
        comp.stop()  # ends the event streams, so the request threads are free to stop
        raise KeyboardInterrupt

    # The handlers go in before the server is made: its port takes connections from then on, and a signal sent
    # once it does must stop it cleanly, not kill it with the book open.
    for name in ("SIGTERM", "SIGINT", "SIGBREAK"):
        if hasattr(signal, name):
            try:
                signal.signal(getattr(signal, name), _on_signal)
            except (ValueError, OSError):  # not the main thread (tests): Ctrl-C handling stays as it is
                pass
    server = None
    refused = False
    try:
        try:
            server = create_server(app, args.host, args.port)
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot listen on {args.host}:{args.port} ({exc}); try another --port") from None
        logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # "task queue depth" lines are not for players
        feed.start()
        comp.start()
        _say(f"serving {what}; data in {data_dir.resolve()}")
        urls = page_urls(args.host, int(server.effective_port), token)
        for url in urls:
            print(f"  open {url}", flush=True)
        if token and "<" not in urls[0]:  # shared on the network at a known address: the page shows it as a QR code
            from webui.phone import PHONE_URLS

            app.extensions[PHONE_URLS] = urls
        if token:
            _say("shared on the network: the address carries the access token; keep it among the players")
        server.run()  # returns on SIGTERM / SIGINT (KeyboardInterrupt) after shutting its threads down
    except KeyboardInterrupt:
        pass
    except InputError:
        refused = True
        raise
    finally:
        comp.stop()
        feed.stop()
        if server is not None:
            try:
                server.close()
            except Exception:
                pass
        if book is not None:
            book.close()  # checkpoints the WAL: a clean stop leaves one database file
        if not refused:
            _say("stopped")
    return 0
