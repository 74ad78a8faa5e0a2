"""Disks printed alike (the world's `alike` tier): chips of a set and a unit's disks share one face and lie in lines
and heaps, drawn only where a tier asks for them."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from vision.synth.scenes import random_table
from vision.synth.tiers import TIERS
from vision.synth.world import world_table


def _touching_or_near(a, b, slack_mm: float) -> bool:
    d = math.hypot(a.x_mm - b.x_mm, a.y_mm - b.y_mm)
    return a.radius_mm + b.radius_mm - 0.05 <= d <= a.radius_mm + b.radius_mm + slack_mm


@pytest.mark.parametrize("seed", [1000, 1001, 1002])
def test_a_row_is_one_size_and_army_each_disk_beside_another_none_on_another(seed):
    only_a_row = replace(TIERS["standard"], name="rows", disks=(3, 3), stacks=(0, 0), overlaps=(0, 0),
                         touching=(0, 0), tokens=(0, 0), rows=(1, 1))
    row = random_table(seed, only_a_row).disks
    assert len(row) == 3 and len({(d.size, d.player) for d in row}) == 1
    for d in row:
        assert d.z == 0, "a row's disks lie on the cloth, never on one another"
    for d in row:
        assert any(_touching_or_near(d, o, 4.0) for o in row if o is not d), f"{d.id} stands apart from its row"


def test_alike_tables_print_each_armys_disks_of_one_size_alike_and_the_standard_ones_do_not():
    def groups(tier: str) -> list[int]:
        setup, _ = world_table(3400, "paint-wide-printed", tier=tier)
        faces: dict = {}
        for d in setup.disks:
            faces.setdefault((d.player, d.size), set()).add(d.art.style)
        return [len(s) for s in faces.values()]

    assert set(groups("alike")) == {1}
    assert max(groups("standard")) > 1


def test_an_alike_room_is_the_standard_room_with_more_disks_in_lines_and_heaps():
    standard, cam_s = world_table(3400, "shapes-none-wood")
    alike, cam_a = world_table(3400, "shapes-none-wood", tier="alike")
    assert cam_s.camera_matrix.tolist() == cam_a.camera_matrix.tolist() and cam_s.rvec.tolist() == cam_a.rvec.tolist()
    assert standard.look.mat == alike.look.mat

    def beside(setup) -> int:   # disks touching or within 4 mm of another of their own size and army
        return sum(any(_touching_or_near(d, o, 4.0) for o in setup.disks
                       if o is not d and o.size == d.size and o.player == d.player) for d in setup.disks)

    assert beside(alike) >= 2 * max(beside(standard), 1)


def test_rows_are_validated_like_any_range():
    assert TIERS["standard"].rows == (0, 0)
    with pytest.raises(ValueError, match="rows"):
        replace(TIERS["standard"], rows=(3, 1))


@pytest.mark.parametrize("seed", [3400, 3401, 3402])
def test_a_heaped_table_pours_out_a_heap_of_a_dozen_or_more_disks_printed_alike(seed):
    """The `heaped` tier: one or two heaps of 12-24 disks of one size and army, each touching or near one of its
    heap (a bag of chips poured out: disks with nothing but their own kind round them), printed alike."""
    setup, _ = world_table(seed, "paint-wide-printed", tier="heaped")
    assert setup.tier == "world-heaped"
    groups: dict = {}
    for d in setup.disks:
        groups.setdefault((d.player, d.size), []).append(d)
    biggest = 0
    for group in groups.values():
        assert len({d.art.style for d in group}) == 1
        # the largest cluster of the group's disks linked by touching (or lying within 4 mm of) one another
        left, sizes = list(group), []
        while left:
            cluster, todo = [], [left.pop()]
            while todo:
                d = todo.pop()
                cluster.append(d)
                near = [o for o in left if _touching_or_near(d, o, 4.0)]
                left = [o for o in left if o not in near]
                todo += near
            sizes.append(len(cluster))
        biggest = max(biggest, *sizes)
    assert biggest >= 12


def test_row_sizes_and_the_heap_share_are_validated():
    assert TIERS["standard"].row_disks == (3, 10) and TIERS["standard"].heap_share == 0.5
    with pytest.raises(ValueError, match="heap_share"):
        replace(TIERS["standard"], heap_share=1.5)
    with pytest.raises(ValueError, match="row_disks"):
        replace(TIERS["standard"], row_disks=(1, 4))
