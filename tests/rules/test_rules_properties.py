"""Property tests: pins and engagements do not depend on names or on where the table stands; bands grow with
distance; the report does not depend on the order disks are listed in."""

import math

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rules.diskwars import band_of, build_report, in_range
from rules.diskwars.board import Board
from rules.diskwars.ranges import BANDS
from rules.diskwars.stacks import sandwich_areas
from tablesight.scene import RangeBands, Scene

PLAYERS = [{"id": "orcs", "initiative": 1}, {"id": "empire", "initiative": 2}]
RADII = (22.0, 32.0, 44.5)


@st.composite
def crowded(draw):
    n = draw(st.integers(3, 7))
    disks = []
    for k in range(n):
        disks.append({"id": f"d{k}", "player": draw(st.sampled_from(["orcs", "empire", None])),
                      "x_mm": draw(st.floats(300, 420)), "y_mm": draw(st.floats(300, 420)),
                      "radius_mm": draw(st.sampled_from(RADII)), "z": draw(st.integers(0, 4))})
    return disks


def _scene(disks):
    return Scene.from_json({"format": "tablesight.scene/1", "players": PLAYERS, "disks": disks})


def _clear_of_thresholds(sc):
    """Away from the calls that rounding could flip: overlap depth vs contact tolerance, sandwich areas."""
    board = Board(sc)
    tol = board.settings
    for i in range(board.n):
        for j in range(i + 1, board.n):
            if abs(board.depth[i, j] - tol.contact_tolerance_mm) < 1e-6:
                return False
            if board.overlap[i, j] and board.z[i] != board.z[j]:
                up, lo = (i, j) if board.z[i] > board.z[j] else (j, i)
                areas = sandwich_areas(board, up, lo)
                if areas is not None:
                    lens, left = areas
                    if abs(left - tol.sandwich_area_tolerance_mm2) < 1.0 or abs(lens - left - tol.sandwich_area_tolerance_mm2) < 1.0:
                        return False
    return True


def _moved(disks, angle, dx, dy, names):
    c, s = math.cos(angle), math.sin(angle)
    out = []
    for d, new in zip(disks, names):
        x, y = d["x_mm"] - 360, d["y_mm"] - 360
        out.append({**d, "id": new, "x_mm": 360 + c * x - s * y + dx, "y_mm": 360 + s * x + c * y + dy})
    return out


def _pin_set(rep, rename=None):
    f = rename or (lambda x: x)
    return {(f(p.pinner), f(p.pinned), p.partial, p.enemy) for p in rep.pins}


def _engagement_set(rep, rename=None):
    f = rename or (lambda x: x)
    return {(frozenset(map(f, e.attackers)), frozenset(map(f, e.defenders))) for e in rep.engagements}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(crowded(), st.floats(0, 2 * math.pi), st.floats(-250, 250), st.floats(-250, 250), st.randoms())
def test_pins_invariant_to_renaming_and_rigid_motion(disks, angle, dx, dy, rnd):
    sc = _scene(disks)
    names = [f"u{k}" for k in range(len(disks))]
    rnd.shuffle(names)
    moved = _scene(_moved(disks, angle, dx, dy, names))
    assume(_clear_of_thresholds(sc) and _clear_of_thresholds(moved))
    back = {new: d["id"] for d, new in zip(disks, names)}.__getitem__
    a, b = build_report(sc), build_report(moved)
    assert _pin_set(a) == _pin_set(b, back)
    assert _engagement_set(a) == _engagement_set(b, back)
    assert set(a.harried) == {back(h) for h in b.harried}
    assert len(a.contests) == len(b.contests)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(crowded(), st.randoms())
def test_report_does_not_depend_on_listing_order(disks, rnd):
    shuffled = list(disks)
    rnd.shuffle(shuffled)
    assert build_report(_scene(disks)).to_json() == build_report(_scene(shuffled)).to_json()


@st.composite
def bands(draw):
    short = draw(st.floats(10, 200))
    medium = short + draw(st.floats(1, 200))
    return RangeBands(short, medium, medium + draw(st.floats(1, 200)))


@settings(max_examples=200, deadline=None)
@given(bands(), st.floats(0, 1000), st.floats(0, 1000))
def test_band_is_monotone_in_distance(rb, d1, d2):
    lo, hi = sorted((d1, d2))
    assert BANDS.index(band_of(lo, rb)) <= BANDS.index(band_of(hi, rb))


@settings(max_examples=100, deadline=None)
@given(bands(), st.floats(0, 600), st.floats(0.5, 300), st.sampled_from(RADII), st.sampled_from(RADII))
def test_in_range_monotone_and_wholly_is_stricter(rb, gap, step, ra, rbb):
    def pair(g):
        sc = Scene.from_json({"format": "tablesight.scene/1", "range_bands_mm": rb.as_dict(), "disks": [
            {"id": "a", "x_mm": 0, "y_mm": 0, "radius_mm": ra}, {"id": "b", "x_mm": ra + rbb + g, "y_mm": 0, "radius_mm": rbb}]})
        return sc.disk("a"), sc.disk("b")

    near, far = pair(gap), pair(gap + step)
    for band in BANDS:
        if in_range(*far, band, rb):
            assert in_range(*near, band, rb)
        if in_range(*near, band, rb, wholly=True):
            assert in_range(*near, band, rb)


FOUR = [{"id": f"p{k}", "initiative": k} for k in range(1, 5)]


@st.composite
def melee_piles(draw):
    n = draw(st.integers(3, 9))
    players = draw(st.integers(2, 4))
    return [{"id": f"d{k}", "player": draw(st.sampled_from([f"p{i}" for i in range(1, players + 1)] + [None])),
             "x_mm": draw(st.floats(300, 460)), "y_mm": draw(st.floats(300, 460)),
             "radius_mm": draw(st.sampled_from(RADII)), "z": draw(st.integers(0, 5))} for k in range(n)]


@settings(max_examples=80, deadline=None)
@given(melee_piles())
def test_engagement_graph_invariants(disks):
    """Every enemy pin lies inside one engagement (pinner attacking, pinned defending), engagements share no
    (disk, role), harried disks are exactly those on both sides, and the sequence is a complete order that
    respects every must_precede pair."""
    rep = build_report(Scene.from_json({"format": "tablesight.scene/1", "players": FOUR, "disks": disks}))
    where = {}
    for e in rep.engagements:
        for d in e.attackers:
            assert (d, "attacker") not in where
            where[(d, "attacker")] = e.id
        for d in e.defenders:
            assert (d, "defender") not in where
            where[(d, "defender")] = e.id
    enemy = [p for p in rep.pins if p.enemy]
    for p in enemy:
        assert where[(p.pinner, "attacker")] == where[(p.pinned, "defender")]
    assert {d for d, _ in where} == {p.pinner for p in enemy} | {p.pinned for p in enemy}
    assert set(rep.harried) == {p.pinner for p in enemy} & {p.pinned for p in enemy}
    seq = rep.melee_order.sequence
    assert sorted(seq) == sorted(e.id for e in rep.engagements)
    for before, after in rep.melee_order.must_precede:
        assert seq.index(before) < seq.index(after)
    for c in rep.contests:
        assert len(c.engagements) >= 2
