"""Game-agnostic geometry: circles, polygons, segment-versus-obstacle tests (grazing is not crossing)."""

import math

import numpy as np
import pytest
from shapely.geometry import Point, Polygon

from rules import geometry

SQUARE = [(0, 0), (10, 0), (10, 10), (0, 10)]
# an L shape: reflex corner at (5, 5)
ELL = [(0, 0), (10, 0), (10, 5), (5, 5), (5, 10), (0, 10)]


@pytest.mark.parametrize("d, r1, r2", [(0, 10, 10), (5, 10, 10), (15, 10, 8), (19.9, 10, 10), (20, 10, 10),
                                       (30, 10, 10), (3, 20, 5), (16, 20, 5)])
def test_lens_area_matches_shapely(d, r1, r2):
    a = Point(0, 0).buffer(r1, quad_segs=512)
    b = Point(d, 0).buffer(r2, quad_segs=512)
    assert geometry.lens_area(d, r1, r2) == pytest.approx(a.intersection(b).area, rel=1e-4, abs=1e-3)


def test_lens_area_vectorised_and_depth():
    out = geometry.lens_area(np.array([0.0, 30.0]), np.array([10.0, 10.0]), np.array([10.0, 10.0]))
    assert out[0] == pytest.approx(math.pi * 100) and out[1] == 0.0
    assert geometry.circle_overlap_depth((0, 0), 10, (15, 0), 10) == 5
    assert geometry.edge_gap((0, 0), 10, (25, 0), 10) == 5 and geometry.edge_gap((0, 0), 10, (5, 0), 10) == 0


@pytest.mark.parametrize("centre, r, penetration", [
    ((5, 5), 1, 6.0),       # centre inside, 5 from the boundary
    ((12, 5), 3, 1.0),      # 2 outside the right edge, reaches 1 in
    ((13, 5), 3, 0.0),      # touching the edge
    ((13, 13), 3, 3 - math.hypot(3, 3)),  # near a corner, apart
])
def test_circle_polygon_penetration(centre, r, penetration):
    got = geometry.circle_polygon_penetration(np.array([centre], float), np.array([r]), geometry.polygon_array(SQUARE))
    assert got[0] == pytest.approx(penetration)


def test_polygon_orientation_is_normalised():
    cw = geometry.polygon_array(SQUARE[::-1])
    assert geometry.signed_area(cw) == pytest.approx(100)


@pytest.mark.parametrize("poly, p, q, clear", [
    (SQUARE, (-5, 5), (15, 5), False),       # straight through
    (SQUARE, (-5, 0), (15, 0), True),        # along the bottom edge
    (SQUARE, (-5, -5), (5, 5), False),       # into the interior through the corner (0, 0)
    (SQUARE, (-5, 5), (5, -5), True),        # touching the corner (0, 0) only
    (SQUARE, (-5, 15), (15, -5), False),     # diagonal through two opposite corners (through the interior)
    (SQUARE, (0, 10), (10, 10), True),       # exactly one edge
    (SQUARE, (-5, 30), (30, -5), True),      # passes beside
    (ELL, (0, 10), (10, 0), False),          # between two vertices, through the reflex corner (5, 5)
    (ELL, (5, 12), (5, 5), True),            # ends at the reflex corner from outside
    (ELL, (12, 12), (5, 5), True),           # into the notch, touching the reflex corner
    (ELL, (12, 12), (4, 4), False),          # through the reflex corner into the interior
    (ELL, (5, 5), (5, 10), True),            # along an inner edge
    (ELL, (2, 2), (3, 3), False),            # wholly inside
])
def test_segments_clear_cases(poly, p, q, clear):
    obs = geometry.Obstacles([np.array(poly, float)])
    assert bool(geometry.segments_clear(np.array([p], float), np.array([q], float), obs)[0]) == clear
    assert bool(geometry.segments_clear(np.array([q], float), np.array([p], float), obs)[0]) == clear


def test_segments_clear_respects_the_active_mask():
    obs = geometry.Obstacles([np.array(SQUARE, float), np.array(SQUARE, float) + 20])
    p = np.array([[-5, 5], [15, 25]], float)
    q = np.array([[15, 5], [35, 25]], float)
    assert list(geometry.segments_clear(p, q, obs)) == [False, False]
    active = np.array([[False, True], [False, True]])
    assert list(geometry.segments_clear(p, q, obs, active)) == [True, False]


def test_los_through_a_narrow_gap_between_two_pieces():
    # two walls leave a gap about 1 mm wide that the centre line and the common tangents all miss
    walls = [np.array([(48, -100), (52, -100), (52, 0.8), (48, 1)], float),
             np.array([(48, 2), (52, 1.8), (52, 100), (48, 100)], float)]
    res = geometry.disks_line_of_sight((0, 0), 5, (100, 0), 5, geometry.Obstacles(walls))
    assert res.visible
    (px, py), (qx, qy) = res.witness
    assert math.hypot(px, py) <= 5 + 1e-9 and math.hypot(qx - 100, qy) <= 5 + 1e-9
    from shapely.geometry import LineString
    assert all(LineString(res.witness).intersection(Polygon(w).buffer(-1e-6)).is_empty for w in walls)
    closed = [walls[0], np.array([(48, 0.95), (52, 0.75), (52, 100), (48, 100)], float)]
    assert not geometry.disks_line_of_sight((0, 0), 5, (100, 0), 5, geometry.Obstacles(closed)).visible


def test_touching_disks_always_see_each_other():
    wall = geometry.Obstacles([np.array([(-50, -50), (50, -50), (50, -40), (-50, -40)], float)])
    res = geometry.disks_line_of_sight((0, 0), 10, (20, 0), 10, wall)
    assert res.visible and res.witness == ((0.0, 0.0), (20.0, 0.0))


def test_circle_rect_margins():
    inside, outside = geometry.circle_rect_margins(np.array([[50, 50], [5, 50], [-20, 50]], float),
                                                   np.array([10, 10, 10]), 100, 100)
    assert inside.tolist() == [40, -5, -30] and outside.tolist() == [-60, -15, 10]


def test_repeated_corners_are_dropped():
    poly = geometry.polygon_array([(0, 0), (10, 0), (10, 0), (10, 10), (0, 10), (0, 0)])
    assert len(poly) == 4
    obs = geometry.Obstacles([poly])
    assert not geometry.segments_clear(np.array([[-5, 5]], float), np.array([[15, 5]], float), obs)[0]
