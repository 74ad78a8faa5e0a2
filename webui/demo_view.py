"""`GET /api/demo/truth`: the demo table's ground truth beside what the camera pipeline detected.

Only a feed that knows the truth of its frames (`truth_for(version)`, the demo table seen through the eye,
`webui.demo_eye.DemoEyeFeed`) answers; any other source gets 404 with the reason. The disagreements compare the
camera's scene (before the players' corrections: what the camera got wrong) with the truth of the frame it was
detected on, matched as the detector benchmarks match them (`vision.scene_match`).
"""

from __future__ import annotations

from typing import Any

from flask import Flask, Response, jsonify

from vision.scene_match import disagreements, summary
from webui.http import json_error


def truth_json(feed: Any) -> dict[str, Any] | None:
    """The truth document of the feed's current version (None when the feed has no truth)."""
    truth_for = getattr(feed, "truth_for", None)
    if not callable(truth_for):
        return None
    st = feed.state()
    truth = truth_for(st.version)
    found = [] if truth is None else disagreements(truth, st.scene)
    return {
        "version": st.version,
        "truth": None if truth is None else truth.to_json(),
        "disagreements": [d.to_json() for d in found],
        "summary": summary(found),
        "calibration": str(getattr(feed, "calibration_how", "") or ""),
    }


def register(app: Flask, comp: Any) -> None:
    @app.get("/api/demo/truth")
    def api_demo_truth() -> Response:
        doc = truth_json(comp.feed)
        if doc is None:
            return json_error(404, "no ground truth: only the demo table (tablesight serve --demo) knows it")
        return jsonify(doc)
