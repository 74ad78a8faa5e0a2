"""What the page shows about one disk, from the scene, its report and the rules' pure query helpers.

Distances, bands, "wholly within" and line of sight to every other disk come from the report's `pairs` (one
computation per scene, shared by every tap); the deviation candidates come from
`rules.diskwars.deviation_candidates`. Nothing here measures on its own: the rules are the one place that does.
"""

from __future__ import annotations

from typing import Any

from tablesight.errors import InputError
from tablesight.scene import Scene


def known_units() -> set[str] | None:
    """Catalog keys, when the unit catalog is installed (None: accept any well-formed key)."""
    try:
        from rules.diskwars import catalog as _catalog
    except ImportError:
        return None
    for name in ("default_catalog", "load_default_catalog", "builtin_catalog"):
        fn = getattr(_catalog, name, None)
        if callable(fn):
            try:
                cat = fn()
            except Exception:  # a broken catalog must not break corrections
                return None
            units = getattr(cat, "units", None)
            if isinstance(units, dict):
                return set(units)
    return None


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
    try:
        from rules.diskwars import deviation_candidates
    except ImportError:
        try:
            from rules.diskwars.deviation import deviation_candidates  # type: ignore[no-redef]
        except ImportError:
            return None, "deviation is not available (rules layer missing)"
    try:
        try:
            cands = deviation_candidates(scene, disk_id, report=report)
        except TypeError:
            cands = deviation_candidates(scene, disk_id)
    except (InputError, KeyError, ValueError) as exc:
        return None, f"deviation: {exc}"
    out = []
    for c in cands:
        if hasattr(c, "to_json"):
            out.append(c.to_json())
        elif isinstance(c, dict):
            out.append(dict(c))
        else:
            out.append({"id": str(c)})
    return out, None


def _terrain_under(scene: Scene, disk_id: str) -> list[str]:
    from shapely.geometry import Point, Polygon

    d = scene.disk(disk_id)
    circle = Point(d.x_mm, d.y_mm).buffer(d.radius_mm, 64)
    return [t.id for t in scene.terrain if circle.intersection(Polygon(t.polygon_mm)).area > 1e-6]


def disk_details(scene: Scene, report: Any | None, disk_id: str) -> dict[str, Any]:
    """Everything the disk panel shows; raises InputError for a disk that is not on the table."""
    try:
        disk = scene.disk(disk_id)
    except KeyError:
        raise InputError(f"disk: no disk {disk_id!r} on the table now") from None
    out: dict[str, Any] = {
        "disk": disk.to_json(),
        "range_bands_mm": scene.range_bands.as_dict(),
        "terrain_under": _terrain_under(scene, disk_id),
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
    out["deviation"], out["deviation_error"] = _deviation(scene, report, disk_id)
    return out
