"""Matching a detected scene to the truth, and what the camera got wrong: hand-made truth/detection pairs."""

from __future__ import annotations

import pytest

from tablesight.scene import Disk, Scene
from vision.scene_match import Disagreement, disagreements, match, summary


def disk(id_, x, y, r=22.0, z=0, **extra):
    return Disk(id_, x, y, r, z=z, extra=extra)


# A lone disk, and a medium disk (b1, on the felt) with a small one lying on it (b2).
TRUTH = Scene(disks=(disk("a", 100, 100), disk("b1", 300, 300, r=32.0), disk("b2", 320, 300, z=1)))


def detected(*disks):
    return Scene(disks=tuple(disks))


def kinds(found):
    return [(d.kind, d.truth_ids, d.detected_ids) for d in found]


def test_a_faithful_detection_disagrees_with_nothing():
    det = detected(disk("t1", 101.5, 99.0), disk("t2", 301, 300, r=32.0), disk("t3", 319, 301, z=1))
    assert match(TRUTH, det) == {"t1": "a", "t2": "b1", "t3": "b2"}
    assert disagreements(TRUTH, det) == []


def test_a_missed_disk():
    det = detected(disk("t2", 301, 300, r=32.0), disk("t3", 319, 301, z=1))
    found = disagreements(TRUTH, det)
    assert kinds(found) == [("missed", ("a",), ())]
    assert (found[0].x_mm, found[0].y_mm, found[0].hidden) == (100, 100, False)
    assert summary(found) == {"missed": 1, "phantom": 0, "order": 0}


def test_a_missed_disk_the_camera_could_not_see_is_marked_hidden():
    truth = Scene(disks=(disk("low", 300, 300, visible_fraction=0.1), disk("top", 302, 300, z=1)))
    found = disagreements(truth, detected(disk("t1", 302, 301, z=0)))
    assert kinds(found) == [("missed", ("low",), ())]  # the detection is the visible top disk's, not the hidden one's
    assert found[0].hidden


def test_a_phantom_disk_and_a_detection_too_far_off():
    det = detected(disk("t1", 100, 100), disk("t2", 301, 300, r=32.0), disk("t3", 319, 301, z=1),
                   disk("t9", 600, 600))
    assert kinds(disagreements(TRUTH, det)) == [("phantom", (), ("t9",))]
    # 12 mm off a 22 mm disk: beyond a quarter radius, so both a miss and a phantom
    far = detected(disk("t1", 112, 100), disk("t2", 301, 300, r=32.0), disk("t3", 319, 301, z=1))
    assert kinds(disagreements(TRUTH, far)) == [("missed", ("a",), ()), ("phantom", (), ("t1",))]


@pytest.mark.parametrize("z_b1,z_b2", [(1, 0), (0, 0)])
def test_a_wrong_stacking_order_and_a_tie(z_b1, z_b2):
    """The small disk detected under the medium one, or at the same height: the order is wrong."""
    det = detected(disk("t1", 100, 100), disk("t2", 301, 300, r=32.0, z=z_b1), disk("t3", 319, 301, z=z_b2))
    found = disagreements(TRUTH, det)
    assert kinds(found) == [("order", ("b1", "b2"), ("t2", "t3"))]  # the lower true disk first
    assert found[0].x_mm == pytest.approx(310.0)


def test_disks_apart_have_no_order_and_held_disks_do_not_count():
    truth = Scene(disks=(disk("a", 100, 100, z=1), disk("b", 200, 100), disk("h", 400, 400, held=True)))
    det = detected(disk("t1", 100, 100), disk("t2", 200, 100, z=2))
    assert disagreements(truth, det) == []


def test_a_disagreement_names_a_known_kind_and_reads_as_json():
    with pytest.raises(ValueError, match="kind"):
        Disagreement("wrong", (), (), 0, 0, 1)
    doc = Disagreement("missed", ("a",), (), 1.234, 2.0, 22.0, hidden=True).to_json()
    assert doc == {"kind": "missed", "truth_ids": ["a"], "detected_ids": [], "x_mm": 1.23, "y_mm": 2.0,
                   "radius_mm": 22.0, "hidden": True}


def test_a_near_centred_stack_is_matched_size_for_size():
    """Regression: a medium disk lying near-centred on a large one, both found and ordered right, was scored as
    ordered wrong: matched by distance alone, the medium detection (nearer the large disk's true centre) took the
    large disk and the large detection the medium one."""
    truth = Scene(disks=(Disk("large", 300.0, 300.0, 44.0, size="large"),
                         Disk("medium", 300.2, 300.0, 32.0, z=1, size="medium")))
    det = detected(Disk("dm", 299.6, 300.0, 32.0, z=1, size="medium"), Disk("dl", 301.0, 300.5, 44.0, size="large"))
    assert match(truth, det) == {"dm": "medium", "dl": "large"}
    assert disagreements(truth, det) == []
