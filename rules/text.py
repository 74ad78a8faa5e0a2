"""Readable summaries of a rules report (`tablesight.report/1`) and a melee resolution (`tablesight.melee/1`).

What a player at a terminal wants from `tablesight report --format text` and `tablesight melee --format text`:
who pins whom, the fights in the order they are resolved, contests, the calls too close to make with their
margins, and every range in one line per disk. Pure: a JSON document in, lines of text out, so the text can
never say something the JSON does not.
"""

from __future__ import annotations

import textwrap
from typing import Any, Iterable, Mapping

WIDTH = 110  # a laptop terminal; long range lines wrap under their disk
_BANDS = ("short", "medium", "long", "siege")
NBSP = "\u00a0"


def mm(v: float | None, decimals: int = 1) -> str:
    """A length for reading: `decimals` decimals, without trailing zeros."""
    if v is None:
        return "?"
    text = f"{float(v):.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _join(items: Iterable[str], empty: str = "none") -> str:
    items = list(items)
    return ", ".join(items) if items else empty


def report_text(doc: Mapping[str, Any], title: str | None = None) -> str:
    """The report as a few short sections; `title` (the scene file) heads it when given."""
    lines: list[str] = []
    if title:
        lines.append(f"== {title} ==")
    enemy = [p for p in doc.get("pins", []) if p.get("enemy")]
    other = [p for p in doc.get("pins", []) if not p.get("enemy")]
    lines.extend(_wrap("Pins: " + _join(_pin(p) for p in enemy), "      "))
    if other:
        lines.extend(_wrap("  no fight (own or unknown owner): " + _join(_pin(p) for p in other), "    "))
    if doc.get("harried"):
        lines.append("Harried: " + _join(doc["harried"]))
    lines.extend(_fights(doc))
    lines.extend(_contests(doc))
    lines.extend(_borderline(doc))
    lines.extend(_placement(doc))
    lines.extend(_ranges(doc))
    return "\n".join(lines)


def _wrap(text: str, indent: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, subsequent_indent=indent, break_on_hyphens=False) or [text]


def _pin(p: Mapping[str, Any]) -> str:
    return f"{p['pinner']} pins {p['pinned']}" + (" (partly)" if p.get("partial") else "")


def _fights(doc: Mapping[str, Any]) -> list[str]:
    engagements = {e["id"]: e for e in doc.get("engagements", [])}
    if not engagements:
        return ["Fights: none"]
    order = doc.get("melee_order", {})
    after: dict[str, list[str]] = {}
    for before, later in order.get("must_precede", []):
        after.setdefault(later, []).append(before)
    constrained = set(after) | {b for b, _ in order.get("must_precede", [])}
    first = order.get("first_player")
    head = "Fights, in order" + (f" (first player: {first})" if first else "") + ":"
    lines = [head]
    sequence = list(order.get("sequence", [])) or sorted(engagements)
    for n, eid in enumerate(sequence, 1):
        e = engagements.get(eid)
        if e is None:
            continue
        why = f"after {_join(after[eid])}" if eid in after else ("" if eid in constrained else "free")
        lines.append(f"  {n}. {eid}: {_join(e['attackers'])} vs {_join(e['defenders'])}"
                     + (f"  ({why})" if why else ""))
    for before, later in order.get("contradicted", []):
        lines.append(f"  players' call: {before} before {later} contradicts the rest of the stack")
    return lines


def _contests(doc: Mapping[str, Any]) -> list[str]:
    lines = []
    for c in doc.get("contests", []):
        text = f"  {' + '.join(c['engagements'])} share {_join(c.get('harried', []))}"
        if c.get("players_call"):
            text += "  (the players' call: the stack contradicts itself)"
        lines.append(text)
    return (["Contests:"] + lines) if lines else []


def _borderline(doc: Mapping[str, Any]) -> list[str]:
    calls = doc.get("borderline", [])
    if not calls:
        return []
    lines = [f"Too close to call (within {mm(doc.get('tolerance_mm'))} mm):"]
    for b in calls:
        who = b["a"] + (f" / {b['b']}" if b.get("b") else "")
        note = f"  {b['note']}" if b.get("note") else ""
        lines.append(f"  {b['kind']}: {who}, margin {mm(b['margin_mm'], 2)} mm{note}")
    return lines


