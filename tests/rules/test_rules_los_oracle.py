"""Exact line of sight against a dense brute-force oracle on random scenes (hypothesis).

The oracle tries every segment between dense points of the two disks' rims with shapely; it is exact when it
says "clear", and cannot miss a clear corridor much wider than its sampling step (under 1.5 mm here: 160 points on a rim of at most 45 mm radius). Cases within a margin of
grazing (where the call flips if the geometry moves by that margin) are skipped.
"""

import math

import numpy as np
import shapely
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from shapely.geometry import LineString, Point, Polygon

from rules import geometry

MARGIN = 1.5  # skip scenes whose LOS call flips within this many mm


def _disk_points(c, r, n=160):
    """Points on the disk's rim: any clear segment can be lengthened inside both disks (no obstacle enters
    them here) until its ends lie on the rims, so the rims are where to look."""
    ang = np.linspace(0, 2 * np.pi, n, endpoint=False)
    return np.stack([c[0] + r * np.cos(ang), c[1] + r * np.sin(ang)], axis=1)


def oracle_visible(ca, ra, cb, rb, polys):
    pa, pb = _disk_points(ca, ra), _disk_points(cb, rb)
    ia, ib = np.meshgrid(np.arange(len(pa)), np.arange(len(pb)), indexing="ij")
    coords = np.stack([pa[ia.ravel()], pb[ib.ravel()]], axis=1)
    lines = shapely.linestrings(coords)
    blocked = np.zeros(len(coords), bool)
    for p in polys:
        core = Polygon(p).buffer(-1e-6)
        if not core.is_empty:
            blocked |= shapely.intersects(lines, core)
    return bool((~blocked).any())


def witness_ok(ca, ra, cb, rb, polys, w):
    (px, py), (qx, qy) = w
    if math.hypot(px - ca[0], py - ca[1]) > ra + 1e-6 or math.hypot(qx - cb[0], qy - cb[1]) > rb + 1e-6:
        return False
    seg = LineString([(px, py), (qx, qy)]) if (px, py) != (qx, qy) else Point(px, py)
    return all(seg.intersection(Polygon(p).buffer(-1e-6)).is_empty for p in polys)


@st.composite
def scenes(draw):
    ra = draw(st.floats(15, 45))
    rb = draw(st.floats(15, 45))
    ca = (draw(st.floats(50, 150)), draw(st.floats(50, 350)))
    cb = (draw(st.floats(350, 450)), draw(st.floats(50, 350)))
    polys = []
    for _ in range(draw(st.integers(1, 4))):
        cx, cy = draw(st.floats(150, 350)), draw(st.floats(20, 380))
        k = draw(st.integers(3, 8))
        angles = sorted(draw(st.lists(st.floats(0, 2 * math.pi), min_size=k, max_size=k, unique=True)))
        radii = draw(st.lists(st.floats(8, 90), min_size=k, max_size=k))
        poly = np.array([[cx + r * math.cos(a), cy + r * math.sin(a)] for a, r in zip(angles, radii)])
        shape = Polygon(poly)
        if not shape.is_valid or shape.area < 20:
            continue
        if shape.distance(Point(ca)) <= ra + 1e-3 or shape.distance(Point(cb)) <= rb + 1e-3:
            continue  # obstacles a disk overlaps are ignored by the rules: keep them out of this test
        polys.append(poly)
    assume(polys)
    return ca, ra, cb, rb, polys


@st.composite
def walls(draw):
    """Thin straight walls at random angles between the disks: narrow gaps, long grazing edges."""
    ra, rb = draw(st.floats(15, 45)), draw(st.floats(15, 45))
    ca = (draw(st.floats(50, 120)), draw(st.floats(150, 250)))
    cb = (draw(st.floats(380, 450)), draw(st.floats(150, 250)))
    polys = []
    for _ in range(draw(st.integers(2, 5))):
        cx, cy = draw(st.floats(180, 320)), draw(st.floats(60, 340))
        ang = draw(st.floats(0, math.pi))
        half_len, half_w = draw(st.floats(20, 150)), draw(st.floats(1, 6))
        ux, uy = math.cos(ang), math.sin(ang)
        poly = np.array([[cx + sx * half_len * ux - sy * half_w * uy, cy + sx * half_len * uy + sy * half_w * ux]
                         for sx, sy in ((-1, -1), (1, -1), (1, 1), (-1, 1))])
        shape = Polygon(poly)
        if shape.distance(Point(ca)) <= ra + 1e-3 or shape.distance(Point(cb)) <= rb + 1e-3:
            continue
        polys.append(poly)
    assume(polys)
    return ca, ra, cb, rb, polys


