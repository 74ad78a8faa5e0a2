"""Motion gate: commit only after stillness, hold while moving or a hand rests, fast path when unchanged."""

from __future__ import annotations

import cv2
import pytest

from vision.motion import MotionConfig, MotionGate
from vision.synth.drawn import DrawnDisk, draw_table


def _small(img):
    return cv2.resize(img, None, fx=0.25, fy=0.25, interpolation=cv2.INTER_AREA)


@pytest.fixture(scope="module")
def tables():
    a = draw_table([DrawnDisk(300, 300, "medium")], 1)
    b = draw_table([DrawnDisk(300, 300, "medium"), DrawnDisk(600, 500, "large")], 1)
    hand = a.copy()
    cv2.ellipse(hand, (500, 500), (120, 60), 30, 0, 360, (150, 175, 220), -1)
    return _small(a), _small(b), _small(hand)


def _committed_on(frame, config):
    """A gate that has committed `frame` (still from 0.0 to 0.3 s)."""
    gate = MotionGate(config)
    gate.update(frame, 0.0)
    gate.update(frame, 0.3)
    gate.committed(frame, 0.3)
    return gate


def test_first_commit_after_still_time(tables):
    a, _, _ = tables
    gate = MotionGate(MotionConfig(still_s=0.5))
    assert gate.update(a, 0.0).reason == "settling"
    assert not gate.update(a, 0.3).run_detection
    d = gate.update(a, 0.6)
    assert d.run_detection and d.reason == "first" and not d.busy


def test_unchanged_table_takes_the_fast_path(tables):
    a, _, _ = tables
    gate = MotionGate(MotionConfig(still_s=0.2))
    gate.update(a, 0.0)
    assert gate.update(a, 0.3).run_detection
    gate.committed(a, 0.3)
    for t in (0.4, 0.5, 0.6):
        d = gate.update(a, t)
        assert not d.run_detection and d.reason == "unchanged" and not d.busy


def test_motion_holds_then_a_changed_table_is_committed(tables):
    a, b, _ = tables
    gate = _committed_on(a, MotionConfig(still_s=0.2))
    d = gate.update(b, 0.4)  # a disk appeared between two frames: motion
    assert d.busy and d.reason == "moving"
    assert gate.update(b, 0.5).reason == "settling"
    d = gate.update(b, 0.75)
    assert d.run_detection and d.reason == "changed"


def test_a_resting_hand_keeps_the_table_busy(tables):
    a, _, hand = tables
    gate = _committed_on(a, MotionConfig(still_s=0.2))
    for t in (0.4, 0.8, 1.2):
        d = gate.update(hand, t)
        assert d.busy and not d.run_detection
    assert gate.update(hand, 1.3).hand


def test_config_is_validated():
    with pytest.raises(ValueError):
        MotionConfig(px_per_mm=5)
    with pytest.raises(ValueError):
        MotionConfig(still_s=-1)


SKIN_BGR = (150, 175, 220)


def _with_skin_spots(img, spots):
    out = img.copy()
    for (x, y, ax, ay) in spots:
        cv2.ellipse(out, (x, y), (ax, ay), 0, 0, 360, SKIN_BGR, -1)
    return out


@pytest.mark.parametrize(
    "spots",
    [
        # Regression: many small skin-toned spots in disk art summed over 2500 mm² and were called a hand, so a
        # table was never committed (the demo table and image folders stayed at version 0).
        [(150, 150, 25, 15), (700, 200, 25, 15), (200, 700, 25, 15), (750, 750, 25, 15), (450, 100, 25, 15)],
        # Regression: one large skin-toned artwork lying on the table from the start is not a hand either.
        [(700, 700, 60, 45)],
    ],
    ids=["scattered-skin-art", "large-skin-art-from-the-start"],
)
def test_skin_toned_art_before_the_first_commit_is_not_a_hand(spots):
    art = _small(_with_skin_spots(draw_table([DrawnDisk(300, 300, "medium")], 1), spots))
    gate = MotionGate(MotionConfig(still_s=0.5))
    decisions = [gate.update(art, t) for t in (0.0, 0.2, 0.4, 0.6)]
    assert not any(d.hand for d in decisions)
    assert decisions[-1].run_detection and decisions[-1].reason == "first"


def test_scattered_new_skin_spots_after_a_commit_are_not_a_hand(tables):
    a, _, _ = tables
    gate = _committed_on(a, MotionConfig(still_s=0.2))
    spotted = _small(_with_skin_spots(cv2.resize(a, None, fx=4, fy=4, interpolation=cv2.INTER_NEAREST),
                                      [(150, 150, 25, 15), (700, 200, 25, 15), (200, 700, 25, 15)]))
    assert not gate.update(spotted, 0.4).hand


def test_skin_toned_disk_art_moved_into_view_does_not_hold_the_table_for_good(tables):
    """Regression: a disk with skin-toned art moved into view (or uncovered when a casualty was taken away) was a
    "new skin-coloured blob", so a hand, on every later frame: the live table never committed again."""
    a, _, hand_like = tables
    gate = _committed_on(a, MotionConfig(still_s=0.2, hand_still_s=1.0))
    assert gate.update(hand_like, 0.4).reason == "hand"              # it arrives: motion, and new skin
    assert gate.update(hand_like, 0.5).hand                           # still there, not moving
    assert gate.update(hand_like, 1.2).busy                           # a resting hand holds the table a while
    d = gate.update(hand_like, 1.6)                                   # quiet for 1.1 s: art, not a hand
    assert not d.hand and d.run_detection and d.reason == "changed"
    gate.committed(hand_like, 1.6)
    assert gate.update(hand_like, 1.7).reason == "unchanged"
    with pytest.raises(ValueError):
        MotionConfig(hand_still_s=-1)
