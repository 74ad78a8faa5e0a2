"""Setting up armies from the camera: the disks grouped by their look, so the players name each army once.

With a real camera every owner starts unknown. The eye reports each disk's border colour (the printed ring round
its art, `extra.ring_bgr` in the scene, the median colour of that ring in the camera's image: vision/detect.py),
and the disks of one army share a ring colour. This module groups them; the page then asks "these 9 are one army —
whose?" and one tap writes the owner of every disk of that army (webui/corrections.py).

The grouping rule (`group_armies`):
- each ring colour is taken from the camera's BGR (sRGB, D65) into CIE L*a*b*;
- the distance between two colours is CIE76 delta-E (the Euclidean distance in L*a*b*, about 2.3 = just
  noticeable), with the lightness difference weighted by `LIGHTNESS_WEIGHT`: the same print is lighter under the
  lamp than in the table's corner, while two armies differ in hue;
- average linkage: every disk starts as its own group, and the two closest groups (the mean distance between
  their members) join while that mean is at most `ARMY_DELTA_E`. An odd disk (a marker, a disk of a third army
  alone on the table) whose colour is far from every group stays a group of one: it is never forced into an army,
  unlike k-means with the number of players would. Average linkage also does not chain two armies together
  through a few in-between colours, as single linkage (connected components) would.
Ties are broken by disk order, so the same colours always give the same armies. Disks without a ring colour (a
scene file, a disk the tracker holds while hidden) are listed apart (`Grouping.no_colour`).

Also here: `units_by_prefix`, the catalog's units whose key, name or an alias has a word starting with what was
typed (the unit names' autocomplete). Pure code: numbers in, numbers out; no I/O, no rules, no pixels. A full
table (300 disks, the scene limit) is grouped in about 10 ms (benchmarks/bench_armies.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tablesight.errors import InputError

#: Two groups of disks are one army while the mean delta-E between their ring colours is at most this. On the demo
#: table seen by the eye (seed 7) two disks of one army are at most 22 apart (10 on average), two of different
#: armies at least 40 (55 on average): 25 keeps the armies apart with room on either side.
ARMY_DELTA_E = 25.0
#: Weight of the lightness difference in delta-E (1 = CIE76): lighting changes lightness more than hue.
LIGHTNESS_WEIGHT = 0.5


def bgr_to_lab(bgr: Sequence[float]) -> tuple[float, float, float]:
    """CIE L*a*b* (D65) of an 8-bit sRGB colour given as (blue, green, red)."""
    if len(bgr) != 3:
        raise InputError(f"a colour needs 3 channels (blue, green, red), got {list(bgr)!r}")
    lin = []
    for c in (bgr[2], bgr[1], bgr[0]):  # red, green, blue
        c = float(c)
        if not (math.isfinite(c) and 0.0 <= c <= 255.0):
            raise InputError(f"a colour channel must be 0-255, got {c!r}")
        c /= 255.0
        lin.append(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4)
    r, g, b = lin
    x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047
    y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b
    z = (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1.0 / 3.0) if t > 216.0 / 24389.0 else (24389.0 / 27.0 * t + 16.0) / 116.0

    fx, fy, fz = f(x), f(y), f(z)
    return 116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)


def delta_e(lab1: Sequence[float], lab2: Sequence[float], lightness_weight: float = LIGHTNESS_WEIGHT) -> float:
    """CIE76 delta-E between two L*a*b* colours, the lightness difference weighted by `lightness_weight`."""
    dl = (lab1[0] - lab2[0]) * lightness_weight
    return math.sqrt(dl * dl + (lab1[1] - lab2[1]) ** 2 + (lab1[2] - lab2[2]) ** 2)


@dataclass(frozen=True)
class Army:
    """Disks that look like one army: their ids (in the scene's order), their mean ring colour and how far the
    farthest of them is from it; `owners` counts the owners the disks have now (None: unknown)."""

    disks: tuple[str, ...]
    colour_bgr: tuple[int, int, int]
    spread_delta_e: float
    owners: tuple[tuple[str | None, int], ...]

    @property
    def player(self) -> str | None:
        """The owner of every disk of the army, when they all have the same known one; else None."""
        return self.owners[0][0] if len(self.owners) == 1 else None

    @property
    def colour_hex(self) -> str:
        b, g, r = self.colour_bgr
        return f"#{r:02x}{g:02x}{b:02x}"

    def to_json(self) -> dict[str, Any]:
        return {"disks": list(self.disks), "count": len(self.disks), "colour": self.colour_hex,
                "colour_bgr": list(self.colour_bgr), "spread_delta_e": round(self.spread_delta_e, 1),
                "player": self.player, "owners": [{"player": p, "count": n} for p, n in self.owners]}


@dataclass(frozen=True)
class Grouping:
    """The armies (largest first) and the disks that have no ring colour to group by."""

    armies: tuple[Army, ...]
    no_colour: tuple[str, ...]
    threshold_delta_e: float

    def to_json(self) -> dict[str, Any]:
        return {"armies": [a.to_json() for a in self.armies], "no_colour": list(self.no_colour),
                "threshold_delta_e": self.threshold_delta_e, "lightness_weight": LIGHTNESS_WEIGHT}


@dataclass(frozen=True)
class DiskLook:
    """What grouping needs of a disk: its id, its ring colour (blue, green, red; None: not seen) and owner."""

    id: str
    ring_bgr: tuple[float, float, float] | None
    player: str | None = None


def looks_of_scene(scene: Any) -> list[DiskLook]:
    """The looks of a scene's disks (a tablesight.scene.Scene): `extra.ring_bgr` where the eye gave one."""
    out = []
    for d in scene.disks:
        ring = d.extra.get("ring_bgr") if d.extra else None
        ok = isinstance(ring, (list, tuple)) and len(ring) == 3 and all(
            isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c) and 0 <= c <= 255 for c in ring)
        out.append(DiskLook(d.id, tuple(float(c) for c in ring) if ok else None, d.player))
    return out


