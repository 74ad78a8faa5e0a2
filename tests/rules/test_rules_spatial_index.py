"""The spatial index (shapely's STRtree) finds contacts, disks on terrain and the pieces near each sight line: the
report it gives is the one a brute-force search over all pairs gives, on random tables (hypothesis).

The brute-force reference is the same report computed with `shapely.STRtree` replaced by a stand-in that
answers every query with every candidate: nothing is left to the index, every pair is tested exactly.
"""

import math
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import shapely
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rules.diskwars import build_report
from rules.diskwars.board import Board
from rules.diskwars.settings import DiskwarsSettings
from rules.diskwars.sight import Sight
from tablesight.scene import Scene

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_report import random_table  # noqa: E402

PLAYERS = [{"id": "orcs", "initiative": 1}, {"id": "empire", "initiative": 2}]
RADII = (15.0, 22.0, 32.0, 44.5)
KEYWORDS = (["blocks_los"], ["blocks_los", "cover"], ["elevated"], ["rough"], ["blocks_los", "elevated"])


class AllPairsTree:
    """Stand-in for shapely.STRtree: every query geometry is a candidate for every item (all pairs)."""

    def __init__(self, geoms):
        self.count = len(geoms)

    def query(self, geoms, predicate=None, distance=None):
        m = len(np.atleast_1d(geoms))
        q, t = np.meshgrid(np.arange(m), np.arange(self.count), indexing="ij")
        return np.stack([q.ravel(), t.ravel()])


def brute_force_report(scene, s=None):
    with mock.patch.object(shapely, "STRtree", AllPairsTree):
        return build_report(scene, s)


@st.composite
def tables(draw):
    """Crowded tables: disks packed into a small square (overlaps, stacks, contacts), terrain among them."""
    side = draw(st.sampled_from([150.0, 300.0, 600.0]))
    n = draw(st.integers(2, 24))
    disks = [{"id": f"d{k}", "player": draw(st.sampled_from(["orcs", "empire", None])),
              "x_mm": draw(st.floats(0, side)), "y_mm": draw(st.floats(0, side)),
              "radius_mm": draw(st.sampled_from(RADII)), "z": draw(st.integers(0, 3))} for k in range(n)]
    terrain = []
    for k in range(draw(st.integers(0, 4))):
        cx, cy = draw(st.floats(0, side)), draw(st.floats(0, side))
        m = draw(st.integers(3, 6))
        rad = draw(st.lists(st.floats(10, 70), min_size=m, max_size=m))
        pts = [[cx + r * math.cos(2 * math.pi * i / m), cy + r * math.sin(2 * math.pi * i / m)]
               for i, r in enumerate(rad)]
        terrain.append({"id": f"t{k}", "name": f"piece {k}", "polygon_mm": pts,
                        "keywords": draw(st.sampled_from(KEYWORDS))})
    return Scene.from_json({"format": "tablesight.scene/1", "players": PLAYERS, "disks": disks,
                            "terrain": terrain})


@st.composite
def rule_settings(draw):
    # a tolerance larger than the contact tolerance widens what the index must find (touching calls at a gap)
    return DiskwarsSettings(tolerance_mm=draw(st.sampled_from([0.0, 1.0, 4.0])),
                            contact_tolerance_mm=draw(st.sampled_from([0.0, 0.5, 2.0])),
                            elevated_sight=draw(st.sampled_from(["both_ways", "out_only"])))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), rule_settings())
def test_report_with_index_equals_brute_force(scene, s):
    assert build_report(scene, s).to_json() == brute_force_report(scene, s).to_json()


def test_report_with_index_equals_brute_force_on_a_full_table():
    scene = random_table(3, 150)
    assert build_report(scene).to_json() == brute_force_report(scene).to_json()


def test_index_leaves_out_the_far_pairs():
    """On a full table the index keeps a small share of the pairs: the exact tests do not run on all of them."""
    board = Board(random_table(0, 300))
    pairs = board.n * (board.n - 1) // 2
    assert 0 < len(board.contacts[0]) < pairs // 20
    assert np.isfinite(board.terrain_depth).sum() < board.terrain_depth.size // 2
    sight = Sight(board)
    iu, ju = np.triu_indices(board.n, 1)
    near = sight.near_pieces(iu, ju, sight.radii[iu], sight.radii[ju])
    assert near.sum() < near.size


def test_touching_calls_at_a_gap_are_found():
    """A tolerance wider than the contact tolerance asks about disks and pieces a few mm apart: the index must
    still hand those pairs to the exact tests (a touching call at a 2 mm gap, with a 4 mm tolerance)."""
    scene = Scene.from_json({"format": "tablesight.scene/1", "players": PLAYERS, "disks": [
        {"id": "a", "player": "orcs", "x_mm": 100.0, "y_mm": 100.0, "radius_mm": 22.0, "z": 0},
        {"id": "b", "player": "empire", "x_mm": 146.0, "y_mm": 100.0, "radius_mm": 22.0, "z": 0},
        {"id": "c", "player": "empire", "x_mm": 300.0, "y_mm": 100.0, "radius_mm": 22.0, "z": 0}],
        "terrain": [{"id": "wood", "name": "wood", "polygon_mm": [[324, 60], [400, 60], [400, 140], [324, 140]],
                     "keywords": ["blocks_los"]}]})
    s = DiskwarsSettings(tolerance_mm=4.0, contact_tolerance_mm=0.5)
    rep = build_report(scene, s)
    calls = {(b.kind, b.a, b.b) for b in rep.borderline}
    assert ("overlap", "a", "b") in calls
    assert ("overlap", "c", "wood") in calls
    assert rep.to_json() == brute_force_report(scene, s).to_json()


def test_sight_line_past_a_piece_beside_the_centre_line():
    """A wall across the centre line with a gap near the top, and a second piece off the centre line's box that
    closes the gap: only the disks' whole box finds the second piece, and the pair is blocked."""
    scene = Scene.from_json({"format": "tablesight.scene/1", "players": PLAYERS, "disks": [
        {"id": "a", "player": "orcs", "x_mm": 100.0, "y_mm": 300.0, "radius_mm": 20.0, "z": 0},
        {"id": "b", "player": "empire", "x_mm": 300.0, "y_mm": 300.0, "radius_mm": 20.0, "z": 0}],
        "terrain": [
            {"id": "wall", "name": "wall", "polygon_mm": [[195, 200], [205, 200], [205, 310], [195, 310]],
             "keywords": ["blocks_los"]},
            {"id": "rock", "name": "rock", "polygon_mm": [[160, 303], [240, 303], [240, 400], [160, 400]],
             "keywords": ["blocks_los"]}]})
    rep = build_report(scene)
    assert rep.pair("a", "b").los is False
    assert rep.to_json() == brute_force_report(scene).to_json()
