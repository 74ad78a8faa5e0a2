"""Sub-pixel centres from the disk's own rim profile (`vision.refine`)."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from vision.refine import AlignConfig, align_centres, rays_over_lower

SHIFT = 4  # cv2 drawing with 1/16 px precision


def _circle(img, cx, cy, r, colour, thickness=-1):
    cv2.circle(img, (int(round(cx * 16)), int(round(cy * 16))), int(round(r * 16)), colour, thickness, cv2.LINE_AA,
               SHIFT)


def _disk_with_a_shadow(cx, cy, r, shadow_dir, seed):
    """A disk as a webcam sees it: cloth, a soft cast shadow on one side, a printed border with a dark outline, art
    inside; blurred and noisy. The shadow's edge lies outside the rim on one side only."""
    rng = np.random.default_rng(seed)
    img = np.full((200, 200, 3), (60, 105, 55), np.float32)
    shade = np.zeros((200, 200), np.float32)
    cv2.circle(shade, (int(round((cx + 1.5 * shadow_dir[0]) * 16)), int(round((cy + 1.5 * shadow_dir[1]) * 16))),
               int(round((r + 0.5) * 16)), 1.0, -1, cv2.LINE_AA, SHIFT)
    img *= (1.0 - 0.6 * cv2.GaussianBlur(shade, (0, 0), 1.0))[..., None]
    _circle(img, cx, cy, r, (25, 25, 25))
    _circle(img, cx, cy, r - 1.2, (40, 170, 215))
    _circle(img, cx, cy, r - 6.0, (25, 25, 25))
    _circle(img, cx, cy, r - 6.8, (150, 120, 200))
    for _ in range(5):
        a, d = rng.uniform(0, 2 * math.pi), rng.uniform(0, r - 14)
        _circle(img, cx + d * math.cos(a), cy + d * math.sin(a), rng.uniform(3, 8),
                tuple(float(v) for v in rng.integers(30, 230, 3)))
    img = cv2.GaussianBlur(img, (0, 0), 0.8) + rng.normal(0, 2.0, img.shape).astype(np.float32)
    return np.clip(img, 0, 255).astype(np.uint8)


def test_rim_alignment_finds_the_centre_to_a_fifth_of_a_px_from_a_mm_off():
    errs = []
    for seed in range(8):
        rng = np.random.default_rng(100 + seed)
        cx, cy, r = 100.0 + rng.uniform(-0.5, 0.5), 100.0 + rng.uniform(-0.5, 0.5), 32.0
        a = rng.uniform(0, 2 * math.pi)
        img = _disk_with_a_shadow(cx, cy, r, (math.cos(a), math.sin(a)), seed)
        x, y = align_centres(img, np.array([cx + 1.2]), np.array([cy - 0.9]), np.array([r]), np.ones((1, 96), bool))
        errs.append(math.hypot(x[0] - cx, y[0] - cy))
    assert max(errs) < 0.2, errs


def test_a_disk_with_too_few_usable_rays_keeps_its_centre():
    img = _disk_with_a_shadow(100.0, 100.0, 32.0, (1.0, 0.0), 1)
    usable = np.zeros((1, 96), bool)
    usable[0, :10] = True
    x, y = align_centres(img, np.array([101.0]), np.array([99.0]), np.array([32.0]), usable)
    assert (x[0], y[0]) == (101.0, 99.0)


@pytest.mark.parametrize("bad", [dict(inner_px=0.0), dict(reach_px=0.1), dict(min_match=1.0), dict(min_rays=2),
                                 dict(passes=0)])
def test_alignment_settings_are_validated(bad):
    with pytest.raises(ValueError):
        AlignConfig(**bad)


@pytest.mark.parametrize("z_small, usable_share, over", [
    (1, 1.0, [True, False]),     # the small disk lies on the large one: its whole outline is in view
    (0, 0.0, [False, False]),    # it lies under it: none of its outline is (and none of the large one runs over it)
])
def test_rays_over_lower_follow_the_stacking_order(z_small, usable_share, over):
    # a small disk wholly within a large one's circle
    x, y, r = np.array([100.0, 102.0]), np.array([100.0, 99.0]), np.array([22.0, 44.5])
    usable, has_over = rays_over_lower(x, y, r, np.array([z_small, 1 - z_small]), 2.0, 96)
    assert usable[0].mean() == pytest.approx(usable_share)
    assert list(has_over) == over
    assert usable[1].all()       # the large disk's outline runs clear of the small one's


def test_rays_along_another_outline_are_left_out_in_any_order():
    # two medium disks overlapping by 10 px: where each outline crosses the other's, neither may be aligned on
    x, y, r = np.array([100.0, 154.0]), np.array([100.0, 100.0]), np.array([32.0, 32.0])
    usable, over = rays_over_lower(x, y, r, np.array([1, 0]), 2.0, 96)
    ang = np.arange(96) * (2 * math.pi / 96)
    px, py = 100.0 + 32.0 * np.cos(ang), 100.0 + 32.0 * np.sin(ang)
    near = np.abs(np.hypot(px - 154.0, py - 100.0) - 32.0) <= 2.0
    assert near.any() and not usable[0][near].any() and usable[0][~near].all()
    assert list(over) == [True, False]
    assert not usable[1][np.hypot(154.0 + 32.0 * np.cos(ang) - 100.0, 100.0 + 32.0 * np.sin(ang) - 100.0) < 30.0].any()


def test_a_disk_lying_wholly_on_a_larger_one_is_aligned_once_the_order_is_known():
    # before the order is known every ray of the small disk lies inside the large one and may be hidden: it keeps
    # its map fit; once it is known to lie on top, its outline over the large disk's face aligns it
    rng = np.random.default_rng(7)
    img = np.full((240, 240, 3), (60, 105, 55), np.float32)
    _circle(img, 120.0, 120.0, 44.5, (30, 40, 170))
    cx, cy = 123.4, 117.8
    _circle(img, cx, cy, 22.0, (25, 25, 25))
    _circle(img, cx, cy, 20.8, (40, 170, 215))
    _circle(img, cx, cy, 16.0, (150, 120, 200))
    img = np.clip(cv2.GaussianBlur(img, (0, 0), 0.8) + rng.normal(0, 2.0, img.shape), 0, 255).astype(np.uint8)
    x, y, r = np.array([cx + 1.1, 120.0]), np.array([cy + 0.8, 120.0]), np.array([22.0, 44.5])
    usable, over = rays_over_lower(x, y, r, np.array([1, 0]), 2.0, 96)
    assert over[0] and usable[0].all()
    before, _ = align_centres(img, x[:1], y[:1], r[:1], np.zeros((1, 96), bool))
    ax, ay = align_centres(img, x[:1], y[:1], r[:1], usable[:1])
    assert before[0] == x[0]
    assert math.hypot(ax[0] - cx, ay[0] - cy) < 0.3
