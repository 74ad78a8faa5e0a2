"""Stable disk identities across committed scenes, owners, and the players' corrections.

Each committed scene (from `detect_frame`) is matched to the tracks of the scenes before it:
1. Disks that stayed put: same size class, centre within `still_mm` (cheapest assignment).
2. Disks that moved: a disk flips up to its movement value in diameters; an unmatched detection takes the
   unmatched track of its size within `max_move_diameters` diameters whose border-ring colour agrees.
3. Tracks without a detection: if their place is covered by disks now (a disk put on top, a hand), more than
   it was by the disks above it when last seen, they stay as hidden members of the scene (flag `hidden`, low
   confidence); a top disk lifted and put back finds its track again. Otherwise, after `casualty_after` commits, the track is removed as a casualty.
New detections become new tracks (`d1`, `d2`, ... never reused). Owners come from a user correction, else the
deployment zone a disk first appeared in, else the nearest border-ring colour of the players' known disks.
Corrections (owner, unit, which of two disks is on top, not a disk) are stored per track and applied to every
later scene.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
# imported with the module, not at the first assignment: scipy.optimize takes about 0.2 s to load, which had
# landed in the middle of a game as one commit's pause
from scipy.optimize import linear_sum_assignment

from tablesight.errors import InputError
from tablesight.scene import DeploymentZone, Disk, Player, Scene

CORRECTION_KINDS = ("owner", "unit", "above", "not_a_disk")


@dataclass(frozen=True)
class TrackerConfig:
    still_mm: float = 8.0               # a disk within this of its last place has not moved
    max_move_diameters: float = 6.0     # how far (in its diameters) a flipped disk may land
    casualty_after: int = 2             # commits a vanished, uncovered disk is kept before it is a casualty
    hidden_cover: float = 0.6           # share of a vanished disk's area covered by disks now: it is hidden
    hidden_gain: float = 0.15           # ... if that is this much more than disks above it covered when last seen
                                        # (what covered it then did not hide it: it is gone, e.g. a casualty)
    ring_colour_match: float = 60.0     # BGR distance for "same border ring"
    owner_colour_match: float = 70.0    # BGR distance for inferring an owner from known disks' rings

    def __post_init__(self) -> None:
        for name in ("still_mm", "max_move_diameters", "ring_colour_match", "owner_colour_match"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0")
        if self.casualty_after < 0:
            raise ValueError("casualty_after must be >= 0")
        if not 0 < self.hidden_cover <= 1:
            raise ValueError("hidden_cover must be within (0, 1]")
        if not 0 <= self.hidden_gain <= 1:
            raise ValueError("hidden_gain must be within [0, 1]")



@dataclass(frozen=True)
class Correction:
    """A player's fix to one track: `kind` in CORRECTION_KINDS; `value` an owner id / unit key / track id below
    it (for "above") / True (for "not_a_disk"). `None` clears an owner or unit correction."""

    track_id: str
    kind: str
    value: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.track_id, str) or not self.track_id.strip():
            raise InputError("correction: track id must be a non-empty string")
        if self.kind not in CORRECTION_KINDS:
            raise InputError(f"correction: kind must be one of {', '.join(CORRECTION_KINDS)}, got {self.kind!r}")
        if self.kind in ("owner", "unit") and self.value is not None and (
                not isinstance(self.value, str) or not self.value.strip()):
            raise InputError(f"correction: {self.kind} must be a non-empty string or null")
        if self.kind == "above" and (not isinstance(self.value, str) or self.value == self.track_id):
            raise InputError("correction: 'above' needs the id of another disk (the one underneath)")
        if self.kind == "not_a_disk" and not isinstance(self.value, bool):
            raise InputError("correction: 'not_a_disk' value must be true or false")

    def to_json(self) -> dict:
        return {"track": self.track_id, "kind": self.kind, "value": self.value}

    @classmethod
    def from_json(cls, doc: Any) -> "Correction":
        if not isinstance(doc, Mapping):
            raise InputError("correction: expected an object {track, kind, value}")
        unknown = set(doc) - {"track", "kind", "value"}
        if unknown:
            raise InputError(f"correction: unknown field(s) {sorted(unknown)}")
        return cls(doc.get("track"), doc.get("kind"), doc.get("value"))


@dataclass
class Track:
    id: str
    size: str
    x_mm: float
    y_mm: float
    radius_mm: float
    z: int = 0
    ring_bgr: tuple[float, float, float] | None = None
    zone_owner: str | None = None
    first_seen: int = 0
    last_seen: int = 0
    missing: int = 0
    confidence: float = 1.0
    unit: str | None = None
    player: str | None = None   # owner carried in by the detections (e.g. a previous scene file)
    cover_seen: float = 0.0     # share of it the disks above it covered when it was last seen
    rested_on: tuple[tuple[float, float, float], ...] = ()  # (x, y, r) of the disks it lay on when last seen


def _ring(d: Disk) -> tuple[float, float, float] | None:
    v = d.extra.get("ring_bgr") if d.extra else None
    if isinstance(v, (list, tuple)) and len(v) == 3:
        try:
            return tuple(float(c) for c in v)  # type: ignore[return-value]
        except (TypeError, ValueError):
            return None
    return None


def _colour_dist(a, b) -> float:
    if a is None or b is None:
        return float("inf")
    return float(np.linalg.norm(np.asarray(a, float) - np.asarray(b, float)))


_UNIT_GRID = np.stack(np.meshgrid(np.linspace(-1, 1, 7), np.linspace(-1, 1, 7)), -1).reshape(-1, 2)
_UNIT_DISK = _UNIT_GRID[(_UNIT_GRID ** 2).sum(1) <= 1.0]   # sample points of a unit disk (a 7 x 7 grid)


def _covered_share(x: float, y: float, r: float, disks: Iterable[Disk]) -> float:
    """Share of a disk's area (sampled on a grid) that lies under the given disks."""
    near = [d for d in disks if math.hypot(d.x_mm - x, d.y_mm - y) < d.radius_mm + r]
    if not near:
        return 0.0
    px, py = x + r * _UNIT_DISK[:, 0], y + r * _UNIT_DISK[:, 1]
    cov = np.zeros(px.shape, bool)
    for d in near:
        cov |= (px - d.x_mm) ** 2 + (py - d.y_mm) ** 2 <= d.radius_mm ** 2
    return float(cov.mean())


