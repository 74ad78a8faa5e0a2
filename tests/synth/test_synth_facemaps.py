"""The learned eye's ground truth: which pixels are a disk's face, and where a disk's own outline runs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vision.synth.facemaps import HEIGHT_LEVELS, OUTPUT_STRIDE, FaceTruth, outline_mask
from vision.synth.render import HAND_LABEL


def _labels(shape, disks, hand=None):
    """A label image with disks (index, cx, cy, r) painted in the order given (later ones on top)."""
    h, w = shape
    yy, xx = np.mgrid[0:h, 0:w]
    lab = np.full(shape, -1, np.int16)
    for i, cx, cy, r in disks:
        lab[np.hypot(xx - cx, yy - cy) <= r] = i
    if hand is not None:
        x0, y0, x1, y1 = hand
        lab[y0:y1, x0:x1] = HAND_LABEL
    return lab


@pytest.mark.parametrize("rank, upper_index", [((0, 1), 1), ((1, 0), 0)])
def test_between_two_overlapping_disks_only_the_upper_ones_outline_runs(rank, upper_index):
    # disk 0 at x=40, disk 1 at x=70, both r=20: the lens is x in 50..60
    disks = [(0, 40, 50, 20), (1, 70, 50, 20)]
    if upper_index == 0:
        disks = disks[::-1]
    lab = _labels((100, 110), disks)
    mask = outline_mask(lab, np.array(rank))
    yy, xx = np.mgrid[0:100, 0:110]
    lower_c, upper_c = ((70, 50) if upper_index == 0 else (40, 50)), ((40, 50) if upper_index == 0 else (70, 50))
    d_low = np.hypot(xx - lower_c[0], yy - lower_c[1])
    d_up = np.hypot(xx - upper_c[0], yy - upper_c[1])
    # inside the upper disk, the lower disk's outline does not run
    hidden_lower_arc = (np.abs(d_low - 20) < 0.8) & (d_up < 17)
    assert hidden_lower_arc.any()
    assert not mask[hidden_lower_arc].any()
    # the upper disk's outline runs all round, across the lower disk too
    upper_arc_in_lens = (np.abs(d_up - 20) < 0.8) & (d_low < 17)
    assert upper_arc_in_lens.any() and mask[upper_arc_in_lens].mean() > 0.9
    # the lower disk's outline in the open is an outline
    open_lower = (np.abs(d_low - 20) < 0.8) & (d_up > 23)
    assert mask[open_lower].mean() > 0.9


def test_a_hand_edge_is_no_outline():
    lab = _labels((100, 100), [(0, 50, 50, 30)], hand=(50, 0, 100, 100))
    mask = outline_mask(lab, np.array([0]))
    # along the hand's straight edge (x = 49..50) inside the disk there is no outline
    assert not mask[30:70, 49:51].any()
    assert mask[50, 19:22].any()  # the disk's own outline on the open side


def test_no_disks_no_outline():
    assert not outline_mask(np.full((40, 40), -1, np.int16), np.zeros(0, np.int32)).any()


def test_face_truth_checks_its_shapes():
    rect = np.zeros((40, 60, 3), np.uint8)
    ok = np.zeros((40 // OUTPUT_STRIDE, 60 // OUTPUT_STRIDE), np.uint8)
    FaceTruth(rect=rect, face=ok, rim=ok, height=ok)
    with pytest.raises(ValueError):
        FaceTruth(rect=rect, face=np.zeros((40, 60), np.uint8), rim=ok, height=ok)
    with pytest.raises(ValueError):
        FaceTruth(rect=rect, face=ok, rim=ok, height=np.zeros((40, 60), np.uint8))


def test_rendered_frame_truth_marks_every_fully_visible_disk(tmp_path):
    from vision.synth.camera import table_camera
    from vision.synth.facemaps import face_truth
    from vision.synth.render import render_frame
    from vision.synth.scenes import random_table
    from vision.synth.tiers import tier_settings

    s = tier_settings("easy")
    setup = random_table(501, "easy")
    camera = table_camera(501, s.camera)
    truth = face_truth(render_frame(setup, camera), setup, camera)
    from vision.synth.truth import truth_calibration

    cal = truth_calibration(camera, setup.diameters_mm)
    for d in setup.disks:
        x, y = cal.table_to_rectified(np.array([[d.x_mm, d.y_mm]]))[0] / OUTPUT_STRIDE
        # the centre of every disk is some disk's face (its own or one lying on it)
        assert truth.face[int(y), int(x)] > 200
        # and it is taught how high that face lies: the disk's own level where nothing lies over its centre
        over = [o for o in setup.disks if o.z > d.z and math.hypot(o.x_mm - d.x_mm, o.y_mm - d.y_mm) < o.radius_mm]
        if not over:
            assert abs(int(truth.height[int(y), int(x)]) - min(d.z, HEIGHT_LEVELS) / HEIGHT_LEVELS * 255) < 30
    assert any(d.z > 0 for d in setup.disks)  # the table has stacks: the height target is not all zero


def test_a_disk_lying_wholly_on_another_is_named_nested_and_one_lying_half_off_is_not():
    """The eye's commonest miss is a small disk lying wholly on a larger one; the trainer centres crops on the
    places `nested_centres` names, at the output scale."""
    from dataclasses import replace

    from vision.synth.camera import table_camera
    from vision.synth.facemaps import NESTED_SHARE, nested_centres, share_over_lower
    from vision.synth.scenes import random_table
    from vision.synth.tiers import tier_settings
    from vision.synth.truth import truth_calibration

    setup = random_table(501, "easy")
    camera = table_camera(501, tier_settings("easy").camera)
    base = setup.disks[0]
    big = replace(base, id="big", x_mm=300.0, y_mm=300.0, radius_mm=40.0, z=0)
    inside = replace(base, id="inside", x_mm=310.0, y_mm=300.0, radius_mm=15.0, z=1)   # wholly over `big`
    half = replace(base, id="half", x_mm=340.0, y_mm=300.0, radius_mm=15.0, z=1)      # its centre on the edge
    lone = replace(base, id="lone", x_mm=600.0, y_mm=600.0, radius_mm=15.0, z=0)
    under = replace(base, id="under", x_mm=300.0, y_mm=300.0, radius_mm=15.0, z=0)    # covered, on the felt
    disks = (big, inside, half, lone)
    assert share_over_lower(inside, disks) == 1.0 and share_over_lower(lone, disks) == 0.0
    assert 0.3 < share_over_lower(half, disks) < NESTED_SHARE
    got = nested_centres(replace(setup, disks=disks + (under,), held=()), camera)
    x, y = truth_calibration(camera, setup.diameters_mm).table_to_rectified(np.array([[310.0, 300.0]]))[0]
    assert got.shape == (1, 2) and abs(got[0, 0] - y / OUTPUT_STRIDE) <= 1 and abs(got[0, 1] - x / OUTPUT_STRIDE) <= 1
    # a disk in a hand lies on nothing
    assert nested_centres(replace(setup, disks=disks, held=("inside",)), camera).shape == (0, 2)


def test_face_truth_refuses_nested_centres_of_the_wrong_shape():
    rect = np.zeros((40, 60, 3), np.uint8)
    ok = np.zeros((20, 30), np.uint8)
    assert FaceTruth(rect=rect, face=ok, rim=ok, height=ok).nested.shape == (0, 2)
    with pytest.raises(ValueError, match="nested"):
        FaceTruth(rect=rect, face=ok, rim=ok, height=ok, nested=np.zeros((3,), np.int32))
