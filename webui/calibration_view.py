"""The calibration page's API: what the table calibration of a camera feed says about itself.

For the demo table and scene files there is no camera calibration: the routes say "not available for this
source" instead of showing numbers that mean nothing.
"""

from __future__ import annotations

import time
from typing import Any

from flask import Flask, Response, jsonify

_NO_CAMERA = {"demo": "the demo table", "file": "a scene file"}


def _num(v: Any, nd: int = 3) -> float | None:
    try:
        return None if v is None else round(float(v), nd)
    except (TypeError, ValueError):
        return None


def _jsonable(v: Any) -> Any:
    if hasattr(v, "to_json"):
        return v.to_json()
    if hasattr(v, "tolist"):
        return v.tolist()
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, float):
        return round(v, 4)
    return v


def calibration_json(feed: Any) -> dict[str, Any]:
    kind = getattr(feed, "kind", "live")
    if kind in _NO_CAMERA:
        return {"available": False, "reason": f"not available for this source ({_NO_CAMERA[kind]}: no camera)"}
    calib = getattr(feed, "calibration", None)
    if calib is None:
        return {"available": False, "reason": "this source has no table calibration yet"}
    doc = calib.to_json() if hasattr(calib, "to_json") else {}
    out: dict[str, Any] = {"available": True, "calibration": _jsonable(doc)}
    health = feed.state().health
    out["age_s"] = _num(health.calibration_age_s, 1)
    out["error_mm"] = _num(health.calibration_error_mm, 2)
    drift = getattr(feed, "drift", None)
    if drift is not None:
        status = drift.status() if callable(getattr(drift, "status", None)) else getattr(drift, "state", None)
        out["drift"] = _jsonable(status)
    out["can_recalibrate"] = callable(getattr(feed, "recalibrate", None))
    out["checked_at"] = time.time()
    return out


def register(app: Flask, comp: Any) -> None:
    @app.get("/api/calibration")
    def api_calibration() -> Response:
        return jsonify(calibration_json(comp.feed))

    @app.post("/api/calibration/recalibrate")
    def api_recalibrate() -> Response:
        doc = calibration_json(comp.feed)
        if not doc["available"]:
            resp = jsonify({"error": doc["reason"]})
            resp.status_code = 409
            return resp
        if not doc.get("can_recalibrate"):
            resp = jsonify({"error": "this source cannot recalibrate while serving"})
            resp.status_code = 409
            return resp
        comp.feed.recalibrate()
        comp.poke()
        return jsonify(calibration_json(comp.feed))
