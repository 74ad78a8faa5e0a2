"""The second look at twice the scale (`vision.second_look`): its settings, and what the rim map shows there."""

from __future__ import annotations

import pytest

from vision.second_look import SecondLook, rim_share
from vision.synth.drawn import RADII, DrawnDisk, draw_table


@pytest.mark.parametrize("bad", [dict(zoom=0.5), dict(zoom=5.0), dict(margin_mm=2.0), dict(reach_mm=-1.0),
                                 dict(min_rim=0.0), dict(min_rim=1.5)])
def test_settings_out_of_range_are_refused(bad):
    with pytest.raises(ValueError):
        SecondLook(**bad)


def test_a_disks_outline_shows_all_round_at_twice_the_scale_and_the_plain_cloth_shows_none():
    disk = DrawnDisk(300.0, 300.0, "medium")
    rect = draw_table([disk], 3)
    r = RADII["medium"]
    # (the drawn table's rectified image has a 40 mm margin at 1 px/mm)
    share, x, y = rim_share(rect, 340.0 + 1.5, 340.0 - 1.0, r, 1.0, 1.0)
    assert share >= 0.8 and abs(x - 340.0) <= 1.0 and abs(y - 340.0) <= 1.0
    empty, _, _ = rim_share(rect, 700.0, 700.0, r, 1.0, 1.0)
    assert empty <= 0.2


def test_a_second_look_never_takes_a_session_fixed_to_the_frames_shape(monkeypatch):
    # Its crops are all of a few shapes: were they given sessions fixed to their shape (two are kept), the whole
    # frame's would be pushed out and made again at the next frame.
    import vision.facemap as facemap

    asked = []
    real = facemap.session
    monkeypatch.setattr(facemap, "session", lambda *a: asked.append(a[3]) or real(*a))
    rect = draw_table([DrawnDisk(300.0, 300.0, "medium")], 3)
    for _ in range(3):
        rim_share(rect, 340.0, 340.0, RADII["medium"], 1.0, 1.0)
    assert asked == [None, None, None]