def _los(ca, ra, cb, rb, polys, delta=0.0):
    grown = [part for p in polys for part in geometry.offset_polygon(p, delta)] if delta else polys
    return geometry.disks_line_of_sight(ca, ra - delta, cb, rb - delta, geometry.Obstacles(grown))


@settings(max_examples=45, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(st.one_of(scenes(), walls()))
def test_los_matches_brute_force_oracle(scene):
    ca, ra, cb, rb, polys = scene
    res = _los(ca, ra, cb, rb, polys)
    # away from grazing: the same call with the geometry moved by MARGIN either way
    assume(_los(ca, ra, cb, rb, polys, MARGIN).visible == _los(ca, ra, cb, rb, polys, -MARGIN).visible)
    assert res.visible == oracle_visible(ca, ra, cb, rb, polys)
    if res.visible:
        assert witness_ok(ca, ra, cb, rb, polys, res.witness)
    else:
        assert res.witness is None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(st.one_of(scenes(), walls()))
def test_los_witness_is_always_clear_and_symmetric(scene):
    ca, ra, cb, rb, polys = scene
    ab = _los(ca, ra, cb, rb, polys)
    ba = _los(cb, rb, ca, ra, polys)
    assert ab.visible == ba.visible
    if ab.visible:
        assert witness_ok(ca, ra, cb, rb, polys, ab.witness)
        assert witness_ok(cb, rb, ca, ra, polys, ba.witness)


@st.composite
def tables(draw):
    """A few disks and blocking pieces on a small table; disks may stand on pieces (which then do not block
    their lines)."""
    disks = [{"id": f"d{k}", "x_mm": draw(st.floats(30, 470)), "y_mm": draw(st.floats(30, 470)),
              "radius_mm": draw(st.sampled_from([22.0, 32.0])), "z": k} for k in range(draw(st.integers(3, 5)))]
    terrain = []
    for k in range(draw(st.integers(1, 3))):
        cx, cy = draw(st.floats(100, 400)), draw(st.floats(100, 400))
        n = draw(st.integers(3, 6))
        angles = sorted(draw(st.lists(st.floats(0, 2 * math.pi), min_size=n, max_size=n, unique=True)))
        radii = draw(st.lists(st.floats(15, 80), min_size=n, max_size=n))
        poly = [[cx + r * math.cos(a), cy + r * math.sin(a)] for a, r in zip(angles, radii)]
        if Polygon(poly).is_valid and Polygon(poly).area > 50:
            terrain.append({"id": f"t{k}", "polygon_mm": poly, "keywords": ["blocks_los"]})
    assume(terrain)
    return {"format": "tablesight.scene/1", "disks": disks, "terrain": terrain}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(tables())
def test_report_line_of_sight_matches_the_oracle_for_every_pair(doc):
    """The report's batched line of sight (all pairs at once, pieces a disk stands on ignored per pair)
    against the oracle, pair by pair; pairs the report itself calls borderline at 1.5 mm are skipped."""
    from rules.diskwars import DiskwarsSettings, build_report
    from tablesight.scene import Scene

    sc = Scene.from_json(doc)
    rep = build_report(sc, DiskwarsSettings(tolerance_mm=MARGIN))
    near = {(b.a, b.b) for b in rep.borderline if b.kind == "los"}
    touchy = {b.a for b in rep.borderline if b.kind == "overlap"} | {b.b for b in rep.borderline if b.kind == "overlap"}
    on = {(o.disk, o.terrain) for o in rep.terrain_overlaps}
    polys = {t.id: np.array(t.polygon_mm) for t in sc.terrain}
    for pair in rep.pairs:
        if (pair.a, pair.b) in near or pair.a in touchy or pair.b in touchy:
            continue
        a, b = sc.disk(pair.a), sc.disk(pair.b)
        active = [p for tid, p in polys.items() if (a.id, tid) not in on and (b.id, tid) not in on]
        if math.dist(a.center, b.center) <= a.radius_mm + b.radius_mm:
            assert pair.los
            continue
        if any(Polygon(p).distance(Point(d.center)) <= d.radius_mm + 0.5 for p in active for d in (a, b)):
            continue  # a disk touching a piece: the oracle's rim points would start inside it
        assert pair.los == oracle_visible(a.center, a.radius_mm, b.center, b.radius_mm, active), (pair.a, pair.b)
        if pair.los:
            assert witness_ok(a.center, a.radius_mm, b.center, b.radius_mm, active, pair.los_line_mm)
