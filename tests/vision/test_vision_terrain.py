"""Terrain capture at setup: drawn pieces on felt come back as polygons; unmoved pieces keep their names."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from shapely.geometry import Polygon

from tablesight.scene import Terrain
from vision.terrain import TerrainConfig, capture_terrain, update_terrain
from vision.synth.drawn import felt, identity_calibration

PIECES = [
    [(100, 100), (300, 120), (280, 260), (120, 240)],            # a grey rocky plate
    [(500, 500), (760, 520), (740, 700), (600, 760), (480, 650)],  # a green forest: felt-like colour, rough
]


def _table():
    rng = np.random.default_rng(2)
    img = felt(rng)
    cv2.fillPoly(img, [np.array(PIECES[0], np.int32) + 40], (140, 140, 145))
    tex = rng.integers(0, 90, img.shape[:2], dtype=np.uint8)
    forest = np.dstack([30 + tex // 3, 90 + tex, 40 + tex // 3]).astype(np.uint8)
    mask = np.zeros(img.shape[:2], np.uint8)
    cv2.fillPoly(mask, [np.array(PIECES[1], np.int32) + 40], 255)
    img[mask > 0] = forest[mask > 0]
    return img


def test_pieces_are_found_as_polygons():
    found = capture_terrain(_table(), identity_calibration())
    assert len(found) == 2
    for truth in PIECES:
        tp = Polygon(truth)
        best = max(found, key=lambda t: Polygon(t.polygon_mm).intersection(tp).area)
        fp = Polygon(best.polygon_mm)
        assert fp.intersection(tp).area / fp.union(tp).area > 0.85


def test_bare_felt_has_no_terrain():
    assert capture_terrain(felt(np.random.default_rng(4)), identity_calibration()) == ()


def test_unmoved_pieces_keep_name_and_keywords():
    named = (Terrain("t1", tuple(PIECES[0]), "rocks", ("dangerous",)),
             Terrain("t2", tuple(PIECES[1]), "forest", ("blocks_los", "cover")))
    moved = Terrain("x", tuple((x + 200, y) for x, y in PIECES[1]))
    seen = (Terrain("a", tuple((x + 1, y) for x, y in PIECES[0])), moved)
    out = update_terrain(named, seen)
    assert out[0] == named[0]
    assert len(out) == 2 and out[1].id not in ("t1",) and out[1].name == ""


def test_config_is_validated():
    with pytest.raises(ValueError):
        TerrainConfig(px_per_mm=10)