def _rested_on(t: Track, d: Disk, tol_mm: float) -> bool:
    """Whether `d` is one of the disks track `t` lay on when last seen, still in its place."""
    return any(math.hypot(d.x_mm - x, d.y_mm - y) <= tol_mm and abs(d.radius_mm - r) < 1.0 for x, y, r in t.rested_on)


def _zone_owner(x: float, y: float, zones: Sequence[DeploymentZone]) -> str | None:
    if not zones:
        return None
    from shapely.geometry import Point, Polygon

    p = Point(x, y)
    owners = {z.player for z in zones if Polygon(z.polygon_mm).contains(p)}
    return owners.pop() if len(owners) == 1 else None


def enforce_pairs(scene: Scene, above: Mapping[tuple[str, str], bool]) -> Scene:
    """Re-derive z so that forced pairs (upper, lower) hold, keeping every other overlapping pair's order."""
    disks = list(scene.disks)
    pos = {d.id: i for i, d in enumerate(disks)}
    edges: dict[int, set[int]] = {i: set() for i in range(len(disks))}
    forced = {(u, l) for (u, l), on in above.items() if on and u in pos and l in pos}
    for i, a in enumerate(disks):
        for j in range(i + 1, len(disks)):
            b = disks[j]
            if math.hypot(a.x_mm - b.x_mm, a.y_mm - b.y_mm) >= a.radius_mm + b.radius_mm:
                continue
            if (a.id, b.id) in forced:
                edges[i].add(j)
            elif (b.id, a.id) in forced:
                edges[j].add(i)
            elif a.z > b.z:
                edges[i].add(j)
            elif b.z > a.z:
                edges[j].add(i)
    # Drop edges that close a cycle (forced ones were added first and win).
    def reach(s: int, t: int) -> bool:
        seen, stack = {s}, [s]
        while stack:
            u = stack.pop()
            if u == t:
                return True
            for v in edges[u]:
                if v not in seen:
                    seen.add(v)
                    stack.append(v)
        return False

    for u in range(len(disks)):
        for v in list(edges[u]):
            edges[u].discard(v)
            if not reach(v, u):
                edges[u].add(v)
    z: dict[int, int] = {}

    def depth(u: int) -> int:
        if u in z:
            return z[u]
        z[u] = 0
        z[u] = max((depth(v) + 1 for v in edges[u]), default=0)
        return z[u]

    for u in range(len(disks)):
        depth(u)
    return scene.with_disks(replace(d, z=z[i]) for i, d in enumerate(disks))


