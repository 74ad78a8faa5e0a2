"""The randomized world: families, the held-out split, determinism, and frames that render with their truth."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tablesight.errors import InputError
from vision.synth.world import (CLOTH_KINDS, FAMILIES, HELD_OUT_ART, HELD_OUT_CLOTH, HELD_OUT_FAMILIES,
                                TRAINING_FAMILIES, Family, world_table)


def test_no_training_family_uses_a_held_out_factor():
    for name in TRAINING_FAMILIES:
        f = FAMILIES[name]
        assert f.art != HELD_OUT_ART and f.cloth != HELD_OUT_CLOTH, name
    for name in HELD_OUT_FAMILIES:
        assert FAMILIES[name].held_out and name not in TRAINING_FAMILIES


def test_every_factor_value_of_the_training_space_is_trained_on():
    arts = {FAMILIES[n].art for n in TRAINING_FAMILIES}
    cloths = {FAMILIES[n].cloth for n in TRAINING_FAMILIES}
    borders = {FAMILIES[n].border for n in TRAINING_FAMILIES}
    assert len(arts) == 4 and len(cloths) == 5 and len(borders) == 3


def test_a_family_is_validated_and_an_unknown_one_refused():
    with pytest.raises(ValueError):
        Family("x", "oil", "thin", "felt")
    with pytest.raises(InputError, match="unknown family"):
        world_table(3000, "photo-thin-velvet")


def test_world_tables_are_deterministic_and_vary_by_seed():
    a, cam_a = world_table(3001, "paint-wide-felt")
    b, cam_b = world_table(3001, "paint-wide-felt")
    c, _ = world_table(3002, "paint-wide-felt")
    assert a == b and np.allclose(cam_a.camera_matrix, cam_b.camera_matrix)
    assert a.look.mat != c.look.mat or a.diameters_mm != c.diameters_mm
    assert all(d.art.style is not None and d.art.style.art == "paint" for d in a.disks)


def test_diameters_are_randomized_but_ordered():
    sizes = {world_table(s, "flat-thin-black")[0].diameters_mm for s in range(3000, 3012)}
    assert len(sizes) > 3
    for s, m, lg in sizes:
        assert s < m < lg


@pytest.mark.parametrize("family", ["shapes-none-wood", HELD_OUT_FAMILIES[0]])
def test_a_world_frame_renders_with_visible_truth(family):
    from vision.synth.render import render_frame

    setup, camera = world_table(3003, family)
    frame = render_frame(setup, camera)
    assert frame.image.shape == (1080, 1920, 3)
    vis = {d.id: d.extra["visible_fraction"] for d in frame.scene.disks}
    # the label image: a fully visible disk's face covers about pi r^2 of its image area
    for i, d in enumerate(setup.disks):
        if vis[d.id] < 0.999 or d.top_height_mm > 3.5:
            continue
        px_per_mm = 1.0 / camera.mm_per_px_at(d.center)
        area = np.count_nonzero(frame.label == i)
        expect = math.pi * (d.radius_mm * px_per_mm) ** 2
        assert 0.85 * expect < area < 1.15 * expect, (d.id, area, expect)
        break


def test_the_hard_tier_is_harder_and_an_unknown_tier_refused():
    std, _ = world_table(3004, "photo-thin-felt")
    hard, _ = world_table(3004, "photo-thin-felt", tier="hard")
    assert len(hard.disks) >= 22 and hard.look.defocus_sigma_px >= 0.8
    assert std.look.defocus_sigma_px <= 1.3
    with pytest.raises(InputError, match="tier"):
        world_table(3004, "photo-thin-felt", tier="brutal")


@pytest.mark.parametrize("kind", sorted({k for kinds in CLOTH_KINDS.values() for k in kinds}))
def test_every_cloth_kind_draws_a_textured_tile(kind):
    from vision.synth.scenes import MatStyle
    from vision.synth.world_art import mat_tile

    tile = mat_tile(MatStyle(kind=kind, bgr=(60, 120, 90), scale=30.0, seed=5), 256)
    assert tile.shape == (256, 256, 3) and np.isfinite(tile).all()
    assert tile.min() >= 0 and tile.max() <= 255 and tile.std() > 1.0


@pytest.mark.parametrize("kind", CLOTH_KINDS["scatter"])
def test_scatter_cloths_repeat_without_a_seam(kind):
    """The renderer samples a cloth tile with wrap-around: a seam would be a straight edge across the table."""
    from vision.synth.scenes import MatStyle
    from vision.synth.world_art import mat_tile

    tile = mat_tile(MatStyle(kind=kind, bgr=(60, 120, 90), scale=30.0, seed=5), 256)
    inside = np.abs(np.diff(tile, axis=0)).mean()
    for seam in (np.abs(tile[0] - tile[-1]).mean(), np.abs(tile[:, 0] - tile[:, -1]).mean()):
        assert seam < 3.0 * inside + 1.0
