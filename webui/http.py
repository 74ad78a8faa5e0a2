"""The one shape of an API error: `{"error": reason}` with its HTTP status."""

from __future__ import annotations

from flask import Response, jsonify


def json_error(status: int, message: str) -> Response:
    resp = jsonify({"error": message})
    resp.status_code = status
    return resp