class Tracker:
    """Feed committed scenes to `update`; it returns them with track ids, owners and corrections applied."""

    def __init__(self, config: TrackerConfig | None = None, players: Sequence[Player] = (),
                 deployment_zones: Sequence[DeploymentZone] = ()):
        self.config = config or TrackerConfig()
        self.players = tuple(players)
        self.deployment_zones = tuple(deployment_zones)
        self.tracks: dict[str, Track] = {}
        self.casualties: list[str] = []
        self.corrections: dict[tuple[str, str], Correction] = {}
        self._next = 1
        self._commit = 0
        self.last_ids: dict[str, str] = {}   # the last update's detection id -> track id
        self._lock = threading.Lock()

    # -- corrections -----------------------------------------------------------------------------------------
    def apply_correction(self, correction: Correction) -> None:
        """Store a player's correction (validated); it applies to this track in every later scene."""
        if not isinstance(correction, Correction):
            raise InputError("apply_correction: expected a Correction")
        with self._lock:
            if correction.track_id not in self.tracks and correction.track_id not in self.casualties:
                raise InputError(f"correction: no disk {correction.track_id!r}")
            if correction.kind == "owner" and correction.value is not None and self.players and \
                    correction.value not in {p.id for p in self.players}:
                raise InputError(f"correction: unknown player {correction.value!r}")
            if correction.kind == "above":
                if correction.value not in self.tracks:
                    raise InputError(f"correction: no disk {correction.value!r}")
                # "a above b" replaces any earlier "b above a"
                self.corrections.pop((str(correction.value), "above:" + correction.track_id), None)
                self.corrections[(correction.track_id, "above:" + str(correction.value))] = correction
                return
            self.corrections[(correction.track_id, correction.kind)] = correction

    def corrections_json(self) -> list[dict]:
        with self._lock:
            return [c.to_json() for c in self.corrections.values()]

    def _correction(self, track_id: str, kind: str) -> Correction | None:
        return self.corrections.get((track_id, kind))

    # -- matching --------------------------------------------------------------------------------------------
    def _new_id(self) -> str:
        while f"d{self._next}" in self.tracks or f"d{self._next}" in self.casualties:
            self._next += 1
        tid = f"d{self._next}"
        self._next += 1
        return tid

    def _assign(self, dets: list[Disk], cands: list[Track], gate: float, colour: bool) -> dict[int, str]:
        """Cheapest one-to-one assignment of detections to tracks of the same size within `gate` mm."""
        if not dets or not cands:
            return {}
        big = 1e9
        cost = np.full((len(dets), len(cands)), big)
        for i, d in enumerate(dets):
            for j, t in enumerate(cands):
                if (d.size or "") != t.size:
                    continue
                dist = math.hypot(d.x_mm - t.x_mm, d.y_mm - t.y_mm)
                if dist > gate:
                    continue
                if colour and _colour_dist(_ring(d), t.ring_bgr) > self.config.ring_colour_match:
                    continue
                cost[i, j] = dist
        rows, cols = linear_sum_assignment(cost)
        return {int(r): cands[c].id for r, c in zip(rows, cols) if cost[r, c] < big}

    def update(self, scene: Scene) -> Scene:
        """Match a committed scene to the tracks; returns it with track ids, owners, hidden disks, corrections."""
        with self._lock:
            return self._update(scene)

    def _update(self, scene: Scene) -> Scene:
        cfg = self.config
        self._commit += 1
        n = self._commit
        if scene.players and not self.players:
            self.players = scene.players
        if scene.deployment_zones and not self.deployment_zones:
            self.deployment_zones = scene.deployment_zones
        dets = list(scene.disks)
        # Detections where the player said "not a disk" (matched by place and size) are dropped.
        rejected = [t for t in self.tracks.values() if self._correction(t.id, "not_a_disk") and
                    self._correction(t.id, "not_a_disk").value]
        dets = [d for d in dets if not any((d.size or "") == t.size and
                                           math.hypot(d.x_mm - t.x_mm, d.y_mm - t.y_mm) <= cfg.still_mm
                                           for t in rejected)]
        live = [t for t in self.tracks.values() if t not in rejected]
        match: dict[int, str] = {}
        # 1: same place (the id from the detector's own history breaks ties by cost 0)
        m1 = self._assign(dets, live, cfg.still_mm, colour=False)
        match.update(m1)
        # 2: moved (flipped) disks
        rest_d = [i for i in range(len(dets)) if i not in match]
        used = set(match.values())
        rest_t = [t for t in live if t.id not in used]
        if rest_d and rest_t:
            sub = [dets[i] for i in rest_d]
            gate = max(cfg.max_move_diameters * 2 * t.radius_mm for t in rest_t)
            m2 = self._assign(sub, rest_t, gate, colour=True)
            for k, tid in m2.items():
                t = self.tracks[tid]
                d = sub[k]
                if math.hypot(d.x_mm - t.x_mm, d.y_mm - t.y_mm) <= cfg.max_move_diameters * 2 * t.radius_mm:
                    match[rest_d[k]] = tid
        out: list[Disk] = []
        seen: set[str] = set()
        renamed: dict[str, str] = {}     # detector id -> track id
        # Which detections overlap which (most overlap none): what lies above and below each one.
        if dets:
            xy = np.array([[d.x_mm, d.y_mm] for d in dets])
            rad = np.array([d.radius_mm for d in dets])
            meets = np.hypot(*(xy[:, None, :] - xy[None, :, :]).transpose(2, 0, 1)) < rad[:, None] + rad[None, :]
            np.fill_diagonal(meets, False)
        for i, d in enumerate(dets):
            tid = match.get(i)
            if tid is None:
                tid = self._new_id()
                t = Track(tid, d.size or "", d.x_mm, d.y_mm, d.radius_mm, d.z, _ring(d),
                          _zone_owner(d.x_mm, d.y_mm, self.deployment_zones), n, n, unit=d.unit, player=d.player)
                self.tracks[tid] = t
            t = self.tracks[tid]
            t.x_mm, t.y_mm, t.radius_mm, t.z = d.x_mm, d.y_mm, d.radius_mm, d.z
            ring = _ring(d)
            if ring is not None:
                t.ring_bgr = ring if t.ring_bgr is None else tuple(0.7 * a + 0.3 * b for a, b in zip(t.ring_bgr, ring))
            t.last_seen, t.missing = n, 0
            near = [dets[k] for k in np.nonzero(meets[i])[0]]
            t.cover_seen = _covered_share(d.x_mm, d.y_mm, d.radius_mm, [o for o in near if o.z > d.z])
            t.rested_on = tuple((o.x_mm, o.y_mm, o.radius_mm) for o in near if o.z < d.z)
            t.confidence = d.confidence if d.confidence is not None else 1.0
            if d.player is not None:
                t.player = d.player
            seen.add(tid)
            renamed[d.id] = tid
            out.append(replace(d, id=tid))
        self.last_ids = renamed
        # 3: tracks without a detection: hidden under disks now, or gone.
        for t in list(self.tracks.values()):
            if t.id in seen or t in rejected:
                continue
            t.missing += 1
            # The disks it lay on, still where they were, are under it, not over it: a disk lifted off another
            # is gone, not hidden beneath the one it lay on.
            cover = _covered_share(t.x_mm, t.y_mm, t.radius_mm,
                                   [o for o in out if not _rested_on(t, o, cfg.still_mm)])
            if cover >= cfg.hidden_cover and cover >= t.cover_seen + cfg.hidden_gain:
                out.append(Disk(id=t.id, x_mm=t.x_mm, y_mm=t.y_mm, radius_mm=t.radius_mm, z=-1, size=t.size or None,
                                confidence=round(min(0.5, t.confidence), 4),
                                extra={"hidden": True, "ring_bgr": [int(c) for c in t.ring_bgr] if t.ring_bgr else None}))
                t.missing = 0
                continue
            if t.missing > cfg.casualty_after:
                del self.tracks[t.id]
                self.casualties.append(t.id)
        out = self._place_hidden(out)
        out = [self._dress(d) for d in out]
        result = replace(scene, players=self.players or scene.players, disks=tuple(out))
        above = {}
        for (tid, kind), c in self.corrections.items():
            if kind.startswith("above:"):
                above[(tid, str(c.value))] = True
        if above:
            result = enforce_pairs(result, above)
        extra = dict(result.extra)
        if "uncertain_pairs" in extra:
            # The detector named the pairs by its own ids: name them by the tracks, as the disks now are.
            pairs = [sorted(renamed[i] for i in p) for p in extra["uncertain_pairs"] if all(i in renamed for i in p)]
            if pairs:
                extra["uncertain_pairs"] = pairs
            else:
                del extra["uncertain_pairs"]
        if "suspected_disks" in extra:
            # ... and so the disks a disk may lie on, while that disk is shown
            shown = {d.id for d in result.disks if not d.extra.get("hidden")}
            suspected = [{**s, "on": renamed[s["on"]]} for s in extra["suspected_disks"]
                         if renamed.get(s["on"]) in shown]
            if suspected:
                extra["suspected_disks"] = suspected
            else:
                del extra["suspected_disks"]
        if self.casualties:
            extra["casualties"] = list(self.casualties)
        return replace(result, extra=extra)

    def redress(self, scene: Scene) -> Scene:
        """Apply the stored corrections (owners, units, order, not-a-disk) to a scene of known tracks again."""
        with self._lock:
            keep = [d for d in scene.disks if not (self._correction(d.id, "not_a_disk") and
                                                    self._correction(d.id, "not_a_disk").value)]
            out = replace(scene, players=self.players or scene.players, disks=tuple(self._dress(d) for d in keep))
            above = {(tid, str(c.value)): True for (tid, kind), c in self.corrections.items()
                     if kind.startswith("above:")}
            return enforce_pairs(out, above) if above else out

    def _place_hidden(self, disks: list[Disk]) -> list[Disk]:
        """A hidden disk lies under every disk that overlaps it now. The order of the seen disks is kept and the
        hidden ones are put under them: z is the longest chain of disks below (a hidden disk under a disk on the
        felt goes to 0 and lifts that disk and what lies on it, never to -1)."""
        hidden = [d.z == -1 and bool(d.extra.get("hidden")) for d in disks]
        if not any(hidden):
            return list(disks)
        n = len(disks)
        below: list[set[int]] = [set() for _ in range(n)]
        for a in range(n):
            for b in range(n):
                if a == b or hidden[a]:
                    continue
                da, db = disks[a], disks[b]
                if math.hypot(da.x_mm - db.x_mm, da.y_mm - db.y_mm) >= da.radius_mm + db.radius_mm:
                    continue
                if hidden[b] or da.z > db.z:
                    below[a].add(b)
        z = [-1] * n

        def depth(u: int, path: frozenset = frozenset()) -> int:
            if z[u] >= 0:
                return z[u]
            z[u] = 1 + max((depth(v, path | {u}) for v in below[u] if v not in path), default=-1)
            return z[u]

        for u in range(n):
            depth(u)
        return [replace(d, z=z[k]) if z[k] != d.z else d for k, d in enumerate(disks)]

    def _owner(self, t: Track) -> str | None:
        c = self._correction(t.id, "owner")
        if c is not None:
            return c.value
        if t.player is not None:
            return t.player
        if t.zone_owner is not None:
            return t.zone_owner
        # Nearest ring colour among disks whose owner is known (corrected or from their zone).
        best, best_d = None, self.config.owner_colour_match
        for o in self.tracks.values():
            if o.id == t.id:
                continue
            oc = self._correction(o.id, "owner")
            owner = oc.value if oc is not None else (o.player or o.zone_owner)
            if owner is None:
                continue
            dist = _colour_dist(t.ring_bgr, o.ring_bgr)
            if dist < best_d:
                best, best_d = owner, dist
        return best

    def _dress(self, d: Disk) -> Disk:
        t = self.tracks.get(d.id)
        if t is None:
            return d
        owner = self._owner(t)
        if owner is not None and self.players and owner not in {p.id for p in self.players}:
            owner = None
        uc = self._correction(t.id, "unit")
        unit = uc.value if uc is not None else (d.unit or t.unit)
        extra = dict(d.extra)
        if self._correction(t.id, "owner") is not None or uc is not None:
            extra["corrected"] = True
        return replace(d, player=owner, unit=unit, extra=extra)
