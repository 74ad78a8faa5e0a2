"""Melee piles (the `piled` tier): disks lying across two or three others, drawn only where a tier asks for them."""

from __future__ import annotations

import hashlib
import math

import pytest

from vision.synth.scenes import random_table
from vision.synth.tiers import TIERS
from vision.synth.world import world_table


def _overlaps(disks, d) -> list:
    return [o for o in disks if o is not d
            and math.hypot(o.x_mm - d.x_mm, o.y_mm - d.y_mm) < o.radius_mm + d.radius_mm - 0.05]


def _fingerprint(setup) -> str:
    return hashlib.sha256(repr([(d.id, d.size, round(d.x_mm, 3), round(d.y_mm, 3), d.z)
                                for d in setup.disks]).encode()).hexdigest()[:16]


@pytest.mark.parametrize("seed", [1000, 1001, 1002, 1003])
def test_a_piled_table_has_a_disk_lying_across_two_others(seed):
    setup = random_table(seed, "piled")
    across = [d for d in setup.disks if len([o for o in _overlaps(setup.disks, d) if o.z < d.z]) >= 2]
    assert across, "no disk of the piled table lies on two others"
    # every disk lies on all it overlaps that came before it: z above each of them
    for d in across:
        assert all(d.z > o.z for o in _overlaps(setup.disks, d) if o.z < d.z)


def test_piled_tables_have_far_more_disks_across_others_than_standard_ones():
    def across(tier: str) -> int:
        n = 0
        for seed in range(1000, 1010):
            disks = random_table(seed, tier).disks
            n += sum(len([o for o in _overlaps(disks, d) if o.z < d.z]) >= 2 for d in disks)
        return n

    assert across("piled") >= 2 * max(across("standard"), 1)


# Regression: the standard and hard tables (on which every stored figure and baseline was measured) must not move
# when a tier gains piles: piles are drawn only where a tier has them. Fingerprints of the tables as drawn before.
@pytest.mark.parametrize("make, expected", [
    (lambda: random_table(9000, "standard"), "b866de2a226a6ae2"),
    (lambda: random_table(9001, "hard"), "6b4404b5ec41b267"),
    (lambda: world_table(9500, "heraldic-wide-felt")[0], "db72d1db3985da55"),
    (lambda: world_table(9501, "heraldic-wide-felt", tier="hard")[0], "8dff3a3ebe53d36e"),
])
def test_standard_and_hard_tables_unchanged_by_piles(make, expected):
    assert _fingerprint(make()) == expected


def test_a_piled_room_is_the_standard_room_with_other_tables():
    standard, cam_s = world_table(3400, "paint-wide-printed")
    piled, cam_p = world_table(3400, "paint-wide-printed", tier="piled")
    assert cam_s.camera_matrix.tolist() == cam_p.camera_matrix.tolist() and cam_s.rvec.tolist() == cam_p.rvec.tolist()
    assert standard.look.mat == piled.look.mat
    assert _fingerprint(standard) != _fingerprint(piled)


def test_the_piled_tier_is_validated_like_any():
    assert TIERS["piled"].piles == (1, 2) and TIERS["standard"].piles == (0, 0)
    from dataclasses import replace

    with pytest.raises(ValueError, match="piles"):
        replace(TIERS["standard"], piles=(2, 1))
