"""The one validation layer under every JSON document tablesight reads: API bodies, query numbers and files.

Every JSON text is parsed by `parse_json` (files through `tablesight.formats.load_json_file`, request bodies
through `webui.http.json_body`) and walked by `check_json` before any schema looks at it. That walk enforces what
holds for every document, whatever its kind:

- numbers are finite (`NaN`, `Infinity` refused) and whole numbers fit in ±2**53;
- nesting is at most `MAX_DEPTH` deep (a deeper text is refused, never a RecursionError);
- a list or object holds at most `MAX_ITEMS` entries, a string at most `MAX_STRING` characters;
- strings are real text: no lone surrogates, no NUL or other control characters but tab and line breaks, no
  bidirectional-override characters (that would make a name read differently from what it is).

The schemas above it (the Scene, the catalog, the calibration, the corrections, the game book) then check their
own fields with the helpers here: `check_text` for a name or id (printable, bounded), `parse_limit` for a query
number. Each refusal is an `InputError` naming the field: the API answers 400 (413 for a body over
`MAX_BODY_BYTES`), the command line prints one line and exits 2. The limits are stated in docs/webui.md.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from tablesight.errors import InputError

MAX_BODY_BYTES = 1024 * 1024  # one request body (an imported game of five rounds is ~100 kB)
MAX_FILE_BYTES = 16 * 1024 * 1024  # one JSON file read from disk
MAX_DEPTH = 32  # the deepest document tablesight writes is 8 levels
MAX_ITEMS = 20_000  # entries of one list or object
MAX_STRING = 20_000  # characters of any one string
MAX_TEXT = 500  # a free-text field (a reason, a game's name, an objective's text)
MAX_NAME = 64  # a name or id (players, disks, units, terrain)
MAX_INT = 2 ** 53
MAX_LENGTH_MM = 1_000_000.0  # any coordinate or length of a scene: a table is a few metres; 1e300 would overflow
MAX_DISKS = 300  # disks in one scene: a full table holds a few hundred at most
MAX_TERRAIN = 100  # terrain pieces in one scene
MAX_POLYGON_POINTS = 1000  # corners of one terrain polygon or zone

#: Bidirectional controls (LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI, PDI, ALM, LRM, RLM): text that reads
#: differently from what it is.
_BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u061c\u200e\u200f"
# Anything a stored string may not hold: C0 controls but \t \n \r, DEL and C1 controls, bidi controls, surrogates.
_BAD_CHAR = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{_BIDI}\ud800-\udfff]")


def _bad_char_reason(s: str) -> str | None:
    m = _BAD_CHAR.search(s)
    if m is None:
        return None
    c = m.group()
    if "\ud800" <= c <= "\udfff":
        return f"holds a lone surrogate (U+{ord(c):04X}): not text"
    if c in _BIDI:
        return f"holds a bidirectional control character (U+{ord(c):04X})"
    return f"holds a control character (U+{ord(c):04X})"


def _refuse_constant(name: str) -> Any:
    raise InputError(f"'{name}' is not a number JSON allows (numbers must be finite)")


def parse_json(text: str | bytes, what: str) -> Any:
    """Parse a JSON text and run `check_json` on it; every failure is one InputError line naming `what`."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{what}: not UTF-8 text (byte {exc.start})") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    # Refuse deep nesting before the parser recurses into it (a RecursionError is no answer to a user).
    _check_depth_text(text, what)
    try:
        doc = json.loads(text, parse_constant=_refuse_constant)
    except InputError as exc:
        raise InputError(f"{what}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{what}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise InputError(f"{what}: nested too deeply (at most {MAX_DEPTH} levels)") from None
    check_json(doc, what)
    return doc


_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)


def _check_depth_text(text: str, what: str) -> None:
    """Refuse a text nested deeper than MAX_DEPTH (strings skipped; brackets need not balance: the parser says)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    depth = 0
    for m in _BRACKETS.finditer(text):
        tok = m.group()
        if tok in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise InputError(f"{what}: nested too deeply (at most {MAX_DEPTH} levels)")
        elif tok in "]}":
            depth -= 1


def check_json(doc: Any, what: str) -> None:
    """The limits every document keeps (see the module docstring). Iterative: any depth is safe to walk."""
    stack: list[tuple[Any, str, int]] = [(doc, what, 0)]
    while stack:
        v, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise InputError(f"{path}: nested too deeply (at most {MAX_DEPTH} levels)")
        if isinstance(v, str):
            _check_string(v, path, MAX_STRING)
        elif isinstance(v, bool) or v is None:
            continue
        elif isinstance(v, int):
            if abs(v) > MAX_INT:
                raise InputError(f"{path}: {v} is out of range (at most ±2**53)")
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise InputError(f"{path}: must be a finite number, got {v!r}")
        elif isinstance(v, dict):
            if len(v) > MAX_ITEMS:
                raise InputError(f"{path}: too many entries ({len(v)}; at most {MAX_ITEMS})")
            for k, item in v.items():
                if not isinstance(k, str):
                    raise InputError(f"{path}: keys must be strings")
                _check_string(k, f"{path}: key", MAX_NAME * 4)
                stack.append((item, f"{path}.{k}", depth + 1))
        elif isinstance(v, (list, tuple)):
            if len(v) > MAX_ITEMS:
                raise InputError(f"{path}: too many entries ({len(v)}; at most {MAX_ITEMS})")
            for i, item in enumerate(v):
                stack.append((item, f"{path}[{i}]", depth + 1))
        else:
            raise InputError(f"{path}: not a JSON value ({type(v).__name__})")


def _check_string(s: str, path: str, max_len: int) -> None:
    if len(s) > max_len:
        raise InputError(f"{path}: too long ({len(s)} characters; at most {max_len})")
    why = _bad_char_reason(s)
    if why:
        raise InputError(f"{path}: {why}")


def check_text(value: Any, path: str, max_len: int = MAX_NAME, *, allow_empty: bool = False,
               multiline: bool = False) -> str:
    """A name or text field: a string of at most `max_len` printable characters (line breaks only when
    `multiline`); returns it unchanged. Raises InputError naming `path`."""
    if not isinstance(value, str):
        raise InputError(f"{path}: expected a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise InputError(f"{path}: expected a non-empty string")
    if len(value) > max_len:
        raise InputError(f"{path}: too long ({len(value)} characters; at most {max_len})")
    why = _bad_char_reason(value)
    if why:
        raise InputError(f"{path}: {why}")
    if not multiline and any(c in value for c in "\t\n\r"):
        raise InputError(f"{path}: must be one line of text")
    return value


def is_text(value: Any, max_len: int = MAX_NAME) -> bool:
    try:
        check_text(value, "", max_len)
    except InputError:
        return False
    return True


_ASCII_DIGITS = re.compile(r"[0-9]{1,9}")


def parse_limit(raw: str | None, name: str, lo: int, hi: int, default: int) -> int:
    """A whole number from a query string (ASCII digits only: '²' is a digit to Python, not to us)."""
    if raw is None:
        return default
    if not _ASCII_DIGITS.fullmatch(raw) or not lo <= int(raw) <= hi:
        raise InputError(f"{name}: a whole number {lo}..{hi}, got {raw[:20]!r}")
    return int(raw)