def group_armies(disks: Iterable[DiskLook], threshold_delta_e: float = ARMY_DELTA_E) -> Grouping:
    """Disks grouped by ring colour (the rule is in the module's docstring): average linkage in L*a*b* under
    `threshold_delta_e`. Armies are listed largest first, then by their first disk's place in `disks`."""
    if not (isinstance(threshold_delta_e, (int, float)) and math.isfinite(threshold_delta_e) and threshold_delta_e > 0):
        raise InputError(f"threshold_delta_e: expected a number > 0, got {threshold_delta_e!r}")
    disks = list(disks)
    seen = [d for d in disks if d.ring_bgr is not None]
    n = len(seen)
    labs = [bgr_to_lab(d.ring_bgr) for d in seen]
    groups: list[list[int]] = [[i] for i in range(n)]
    if n > 1:
        lab = np.array(labs) * np.array([LIGHTNESS_WEIGHT, 1.0, 1.0])
        dist = np.sqrt(((lab[:, None, :] - lab[None, :, :]) ** 2).sum(axis=-1))
        np.fill_diagonal(dist, np.inf)
        # Average linkage by the Lance-Williams update: the distance of a merged group to any other is the mean
        # of its members' distances, weighted by their sizes. argmin takes the first closest pair (row-major), so
        # ties go to the groups of the disks listed first: the same colours always give the same armies.
        while True:
            a, b = divmod(int(np.argmin(dist)), n)
            if not dist[a, b] <= threshold_delta_e:
                break
            na, nb = len(groups[a]), len(groups[b])
            merged = (na * dist[a] + nb * dist[b]) / (na + nb)
            dist[a, :] = merged
            dist[:, a] = merged
            dist[a, a] = dist[b, :] = dist[:, b] = np.inf
            groups[a] = sorted(groups[a] + groups[b])
            groups[b] = []
    groups = [g for g in groups if g]
    armies = []
    for g in groups:
        mean_bgr = [sum(seen[i].ring_bgr[c] for i in g) / len(g) for c in range(3)]
        centre = bgr_to_lab(mean_bgr)
        spread = max(delta_e(labs[i], centre) for i in g)
        counts: dict[str | None, int] = {}
        for i in g:
            counts[seen[i].player] = counts.get(seen[i].player, 0) + 1
        owners = tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0] is None, kv[0] or "")))
        armies.append((g[0], Army(tuple(seen[i].id for i in g), tuple(int(round(c)) for c in mean_bgr), spread, owners)))
    armies.sort(key=lambda fa: (-len(fa[1].disks), fa[0]))
    return Grouping(tuple(a for _, a in armies), tuple(d.id for d in disks if d.ring_bgr is None), float(threshold_delta_e))


# -- unit names by their first letters -----------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> list[str]:
    import unicodedata

    plain = unicodedata.normalize("NFKD", text.lower()).encode("ascii", "ignore").decode("ascii")
    return _WORD.findall(plain)


def units_by_prefix(units: Iterable[Any], typed: str, limit: int = 8) -> list[Mapping[str, Any]]:
    """The units (rules.diskwars.catalog.Unit: key, name, aliases) whose key, name or an alias has a word that
    starts with what was typed ("orc b" matches "Orc Boyz": every typed word starts a word of one name, in any
    order). Units whose key or name starts with it come first, then by key. [] for nothing typed."""
    if not isinstance(typed, str) or len(typed) > 64:
        raise InputError("prefix: expected text of at most 64 characters")
    want = _words(typed)
    if not want:
        return []
    if not (isinstance(limit, int) and 1 <= limit <= 50):
        raise InputError(f"limit: expected 1-50, got {limit!r}")
    ranked = []
    for u in units:
        best = None
        for name in (u.key, u.name, *u.aliases):
            words = _words(name)
            if all(any(w.startswith(t) for w in words) for t in want):
                # a name whose first word is being typed first, then the name with the fewest other words
                rank = (0 if words[0].startswith(want[0]) else 1, len(words) - len(want), name)
                if best is None or rank < best:
                    best = rank
        if best is not None:
            ranked.append((best[0], best[1], u.key, {"key": u.key, "name": u.name, "matched": best[2]}))
    ranked.sort(key=lambda r: r[:3])
    return [r[3] for r in ranked[:limit]]
