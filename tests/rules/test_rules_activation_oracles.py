"""Property tests of the shooting and move geometry against brute-force oracles that sample the disks' and pieces'
outlines instead of using closed forms: edge distance and range band (RB p.5, 11), Cover (RB p.22), deviation
order by nearness (RB p.18-19), flips needed (a flip moves the centre at most one diameter, RB p.8, 20), new pins
after a move and a disk wholly off the battlefield (RB p.20). Cases a sampling error could flip are skipped."""

import math

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rules.diskwars.movement import move_consequences
from rules.diskwars.settings import DiskwarsSettings
from rules.diskwars.shooting import ranged_attack
from tablesight.scene import Scene

PLAYERS = [{"id": "orcs", "initiative": 1}, {"id": "empire", "initiative": 2}]
RADII = (22.0, 32.0, 44.5)
N = 720  # outline samples: the chord error is r * (1 - cos(pi / N)) < 0.001 mm
LIMITS = (("short", 100.0), ("medium", 200.0), ("long", 300.0))  # the default ruler (RB p.5)
TOL = DiskwarsSettings().contact_tolerance_mm
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def outline(x, y, r, n=N):
    return [(x + r * math.cos(2 * math.pi * k / n), y + r * math.sin(2 * math.pi * k / n)) for k in range(n)]


def edge_distance_oracle(a, b):
    """Smallest distance between the two outlines (0 when one disk reaches into the other)."""
    if math.hypot(a["x_mm"] - b["x_mm"], a["y_mm"] - b["y_mm"]) <= a["radius_mm"] + b["radius_mm"]:
        return 0.0
    # Coarse: every pair of 180 + 60 outline samples; then refine around a's best sample against 1440 of b's.
    pa = outline(a["x_mm"], a["y_mm"], a["radius_mm"], 360)
    pb = outline(b["x_mm"], b["y_mm"], b["radius_mm"], 360)
    coarse = 2 * min(range(180), key=lambda i: min(math.dist(pa[2 * i], q) for q in pb[::6]))
    best = math.inf
    for k in range(-12, 13, 2):  # refine around the coarse best sample of a
        t = 2 * math.pi * (coarse + k / 4) / 360
        p = (a["x_mm"] + a["radius_mm"] * math.cos(t), a["y_mm"] + a["radius_mm"] * math.sin(t))
        best = min(best, min(math.dist(p, q) for q in outline(b["x_mm"], b["y_mm"], b["radius_mm"], 2 * N)))
    return best


def band_of_distance(d):
    return next((name for name, limit in LIMITS if d <= limit), "siege")


def disk(id, x, y, r, player=None, z=0):
    return {"id": id, "x_mm": x, "y_mm": y, "radius_mm": r, "player": player, "z": z}


def scene(disks, terrain=()):
    return Scene.from_json({"format": "tablesight.scene/1", "players": PLAYERS, "disks": disks,
                            "terrain": list(terrain)})


coord = st.floats(60, 840, allow_nan=False)


@st.composite
def spread_disks(draw, n_min=2, n_max=5):
    """Disks that do not overlap one another (no pins: every disk may shoot)."""
    n = draw(st.integers(n_min, n_max))
    out = []
    for k in range(n):
        d = disk(f"d{k}", draw(coord), draw(coord), draw(st.sampled_from(RADII)), draw(st.sampled_from(["orcs", "empire"])))
        assume(all(math.hypot(d["x_mm"] - o["x_mm"], d["y_mm"] - o["y_mm"]) > d["radius_mm"] + o["radius_mm"] + 2
                   for o in out))
        out.append(d)
    return out


@SETTINGS
@given(spread_disks())
def test_shot_distance_and_band_match_the_sampled_outlines(disks):
    res = ranged_attack(scene(disks), "d0")
    by_id = {d["id"]: d for d in disks}
    assert {t.target for t in res.targets} == set(by_id) - {"d0"}  # no terrain: everyone else is a target
    for t in res.targets:
        oracle = edge_distance_oracle(by_id["d0"], by_id[t.target])
        assert abs(t.distance_mm - oracle) < 0.02, (t, oracle)
        if all(abs(oracle - limit) > 0.05 for _, limit in LIMITS):
            assert t.band == band_of_distance(oracle)
            assert t.only_criticals == (t.band == "siege")  # RB p.11


def depth_into_rect_oracle(d, rect):
    """How deep the disk reaches into an axis-aligned rectangle: the largest distance, over samples of the disk
    (centre, rings of its outline), from a sample inside the rectangle to the rectangle's outline; negative (the
    gap) when no sample is inside."""
    x0, y0, x1, y1 = rect
    best = -math.inf
    for frac in (0.0, 0.25, 0.5, 0.75, 1.0):
        pts = [(d["x_mm"], d["y_mm"])] if frac == 0 else outline(d["x_mm"], d["y_mm"], d["radius_mm"] * frac)
        for px, py in pts:
            inside = x0 <= px <= x1 and y0 <= py <= y1
            if inside:
                best = max(best, min(px - x0, x1 - px, py - y0, y1 - py))
            else:
                gap = math.hypot(max(x0 - px, 0, px - x1), max(y0 - py, 0, py - y1))
                best = max(best, -gap)
    return best