def _placement(doc: Mapping[str, Any]) -> list[str]:
    lines = []
    for t in doc.get("terrain_overlaps", []):
        lines.append(f"  {t['disk']} on {t['terrain']}")
    for t in doc.get("terrain_control", []):
        if t.get("controller"):
            lines.append(f"  {t['terrain']} held by {t['controller']}")
    for o in doc.get("off_battlefield", []):
        lines.append(f"  {o['disk']} {'wholly' if o.get('wholly') else 'partly'} off the battlefield "
                     f"(margin {mm(o['margin_mm'])} mm)")
    for v in doc.get("setup_violations", []):
        other = f" / {v['other']}" if v.get("other") else ""
        note = f": {v['note']}" if v.get("note") else ""
        lines.append(f"  {v['kind']}: {v['subject']}{other}, {mm(v['margin_mm'])} mm from legal{note}")
    return (["Terrain and placement:"] + lines) if lines else []


def _ranges(doc: Mapping[str, Any]) -> list[str]:
    """One entry per disk, grouped by band, nearest first; each pair once (under the first of its two ids)."""
    by_disk: dict[str, list[Mapping[str, Any]]] = {}
    for p in doc.get("pairs", []):
        by_disk.setdefault(p["a"], []).append(p)
    if not by_disk:
        return []
    lines = ["Ranges (edge to edge in mm, by band; '!' where line of sight is blocked):"]
    width = max(len(a) for a in by_disk)
    for a in sorted(by_disk):
        groups = []
        for band in _BANDS + tuple(sorted({p["band"] for p in by_disk[a]} - set(_BANDS))):
            pairs = sorted((p for p in by_disk[a] if p["band"] == band), key=lambda p: (p["distance_mm"], p["b"]))
            if pairs:
                # no-break spaces keep "disk distance" together when the line wraps
                groups.append(f"{band}: " + ", ".join(_range_cell(p).replace(" ", NBSP) for p in pairs))
        wrapped = textwrap.wrap(f"{a.ljust(width)}  " + " | ".join(groups), WIDTH, initial_indent="  ",
                                subsequent_indent=" " * (width + 4), break_on_hyphens=False)
        lines.extend(line.replace(NBSP, " ") for line in wrapped)
    return lines


def _range_cell(p: Mapping[str, Any]) -> str:
    if not p.get("los"):
        sight = "!"
    elif p.get("los_one_way"):
        sight = f" (only {p['los_one_way']} sees)"
    else:
        sight = ""
    return f"{p['b']} {mm(p['distance_mm'])}{sight}"


def melee_text(doc: Mapping[str, Any], title: str | None = None) -> str:
    """The melee phase fight by fight: each strike with its damage, then who fell and who is wounded."""
    lines: list[str] = []
    if title:
        lines.append(f"== {title} ==")
    steps = doc.get("steps", [])
    lines.append(f"Melee phase: {len(steps)} fight{'s' if len(steps) != 1 else ''}, in order" if steps
                 else "Melee phase: no fights.")
    for n, step in enumerate(steps, 1):
        lines.append(f"{n}. {step['engagement']}")
        for s in step.get("strikes", []):
            lines.append("   " + _strike(s))
        for note in step.get("notes", []):
            lines.append(f"   note: {note}")
        lines.append(f"   falls: {_join(step.get('casualties', []))}; wounded: {_join(step.get('wounded', []))}")
    details = {c["disk"]: c for c in doc.get("casualty_details", [])}
    casualties = [_casualty(d, details.get(d)) for d in doc.get("casualties", [])]
    lines.extend(_wrap("Casualties: " + _join(casualties), "  "))
    lines.append("Wounded: " + _join(doc.get("wounded", [])))
    deferred = doc.get("deferred_pins", [])
    if deferred:
        lines.append("Fights next melee phase (uncovered by a casualty): "
                     + _join(f"{p['pinner']} pins {p['pinned']}" for p in deferred))
    missing = doc.get("missing", [])
    if missing:
        lines.append("Not known (numbers missing, so some damage or wounds are not decided):")
        lines.extend(f"  {m['disk']} {m['stat']}: {m['note']}" for m in missing)
    return "\n".join(lines)


def _strike(s: Mapping[str, Any]) -> str:
    timing = "" if s.get("timing") == "normal" else f" [{s['timing']}]"
    damage = "damage unknown" if s.get("damage") is None else f"{s['damage']} damage"
    text = f"{s['disk']} ({s['role']}) strikes {s['target']}: {damage}{timing}"
    others = [o for o in s.get("options", []) if o != s["target"]]
    if others and s.get("chosen_by") != "only":
        text += f"  (could strike {_join(others)} instead; chosen by {s['chosen_by'].replace('_', ' ')})"
    return text


def _casualty(disk: str, detail: Mapping[str, Any] | None) -> str:
    if not detail:
        return disk
    who = ", ".join(x for x in (detail.get("player"), detail.get("unit")) if x)
    return f"{disk} ({who})" if who else disk
