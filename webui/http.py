"""The one shape of an API error (`{"error": reason}` with its HTTP status) and the one way a JSON body is read."""

from __future__ import annotations

from typing import Any

from flask import Response, jsonify, request

from tablesight.errors import InputError
from tablesight.limits import MAX_BODY_BYTES, parse_json


def json_error(status: int, message: str) -> Response:
    resp = jsonify({"error": message})
    resp.status_code = status
    return resp


def json_body(empty_ok: bool = False) -> dict[str, Any]:
    """The request's JSON object, through the project's validation layer (`tablesight.limits`).

    The body must say it is JSON (`Content-Type: application/json`): nothing is parsed by guessing. Over
    MAX_BODY_BYTES the server has answered 413 before this runs. `empty_ok`: no body at all reads as `{}`."""
    length = request.content_length
    if length is not None and length > MAX_BODY_BYTES:
        from werkzeug.exceptions import RequestEntityTooLarge

        raise RequestEntityTooLarge()  # 413, whatever the app's own limit
    raw = request.get_data(cache=True)
    if not raw and empty_ok:
        return {}
    if not request.is_json:
        raise InputError("expected a JSON object as the body (Content-Type: application/json)")
    body = parse_json(raw, "body")
    if not isinstance(body, dict):
        raise InputError("expected a JSON object as the body")
    return body
