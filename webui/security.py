"""Who may talk to the companion, and how (the page runs on the players' own network, never on the internet).

- Bound to `127.0.0.1` or `::1` (the default is 127.0.0.1) — or to `localhost` when that name resolves to
  loopback addresses only — the page needs no access token, but the Host header must name this machine
  (`127.0.0.1`, `localhost`, `[::1]`): a foreign web page that rebinds its DNS name to 127.0.0.1 is refused.
- Bound to any other address (`127.0.0.2` and `0.0.0.0` included), every request needs the access token printed
  at start (at least 128 bits: `TABLESIGHT_TOKEN` must be 22 or more URL-safe characters): in the page address
  (`?token=...`, which the page keeps and sends as the `X-Tablesight-Token` header) or in that header.
- Every state-changing request (POST, PUT, PATCH, DELETE) must come from this page: a JSON body, an `Origin`
  (or, lacking it, `Referer`) of this very server, and the `X-Tablesight-Token` header carrying the access token
  — or, on loopback, the per-start write key the page receives inside its HTML.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import secrets
import socket

from tablesight.errors import InputError
from urllib.parse import urlsplit

TOKEN_HEADER = "X-Tablesight-Token"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
#: The only addresses served without a token (and `localhost` when it resolves to loopback only).
TOKENLESS_BIND = ("127.0.0.1", "::1")
MIN_TOKEN_CHARS = 22  # 22 URL-safe characters = 132 bits
_TOKEN_RE = re.compile(r"[A-Za-z0-9_\-]+")


def bind_needs_token(host: str) -> bool:
    """Whether serving on `host` needs the access token: every address but 127.0.0.1 and ::1 does; `localhost`
    is treated as loopback only when every address it resolves to is a loopback one."""
    h = host.strip().strip("[]")
    if h in TOKENLESS_BIND:
        return False
    if h.lower() == "localhost":
        try:
            addrs = {info[4][0] for info in socket.getaddrinfo(h, None)}
        except OSError:
            return True
        return not addrs or not all(a.split("%")[0] in TOKENLESS_BIND for a in addrs)
    return True


def check_token(token: str) -> str:
    """A token given by the user (TABLESIGHT_TOKEN): at least MIN_TOKEN_CHARS URL-safe characters."""
    if len(token) < MIN_TOKEN_CHARS or not _TOKEN_RE.fullmatch(token):
        raise InputError(f"TABLESIGHT_TOKEN: needs at least {MIN_TOKEN_CHARS} characters of A-Z a-z 0-9 _ - "
                         f"(128 bits); got {len(token)} characters")
    return token


def new_token() -> str:
    """An access token that is easy to type from the terminal yet infeasible to guess (128 bits)."""
    return secrets.token_urlsafe(16)


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(host_header: str) -> str:
    """The name part of a Host header ('127.0.0.1:8650' -> '127.0.0.1', '[::1]:80' -> '::1')."""
    h = host_header.strip()
    if h.startswith("["):
        return h[1 : h.find("]")] if "]" in h else h
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


def same_token(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def same_origin(url: str, host_header: str) -> bool:
    """True when `url` (an Origin or Referer) points at this server as the browser reached it."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and parts.netloc.lower() == host_header.strip().lower()
