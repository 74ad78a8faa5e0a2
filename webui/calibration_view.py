"""The calibration page's API: what the table calibration of a camera feed says about itself.

For the demo table and scene files there is no camera calibration: the routes say "not available for this
source" instead of showing numbers that mean nothing.

What a camera feed offers the page (duck-typed, each optional): `feed.calibration` (the
`calibration.table.TableCalibration` in use), `feed.drift` (a `calibration.drift.DriftMonitor`),
`feed.latest_frame()` (the newest raw camera frame, BGR), `feed.recalibrate()` (fit a new calibration on the
current frame and use it) and `feed.use_disk_diameters((small, medium, large))` (detect with measured sizes).
"""

from __future__ import annotations

import time
from typing import Any

from flask import Flask, Response, jsonify
from webui.http import json_error

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
    if kind in _NO_CAMERA and getattr(feed, "calibration", None) is None:
        # (the demo seen through the eye has a real calibration, of its rendered frames: that one is shown)
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
        out["drift"] = _jsonable(drift.state())
    out["can_recalibrate"] = callable(getattr(feed, "recalibrate", None))
    out["can_measure_disks"] = callable(getattr(feed, "latest_frame", None))
    out["can_use_disk_diameters"] = callable(getattr(feed, "use_disk_diameters", None))
    if callable(getattr(feed, "latest_frame", None)):
        out["frame_url"] = "/api/calibration/frame.jpg"
    out["message"] = str(getattr(feed, "message", "") or "")
    out["checked_at"] = time.time()
    return out


def annotated_frame(frame_bgr: Any, calib: Any) -> Any:
    """The raw frame with what calibration sees: markers found now (green, with ids), where the calibration
    expects them (red outlines, from its fit), the battlefield outline and the ruler it measured (yellow)."""
    import cv2
    import numpy as np

    from calibration.aruco import detect_markers

    img = frame_bgr.copy()
    layout = calib.layout
    th = max(2, int(round(img.shape[1] / 640)))
    for m in layout.corners:
        px = calib.table_to_image(np.array(m.corners_mm, np.float64))
        cv2.polylines(img, [np.round(px).astype(np.int32)], True, (60, 60, 255), th, cv2.LINE_AA)
    w, h = calib.battlefield_mm
    field_px = calib.table_to_image(np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float64))
    cv2.polylines(img, [np.round(field_px).astype(np.int32)], True, (255, 255, 255), th, cv2.LINE_AA)
    found = detect_markers(img, layout.dictionary, ids=set(layout.all_ids))
    for mid, mk in found.items():
        pts = np.round(mk.corners_px).astype(np.int32)
        cv2.polylines(img, [pts], True, (60, 220, 60), th + 1, cv2.LINE_AA)
        c = tuple(int(v) for v in mk.center_px)
        cv2.putText(img, str(mid), c, cv2.FONT_HERSHEY_SIMPLEX, 0.5 * th, (0, 0, 0), 3 * th, cv2.LINE_AA)
        cv2.putText(img, str(mid), c, cv2.FONT_HERSHEY_SIMPLEX, 0.5 * th, (60, 255, 60), th, cv2.LINE_AA)
    ruler = getattr(calib, "ruler", None)
    if ruler is not None:
        ends = calib.table_to_image(np.array([ruler.start_mm, ruler.end_mm], np.float64))
        a, b = (tuple(int(round(v)) for v in p) for p in ends)
        cv2.line(img, a, b, (0, 220, 255), th + 1, cv2.LINE_AA)
        for p in (a, b):
            cv2.circle(img, p, 4 * th, (0, 220, 255), -1, cv2.LINE_AA)
    return img


def register(app: Flask, comp: Any) -> None:
    @app.get("/api/calibration/frame.jpg")
    def api_calibration_frame() -> Response:
        doc = calibration_json(comp.feed)
        if not doc["available"] or "frame_url" not in doc:
            return json_error(404, doc.get("reason") or "this source gives no camera frame")
        frame = comp.feed.latest_frame()
        if frame is None:
            return json_error(404, "no camera frame yet")
        from webui.feeds import encode_jpeg

        jpeg = encode_jpeg(annotated_frame(frame, comp.feed.calibration), quality=85)
        return Response(jpeg, mimetype="image/jpeg", headers={"Cache-Control": "no-store"})

    @app.get("/api/calibration")
    def api_calibration() -> Response:
        return jsonify(calibration_json(comp.feed))

    @app.post("/api/calibration/measure-disks")
    def api_measure_disks() -> Response:
        """Measure the three disk diameters from disks laid apart on the table in the current frame."""
        doc = calibration_json(comp.feed)
        if not doc["available"] or not doc.get("can_measure_disks"):
            return json_error(409, doc.get("reason") or "this source gives no camera frame to measure")
        frame = comp.feed.latest_frame()
        if frame is None:
            return json_error(409, "no camera frame yet")
        from calibration.disk_sizes import measure_disk_diameters

        m = measure_disk_diameters(frame, comp.feed.calibration)  # InputError (no disks found) -> 400
        out = {"measurement": m.to_json(), "applied": False}
        if doc.get("can_use_disk_diameters"):
            comp.feed.use_disk_diameters(m.diameters_mm)
            out["applied"] = True
        return jsonify(out)

    @app.post("/api/calibration/recalibrate")
    def api_recalibrate() -> Response:
        doc = calibration_json(comp.feed)
        if not doc["available"]:
            return json_error(409, doc["reason"])
        if not doc.get("can_recalibrate"):
            return json_error(409, "this source cannot recalibrate while serving")
        comp.feed.recalibrate()
        comp.poke()
        return jsonify(calibration_json(comp.feed))
