"""The production HTTP server in front of the Flask app: waitress (pure Python, kept, runs on Linux, macOS and
Windows without a compiler). Flask's development server is never used to serve.

What it holds to (docs/webui.md, "Limits"):
- at most CONNECTION_LIMIT connections at once (well under the usual 1024 file descriptors), then new ones wait
  in the listen backlog instead of exhausting the process;
- a connection idle for IDLE_TIMEOUT_S (no request in progress) is closed, checked every second, so a flood of
  idle sockets cannot keep a player's page out for more than a few seconds;
- request bodies over `tablesight.limits.MAX_BODY_BYTES` are refused (413), headers over MAX_HEADER_BYTES too;
- THREADS request threads; the event streams (`/api/events`) hold at most THREADS - SPARE_THREADS of them, a page
  beyond that is told to reconnect, so a request thread is always free for the rest;
- no `Server` banner (no version disclosed).
"""

from __future__ import annotations

from typing import Any

from tablesight.limits import MAX_BODY_BYTES

THREADS = 32
SPARE_THREADS = 8
CONNECTION_LIMIT = 400
IDLE_TIMEOUT_S = 2
MAX_HEADER_BYTES = 64 * 1024


def raise_fd_limit() -> None:
    """Let this process open as many sockets as the system allows (POSIX; nothing to do elsewhere)."""
    try:
        import resource
    except ImportError:  # Windows
        return
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = hard if hard != resource.RLIM_INFINITY else 65536
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, 65536), hard))
    except (ValueError, OSError):
        pass


def create_server(app: Any, host: str, port: int, *, threads: int = THREADS,
                  connection_limit: int = CONNECTION_LIMIT, idle_timeout_s: float = IDLE_TIMEOUT_S) -> Any:
    """A waitress server for `app` on host:port (not yet serving: call `.run()`; `.close()` stops it).
    `.effective_port` is the port bound (port 0 picks a free one)."""
    from waitress.server import create_server as waitress_server

    raise_fd_limit()
    comp = getattr(app, "extensions", {}).get("tablesight.webui")
    if comp is not None and hasattr(comp, "set_max_streams"):
        comp.set_max_streams(max(1, threads - SPARE_THREADS))
    return waitress_server(
        app,
        host=host,
        port=port,
        threads=threads,
        connection_limit=connection_limit,
        channel_timeout=idle_timeout_s,
        cleanup_interval=1,
        max_request_body_size=MAX_BODY_BYTES,
        max_request_header_size=MAX_HEADER_BYTES,
        ident="",  # no Server header
        asyncore_use_poll=True,  # select() cannot watch more than 1024 sockets
        backlog=2048,
        expose_tracebacks=False,
        clear_untrusted_proxy_headers=True,
    )