@SETTINGS
@given(st.floats(250, 650), st.floats(250, 650), st.sampled_from(RADII), st.floats(20, 200), st.floats(20, 200))
def test_cover_matches_a_sampled_overlap_with_the_piece(tx, ty, r, w, h):
    rect = (400.0, 400.0, 400.0 + w, 400.0 + h)
    target = disk("t", tx, ty, r, "empire")
    shooter = disk("s", 100, 100, 22.0, "orcs")
    assume(math.hypot(tx - 100, ty - 100) > r + 30)
    piece = {"id": "wood", "name": "wood", "keywords": ["cover"],
             "polygon_mm": [[rect[0], rect[1]], [rect[2], rect[1]], [rect[2], rect[3]], [rect[0], rect[3]]]}
    depth = depth_into_rect_oracle(target, rect)
    assume(abs(depth - TOL) > 0.3)  # away from the touching-vs-overlapping call
    (t,) = ranged_attack(scene([shooter, target], [piece]), "s").targets
    assert t.cover == (depth > TOL), (t, depth)
    assert t.dice_modifier == (-1 if t.cover else 0)  # RB p.22: one die fewer


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # the oracle is slow
@given(spread_disks(4, 5))
def test_deviation_goes_to_the_nearest_disks_within_short_range_of_the_target(disks):
    # RB p.18-19: deviation rerolls go to the disks nearest the target within short range, nearest first (edge to
    # edge, the default reading); none of these disks is engaged with the target (no overlaps).
    res = ranged_attack(scene(disks), "d0")
    by_id = {d["id"]: d for d in disks}
    for t in res.targets:
        near = {o: edge_distance_oracle(by_id[t.target], by_id[o]) for o in by_id if o != t.target}
        within = {o: dist for o, dist in near.items() if dist <= 100.0}
        assume(all(abs(dist - 100.0) > 0.05 for dist in near.values()))
        dists = sorted(within.values())
        assume(all(b - a > 0.05 for a, b in zip(dists, dists[1:])))  # no ties a sampling error could swap
        assert list(t.deviation) == sorted(within, key=within.get), (t.target, within)


@SETTINGS
@given(spread_disks(2, 5), st.floats(0, 2 * math.pi), st.floats(5, 400))
def test_a_move_flips_new_pins_and_off_the_battlefield_match_the_oracles(disks, angle, dist):
    mover = disks[0]
    x1, y1 = mover["x_mm"] + dist * math.cos(angle), mover["y_mm"] + dist * math.sin(angle)
    after_mover = {**mover, "x_mm": x1, "y_mm": y1, "z": 5}
    before = scene(disks)
    after = scene([after_mover] + disks[1:])
    res = move_consequences(before, after)
    assert res.moved == "d0" and abs(res.distance_mm - dist) < 1e-6
    # Flips: the fewest flips whose total reach (one diameter each) covers the distance.
    diameter = 2 * mover["radius_mm"]
    flips = 0
    while flips * diameter < dist - 1e-9:
        flips += 1
    assume(abs(dist / diameter - round(dist / diameter)) > 1e-6)
    assert res.flips_needed == flips
    # New pins: every disk the moved disk now reaches into by more than the contact tolerance, sampled.
    depths = {}
    for o in disks[1:]:
        reach = max(o["radius_mm"] - math.dist(p, (o["x_mm"], o["y_mm"]))
                    for p in outline(x1, y1, mover["radius_mm"]) + [(x1, y1)])
        depths[o["id"]] = min(reach, 2 * min(o["radius_mm"], mover["radius_mm"]))
    assume(all(abs(dep - TOL) > 0.3 for dep in depths.values()))
    assert {p.disk for p in res.newly_pinned} == {o for o, dep in depths.items() if dep > TOL}
    for p in res.newly_pinned:
        assert p.enemy == (by_player(disks, p.disk) != mover["player"])
    # Wholly off the battlefield (RB p.20): no sample of the disk's outline or centre on the 900 mm square.
    pts = outline(x1, y1, mover["radius_mm"]) + [(x1, y1)]
    on = [0 <= px <= 900 and 0 <= py <= 900 for px, py in pts]
    margin = min(abs(v - edge) for px, py in pts for v in (px, py) for edge in (0, 900))
    assume(margin > 0.5)
    wholly = not any(on)
    assert bool(res.off_battlefield and res.off_battlefield.get("wholly")) == wholly


def by_player(disks, id):
    return next(d["player"] for d in disks if d["id"] == id)
