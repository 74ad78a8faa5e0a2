"""What the page shows about one disk, from the scene, its report and the rules' pure query helpers.

Distances, bands, "wholly within" and line of sight to every other disk come from the report's `pairs`, the
deviation order from its `deviation` section (or `rules.diskwars.deviation_candidates`), the terrain under the
disk from `terrain_overlaps`: one computation per scene, shared by every tap. Nothing here measures on its own:
the rules are the one place that does.
"""

from __future__ import annotations

from typing import Any

from tablesight.errors import InputError
from tablesight.scene import Scene


def _pair_view(pair: Any, me: str) -> dict[str, Any]:
    """One report pair seen from disk `me`."""
    other = pair.b if pair.a == me else pair.a
    wholly = pair.wholly_band if pair.a == me else pair.wholly_band_ba
    line = None
    if pair.los_line_mm is not None:
        p, q = pair.los_line_mm
        line = [list(p), list(q)] if pair.a == me else [list(q), list(p)]
    return {
        "id": other,
        "distance_mm": round(float(pair.distance_mm), 2),
        "band": pair.band,
        "wholly_band": wholly,
        "los": bool(pair.los),
        "los_line_mm": line,
    }


def _deviation(scene: Scene, report: Any, disk_id: str) -> tuple[list[dict[str, Any]] | None, str | None]:
    """Deviation candidates against `disk_id`, nearest first, each with the margin of any near-tie call."""
    cands = None
    for dev in getattr(report, "deviation", ()) or ():
        if dev.target == disk_id:
            cands = dev.candidates
            break
    if cands is None:
        from rules.diskwars import deviation_candidates

        try:
            cands = deviation_candidates(scene, disk_id, report=report)
        except InputError as exc:
            return None, str(exc)
    ties = {}
    for b in report.borderline:
        if b.kind == "deviation" and b.a == disk_id and b.b is not None:
            ties[b.b] = min(ties.get(b.b, float("inf")), b.margin_mm)
    out = []
    for c in cands:
        doc = c.to_json()
        margin = ties.get(c.disk)
        doc["margin_mm"] = None if margin is None else round(float(margin), 2)
        out.append(doc)
    return out, None


def _terrain_under(scene: Scene, report: Any, disk_id: str) -> list[str]:
    return [o.terrain for o in getattr(report, "terrain_overlaps", ()) or () if o.disk == disk_id]


def disk_details(scene: Scene, report: Any | None, disk_id: str) -> dict[str, Any]:
    """Everything the disk panel shows; raises InputError for a disk that is not on the table."""
    try:
        disk = scene.disk(disk_id)
    except KeyError:
        raise InputError(f"disk: no disk {disk_id!r} on the table now") from None
    out: dict[str, Any] = {
        "disk": disk.to_json(),
        "range_bands_mm": scene.range_bands.as_dict(),
        "terrain_under": [],
        "others": [],
        "pins": [],
        "pinned_by": [],
        "engagements": [],
        "harried": False,
        "deviation": None,
        "deviation_error": None,
    }
    if report is None:
        out["deviation_error"] = "no report for this scene"
        return out
    out["others"] = sorted(
        (_pair_view(p, disk_id) for p in report.pairs if disk_id in (p.a, p.b)),
        key=lambda o: (o["distance_mm"], o["id"]),
    )
    out["pins"] = [p.pinned for p in report.pins if p.pinner == disk_id]
    out["pinned_by"] = [p.pinner for p in report.pins if p.pinned == disk_id]
    out["engagements"] = [
        {"id": e.id, "role": "attacker" if disk_id in e.attackers else "defender"}
        for e in report.engagements
        if disk_id in e.attackers or disk_id in e.defenders
    ]
    out["harried"] = disk_id in report.harried
    out["borderline"] = [b.to_json() for b in report.borderline if disk_id in (b.a, b.b)]
    out["terrain_under"] = _terrain_under(scene, report, disk_id)
    out["deviation"], out["deviation_error"] = _deviation(scene, report, disk_id)
    return out
