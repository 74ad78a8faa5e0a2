"""Versioned document formats: every file the project reads or writes carries `"format": "<kind>/<version>"`.

A reader accepts any minor version of the majors it knows and refuses others with a clear message, so a file
written by a newer tablesight is never silently misread.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tablesight.errors import FormatError, InputError

SCENE = "tablesight.scene"
REPORT = "tablesight.report"
MELEE = "tablesight.melee"
RANGED = "tablesight.ranged"
MOVE = "tablesight.move"
DEPLOYMENT = "tablesight.deployment"

_FORMAT_RE = re.compile(r"^(?P<kind>[a-z][a-z0-9_.\-]*)/(?P<major>[0-9]{1,6})(?:\.(?P<minor>[0-9]{1,6}))?\Z")


def format_string(kind: str, major: int = 1) -> str:
    return f"{kind}/{major}"


def check_format(doc: Any, kind: str, supported_majors: tuple[int, ...] = (1,), what: str | None = None) -> int:
    """Check `doc["format"]` names `kind` with a supported major version; return that major version."""
    what = what or kind
    if not isinstance(doc, dict):
        raise FormatError(f"{what}: expected a JSON object, got {type(doc).__name__}")
    fmt = doc.get("format")
    if not isinstance(fmt, str):
        raise FormatError(f"{what}: missing 'format' string (expected '{format_string(kind)}')")
    m = _FORMAT_RE.match(fmt)
    if not m or m.group("kind") != kind:
        raise FormatError(f"{what}: format is '{fmt}', expected '{format_string(kind)}'")
    major = int(m.group("major"))
    if major not in supported_majors:
        known = ", ".join(format_string(kind, v) for v in supported_majors)
        raise FormatError(f"{what}: format '{fmt}' has unknown major version {major} (this tablesight reads {known})")
    return major


def load_json_file(path: str | Path, what: str = "file") -> Any:
    """Read a JSON file, turning every way it can go wrong into one InputError line.

    The text goes through `tablesight.limits.parse_json`: finite numbers, bounded depth, sizes and text."""
    from tablesight.limits import MAX_FILE_BYTES, parse_json

    p = Path(path)
    try:
        if p.is_file() and p.stat().st_size > MAX_FILE_BYTES:
            raise InputError(f"{what} '{p}': too large ({p.stat().st_size} bytes; at most {MAX_FILE_BYTES})")
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{what} '{p}': no such file") from None
    except IsADirectoryError:
        raise InputError(f"{what} '{p}': is a directory, expected a JSON file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{what} '{p}': cannot read it ({exc.__class__.__name__}: {exc})") from None
    return parse_json(text, f"{what} '{p}'")


def dump_json(doc: Any) -> str:
    """The project's one JSON style: compact keys order as built, two-space indent, UTF-8."""
    return json.dumps(doc, indent=2, ensure_ascii=False)
